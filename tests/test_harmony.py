"""gpt-oss harmony format (issue 15, point 4): calls in text, names with leaked tokens, the analysis channel.

The replies come from tests/servers/raw_llm_peer.py through the real HTTP client: the texts are
those the cited reports captured from vLLM, TensorRT-LLM, llama.cpp and MLX servers serving gpt-oss
without a working harmony parser (no gpt-oss runs here).
"""

import json

from yiemagent import Agent, openai_chat, parse_response, tool

from . import strict_openai
from .helpers import get_weather
from .servers.raw_llm_peer import Reply, chunk

ANALYSIS = "<|channel|>analysis<|message|>We need to use the get_weather function. Provide city \"Berlin\".<|end|>"
CALL = ("<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        "<|message|>{\"city\":\"Berlin\"}<|call|>")


def text_reply(content, finish_reason="stop"):
    return Reply(json_body={"id": "r", "object": "chat.completion", "model": "gpt-oss", "choices": [
        {"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", "content": content}}]})


def test_imp_1716_harmony_call_in_content_becomes_a_tool_call(peer):
    """kekzl/imp #1716 (PR #1719), lablup/mlxcel #654: the server hands gpt-oss's channel markup back
    as ``content``, ``finish_reason: "stop"``. Before: the markup was the answer and no tool ran.
    After: the commentary message to ``functions.get_weather`` is a call, the analysis is reasoning.
    """
    peer.script(text_reply(ANALYSIS + CALL), text_reply("It is sunny in Berlin."))
    agent = Agent(openai_chat(peer.base_url, "gpt-oss", timeout_seconds=10), tools=[get_weather])
    answer = agent.ask("weather in Berlin?", timeout_seconds=20)
    assert answer["content"] == "It is sunny in Berlin."
    body = peer.requests[1]["body"]
    strict_openai.validate_request(body["messages"], body["tools"])
    tool_message = next(m for m in body["messages"] if m["role"] == "tool")
    assert tool_message["content"] == "sunny in Berlin"
    call = agent.history[1].tool_calls[0]
    assert (call.name, call.arguments) == ("get_weather", {"city": "Berlin"})
    assert "<|" not in agent.history[1].reasoning and "get_weather function" in agent.history[1].reasoning


def test_vllm_32587_harmony_suffix_on_a_streamed_tool_name_is_stripped(peer):
    """VLLM #32587 (PR #32633): streamed ``function.name`` values came back as
    ``query_dataset<|channel|>commentary``. Before: "Unknown tool". After: the suffix is stripped
    before lookup, the tool runs, the name sent back is the registered one (with a repair note).
    """
    peer.script(Reply(sse=[
        chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {
            "name": "get_weather<|channel|>commentary", "arguments": '{"city": "Oslo"}'}}]}),
        chunk(finish_reason="tool_calls")]), Reply(sse=[chunk({"content": "done"}), chunk(finish_reason="stop")]))
    agent = Agent(openai_chat(peer.base_url, "gpt-oss", stream=True, timeout_seconds=10), tools=[get_weather])
    agent.ask("weather in Oslo?", timeout_seconds=20)
    body = peer.requests[1]["body"]
    strict_openai.validate_request(body["messages"], body["tools"])
    sent = next(m for m in body["messages"] if m["role"] == "assistant")["tool_calls"][0]
    assert sent["function"]["name"] == "get_weather"
    assert [m["content"] for m in body["messages"] if m["role"] == "tool"] == ["sunny in Oslo"]
    assert "harmony" in agent.history[1].tool_calls[0].note


def test_sidekick_75_analysis_channel_never_reaches_the_user_as_the_answer(peer):
    """johnbean393/Sidekick #75 (and TensorRT-LLM #9256, cited by issue 15): analysis then final in
    ``content``; the answer is the final channel only, the analysis is reasoning.
    """
    peer.script(text_reply("<|channel|>analysis<|message|>User says hi. Reply politely.<|end|>"
                           "<|start|>assistant<|channel|>final<|message|>Hello! How can I help?<|return|>"))
    agent = Agent(openai_chat(peer.base_url, "gpt-oss", timeout_seconds=10))
    answer = agent.ask("hi", timeout_seconds=20)
    assert answer["content"] == "Hello! How can I help?"
    assert agent.history[1].reasoning == "User says hi. Reply politely."


