"""The conversation's contract (``yiemagent.loop.conversation``), driven without an ``Agent`` (issue 14 point 1).

A host of a dozen lines is enough to serve inputs through ``Conversation`` and
through ``DurableConversation`` (the same contract over a ``ConversationStore``):
that is what makes the contract the only way ``Agent`` reaches a conversation.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from yiemagent import SQLiteStore, UserMessage, tool
from yiemagent.exceptions import FormatError
from yiemagent.loop import LoopConfig
from yiemagent.loop.conversation import Conversation, Input, RunScope, parse_state
from yiemagent.store.durable import DurableConversation
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply


class Host:
    """A ``RunHost`` that records what the conversation hands it."""

    def __init__(self, steering: list[Input] | None = None) -> None:
        self.abort_event = threading.Event()
        self.stop_mode = None
        self.events: list[Any] = []
        self.delivered: list[tuple[dict[str, Any], list[str], bool]] = []
        self.runs: list[str] = []
        self.steering = list(steering or [])

    def abort(self) -> None:
        self.abort_event.set()

    @contextlib.contextmanager
    def running(self, run_id: str, entry: Input, deliver: bool) -> Iterator[RunScope]:
        self.abort_event.clear()
        self.runs.append(entry.id)
        yield RunScope(run_id, entry)

    def emit(self, event: Any) -> None:
        self.events.append(event)

    def take_steering(self) -> list[Input]:
        taken, self.steering = self.steering, []
        return taken

    def deliver(self, answer: dict[str, Any], entries: list[Input], to_output: bool) -> None:
        self.delivered.append((answer, [e.id for e in entries], to_output))


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _config(llm: ScriptedLLM) -> LoopConfig:
    from yiemagent.tools import ToolRegistry

    return LoopConfig(llm_call=llm, tools=ToolRegistry([add]), system_prompt="Be brief.")


def test_a_conversation_serves_an_input_through_its_host():
    """serve(): one run through the host's ``running``; the answer delivered to the input and returned."""
    llm = ScriptedLLM([tool_call_reply("add", {"a": 2, "b": 3}), text_reply("5")])
    conversation, host = Conversation(_config(llm)), Host()
    answer = conversation.serve(Input(UserMessage("2 + 3?"), "in-1"), host, deliver=True)
    assert answer["content"] == "5" and answer["status"] == "completed" and answer["input_ids"] == ["in-1"]
    assert host.runs == ["in-1"]
    assert host.delivered == [(answer, ["in-1"], True)]
    assert [m.role for m in conversation.history] == ["user", "assistant", "tool", "assistant"]
    assert {e.type for e in host.events} >= {"agent_start", "tool_execution_end", "agent_end"}
    assert llm.calls[0]["messages"][0] == {"role": "system", "content": "Be brief."}


def test_inputs_steered_in_are_answered_by_the_same_run():
    """With ``steering``, what the host hands over after a tool batch joins the run and gets its answer."""
    llm = ScriptedLLM([tool_call_reply("add", {"a": 1, "b": 1}), text_reply("2, and hello")])
    late = Input(UserMessage("also say hello"), "in-2")
    conversation, host = Conversation(_config(llm), steering=True), Host(steering=[late])
    answer = conversation.serve(Input(UserMessage("1 + 1?"), "in-1"), host, deliver=False)
    assert answer["input_ids"] == ["in-1", "in-2"]
    assert host.delivered == [(answer, ["in-1", "in-2"], False)]
    assert [m.text for m in conversation.history if m.role == "user"] == ["1 + 1?", "also say hello"]


def test_state_round_trips_between_conversations():
    """state_to_json() then load_state() gives another conversation the same history and usage."""
    reply = dict(text_reply("hi"), usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4})
    first = Conversation(_config(ScriptedLLM([reply])))
    first.serve(Input(UserMessage("hello"), "in-1"), Host(), deliver=False)
    second = Conversation(_config(ScriptedLLM([])))
    second.load_state(first.state_to_json())
    assert second.history == first.history and second.usage == {"prompt_tokens": 3, "completion_tokens": 1,
                                                                 "total_tokens": 4}
    assert parse_state(first.state_to_json())[2] == "Be brief."
    with pytest.raises(FormatError):
        second.load_state('{"history": "not a list"}')


def test_a_durable_conversation_keeps_the_same_contract_over_a_store(tmp_path):
    """DurableConversation: the input goes through the inbox, the run is committed, and a second
    conversation object on the same store (another process, in life) continues from the committed state.
    """
    store = SQLiteStore(tmp_path / "c.db")
    llm = ScriptedLLM([tool_call_reply("add", {"a": 2, "b": 3}), text_reply("5")])
    first, host = DurableConversation(_config(llm), store, "c-1"), Host()
    assert first.durable and not Conversation(_config(llm)).durable
    answer = first.serve(Input(UserMessage("2 + 3?"), "in-1"), host, deliver=False)
    assert answer["content"] == "5" and answer["seq"] == [1]
    assert store.get_input("c-1", 1).answer["content"] == "5"
    second = DurableConversation(_config(ScriptedLLM([text_reply("8")])), store, "c-1")
    assert second.history == first.history and second.version == first.version
    assert second.serve(Input(UserMessage("and 3 + 5?"), "in-2"), Host(), deliver=False)["content"] == "8"
    assert len(DurableConversation(_config(ScriptedLLM([])), store, "c-1").history) == 6
    assert first.drain(host) == [] and Conversation(_config(llm)).recover(host) == []


def test_steering_conversations_sharing_one_config_each_poll_their_own_host():
    """Found by review: steering used to rewrite the given ``LoopConfig``, so a second conversation sharing it
    took over the first one's polls. Each keeps its own copy now; the given config is left as it was.
    """
    config = _config(ScriptedLLM([tool_call_reply("add", {"a": 1, "b": 1}), text_reply("done")], repeat_last=True))
    first, second = Conversation(config, steering=True), Conversation(config, steering=True)
    assert config.poll_steering is None and first.config.tools is config.tools
    host = Host(steering=[Input(UserMessage("late"), "in-2")])
    answer = first.serve(Input(UserMessage("1 + 1?"), "in-1"), host, deliver=False)
    assert answer["input_ids"] == ["in-1", "in-2"] and second.history == []


def test_an_agent_config_can_be_replaced_between_runs():
    """``agent.config = ...`` works as before the conversation object (the review found it read-only)."""
    import dataclasses

    from yiemagent import Agent

    agent = Agent(ScriptedLLM([tool_call_reply("add", {"a": 1, "b": 1}), text_reply("never")]), tools=[add])
    agent.config = dataclasses.replace(agent.config, max_turns=1)
    answer = agent.ask("1 + 1?")
    assert answer["status"] == "max_turns" and agent.conversation.config.max_turns == 1
    agent.shutdown()


def test_mcp_required_set_after_construction_takes_effect():
    """``agent.mcp_required`` is the conversation's flag, not a copy: setting it later changes the next run."""
    from yiemagent import Agent

    llm = ScriptedLLM([text_reply("answered without the server")], repeat_last=True)
    agent = Agent(llm, mcp_servers=["http://127.0.0.1:9/mcp"])  # port 9: refused at once
    assert agent.ask("hi")["status"] == "completed"
    agent.mcp_required = True
    answer = agent.ask("hi again")
    assert answer["status"] == "error" and "mcp_required" in answer["error"] and len(llm.calls) == 1
    agent.shutdown()
