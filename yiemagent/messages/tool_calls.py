"""Tool-call extraction: every reply shape real servers send, to ``ToolCall`` objects.

``parse_response(response)`` (also exported as ``from_openai_response``) turns
an ``llm_call`` reply into an ``AssistantMessage``; ``extract_tool_calls``
returns only its calls. One small recogniser per wire shape answers "mine or
not"; the first that answers wins::

    {"choices": [{"message": {...}, "finish_reason": ...}]}     OpenAI Chat Completions (+ legacy function_call)
    {"object": "response", "output": [{"type": "function_call", "call_id", "name", "arguments"}]}
                                                                OpenAI Responses API
    {"role": "assistant", "content": [{"type": "tool_use", "id", "name", "input"}], "stop_reason": ...}
                                                                Anthropic Messages
    {"candidates": [{"content": {"parts": [{"functionCall": {"name", "args"}}]}}]}
                                                                Gemini generateContent
    {"message": {"role": "assistant", "tool_calls": [...]}, "done": true}
                                                                Ollama /api/chat (object arguments, no ids)
    {"role": "assistant", "tool_calls": [...]}                  bare message (LM Studio, vLLM, llama.cpp)

Content blocks of type ``tool_calls`` / ``tool_use`` / ``function_call`` are
read in any message. When a reply has no structured calls, calls written in
its text are read (``yiemagent.formats.text_tool_calls``), gated on ``tool_names``.

Rules:

* ``arguments``: a JSON string, an object, or empty / whitespace / ``null``
  (all ``{}``). Unambiguous repairs (a trailing comma, missing final braces)
  are applied and noted in ``ToolCall.note``; glued objects (``{..}{..}``) are
  split into separate calls when every part parses. Anything else, and any
  call cut off in a reply cut short (``finish_reason`` ``"length"``, or
  ``"incomplete"`` for a stream that ended without one: no repair is tried),
  gets ``arguments == {}``, an
  ``error`` telling the model what was wrong, and ``raw_arguments``;
* ids: missing, empty and duplicate ids (also ids already in the history)
  get unique ids (``call_0``, ``call_x_2`` ...); given ids are kept;
* ``finish_reason`` is advisory: calls present with ``"stop"`` are returned;
* reasoning (``reasoning_content``, ``reasoning``, ``thinking`` blocks,
  ``<think>`` in text, gpt-oss's analysis channel) is kept as
  ``ReasoningContent``, once (a text mirrored in two keys or repeated in
  ``<think>`` is kept once), and never searched for calls;
* provider fields (``yiemagent.formats.dialects``) stay on the message
  (``AssistantMessage.extra``) and on each call (``ToolCall.extra``); a
  Gemini ``thoughtSignature`` and Anthropic signed thinking blocks are put
  where the OpenAI-compatible dialects carry them;
* gpt-oss harmony markup in text is read (``yiemagent.formats.harmony``), and a
  harmony suffix on a tool name is stripped (noted in ``ToolCall.note``);
* the result can always be saved: ``finish_reason`` is text (``7`` ->
  ``"7"``) and every value strict JSON (``yiemagent.textpolicy.json_safe``
  replaces NaN, lone surrogates, bytes, non-string keys).

Spec: OpenAI Chat Completions and Responses; Anthropic Messages; Gemini
``generateContent``; Ollama ``/api/chat``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from .._internal.jsonload import DEFAULT_MAX_DEPTH, nesting_exceeds
from ..exceptions import ToolCallFormatError
from ..formats.arguments import parse_arguments, parse_arguments_noted
from ..formats.harmony import clean_tool_name, split_harmony
from ..formats.text_tool_calls import TextCall, find_text_calls, split_reasoning
from ..textpolicy import decode_strict
from . import AssistantMessage, ReasoningContent, TextContent, ToolCall
from .normalise import finish_reason_text, storable_reply

__all__ = ["extract_tool_calls", "parse_arguments", "parse_arguments_noted", "parse_response"]



def _split_glued(raw: Any) -> list[dict[str, Any]] | None:
    """The objects ``raw`` is made of (``'{"a":1}{"a":2}'`` -> two), only if the whole text is such objects.

    One object: the arguments already parsed (strict JSON), so they are not parsed again.
    """
    if not isinstance(raw, str) or "}" not in raw:
        return None
    text, pos, parts = raw.strip(), 0, []
    while pos < len(text):
        try:
            value, pos = decode_strict(text, pos)
        except (ValueError, RecursionError):
            return None
        if nesting_exceeds(value, DEFAULT_MAX_DEPTH):
            return None
        if not isinstance(value, dict):
            return None
        parts.append(value)
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return parts or None


# --------------------------------------------------------------------------- shapes


@dataclass
class _Parsed:
    """What a recogniser read from a reply."""

    text: str = ""
    reasoning: list[ReasoningContent] = field(default_factory=list)
    calls: list[TextCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Unknown keys of the message, kept for the history."""


