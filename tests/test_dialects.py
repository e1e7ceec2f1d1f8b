"""Provider dialects round-trip (issue 15, point 4): one test per row of "Provider dialects" (docs/guides/models.rst).

What a provider attaches to its reply and needs back goes back unchanged on the next request, per
call, streamed or not; reasoning is shown once. The replies come from tests/servers/raw_llm_peer.py
through the real HTTP client (``openai_chat``): no Gemini, OpenRouter, DeepSeek or LiteLLM proxy
runs here, so the peer sends the shapes their documentation and the cited reports show. Each
test reads the second request's body as the provider would receive it, and checks it with the
strict oracle (``dialects=True``: these fields are allowed only because the provider put them there).
"""

import json

from yiemagent import Agent, openai_chat
from yiemagent.formats.llm import merge_chunks
from yiemagent.messages.formatting import OpenAIFormatter
from yiemagent.testing import EventRecorder

from . import strict_openai
from .helpers import get_weather
from .servers.raw_llm_peer import Reply, chunk

SIGNATURE = "CtcBAdHtim9+signature/of/the/thought=="


def reply(message, finish_reason="tool_calls"):
    return Reply(json_body={"id": "r1", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", **message}}]})


def weather_call(call_id="call_1", city="Paris", **extra):
    return {"id": call_id, "type": "function", "function": {"name": "get_weather",
                                                            "arguments": json.dumps({"city": city})}, **extra}


def sent_assistant(peer, request=1):
    """The assistant message of the tool turn, as the next request carried it (validated)."""
    body = peer.requests[request]["body"]
    strict_openai.validate_request(body["messages"], body.get("tools"), dialects=True)
    return next(m for m in body["messages"] if m["role"] == "assistant")


def run(peer, stream=False, **agent_kwargs):
    agent = Agent(openai_chat(peer.base_url, "m", stream=stream, timeout_seconds=10), tools=[get_weather],
                  **agent_kwargs)
    answer = agent.ask("weather in Paris?", timeout_seconds=20)
    assert answer["status"] == "completed", answer
    return agent, answer


GEMINI_EXTRA = {"extra_content": {"google": {"thought_signature": SIGNATURE}}}


# --------------------------------------------------------------------------- Gemini 3 / Vertex


def test_pi_6733_gemini_thought_signature_on_each_tool_call_goes_back(peer):
    """earendil-works/pi #6733, langroid PR #969, Roo-Code #9499: Gemini 3 (OpenAI-compatible) puts
    ``extra_content.google.thought_signature`` on each tool call and answers 400 when the next
    request lacks it. Before: dropped (the call was rebuilt from id/name/arguments). After: it goes
    back unchanged on its own call, and survives a saved state.
    """
    second = weather_call("call_2", "Lima", extra_content={"google": {"thought_signature": "second-sig"}})
    peer.script(reply({"content": None, "tool_calls": [weather_call(**GEMINI_EXTRA), second]}),
                reply({"content": "done"}, "stop"))
    agent, _ = run(peer)
    calls = sent_assistant(peer)["tool_calls"]
    assert calls[0]["extra_content"] == GEMINI_EXTRA["extra_content"]
    assert calls[1]["extra_content"] == {"google": {"thought_signature": "second-sig"}}
    restored = Agent.from_state(agent.state_to_json(), agent.config.llm_call)
    assert restored.history[1].tool_calls[0].extra == GEMINI_EXTRA


def test_pi_7745_gemini_thought_signature_streamed_goes_back(peer):
    """earendil-works/pi PR #7745 (refs #6733): streamed, the signature arrives in the call's delta, ``google`` or
    ``vertex`` namespace kept as sent. Before: the stream merger dropped every unknown delta key.
    """
    delta = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {
        "name": "get_weather", "arguments": ""}, "extra_content": {"vertex": {"thought_signature": SIGNATURE}}}]}
    peer.script(Reply(sse=[chunk(delta), chunk({"tool_calls": [{"index": 0, "function": {
        "arguments": '{"city": "Paris"}'}}]}), chunk(finish_reason="tool_calls")]),
        Reply(sse=[chunk({"content": "done"}), chunk(finish_reason="stop")]))
    run(peer, stream=True)
    call = sent_assistant(peer)["tool_calls"][0]
    assert call["extra_content"] == {"vertex": {"thought_signature": SIGNATURE}}
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}


