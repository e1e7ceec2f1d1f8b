"""Every input answered or returned, under any race; shutdown leaves no thread (issue 8 p.6, issue 9 p.4).

Before: a ``submit()`` blocked on a full input queue while ``shutdown()`` ran left a future that
never resolved; ``input_queue.put(None)`` was never answered; a raw put after shutdown was
silently kept; a drain shutdown with nobody reading a full output queue blocked the agent
thread for ever, and ``abort()`` could not free it; an agent used via ``ask()`` and dropped
kept its pool threads; every agent's workers were named ``yiemagent-worker_0``;
``shutdown("now")`` left HTTP requests running on workers.
"""

import gc
import queue
import threading
import time

import pytest

from yiemagent import SHUTDOWN, Agent, AgentClosedError, AgentTool, openai_chat
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

from .helpers import run_in_thread
from .servers.raw_llm_peer import LLMPeer, Reply


def echo(messages, tools):
    return text_reply(f"echo: {messages[-1]['content']}")


def gated_llm():
    """An llm_call that waits for ``gate`` on its first call."""
    gate, entered = threading.Event(), threading.Event()
    calls = []

    def llm(messages, tools):
        calls.append(1)
        if len(calls) == 1:
            entered.set()
            gate.wait(10)
        return echo(messages, tools)

    return llm, gate, entered


def wait_until(predicate, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.005)


def blocked_putters(q):
    return len(q.not_full._waiters)  # threads waiting for room (a Condition's waiter list)


def threads_of(agent):
    return [t for t in threading.enumerate() if t.name.startswith(f"yiemagent-{agent.name}-") and t.is_alive()]


def fill(agent):
    for i in range(agent.input_queue.maxsize):
        agent.input_queue.put_nowait(f"queued {i}")


@pytest.mark.parametrize("mode", ["now", "after_turn", "drain"])
def test_submit_blocked_on_a_full_queue_resolves_when_shutdown_runs(mode):
    """Full input queue, submit() blocked, shutdown(mode): the blocked submit raises AgentClosedError."""
    llm, gate, entered = gated_llm()
    agent = Agent(llm).start()
    agent.input_queue.put("current")
    assert entered.wait(5)
    fill(agent)
    thread, out = run_in_thread(agent.submit, "blocked")
    wait_until(lambda: blocked_putters(agent.input_queue) == 1)
    stopper, left = run_in_thread(agent.shutdown, timeout_seconds=5, mode=mode)
    thread.join(2)
    assert not thread.is_alive() and isinstance(out[0], AgentClosedError)
    gate.set()
    reader = []
    while stopper.is_alive():
        try:
            reader.append(agent.output_queue.get(timeout=0.05))
        except queue.Empty:
            pass
    reader += [agent.output_queue.get_nowait() for _ in range(agent.output_queue.qsize())]
    served = [a for a in reader if a["content"].startswith("echo: queued")]
    assert len(served) + len(left[0]) == agent.input_queue.maxsize  # every queued input answered or returned
    assert not agent.is_running


def test_raw_put_blocked_on_a_full_queue_is_refused_at_shutdown():
    """A raw input_queue.put() blocked on a full queue raises AgentClosedError when shutdown("now") runs."""
    llm, gate, entered = gated_llm()
    agent = Agent(llm).start()
    agent.input_queue.put("current")
    assert entered.wait(5)
    fill(agent)
    thread, out = run_in_thread(agent.input_queue.put, "blocked raw")
    wait_until(lambda: blocked_putters(agent.input_queue) == 1)
    left = agent.shutdown(timeout_seconds=5, mode="now")
    gate.set()
    thread.join(2)
    assert isinstance(out[0], AgentClosedError)
    assert left == [f"queued {i}" for i in range(16)]


def test_put_none_is_answered_with_an_error():
    """None is an input like any other bad input: it gets an error answer (it is not the loop's marker)."""
    agent = Agent(echo).start()
    try:
        agent.input_queue.put(None)
        answer = agent.output_queue.get(timeout=5)
        agent.input_queue.put("next")
        after = agent.output_queue.get(timeout=5)
    finally:
        agent.shutdown(timeout_seconds=5)
    assert answer["status"] == "error" and "must be a str" in answer["error"]
    assert after["content"] == "echo: next"


def test_raw_put_after_shutdown_is_refused():
    """After shutdown() (and after the SHUTDOWN sentinel stopped the thread) puts raise AgentClosedError."""
    agent = Agent(echo).start()
    agent.shutdown(timeout_seconds=5)
    for q in (agent.input_queue, agent.follow_up_queue):
        with pytest.raises(AgentClosedError):
            q.put("late")
        with pytest.raises(AgentClosedError):
            q.put_nowait("late")
    other = Agent(echo).start()
    other.input_queue.put(SHUTDOWN)
    other._lifecycle.thread.join(5)
    with pytest.raises(AgentClosedError):
        other.input_queue.put("nobody will serve this")
    with pytest.raises(AgentClosedError):
        other.submit("nor this")
    assert other.shutdown() == []


