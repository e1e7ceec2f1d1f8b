"""Agents as tools: ``Agent.as_tool(name, description)`` (issue 18 point 3).

Real agents on both sides (scripted ``llm_call``s, and the local model in the last test); the durable
test uses a real SQLite store and a real crash (``SimulatedCrash``, the one exception the agent lets
through). Tests named after a public report reproduce what that report describes for a peer's
agents-as-tools.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.strict_openai import validate
from yiemagent import Agent, UsageLimits, sse_events, tool
from yiemagent.loop import events as ev
from yiemagent.messages import ToolResultMessage
from yiemagent.testing import EventRecorder, ScriptedLLM, SimulatedCrash, text_reply, tool_call_reply
from yiemagent.tools.hooks import ToolCallContext

USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def with_usage(reply: dict[str, Any], usage: dict[str, Any] = USAGE) -> dict[str, Any]:
    return {**reply, "usage": dict(usage)}


def calls_reply(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A reply asking for ``(id, name, arguments)`` tool calls at once."""
    return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls]}}]}


class Echo:
    """A sub-agent's ``llm_call``: answers ``re: <last user text>`` with USAGE; counts calls and overlap."""

    def __init__(self, delay_seconds: float = 0.0) -> None:
        self.calls = 0
        self.running = 0
        self.max_running = 0
        self.delay_seconds = delay_seconds
        self.lock = threading.Lock()

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        with self.lock:
            self.calls += 1
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        try:
            time.sleep(self.delay_seconds)
            last = [m for m in messages if m["role"] == "user"][-1]["content"]
            return with_usage(text_reply(f"re: {last}"))
        finally:
            with self.lock:
                self.running -= 1


def tool_results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.history if isinstance(m, ToolResultMessage)]


# ---------------------------------------------------------------------------- basics


@pytest.mark.parametrize("started", ["neither", "parent", "sub", "both"])
def test_a_parent_delegates_and_gets_the_sub_agents_answer_started_or_not(started: str) -> None:
    """No deadlock whichever agent has its own thread: with neither started both share only the caller's thread."""
    echo = Echo()
    sub = Agent(echo, name="researcher", system_prompt="You look facts up.")
    parent_llm = ScriptedLLM([tool_call_reply("ask_researcher", {"input": "capital of France?"}),
                              text_reply("It is Paris.")])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_researcher", "Looks facts up.")], name="boss")
    if started in ("parent", "both"):
        parent.start()
    if started in ("sub", "both"):
        sub.start()
    try:
        answer = parent.ask("Where is the Louvre?", timeout_seconds=10)
    finally:
        parent.shutdown()
        sub.shutdown()
    assert answer["status"] == "completed" and answer["content"] == "It is Paris."
    [result] = tool_results(parent)
    assert result.text == "re: capital of France?" and not result.is_error
    assert result.details["agent"] == "researcher" and result.details["status"] == "completed"
    assert result.details["usage"]["total_tokens"] == 120 and result.details["usage"]["requests"] == 1
    assert echo.calls == 1
    validate(parent_llm.calls[1]["messages"])  # the request after the delegation is a valid chat
    assert [m.role for m in sub.history] == ["user", "assistant"]  # the sub-agent kept its own conversation


def test_the_tool_takes_one_input_text_and_rejects_other_arguments() -> None:
    sub = Agent(Echo(), name="s")
    made = sub.as_tool("ask_s", "Ask s.")
    assert made.input_schema["required"] == ["input"] and made.to_openai()["function"]["name"] == "ask_s"
    parent = Agent(ScriptedLLM([tool_call_reply("ask_s", {"question": "x"}), text_reply("ok")]), tools=[made])
    parent.ask("go")
    [result] = tool_results(parent)
    assert result.is_error and "input" in result.text and sub.history == []


# ---------------------------------------------------------------------------- events


