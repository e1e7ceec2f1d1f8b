"""Issue 33, point 5: every cut reaches what is in flight.

* A parallel input guardrail's tripwire cuts the model request in flight as ``abort()`` does (the same
  ``llm_call.cancel()``: ``yiemagent.loop.handoff.cut_in_flight``). openai-agents-python #3982 / #4004:
  a tripwire left the in-flight model task running; here the scripted model server sees the request cut.
* A guardrail, hook or output validator that hangs is cut by the run's deadline
  (``ask(timeout_seconds=...)``), started or not: ``TimeoutError`` at the deadline, the run ``aborted`` in
  the history, and the next input is answered while the hung function still runs.
* ``edit``/``rewind``/``regenerate`` while a call awaits approval refuse with ``BranchError`` and leave the
  approval as it was (in memory, and with a store through ``branch_input``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import strict_openai
from yiemagent import Agent, BranchError, tool
from yiemagent.models.openai_chat import openai_chat
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply
from yiemagent.tools.guardrails import Guardrail, GuardrailVerdict

WAIT = 30.0
"""Generous bound of every wait on another thread."""


def _logged(log: Path, last: str, *, thinking: bool) -> list[dict[str, Any]]:
    """The server's log lines of requests holding ``last``: on arrival (``thinking``) or after the wait."""
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [e for e in lines if last in str(e.get("last")) and bool(e.get("thinking")) == thinking]


def test_openai_agents_3982_a_parallel_tripwire_cuts_the_model_request_in_flight(
        scripted_model: tuple[str, Path]) -> None:
    """The model "thinks" 45 s before its (not streamed) reply; the parallel guardrail trips once the
    request reached the server. The run ends ``guardrail_tripped`` and the server saw its client close the
    request (``cut``), as after ``abort()``; before, the request stayed open and the answer waited for it
    (the issue: 5.2 s against a 5 s model).
    """
    url, log = scripted_model

    def slow_check(ctx: Any) -> GuardrailVerdict:
        deadline = time.monotonic() + WAIT
        while not _logged(log, "tripwire run", thinking=True) and time.monotonic() < deadline:
            time.sleep(0.05)  # the request is in flight: the server got it (its connection is open)
        return GuardrailVerdict.tripwire("not allowed")

    agent = Agent(openai_chat(url, "scripted"), input_guardrails=[Guardrail(slow_check, parallel=True)])
    answer = agent.ask("[think 45] (tripwire run)")  # no deadline: only the tripwire can cut the request
    assert answer["status"] == "guardrail_tripped"
    strict_openai.validate(agent.openai_messages())
    deadline = time.monotonic() + WAIT
    while not _logged(log, "tripwire run", thinking=False) and time.monotonic() < deadline:
        time.sleep(0.05)  # the server logs the request again when its wait ends: at once when the client left
    seen = _logged(log, "tripwire run", thinking=False)
    assert seen and seen[-1]["cut"] is True, seen


# ------------------------------------------------------------------ deadlines


