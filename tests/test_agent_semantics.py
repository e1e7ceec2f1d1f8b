"""Agent semantics of issue 5: steering, intermediate output, progress, abort, state, shutdown modes."""

import json
import threading
import time

import pytest

from yiemagent import Agent, AgentTool, AgentToolResult, tool
from yiemagent.messages import ToolResultMessage
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply
from yiemagent.tools import report_progress

from . import strict_openai


def gated_tool(name="slow"):
    """A tool that blocks until released; returns (tool, started event, release event)."""
    started, release = threading.Event(), threading.Event()

    def execute(call_id, arguments, abort_event):
        started.set()
        release.wait(10)
        return f"{name} done"

    return AgentTool(name, "Blocks until released.", {"type": "object"}, execute), started, release


def test_steering_adds_inputs_after_the_tool_batch_and_one_answer_answers_both():
    """steering=True: an input put during a run joins it after the batch; answer carries both ids."""
    slow, started, release = gated_tool()
    llm = ScriptedLLM([tool_call_reply("slow", {}), text_reply("answered both")])
    agent = Agent(llm, tools=[slow], steering=True).start()
    try:
        agent.input_queue.put("first")
        assert started.wait(5)
        agent.input_queue.put("also this")
        release.set()
        answer = agent.output_queue.get(timeout=5)
    finally:
        agent.shutdown()
    assert answer["content"] == "answered both" and len(answer["input_ids"]) == 2
    sent = [m["role"] for m in llm.calls[1]["messages"]]
    assert sent == ["user", "assistant", "tool", "user"]  # the steered input after the tool result
    assert llm.calls[1]["messages"][-1]["content"] == "also this"
    assert agent.output_queue.empty()


def test_without_steering_each_input_is_its_own_run():
    """steering=False (default): the second input waits for its own run."""
    slow, started, release = gated_tool()
    llm = ScriptedLLM([tool_call_reply("slow", {}), text_reply("one"), text_reply("two")])
    agent = Agent(llm, tools=[slow]).start()
    try:
        agent.input_queue.put("first")
        assert started.wait(5)
        agent.input_queue.put("second")
        release.set()
        answers = [agent.output_queue.get(timeout=5) for _ in range(2)]
    finally:
        agent.shutdown()
    assert [a["content"] for a in answers] == ["one", "two"]
    assert all(len(a["input_ids"]) == 1 for a in answers)


def test_steered_submit_futures_get_the_shared_answer():
    """A submit() future for a steered input resolves with the run's answer."""
    slow, started, release = gated_tool()
    llm = ScriptedLLM([tool_call_reply("slow", {}), text_reply("both")])
    agent = Agent(llm, tools=[slow], steering=True).start()
    try:
        first = agent.submit("a")
        assert started.wait(5)
        second = agent.submit("b")
        release.set()
        assert first.result(5) is second.result(5)
        assert first.result()["input_ids"] == [first.input_id, second.input_id]
    finally:
        agent.shutdown()


def test_emit_intermediate_puts_tool_calls_and_results_on_the_output_queue():
    """emit_intermediate=True: assistant-with-calls and tool messages precede the answer."""
    llm = ScriptedLLM([tool_call_reply("get_time", {}), text_reply("noon")])

    @tool
    def get_time() -> str:
        """Time."""
        return "12:00"

    agent = Agent(llm, tools=[get_time], emit_intermediate=True).start()
    try:
        agent.input_queue.put("time?")
        items = [agent.output_queue.get(timeout=5) for _ in range(3)]
    finally:
        agent.shutdown()
    assert [i["role"] for i in items] == ["assistant", "tool", "assistant"]
    assert items[0]["intermediate"] and items[0]["tool_calls"][0]["function"]["name"] == "get_time"
    assert items[1]["intermediate"] and items[1]["content"] == "12:00"
    assert "intermediate" not in items[2] and items[2]["content"] == "noon"
    assert items[0]["input_ids"] == items[2]["input_ids"]


def test_report_progress_from_a_tool_becomes_update_events_on_the_loop_thread():
    """Tools report progress; the sink gets tool_execution_update events between start and end."""
    loop_threads = set()

    def stepper(call_id, arguments, abort_event):
        for step in range(3):
            report_progress({"progress": step + 1, "total": 3})
        return "done"

    recorder = EventRecorder()

    def sink(event):
        loop_threads.add(threading.current_thread().name)
        recorder(event)

    llm = ScriptedLLM([tool_call_reply("stepper", {}), text_reply("ok")])
    agent = Agent(llm, tools=[AgentTool("stepper", "Steps.", {"type": "object"}, stepper)], event_sink=sink)
    agent.ask("go")
    updates = recorder.of_type("tool_execution_update")
    assert [u.progress["progress"] for u in updates] == [1, 2, 3]
    assert all(u.tool_call_id == "call_1" for u in updates)
    types = recorder.types()
    assert types.index("tool_execution_start") < types.index("tool_execution_update") < types.index(
        "tool_execution_end")
    assert loop_threads == {threading.current_thread().name}  # ask() without start: the caller's thread


