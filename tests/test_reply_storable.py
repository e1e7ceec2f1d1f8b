"""One reply no longer bricks a stored conversation (issue 15, point 2): normalised at the entry.

Before: a reply whose ``finish_reason`` is not a string (7, an Anthropic-style integer
``stop_reason``, a Responses-style numeric ``status``) was answered ``completed`` and committed,
and every new agent on that conversation (another worker, a restart, ``chat /load``) failed in
its constructor with ``FormatError``; NaN in ``usage`` made the store's commit raise. After: the
reply is normalised when it is read (``finish_reason`` as text, values as strict JSON), so what
was accepted is stored and loaded again, on SQLite and a real PostgreSQL.
"""

import json
import math

import pytest

from yiemagent import Agent, parse_response
from yiemagent.messages import message_to_dict

ODD_REPLIES = {
    "chat_finish_reason_7": {"choices": [{"index": 0, "finish_reason": 7,
                                          "message": {"role": "assistant", "content": "seven"}}]},
    "anthropic_integer_stop_reason": {"role": "assistant", "content": [{"type": "text", "text": "ok"}],
                                      "stop_reason": 2, "usage": {"input_tokens": 3, "output_tokens": math.nan}},
    "responses_numeric_status": {"object": "response", "status": 200, "output": [
        {"type": "message", "content": [{"type": "output_text", "text": "fine"}]}]},
    "dict_finish_reason_and_odd_usage": {"choices": [{"index": 0, "finish_reason": {"type": "stop"},
                                                      "message": {"role": "assistant", "content": "x\ud800y",
                                                                  "score": math.inf}}],
                                         "usage": {1: 2, "prompt_tokens": 1e308, "cost": b"\x00"}},
}


def scripted(*replies):
    queue = list(replies)

    def llm_call(messages, tools):
        return queue.pop(0) if queue else {"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "done"}}]}
    return llm_call


@pytest.mark.parametrize("name", sorted(ODD_REPLIES))
def test_issue_15_an_odd_reply_is_normalised_at_the_entry(name):
    message = parse_response(ODD_REPLIES[name])
    assert message.finish_reason is None or isinstance(message.finish_reason, str)
    saved = message_to_dict(message)
    json.dumps(saved, allow_nan=False).encode("utf-8")  # strict JSON, no lone surrogate


def test_issue_15_finish_reason_7_then_a_new_agent_on_the_state():
    """The issue's case without a store: ``from_state`` raised ``FormatError`` before."""
    agent = Agent(scripted(ODD_REPLIES["chat_finish_reason_7"]))
    answer = agent.ask("hi", timeout_seconds=10)
    assert answer["status"] == "completed" and answer["finish_reason"] == "7"
    restored = Agent.from_state(agent.state_to_json(), agent.config.llm_call)
    assert [message_to_dict(m) for m in restored.history] == [message_to_dict(m) for m in agent.history]


def test_issue_15_odd_replies_are_committed_and_load_in_a_new_agent(store_factory):
    """Every odd reply answered on one conversation; a second agent (a restart, another worker) loads it."""
    store = store_factory()
    first = Agent(scripted(*ODD_REPLIES.values()), store=store, conversation_id="c-odd")
    try:
        answers = [first.ask(f"q{i}", timeout_seconds=20) for i in range(len(ODD_REPLIES))]
    finally:
        first.shutdown()
    assert [a["status"] for a in answers] == ["completed"] * len(ODD_REPLIES), answers
    second = Agent(scripted(), store=store, conversation_id="c-odd")
    try:
        assert [message_to_dict(m) for m in second.history] == [message_to_dict(m) for m in first.history]
        assert len(second.history) == 2 * len(ODD_REPLIES)
        assert second.ask("and now?", timeout_seconds=20)["content"] == "done"
    finally:
        second.shutdown()


@pytest.mark.parametrize("finish_reason", ["error", "guardrail_intervened", "sensitive", "", "MALFORMED_FUNCTION_CALL"])
def test_pydantic_ai_2844_nonstandard_finish_reasons_are_answered_stored_and_loaded(
        finish_reason, sqlite_store_factory):
    """pydantic/pydantic-ai #2844 (OpenRouter ``error``), #7816 (Bedrock ``guardrail_intervened``, Gemini's
    OpenAI-compatible endpoint), #7685 (Z.AI ``sensitive``), together-python PR #239 (``""``), #3581
    (``native_finish_reason: null``): a finish reason outside OpenAI's five is answered, not refused,
    and the conversation is stored and loaded again.
    """
    reply = {"choices": [{"index": 0, "finish_reason": finish_reason, "native_finish_reason": None,
                          "message": {"role": "assistant", "content": "partial"}}]}
    store = sqlite_store_factory()
    first = Agent(scripted(reply), store=store, conversation_id="c")
    try:
        assert first.ask("q", timeout_seconds=20)["content"] == "partial"
    finally:
        first.shutdown()
    second = Agent(scripted(), store=store, conversation_id="c")
    try:
        assert second.history[1].finish_reason == finish_reason and second.history[1].text == "partial"
    finally:
        second.shutdown()


def test_issue_15_a_conversation_bricked_by_an_earlier_version_loads_again(store_factory):
    """Conversations already committed by an earlier version with ``finish_reason: 7`` (or a non-object
    ``usage``) stay in users' databases: a new agent on them failed with ``FormatError`` in its constructor.
    Such a state now loads (the finish reason as text, such a usage as null) and the chat goes on.
    """
    store = store_factory()
    user = {"role": "user", "content": [{"type": "text", "text": "hi"}], "name": None, "excluded": None}
    reply = {"role": "assistant", "content": [{"type": "text", "text": "seven"}], "tool_calls": [], "extra": {},
             "finish_reason": 7, "usage": "n/a", "excluded": None}
    state = json.dumps({"version": 1, "history": [user, reply], "usage": {}, "system_prompt": None})
    lease = store.acquire("c-old", "earlier-version", ttl_seconds=30)
    store.commit(lease, expected_version=store.load("c-old").version, state=state)
    store.release(lease)
    agent = Agent(scripted(), store=store, conversation_id="c-old")
    try:
        assert (agent.history[1].finish_reason, agent.history[1].usage) == ("7", None)
        assert agent.ask("still there?", timeout_seconds=20)["content"] == "done"
    finally:
        agent.shutdown()
