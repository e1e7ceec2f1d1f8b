"""What was accepted can always be stored and loaded again (issue 15, point 2), for every reply shape.

For any reply ``parse_response`` reads (``reply_shapes``: chat completions, Responses, Anthropic,
Gemini, Ollama, bare messages, odd values anywhere), the agent's history after answering it
round-trips: ``state_to_json`` is strict JSON (no NaN, UTF-8 encodable), ``Agent.from_state``
loads it, and the loaded history's saved form is the same; on both stores a new agent on the
conversation loads what the first committed. ``parse_state`` and ``merge_chunks`` raise only
their documented ``FormatError`` for any input.
"""

import itertools
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from yiemagent import Agent, FormatError, ToolCallFormatError, parse_response, tool
from yiemagent.formats.llm import merge_chunks
from yiemagent.loop.conversation import parse_state
from yiemagent.messages import message_to_dict

from .. import strict_openai
from .strategies import odd_values, reply_shapes


@tool
def get_weather(city: str) -> str:
    """Weather of a city."""
    return f"sunny in {city}"


def scripted(reply):
    """Answers ``reply``, then "done"; every request it gets must pass the strict oracle (provider fields
    allowed: they go back to the provider that attached them).
    """
    replies = iter([reply])

    def llm_call(messages, tools):
        strict_openai.validate_request(messages, tools, dialects=True)
        return next(replies, {"choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": "done"}}]})
    return llm_call


def accepted(reply):
    try:
        parse_response(reply, tool_names={"get_weather"})
    except ToolCallFormatError:
        return False
    return True


def saved(history):
    return [message_to_dict(m) for m in history]


def check_state(agent):
    state = agent.state_to_json()
    state.encode("utf-8")  # no lone surrogate
    json.dumps(json.loads(state), allow_nan=False)  # no NaN / Infinity anywhere
    restored = Agent.from_state(state, agent.config.llm_call, tools=[get_weather])
    assert saved(restored.history) == saved(agent.history)
    assert restored.usage == agent.usage


@given(reply_shapes())
def test_every_accepted_reply_round_trips_through_the_saved_state(reply):
    """Before: ``finish_reason: 7`` (and NaN usage, lone surrogates...) made ``from_state`` raise."""
    if not accepted(reply):
        return
    agent = Agent(scripted(reply), tools=[get_weather], max_turns=3)
    answer = agent.ask("go", timeout_seconds=30)
    assert answer["status"] in ("completed", "truncated", "max_turns", "repeated_call"), answer
    check_state(agent)


_ids = itertools.count()


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=reply_shapes())
def test_every_accepted_reply_round_trips_through_both_stores(store_factory, reply):
    """SQLiteStore and PostgresStore: the first agent commits, a second one loads the same history."""
    if not accepted(reply):
        return
    store = store_factory()
    conversation = f"c{next(_ids)}"
    first = Agent(scripted(reply), tools=[get_weather], max_turns=3, store=store, conversation_id=conversation)
    try:
        answer = first.ask("go", timeout_seconds=30)
    finally:
        first.shutdown()
    assert answer["status"] != "error" or "store" not in answer.get("error", "").lower(), answer
    second = Agent(scripted(reply), tools=[get_weather], store=store, conversation_id=conversation)
    try:
        assert saved(second.history) == saved(first.history)
        check_state(second)
    finally:
        second.shutdown()


states = st.one_of(st.text(max_size=40), odd_values.map(lambda v: json.dumps(v, default=repr)),
                   st.builds(lambda h, u, s: json.dumps({"version": 1, "history": h, "usage": u, "system_prompt": s},
                                                        default=repr),
                             st.lists(odd_values, max_size=3), odd_values, odd_values),
                   odd_values)


@given(states)
def test_parse_state_raises_only_format_error(state):
    try:
        history, usage, system_prompt = parse_state(state)
    except FormatError:
        return
    assert isinstance(history, list) and isinstance(usage, dict)
    assert system_prompt is None or isinstance(system_prompt, str)


@given(st.one_of(odd_values, st.lists(st.one_of(odd_values, st.fixed_dictionaries({}, optional={
    "choices": st.one_of(odd_values, st.lists(st.fixed_dictionaries({"index": st.just(0)}, optional={
        "delta": st.one_of(odd_values, st.dictionaries(st.sampled_from(
            ["content", "reasoning", "reasoning_content", "tool_calls", "reasoning_details", "thinking_blocks",
             "refusal"]), odd_values)),
        "finish_reason": odd_values}), max_size=2)),
    "usage": odd_values})), max_size=4)))
def test_merge_chunks_raises_only_format_error(chunks):
    """Before: ``TypeError`` for ``choices: 5`` (issue 15's fuzz run)."""
    try:
        reply = merge_chunks(chunks)
    except FormatError:
        assert not isinstance(chunks, (list, tuple))
        return
    assert reply["object"] == "chat.completion"
