"""Calls written in the reply text, reasoning, repairs and every structured shape (issue 3 cases)."""

import json

import pytest

from yiemagent import extract_tool_calls, from_openai_response
from yiemagent.formats.text_tool_calls import find_text_calls, repair_json_object, split_reasoning
from yiemagent.messages import ReasoningContent, to_openai

NAMES = {"get_weather", "get_time", "write_note"}


def chat_text(content, finish_reason="stop"):
    return {"choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": content}}]}


def calls_of(reply, names=NAMES):
    message = from_openai_response(reply, tool_names=names)
    return message, [(c.name, c.arguments) for c in message.tool_calls]


def test_c05_two_hermes_blocks_give_two_calls_in_order_and_no_text():
    """C05: markup removed, content null, Lima then Kyiv, unique ids."""
    content = ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lima"}}\n</tool_call>\n'
               '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Kyiv"}}\n</tool_call>')
    message, calls = calls_of({"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "tool_calls": None, "content": content}}]})
    assert calls == [("get_weather", {"city": "Lima"}), ("get_weather", {"city": "Kyiv"})]
    assert message.text == "" and to_openai(message)["content"] is None
    assert len({c.id for c in message.tool_calls}) == 2


def test_c05_closing_tag_inside_a_json_string_is_not_the_end_of_the_call():
    """C05 variant: string-aware decoding keeps "see </tool_call> tag" whole."""
    content = '<tool_call>{"name": "write_note", "arguments": {"body": "see </tool_call> tag"}}</tool_call>'
    _, calls = calls_of(chat_text(content))
    assert calls == [("write_note", {"body": "see </tool_call> tag"})]


def test_c07_fenced_json_with_string_arguments_is_a_call():
    """C07 A: fence stripped, string arguments decoded."""
    _, calls = calls_of(chat_text('```json\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Lima\\"}"}\n```'))
    assert calls == [("get_weather", {"city": "Lima"})]


def test_c07_llama_json_with_parameters_keeps_the_trailing_prose():
    """C07 B: "parameters" is an alias of "arguments"; the prose stays as text."""
    message, calls = calls_of(chat_text(
        '{"type": "function", "name": "get_weather", "parameters": {"city": "Kyiv"}}\n\nAnything else?'))
    assert calls == [("get_weather", {"city": "Kyiv"})]
    assert message.text == "Anything else?"


def test_c07_json_in_prose_that_names_no_registered_tool_is_not_a_call():
    """C07 C: {"name": "Alice"} is a sample record, the text is the answer."""
    message, calls = calls_of(chat_text('Sample record: {"name": "Alice"}'))
    assert calls == [] and message.text == 'Sample record: {"name": "Alice"}'
    message, calls = calls_of(chat_text('{"name": "Alice", "arguments": {}}'))
    assert calls == [] and message.text.startswith("{")


def test_c08_finish_reason_stop_with_calls_runs_them_and_tool_calls_without_calls_ends():
    """C08: presence of calls decides, not finish_reason."""
    a = {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": None,
          "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]}}]}
    b = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
          "content": "It is noon.", "tool_calls": []}}]}
    assert calls_of(a)[1] == [("get_time", {})]
    message, calls = calls_of(b)
    assert calls == [] and message.text == "It is noon."


def test_c11_anthropic_tool_use_blocks_inside_choices_and_raw():
    """C11: tool_use read; id kept; history is pure OpenAI format."""
    message = from_openai_response({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": [{"type": "text", "text": "Checking."},
                                         {"type": "tool_use", "id": "toolu_01", "name": "get_weather",
                                          "input": {"city": "Lima"}}]}}]})
    assert message.text == "Checking."
    wire = to_openai(message)
    assert wire["tool_calls"] == [{"id": "toolu_01", "type": "function",
                                   "function": {"name": "get_weather", "arguments": '{"city": "Lima"}'}}]
    raw = {"role": "assistant", "stop_reason": "tool_use",
           "content": [{"type": "tool_use", "id": "toolu_02", "name": "get_time", "input": {}}]}
    assert [(c.id, c.name, c.arguments) for c in extract_tool_calls(raw)] == [("toolu_02", "get_time", {})]