def test_openai_agents_864_nested_tool_calls_reach_the_parent_sink_while_the_sub_agent_runs() -> None:
    """openai-agents #864 (and orxhestra #1): as_tool hid the sub-agent's tool calls, or buffered them until
    the tool ended. Here the sub-agent's second model call waits until the parent's sink has seen the
    sub-agent's tool_execution_end: were events held back until the sub-run ended, it would time out.
    """
    seen_nested_tool_end = threading.Event()

    def second(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if not seen_nested_tool_end.wait(5):
            return text_reply("TIMED OUT: the parent saw nothing yet")
        return text_reply("Found 2 purchases.")

    @tool
    def grab_purchases(user: str) -> str:
        """The user's purchases."""
        return f"[{user}: 123, 456]"

    sub = Agent(ScriptedLLM([tool_call_reply("grab_purchases", {"user": "ann"}, call_id="inner_1"), second]),
                tools=[grab_purchases], name="purchases")

    def sink(event: ev.Event) -> None:
        recorder(event)
        if isinstance(event, ev.SubAgentEvent) and isinstance(event.event, ev.ToolExecutionEndEvent):
            seen_nested_tool_end.set()

    recorder = EventRecorder()
    parent = Agent(ScriptedLLM([tool_call_reply("ask_purchases", {"input": "ann's purchases"}, call_id="outer_1"),
                                text_reply("Ann bought 2 things.")]),
                   tools=[sub.as_tool("ask_purchases", "Finds purchases.")], event_sink=sink)
    answer = parent.ask("What did ann buy?", timeout_seconds=10)
    assert tool_results(parent)[0].text == "Found 2 purchases."
    nested = [e for e in recorder.events if isinstance(e, ev.SubAgentEvent)]
    run_id = recorder.events[0].run_id
    assert all(e.run_id == run_id and e.tool_call_id == "outer_1" and e.agent_name == "purchases" for e in nested)
    inner_types = [e.event.type for e in nested]
    assert inner_types[0] == "agent_start" and inner_types[-1] == "agent_end"
    assert "tool_execution_start" in inner_types and "tool_execution_end" in inner_types
    inner_runs = {e.event.run_id for e in nested}
    assert len(inner_runs) == 1 and run_id not in inner_runs  # the sub-agent's own run id, kept
    types = recorder.types()
    start = types.index("tool_execution_start")
    end = types.index("tool_execution_end")
    assert all(start < i < end for i, t in enumerate(types) if t == "sub_agent_event")  # nested in the call
    assert answer["status"] == "completed"


def test_a_sub_agents_own_sub_agent_nests_one_level_deeper() -> None:
    leaf = Agent(Echo(), name="leaf")
    middle = Agent(ScriptedLLM([tool_call_reply("ask_leaf", {"input": "deep"}), text_reply("middle done")]),
                   tools=[leaf.as_tool("ask_leaf", "Leaf.")], name="middle")
    recorder = EventRecorder()
    top = Agent(ScriptedLLM([tool_call_reply("ask_middle", {"input": "go"}), text_reply("top done")]),
                tools=[middle.as_tool("ask_middle", "Middle.")], event_sink=recorder)
    top.ask("start", timeout_seconds=10)
    deep = [e.event.event for e in recorder.events
            if isinstance(e, ev.SubAgentEvent) and isinstance(e.event, ev.SubAgentEvent)]
    assert [e.type for e in deep][:1] == ["agent_start"] and deep[-1].type == "agent_end"
    assert leaf.history[0].text == "deep"


# ---------------------------------------------------------------------------- usage


def test_openai_agents_1520_the_sub_agents_tokens_are_in_the_parents_usage() -> None:
    """openai-agents #1520: the Usage of a run counted only the main agent's requests, not those of an agent
    used as a tool. Here the parent's run usage, its agent_end event and its conversation usage add them.
    """
    sub = Agent(Echo(), name="deep")
    recorder = EventRecorder()
    parent = Agent(ScriptedLLM([with_usage(tool_call_reply("ask_deep", {"input": "dig"}), {"total_tokens": 7}),
                                with_usage(text_reply("done"), {"total_tokens": 3})]),
                   tools=[sub.as_tool("ask_deep", "Deep research.")], event_sink=recorder)
    parent.ask("research", timeout_seconds=10)
    [end] = recorder.of_type("agent_end")
    assert end.usage["total_tokens"] == 7 + 120 + 3
    assert end.usage["prompt_tokens"] == 100 and "requests" not in end.usage  # without limits: tokens only
    assert parent.usage["total_tokens"] == 130


def test_n8n_31743_each_delegation_keeps_its_own_usage_on_the_result_for_hooks() -> None:
    """n8n #31743 (and claude-code #43456): per-child usage on the sub-agent tool's result, for hooks."""
    seen: list[dict[str, Any] | None] = []

    def after(ctx: ToolCallContext) -> None:
        seen.append(ctx.result.usage if ctx.result is not None else None)

    sub = Agent(Echo(), name="child")
    parent = Agent(ScriptedLLM([calls_reply(("a", "ask_child", {"input": "one"}), ("b", "ask_child", {"input": "two"})),
                                text_reply("ok")]),
                   tools=[sub.as_tool("ask_child", "Child.")], after_tool_call=after)
    parent.ask("go", timeout_seconds=10)
    assert [u["total_tokens"] for u in seen if u] == [120, 120] and len(seen) == 2


def test_the_sub_agents_requests_count_against_the_parents_request_limit() -> None:
    """The parent's usage limits see what the sub-agent spent before the parent's next request."""
    sub_llm = ScriptedLLM([tool_call_reply("look", {}), with_usage(text_reply("looked"))])

    @tool
    def look() -> str:
        """Look."""
        return "seen"

    sub = Agent(sub_llm, tools=[look], name="sub")
    parent_llm = ScriptedLLM([tool_call_reply("ask_sub", {"input": "look around"}), text_reply("never asked")])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Sub.")], usage_limits=UsageLimits(requests=3))
    answer = parent.ask("go", timeout_seconds=10)
    assert answer["status"] == "usage_limit" and answer["usage_limit"]["limit"] == "requests"
    assert answer["usage_limit"]["value"] == 3  # 1 of the parent + 2 of the sub-agent
    assert len(parent_llm.calls) == 1  # the parent's second request was not sent
    assert parent.usage["tool_calls"] == 2  # the parent's call of ask_sub and the sub-agent's call of look


def test_claude_code_83412_a_sub_agents_own_usage_limit_ends_the_parents_run_as_a_limit() -> None:
    """anthropics/claude-code #83412: a sub-agent that hit its usage limit ended silently, the orchestrator
    unable to tell "limit hit" from any other failure. Issue 27's rule: a limit anywhere in a nested run
    reaches the top run. Before, the parent (no limits of its own) went on and answered ``completed``.
    """
    @tool
    def look() -> str:
        """Look."""
        return "seen"

    sub = Agent(ScriptedLLM([tool_call_reply("look", {}), text_reply("looked")]), tools=[look], name="sub",
                usage_limits=UsageLimits(requests=1))
    parent_llm = ScriptedLLM([tool_call_reply("ask_sub", {"input": "look around"}), text_reply("never asked")])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Sub.")])
    answer = parent.ask("go", timeout_seconds=10)
    assert answer["status"] == "usage_limit", answer
    assert answer["usage_limit"] == {"limit": "requests", "maximum": 1, "value": 1, "scope": "agent 'sub' run"}
    assert len(parent_llm.calls) == 1  # the parent asked its model nothing more
    assert "agent 'sub' run usage limit on requests" in answer["content"]


def test_the_sub_agents_tokens_end_the_parent_at_its_token_limit() -> None:
    sub = Agent(Echo(), name="sub")
    parent_llm = ScriptedLLM([with_usage(tool_call_reply("ask_sub", {"input": "x"}), {"total_tokens": 10}),
                              text_reply("never asked")])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Sub.")], usage_limits=UsageLimits(total_tokens=100))
    answer = parent.ask("go", timeout_seconds=10)
    assert answer["status"] == "usage_limit" and answer["usage_limit"]["value"] == 130
    assert len(parent_llm.calls) == 1


def test_conversation_limits_count_the_sub_agents_usage_from_the_history() -> None:
    """Run 1 spends 120 sub-agent tokens (under 200); run 2 spends 120 more: the conversation's 240 stops it,
    which only a count of run 1's sub-agent usage read back from the history can see.
    """
    sub = Agent(Echo(), name="sub")
    parent_llm = ScriptedLLM([tool_call_reply("ask_sub", {"input": "x"}), text_reply("first done"),
                              tool_call_reply("ask_sub", {"input": "y"}, call_id="call_2"),
                              text_reply("never asked")])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Sub.")],
                   conversation_usage_limits=UsageLimits(total_tokens=200))
    assert parent.ask("one", timeout_seconds=10)["status"] == "completed"
    second = parent.ask("two", timeout_seconds=10)
    assert second["status"] == "usage_limit" and second["usage_limit"]["scope"] == "conversation"
    assert second["usage_limit"]["value"] == 240
    assert len(parent_llm.calls) == 3


