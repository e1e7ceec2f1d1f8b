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
