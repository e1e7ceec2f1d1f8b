"""Tool-call extraction: every reply shape real servers send, to ``ToolCall`` objects.

``parse_response(response)`` turns an ``llm_call`` reply into an
``AssistantMessage``; ``extract_tool_calls(response)`` returns only its calls.
Each wire shape has one small recogniser that returns ``None`` when the shape
is not its own; the first that answers wins.

Supported reply shapes (the message may also be given bare)::

    {"choices": [{"message": {...}, "finish_reason": "tool_calls"}]}   OpenAI Chat Completions
    {"role": "assistant", "tool_calls": [...]}                          LM Studio, vLLM, llama.cpp
    {"message": {"role": "assistant", "tool_calls": [...]}}             Ollama /api/chat
    content blocks {"type": "tool_use", "id", "name", "input"}          Anthropic Messages
    content blocks {"type": "tool_calls", "tool_calls": [...]}
    "function_call": {"name", "arguments"}                              legacy OpenAI functions

Rules:

* ``arguments`` may be a JSON string, an object, or empty / whitespace /
  ``null`` (all mean ``{}``). Anything else is not executed: the ``ToolCall``
  gets ``arguments == {}``, an ``error`` saying what was wrong, and the original
  text in ``raw_arguments``;
* missing, empty and duplicate ids get unique ids (``call_0``, ``call_1``, ...);
* ``finish_reason`` is advisory: calls present with ``"stop"`` are still
  returned; with ``"length"`` a call whose arguments do not parse is reported
  as cut off.

Spec: OpenAI Chat Completions ``tool_calls``; Anthropic Messages ``tool_use``;
Ollama ``/api/chat``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from .exceptions import ToolCallFormatError
from .messages import AssistantMessage, ReasoningContent, TextContent, ToolCall

__all__ = ["extract_tool_calls", "parse_arguments", "parse_response"]

# A raw call before ids are made unique: (id or None, name, arguments value as sent)
_RawCall = tuple[Any, Any, Any]


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Parse tool-call ``arguments`` as sent by a server.

    Args:
        raw: a JSON object (dict), a JSON string, or None / ``""`` / whitespace /
            ``"null"`` (all meaning no arguments). A JSON string that itself
            holds a JSON object string (double-encoded) is decoded twice.

    Returns:
        ``(arguments, error)``: the arguments as a dict, and None; or ``{}`` and
        a one-line reason the arguments are unusable.
    """
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        return {}, f"arguments must be a JSON object, got {type(raw).__name__}"
    text = raw.strip()
    if not text or text == "null":
        return {}, None
    try:
        value = json.loads(text)
    except ValueError as exc:
        return {}, f"arguments are not valid JSON ({exc.msg} at position {exc.pos})"
    if isinstance(value, str):  # double-encoded: "\"{\\\"a\\\": 1}\""
        return parse_arguments(value) if value.strip()[:1] == "{" else ({}, "arguments must be a JSON object")
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got JSON {type(value).__name__}"
    return value, None


# --------------------------------------------------------------------------- recognisers
# Each takes the assistant message dict and returns a list of raw calls, or None
# when the shape is not its own.


def _openai_tool_calls(message: dict[str, Any]) -> list[_RawCall] | None:
    calls = message.get("tool_calls")
    if not calls:
        return None
    if not isinstance(calls, list):
        raise ToolCallFormatError("tool_calls must be a list", raw=message, format_hint="openai")
    out: list[_RawCall] = []
    for call in calls:
        if not isinstance(call, dict):
            raise ToolCallFormatError(f"tool call must be an object: {call!r:.80}", raw=message, format_hint="openai")
        fn = call.get("function")
        if isinstance(fn, dict):  # OpenAI, vLLM, LM Studio, llama.cpp, Ollama
            out.append((call.get("id"), fn.get("name"), fn.get("arguments")))
        elif "name" in call:  # flattened {"id", "name", "arguments"}
            out.append((call.get("id"), call.get("name"), call.get("arguments", call.get("input"))))
        else:
            raise ToolCallFormatError(f"tool call without a function: {call!r:.80}", raw=message, format_hint="openai")
    return out


def _legacy_function_call(message: dict[str, Any]) -> list[_RawCall] | None:
    fn = message.get("function_call")
    if not isinstance(fn, dict):
        return None
    return [(None, fn.get("name"), fn.get("arguments"))]