# ---------------------------------------------------------------------------- abort


def blocking_llm(started: threading.Event, log: list[str]) -> Callable[..., dict[str, Any]]:
    def slow(messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
             abort_event: threading.Event | None = None) -> dict[str, Any]:
        started.set()
        assert abort_event is not None
        cut = abort_event.wait(10)
        log.append("cut" if cut else "finished")
        return text_reply("late")
    return slow


@pytest.mark.parametrize("sub_started", [False, True])
def test_the_parents_abort_aborts_the_sub_agents_run_at_once(sub_started: bool) -> None:
    started, log = threading.Event(), []
    sub_events = EventRecorder()
    sub = Agent(blocking_llm(started, log), name="slow", event_sink=sub_events)
    if sub_started:
        sub.start()
    parent = Agent(ScriptedLLM([tool_call_reply("ask_slow", {"input": "think"}), text_reply("unused")]),
                   tools=[sub.as_tool("ask_slow", "Slow.")])
    threading.Thread(target=lambda: (started.wait(30), parent.abort()), daemon=True).start()
    answer = parent.ask("go", timeout_seconds=30)
    assert answer["status"] == "aborted"
    # the sub-agent's end event and its model's side effect come from other threads, after the parent's
    # answer and in no fixed order between them: wait for each (a bounded poll), never assert at once
    deadline = time.monotonic() + 30
    while (not sub_events.of_type("agent_end") or not log) and time.monotonic() < deadline:
        time.sleep(0.01)
    [end] = sub_events.of_type("agent_end")
    assert end.status == "aborted"
    assert log == ["cut"]  # the model's wait was cut by the abort, not left to its 10 s
    sub.shutdown()


