"""Branching in memory: ``Agent.fork``/``rewind``/``edit``/``regenerate`` (issue 29, point 1).

Peers' users broke these in known ways; the tests are named after the reports:

* langgraph #7361 and langchain-academy #40: going back to a checkpoint re-executed the steps after
  it, tool calls included; langgraph's docs (PR #3017) now say every step after the checkpoint runs
  again. Here a cut that would leave tool calls without results is refused, and an edit's rerun
  starts from a user message, so no recorded call is replayed; a counter outside the agent proves it.
* ag-ui #2154 (and #706, "Message ID not found in history"): rewind/edit is inferred by diffing the
  client's messages against the server's, with a class of subtle bugs. Here the operation is
  declared (an index), and one planned on a history that changed since is refused, not guessed.
* deepagents #2046: "branch from a specific message": a fork copies the history up to that point
  and the source goes on unchanged.

The store side (SQLite, PostgreSQL, two agents on one conversation) is tests/store/test_branching.py.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from yiemagent import Agent, BranchConflictError, BranchError, ConfigError, tool
from yiemagent.messages import AssistantMessage, ToolResultMessage, UserMessage
from yiemagent.testing import text_reply


class Model:
    """``pay N`` asks for ``charge(N)`` (call id ``call_1``), anything else is answered ``re: <text>``."""

    def __init__(self, delay: float = 0.0) -> None:
        self.requests: list[list[dict[str, Any]]] = []
        self.delay = delay

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        self.requests.append(messages)
        time.sleep(self.delay)
        last = messages[-1]
        if last["role"] == "user" and str(last["content"]).startswith("pay "):
            amount = int(str(last["content"]).split()[1])
            return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
                    "name": "charge", "arguments": json.dumps({"amount": amount})}}]}}]}
        if last["role"] == "tool":
            return text_reply(f"done: {last['content']}")
        users = [m for m in messages if m["role"] == "user"]
        return text_reply(f"re: {users[-1]['content']} (seen {len(messages)})")


@pytest.fixture
def charges() -> list[int]:
    return []


@pytest.fixture
def agent(charges: list[int]) -> Agent:
    @tool
    def charge(amount: int) -> str:
        """Charge the card (not safe to repeat)."""
        charges.append(amount)
        return f"charged {amount}"

    return Agent(Model(), tools=[charge])


def texts(agent: Agent) -> list[str]:
    return [getattr(m, "text", "") for m in agent.history]


def test_edit_replaces_the_user_message_and_reruns_the_model_from_there(agent: Agent) -> None:
    agent.ask("one")
    agent.ask("two")
    agent.ask("three")
    model = agent.config.llm_call
    assert isinstance(model, Model)
    before = len(model.requests)
    answer = agent.edit(2, "TWO")
    assert answer["status"] == "completed" and answer["branch"] == {"op": "edit", "keep": 2, "base": None,
                                                                     "resume": False}
    assert answer["content"] == "re: TWO (seen 3)"
    assert texts(agent) == ["one", "re: one (seen 1)", "TWO", "re: TWO (seen 3)"]
    assert len(model.requests) == before + 1  # one fresh model call
    sent = [m["content"] for m in model.requests[-1]]
    assert "two" not in sent and "three" not in sent  # the cut branch is not sent


def test_langgraph_7361_an_edit_after_a_paid_turn_does_not_replay_the_recorded_charge(agent: Agent,
                                                                                        charges: list[int]) -> None:
    agent.ask("hello")
    assert agent.ask("pay 5")["content"] == "done: charged 5"
    assert charges == [5]
    answer = agent.edit(2, "no, just say hi")
    assert answer["content"].startswith("re: no, just say hi")
    assert charges == [5]  # the old branch's call ran once, and nothing replayed it
    assert not any(isinstance(m, ToolResultMessage) for m in agent.history)


def test_regenerate_asks_again_and_keep_tool_results_never_runs_the_turns_tools_again(agent: Agent,
                                                                                      charges: list[int]) -> None:
    agent.ask("pay 7")
    assert charges == [7]
    kept = agent.regenerate(keep_tool_results=True)  # the user asks: the card is not charged again
    assert kept["branch"]["resume"] is True and kept["content"] == "done: charged 7"
    assert charges == [7]
    assert [type(m) for m in agent.history] == [UserMessage, AssistantMessage, ToolResultMessage, AssistantMessage]
    fresh = agent.regenerate()  # the whole turn cut: the model decides again (it asks for a new charge)
    assert fresh["branch"] == {"op": "regenerate", "keep": 0, "base": None, "resume": False}
    assert charges == [7, 7]
    assert len(agent.history) == 4


def test_langchain_academy_40_rewind_or_fork_inside_a_tool_batch_is_refused_and_nothing_runs(
        agent: Agent, charges: list[int]) -> None:
    agent.ask("pay 3")
    history = list(agent.history)
    for bad in (1, -3):  # the assistant message asking for the call
        with pytest.raises(BranchError, match="asks for tool calls") as caught:
            agent.rewind(to=bad)
        assert caught.value.index == bad
        with pytest.raises(BranchError):
            agent.fork(at=bad)
    assert agent.history == history and charges == [3]
    with pytest.raises(BranchError, match="no message 9"):
        agent.rewind(to=9)
    with pytest.raises(BranchError, match="only a user message"):
        agent.edit(1, "x")
    with pytest.raises(BranchError, match="index"):
        agent.edit("0", "x")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="no store"):
        agent.rewind(to=0, expected_version=1)


def test_rewind_cuts_without_a_model_call_and_the_next_input_continues_from_there(agent: Agent) -> None:
    agent.ask("one")
    agent.ask("two")
    model = agent.config.llm_call
    assert isinstance(model, Model)
    calls = len(model.requests)
    answer = agent.rewind(to=1)
    assert (answer["content"], answer["status"], answer["branch"]["keep"]) == ("", "completed", 2)
    assert len(model.requests) == calls and texts(agent) == ["one", "re: one (seen 1)"]
    assert agent.ask("three")["content"] == "re: three (seen 3)"


def test_deepagents_2046_fork_branches_from_a_message_and_the_source_goes_on_unchanged(agent: Agent) -> None:
    agent.ask("one")
    agent.ask("two")
    forked = agent.fork(at=1)
    assert forked is not agent and not forked.is_running
    assert texts(forked) == ["one", "re: one (seen 1)"]
    assert forked.history[0] is agent.history[0]  # shared message objects: copy-on-write
    assert forked.ask("other")["content"] == "re: other (seen 3)"
    assert texts(agent) == ["one", "re: one (seen 1)", "two", "re: two (seen 3)"]
    assert [t.name for t in forked.tools] == ["charge"]
    with pytest.raises(ConfigError, match="store"):
        agent.fork(at=1, conversation_id="x")


def test_ag_ui_2154_an_edit_planned_on_a_history_that_changed_is_refused_not_guessed(charges: list[int]) -> None:
    """Started agent, a run in progress: an edit planned meanwhile sees a history that is about to grow."""
    slow = Model(delay=0.5)
    agent = Agent(slow).start()
    try:
        agent.ask("one", timeout_seconds=30)
        future = agent.submit("two")
        deadline = time.monotonic() + 10
        while len(agent.history) < 3 and time.monotonic() < deadline:  # "two" is in, its answer is not
            time.sleep(0.01)
        with pytest.raises(BranchConflictError, match="changed since this edit was planned") as caught:
            agent.edit(0, "ONE", timeout_seconds=30)
        assert caught.value.reason == "version"
        assert future.result(timeout=30)["content"] == "re: two (seen 3)"
        assert texts(agent)[:3] == ["one", "re: one (seen 1)", "two"]  # nothing of the edit applied
        answer = agent.edit(0, "ONE", timeout_seconds=30)  # planned again on what is there now
        assert answer["content"] == "re: ONE (seen 1)" and texts(agent) == ["ONE", "re: ONE (seen 1)"]
    finally:
        agent.shutdown()


def test_operations_from_several_threads_are_served_in_order_one_at_a_time() -> None:
    agent = Agent(Model(delay=0.05)).start()
    try:
        agent.ask("seed", timeout_seconds=30)
        results: list[Any] = []

        def regenerate() -> None:
            try:
                results.append(agent.regenerate(timeout_seconds=30)["status"])
            except BranchConflictError:
                results.append("conflict")

        threads = [threading.Thread(target=regenerate) for _ in range(4)]
        for each in threads:
            each.start()
        for each in threads:
            each.join(timeout=60)
        assert sorted(results)[0] == "completed" and len(results) == 4
        assert texts(agent) == ["seed", "re: seed (seen 1)"]  # never two answers, never a half-cut history
    finally:
        agent.shutdown()


def test_rewind_and_regenerate_while_a_run_awaits_approval_refuse_and_change_nothing():
    """A fresh user's trial: with a run at ``awaiting_approval``, ``rewind`` and ``regenerate`` rejected the pending
    call, asked the model and then raised a ``BranchConflictError`` about a concurrent writer nobody was. They now
    refuse at once with a ``BranchError`` that says to decide first, and the history and pending call stay.
    """
    from yiemagent import Agent, tool
    from yiemagent.exceptions import BranchError
    from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

    @tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return "deleted"

    llm = ScriptedLLM([tool_call_reply("delete_file", {"path": "/tmp/x"}), text_reply("never")])
    agent = Agent(llm, tools=[delete_file])
    assert agent.ask("delete /tmp/x")["status"] == "awaiting_approval"
    before = list(agent.history)
    for operation in (lambda: agent.rewind(to=0), agent.regenerate):
        with pytest.raises(BranchError, match="decide"):
            operation()
    assert agent.history == before and len(llm.calls) == 1
    assert [c["name"] for c in agent.pending_approvals()] == ["delete_file"]
