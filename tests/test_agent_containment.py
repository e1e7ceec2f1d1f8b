"""Nothing escapes the agent thread, not even ``BaseException`` (issue 8, point 5).

A tool that uses argparse (``SystemExit(2)`` on a bad option), or a tool, hook, event sink,
``prepare_context``, ``format_messages`` or ``llm_call`` raising ``SystemExit`` /
``KeyboardInterrupt`` / ``GeneratorExit`` / any ``BaseException`` killed the agent thread in
7 of 7 cases before: the answer was never delivered and later inputs were never answered.
Now each becomes an error result or an error answer, every tool call gets its result, the
thread lives. ``ask()`` before ``start()`` interrupted by Ctrl-C aborts its run and re-raises.
"""

import _thread
import argparse
import threading
import time
from pathlib import Path

import pytest

from yiemagent import Agent, AgentTool
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

from . import strict_openai


class Custom(BaseException):
    """A BaseException that is no Exception, as some libraries define."""


RAISED = [SystemExit(2), KeyboardInterrupt(), GeneratorExit(), Custom("odd")]


def _cli_tool(call_id, arguments, abort_event):
    parser = argparse.ArgumentParser(prog="cli", exit_on_error=True)
    parser.add_argument("--count", type=int)
    parser.parse_args(["--bad-option"])  # argparse calls sys.exit(2)
    return "unreachable"


def _raising_tool(exc):
    def execute(call_id, arguments, abort_event):
        raise exc
    return AgentTool("boom", "Raises.", {"type": "object"}, execute)


def _assert_thread_serves_on(agent, first):
    """The first answer came; the thread is alive and answers the next input too."""
    assert agent.is_running
    later = agent.submit("later").result(timeout=10)
    assert later["content"] == "fine"
    strict_openai.validate(agent.openai_messages())
    return first