def test_agentscope_java_2408_a_cancelled_parent_leaves_no_sub_agent_calling_its_tools() -> None:
    """agentscope-java #2408 (and The-Standard-Agent #302: the inner tool ran 50 times after the cancel):
    cancelling the parent must stop the sub-agent's loop, not leave it running to its turn cap.
    """
    ran: list[int] = []
    two_ran = threading.Event()

    @tool
    def step(n: int) -> str:
        """One step."""
        ran.append(n)
        if len(ran) >= 2:
            two_ran.set()
        time.sleep(0.02)
        return f"step {n} done"

    counter = iter(range(1000))
    sub_events = EventRecorder()
    sub = Agent(ScriptedLLM([lambda m, t: tool_call_reply("step", {"n": next(counter)}, call_id=f"s{len(ran)}")],
                            repeat_last=True),
                tools=[step], name="looper", max_turns=50, max_repeated_calls=None, event_sink=sub_events)
    parent = Agent(ScriptedLLM([tool_call_reply("ask_looper", {"input": "loop"}), text_reply("unused")]),
                   tools=[sub.as_tool("ask_looper", "Loops.")])
    threading.Thread(target=lambda: (two_ran.wait(5), parent.abort()), daemon=True).start()
    assert parent.ask("go", timeout_seconds=10)["status"] == "aborted"
    time.sleep(0.3)
    after_abort = len(ran)
    time.sleep(0.5)
    assert len(ran) == after_abort <= 8  # the sub-agent stopped within a few steps (0.05 s polls), and stays stopped
    deadline = time.monotonic() + 30  # the sub-agent's end event comes from its own thread: wait for it
    while not sub_events.of_type("agent_end") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [e.status for e in sub_events.of_type("agent_end")] == ["aborted"]


