"""Batches of good and broken calls always leave a valid history (issue 3, point 7)."""

import json

from hypothesis import given
from hypothesis import strategies as st

from yiemagent import Agent, tool
from yiemagent.testing import ScriptedLLM, text_reply

from .. import strict_openai
from .strategies import json_objects


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


@tool
def get_time() -> str:
    """Time."""
    return "12:00"


arguments = st.one_of(
    json_objects,
    json_objects.map(json.dumps),
    st.just({"city": "Lima"}), st.just('{"city": "Kyiv"}'),
    st.sampled_from(["", "   ", "null", None, '{"city": "Li', "[1, 2]", "42", '{"city": "a",}', '{"a":1}{"a":2}',
                     '"{\\"city\\": \\"x\\"}"']),
)
calls = st.lists(st.fixed_dictionaries(
    {"function": st.fixed_dictionaries({"name": st.sampled_from(["get_weather", "get_time", "unknown", ""]),
                                        "arguments": arguments})},
    optional={"id": st.sampled_from(["", "dup", "call_1", "call_2"]) | st.text(max_size=5),
              "type": st.just("function")},
), min_size=1, max_size=5)


@given(st.lists(calls, min_size=1, max_size=3), st.sampled_from(["tool_calls", "stop", "length"]))
def test_any_batch_of_calls_leaves_one_result_per_call_right_after_its_assistant_message(batches, finish_reason):
    """Exactly one tool message per call id, in order, and a history a strict validator accepts."""
    replies = [{"choices": [{"index": 0, "finish_reason": finish_reason, "message": {
        "role": "assistant", "content": None, "tool_calls": batch}}]} for batch in batches]
    llm = ScriptedLLM([*replies, text_reply("done")])
    agent = Agent(llm, tools=[get_weather, get_time], max_turns=10, max_repeated_calls=None)
    answer = agent.ask("go")
    assert answer["status"] == "completed"
    messages = agent.openai_messages()
    strict_openai.validate(messages)
    for sent in llm.calls:
        strict_openai.validate(sent["messages"])
    assistant_calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert [c["id"] for c in assistant_calls] == [m["tool_call_id"] for m in tool_messages]
    assert len(assistant_calls) >= sum(len(b) for b in batches)  # glued objects may add calls, never drop
