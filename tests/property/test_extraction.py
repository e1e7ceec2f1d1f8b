"""extract_tool_calls on any JSON value: a list, or its own documented error (issue 3, point 7)."""

from hypothesis import given
from hypothesis import strategies as st

from yiemagent import ToolCall, ToolCallFormatError, extract_tool_calls, from_openai_response

from .strategies import json_values, names

tool_call_like = st.fixed_dictionaries({}, optional={
    "id": st.none() | st.text(max_size=6) | st.integers(),
    "type": st.just("function"),
    "function": st.fixed_dictionaries({}, optional={"name": st.none() | names | st.integers(),
                                                    "arguments": json_values}) | json_values,
    "name": json_values,
    "arguments": json_values,
})
message_like = st.fixed_dictionaries({}, optional={
    "role": st.sampled_from(["assistant", "user", 3]),
    "content": st.none() | st.text(max_size=60) | st.lists(json_values, max_size=3),
    "tool_calls": st.none() | st.lists(tool_call_like, max_size=3) | json_values,
    "function_call": json_values,
    "reasoning_content": json_values,
})
replies = st.one_of(
    json_values,
    st.builds(lambda m, f: {"choices": [{"index": 0, "message": m, "finish_reason": f}]}, message_like,
              st.sampled_from(["stop", "tool_calls", "length", None])),
    message_like,
    st.builds(lambda m: {"message": m}, message_like),
    st.builds(lambda o: {"output": o}, st.lists(json_values, max_size=3)),
    st.builds(lambda c: {"candidates": c}, st.lists(json_values, max_size=2)),
)


def _check(reply, tool_names):
    try:
        calls = extract_tool_calls(reply, tool_names=tool_names)
    except ToolCallFormatError:
        return
    assert isinstance(calls, list) and all(isinstance(c, ToolCall) for c in calls)
    assert len({c.id for c in calls}) == len(calls) and all(c.id for c in calls)
    assert all(isinstance(c.arguments, dict) for c in calls)
    assert all(c.arguments == {} for c in calls if c.error)


@given(replies)
def test_any_reply_gives_calls_or_a_format_error(reply):
    """Never TypeError/KeyError/AttributeError, whatever the JSON."""
    _check(reply, None)
    _check(reply, {"get_weather", "get_time"})


@given(st.text(max_size=200))
def test_any_text_content_gives_calls_or_nothing(content):
    """Text recognisers never raise on arbitrary text."""
    message = from_openai_response({"choices": [{"message": {"role": "assistant", "content": content}}]},
                                   tool_names={"get_weather"})
    assert all(isinstance(c.arguments, dict) for c in message.tool_calls)
