"""Durable runs: Agent(..., store=..., conversation_id=...) on SQLite and a real PostgreSQL.

Crashes are real: in-process a tool raises a ``SimulatedCrash`` (the one exception the agent lets
through, as nothing would survive a power cut; every other ``BaseException`` is contained since
issue 8), and in the child-process tests the agent's process is killed
with SIGKILL while a tool (local, or a real MCP server's) is running. Then a new agent on the same
conversation finishes the run from the journal.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.strict_openai import validate
from yiemagent import Agent, AgentToolResult, ConfigError, MCPClient, StaleStateError, tool
from yiemagent.loop.journal import current_idempotency_key
from yiemagent.store import ServedInput
from yiemagent.store.durable import _Heartbeat
from yiemagent.testing import ScriptedLLM, SimulatedCrash, text_reply
from yiemagent.tools.hooks import ToolCallContext

Factory = Callable[[], Any]


class Crash(SimulatedCrash):
    """Stands for the process dying: nothing in yiemagent catches it."""


def calls_reply(*calls: tuple[str, str, dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    """A reply asking for ``(id, name, arguments)`` tool calls."""
    return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": text, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls]}}]}


def echo_llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """Answers ``re: <last user text>`` (stateless, so any process can serve any turn)."""
    last = [m for m in messages if m["role"] == "user"][-1]
    return text_reply(f"re: {last['content']}")


class Effects:
    """Side effects of the tools, as a server-side counter would see them."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str | None]] = []
        self.crash_in: set[str] = set()

    def tools(self, *, boom_idempotent: bool = False) -> list[Any]:
        @tool
        def charge(amount: int) -> str:
            """Charge the card (not safe to repeat)."""
            self.ran.append(("charge", current_idempotency_key()))
            if "charge" in self.crash_in:
                raise Crash()
            return f"charged {amount}"

        @tool(idempotent=boom_idempotent)
        def boom() -> str:
            """A step that may crash."""
            self.ran.append(("boom", current_idempotency_key()))
            if "boom" in self.crash_in:
                raise Crash()
            return "boom done"

        return [charge, boom]

    def count(self, name: str) -> int:
        return sum(1 for n, _ in self.ran if n == name)


@pytest.fixture
def s(store_factory: Factory) -> Any:
    made = store_factory()
    yield made
    made.close()


def make_agent(llm: Any, store: Any, effects: Effects, **kwargs: Any) -> Agent:
    kwargs.setdefault("tool_execution", "sequential")
    return Agent(llm, tools=effects.tools(boom_idempotent=kwargs.pop("boom_idempotent", False)), store=store,
                 conversation_id="c-42", **kwargs)


# ---------------------------------------------------------------------------- basics


def test_store_and_conversation_id_go_together(s: Any) -> None:
    with pytest.raises(ConfigError):
        Agent(echo_llm, store=s)
    with pytest.raises(ConfigError):
        Agent(echo_llm, conversation_id="c-1")
    with pytest.raises(ConfigError):
        Agent(echo_llm, store=s, conversation_id="")


def test_each_run_commits_state_and_answer_and_a_new_agent_continues(s: Any, store_factory: Factory) -> None:
    agent = Agent(echo_llm, store=s, conversation_id="c-1")
    first = agent.ask("one")
    second = agent.ask("two")
    assert (first["content"], first["seq"], second["content"], second["seq"]) == ("re: one", [1], "re: two", [2])
    record = s.load("c-1")
    assert record.version == 2 and json.loads(record.state)["history"][-1]["content"][0]["text"] == "re: two"
    assert s.get_input("c-1", 1).answer == first and s.pending("c-1") == [] and s.steps("c-1", "seq-1") == {}
    other = Agent(echo_llm, store=store_factory(), conversation_id="c-1")  # another process, say
    assert [m["content"] for m in other.openai_messages()] == ["one", "re: one", "two", "re: two"]
    assert other.ask("three")["seq"] == [3]
    assert len(agent.history) == 4  # the first agent has not seen it yet ...
    assert agent.ask("four")["seq"] == [4]  # ... and loads it before serving: nothing overwritten
    assert [m["content"] for m in agent.openai_messages()][-4:] == ["three", "re: three", "four", "re: four"]
    assert s.load("c-1").version == 4