class Hang:
    """A function that hangs for the input holding ``hang`` (until released) and passes otherwise."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.finished = threading.Event()

    def wait_if(self, text: str) -> None:
        if "hang" in text:
            self.entered.set()
            self.release.wait(WAIT * 2)
            self.finished.set()


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def _latest_input(history: list[Any]) -> str:
    users = [m for m in history if getattr(m, "role", None) == "user"]
    return str(users[-1].text) if users else ""


def _agent(kind: str, hang: Hang) -> Agent:
    """An agent whose ``kind`` (a guardrail, hook or validator) hangs for an input holding ``hang``."""
    def guard(ctx: Any) -> None:
        hang.wait_if(ctx.text if kind == "input guardrail" else _latest_input(ctx.history))

    def before(ctx: Any, abort_event: Any = None) -> None:
        hang.wait_if(_latest_input(ctx.history))

    def after(ctx: Any) -> None:
        hang.wait_if(_latest_input(ctx.history))

    script = [tool_call_reply("lookup", {"query": "q"}), text_reply("the answer")]
    llm = ScriptedLLM(script * 4)
    if kind == "input guardrail":
        return Agent(llm, tools=[lookup], input_guardrails=[guard])
    if kind == "output guardrail":
        return Agent(llm, tools=[lookup], output_guardrails=[guard])
    if kind == "tool guardrail":
        return Agent(llm, tools=[lookup], tool_guardrails=[guard])
    if kind == "before_tool_call":
        return Agent(llm, tools=[lookup], before_tool_call=before)
    if kind == "after_tool_call":
        return Agent(llm, tools=[lookup], after_tool_call=after)
    if kind == "prepare_context":
        def prepare(history: list[Any]) -> list[Any]:
            hang.wait_if(_latest_input(history))
            return history

        return Agent(llm, tools=[lookup], prepare_context=prepare)
    assert kind == "output validator"

    def validate(value: Any) -> Any:
        hang.wait_if(str(value))
        return value

    replies = [text_reply('{"text": "hang here"}'), text_reply('{"text": "fine"}')]
    return Agent(ScriptedLLM(replies), output_type={"type": "object", "properties": {"text": {"type": "string"}},
                                                    "required": ["text"]}, output_validators=[validate])


KINDS = ["input guardrail", "output guardrail", "tool guardrail", "before_tool_call", "after_tool_call",
         "output validator", "prepare_context"]


@pytest.mark.parametrize("started", [False, True], ids=["not started", "started"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_hung_guardrail_hook_or_validator_is_cut_by_the_asks_deadline(kind: str, started: bool) -> None:
    hang = Hang()
    agent = _agent(kind, hang)
    if started:
        agent.start()
    try:
        with pytest.raises(TimeoutError, match="aborted"):
            agent.ask("please hang", timeout_seconds=1.0)
        assert hang.entered.is_set()
        answer = agent.ask("go on", timeout_seconds=WAIT)  # not behind the hung function
        assert not hang.finished.is_set()  # it still hangs: the next input did not wait for it
        assert answer["status"] == "completed", answer
        statuses = [m for m in agent.openai_messages() if m["role"] == "assistant"]
        assert statuses, agent.openai_messages()
        strict_openai.validate(agent.openai_messages())
    finally:
        hang.release.set()
        if started:
            agent.shutdown(timeout_seconds=WAIT)


# ------------------------------------------------------------------ branching while a call awaits approval


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _waiting_agent(**kwargs: Any) -> tuple[Agent, ScriptedLLM]:
    llm = ScriptedLLM([tool_call_reply("delete_file", {"path": "/tmp/x"}), text_reply("done")])
    agent = Agent(llm, tools=[delete_file], **kwargs)
    assert agent.ask("delete /tmp/x", timeout_seconds=WAIT)["status"] == "awaiting_approval"
    return agent, llm


def _operations(agent: Agent) -> list[Callable[[], Any]]:
    return [lambda: agent.edit(0, "delete /tmp/y"), lambda: agent.rewind(to=0), agent.regenerate]


def test_edit_while_a_call_awaits_approval_refuses_and_leaves_the_approval_as_it_was() -> None:
    """The issue's case: ``edit`` during a pending approval was refused as a conflict *and* silently rejected
    the waiting call. Now every branching operation refuses at once and the call still waits; approving it
    runs the tool.
    """
    agent, llm = _waiting_agent()
    before = list(agent.history)
    for operation in _operations(agent):
        with pytest.raises(BranchError, match="decide"):
            operation()
    assert agent.history == before and len(llm.calls) == 1
    waiting = agent.pending_approvals()
    assert [c["name"] for c in waiting] == ["delete_file"]
    answer = agent.approve(waiting[0]["tool_call_id"], timeout_seconds=WAIT)
    assert answer["status"] == "completed"
    results = [m for m in agent.openai_messages() if m["role"] == "tool"]
    assert [r["content"] for r in results] == ["deleted /tmp/x"]


def test_edit_while_a_call_awaits_approval_with_a_store(sqlite_store_factory: Any) -> None:
    """The same with a store, through the agent and through ``branch_input`` (what a served app uses)."""
    from yiemagent.store.branching import branch_input

    store = sqlite_store_factory()
    agent, llm = _waiting_agent(store=store, conversation_id="c")
    version = store.load("c").version
    for operation in _operations(agent):
        with pytest.raises(BranchError, match="decide"):
            operation()
    for op, kwargs in (("edit", {"index": 0, "text": "other"}), ("rewind", {"index": 0}), ("regenerate", {})):
        with pytest.raises(BranchError, match="decide"):
            branch_input(store, "c", op, **kwargs)  # type: ignore[arg-type]
    assert store.load("c").version == version and len(llm.calls) == 1
    waiting = agent.pending_approvals()
    assert [c["name"] for c in waiting] == ["delete_file"]
    assert agent.approve(waiting[0]["tool_call_id"], timeout_seconds=WAIT)["status"] == "completed"
    assert [m["content"] for m in agent.openai_messages() if m["role"] == "tool"] == ["deleted /tmp/x"]


def test_ctrl_c_while_a_hook_hangs_aborts_the_run_and_is_raised_again() -> None:
    """Ctrl-C (``KeyboardInterrupt`` in the main thread) while ``ask`` waits for a hung hook: the run ends
    aborted, ``KeyboardInterrupt`` is raised again, the history stays valid and the next input is answered.
    """
    import _thread

    assert threading.current_thread() is threading.main_thread()
    hang = Hang()
    agent = _agent("before_tool_call", hang)

    def interrupt() -> None:
        if hang.entered.wait(WAIT):
            _thread.interrupt_main()

    threading.Thread(target=interrupt, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            agent.ask("please hang", timeout_seconds=WAIT)
        assert agent.ask("go on", timeout_seconds=WAIT)["status"] == "completed"
        assert not hang.finished.is_set()
        strict_openai.validate(agent.openai_messages())
    finally:
        hang.release.set()