def test_eino_621_bare_thought_signature_on_the_tool_call_goes_back(peer):
    """cloudwego/eino #621: a gateway puts ``thought_signature`` directly on the tool call."""
    peer.script(reply({"content": None, "tool_calls": [weather_call(thought_signature=SIGNATURE)]}),
                reply({"content": "done"}, "stop"))
    run(peer)
    assert sent_assistant(peer)["tool_calls"][0]["thought_signature"] == SIGNATURE


def test_gemini_native_thought_signature_becomes_the_openai_compatible_field():
    """A ``generateContent`` reply (``thoughtSignature`` on the functionCall part) keeps it in the
    same place the OpenAI-compatible endpoint uses, so an adapter finds it on the call.
    """
    from yiemagent import parse_response

    message = parse_response({"candidates": [{"content": {"parts": [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": SIGNATURE}]},
        "finishReason": "STOP"}]})
    assert message.tool_calls[0].extra == GEMINI_EXTRA
    assert message.tool_calls[0].to_openai()["extra_content"] == GEMINI_EXTRA["extra_content"]


# --------------------------------------------------------------------------- OpenRouter


DETAILS = [{"type": "reasoning.text", "text": "Need the weather.", "format": "anthropic-claude-v1", "index": 0,
            "signature": "sig-0"},
           {"type": "reasoning.encrypted", "data": "opaque==", "format": "anthropic-claude-v1", "index": 1}]


def test_langchainjs_11699_openrouter_reasoning_details_go_back_unmodified(peer):
    """Langchainjs #11699, Roo-Code #10307: OpenRouter asks for ``reasoning_details`` back unmodified
    with the assistant message of a tool loop (Gemini 3 via OpenRouter answers 400 without them).
    Before: kept in ``extra`` but never sent. After: sent as they came; the reasoning text is shown
    once (from ``reasoning``, not again from the details).
    """
    peer.script(reply({"content": None, "reasoning": "Need the weather.", "reasoning_details": DETAILS,
                       "tool_calls": [weather_call()]}), reply({"content": "done"}, "stop"))
    agent, _ = run(peer)
    sent = sent_assistant(peer)
    assert sent["reasoning_details"] == DETAILS
    assert agent.history[1].reasoning == "Need the weather."


def test_openrouter_ai_sdk_provider_122_streamed_reasoning_details_merge_and_show_once(peer):
    """OpenRouterTeam/ai-sdk-provider #122, Effect-TS #6059: each delta carries the same text in
    ``reasoning`` and in ``reasoning_details``; shown once, and the details merged by ``index``.
    """
    pieces = ["Need ", "the weather."]
    events = [chunk({"role": "assistant", "reasoning": p, "reasoning_details": [
        {"type": "reasoning.text", "text": p, "format": "unknown", "index": 0}]}) for p in pieces]
    events += [chunk({"reasoning_details": [{"type": "reasoning.text", "signature": "sig-0", "index": 0}]}),
               chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {
                   "name": "get_weather", "arguments": '{"city": "Paris"}'}}]}), chunk(finish_reason="tool_calls")]
    peer.script(Reply(sse=events), Reply(sse=[chunk({"content": "done"}), chunk(finish_reason="stop")]))
    recorder = EventRecorder()
    agent = Agent(openai_chat(peer.base_url, "m", stream=True, timeout_seconds=10), tools=[get_weather],
                  event_sink=recorder)
    agent.ask("weather?", timeout_seconds=20)
    shown = "".join(e.delta for e in recorder.events if getattr(e, "delta_type", None) == "reasoning")
    assert shown == "Need the weather."
    assert sent_assistant(peer)["reasoning_details"] == [
        {"type": "reasoning.text", "text": "Need the weather.", "format": "unknown", "index": 0, "signature": "sig-0"}]