def test_the_journal_holds_each_result_the_moment_it_exists(s: Any) -> None:
    """While the second tool runs, the first one's result and the model reply are in the store."""
    seen: dict[str, Any] = {}

    @tool
    def first() -> str:
        """First."""
        return "first result"

    @tool
    def second() -> str:
        """Second."""
        seen.update(s.steps("c-42", "seq-1"))
        return "second result"

    llm = ScriptedLLM([calls_reply(("call_a", "first", {}), ("call_b", "second", {})), text_reply("ok")])
    agent = Agent(llm, tools=[first, second], store=s, conversation_id="c-42", tool_execution="sequential")
    assert agent.ask("go")["content"] == "ok"
    assert seen["tool/call_a"]["content"] == [{"type": "text", "text": "first result"}]
    assert "started/call_b" in seen and "tool/call_b" not in seen
    assert seen["model/1"]["tool_calls"][0]["id"] == "call_a"


# ---------------------------------------------------------------------------- replay after a crash


def test_after_a_crash_recorded_replies_and_results_are_not_redone(s: Any, store_factory: Factory) -> None:
    effects = Effects()
    effects.crash_in = {"boom"}
    llm = ScriptedLLM([calls_reply(("call_1", "charge", {"amount": 5})), calls_reply(("call_2", "boom", {}))])
    with pytest.raises(Crash):
        make_agent(llm, s, effects).ask("pay 5 then boom")
    assert [e.seq for e in s.pending("c-42")] == [1] and s.load("c-42").version == 0  # nothing committed
    effects.crash_in = set()
    llm2 = ScriptedLLM([text_reply("Paid 5; the last step was interrupted.")])
    answers = make_agent(llm2, store_factory(), effects).drain()
    assert [a["content"] for a in answers] == ["Paid 5; the last step was interrupted."]
    assert effects.count("charge") == 1 and effects.count("boom") == 1  # neither ran again
    assert len(llm.calls) == 2 and len(llm2.calls) == 1  # replies of turns 1 and 2 came from the journal
    sent = llm2.calls[0]["messages"]
    validate(sent)
    tool_messages = [m for m in sent if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "charged 5"
    assert "interrupted" in tool_messages[1]["content"] and "not run again" in tool_messages[1]["content"]
    assert s.load("c-42").version == 1 and s.pending("c-42") == [] and s.get_input("c-42", 1).answer == answers[0]


def test_an_interrupted_idempotent_tool_runs_again(s: Any) -> None:
    effects = Effects()
    effects.crash_in = {"boom"}
    llm = ScriptedLLM([calls_reply(("call_1", "boom", {}))])
    with pytest.raises(Crash):
        make_agent(llm, s, effects, boom_idempotent=True).ask("boom")
    effects.crash_in = set()
    llm2 = ScriptedLLM([text_reply("done")])
    assert make_agent(llm2, s, effects, boom_idempotent=True).drain()[0]["content"] == "done"
    assert effects.count("boom") == 2
    assert [m["content"] for m in llm2.calls[0]["messages"] if m["role"] == "tool"] == ["boom done"]


def test_the_idempotency_key_is_stable_across_the_crash_for_tools_and_hooks(s: Any) -> None:
    effects = Effects()
    effects.crash_in = {"boom"}
    hook_keys: list[str | None] = []

    def before(ctx: ToolCallContext, abort_event: threading.Event) -> None:
        hook_keys.append(ctx.idempotency_key)

    llm = ScriptedLLM([calls_reply(("call_7", "boom", {}))])
    with pytest.raises(Crash):
        make_agent(llm, s, effects, boom_idempotent=True, before_tool_call=before).ask("x")
    effects.crash_in = set()
    make_agent(ScriptedLLM([text_reply("ok")]), s, effects, boom_idempotent=True, before_tool_call=before).drain()
    assert [key for _, key in effects.ran] == ["c-42:seq-1:call_7", "c-42:seq-1:call_7"]
    assert hook_keys == ["c-42:seq-1:call_7", "c-42:seq-1:call_7"]
    assert current_idempotency_key() is None  # outside a tool


def test_without_a_store_tools_see_no_idempotency_key() -> None:
    keys: list[str | None] = []

    @tool
    def look() -> str:
        """Look."""
        keys.append(current_idempotency_key())
        return "seen"

    Agent(ScriptedLLM([calls_reply(("c1", "look", {})), text_reply("ok")]), tools=[look]).ask("x")
    assert keys == [None]


def test_a_crash_in_after_tool_call_keeps_the_recorded_result(s: Any) -> None:
    """The result is journaled before hooks run: a crash in after_tool_call does not make the tool run again."""
    effects = Effects()
    crash = {"on": True}

    def after(ctx: ToolCallContext) -> None:
        if crash["on"]:
            raise Crash()

    llm = ScriptedLLM([calls_reply(("call_1", "charge", {"amount": 3}))])
    with pytest.raises(Crash):
        make_agent(llm, s, effects, after_tool_call=after).ask("pay 3")
    crash["on"] = False
    llm2 = ScriptedLLM([text_reply("paid")])
    make_agent(llm2, s, effects, after_tool_call=after).drain()
    assert effects.count("charge") == 1
    assert [m["content"] for m in llm2.calls[0]["messages"] if m["role"] == "tool"] == ["charged 3"]


# ---------------------------------------------------------------------------- inbox, lease, processes


def test_a_web_process_enqueues_and_a_worker_drains_in_inbox_order(s: Any, store_factory: Factory) -> None:
    seqs = [s.enqueue("c-9", f"q{i}", input_id=f"req-{i}") for i in range(3)]
    assert s.enqueue("c-9", "q0 again", input_id="req-0") == 1  # a retried request is not a new input
    worker = Agent(echo_llm, store=store_factory(), conversation_id="c-9")
    answers = worker.drain()
    assert [a["content"] for a in answers] == ["re: q0", "re: q1", "re: q2"]
    assert [a["input_ids"] for a in answers] == [["req-0"], ["req-1"], ["req-2"]]
    assert [s.wait_answer("c-9", q, timeout_seconds=5)["content"] for q in seqs] == ["re: q0", "re: q1", "re: q2"]
    assert worker.drain() == []


def test_drain_returns_nothing_while_another_process_holds_the_lease(s: Any) -> None:
    s.enqueue("c-9", "hello")
    lease = s.acquire("c-9", "someone-else", ttl_seconds=30)
    assert Agent(echo_llm, store=s, conversation_id="c-9").drain() == []
    assert [e.seq for e in s.pending("c-9")] == [1]
    s.release(lease)
    assert Agent(echo_llm, store=s, conversation_id="c-9").drain()[0]["content"] == "re: hello"


def test_agents_sharing_a_conversation_take_turns_and_lose_nothing(store_factory: Factory) -> None:
    """Three agents (own store connections, own threads) send 4 inputs each into one conversation."""
    results: dict[str, list[dict[str, Any]]] = {}

    def user(name: str) -> None:
        agent = Agent(echo_llm, store=store_factory(), conversation_id="shared")
        results[name] = [agent.ask(f"{name}-{i}", timeout_seconds=60) for i in range(4)]

    threads = [threading.Thread(target=user, args=(f"u{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for name, answers in results.items():
        assert [a["content"] for a in answers] == [f"re: {name}-{i}" for i in range(4)]
    store = store_factory()
    history = json.loads(store.load("shared").state)["history"]
    users = [m["content"][0]["text"] for m in history if m["role"] == "user"]
    assert sorted(users) == sorted(f"u{u}-{i}" for u in range(3) for i in range(4))  # each exactly once
    by_seq = [store.get_input("shared", q).message["content"] for q in range(1, 13)]
    assert users == by_seq  # the history is in inbox order
    assert all(h["content"][0]["text"] == f"re: {u}" for u, h in zip(users, history[1::2], strict=True))
    assert store.load("shared").version == 12 and store.pending("shared") == []
    store.close()


def test_a_zombie_whose_lease_was_taken_commits_nothing_and_its_input_is_served_once(
    s: Any, store_factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paused process (no heartbeat) loses its lease; its commit is refused; the input is then served from the
    journal without running the tool again, on top of what the other process committed.
    """
    monkeypatch.setattr(_Heartbeat, "_beat", lambda self: None)  # the zombie renews nothing
    intruder = store_factory()
    stolen: list[int] = []

    @tool
    def charge(amount: int) -> str:
        """Charge."""
        time.sleep(0.4)  # the lease (0.2 s) expires meanwhile and another process takes it
        lease = intruder.acquire("c-z", "intruder", ttl_seconds=30)
        assert lease is not None
        stolen.append(intruder.commit(lease, expected_version=0, state=json.dumps(
            {"version": 1, "history": [], "usage": {}, "system_prompt": None})))
        intruder.release(lease)
        return f"charged {amount}"

    llm = ScriptedLLM([calls_reply(("call_1", "charge", {"amount": 1})), text_reply("charged")])
    agent = Agent(llm, tools=[charge], store=s, conversation_id="c-z", lease_seconds=0.2)
    answer = agent.ask("pay 1")
    assert answer["content"] == "charged" and answer["seq"] == [1]
    assert stolen == [1] and len(llm.calls) == 2  # the second serving replayed both replies and the result
    assert s.load("c-z").version == 2 and s.pending("c-z") == []
    assert [m.role for m in agent.history] == ["user", "assistant", "tool", "assistant"]
    intruder.close()
    with pytest.raises(StaleStateError):  # and the store keeps refusing the zombie's old view
        lease = s.acquire("c-z", "late", ttl_seconds=5)
        s.commit(lease, expected_version=0, state="{}", served=[ServedInput(1, {"content": "dup"})])


# ---------------------------------------------------------------------------- real processes killed with SIGKILL


def _wait_for(predicate: Callable[[], bool], timeout_seconds: float = 60) -> None:
    deadline = time.monotonic() + timeout_seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _marks(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _local_tools(marks: Path) -> list[Any]:
    @tool
    def charge(amount: int) -> str:
        """Charge the card."""
        with open(marks, "a") as f:
            f.write(f"charge {amount} {current_idempotency_key()}\n")
        return f"charged {amount}"

    @tool
    def ship() -> str:
        """Ship the parcel (slow)."""
        with open(marks, "a") as f:
            f.write(f"ship started {current_idempotency_key()}\n")
        time.sleep(120)
        return "shipped"

    return [charge, ship]


def _child_local(factory: Factory, marks: str) -> None:
    """The worker that gets killed: a queued input, the thread serving it, a tool that hangs."""
    llm = ScriptedLLM([calls_reply(("call_1", "charge", {"amount": 5})), calls_reply(("call_2", "ship", {}))])
    agent = Agent(llm, tools=_local_tools(Path(marks)), store=factory(), conversation_id="c-k",
                  tool_execution="sequential", lease_seconds=1.0)
    agent.start()
    agent.input_queue.put("pay and ship")
    time.sleep(300)


@pytest.mark.slow
def test_sigkill_mid_tool_then_a_new_process_finishes_the_run_from_the_journal(
    store_factory: Factory, tmp_path: Path
) -> None:
    marks = tmp_path / "marks.txt"
    child = multiprocessing.get_context("spawn").Process(target=_child_local, args=(store_factory, str(marks)))
    child.start()
    try:
        _wait_for(lambda: any(m.startswith("ship started") for m in _marks(marks)))
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
    finally:
        if child.is_alive():
            child.kill()
    assert child.exitcode == -signal.SIGKILL
    assert _marks(marks) == ["charge 5 c-k:seq-1:call_1", "ship started c-k:seq-1:call_2"]
    llm = ScriptedLLM([text_reply("Charged 5; shipping was interrupted.")])
    store = store_factory()
    agent = Agent(llm, tools=_local_tools(marks), store=store, conversation_id="c-k", tool_execution="sequential",
                  lease_seconds=1.0)
    agent.start()  # waits out the dead process's lease (1 s), then finishes its run
    try:
        answer = agent.output_queue.get(timeout=30)  # a queued input's answer goes to the output queue
    finally:
        agent.shutdown()
    assert answer["content"] == "Charged 5; shipping was interrupted." and answer["seq"] == [1]
    assert _marks(marks) == ["charge 5 c-k:seq-1:call_1", "ship started c-k:seq-1:call_2"]  # nothing re-run
    sent = llm.calls[0]["messages"]
    validate(sent)
    results = [m["content"] for m in sent if m["role"] == "tool"]
    assert results[0] == "charged 5" and "interrupted" in results[1]
    assert store.load("c-k").version == 1 and store.pending("c-k") == []
    store.close()


def _child_mcp(factory: Factory, url: str) -> None:
    client = MCPClient(url, name="sdk")
    llm = ScriptedLLM([calls_reply(("call_1", "echo", {"text": "hi"})),
                       calls_reply(("call_2", "slow", {"seconds": 60}))])
    agent = Agent(llm, mcp_servers=[client], store=factory(), conversation_id="c-m", tool_execution="sequential",
                  lease_seconds=1.0, builtin_list_tools=False)
    agent.ask("echo then slow")


def _counts(url: str) -> dict[str, int]:
    with MCPClient(url) as client:
        return client.call_tool("call_counts")["structuredContent"]  # type: ignore[no-any-return]


def test_sigkill_during_an_mcp_call_the_server_sees_no_second_call(
    store_factory: Factory, sdk_server: str
) -> None:
    """A real MCP server (the official SDK) counts the calls it executed: after the kill and the replay, echo and
    slow were each executed once; slow (no annotations: not idempotent) is reported as interrupted.
    """
    before = _counts(sdk_server)
    child = multiprocessing.get_context("spawn").Process(target=_child_mcp, args=(store_factory, sdk_server))
    child.start()
    try:
        _wait_for(lambda: _counts(sdk_server).get("slow", 0) > before.get("slow", 0))
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
    finally:
        if child.is_alive():
            child.kill()
    llm = ScriptedLLM([text_reply("echoed; slow was interrupted")])
    with MCPClient(sdk_server, name="sdk") as client:
        agent = Agent(llm, mcp_servers=[client], store=store_factory(), conversation_id="c-m",
                      tool_execution="sequential", lease_seconds=1.0, builtin_list_tools=False)
        answers = agent.drain()
        while not answers:  # the dead child's lease runs out within 1 s
            time.sleep(0.1)
            answers = agent.drain()
    after = _counts(sdk_server)
    assert answers[0]["content"] == "echoed; slow was interrupted"
    assert after.get("echo", 0) - before.get("echo", 0) == 1 and after.get("slow", 0) - before.get("slow", 0) == 1
    sent = llm.calls[0]["messages"]
    validate(sent)
    results = [m["content"] for m in sent if m["role"] == "tool"]
    assert results[0] == "hi" and "interrupted" in results[1]


def test_mcp_annotations_make_tools_idempotent(everything_server: str) -> None:
    """server-everything marks echo readOnlyHint: true and trigger-elicitation-request-async idempotentHint false."""
    with MCPClient(everything_server) as client:
        agent = Agent(echo_llm, mcp_servers=[client])
        agent.mcp.refresh()
        echo = agent.tools.get("echo")
        assert echo is not None and echo.idempotent
        flags = {t.name: t.idempotent for t in agent.tools}
        assert any(not v for k, v in flags.items() if k != "list_tools")
        agent.shutdown()


def test_agent_tool_result_round_trips_through_the_journal() -> None:
    from yiemagent.messages import ToolCall
    from yiemagent.store.journal import result_from_dict, result_to_dict

    result = AgentToolResult("ok", is_error=True, terminate=True, details={"n": 1})
    back = result_from_dict(json.loads(json.dumps(result_to_dict(ToolCall("c1", "t", {}), result))))
    assert (back.text, back.is_error, back.terminate, back.details) == ("ok", True, True, {"n": 1})


def test_steering_with_a_store_answers_both_inputs_once_and_commits_both(s: Any) -> None:
    """An input put while a tool runs joins the run after the batch (steering); one answer, both seqs served."""
    agent_box: list[Agent] = []

    @tool
    def look() -> str:
        """Look around."""
        agent_box[0].input_queue.put("and also this")
        _wait_for(lambda: len(s.pending("c-s")) == 2, 10)
        return "looked"

    llm = ScriptedLLM([calls_reply(("call_1", "look", {})), text_reply("both answered")])
    agent = Agent(llm, tools=[look], store=s, conversation_id="c-s", steering=True)
    agent_box.append(agent)
    agent.start()
    try:
        agent.input_queue.put("first")
        answer = agent.output_queue.get(timeout=30)
        time.sleep(0.3)  # the steered input's queue item is taken and found answered: no second answer
        assert agent.output_queue.empty()
    finally:
        agent.shutdown()
    assert answer["content"] == "both answered" and answer["seq"] == [1, 2] and len(answer["input_ids"]) == 2
    assert [s.get_input("c-s", q).answer["seq"] for q in (1, 2)] == [[1, 2], [1, 2]]
    assert [m["content"] for m in llm.calls[1]["messages"] if m["role"] == "user"] == ["first", "and also this"]
    assert s.load("c-s").version == 1 and s.pending("c-s") == []


def test_a_crash_in_a_parallel_batch_keeps_the_finished_results_and_reports_the_running_call(
    s: Any, store_factory: Factory
) -> None:
    """Three calls run at once; two finish (recorded), the third is still running when the process dies."""
    ran: list[str] = []
    crash = {"on": True}

    keys: dict[str, str | None] = {}

    @tool
    def charge(amount: int) -> str:
        """Charge (not safe to repeat)."""
        ran.append("charge")
        keys["charge"] = current_idempotency_key()  # on a pool thread, beside the others
        return f"charged {amount}"

    @tool(idempotent=True)
    def lookup(city: str) -> str:
        """Look the weather up (safe to repeat)."""
        ran.append("lookup")
        keys["lookup"] = current_idempotency_key()
        return f"sunny in {city}"

    @tool
    def ship() -> str:
        """Ship (slow; the crash hits while it runs)."""
        ran.append("ship")
        if crash["on"]:
            _wait_for(lambda: {"tool/p1", "tool/p2"} <= set(s.steps("c-p", "seq-1")), 10)
            raise Crash()
        return "shipped"

    tools = [charge, lookup, ship]
    llm = ScriptedLLM([calls_reply(("p1", "charge", {"amount": 9}), ("p2", "lookup", {"city": "Oslo"}),
                                   ("p3", "ship", {}))])
    with pytest.raises(Crash):
        Agent(llm, tools=tools, store=s, conversation_id="c-p", tool_execution="parallel").ask("all three")
    crash["on"] = False
    assert sorted(ran) == ["charge", "lookup", "ship"]
    assert keys == {"charge": "c-p:seq-1:p1", "lookup": "c-p:seq-1:p2"}
    llm2 = ScriptedLLM([text_reply("charged, sunny, shipping unknown")])
    answer = Agent(llm2, tools=tools, store=store_factory(), conversation_id="c-p", tool_execution="parallel").drain()
    assert answer[0]["content"] == "charged, sunny, shipping unknown"
    assert sorted(ran) == ["charge", "lookup", "ship"]  # nothing ran twice, not even the idempotent lookup
    sent = llm2.calls[0]["messages"]
    validate(sent)
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert results["p1"] == "charged 9" and results["p2"] == "sunny in Oslo" and "interrupted" in results["p3"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["p1", "p2", "p3"]  # in the model's order


def test_postgres_reconnects_after_the_server_dropped_the_connection(postgres_store_factory: Factory) -> None:
    """The database ends our session (as a restart or a failover would): one StoreError, then it reconnects."""
    import psycopg

    from yiemagent import StoreError

    store = postgres_store_factory()
    store.enqueue("c-r", "one")
    ours = store._read("SELECT pg_backend_pid()", ())[0][0]  # this store's session, no other test's
    with psycopg.connect(store.dsn, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (ours,)).fetchone() == (True,)
    with pytest.raises(StoreError):
        store.enqueue("c-r", "lost with the connection")
    assert store.enqueue("c-r", "two") == 2
    assert [e.message["content"] for e in store.pending("c-r")] == ["one", "two"]
    store.close()


def test_drain_serves_inputs_that_arrive_while_it_runs(s: Any) -> None:
    """An input enqueued during a drain (by another process, say) is served by that same drain."""
    arrived: list[int] = []

    def llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if not arrived:
            arrived.append(s.enqueue("c-w", "late"))  # as a web process would, mid-run
        return echo_llm(messages, tools)

    s.enqueue("c-w", "early")
    answers = Agent(llm, store=s, conversation_id="c-w").drain()
    assert [a["content"] for a in answers] == ["re: early", "re: late"] and s.pending("c-w") == []
