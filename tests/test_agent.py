"""The threaded Agent: queues, ask, abort, shutdown (yiemagent.agent)."""

import queue
import threading

import pytest

from yiemagent import SHUTDOWN, Agent, AgentBusyError, AgentClosedError, AgentTool, ConfigError, UserMessage, tool
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply


def echo_llm(messages, tools):
    """Answers with the text of the last user message."""
    last = [m for m in messages if m["role"] == "user"][-1]["content"]
    return text_reply(f"echo: {last}")


def test_agent_serves_inputs_from_the_input_queue_in_order():
    """Each input is its own run, answered on the output queue in order, with its id."""
    agent = Agent(echo_llm).start()
    try:
        for text in ("one", "two", "three"):
            agent.input_queue.put(text)
        answers = [agent.output_queue.get(timeout=5) for _ in range(3)]
    finally:
        agent.shutdown()
    assert [a["content"] for a in answers] == ["echo: one", "echo: two", "echo: three"]
    assert all(a["role"] == "assistant" and a["status"] == "completed" for a in answers)
    assert len({a["input_ids"][0] for a in answers}) == 3


def test_input_queue_is_served_before_the_follow_up_queue():
    """Priority: whatever waits on input_queue goes before follow-ups queued earlier."""
    gate = threading.Event()

    def llm(messages, tools):
        gate.wait(5)
        return echo_llm(messages, tools)

    agent = Agent(llm).start()
    try:
        agent.input_queue.put("first")  # taken at once; blocks in the model on the gate
        agent.follow_up_queue.put("follow-up")
        agent.input_queue.put("urgent")
        gate.set()
        answers = [agent.output_queue.get(timeout=5)["content"] for _ in range(3)]
    finally:
        agent.shutdown()
    assert answers == ["echo: first", "echo: urgent", "echo: follow-up"]


def test_queues_have_the_contracted_sizes_and_accept_three_input_forms():
    """Input 16, follow-up 32, output 16; str, UserMessage and OpenAI dict inputs."""
    agent = Agent(echo_llm)
    assert (agent.input_queue.maxsize, agent.follow_up_queue.maxsize, agent.output_queue.maxsize) == (16, 32, 16)
    assert isinstance(agent.input_queue, queue.Queue)
    agent.start()
    try:
        agent.input_queue.put(UserMessage("a"))
        agent.input_queue.put({"role": "user", "content": [{"type": "text", "text": "b"}]})
        assert agent.output_queue.get(timeout=5)["content"] == "echo: a"
        assert agent.output_queue.get(timeout=5)["content"] == "echo: b"
    finally:
        agent.shutdown()


def test_a_bad_input_gets_an_error_answer_and_the_agent_goes_on():
    """Nothing lost: an unusable input is answered with an error, the next one is served."""
    agent = Agent(echo_llm).start()
    try:
        agent.input_queue.put(12345)
        agent.input_queue.put("fine")
        bad = agent.output_queue.get(timeout=5)
        good = agent.output_queue.get(timeout=5)
    finally:
        agent.shutdown()
    assert bad["status"] == "error" and "12345" in bad["error"]
    assert good["content"] == "echo: fine"


def test_a_failing_model_call_becomes_an_error_answer_and_the_thread_survives():
    """An exception in llm_call never kills the agent thread."""
    llm = ScriptedLLM([RuntimeError("model down"), text_reply("back")])
    recorder = EventRecorder()
    agent = Agent(llm, event_sink=recorder).start()
    try:
        agent.input_queue.put("a")
        agent.input_queue.put("b")
        first, second = agent.output_queue.get(timeout=5), agent.output_queue.get(timeout=5)
        assert agent.is_running
    finally:
        agent.shutdown()
    assert first["status"] == "error" and "model down" in first["content"]
    assert second["content"] == "back"
    assert any(e.type == "error" and e.where == "llm_call" for e in recorder.events)


def test_ask_without_the_thread_runs_in_the_caller():
    """ask() works before start(): the run happens in the calling thread."""
    agent = Agent(echo_llm)
    assert agent.ask("hello")["content"] == "echo: hello"
    assert not agent.is_running
    assert [m["role"] for m in agent.openai_messages()] == ["user", "assistant"]


def test_ask_with_the_thread_waits_for_its_own_answer_only():
    """With raw inputs queued before, ask() returns its own answer; the others stay on the output queue."""
    agent = Agent(echo_llm).start()
    try:
        agent.input_queue.put("raw")
        answer = agent.ask("mine", timeout_seconds=5)
        raw = agent.output_queue.get(timeout=5)
    finally:
        agent.shutdown()
    assert answer["content"] == "echo: mine" and raw["content"] == "echo: raw"
    assert agent.output_queue.empty()


def test_submit_returns_a_future_with_the_input_id():
    """submit() -> Future resolved with the answer; its input_id is in the answer."""
    agent = Agent(echo_llm).start()
    try:
        future = agent.submit("x")
        answer = future.result(timeout=5)
    finally:
        agent.shutdown()
    assert answer["input_ids"] == [future.input_id] and answer["content"] == "echo: x"


