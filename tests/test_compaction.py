"""Issue 19 points 1-3: the agent measures each request, compacts before it passes the budget, and retries once
after a server's "too long" answer; the compaction is kept in the history, the saved state and the store.

The model is scripted (``Talker``): it answers questions, calls a tool every third turn, and writes summaries
when asked with the summariser's instructions. Every request it receives is checked with the strict OpenAI
validator (``tests/strict_openai.py``) and measured with the same estimate the agent uses.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.strict_openai import validate_request
from yiemagent import Agent, tool
from yiemagent.context.compaction import SUMMARY_INSTRUCTIONS, Compaction, is_compaction
from yiemagent.context.token_budget import estimate_tokens
from yiemagent.exceptions import AgentError, ConfigError, LLMError
from yiemagent.testing import EventRecorder, SimulatedCrash


@tool
def lookup(key: str) -> str:
    """Look a fact up."""
    return f"the value of {key} is " + "v" * 300


class Talker:
    """A scripted chat model that also summarises (see the module docstring)."""

    def __init__(self, overflow_over: int | None = None) -> None:
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        self.summaries = 0
        self.overflow_over = overflow_over
        self.turn = 0

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        validate_request(messages, tools)
        self.requests.append((messages, tools))
        if messages[0]["role"] == "system" and messages[0]["content"].startswith(SUMMARY_INSTRUCTIONS[:40]):
            self.summaries += 1
            facts = sorted(set(w for m in messages[1:] for w in str(m["content"]).split() if w.startswith("F")))
            return {"choices": [{"message": {"role": "assistant",
                                             "content": f"Summary {self.summaries}: facts {' '.join(facts[-40:])}"},
                                 "finish_reason": "stop"}]}
        size = estimate_tokens(messages, tools)
        if self.overflow_over is not None and size > self.overflow_over:
            raise LLMError("the model server answered HTTP 400: " + json.dumps({"error": {
                "message": f"This model's maximum context length is {self.overflow_over} tokens. However, your "
                           f"messages resulted in {size} tokens.", "code": "context_length_exceeded"}}),
                status_code=400)
        self.turn += 1
        last = messages[-1]
        if last["role"] == "user" and self.turn % 3 == 0 and tools:
            return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{self.turn}", "type": "function",
                 "function": {"name": "lookup", "arguments": json.dumps({"key": f"k{self.turn}"})}}]},
                "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": size, "completion_tokens": 20}}
        return {"choices": [{"message": {"role": "assistant", "content": f"Noted, reply {self.turn}. " + "w " * 40},
                             "finish_reason": "stop"}], "usage": {"prompt_tokens": size, "completion_tokens": 60}}


def chat_requests(model: Talker) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    return [(m, t) for m, t in model.requests if not m[0]["content"].startswith(SUMMARY_INSTRUCTIONS[:40])]


def test_500_turns_with_a_4k_window_run_to_the_end_every_request_under_the_budget_and_valid():
    model = Talker()
    recorder = EventRecorder()
    agent = Agent(model, tools=[lookup], system_prompt="You keep notes.", compaction=True, context_window=4096,
                  event_sink=recorder)
    budget = agent.config.compaction.budget
    for turn in range(500):
        answer = agent.ask(f"Remember fact F{turn}: item {turn} costs {turn * 3} euros. " + "detail " * 30)
        assert answer["status"] == "completed", (turn, answer)
        assert answer["request_tokens"] <= budget
    sizes = [estimate_tokens(m, t) for m, t in chat_requests(model)]
    assert max(sizes) <= budget, max(sizes)
    compactions = [e for e in recorder.events if e.type == "compaction"]
    assert len(compactions) >= 10 and all(e.reason == "budget" for e in compactions)
    assert all(e.tokens_after < e.tokens_before for e in compactions)
    # the full history is kept: every input is still there, the summaries beside them
    users = [m for m in agent.history if m.role == "user" and not is_compaction(m)]
    assert len(users) == 500
    assert sum(is_compaction(m) for m in agent.history) == len(compactions)
    # each later summary updates the earlier one (iterative): the summariser saw the previous summary
    summariser_prompts = [m for m, _ in model.requests if m[0]["content"].startswith(SUMMARY_INSTRUCTIONS[:40])]
    assert any("The existing summary" in p[1]["content"] for p in summariser_prompts[1:])


def test_a_too_long_answer_from_the_server_compacts_once_and_asks_again():
    model = Talker(overflow_over=2500)  # the server's real limit is below what the estimate allows
    recorder = EventRecorder()
    agent = Agent(model, tools=[lookup], compaction=Compaction(context_window=8192, keep_recent_tokens=600),
                  event_sink=recorder)
    for turn in range(40):
        answer = agent.ask(f"fact F{turn} " + "detail " * 60)
        assert answer["status"] == "completed", (turn, answer)
    overflow = [e for e in recorder.events if e.type == "compaction" and e.reason == "overflow"]
    assert overflow, "the server's refusal never led to a compaction"
    assert not [e for e in recorder.events if e.type == "error"]


def test_without_compaction_the_same_refusal_is_an_error_answer_and_the_next_input_still_works():
    model = Talker(overflow_over=1500)
    agent = Agent(model, tools=[lookup])
    statuses = [agent.ask(f"fact F{turn} " + "detail " * 60)["status"] for turn in range(12)]
    assert "error" in statuses
    assert statuses[-1] == "error"  # nothing shrinks the history: each input fails, the agent lives on


def test_issue_27_a_failing_summariser_is_an_error_event_and_the_window_is_still_kept():
    """Issue 27: when the summariser failed, compaction was skipped silently and requests grew to ~462,000
    tokens for a 16,000-token window, status ``completed``. The failure is an ``error`` event and a WARNING,
    and the oldest messages are left out without a summary (a note says so): every request fits.
    """
    sizes: list[int] = []

    def model(messages, tools):
        if messages[0]["content"].startswith(SUMMARY_INSTRUCTIONS[:40]):
            raise RuntimeError("summariser down")
        sizes.append(estimate_tokens(messages, tools))
        return {"choices": [{"message": {"role": "assistant", "content": "ok " * 50}, "finish_reason": "stop"}]}

    recorder = EventRecorder()
    agent = Agent(model, compaction=True, context_window=2048, event_sink=recorder)
    budget = agent.config.compaction.budget
    answers = [agent.ask("hello " * 80) for _ in range(16)]
    assert all(a["status"] == "completed" for a in answers)
    errors = [e for e in recorder.events if e.type == "error" and e.where == "compaction"]
    assert errors and "summariser down" in errors[0].message
    assert max(sizes) <= budget, (max(sizes), budget)  # the window held although no summary was written
    notes = [m for m in agent.history if is_compaction(m)]
    assert notes and "left out without a summary" in notes[-1].text
    assert len([m for m in agent.history if m.role == "user" and not is_compaction(m)]) == 16  # history whole


def test_a_compaction_survives_the_saved_state_and_the_next_request_starts_from_the_summary():
    model = Talker()
    agent = Agent(model, compaction=True, context_window=2048)
    for turn in range(30):
        agent.ask(f"fact F{turn} " + "detail " * 40)
    assert any(is_compaction(m) for m in agent.history)
    state = agent.state_to_json()
    again = Agent.from_state(state, model, compaction=True, context_window=2048)
    assert [type(m).__name__ for m in again.history] == [type(m).__name__ for m in agent.history]
    again.ask("and now?")
    first_sent = chat_requests(model)[-1][0][0]
    assert first_sent["role"] == "user" and first_sent["content"].startswith("The conversation so far, summarised")
    assert again.openai_messages()[0]["content"].startswith("The conversation so far, summarised")


def test_a_compaction_is_kept_in_the_store_and_used_by_the_next_agent(store_factory):
    model = Talker()
    with Agent(model, compaction=True, context_window=2048, store=store_factory(), conversation_id="long") as first:
        for turn in range(30):
            assert first.ask(f"fact F{turn} " + "detail " * 40, timeout_seconds=60)["status"] == "completed"
        kept = sum(is_compaction(m) for m in first.history)
    assert kept >= 1
    second = Agent(model, compaction=True, context_window=2048, store=store_factory(), conversation_id="long")
    assert sum(is_compaction(m) for m in second.history) == kept
    summaries_before = model.summaries
    second.ask("what was F3?")
    sent = chat_requests(model)[-1][0]
    assert sent[0]["content"].startswith("The conversation so far, summarised")
    assert model.summaries in (summaries_before, summaries_before + 1)  # at most one new compaction
    second.shutdown()


def test_compact_by_hand_and_its_refusals():
    model = Talker()
    recorder = EventRecorder()
    agent = Agent(model, context_window=8192, event_sink=recorder)  # measured, never compacted by itself
    for turn in range(6):
        answer = agent.ask(f"fact F{turn} " + "detail " * 40)
        assert "request_tokens" in answer and answer["request_tokens"] > 0
    assert not any(is_compaction(m) for m in agent.history)
    done = agent.compact(focus="the facts F")
    assert done is not None and done["tokens_after"] < done["tokens_before"]
    assert "Above all, keep: the facts F" in model.requests[-1][0][0]["content"]
    assert [e.reason for e in recorder.events if e.type == "compaction"] == ["manual"]
    with pytest.raises(AgentError, match="context_window"):
        Agent(model).compact()
    short = Agent(Talker(), context_window=8192)
    assert short.compact() is None  # nothing to lose yet


@pytest.mark.parametrize("kwargs", [{"compaction": True}, {"reserve_tokens": 100}, {"compaction": "yes"},
                                    {"compaction": True, "context_window": 100}])
def test_compaction_arguments_are_checked(kwargs):
    with pytest.raises(ConfigError):
        Agent(Talker(), **kwargs)


class Crash(SimulatedCrash):
    """Stands for the process dying (see ``tests/store/test_durable_typed.py``)."""


def test_a_compaction_journaled_before_a_crash_is_put_back_without_asking_the_summariser_again(store_factory):
    model = Talker()
    store = store_factory()
    with Agent(model, compaction=True, context_window=2048, store=store, conversation_id="crash") as agent:
        turn = 0
        while not any(is_compaction(m) for m in agent.history):  # grow the conversation up to its budget
            agent.ask(f"fact F{turn} " + "detail " * 40, timeout_seconds=60)
            turn += 1
    summaries = model.summaries

    def crash_at_the_end(event):
        if event.type == "compaction":
            crash_at_the_end.compacted = True
        if event.type == "agent_end" and getattr(crash_at_the_end, "compacted", False):
            raise Crash()  # the compaction and the reply are journaled; nothing is committed

    victim = Agent(model, compaction=True, context_window=2048, store=store_factory(), conversation_id="crash",
                   event_sink=crash_at_the_end)
    with pytest.raises(Crash):
        for more in range(turn, turn + 40):
            victim.ask(f"fact F{more} " + "detail " * 40)
    assert model.summaries == summaries + 1
    chat_before = len(chat_requests(model))
    later = Agent(model, compaction=True, context_window=2048, store=store_factory(), conversation_id="crash")
    answers = later.drain()
    assert [a["status"] for a in answers] == ["completed"]
    assert model.summaries == summaries + 1 and len(chat_requests(model)) == chat_before  # replayed, not asked
    markers = [m for m in later.history if is_compaction(m)]
    assert markers[-1].compaction["reason"] == "budget" and markers[-1].compaction["tokens_after"] > 0
    later.shutdown()
    store.close()