def test_macprovider_743_tokens_stripped_but_channel_words_kept(peer):
    """Augustas11/macprovider #743, TensorRT-LLM #10143: the special tokens are stripped but their
    words stay: ``analysisWe need ... assistantfinalfour``. The answer is ``four``.
    """
    peer.script(text_reply('analysisWe need to answer "What is 2+2?" The answer is "four".assistantfinalfour'))
    agent = Agent(openai_chat(peer.base_url, "gpt-oss", timeout_seconds=10))
    assert agent.ask("2+2? one word", timeout_seconds=20)["content"] == "four"
    assert "The answer is" in agent.history[1].reasoning


def test_omlx_2143_a_recipient_in_the_analysis_channel_is_not_a_call():
    """jundot/omlx PR #2143: only a ``commentary`` message to ``functions.*`` is a call; a leftover
    recipient on an analysis message is reasoning.
    """
    message = parse_response({"choices": [{"message": {"role": "assistant", "content":
        "<|channel|>analysis to=functions.get_weather<|message|>maybe call it<|end|>"
        "<|start|>assistant<|channel|>final<|message|>No call needed.<|return|>"}}]}, tool_names={"get_weather"})
    assert message.tool_calls == [] and message.text == "No call needed."


def test_harmony_recipient_before_the_channel_and_a_call_without_end_token():
    """The recipient may sit in the role part (``<|start|>assistant to=functions.x<|channel|>``); a
    reply cut before ``<|call|>`` still gives the call unless the token limit cut it.
    """
    text = '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Rome"}'
    message = parse_response({"choices": [{"message": {"role": "assistant", "content": text},
                                           "finish_reason": "stop"}]})
    assert [(c.name, c.arguments, c.error) for c in message.tool_calls] == [("get_weather", {"city": "Rome"}, None)]
    cut = parse_response({"choices": [{"message": {"role": "assistant", "content": text},
                                       "finish_reason": "length"}]})
    assert cut.tool_calls[0].error and cut.tool_calls[0].arguments == {}


def test_two_harmony_calls_and_text_without_markup_is_left_alone():
    from yiemagent.formats.harmony import split_harmony

    reply = split_harmony(ANALYSIS + CALL + CALL.replace("Berlin", "Paris"))
    assert [(name, json.loads(body)) for name, body, _ in reply.calls] == [
        ("get_weather", {"city": "Berlin"}), ("get_weather", {"city": "Paris"})]
    assert split_harmony("The analysis shows <b>bold</b> results.") is None
    assert split_harmony("an assistantfinal word in prose") is None


def test_vllm_32587_streamed_harmony_content_is_previewed_by_channel(peer):
    """VLLM #32587 ("special tokens leak into ... responses", streaming), macprovider #743 ("the
    analysis text arrives as normal content deltas"): one token per chunk; the ``message_update``
    text deltas carry only the final channel, the analysis goes out as reasoning deltas. Before:
    the raw markup and the analysis were previewed as answer text.
    """
    from yiemagent.testing import EventRecorder

    tokens = ["<|channel|>", "analysis", "<|message|>", "User says", " hi.", "<|end|>", "<|start|>", "assistant",
              "<|channel|>", "final", "<|message|>", "Hello", "!", "<|return|>"]
    peer.script(Reply(sse=[*(chunk({"content": t}) for t in tokens), chunk(finish_reason="stop")]))
    recorder = EventRecorder()
    agent = Agent(openai_chat(peer.base_url, "gpt-oss", stream=True, timeout_seconds=10), event_sink=recorder)
    assert agent.ask("hi", timeout_seconds=20)["content"] == "Hello!"
    deltas = [(e.delta_type, e.delta) for e in recorder.events if getattr(e, "delta_type", None)]
    assert "".join(d for kind, d in deltas if kind == "text") == "Hello!"
    assert "".join(d for kind, d in deltas if kind == "reasoning") == "User says hi."


# ------------------------------------------------------------------ quoted markup is prose (issue 15 trial)

def _delete_file_agent(text: str) -> tuple[dict, list[str]]:
    ran: list[str] = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    replies = iter([{"role": "assistant", "content": text}, {"role": "assistant", "content": "second"}])
    agent = Agent(lambda messages, tools: next(replies), tools=[delete_file])
    return agent.ask("q", timeout_seconds=10), ran