_MESSAGE_KEYS = {"role", "content", "tool_calls", "function_call", "reasoning_content", "reasoning", "thinking"}
_CALL_KEYS = {"id", "type", "function", "index"}
"""Keys of an OpenAI tool call yiemagent reads; the others are the provider's (``ToolCall.extra``)."""


def _openai_calls(calls: Any, raw: Any) -> list[TextCall]:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise ToolCallFormatError("tool_calls must be a list", raw=raw, format_hint="openai")
    out = []
    for call in calls:
        if not isinstance(call, dict):
            raise ToolCallFormatError(f"a tool call must be an object: {call!r:.80}", raw=raw, format_hint="openai")
        fn = call.get("function")
        call_id = call.get("id") if isinstance(call.get("id"), str) else None
        if isinstance(fn, dict):
            extra = {str(k): v for k, v in call.items() if k not in _CALL_KEYS}
            out.append(TextCall(fn["name"] if isinstance(fn.get("name"), str) else "", fn.get("arguments"),
                                call_id, extra=extra or None))
        elif "name" in call:  # flattened {"id", "name", "arguments"}
            out.append(TextCall(str(call.get("name") or ""), call.get("arguments", call.get("input")), call_id))
        else:
            raise ToolCallFormatError(f"a tool call without a function: {call!r:.80}", raw=raw, format_hint="openai")
    return out


def _from_message(message: dict[str, Any], raw: Any) -> _Parsed:
    """Read one assistant message dict of the chat family (OpenAI, Anthropic, Ollama, bare)."""
    parsed = _Parsed(extra={str(k): v for k, v in message.items() if k not in _MESSAGE_KEYS})
    seen: list[str] = []
    for key in ("reasoning_content", "reasoning", "thinking"):
        value = message.get(key)
        if isinstance(value, str) and value:
            if value in seen:  # a server mirroring one text in two keys (kimi-code #3928): shown once
                continue
            seen.append(value)
            parsed.reasoning.append(ReasoningContent(value, field=key if key != "thinking" else "reasoning_content"))
        elif (value is not None and not isinstance(value, str)) or (value == "" and key == "reasoning_content"):
            parsed.extra[key] = value  # structured reasoning kept as it came; DeepSeek's "" goes back too
    parsed.calls = _openai_calls(message.get("tool_calls"), raw)
    legacy = message.get("function_call")
    if not parsed.calls and isinstance(legacy, dict):  # legacy OpenAI functions
        parsed.calls = [TextCall(str(legacy.get("name") or ""), legacy.get("arguments"))]
    content = message.get("content")
    texts: list[str] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                texts.append(block)
                continue
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind in ("text", "output_text"):
                texts.append(str(block.get("text") or ""))
            elif kind in ("thinking", "reasoning", "redacted_thinking"):
                text = _block_text(block.get("thinking") or block.get("text"))
                if text:
                    parsed.reasoning.append(ReasoningContent(text))
                if "signature" in block or kind == "redacted_thinking":  # Anthropic: needed back, signed
                    kept = parsed.extra.get("thinking_blocks")
                    parsed.extra["thinking_blocks"] = [*(kept if isinstance(kept, list) else []), block]
            elif kind == "tool_use":  # Anthropic Messages
                parsed.calls.append(TextCall(str(block.get("name") or ""), block.get("input"), block.get("id")))
            elif kind == "tool_calls":
                parsed.calls.extend(_openai_calls(block.get("tool_calls"), raw))
            elif kind in ("function_call", "tool_call"):
                fn: dict[str, Any] = block["function"] if isinstance(block.get("function"), dict) else block
                parsed.calls.append(TextCall(str(fn.get("name") or ""), fn.get("arguments", fn.get("input")),
                                             block.get("id") or block.get("call_id")))
    elif content is not None:
        raise ToolCallFormatError(f"message content must be a string, a list or null, not {type(content).__name__}",
                                  raw=raw)
    parsed.text = "".join(texts)
    return parsed