# --------------------------------------------------------------------------- Anthropic thinking via LiteLLM


BLOCKS = [{"type": "thinking", "thinking": "Need the weather.", "signature": "EqQBCkYIBRgCIkD"},
          {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}]


def test_openai_agents_4155_litellm_thinking_blocks_go_back_with_signatures(peer):
    """openai-agents-python PR #4155: a LiteLLM proxy in front of Claude returns ``thinking_blocks``
    (signed, redacted too) next to ``reasoning_content``; Anthropic refuses a tool-use continuation
    whose thinking is not replayed unchanged. Before: dropped. After: sent back as they came.
    """
    peer.script(reply({"content": None, "reasoning_content": "Need the weather.", "thinking_blocks": BLOCKS,
                       "tool_calls": [weather_call()]}), reply({"content": "done"}, "stop"))
    agent, _ = run(peer)
    assert sent_assistant(peer)["thinking_blocks"] == BLOCKS
    assert agent.history[1].reasoning == "Need the weather."


def test_litellm_8964_streamed_thinking_blocks_join_and_keep_the_late_signature():
    """Litellm #8964: streamed, every delta carries a ``thinking_blocks`` piece, the signature comes
    last; open-webui PR #29860: LiteLLM repeats the whole thinking text in the signed block. The
    merged block has the text once and the signature.
    """
    texts = ["The user has starte", "d the conversation"]
    chunks = [chunk({"reasoning_content": t, "thinking_blocks": [{"type": "thinking", "thinking": t,
                                                                    "signature": None}]}) for t in texts]
    chunks.append(chunk({"thinking_blocks": [{"type": "thinking", "thinking": "".join(texts),
                                              "signature": "sig=="}]}, finish_reason="stop"))
    message = merge_chunks(chunks)["choices"][0]["message"]
    assert message["thinking_blocks"] == [{"type": "thinking", "thinking": "".join(texts), "signature": "sig=="}]
    assert message["reasoning_content"] == "".join(texts)


def test_anthropic_native_thinking_blocks_keep_their_signature():
    """An Anthropic Messages reply returned by a user's ``llm_call``: the signed thinking block and a
    redacted one are kept (as LiteLLM's ``thinking_blocks``) and sent back; the text shows once.
    """
    from yiemagent import parse_response

    message = parse_response({"role": "assistant", "stop_reason": "tool_use", "content": [
        {**BLOCKS[0]}, {**BLOCKS[1]},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]})
    assert message.extra["thinking_blocks"] == BLOCKS and message.reasoning == "Need the weather."
    sent = OpenAIFormatter()([message])[0]
    assert sent["thinking_blocks"] == BLOCKS


# --------------------------------------------------------------------------- DeepSeek


