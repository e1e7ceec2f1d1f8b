"""Hypothesis strategies for messages and replies."""

import json

from hypothesis import strategies as st

from yiemagent.messages import (
    AssistantMessage,
    ImageContent,
    ReasoningContent,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

text = st.text(min_size=1, max_size=30)
json_scalars = (st.none() | st.booleans() | st.integers(-10**12, 10**12)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=8), inner, max_size=4), max_leaves=12)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)
names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_-]{0,20}", fullmatch=True)
ids = st.from_regex(r"call_[a-zA-Z0-9]{1,10}", fullmatch=True)

images = st.builds(
    ImageContent,
    url=st.one_of(st.from_regex(r"https://example\.org/[a-z]{1,10}\.png", fullmatch=True),
                  st.builds(lambda d: f"data:image/png;base64,{d}", st.from_regex(r"[A-Za-z0-9+/]{4,16}",
                                                                                   fullmatch=True))),
    detail=st.sampled_from([None, "low", "high", "auto"]),
)
user_messages = st.builds(
    UserMessage,
    content=st.lists(st.one_of(st.builds(TextContent, text), images), max_size=4),
    name=st.none() | names,
)
system_messages = st.builds(SystemMessage, content=st.text(max_size=30),
                            role=st.sampled_from(["system", "developer"]))


@st.composite
def assistant_messages(draw, unique_ids=True):
    content = []
    for field in ("reasoning_content", "reasoning"):
        if draw(st.booleans()):
            content.append(ReasoningContent(draw(text), field=field))
    if draw(st.booleans()):
        content.append(TextContent(draw(text)))
    call_ids = draw(st.lists(ids, max_size=3, unique=unique_ids))
    calls = [ToolCall(i, draw(names), draw(json_objects)) for i in call_ids]
    extra = draw(st.dictionaries(st.sampled_from(["refusal", "annotations", "audio", "name"]), json_values,
                                 max_size=2))
    return AssistantMessage(content=content, tool_calls=calls, extra=extra)


tool_results = st.builds(ToolResultMessage, tool_call_id=ids, content=st.lists(st.builds(TextContent, text),
                                                                               min_size=1, max_size=1))
messages = st.one_of(user_messages, system_messages, assistant_messages(), tool_results)


def dumps(value):
    return json.dumps(value, ensure_ascii=False)


# --------------------------------------------------------------------------- replies of every shape the parsers read
# (issue 15, point 2): odd values in every place, as a broken proxy or a Python llm_call may return them.

odd_scalars = (json_scalars | st.sampled_from([float("nan"), float("inf"), 1e308, "\ud800", "a\udfffb", "", 7, -1])
               | st.binary(max_size=4))
odd_values = st.recursive(odd_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.one_of(st.text(max_size=6), st.integers(-2, 2)), inner, max_size=3), max_leaves=8)
finish_reasons = st.one_of(st.sampled_from(["stop", "tool_calls", "length", "end_turn", "tool_use", "max_tokens",
                                            "completed", "incomplete", "STOP", "MAX_TOKENS", None]), odd_values)
call_names = st.one_of(st.sampled_from(["get_weather", "get_time", "web.search", "get_weather<|channel|>commentary",
                                        "functions.get_time", "", "\ud800x"]), st.text(max_size=8))
arguments = st.one_of(st.sampled_from(['{"city": "Lima"}', "", "null", '{"a": NaN}', '{"a":', '{"a":1}{"a":2}',
                                       '"x"', "{}"]), st.dictionaries(st.text(max_size=5), odd_values, max_size=3),
                      odd_values)
provider_extras = st.dictionaries(st.sampled_from(["extra_content", "thought_signature", "index", "score", "\ud800"]),
                                  odd_values, max_size=2)


@st.composite
def openai_tool_calls(draw):
    call = {"id": draw(st.one_of(ids, st.sampled_from(["", "dup", "\ud800"]), st.none(), st.integers())),
            "type": "function", "function": {"name": draw(call_names), "arguments": draw(arguments)}}
    call.update(draw(provider_extras))
    return call


@st.composite
def message_dicts(draw):
    """An assistant message of the chat family, every field possibly odd."""
    message = {"role": "assistant"}
    message["content"] = draw(st.one_of(st.none(), st.text(max_size=40), odd_values, st.sampled_from([
        "<think>hm</think>ok", "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>final"
        "<|message|>b<|return|>", "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
        '<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"zone": "\ud800"}<|call|>']),
        st.lists(st.one_of(st.fixed_dictionaries({"type": st.sampled_from(["text", "output_text", "thinking",
                                                                            "redacted_thinking"])},
                                                 optional={"text": odd_values, "thinking": odd_values,
                                                           "signature": odd_values, "data": odd_values}),
                           st.builds(lambda n, i, x: {"type": "tool_use", "id": i, "name": n, "input": x},
                                     call_names, ids, odd_values), odd_values), max_size=3)))
    if draw(st.booleans()):
        message["tool_calls"] = draw(st.lists(openai_tool_calls(), max_size=3))
    for key in draw(st.lists(st.sampled_from(["reasoning_content", "reasoning", "thinking", "reasoning_details",
                                              "thinking_blocks", "refusal", "audio", "\udc80"]), max_size=3)):
        message[key] = draw(odd_values)
    return message


@st.composite
def reply_shapes(draw):
    """A reply of any shape ``parse_response`` reads, with odd values anywhere (see tool_calls' docstring)."""
    kind = draw(st.integers(0, 5))
    usage = draw(st.one_of(st.none(), st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens",
                                                                        "details"]), odd_values, max_size=3)))
    finish = draw(finish_reasons)
    if kind == 0:
        reply = {"choices": [{"index": 0, "finish_reason": finish, "message": draw(message_dicts())}]}
    elif kind == 1:
        reply = {"object": "response", "status": finish, "output": draw(st.lists(st.one_of(
            st.builds(lambda n, a, i: {"type": "function_call", "name": n, "arguments": a, "call_id": i},
                      call_names, arguments, ids),
            st.builds(lambda t: {"type": "message", "content": [{"type": "output_text", "text": t}]}, odd_values),
            st.builds(lambda t: {"type": "reasoning", "summary": [{"type": "summary_text", "text": t}]},
                      st.text(max_size=10)), odd_values), max_size=3))}
    elif kind == 2:
        reply = {**draw(message_dicts()), "stop_reason": finish}
    elif kind == 3:
        parts = draw(st.lists(st.one_of(
            st.builds(lambda n, a, s: {"functionCall": {"name": n, "args": a}, "thoughtSignature": s},
                      call_names, odd_values, odd_values),
            st.builds(lambda t, th: {"text": t, "thought": th}, st.text(max_size=10), st.booleans())), max_size=3))
        reply = {"candidates": [{"content": {"parts": parts}, "finishReason": finish}]}
        if usage is not None:
            reply["usageMetadata"] = usage
        return reply
    elif kind == 4:
        reply = {"message": draw(message_dicts()), "done": True, "done_reason": finish}
    else:
        reply = {**draw(message_dicts()), "finish_reason": finish}
    if usage is not None:
        reply["usage"] = usage
    return reply