def test_pydantic_ai_7199_a_sub_agent_aborting_itself_is_an_error_result_not_the_parents_end() -> None:
    """pydantic-ai #7199: a sub-agent's own cancel escaped the delegate tool, ended the parent and carried
    the inner history. Here the parent gets an error result, goes on and keeps its own history.
    """
    sub = Agent(ScriptedLLM([tool_call_reply("give_up", {}), text_reply("unused")]), name="quitter")

    @tool
    def give_up() -> str:
        """Stop working."""
        sub.abort()
        return "stopping"

    sub.tools.add(give_up)
    parent = Agent(ScriptedLLM([tool_call_reply("ask_quitter", {"input": "try"}), text_reply("I'll do it myself.")]),
                   tools=[sub.as_tool("ask_quitter", "Quits.")])
    answer = parent.ask("go", timeout_seconds=10)
    assert answer["status"] == "completed" and answer["content"] == "I'll do it myself."
    [result] = tool_results(parent)
    assert result.is_error and result.details["status"] == "aborted"
    assert [m.role for m in parent.history] == ["user", "assistant", "tool", "assistant"]
    assert parent.history[0].text == "go"  # the parent's history, not the sub-agent's


def test_timeout_seconds_aborts_a_slow_sub_agent_and_returns_an_error_result() -> None:
    started, log = threading.Event(), []
    sub = Agent(blocking_llm(started, log), name="slow")
    parent = Agent(ScriptedLLM([tool_call_reply("ask_slow", {"input": "x"}), text_reply("went on")]),
                   tools=[sub.as_tool("ask_slow", "Slow.", timeout_seconds=0.3)])
    began = time.monotonic()
    assert parent.ask("go", timeout_seconds=10)["content"] == "went on"
    [result] = tool_results(parent)
    assert result.is_error and "within 0.3s" in result.text and log == ["cut"]
    assert time.monotonic() - began < 2


# ---------------------------------------------------------------------------- concurrency and cycles


def test_smolagents_1781_parallel_calls_to_one_sub_agent_each_get_their_own_answer() -> None:
    """Smolagents #1781 (and adk-go #1137): parallel calls of one managed agent shared its state and came
    back identical. Here the sub-agent has ``steering=True`` and a tool (so an input queued during a run
    would join that run after its tool batch and share its answer); 4 parallel calls are served one at a
    time, each in its own run, each with its own input's answer.
    """
    counter = iter(range(1000))
    lock = threading.Lock()
    running = {"now": 0, "max": 0}

    def sub_llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        with lock:
            running["now"] += 1
            running["max"] = max(running["max"], running["now"])
        try:
            time.sleep(0.02)
            if messages[-1]["role"] == "user":  # a new question: look first
                return tool_call_reply("look", {}, call_id=f"look_{next(counter)}")
            last = [m for m in messages if m["role"] == "user"][-1]["content"]
            return text_reply(f"re: {last}")
        finally:
            with lock:
                running["now"] -= 1

    @tool
    def look() -> str:
        """Look."""
        time.sleep(0.05)
        return "looked"

    sub = Agent(sub_llm, tools=[look], name="worker", steering=True)
    sub.start()
    questions = [f"question {i}" for i in range(4)]
    parent = Agent(ScriptedLLM([calls_reply(*[(f"c{i}", "ask_worker", {"input": q}) for i, q in enumerate(questions)]),
                                text_reply("all done")]),
                   tools=[sub.as_tool("ask_worker", "Works.")], max_parallel_tools=4)
    assert parent.ask("go", timeout_seconds=20)["status"] == "completed"
    assert [r.text for r in tool_results(parent)] == [f"re: {q}" for q in questions]
    assert running["max"] == 1
    assert len({r.details["run_id"] for r in tool_results(parent)}) == 4  # four runs, none merged by steering
    sub.shutdown()


