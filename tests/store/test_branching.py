"""Branching a conversation kept in a store: SQLite files and a real PostgreSQL (issue 29, points 1-2).

Each operation goes through the inbox with the version it was planned on; the commit writes the cut
history and the answer at once. Two agents on one conversation (each with its own store object, as
two processes have) edit at once: one wins, the other gets ``BranchConflictError``, and its input
is kept in the inbox, answered ``status: "conflict"``. A crash during an edit's rerun is finished
from the journal without running the new branch's tool twice (langgraph #7361: time travel must not
re-execute recorded tool calls). The gunicorn + Flask side is tests/workers/test_gunicorn_branching.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from yiemagent import Agent, BranchConflictError, BranchError, tool
from yiemagent.loop.branching import BRANCH_KEY
from yiemagent.store.branching import branch_input, fork_conversation
from yiemagent.testing import SimulatedCrash, text_reply

Factory = Callable[[], Any]


class Crash(SimulatedCrash):
    """Stands for the process dying."""


def model(delay: float = 0.0) -> Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]:
    """Stateless: ``pay N`` asks for ``charge(N)`` (id ``call_1``); else ``re: <last user text> (seen n)``."""

    def llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        time.sleep(delay)
        last = messages[-1]
        if last["role"] == "user" and str(last["content"]).startswith("pay "):
            return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
                    "name": "charge", "arguments": json.dumps({"amount": int(str(last["content"]).split()[1])})}}]}}]}
        if last["role"] == "tool":
            return text_reply(f"done: {last['content']}")
        users = [m for m in messages if m["role"] == "user"]
        return text_reply(f"re: {users[-1]['content']} (seen {len(messages)})")

    return llm


class Card:
    """The card the ``charge`` tool charges: what a payment server would count."""

    def __init__(self) -> None:
        self.charged: list[int] = []
        self.crash = False

    def tool(self) -> Any:
        @tool
        def charge(amount: int) -> str:
            """Charge the card (not safe to repeat)."""
            self.charged.append(amount)
            if self.crash:
                self.crash = False
                raise Crash()
            return f"charged {amount}"

        return charge


def texts(history: list[Any]) -> list[str]:
    return [getattr(m, "text", "") for m in history]


def test_edit_regenerate_rewind_commit_through_the_store_and_a_new_agent_sees_them(store_factory: Factory) -> None:
    store = store_factory()
    card = Card()
    agent = Agent(model(), tools=[card.tool()], store=store, conversation_id="c")
    agent.ask("hello")
    agent.ask("pay 5")
    assert card.charged == [5] and store.load("c").version == 2
    answer = agent.edit(2, "just say hi", expected_version=2)
    assert answer["branch"] == {"op": "edit", "keep": 2, "base": 2, "resume": False}
    assert answer["content"] == "re: just say hi (seen 3)" and card.charged == [5]
    other = Agent(model(), store=store_factory(), conversation_id="c")
    assert texts(other.history) == ["hello", "re: hello (seen 1)", "just say hi", "re: just say hi (seen 3)"]
    assert store.load("c").version == 3
    again = other.regenerate()
    assert again["branch"]["base"] == 3 and again["content"] == "re: just say hi (seen 3)"
    assert agent.rewind(to=1)["branch"]["keep"] == 2
    assert texts(Agent(model(), store=store_factory(), conversation_id="c").history) == ["hello", "re: hello (seen 1)"]
    inbox = [store.get_input("c", seq) for seq in range(1, 6)]
    assert [e.message.get(BRANCH_KEY, {}).get("op") for e in inbox if e is not None] == [
        None, None, "edit", "regenerate", "rewind"]  # each operation is recorded in the inbox, in order
    assert all(e is not None and e.served for e in inbox)


def test_two_agents_edit_one_conversation_at_once_one_wins_the_other_gets_a_conflict(store_factory: Factory) -> None:
    """Both plan on version 2 and enqueue before either commits (a slow model): served in inbox order."""
    first = Agent(model(delay=0.3), store=store_factory(), conversation_id="c")
    first.ask("one")
    first.ask("two")
    second = Agent(model(delay=0.3), store=store_factory(), conversation_id="c")
    outcomes: dict[str, Any] = {}
    barrier = threading.Barrier(2)

    def edit(name: str, agent: Agent) -> None:
        barrier.wait()
        try:
            outcomes[name] = agent.edit(2, f"TWO by {name}", expected_version=2, timeout_seconds=60)
        except BranchConflictError as exc:
            outcomes[name] = exc

    threads = [threading.Thread(target=edit, args=(n, a)) for n, a in (("first", first), ("second", second))]
    for each in threads:
        each.start()
    for each in threads:
        each.join(timeout=120)
    won = [n for n, o in outcomes.items() if isinstance(o, dict)]
    lost = [o for o in outcomes.values() if isinstance(o, BranchConflictError)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    assert lost[0].expected_version == 2 and "version 3, not 2" in str(lost[0])
    store = store_factory()
    history = texts(Agent(model(), store=store, conversation_id="c").history)
    assert history == ["one", "re: one (seen 1)", f"TWO by {won[0]}", f"re: TWO by {won[0]} (seen 3)"]
    assert store.load("c").version == 4  # the winner's commit, then the loser's answer: nothing half-written
    loser = [store.get_input("c", seq) for seq in (3, 4)]
    refused = [e for e in loser if e is not None and e.answer is not None and e.answer["status"] == "conflict"]
    assert len(refused) == 1 and refused[0].message["content"].startswith("TWO by")  # nothing lost


def test_langgraph_7361_a_crash_during_an_edits_rerun_finishes_from_the_journal_without_a_second_charge(
        store_factory: Factory) -> None:
    card = Card()
    agent = Agent(model(), tools=[card.tool()], store=store_factory(), conversation_id="c")
    agent.ask("hello")
    card.crash = True
    with pytest.raises(Crash):
        agent.edit(0, "pay 9")
    assert card.charged == [9]
    store = store_factory()
    assert store.load("c").version == 1  # not committed: the old history stands
    pending = store.pending("c")
    assert len(pending) == 1 and pending[0].message[BRANCH_KEY]["op"] == "edit"
    survivor = Agent(model(), tools=[card.tool()], store=store, conversation_id="c")
    answers = survivor.drain()
    assert len(answers) == 1 and answers[0]["branch"]["op"] == "edit"
    assert card.charged == [9]  # the charge that had started is not run again
    assert "interrupted" in answers[0]["content"] or "unknown" in answers[0]["content"]
    assert texts(survivor.history)[0] == "pay 9" and store.load("c").version == 2


def test_deepagents_2046_fork_copies_the_committed_prefix_into_a_new_conversation(store_factory: Factory) -> None:
    store = store_factory()
    agent = Agent(model(), store=store, conversation_id="src")
    agent.ask("one")
    agent.ask("two")
    forked = agent.fork(at=1, conversation_id="src-b", expected_version=2)
    assert forked.conversation.conversation_id == "src-b" and store.load("src-b").version == 1
    assert texts(forked.history) == ["one", "re: one (seen 1)"]
    assert forked.ask("other")["content"] == "re: other (seen 3)"
    assert store.load("src").version == 2 and len(Agent(model(), store=store, conversation_id="src").history) == 4
    with pytest.raises(BranchConflictError) as exists:
        agent.fork(at=1, conversation_id="src-b")
    assert exists.value.reason == "exists"
    assert texts(Agent(model(), store=store, conversation_id="src-b").history)[-1] == "re: other (seen 3)"
    with pytest.raises(BranchConflictError):
        fork_conversation(store, "src", 1, expected_version=1)
    new_id, version = fork_conversation(store, "src", -1)
    assert new_id.startswith("src~") and version == 2 and store.load(new_id).version == 1


def test_branch_input_plans_on_the_committed_state_and_refuses_bad_points(store_factory: Factory) -> None:
    store = store_factory()
    card = Card()
    agent = Agent(model(), tools=[card.tool()], store=store, conversation_id="c")
    agent.ask("pay 1")
    with pytest.raises(BranchError, match="asks for tool calls"):
        branch_input(store, "c", "rewind", index=1)
    with pytest.raises(BranchError, match="only a user message"):
        branch_input(store, "c", "edit", index=2, text="x")
    with pytest.raises(BranchConflictError):
        branch_input(store, "c", "regenerate", expected_version=7)
    message = branch_input(store, "c", "regenerate", keep_tool_results=True)
    assert message["content"] == "pay 1" and message[BRANCH_KEY] == {"op": "regenerate", "keep": 3, "base": 1,
                                                                      "resume": True}
    seq = store.enqueue("c", message)
    answers = Agent(model(), tools=[card.tool()], store=store_factory(), conversation_id="c").drain()
    assert [a["seq"] for a in answers] == [[seq]] and answers[0]["content"] == "done: charged 1"
    assert card.charged == [1]