def test_submit_on_a_full_queue_raises_agent_busy_which_is_queue_full():
    """Backpressure: AgentBusyError is also a queue.Full."""
    agent = Agent(echo_llm)  # not started: nothing drains the queue
    for i in range(16):
        agent.input_queue.put(str(i))
    with pytest.raises(queue.Full) as info:
        agent.submit("one too many", timeout_seconds=0.05)
    assert isinstance(info.value, AgentBusyError)
    left = agent.shutdown()
    assert left == [str(i) for i in range(16)]


def test_abort_ends_a_slow_tool_quickly_and_the_agent_serves_the_next_input():
    """abort(): the tool sees the event; the run ends "aborted"; the next input is served."""
    started, saw_abort = threading.Event(), threading.Event()

    def slow(call_id, arguments, abort_event):
        started.set()
        if abort_event.wait(10):
            saw_abort.set()  # on the tool's thread: waited for below, never read at once
        return "stopped"

    llm = ScriptedLLM([tool_call_reply("slow", {}), text_reply("next answer")])
    agent = Agent(llm, tools=[AgentTool("slow", "Slow.", {"type": "object"}, slow)]).start()
    try:
        agent.input_queue.put("go")
        assert started.wait(5)
        agent.abort()
        aborted = agent.output_queue.get(timeout=5)
        agent.input_queue.put("again")
        after = agent.output_queue.get(timeout=5)
    finally:
        agent.shutdown()
    assert aborted["status"] == "aborted" and saw_abort.wait(30)
    assert after["content"] == "next answer"
    roles = [m["role"] for m in agent.openai_messages()]
    assert roles == ["user", "assistant", "tool", "user", "assistant"]


def test_shutdown_sentinel_stops_the_thread_and_shutdown_returns_unserved_inputs():
    """SHUTDOWN on the input queue stops the thread; later inputs are returned, not dropped."""
    gate = threading.Event()

    def llm(messages, tools):
        gate.wait(5)
        return echo_llm(messages, tools)

    agent = Agent(llm).start()
    agent.input_queue.put("served")
    agent.input_queue.put(SHUTDOWN)
    agent.follow_up_queue.put("left over")
    gate.set()
    assert agent.output_queue.get(timeout=5)["content"] == "echo: served"
    agent._lifecycle.thread.join(5)
    assert not agent.is_running
    assert agent.shutdown() == ["left over"]
    with pytest.raises(AgentClosedError):
        agent.ask("after")


def test_shutdown_drain_serves_everything_queued_first():
    """Default shutdown mode drains both queues, then joins."""
    agent = Agent(echo_llm).start()
    for text in ("a", "b"):
        agent.follow_up_queue.put(text)
    assert agent.shutdown(timeout_seconds=5) == []
    assert [agent.output_queue.get_nowait()["content"] for _ in range(2)] == ["echo: a", "echo: b"]
    assert not agent.is_running


def test_context_manager_starts_and_stops_the_thread():
    """With Agent(...) as agent: started inside, stopped after."""
    with Agent(echo_llm) as agent:
        assert agent.is_running
        assert agent.ask("x", timeout_seconds=5)["content"] == "echo: x"
    assert not agent.is_running


def test_constructor_rejects_misuse_clearly():
    """ConfigError for a non-callable model or a bad max_turns."""
    with pytest.raises(ConfigError):
        Agent("not callable")
    with pytest.raises(ConfigError):
        Agent(echo_llm, max_turns=0)


def test_plain_functions_are_accepted_as_tools():
    """tools=[fn] wraps fn with @tool."""
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    llm = ScriptedLLM([tool_call_reply("add", {"a": 2, "b": 3}), text_reply("5")])
    agent = Agent(llm, tools=[add, tool(add)])
    assert agent.ask("2+3")["content"] == "5"
    assert agent.openai_messages()[2] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}


def test_ask_before_start_honours_its_timeout_by_aborting_the_run():
    """ask(timeout_seconds) without the thread: the run is aborted at the deadline, TimeoutError raised,
    the history stays valid and the agent still works.
    """
    import time as _time

    release = threading.Event()

    def slow_llm(messages, tools):
        release.wait(5)
        return text_reply("late")

    agent = Agent(ScriptedLLM([slow_llm, text_reply("fine")]))
    begun = _time.monotonic()
    with pytest.raises(TimeoutError):
        agent.ask("slow", timeout_seconds=0.3)
    release.set()
    assert _time.monotonic() - begun < 1.5
    assert agent.ask("again", timeout_seconds=5)["content"] == "fine"
    assert [m["role"] for m in agent.openai_messages()] == ["user", "user", "assistant"]