def _block_text(value: Any) -> str:
    """The text of a thinking block's value: a string, or Magistral's list of text chunks."""
    if isinstance(value, list):
        return "".join(str(p.get("text") or "") if isinstance(p, dict) else str(p) for p in value)
    return "" if value is None else str(value)


def _chat_completions(response: dict[str, Any]) -> _Parsed | None:
    if "choices" not in response:
        return None
    choices = response["choices"]
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ToolCallFormatError("the reply has no usable choices[0]", raw=response, format_hint="openai")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ToolCallFormatError("choices[0] has no message object", raw=response, format_hint="openai")
    parsed = _from_message(message, response)
    parsed.finish_reason = choices[0].get("finish_reason")
    return parsed


def _responses_api(response: dict[str, Any]) -> _Parsed | None:
    output = response.get("output")
    if not isinstance(output, list) or "choices" in response:
        return None
    parsed = _Parsed()
    texts = []
    for item in output:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call":
            parsed.calls.append(TextCall(str(item.get("name") or ""), item.get("arguments"),
                                         item.get("call_id") or item.get("id")))
        elif kind == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") in ("output_text", "text"):
                    texts.append(str(part.get("text") or ""))
        elif kind == "reasoning":
            summary = "".join(s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict))
            if summary:
                parsed.reasoning.append(ReasoningContent(summary, field="reasoning"))
    parsed.text = "".join(texts)
    status = response.get("status")
    incomplete = (response.get("incomplete_details") or {}).get("reason") if isinstance(
        response.get("incomplete_details"), dict) else None
    parsed.finish_reason = "length" if incomplete == "max_output_tokens" else status
    return parsed


def _gemini(response: dict[str, Any]) -> _Parsed | None:
    candidates = response.get("candidates")
    if not isinstance(candidates, list):
        return None
    if not candidates or not isinstance(candidates[0], dict):
        raise ToolCallFormatError("the reply has no usable candidates[0]", raw=response, format_hint="gemini")
    content = candidates[0].get("content") or {}
    parsed = _Parsed()
    texts = []
    for part in content.get("parts") or [] if isinstance(content, dict) else []:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            signature = part.get("thoughtSignature", part.get("thought_signature"))
            extra = {"extra_content": {"google": {"thought_signature": signature}}} if signature else None
            parsed.calls.append(TextCall(str(call.get("name") or ""), call.get("args"), call.get("id"), extra=extra))
        elif isinstance(part.get("text"), str):
            if part.get("thought"):
                parsed.reasoning.append(ReasoningContent(part["text"]))
            else:
                texts.append(part["text"])
    parsed.text = "".join(texts)
    reason = candidates[0].get("finishReason")
    parsed.finish_reason = "length" if reason == "MAX_TOKENS" else (reason.lower() if isinstance(reason, str) else None)
    return parsed


def _ollama(response: dict[str, Any]) -> _Parsed | None:
    if not isinstance(response.get("message"), dict):
        return None
    parsed = _from_message(response["message"], response)
    parsed.finish_reason = response.get("done_reason") or response.get("finish_reason")
    return parsed


