"""Messages and their OpenAI chat format (yiemagent.messages)."""

import json

import pytest

from yiemagent import FormatError
from yiemagent.messages import (
    AssistantMessage,
    ImageContent,
    ReasoningContent,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    from_openai,
    messages_from_openai,
    messages_to_openai,
    to_openai,
)


def test_text_only_user_message_has_plain_string_content():
    """yiemagent-defined: the llm_call contract says text-only user content is a string."""
    assert to_openai(UserMessage("hi")) == {"role": "user", "content": "hi"}


def test_user_message_with_image_becomes_content_parts_and_back():
    """OpenAI format: text + image_url parts; base64 data URLs keep mime type and data."""
    message = UserMessage([TextContent("look"), ImageContent.from_base64("iVBORw0KGgo=", "image/png", "low")])
    wire = to_openai(message)
    assert wire["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"},
    }
    back = from_openai(wire)
    assert back == message
    assert back.content[1].mime_type == "image/png" and back.content[1].data == "iVBORw0KGgo="


def test_assistant_tool_call_arguments_are_written_as_json_strings_with_characters_kept():
    """OpenAI format: arguments is a JSON string; non-ASCII stays as characters."""
    message = AssistantMessage(tool_calls=[ToolCall("call_1", "get_weather", {"city": "Kyïv"})])
    wire = to_openai(message)
    assert wire["content"] is None
    assert wire["tool_calls"][0]["function"]["arguments"] == '{"city": "Kyïv"}'
    assert wire["tool_calls"][0]["type"] == "function"


@pytest.mark.parametrize("content", ["missing", None, ""])
def test_c09_assistant_content_null_missing_or_empty_means_no_text(content):
    """C09: missing / null / "" content parse as no text and are written back as null beside tool_calls."""
    raw = {"role": "assistant",
           "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]}
    if content != "missing":
        raw["content"] = content
    message = from_openai(raw)
    assert message.text == "" and message.content == []
    assert to_openai(message) == {"role": "assistant", "content": None, "tool_calls": raw["tool_calls"]}


def test_assistant_without_tool_calls_and_text_is_written_with_empty_string():
    """OpenAI rule: an assistant message without tool_calls needs content; we write ""."""
    assert to_openai(AssistantMessage()) == {"role": "assistant", "content": ""}


def test_reasoning_content_is_sent_back_next_to_tool_calls():
    """DeepSeek/vLLM/llama.cpp: reasoning_content goes back beside tool_calls, under its own key."""
    raw = {"role": "assistant", "content": None, "reasoning_content": "think first",
           "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    message = from_openai(raw)
    assert message.content == [ReasoningContent("think first")]
    assert to_openai(message) == raw


def test_unknown_assistant_fields_are_preserved():
    """yiemagent-defined: extra keys (refusal, annotations...) round-trip unchanged."""
    raw = {"role": "assistant", "content": "ok", "refusal": None, "annotations": [{"type": "url"}]}
    assert to_openai(from_openai(raw)) == raw


def test_tool_result_with_image_sends_a_placeholder_not_base64():
    """C18 kind: an image in a tool result never lands in the tool text as base64."""
    result = ToolResultMessage("c1", [TextContent("chart ready"), ImageContent.from_base64("iVBORw0KGgo=")])
    wire = to_openai(result)
    assert wire == {"role": "tool", "tool_call_id": "c1", "content": "chart ready\n[image image/png, 8 bytes]"}


def test_whole_history_round_trips():
    """from_openai(to_openai(m)) == m over a typical history."""
    history = [
        SystemMessage("be brief"),
        UserMessage("hi"),
        AssistantMessage([TextContent("calling")], [ToolCall("c1", "add", {"a": 1, "b": 2})]),
        ToolResultMessage("c1", [TextContent("3")]),
        AssistantMessage([TextContent("3")]),
    ]
    wire = messages_to_openai(history)
    assert json.loads(json.dumps(wire)) == wire  # plain JSON
    assert messages_from_openai(wire) == history


@pytest.mark.parametrize(
    "bad",
    [{"role": "robot", "content": "x"}, {"role": "tool", "content": "x"}, {"role": "user", "content": 3}, 42],
)
def test_unreadable_messages_raise_format_error(bad):
    """yiemagent-defined: FormatError (also a ValueError) names what is wrong."""
    with pytest.raises(FormatError):
        from_openai(bad)