def test_abort_during_a_slow_model_call_returns_within_a_fraction_of_a_second():
    """abort(): the run ends "aborted" without waiting for llm_call; the next input is served."""
    entered, release = threading.Event(), threading.Event()
    cancelled = []

    class SlowModel:
        calls = 0

        def __call__(self, messages, tools):
            SlowModel.calls += 1
            if SlowModel.calls == 1:
                entered.set()
                release.wait(10)
            return text_reply("fresh")

        def cancel(self):
            cancelled.append(True)
            release.set()

    agent = Agent(SlowModel()).start()
    try:
        agent.input_queue.put("slow one")
        assert entered.wait(5)
        begun = time.monotonic()
        agent.abort()
        aborted = agent.output_queue.get(timeout=5)
        elapsed = time.monotonic() - begun
        agent.input_queue.put("next")
        after = agent.output_queue.get(timeout=5)
    finally:
        agent.shutdown()
    assert aborted["status"] == "aborted" and elapsed < 0.5
    assert cancelled == [True]  # llm_call.cancel() was called
    assert after["content"] == "fresh"
    assert [m["role"] for m in agent.openai_messages()] == ["user", "user", "assistant"]


def test_abort_cuts_an_mcp_tools_call_in_flight(sdk_server):
    """abort() during a slow MCP tool: cancelled result at once, history valid, agent serves on."""
    recorder = EventRecorder()
    llm = ScriptedLLM([tool_call_reply("slow", {"seconds": 20}), text_reply("after")])
    agent = Agent(llm, mcp_servers=[sdk_server], event_sink=recorder).start()
    try:
        agent.input_queue.put("go")
        deadline = time.monotonic() + 10
        while not recorder.of_type("tool_execution_start") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert recorder.of_type("tool_execution_start")
        time.sleep(0.2)  # let tools/call reach the server
        begun = time.monotonic()
        agent.abort()
        aborted = agent.output_queue.get(timeout=5)
        elapsed = time.monotonic() - begun
        agent.input_queue.put("again")
        after = agent.output_queue.get(timeout=10)
    finally:
        agent.shutdown()
    assert aborted["status"] == "aborted" and elapsed < 1.0
    results = [m for m in agent.history if isinstance(m, ToolResultMessage)]
    assert len(results) == 1 and "cancelled" in results[0].text
    assert after["content"] == "after"
    assert recorder.of_type("aborted")
    strict_openai.validate(agent.openai_messages())


def test_state_round_trips_and_a_restored_agent_continues_without_rerunning_tools():
    """state_to_json / from_state: lossless history; finished tool calls are never run again."""
    runs = []

    @tool
    def side_effect(x: int) -> dict:
        """Record a side effect."""
        runs.append(x)
        return {"ok": x, "note": "żółw"}

    first = Agent(ScriptedLLM([tool_call_reply("side_effect", {"x": 1}), {
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "done"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}]),
        system_prompt="sys", tools=[side_effect])
    first.ask("do it")
    saved = first.state_to_json()
    llm = ScriptedLLM([text_reply("continued")])
    second = Agent.from_state(saved, llm_call=llm, tools=[side_effect])
    assert second.history == first.history
    assert [m.is_error for m in second.history if isinstance(m, ToolResultMessage)] == [False]
    assert second.usage == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    assert second.ask("more")["content"] == "continued"
    assert runs == [1]
    assert llm.calls[0]["messages"][0] == {"role": "system", "content": "sys"}
    assert llm.calls[0]["messages"][3]["content"] == '{"ok": 1, "note": "żółw"}'
    assert json.loads(saved)["version"] == 1


def test_shutdown_after_turn_returns_queued_inputs_not_served():
    """mode="after_turn": the current run finishes, queued inputs are returned."""
    slow, started, release = gated_tool()
    llm = ScriptedLLM([tool_call_reply("slow", {}), text_reply("finished")])
    agent = Agent(llm, tools=[slow]).start()
    agent.input_queue.put("current")
    assert started.wait(5)
    agent.input_queue.put("queued 1")
    agent.follow_up_queue.put("queued 2")
    threading.Timer(0.2, release.set).start()
    left = agent.shutdown(timeout_seconds=5, mode="after_turn")
    assert left == ["queued 1", "queued 2"]
    assert agent.output_queue.get_nowait()["content"] == "finished"
    assert not agent.is_running