def test_unsloth_8312_harmony_tokens_quoted_in_markdown_code_are_prose_and_run_nothing():
    """unslothai/unsloth PR #8312 (a tool call quoted in markdown code must stay text). A reply that
    explains the harmony format in inline code and shows a call in a fenced block. Before: the answer
    was rewritten to ``second`` (the quoted call ran ``delete_file('/etc/x')``); inline code alone
    came back as ``Hello``. After: the reply is the answer, verbatim, and nothing runs.
    """
    text = ("gpt-oss replies look like `<|channel|>final<|message|>Hello<|return|>`. A call looks like:\n```\n"
            "<|channel|>commentary to=functions.delete_file <|constrain|>json<|message|>{\"path\": \"/etc/x\"}"
            "<|call|>\n```")
    answer, ran = _delete_file_agent(text)
    assert (answer["content"], ran) == (text, [])
    inline = "Mention `<|channel|>final<|message|>Hello<|return|>` only."
    assert parse_response({"choices": [{"message": {"role": "assistant", "content": inline}}]}).text == inline


def test_ds2api_267_a_hermes_tool_call_inside_a_fenced_block_is_text_for_every_markup_format():
    """CJackHwang/ds2api PR #267 (a ``<tool_call>`` inside a fenced block executed an example). The
    same fenced example in each explicit-markup format (Hermes, LM Studio, Mistral, Llama python_tag,
    Qwen3 XML) is text. Before: every one ran ``delete_file``. After: none runs; the text is kept.
    """
    calls = ['<tool_call>{"name": "delete_file", "arguments": {"path": "/etc/x"}}</tool_call>',
             '[TOOL_REQUEST]{"name": "delete_file", "arguments": {"path": "/etc/x"}}[END_TOOL_REQUEST]',
             '[TOOL_CALLS][{"name": "delete_file", "arguments": {"path": "/etc/x"}}]',
             '<|python_tag|>{"name": "delete_file", "parameters": {"path": "/etc/x"}}',
             "<tool_call><function=delete_file><parameter=path>/etc/x</parameter></function></tool_call>"]
    for call in calls:
        for text in (f"A call looks like:\n```\n{call}\n```", f"A call looks like:\n~~~text\n{call}\n~~~ ok",
                     f"Write `{call}` to call it."):
            message = parse_response({"choices": [{"message": {"role": "assistant", "content": text}}]},
                                     tool_names={"delete_file"})
            assert (message.tool_calls, message.text) == ([], text), (call, text)


def test_gptme_1472_a_quoted_call_is_text_and_a_real_call_after_it_still_runs():
    """gptme/gptme PR #1472 (calls in markdown codeblocks were parsed): a quoted example, then the
    model's own call outside code. Before: both ran. After: only the real one (``/tmp/y``), and the
    quote stays in the text; a real harmony reply with inline code in its answer still reads.
    """
    text = ('Example: `<tool_call>{"name": "delete_file", "arguments": {"path": "/etc/x"}}</tool_call>`\n'
            '<tool_call>{"name": "delete_file", "arguments": {"path": "/tmp/y"}}</tool_call>')
    message = parse_response({"choices": [{"message": {"role": "assistant", "content": text}}]},
                             tool_names={"delete_file"})
    assert [c.arguments for c in message.tool_calls] == [{"path": "/tmp/y"}]
    assert "/etc/x" in message.text and "/tmp/y" not in message.text
    harmony = ANALYSIS + "<|start|>assistant<|channel|>final<|message|>Run `ls -l` here.<|return|>"
    assert parse_response({"choices": [{"message": {"role": "assistant", "content": harmony}}]}).text == \
        "Run `ls -l` here."


def test_markdown_code_ranges_follow_commonmark_fences_and_spans():
    """Unclosed fences run to the end; a backtick fence's info string holds no backtick (then it is an
    inline span); an unmatched backtick run is literal; a longer closing fence closes.
    """
    from yiemagent.formats.markdown_code import code_ranges

    text = "a `x` b ``y`` c ` d\n````\ncode\n`````\ne ```json {} ``` f\n~~~\nopen"
    ranges = code_ranges(text)
    inside = {text[i] for i in range(len(text)) if i in ranges}
    assert "x" in inside and "y" in inside and "code" in "".join(t for i, t in enumerate(text) if i in ranges)
    assert text.index("d") not in ranges and text.index("e ") not in ranges and text.index("f\n") not in ranges
    assert text.index("{") in ranges and text.index("open") in ranges
    assert not code_ranges("no code here") and not code_ranges("a `` b ` c")  # unmatched runs are literal
    many = "".join("x" + "`" * n for n in range(1, 400)) * 3  # ~240,000 backticks: still linear
    assert code_ranges(many)