def test_continue_10193_deepseek_reasoning_content_goes_back_after_a_tool_turn(peer):
    """Continue #10193, opencode #24722: DeepSeek thinking mode answers 400 "Missing
    reasoning_content field in the assistant message" when a tool turn's ``reasoning_content`` is
    not sent back (its docs: turns with tool calls must pass it back in all later requests). An
    empty ``reasoning_content`` must come back too.
    """
    peer.script(reply({"content": None, "reasoning_content": "", "tool_calls": [weather_call()]}),
                reply({"content": None, "reasoning_content": "Then the next.", "tool_calls": [
                    weather_call("call_2", "Lima")]}),
                reply({"content": "done"}, "stop"))
    run(peer)
    body = peer.requests[2]["body"]
    strict_openai.validate_request(body["messages"], body["tools"])
    assistants = [m for m in body["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in assistants] == ["", "Then the next."]


def test_kimi_code_3928_mirrored_reasoning_is_shown_once(peer):
    """MoonshotAI/kimi-code #3928 (StepFun, SGLang): every delta carries the same reasoning text in
    ``reasoning_content`` and in ``reasoning``. Before: shown and stored twice. After: once.
    """
    events = [chunk({"role": "assistant", "reasoning_content": p, "reasoning": p}) for p in ("The", " user")]
    peer.script(Reply(sse=[*events, chunk({"content": "hi"}), chunk(finish_reason="stop")]))
    recorder = EventRecorder()
    agent = Agent(openai_chat(peer.base_url, "m", stream=True, timeout_seconds=10), event_sink=recorder)
    agent.ask("hello", timeout_seconds=20)
    shown = "".join(e.delta for e in recorder.events if getattr(e, "delta_type", None) == "reasoning")
    assert shown == "The user"
    assert agent.history[1].reasoning == "The user"


def test_send_provider_fields_false_leaves_them_out_for_another_provider(peer):
    """A history continued with a provider that rejects foreign fields: the option leaves them out,
    and the request passes the strict oracle without ``dialects``.
    """
    peer.script(reply({"content": None, "reasoning_details": DETAILS, "tool_calls": [weather_call(**GEMINI_EXTRA)]}),
                reply({"content": "done"}, "stop"))
    run(peer, format_messages=OpenAIFormatter(send_provider_fields=False))
    body = peer.requests[1]["body"]
    strict_openai.validate_request(body["messages"], body["tools"])


def test_hermes_agent_3116_think_tags_mirroring_reasoning_content_show_once():
    """hermes-agent PR #3116, LLMKube #1627: the reasoning comes in ``reasoning_content`` and again as
    ``<think>`` in the content; the answer is the rest, the reasoning is kept once.
    """
    from yiemagent import parse_response

    message = parse_response({"choices": [{"message": {"role": "assistant", "reasoning_content": "Greet back.",
                                                       "content": "<think>Greet back.</think>Hello!"}}]})
    assert message.text == "Hello!" and message.reasoning == "Greet back."


def test_litellm_16895_thought_signature_in_the_tool_call_id_is_never_shortened(peer):
    """BerriAI/litellm PR #16895 (and #18374): LiteLLM in front of Gemini 3 appends the thought
    signature to the tool-call id (``call_x__thought__<signature>``) so that clients send it back;
    Gemini answers 400 without it. Before: the guard shortened every id over 40 characters (OpenAI's
    limit), cutting the signature. After: such an id goes back whole, its result answers it.
    """
    long_id = "call_3f2a__thought__" + SIGNATURE * 4
    peer.script(reply({"content": None, "tool_calls": [weather_call(long_id)]}), reply({"content": "done"}, "stop"))
    run(peer)
    body = peer.requests[1]["body"]
    assert sent_assistant(peer)["tool_calls"][0]["id"] == long_id
    assert [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"] == [long_id]


def test_llm_mistral_38_magistral_thinking_chunks_are_read_as_text():
    """simonw/llm-mistral #38 (PR #39), vercel/ai #8012: Magistral returns ``{"type": "thinking",
    "thinking": [{"type": "text", "text": ...}]}`` chunks. Before: the reasoning was the list's repr.
    After: its text.
    """
    from yiemagent import parse_response

    message = parse_response({"choices": [{"message": {"role": "assistant", "content": [
        {"type": "thinking", "thinking": [{"type": "text", "text": "Two plus two."}]},
        {"type": "text", "text": "4"}]}, "finish_reason": "stop"}]})
    assert (message.reasoning, message.text) == ("Two plus two.", "4")


def test_roo_code_8522_magistral_think_tags_are_reasoning():
    """RooCodeInc/Roo-Code #8522: local Magistral (Ollama) writes ``[THINK]...[/THINK]`` in the text.
    Before: the tags and the thinking were the answer. After: reasoning, and the answer is the rest.
    """
    from yiemagent import parse_response

    message = parse_response({"message": {"role": "assistant", "content": "[THINK]Greet.[/THINK]Hello!"},
                              "done": True})
    assert (message.reasoning, message.text) == ("Greet.", "Hello!")