def _bare_message(response: dict[str, Any]) -> _Parsed | None:
    if not any(k in response for k in ("role", "content", "tool_calls", "function_call")):
        return None
    message = {k: v for k, v in response.items() if k not in ("finish_reason", "stop_reason", "usage", "id",
                                                                "model", "type", "stop_sequence")}
    parsed = _from_message(message, response)
    reason = response.get("finish_reason") or response.get("stop_reason")
    parsed.finish_reason = "length" if reason == "max_tokens" else reason
    return parsed


_SHAPES: tuple[Callable[[dict[str, Any]], _Parsed | None], ...] = (
    _chat_completions,
    _responses_api,
    _gemini,
    _ollama,
    _bare_message,
)


# --------------------------------------------------------------------------- assembly


def _unique(call_id: Any, index: int, taken: set[str]) -> str:
    base = call_id if isinstance(call_id, str) and call_id.strip() else f"call_{index}"
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}_{n}"
    taken.add(candidate)
    return candidate


def _tool_name(name: str, tool_names: Collection[str] | None) -> tuple[str, str | None]:
    """``name`` without gpt-oss harmony debris (vLLM #32587), and a note when it changed."""
    if "<|" not in name and not name.startswith("functions."):
        return name, None
    if tool_names is not None and name in tool_names:
        return name, None
    clean = clean_tool_name(name)
    if clean == name or not clean:
        return name, None
    return clean, f"tool name {name[:80]!r} carried gpt-oss harmony markup; read as {clean!r}"


def _to_tool_calls(calls: list[TextCall], truncated: bool, taken: set[str],
                   tool_names: Collection[str] | None = None) -> list[ToolCall]:
    out: list[ToolCall] = []
    for call in calls:
        call.name, renamed = _tool_name(call.name, tool_names)
        if renamed:
            call.note = "; ".join(n for n in (call.note, renamed) if n)
        glued = None if call.error else _split_glued(call.arguments)
        parsed = glued[0] if glued is not None and len(glued) == 1 else None  # one object, parsed already
        pieces = [TextCall(call.name, part, call.id, note="; ".join(
            n for n in (call.note, "split glued JSON objects into separate calls") if n), extra=call.extra)
                  for part in glued] if glued is not None and len(glued) > 1 else [call]
        for piece in pieces:
            arguments, error, note = parse_arguments_noted(parsed if parsed is not None else piece.arguments,
                                                           repair=not truncated)
            error = piece.error or error
            if not error and not piece.name:
                error = "the tool call has no function name"
            if error and truncated and "cut off" not in error:  # never repaired, never run with defaults
                error = "the call was cut off (the reply ended early: token limit or an interrupted stream); " + error
            raw_text = None
            if error:
                error += "; the tool was not run. Send the call again with a complete, smaller JSON object."
                raw_text = piece.arguments if isinstance(piece.arguments, str) else (
                    None if piece.arguments is None else json.dumps(piece.arguments, default=str))
                arguments = {}
            out.append(ToolCall(_unique(piece.id, len(out), taken), piece.name, arguments, error=error,
                                raw_arguments=raw_text, note="; ".join(n for n in (piece.note, note) if n) or None,
                                extra=dict(piece.extra or {})))
    return out


def parse_response(
    response: Any, *, taken_ids: set[str] | None = None, tool_names: Collection[str] | None = None
) -> AssistantMessage:
    """Turn an ``llm_call`` reply of any supported shape into an ``AssistantMessage``.

    Args:
        response: the reply (see the module docstring for the shapes).
        taken_ids: ids already in the history; new ids avoid them and are added.
        tool_names: registered tool names; calls written as bare JSON, fenced
            JSON or pythonic lists in the text count only for these names.
            None: only explicit markup in text is read.

    Returns:
        The message: text (call markup removed), reasoning, tool calls (each with
        a unique ``id``; unusable ones carry ``error``), ``finish_reason``, ``usage``.

    Raises:
        ToolCallFormatError: the reply is not a recognised shape (the only
            exception raised, for any input: also for nesting too deep to read).
    """
    if not isinstance(response, dict):
        raise ToolCallFormatError(f"a model reply must be a JSON object, not {type(response).__name__}",
                                  raw=response)
    try:
        return _parse(response, taken_ids, tool_names)
    except ToolCallFormatError:
        raise
    except RecursionError:
        raise ToolCallFormatError("the reply is nested too deeply to read", raw=response) from None
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:  # a shape no recogniser expects
        raise ToolCallFormatError(f"the reply has an unreadable shape ({type(exc).__name__}: {exc})",
                                  raw=response) from exc