def test_argparse_system_exit_in_a_tool_is_an_error_result_and_the_thread_lives():
    """A tool parsing a bad option with argparse: SystemExit(2) becomes the call's error result."""
    llm = ScriptedLLM([tool_call_reply("cli", {}), text_reply("told"), text_reply("fine")])
    agent = Agent(llm, tools=[AgentTool("cli", "A CLI wrapper.", {"type": "object"}, _cli_tool)]).start()
    try:
        answer = agent.submit("run it").result(timeout=10)
        _assert_thread_serves_on(agent, answer)
    finally:
        agent.shutdown(timeout_seconds=5)
    assert answer["content"] == "told"
    tool_message = llm.calls[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "SystemExit" in tool_message["content"]


@pytest.mark.parametrize("exc", RAISED, ids=lambda e: type(e).__name__)
def test_a_tool_raising_any_base_exception_gets_an_error_result(exc):
    """Every kind of BaseException from a tool: one error result for the call, the run goes on."""
    llm = ScriptedLLM([tool_call_reply("boom", {}), text_reply("after"), text_reply("fine")])
    agent = Agent(llm, tools=[_raising_tool(exc)]).start()
    try:
        answer = agent.submit("go").result(timeout=10)
        _assert_thread_serves_on(agent, answer)
    finally:
        agent.shutdown(timeout_seconds=5)
    assert answer["status"] == "completed" and answer["content"] == "after"
    assert type(exc).__name__ in llm.calls[1]["messages"][-1]["content"]


@pytest.mark.parametrize("place", ["llm_call", "prepare_context", "format_messages"])
@pytest.mark.parametrize("exc", RAISED, ids=lambda e: type(e).__name__)
def test_a_callback_raising_any_base_exception_gives_an_error_answer(place, exc):
    """llm_call / prepare_context / format_messages raising a BaseException: status error, thread lives."""
    armed = [True]

    def maybe_raise():
        if armed[0]:
            armed[0] = False
            raise exc

    def llm(messages, tools):
        if place == "llm_call":
            maybe_raise()
        return text_reply("fine")

    def prepare(history):
        if place == "prepare_context":
            maybe_raise()
        return history

    from yiemagent.messages.formatting import OpenAIFormatter
    formatter = OpenAIFormatter()

    def format_messages(history):
        if place == "format_messages":
            maybe_raise()
        return formatter(history)

    agent = Agent(llm, prepare_context=prepare, format_messages=format_messages).start()
    try:
        answer = agent.submit("first").result(timeout=10)
        _assert_thread_serves_on(agent, answer)
    finally:
        agent.shutdown(timeout_seconds=5)
    assert answer["status"] == "error"
    assert type(exc).__name__ in answer["error"]


@pytest.mark.parametrize("hook", ["before_tool_call", "after_tool_call"])
@pytest.mark.parametrize("exc", RAISED, ids=lambda e: type(e).__name__)
def test_a_hook_raising_any_base_exception_is_an_error_result(hook, exc):
    """A hook raising SystemExit & co: the call gets an error result, the run goes on."""
    def bad_hook(*args):
        raise exc

    ok = AgentTool("ok", "Fine.", {"type": "object"}, lambda call_id, arguments, abort_event: "ok")
    llm = ScriptedLLM([tool_call_reply("ok", {}), text_reply("after"), text_reply("fine")])
    agent = Agent(llm, tools=[ok], **{hook: bad_hook}).start()
    try:
        answer = agent.submit("go").result(timeout=10)
        _assert_thread_serves_on(agent, answer)
    finally:
        agent.shutdown(timeout_seconds=5)
    assert answer["content"] == "after"
    assert "hook failed" in llm.calls[1]["messages"][-1]["content"]


@pytest.mark.parametrize("exc", RAISED, ids=lambda e: type(e).__name__)
def test_an_event_sink_raising_any_base_exception_is_ignored(exc):
    """A sink raising on every event: the answers still come, through the output queue too."""
    def sink(event):
        raise exc

    agent = Agent(ScriptedLLM([text_reply("one"), text_reply("fine")]), event_sink=sink).start()
    try:
        agent.input_queue.put("first")
        answer = agent.output_queue.get(timeout=10)
        _assert_thread_serves_on(agent, answer)
    finally:
        agent.shutdown(timeout_seconds=5)
    assert answer["content"] == "one" and answer["status"] == "completed"


def test_a_cancelled_future_does_not_kill_the_thread():
    """The caller cancels its submit() future before the run ends: the thread goes on."""
    gate = threading.Event()

    def llm(messages, tools):
        gate.wait(5)
        return text_reply("fine")

    agent = Agent(llm).start()
    try:
        future = agent.submit("one")
        assert future.cancel()
        gate.set()
        assert agent.submit("two").result(timeout=10)["content"] == "fine"
        assert agent.is_running
    finally:
        agent.shutdown(timeout_seconds=5)


def _interrupt_main_later(event, delay=0.05):
    def fire():
        event.wait(5)
        time.sleep(delay)
        _thread.interrupt_main()  # what Ctrl-C does: KeyboardInterrupt in the main thread

    threading.Thread(target=fire, daemon=True).start()


def test_ctrl_c_during_ask_before_start_aborts_the_running_tool_and_reraises():
    """ask() without start(), Ctrl-C while a tool runs: KeyboardInterrupt re-raised, the tool sees abort."""
    assert threading.current_thread() is threading.main_thread()
    started, saw_abort = threading.Event(), threading.Event()

    def slow(call_id, arguments, abort_event):
        started.set()
        if abort_event.wait(10):
            saw_abort.set()
        return "stopped"

    llm = ScriptedLLM([tool_call_reply("slow", {}), text_reply("fine")])
    agent = Agent(llm, tools=[AgentTool("slow", "Slow.", {"type": "object"}, slow)])
    _interrupt_main_later(started)
    begun = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        agent.ask("go")
    assert time.monotonic() - begun < 3
    assert saw_abort.wait(30), "the tool kept running after Ctrl-C"
    assert agent.ask("again", timeout_seconds=5)["content"] == "fine"
    strict_openai.validate(agent.openai_messages())
    agent.shutdown()


def test_code_puppy_41_ctrl_c_during_ask_before_start_keeps_the_run_and_the_started_tools_record():
    """Issue 15, a new user's trial: Ctrl-C during ``ask()`` on an agent that was not started dropped the
    whole run from the history (marked failed), the started tool's call included, so nothing said it had
    run (mpfaffenberger/code_puppy#41: Ctrl-C must free the prompt at once, without losing the turn).
    Now the run ends as an abort does on a started agent: the call and its "cancelled ... may not
    have finished" result stay in the history and in the next request.
    """
    started = threading.Event()

    def slow(call_id, arguments, abort_event):
        started.set()
        abort_event.wait(10)
        return "stopped"

    llm = ScriptedLLM([tool_call_reply("slow", {"path": "a.txt"}), text_reply("fine")])
    agent = Agent(llm, tools=[AgentTool("slow", "Slow.", {"type": "object"}, slow)])
    _interrupt_main_later(started)
    with pytest.raises(KeyboardInterrupt):
        agent.ask("go")
    messages = agent.openai_messages()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["tool_calls"][0]["function"]["name"] == "slow"
    assert "cancelled" in messages[2]["content"] and "may not have finished" in messages[2]["content"]
    assert agent.ask("again", timeout_seconds=5)["content"] == "fine"
    sent = llm.calls[-1]["messages"]
    assert any(m.get("role") == "tool" and m.get("tool_call_id") == messages[2]["tool_call_id"] for m in sent)
    strict_openai.validate(agent.openai_messages())
    agent.shutdown()


@pytest.mark.slow
def test_ctrl_c_tests_pass_when_the_test_run_inherits_sigint_ignored():
    """Issue 15: three Ctrl-C tests failed when pytest was started with SIGINT ignored (a CI wrapper,
    ``nohup``): ``_thread.interrupt_main()`` does nothing then. The conftest gives each test Python's own
    handler; here the Ctrl-C tests run in a pytest whose SIGINT is ignored from the start.
    """
    import signal
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_agent_containment.py",
         "-k", "ctrl_c_during_ask_before_start"],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN), capture_output=True, text=True,
        timeout=120, cwd=str(Path(__file__).resolve().parent.parent),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "4 passed" in result.stdout, result.stdout[-500:]


