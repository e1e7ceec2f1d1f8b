"""Tool-call extraction from every reply shape (yiemagent.messages.tool_calls)."""

import pytest

from yiemagent import ToolCallFormatError, extract_tool_calls
from yiemagent.messages import to_openai
from yiemagent.messages.tool_calls import parse_arguments, parse_response


def chat(message, finish_reason="tool_calls"):
    return {"choices": [{"index": 0, "finish_reason": finish_reason, "message": message}]}


def test_openai_chat_completions_tool_calls_are_extracted_in_order():
    """OpenAI Chat Completions: choices[0].message.tool_calls."""
    reply = chat({"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]})
    calls = extract_tool_calls(reply)
    assert [(c.id, c.name, c.arguments) for c in calls] == [("a", "f", {"x": 1}), ("b", "g", {})]


def test_bare_message_with_tool_calls_is_read():
    """LM Studio / vLLM / llama.cpp sometimes hand over the message alone."""
    calls = extract_tool_calls({"role": "assistant", "tool_calls": [
        {"id": "x", "function": {"name": "f", "arguments": {"k": "v"}}}]})
    assert [(c.id, c.name, c.arguments) for c in calls] == [("x", "f", {"k": "v"})]


def test_ollama_message_with_object_arguments_and_no_ids_is_read():
    """Ollama /api/chat: {"message": {...}}, arguments an object, no ids."""
    calls = extract_tool_calls({"model": "m", "done": True, "message": {"role": "assistant", "content": "",
                                "tool_calls": [{"function": {"name": "get_time", "arguments": {}}}]}})
    assert [(c.id, c.name, c.arguments) for c in calls] == [("call_0", "get_time", {})]


def test_content_blocks_of_type_tool_calls_and_tool_use_are_read():
    """Content blocks: {"type": "tool_calls"} and Anthropic {"type": "tool_use"}."""
    calls = extract_tool_calls(chat({"role": "assistant", "content": [
        {"type": "text", "text": "Checking."},
        {"type": "tool_calls", "tool_calls": [{"id": "t1", "function": {"name": "f", "arguments": "{}"}}]},
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Lima"}}]}))
    assert [(c.id, c.name, c.arguments) for c in calls] == [("t1", "f", {}), ("toolu_01", "get_weather",
                                                                              {"city": "Lima"})]


def test_c01_arguments_as_object_or_empty_string_both_run_and_are_written_back_as_json_strings():
    """C01: dict arguments used as is; "" means {}; both written back as JSON strings."""
    reply = chat({"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": ""}}]})
    message = parse_response(reply)
    assert [(c.id, c.arguments, c.error) for c in message.tool_calls] == [
        ("call_a", {"city": "Paris"}, None), ("call_b", {}, None)]
    wire = to_openai(message)["tool_calls"]
    assert [c["function"]["arguments"] for c in wire] == ['{"city": "Paris"}', "{}"]


@pytest.mark.parametrize("raw", [None, "", "   ", "null", "\n\t"])
def test_c01_empty_whitespace_and_null_arguments_mean_no_arguments(raw):
    """C01 variants: null / whitespace-only are {}."""
    assert parse_arguments(raw) == ({}, None)


@pytest.mark.parametrize("finish_reason", ["tool_calls", "length"])
def test_c02_truncated_arguments_are_not_run_and_history_keeps_valid_json(finish_reason):
    """C02: cut-off arguments -> error on the call, "{}" in the history, original kept aside."""
    raw = '{"title": "todo", "body": "buy mi'
    reply = chat({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "write_note", "arguments": raw}}]}, finish_reason)
    message = parse_response(reply)
    call = message.tool_calls[0]
    assert call.error and "not valid JSON" in call.error and "smaller" in call.error
    assert ("cut off" in call.error) == (finish_reason == "length")
    assert call.raw_arguments == raw and call.arguments == {}
    assert to_openai(message)["tool_calls"][0]["function"]["arguments"] == "{}"


@pytest.mark.parametrize("raw", ["[1, 2]", "42", '"text"', "true"])
def test_arguments_that_are_json_but_not_an_object_are_refused(raw):
    """Arguments must be a JSON object; anything else is an error, never executed."""
    arguments, error = parse_arguments(raw)
    assert arguments == {} and error is not None


def test_double_encoded_arguments_are_decoded():
    """Some servers JSON-encode the arguments string twice."""
    assert parse_arguments('"{\\"city\\": \\"Lima\\"}"') == ({"city": "Lima"}, None)


@pytest.mark.parametrize("ids", [(None, None), ("", ""), ("get_weather", "get_weather")])
def test_c04_missing_empty_or_duplicate_ids_become_unique(ids):
    """C04: unique non-empty ids, in order; Lima stays with its own call."""
    calls = [{"function": {"name": "get_weather", "arguments": {"city": city}}} for city in ("Lima", "Kyiv")]
    for call, call_id in zip(calls, ids, strict=True):
        if call_id is not None:
            call["id"] = call_id
    extracted = extract_tool_calls(chat({"role": "assistant", "content": "", "tool_calls": calls}, "stop"))
    assert len({c.id for c in extracted}) == 2 and all(c.id for c in extracted)
    assert [c.arguments["city"] for c in extracted] == ["Lima", "Kyiv"]


def test_ids_already_in_the_history_are_not_reused():
    """An id, once in the history, is never given to a new call."""
    reply = chat({"role": "assistant", "tool_calls": [{"id": "call_x", "function": {"name": "f", "arguments": "{}"}}]})
    taken = {"call_x"}
    assert parse_response(reply, taken_ids=taken).tool_calls[0].id == "call_x_2"
    assert "call_x_2" in taken


def test_finish_reason_stop_with_calls_still_returns_calls():
    """C08 kind: finish_reason is advisory."""
    reply = chat({"role": "assistant", "content": None,
                  "tool_calls": [{"id": "c", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
                 "stop")
    assert [c.name for c in extract_tool_calls(reply)] == ["get_time"]


def test_call_without_a_name_is_marked_as_not_runnable():
    """A call with no function name is reported, not run."""
    reply = chat({"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]})
    call = extract_tool_calls(reply)[0]
    assert call.error and "no function name" in call.error


@pytest.mark.parametrize("bad", [None, [], "text", {"choices": []}, {"choices": [{"message": "x"}]}, {"foo": 1}])
def test_unrecognised_replies_raise_tool_call_format_error(bad):
    """The documented error, never TypeError/KeyError."""
    with pytest.raises(ToolCallFormatError):
        extract_tool_calls(bad)


def test_usage_and_finish_reason_are_kept_on_the_message():
    """Token usage and finish_reason are read for events and state."""
    reply = chat({"role": "assistant", "content": "hi"}, "stop")
    reply["usage"] = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    message = parse_response(reply)
    assert message.text == "hi" and message.finish_reason == "stop" and message.usage["total_tokens"] == 4