def test_qwen3_coder_xml_calls_are_read():
    """Qwen3-coder XML: parameters are JSON when they parse, strings otherwise."""
    content = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nLima\n</parameter>\n"
               "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>")
    _, calls = calls_of(chat_text(content))
    assert calls == [("get_weather", {"city": "Lima", "days": 3})]


@pytest.mark.parametrize("content", [
    '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Lima"}}, {"name": "get_time", "arguments": {}}]',
    '[TOOL_CALLS]get_weather[ARGS]{"city": "Lima"}[TOOL_CALLS]get_time[ARGS]{}',
])
def test_mistral_both_dialects(content):
    """Mistral: JSON-array dialect and name[ARGS]{...} dialect."""
    assert calls_of(chat_text(content))[1] == [("get_weather", {"city": "Lima"}), ("get_time", {})]


def test_llama_python_tag_with_semicolon_separated_calls():
    """Llama 3.x <|python_tag|> with several ;-separated JSON calls."""
    content = ('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Lima"}}; '
               '{"name": "get_time", "parameters": {}}<|eom_id|>')
    assert calls_of(chat_text(content))[1] == [("get_weather", {"city": "Lima"}), ("get_time", {})]


def test_pythonic_call_list():
    """Pythonic [f(a=1), g(b="x")] with registered names."""
    content = '[get_weather(city="Lima"), get_time()]'
    assert calls_of(chat_text(content))[1] == [("get_weather", {"city": "Lima"}), ("get_time", {})]
    assert calls_of(chat_text('[print(x="y")]'))[1] == []  # unknown name: prose


def test_lmstudio_tool_request_blocks():
    """LM Studio [TOOL_REQUEST]...[END_TOOL_REQUEST]; surrounding text kept."""
    content = 'Let me check. [TOOL_REQUEST]{"name": "get_time", "arguments": {}}[END_TOOL_REQUEST]'
    message, calls = calls_of(chat_text(content))
    assert calls == [("get_time", {})] and message.text == "Let me check."


def test_calls_inside_reasoning_are_never_run():
    """<think> blocks and reasoning_content are reasoning, not calls."""
    content = '<think>maybe <tool_call>{"name": "get_time", "arguments": {}}</tool_call></think>It is noon.'
    message, calls = calls_of(chat_text(content))
    assert calls == [] and message.text == "It is noon."
    assert "get_time" in message.reasoning
    reply = {"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "Done.",
        "reasoning_content": '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'}}]}
    message, calls = calls_of(reply)
    assert calls == [] and message.content[0] == ReasoningContent(
        '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>')


def test_unambiguous_repairs_are_applied_and_noted():
    """Trailing comma and a missing final brace are repaired, with a note."""
    reply = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
        {"id": "a", "function": {"name": "get_weather", "arguments": '{"city": "Lima",}'}},
        {"id": "b", "function": {"name": "get_weather", "arguments": '{"city": "Kyiv"'}}]}}]}
    calls = extract_tool_calls(reply)
    assert [(c.arguments, c.error) for c in calls] == [({"city": "Lima"}, None), ({"city": "Kyiv"}, None)]
    assert "trailing comma" in calls[0].note and "missing closing brace" in calls[1].note


def test_no_repair_when_the_reply_was_cut_by_the_token_limit():
    """finish_reason "length": a missing brace means cut off; never executed."""
    reply = {"choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "tool_calls": [
        {"id": "a", "function": {"name": "get_weather", "arguments": '{"city": "Kyiv"'}}]}}]}
    call = extract_tool_calls(reply)[0]
    assert call.error and "cut off" in call.error and call.arguments == {}


def test_glued_argument_objects_are_split_into_separate_calls():
    """{..}{..} in one call's arguments: two calls when every part parses."""
    reply = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
        {"id": "a", "function": {"name": "get_weather", "arguments": '{"city": "Lima"}{"city": "Kyiv"}'}}]}}]}
    calls = extract_tool_calls(reply)
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Lima"}), ("get_weather",
                                                                                           {"city": "Kyiv"})]
    assert calls[0].id != calls[1].id and "split" in calls[0].note