def test_ctrl_c_during_ask_before_start_cuts_the_model_call():
    """ask() without start(), Ctrl-C during llm_call: its cancel() is called, KeyboardInterrupt re-raised."""
    entered, released = threading.Event(), threading.Event()
    cancelled = []

    class SlowModel:
        def __call__(self, messages, tools):
            entered.set()
            released.wait(10)
            return text_reply("late")

        def cancel(self):
            cancelled.append(True)
            released.set()

    agent = Agent(SlowModel())
    _interrupt_main_later(entered)
    with pytest.raises(KeyboardInterrupt):
        agent.ask("go")
    assert cancelled, "the model call was left running"
    agent.shutdown()


def test_ctrl_c_during_ask_before_start_is_raised_while_a_stream_waits_its_turn():
    """Found by a review of the conversation refactor: a ``stream()`` started on another thread during the
    ``ask()`` run must not hide that run's Ctrl-C (the run's scope is per thread, not shared).
    """
    entered, released = threading.Event(), threading.Event()
    cancelled = []

    class SlowModel:
        def __call__(self, messages, tools):
            if not entered.is_set():
                entered.set()
                released.wait(10)
                return text_reply("late")
            return text_reply("stream answer")

        def cancel(self):
            cancelled.append(True)
            released.set()

    agent = Agent(SlowModel())
    streams = []

    def stream_then_interrupt():
        entered.wait(5)
        streams.append(agent.stream("meanwhile"))  # its thread waits for the run lock
        time.sleep(0.2)
        _thread.interrupt_main()

    threading.Thread(target=stream_then_interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        agent.ask("go")
    assert cancelled, "the model call was left running"
    assert streams and streams[0].future.result(10)["content"] == "stream answer"
    agent.shutdown()