def test_shutdown_now_aborts_the_current_run_and_fails_waiting_futures():
    """mode="now": abort, join, unserved inputs returned, their futures fail with AgentClosedError."""
    from yiemagent import AgentClosedError

    slow, started, release = gated_tool()
    agent = Agent(ScriptedLLM([tool_call_reply("slow", {})]), tools=[slow]).start()
    running = agent.submit("current")
    assert started.wait(5)
    waiting = agent.submit("waiting")
    begun = time.monotonic()
    left = agent.shutdown(timeout_seconds=5, mode="now")
    release.set()
    assert time.monotonic() - begun < 1.0
    assert running.result(1)["status"] == "aborted"
    assert left == ["waiting"]
    with pytest.raises(AgentClosedError):
        waiting.result(1)
    assert not agent.is_running


def test_terminate_from_every_tool_of_the_batch_makes_no_further_model_call():
    """Issue 5.5 through the Agent: the answer is the last assistant message, status terminated."""
    finish = AgentTool("finish", "Finish.", {"type": "object"}, lambda i, a, e: AgentToolResult("bye", terminate=True))
    llm = ScriptedLLM([tool_call_reply("finish", {}, text="wrapping up")])
    agent = Agent(llm, tools=[finish])
    answer = agent.ask("end")
    assert answer["status"] == "terminated" and len(llm.calls) == 1
    assert answer["content"] == "wrapping up" and "tool_calls" not in answer
    silent = Agent(ScriptedLLM([tool_call_reply("finish", {})]), tools=[finish]).ask("end")
    assert silent["content"] == "bye"  # no text from the model: the terminating results speak


def test_a_max_turns_answer_never_carries_unanswered_tool_calls():
    """The last (tool-free) turn may still ask for tools: the answer is text, the calls are answered in the
    history with "not run" results.
    """
    llm = ScriptedLLM([tool_call_reply("finish", {})], repeat_last=True)
    finish = AgentTool("finish", "Finish.", {"type": "object"}, lambda i, a, e: "again")
    agent = Agent(llm, tools=[finish], max_turns=2, max_repeated_calls=None)
    answer = agent.ask("loop")
    assert answer["status"] == "max_turns" and "tool_calls" not in answer
    assert answer["content"] == "The turn limit was reached before a final answer."
    strict_openai.validate(agent.openai_messages())


def test_a_raising_tool_and_a_raising_hook_are_error_events():
    """Issue 5.10: error events name where it failed (tool, hook), besides the error results."""
    def boom(call_id, arguments, abort_event):
        raise RuntimeError("disk full")

    def after(ctx):
        raise ValueError("redactor down")

    recorder = EventRecorder()
    llm = ScriptedLLM([tool_call_reply("boom", {}), tool_call_reply("ok", {}), text_reply("done")])
    tools = [AgentTool("boom", "Fails.", {"type": "object"}, boom),
             AgentTool("ok", "Works.", {"type": "object"}, lambda i, a, e: "fine")]
    Agent(llm, tools=tools, after_tool_call=after, event_sink=recorder).ask("go")
    where = [(e.where, type(e.error).__name__) for e in recorder.of_type("error")]
    assert ("tool", "RuntimeError") in where and ("hook", "ValueError") in where


def test_issue15_emit_intermediate_with_nobody_reading_never_blocks_an_aborted_run():
    """Issue 15 (adversarial run): with ``emit_intermediate=True`` and nobody reading ``output_queue``, the
    queue filled with intermediate messages, ``abort()`` did not end the run (its answer waited for room
    for ever) and later inputs were never served. Now what an aborted run puts never waits: it is kept in
    ``agent.undelivered``, and the next input is served.
    """
    from yiemagent import tool

    @tool
    def step(n: int) -> str:
        """One step."""
        return f"step {n}"

    replies = [tool_call_reply("step", {"n": i}, call_id=f"c{i}") for i in range(40)]
    agent = Agent(ScriptedLLM([*replies, text_reply("later")]), tools=[step], emit_intermediate=True,
                  max_repeated_calls=None, max_turns=100).start()
    try:
        agent.input_queue.put("go")
        deadline = time.monotonic() + 30
        while not agent.output_queue.full():  # nobody reads: the run fills the queue, then waits for room
            assert time.monotonic() < deadline, "the queue never filled"
            time.sleep(0.02)
        agent.abort()
        later = agent.submit("next")
        assert later.result(timeout=30)["status"] in ("completed", "max_turns")  # served, not stuck
        kept = [item for item in agent.undelivered if item.get("status") == "aborted"]
        assert len(kept) == 1 and kept[0]["role"] == "assistant"  # the aborted run's answer is kept, not lost
        queued = [agent.output_queue.get_nowait() for _ in range(agent.output_queue.qsize())]
        assert all(item["intermediate"] is True for item in queued)
    finally:
        agent.shutdown(timeout_seconds=5, mode="now")