@pytest.mark.parametrize("text", ['{"a": "b', '{"a": ', '{"a": 1,', "{", '{"a": [1, 2}'])
def test_ambiguous_json_is_not_repaired(text):
    """Cut inside a string, after ':' or ',', or mismatched: no repair."""
    assert repair_json_object(text) is None


def test_cut_off_hermes_call_in_text_is_reported_not_run():
    """A <tool_call> cut by max_tokens: the complete call runs, the cut one gets an error."""
    content = ('<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>\n'
               '<tool_call>{"name": "get_weather", "arguments": {"city": "Ky')
    message = from_openai_response(chat_text(content, "length"), tool_names=NAMES)
    assert [(c.arguments, bool(c.error)) for c in message.tool_calls] == [({"city": "Lima"}, False), ({}, True)]
    assert "cut off" in message.tool_calls[1].error


def test_tool_call_tag_with_only_a_name_is_an_error_call_the_model_can_learn_from():
    """The local Gemma writes <tool_call>get_time</tool_call>: a call that cannot run, with a reason."""
    message = from_openai_response(chat_text("<tool_call>get_time</tool_call>"), tool_names=NAMES)
    assert [(c.name, bool(c.error)) for c in message.tool_calls] == [("get_time", True)]
    assert "not valid JSON" in message.tool_calls[0].error


def test_openai_responses_api_output_items():
    """OpenAI Responses: function_call items with call_id, output_text text."""
    reply = {"object": "response", "status": "completed", "output": [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "need weather"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "One moment."}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "get_weather",
         "arguments": '{"city": "Lima"}'}]}
    message = from_openai_response(reply)
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [("call_9", "get_weather", {"city": "Lima"})]
    assert message.text == "One moment." and message.reasoning == "need weather"


def test_gemini_function_call_parts():
    """Gemini: functionCall parts with args objects; MAX_TOKENS means length."""
    reply = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Checking."}, {"functionCall": {"name": "get_weather", "args": {"city": "Lima"}}}]},
        "finishReason": "STOP"}], "usageMetadata": {"totalTokenCount": 9}}
    message = from_openai_response(reply)
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("get_weather", {"city": "Lima"})]
    assert message.text == "Checking." and message.usage == {"totalTokenCount": 9}


def test_legacy_function_call_is_read():
    """OpenAI legacy functions: message.function_call."""
    reply = {"choices": [{"index": 0, "finish_reason": "function_call", "message": {
        "role": "assistant", "content": None, "function_call": {"name": "get_time", "arguments": "{}"}}}]}
    assert [(c.name, c.id) for c in extract_tool_calls(reply)] == [("get_time", "call_0")]


def test_split_reasoning_handles_an_opening_tag_in_the_prompt():
    """Some templates put <think> in the prompt: the reply starts inside the reasoning."""
    assert split_reasoning("plan it</think>Answer") == ("Answer", "plan it")
    assert split_reasoning("<think>unfinished") == ("", "unfinished")


def test_explicit_markup_with_an_unknown_name_is_still_a_call():
    """Tags are a clear intent to call: the call is returned (the loop answers "unknown tool")."""
    _, calls = calls_of(chat_text('<tool_call>{"name": "nope", "arguments": {}}</tool_call>'))
    assert calls == [("nope", {})]


def test_find_text_calls_without_names_reads_only_explicit_markup():
    """names=None: bare JSON is prose, markup is a call."""
    assert find_text_calls('{"name": "get_time", "arguments": {}}')[1] == []
    assert len(find_text_calls('<tool_call>{"name": "get_time", "arguments": {}}</tool_call>')[1]) == 1


def test_history_after_text_calls_is_valid_openai_json():
    """Recognised text calls are written back as structured tool_calls with JSON-string arguments."""
    message = from_openai_response(chat_text('[get_weather(city="Lima")]'), tool_names=NAMES)
    wire = to_openai(message)
    assert wire["content"] is None and json.loads(wire["tool_calls"][0]["function"]["arguments"]) == {"city": "Lima"}