def test_an_agent_given_its_own_tool_refuses_at_once_instead_of_waiting_for_itself() -> None:
    llm = ScriptedLLM([tool_call_reply("ask_me", {"input": "x"}), text_reply("answered alone")])
    agent = Agent(llm, name="narcissus")
    agent.tools.add(agent.as_tool("ask_me", "Me."))
    began = time.monotonic()
    answer = agent.ask("go", timeout_seconds=10)
    assert answer["content"] == "answered alone" and time.monotonic() - began < 2
    [result] = tool_results(agent)
    assert result.is_error and "(narcissus -> narcissus)" in result.text and "wait for itself" in result.text


@pytest.mark.parametrize("started", [False, True])
def test_a_delegation_cycle_a_b_a_is_refused_not_a_deadlock(started: bool) -> None:
    a_llm = ScriptedLLM([tool_call_reply("ask_b", {"input": "help"}), text_reply("a done")])
    b_llm = ScriptedLLM([tool_call_reply("ask_a", {"input": "help back"}), text_reply("b done")])
    a, b = Agent(a_llm, name="a"), Agent(b_llm, name="b")
    a.tools.add(b.as_tool("ask_b", "B."))
    b.tools.add(a.as_tool("ask_a", "A."))
    if started:
        a.start()
        b.start()
    began = time.monotonic()
    answer = a.ask("go", timeout_seconds=10)
    assert answer["content"] == "a done" and time.monotonic() - began < 3
    [refused] = tool_results(b)
    assert refused.is_error and "(a -> b -> a)" in refused.text and "wait for itself" in refused.text
    a.shutdown()
    b.shutdown()