def test_drain_shutdown_with_a_full_unread_output_queue_returns_and_keeps_the_answers():
    """Nobody reads output_queue; drain shutdown returns in bounded time, the extra answers in undelivered."""
    agent = Agent(echo).start()
    for i in range(16):
        agent.input_queue.put(f"a{i}")
    wait_until(lambda: agent.output_queue.full())
    for i in range(3):
        agent.input_queue.put(f"b{i}")
    begun = time.monotonic()
    left = agent.shutdown(timeout_seconds=2, mode="drain")
    took = time.monotonic() - begun
    assert took < 4 and not agent.is_running
    contents = [agent.output_queue.get_nowait()["content"] for _ in range(16)]
    kept = [a["content"] for a in agent.undelivered]
    assert contents == [f"echo: a{i}" for i in range(16)]
    assert sorted(kept + [f"echo: {x}" for x in left]) == [f"echo: b{i}" for i in range(3)]


def test_abort_frees_a_thread_blocked_on_a_full_output_queue():
    """abort() makes the thread stop waiting for room; the answer is kept, the next input is served."""
    agent = Agent(echo).start()
    try:
        for i in range(17):
            agent.input_queue.put(f"a{i}")
        wait_until(lambda: agent.output_queue.full())
        time.sleep(0.1)  # the 17th answer is now waiting for room
        agent.abort()
        wait_until(lambda: len(agent.undelivered) == 1)
        assert agent.undelivered[0]["content"] == "echo: a16"
        assert agent.submit("next").result(timeout=5)["content"] == "echo: next"
    finally:
        agent.shutdown(timeout_seconds=2, mode="now")


def test_an_agent_used_by_ask_and_dropped_leaves_no_pool_thread():
    """ask() before start(), never shut down, dropped: its worker threads end (weakref finalizer)."""
    tool = AgentTool("t", "T.", {"type": "object"}, lambda call_id, arguments, abort_event: "ok")
    agent = Agent(ScriptedLLM([tool_call_reply("t", {}), text_reply("done")]), tools=[tool])
    assert agent.ask("go")["content"] == "done"
    prefix = f"yiemagent-{agent.name}-worker"
    assert any(t.name.startswith(prefix) for t in threading.enumerate())
    del agent
    gc.collect()
    wait_until(lambda: not any(t.name.startswith(prefix) for t in threading.enumerate()))


def test_threads_are_named_per_agent():
    """yiemagent-<name>-agent and yiemagent-<name>-worker_<n>; a random id without a name."""
    names = set()
    tool = AgentTool("t", "T.", {"type": "object"},
                     lambda call_id, arguments, abort_event: names.add(threading.current_thread().name) or "ok")
    agent = Agent(ScriptedLLM([tool_call_reply("t", {}), text_reply("done")]), tools=[tool], name="billing").start()
    try:
        assert agent.ask("go", timeout_seconds=5)["content"] == "done"
        assert agent._lifecycle.thread.name == "yiemagent-billing-agent"
        assert names == {"yiemagent-billing-worker_0"} or names == {"yiemagent-billing-worker_1"}
    finally:
        agent.shutdown(timeout_seconds=5)
    assert not threads_of(agent)
    anonymous = Agent(echo)
    assert len(anonymous.name) == 8 and anonymous.name != Agent(echo).name


def test_shutdown_now_cuts_a_hanging_model_request_and_leaves_no_thread():
    """shutdown("now") during a model request that never answers: returns at once, no yiemagent thread left.

    Raw peer (tests/servers/raw_llm_peer.py): no real server hangs a request on purpose.
    """
    with LLMPeer() as peer:
        peer.script(Reply(hang_seconds=30))
        agent = Agent(openai_chat(peer.base_url, "m", timeout_seconds=60)).start()
        future = agent.submit("hello")
        wait_until(lambda: peer.requests)
        begun = time.monotonic()
        agent.shutdown(timeout_seconds=5, mode="now")
        took = time.monotonic() - begun
        assert took < 2.0
        assert not agent.is_running and not threads_of(agent)
        assert future.result(1)["status"] == "aborted"


def test_shutdown_now_cuts_an_mcp_call_on_a_worker_and_leaves_no_thread(sdk_server):
    """shutdown("now") during a 20 s MCP tools/call (real SDK server): returns fast, no yiemagent thread left."""
    llm = ScriptedLLM([tool_call_reply("slow", {"seconds": 20})])
    agent = Agent(llm, mcp_servers=[sdk_server]).start()
    started = threading.Event()
    agent.event_sink = lambda event: started.set() if event.type == "tool_execution_start" else None
    future = agent.submit("go")
    assert started.wait(10)
    time.sleep(0.2)  # let tools/call reach the server
    begun = time.monotonic()
    agent.shutdown(timeout_seconds=5, mode="now")
    assert time.monotonic() - begun < 2.0
    assert future.result(1)["status"] == "aborted"
    wait_until(lambda: not threads_of(agent), seconds=1)


def test_drain_shutdown_past_its_timeout_aborts_and_returns_with_the_thread_stopped():
    """A drain shutdown whose run does not end in time aborts it (as "now") instead of leaving the thread."""
    with LLMPeer() as peer:
        peer.script(Reply(hang_seconds=30))
        agent = Agent(openai_chat(peer.base_url, "m", timeout_seconds=60)).start()
        future = agent.submit("hello")
        wait_until(lambda: peer.requests)
        begun = time.monotonic()
        agent.shutdown(timeout_seconds=0.5, mode="drain")
        assert time.monotonic() - begun < 3.0
        assert not agent.is_running and not threads_of(agent)
        assert future.result(1)["status"] == "aborted"