def _parse(response: dict[str, Any], taken_ids: set[str] | None, tool_names: Collection[str] | None
           ) -> AssistantMessage:
    parsed = None
    for shape in _SHAPES:
        parsed = shape(response)
        if parsed is not None:
            break
    if parsed is None:
        raise ToolCallFormatError(
            "not a recognised model reply: expected 'choices', 'output', 'candidates', 'message', "
            "or a message with 'role'/'content'/'tool_calls'",
            raw=response,
        )
    if isinstance(response.get("usage"), dict):
        parsed.usage = response["usage"]
    elif isinstance(response.get("usageMetadata"), dict):
        parsed.usage = response["usageMetadata"]
    parsed.finish_reason = finish_reason_text(parsed.finish_reason)
    truncated = parsed.finish_reason in ("length", "incomplete")  # incomplete: a stream ended early
    if "THINK]" in parsed.text:  # Magistral's [THINK]...[/THINK] (Roo-Code #8522): read as <think>
        parsed.text = parsed.text.replace("[THINK]", "<think>").replace("[/THINK]", "</think>")
    text, thought = split_reasoning(parsed.text) if "think>" in parsed.text else (parsed.text, "")
    calls = parsed.calls
    harmony = split_harmony(text) if "<|" in text or "assistantfinal" in text else None
    if harmony is not None:  # gpt-oss: analysis is reasoning, calls in commentary, final is the answer
        text, thought = harmony.text, "\n".join(t for t in (thought, harmony.reasoning) if t)
        calls = calls or [TextCall(name, body, error=None if closed or not truncated else
                                   "the call was cut off by the token limit") for name, body, closed in harmony.calls]
    if thought and all(thought.strip() != r.text.strip() for r in parsed.reasoning):  # not shown twice
        parsed.reasoning.append(ReasoningContent(thought))
    if not calls and text:
        text, calls = find_text_calls(text, tool_names, truncated=truncated)
        if calls:
            text = text.strip()
    content: list[TextContent | ReasoningContent] = list(parsed.reasoning)
    if text:
        content.append(TextContent(text))
    message = AssistantMessage(
        content=content,
        tool_calls=_to_tool_calls(calls, truncated, set() if taken_ids is None else taken_ids, tool_names),
        extra=parsed.extra,
        finish_reason=parsed.finish_reason,
        usage=parsed.usage,
        model=response["model"][:200] if isinstance(response.get("model"), str) and response["model"] else None,
    )
    return storable_reply(message)


def extract_tool_calls(response: Any, *, tool_names: Collection[str] | None = None) -> list[ToolCall]:
    """Return the tool calls of an ``llm_call`` reply, in the order the model wrote them.

    Args:
        response: a reply of any shape in the module docstring.
        tool_names: registered names, to recognise bare JSON calls in text.

    Returns:
        ``[ToolCall(id, name, arguments), ...]``; ``[]`` when there are none.
        Calls whose arguments are unusable have ``error`` set and must not run.

    Raises:
        ToolCallFormatError: the reply is not a recognised shape.

    Example:
        >>> extract_tool_calls({"choices": [{"message": {"role": "assistant", "tool_calls": [
        ...     {"id": "c1", "type": "function",
        ...      "function": {"name": "get_time", "arguments": ""}}]}}]})
        [ToolCall(id='c1', name='get_time', arguments={})]
    """
    return parse_response(response, tool_names=tool_names).tool_calls