def _content_blocks(message: dict[str, Any]) -> list[_RawCall] | None:
    content = message.get("content")
    if not isinstance(content, list):
        return None
    out: list[_RawCall] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_use":  # Anthropic Messages
            out.append((block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_calls":
            out.extend(_openai_tool_calls({"tool_calls": block.get("tool_calls")}) or [])
        elif kind in ("function_call", "tool_call"):
            fn = block.get("function") if isinstance(block.get("function"), dict) else block
            out.append(
                (block.get("id") or block.get("call_id"), fn.get("name"), fn.get("arguments", fn.get("input")))
            )
    return out or None


_RECOGNISERS: tuple[Callable[[dict[str, Any]], list[_RawCall] | None], ...] = (
    _openai_tool_calls,
    _content_blocks,
    _legacy_function_call,
)


# --------------------------------------------------------------------------- assembly


def _locate_message(response: Any) -> tuple[dict[str, Any], str | None, dict[str, Any] | None]:
    """Return (assistant message dict, finish_reason, usage) of a reply."""
    if not isinstance(response, dict):
        raise ToolCallFormatError(
            f"a model reply must be a JSON object, not {type(response).__name__}", raw=response
        )
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else None
    if "choices" in response:
        choices = response["choices"]
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ToolCallFormatError("reply has no usable choices[0]", raw=response, format_hint="openai")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise ToolCallFormatError("choices[0] has no message object", raw=response, format_hint="openai")
        return message, choices[0].get("finish_reason"), usage
    if isinstance(response.get("message"), dict):  # Ollama /api/chat
        reason = response.get("done_reason") or response.get("finish_reason")
        return response["message"], reason, usage
    if any(k in response for k in ("role", "content", "tool_calls", "function_call")):
        reason = response.get("finish_reason") or response.get("stop_reason")
        return response, reason, usage
    raise ToolCallFormatError(
        "not a recognised model reply: expected 'choices', 'message', or a message with "
        "'role'/'content'/'tool_calls'",
        raw=response,
    )


def _unique_ids(raw_calls: Iterable[_RawCall], taken: set[str]) -> list[str]:
    ids = []
    for index, (call_id, _, _) in enumerate(raw_calls):
        base = call_id if isinstance(call_id, str) and call_id.strip() else f"call_{index}"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        ids.append(candidate)
    return ids


def _message_text(message: dict[str, Any]) -> tuple[str, list[ReasoningContent]]:
    reasoning = [
        ReasoningContent(message[k], field=k)
        for k in ("reasoning_content", "reasoning")
        if isinstance(message.get(k), str) and message[k]
    ]
    content = message.get("content")
    if isinstance(content, str):
        return content, reasoning
    texts = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                texts.append(block)
            elif isinstance(block, dict) and block.get("type") in ("text", "output_text"):
                texts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") in ("thinking", "reasoning"):
                reasoning.append(ReasoningContent(str(block.get("thinking") or block.get("text") or "")))
    return "".join(texts), reasoning


def parse_response(response: Any, *, taken_ids: set[str] | None = None) -> AssistantMessage:
    """Turn an ``llm_call`` reply of any supported shape into an ``AssistantMessage``.

    Args:
        response: the reply (see the module docstring for the shapes).
        taken_ids: ids already used in the history; new ids avoid them and are
            added to the set. None means an empty set.

    Returns:
        The message with its text, reasoning, tool calls (each with a unique
        ``id``; unusable ones carry ``error``), ``finish_reason`` and ``usage``.

    Raises:
        ToolCallFormatError: the reply is not a recognised shape.
    """
    message, finish_reason, usage = _locate_message(response)
    raw_calls: list[_RawCall] = []
    for recognise in _RECOGNISERS:
        found = recognise(message)
        if found:
            raw_calls = found
            break
    ids = _unique_ids(raw_calls, set() if taken_ids is None else taken_ids)
    calls = []
    for call_id, (_, name, raw_arguments) in zip(ids, raw_calls):
        arguments, error = parse_arguments(raw_arguments)
        if not isinstance(name, str) or not name:
            error = "the tool call has no function name"
            name = name if isinstance(name, str) else ""
        if error and finish_reason == "length":
            error = "the call was cut off by the token limit (finish_reason 'length'); " + error
        if error:
            error += "; the tool was not run. Send the call again with a complete, smaller JSON object."
        raw_text = None
        if error:
            raw_text = raw_arguments if isinstance(raw_arguments, str) else json.dumps(raw_arguments, default=str)
        calls.append(ToolCall(call_id, name, arguments, error=error, raw_arguments=raw_text))
    text, reasoning = _message_text(message)
    known = {"role", "content", "tool_calls", "function_call", "reasoning_content", "reasoning"}
    extra = {k: v for k, v in message.items() if k not in known and message is not response}
    content: list[TextContent | ReasoningContent] = [*reasoning]
    if text:
        content.append(TextContent(text))
    return AssistantMessage(
        content=content, tool_calls=calls, extra=extra, finish_reason=finish_reason, usage=usage
    )


def extract_tool_calls(response: Any) -> list[ToolCall]:
    """Return the tool calls of an ``llm_call`` reply, in the order the model wrote them.

    Args:
        response: a reply of any shape in the module docstring.

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
    return parse_response(response).tool_calls
