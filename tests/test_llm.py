"""The OpenAI-compatible adapter (yiemagent.models.openai_chat); real-server cases are in test_e2e.py."""

from yiemagent.formats.llm import _merge_chunks
from yiemagent.messages.tool_calls import parse_response
from yiemagent.models.openai_chat import openai_chat


def test_request_body_leaves_tool_choice_out_when_no_tools_are_offered():
    """Servers reject tool_choice without tools; the final tool-free turn must still work."""
    llm_call = openai_chat("http://127.0.0.1:1/v1", "m", tool_choice="required", temperature=0)
    without = llm_call.request_body([{"role": "user", "content": "hi"}], [])
    assert "tool_choice" not in without and "tools" not in without and without["temperature"] == 0
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    with_tools = llm_call.request_body([{"role": "user", "content": "hi"}], tools)
    assert with_tools["tool_choice"] == "required" and with_tools["tools"] == tools


def test_the_api_key_never_appears_in_repr():
    """Secrets stay out of reprs (and so out of logs that print the adapter)."""
    llm_call = openai_chat("https://api.example.org/v1", "gpt", api_key="sk-secret-123")
    assert "sk-secret" not in repr(llm_call) and "sk-secret" not in str(vars(llm_call).get("url"))


def test_streamed_tool_call_deltas_merge_into_one_reply():
    """Recorded OpenAI streaming chunks (hosted API shape, not producible by a local server here):
    the id and name arrive once, the arguments in pieces, usage in the last chunk.
    """
    chunks = [
        {"id": "chatcmpl-1", "model": "gpt", "choices": [{"index": 0, "delta": {"role": "assistant", "content": None,
         "tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                         "function": {"name": "get_weather", "arguments": ""}}]}, "finish_reason": None}]},
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": '{"city": "Li'}}]}, "finish_reason": None}]},
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": 'ma"}'}},
            {"index": 1, "id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
            "finish_reason": None}]},
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}},
    ]
    reply = _merge_chunks(chunks)
    message = parse_response(reply)
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call_a", "get_weather", {"city": "Lima"}), ("call_b", "get_time", {})]
    assert message.finish_reason == "tool_calls" and message.usage["total_tokens"] == 14


def test_streamed_text_and_reasoning_merge():
    """Text and reasoning_content deltas are concatenated in order."""
    chunks = [{"choices": [{"index": 0, "delta": {"reasoning_content": "think "}}]},
              {"choices": [{"index": 0, "delta": {"reasoning_content": "more", "content": "Hel"}}]},
              {"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]}]
    message = parse_response(_merge_chunks(chunks))
    assert message.text == "Hello" and message.reasoning == "think more" and message.finish_reason == "stop"