def test_two_agents_asking_each_other_from_parallel_branches_is_refused_not_a_deadlock() -> None:
    """A asks B and C at once; B asks C while C asks B. Each waits for the other's turn, which never comes
    (a lock-order deadlock that no single chain shows): the graph of waits finds it and refuses.
    """
    both_running = threading.Barrier(2, timeout=5)

    def first_turn(peer: str) -> Callable[..., dict[str, Any]]:
        def call(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
            both_running.wait()  # B's and C's runs are both under way: each holds its own turn
            return tool_call_reply(f"ask_{peer}", {"input": "your view?"}, call_id=f"to_{peer}")
        return call

    b = Agent(ScriptedLLM([first_turn("c"), text_reply("b done")], repeat_last=True), name="b")
    c = Agent(ScriptedLLM([first_turn("b"), text_reply("c done")], repeat_last=True), name="c")
    b.tools.add(c.as_tool("ask_c", "C."))
    c.tools.add(b.as_tool("ask_b", "B."))
    a = Agent(ScriptedLLM([calls_reply(("to_b", "ask_b", {"input": "go"}), ("to_c", "ask_c", {"input": "go"})),
                           text_reply("a done")]), tools=[b.as_tool("ask_b", "B."), c.as_tool("ask_c", "C.")])
    began = time.monotonic()
    assert a.ask("start", timeout_seconds=20)["content"] == "a done"
    assert time.monotonic() - began < 5
    refused = [r for agent in (b, c) for r in tool_results(agent) if "wait for itself" in r.text]
    assert refused and all(r.is_error and ("(b -> c -> b)" in r.text or "(c -> b -> c)" in r.text) for r in refused)
    assert sorted(r.text for r in tool_results(a)) == ["b done", "c done"]


def test_a_shut_down_sub_agent_is_an_error_result() -> None:
    sub = Agent(Echo(), name="gone")
    sub.shutdown()
    parent = Agent(ScriptedLLM([tool_call_reply("ask_gone", {"input": "x"}), text_reply("ok")]),
                   tools=[sub.as_tool("ask_gone", "Gone.")])
    parent.ask("go", timeout_seconds=10)
    [result] = tool_results(parent)
    assert result.is_error and "was not asked" in result.text


def test_a_sub_agent_shut_down_while_the_call_waits_in_its_queue_is_an_error_result_not_a_hang() -> None:
    started, log = threading.Event(), []
    sub = Agent(blocking_llm(started, log), name="busy").start()
    first = sub.submit("someone else's long question")  # keeps the sub-agent busy; the delegated input queues
    assert started.wait(5)
    parent = Agent(ScriptedLLM([tool_call_reply("ask_busy", {"input": "x"}), text_reply("went on")]),
                   tools=[sub.as_tool("ask_busy", "Busy.")])
    threading.Timer(0.3, lambda: sub.shutdown(mode="now")).start()
    began = time.monotonic()
    assert parent.ask("go", timeout_seconds=10)["content"] == "went on"
    [result] = tool_results(parent)
    assert result.is_error and "AgentClosedError" in result.text and time.monotonic() - began < 5
    assert first.result(timeout=5)["status"] == "aborted"


# ---------------------------------------------------------------------------- durable parent


class Crash(SimulatedCrash):
    """Stands for the process dying."""


def test_a_durable_parent_never_asks_the_sub_agent_again_after_a_crash(
        sqlite_store_factory: Callable[[], Any]) -> None:
    """The crash comes after the sub-agent's result was journaled (in after_tool_call): the next process
    finishes the run from the journal; the sub-agent's model is not asked again, and its usage still counts.
    """
    echo = Echo()
    sub = Agent(echo, name="sub")
    crash = {"on": True}

    def after(ctx: ToolCallContext) -> None:
        if crash["on"]:
            raise Crash()

    store = sqlite_store_factory()
    parent = Agent(ScriptedLLM([tool_call_reply("ask_sub", {"input": "expensive question"})]),
                   tools=[sub.as_tool("ask_sub", "Sub.")], after_tool_call=after, store=store, conversation_id="c-1")
    with pytest.raises(Crash):
        parent.ask("go")
    assert echo.calls == 1
    crash["on"] = False
    llm2 = ScriptedLLM([with_usage(text_reply("final"), {"total_tokens": 5})])
    again = Agent(llm2, tools=[sub.as_tool("ask_sub", "Sub.")], after_tool_call=after,
                  store=sqlite_store_factory(), conversation_id="c-1")
    [answer] = again.drain()
    assert answer["content"] == "final"
    assert echo.calls == 1  # the recorded result was replayed; the sub-agent was not asked again
    assert [m["content"] for m in llm2.calls[0]["messages"] if m["role"] == "tool"] == ["re: expensive question"]
    assert again.usage["total_tokens"] == 120 + 5  # the replayed result's usage came back from the journal


@pytest.mark.parametrize("started", [False, True])
def test_a_durable_sub_agent_answers_through_its_own_store(sqlite_store_factory: Callable[[], Any],
                                                            started: bool) -> None:
    store = sqlite_store_factory()
    sub = Agent(Echo(), name="archivist", store=store, conversation_id="sub-1")
    if started:
        sub.start()
    parent = Agent(ScriptedLLM([tool_call_reply("ask_archivist", {"input": "file this"}), text_reply("filed")]),
                   tools=[sub.as_tool("ask_archivist", "Files things.")])
    assert parent.ask("go", timeout_seconds=10)["content"] == "filed"
    assert tool_results(parent)[0].text == "re: file this"
    assert store.load("sub-1").version == 1 and store.pending("sub-1") == []  # committed in the sub's store
    sub.shutdown()


def test_the_parents_stream_carries_the_sub_agents_events() -> None:
    sub = Agent(ScriptedLLM([text_reply("sub answer")], delta_chars=4), name="streamer")
    parent = Agent(ScriptedLLM([tool_call_reply("ask_streamer", {"input": "talk"}), text_reply("done")]),
                   tools=[sub.as_tool("ask_streamer", "Talks.")])
    items = list(parent.stream("go"))
    nested = [i for i in items if isinstance(i, ev.SubAgentEvent)]
    deltas = "".join(e.event.delta for e in nested if e.event.type == "message_update")
    assert deltas == "sub answer"  # the sub-agent's streamed text, piece by piece, in the parent's stream
    assert items[-1]["content"] == "done"
    wire = [json.loads(e.split("data: ", 1)[1]) for e in sse_events(items, heartbeat_seconds=None)
            if e.startswith("event: sub_agent_event")]
    assert wire[0]["event"]["type"] == "agent_start" and wire[0]["event"]["run_id"] == nested[0].event.run_id
    assert wire[0]["run_id"] == items[0].run_id and wire[0]["agent_name"] == "streamer"  # SSE: nested JSON


def test_a_crash_during_the_sub_agents_run_is_reported_as_interrupted_and_not_asked_again(
        sqlite_store_factory: Callable[[], Any]) -> None:
    """The process dies while the sub-agent works (no result recorded): the next process tells the model the
    call was interrupted (its effect unknown) and does not ask the sub-agent again.
    """
    asked: list[str] = []

    def dies(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        asked.append(messages[-1]["content"])
        raise Crash()

    sub = Agent(dies, name="sub")
    parent = Agent(ScriptedLLM([tool_call_reply("ask_sub", {"input": "book the flight"})]),
                   tools=[sub.as_tool("ask_sub", "Books.")], store=sqlite_store_factory(), conversation_id="c-2")
    with pytest.raises(Crash):
        parent.ask("go")
    llm2 = ScriptedLLM([text_reply("I could not confirm the booking.")])
    again = Agent(llm2, tools=[sub.as_tool("ask_sub", "Books.")], store=sqlite_store_factory(), conversation_id="c-2")
    assert again.drain()[0]["content"] == "I could not confirm the booking."
    assert asked == ["book the flight"]  # asked once, never again
    [tool_message] = [m for m in llm2.calls[0]["messages"] if m["role"] == "tool"]
    assert "interrupted" in tool_message["content"] and "not run again" in tool_message["content"]


# ---------------------------------------------------------------------------- the local model


@pytest.mark.model
def test_local_model_parent_delegates_to_a_local_model_sub_agent(local_model: Any) -> None:
    """Both agents on the real llama.cpp model: the parent's call is forced by a JSON schema (the 270M model
    does not call tools on its own); the sub-agent answers in text; its real token counts reach the parent.
    """
    recorder = EventRecorder()
    sub = Agent(local_model.llm_call(max_tokens=24), name="geographer",
                system_prompt="Answer in one short sentence.")
    parent = Agent(local_model.constrained_llm_call(
        examples=[("What is the capital of Italy?", "ask_geographer", {"input": "What is the capital of Italy?"})],
        max_tokens=48), tools=[sub.as_tool("ask_geographer", "Answers geography questions.")],
        event_sink=recorder, max_turns=3)
    answer = parent.ask("What is the capital of France?", timeout_seconds=240)
    assert answer["status"] in ("completed", "truncated", "max_turns"), answer
    results = tool_results(parent)
    assert results and results[0].tool_name == "ask_geographer" and not results[0].is_error
    assert sub.history[0].role == "user" and sub.history[0].text.strip()  # the input the parent's model wrote
    assert sub.history[1].text.strip() and results[0].text.startswith(sub.history[1].text)  # its answer
    assert results[0].details["answer"]["model"].endswith(".gguf")  # the answer dict names the model
    sub_usage = results[0].details["usage"]
    assert sub_usage["requests"] == 1 and sub_usage["completion_tokens"] > 0
    [end] = recorder.of_type("agent_end")
    assert end.usage["completion_tokens"] > sub_usage["completion_tokens"]  # the parent's own plus the sub's
    assert any(isinstance(e, ev.SubAgentEvent) and e.event.type == "message_end" for e in recorder.events)
    sub.shutdown()
    parent.shutdown()