def test_ask_from_inside_the_agents_own_tool_is_a_clear_error_not_a_deadlock():
    """A tool that calls ask() on its own agent would wait for itself: AgentError, reported as the tool's error."""
    from yiemagent import AgentError

    holder = {}

    def reentrant(call_id, arguments, abort_event):
        try:
            holder["agent"].ask("inner", timeout_seconds=3)
        except AgentError as exc:
            return f"refused: {type(exc).__name__}"
        return "no error"

    llm = ScriptedLLM([tool_call_reply("reentrant", {}), text_reply("done")])
    for started in (False, True):
        agent = Agent(llm if not started else ScriptedLLM([tool_call_reply("reentrant", {}), text_reply("done")]),
                      tools=[AgentTool("reentrant", "Calls ask.", {"type": "object"}, reentrant)])
        holder["agent"] = agent
        if started:
            agent.start()
        answer = agent.ask("outer", timeout_seconds=10)
        assert answer["content"] == "done"
        assert agent.openai_messages()[2]["content"] == "refused: AgentError"
        agent.shutdown()


def test_shutdown_from_inside_a_tool_does_not_wait_for_itself():
    """shutdown() in a tool: returns at once; the thread stops after the run."""
    import time as _time

    holder = {}
    took = {}

    def stop(call_id, arguments, abort_event):
        begun = _time.monotonic()
        holder["agent"].shutdown(timeout_seconds=5, mode="after_turn")
        took["seconds"] = _time.monotonic() - begun
        return "stopping"

    agent = Agent(ScriptedLLM([tool_call_reply("stop", {}), text_reply("bye")]),
                  tools=[AgentTool("stop", "Stops.", {"type": "object"}, stop)]).start()
    holder["agent"] = agent
    agent.input_queue.put("stop please")
    assert agent.output_queue.get(timeout=5)["content"] == "bye"
    agent._lifecycle.thread.join(5)
    assert took["seconds"] < 1.0 and not agent.is_running


def test_leaving_a_with_block_by_an_exception_aborts_the_run_in_flight():
    """Ctrl-C in a script inside ``with Agent(...)`` (the demo, issue 11): the run in flight is aborted,
    not waited for (a drain would wait for the slow tool); leaving normally still drains.
    """
    import threading

    from yiemagent import Agent, AgentTool
    from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

    started, saw_abort = threading.Event(), threading.Event()

    def slow(tool_call_id, arguments, abort_event):
        started.set()
        if abort_event.wait(30):
            saw_abort.set()
        return "done"

    llm = ScriptedLLM([tool_call_reply("slow", {}), text_reply("finished")])
    tool = AgentTool("slow", "Slow.", {"type": "object", "properties": {}}, slow)
    with pytest.raises(KeyboardInterrupt), Agent(llm, tools=[tool]) as agent:
        future = agent.submit("go")
        assert started.wait(10)
        raise KeyboardInterrupt
    assert saw_abort.is_set()
    assert future.result(timeout=5)["status"] == "aborted"
    assert not agent.is_running

    with Agent(ScriptedLLM([text_reply("drained")])) as agent:
        queued = agent.submit("hi")
    assert queued.result(timeout=5)["content"] == "drained"


def test_ctrl_c_in_ask_on_a_started_agent_aborts_its_run_at_once():
    """A new user's trial: Ctrl-C during ``agent.ask`` with the thread started was seen only when the run
    ended (a lock wait defers the signal) and the run went on; now ``KeyboardInterrupt`` is raised at once
    and the run of that input is aborted (its tool sees ``abort_event``).
    """
    import _thread
    import time

    from yiemagent import Agent, AgentTool
    from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

    started, saw_abort = threading.Event(), threading.Event()

    def slow(tool_call_id, arguments, abort_event):
        started.set()
        if abort_event.wait(30):
            saw_abort.set()
        return "done"

    tool = AgentTool("slow", "Slow.", {"type": "object", "properties": {}}, slow)
    agent = Agent(ScriptedLLM([tool_call_reply("slow", {}), text_reply("x")], repeat_last=True), tools=[tool]).start()
    try:
        threading.Thread(target=lambda: started.wait(10) and _thread.interrupt_main(), daemon=True).start()
        begun = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            agent.ask("go")
        assert time.monotonic() - begun < 10  # not the 30 s the tool would take
        assert saw_abort.wait(30)
        assert agent.ask("again", timeout_seconds=10)["content"] == "x"  # the agent goes on
    finally:
        agent.shutdown(mode="now")


def test_openai_messages_leave_out_the_messages_of_a_failed_run():
    """A new user's trial: after an input too long for the model failed, ``openai_messages()`` (documented as
    the conversation ready to send) still held that input; it is left out, as from every request.
    """
    from yiemagent import Agent, LLMError
    from yiemagent.testing import text_reply

    def model(messages, tools):
        if len(messages[-1]["content"]) > 100:
            raise LLMError("request (5016 tokens) exceeds the available context size (4096 tokens)")
        return text_reply("ok")

    agent = Agent(model)
    assert agent.ask("x" * 200)["status"] == "error"
    assert agent.ask("short")["status"] == "completed"
    assert [(m["role"], m["content"]) for m in agent.openai_messages()] == [("user", "short"), ("assistant", "ok")]
    assert any(getattr(m, "excluded", None) for m in agent.history)  # kept in the history, marked
