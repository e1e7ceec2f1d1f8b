"""OpenAI messages: yiemagent messages to and from OpenAI chat message dicts.

``to_openai`` and ``from_openai`` convert one message; ``messages_to_openai``
and ``messages_from_openai`` a whole history.

Shapes (OpenAI Chat Completions)::

    {"role": "user", "content": "hi"}                       # text only: a plain string
    {"role": "user", "content": [{"type": "text", "text": "look"},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}]}
    {"role": "assistant", "content": null, "reasoning_content": "...",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_time", "arguments": "{}"}}]}
    {"role": "tool", "tool_call_id": "call_1", "content": "12:00"}

Normalisation rules (one each, documented here):

* assistant ``content`` missing, ``null`` and ``""`` all mean "no text"; written
  back as ``null`` when the turn has tool calls, else ``""``;
* tool-call ``arguments`` are always written as a JSON string (characters kept,
  no ``\\u`` escapes; values JSON cannot carry, such as ``NaN``, are replaced as
  in ``yiemagent.textpolicy``); a call whose arguments were unusable is written with
  ``"{}"`` and its original text kept in ``ToolCall.raw_arguments``;
* unknown keys on an assistant message (``refusal``, ``audio``, ...) are kept in
  ``AssistantMessage.extra``, those on a tool call (Gemini's ``extra_content``)
  in ``ToolCall.extra``; ``to_openai`` writes them back unchanged, the
  agent's formatter sends the providers' own (``yiemagent.formats.dialects``) and
  leaves the rest out unless ``send_extra=True``;
* an empty ``reasoning_content`` is kept (DeepSeek wants it back).

Fields marked "yiemagent-side" (``yiemagent.messages.types``) have no place in
the OpenAI format; they do not take part in equality, so
``from_openai(to_openai(m)) == m``.

Spec: OpenAI Chat Completions ``messages``; ``reasoning_content`` as sent by
DeepSeek, vLLM and llama.cpp.
"""

from __future__ import annotations

from typing import Any

from ..exceptions import FormatError
from ..formats.arguments import parse_arguments
from .types import (
    AssistantMessage,
    ImageContent,
    Message,
    ReasoningContent,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["from_openai", "messages_from_openai", "messages_to_openai", "to_openai"]


# --------------------------------------------------------------------------- to OpenAI


def _part_to_openai(part: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(part, TextContent):
        return {"type": "text", "text": part.text}
    image: dict[str, Any] = {"url": part.url}
    if part.detail is not None:
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


def to_openai(message: Message) -> dict[str, Any]:
    """Convert one message to an OpenAI chat message dict (see the module docstring).

    Raises:
        FormatError: ``message`` is not one of yiemagent's message types.
    """
    if isinstance(message, UserMessage):
        out: dict[str, Any]
        if len(message.content) == 1 and isinstance(message.content[0], TextContent):
            out = {"role": "user", "content": message.content[0].text}
        else:
            out = {"role": "user", "content": [_part_to_openai(p) for p in message.content]}
        if message.name is not None:
            out["name"] = message.name
        return out
    if isinstance(message, AssistantMessage):
        text = message.text
        out = {"role": "assistant", "content": text if text else (None if message.tool_calls else "")}
        reasoning: dict[str, str] = {}
        for part in message.content:
            if isinstance(part, ReasoningContent):
                reasoning[part.field] = reasoning.get(part.field, "") + part.text
        out.update(reasoning)
        if message.tool_calls:
            out["tool_calls"] = [call.to_openai() for call in message.tool_calls]
        for key, value in message.extra.items():
            out.setdefault(key, value)
        return out
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
    if isinstance(message, SystemMessage):
        return {"role": message.role, "content": message.content}
    raise FormatError(f"not a yiemagent message: {type(message).__name__}", raw=message)


def messages_to_openai(messages: list[Message]) -> list[dict[str, Any]]:
    """Convert a whole history with ``to_openai``."""
    return [to_openai(m) for m in messages]


# --------------------------------------------------------------------------- from OpenAI

_ASSISTANT_KEYS = {"role", "content", "tool_calls", "reasoning_content", "reasoning"}
_CALL_KEYS = {"id", "type", "function", "index"}


def _text_of(content: Any, where: str, raw: Any) -> str:
    """Text of a string / null / list-of-text-parts ``content``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
                texts.append(str(part.get("text", "")))
            elif isinstance(part, str):
                texts.append(part)
            else:
                raise FormatError(f"{where}: unsupported content part {part!r:.80}", raw=raw)
        return "".join(texts)
    raise FormatError(f"{where}: content must be a string, a list or null, not {type(content).__name__}", raw=raw)


def _user_parts(content: Any, raw: Any) -> list[TextContent | ImageContent]:
    if isinstance(content, str):
        return [TextContent(content)]
    if content is None:
        return []
    if not isinstance(content, list):
        raise FormatError(f"user content must be a string or a list, not {type(content).__name__}", raw=raw)
    parts: list[TextContent | ImageContent] = []
    for part in content:
        if not isinstance(part, dict):
            raise FormatError(f"user content part must be an object, not {part!r:.80}", raw=raw)
        kind = part.get("type")
        if kind in ("text", "input_text"):
            parts.append(TextContent(str(part.get("text", ""))))
        elif kind == "image_url":
            image = part.get("image_url")
            if isinstance(image, str):
                parts.append(ImageContent(image))
            elif isinstance(image, dict) and isinstance(image.get("url"), str):
                parts.append(ImageContent(image["url"], image.get("detail")))
            else:
                raise FormatError("image_url part without a url", raw=raw)
        else:
            raise FormatError(f"unsupported user content part type {kind!r}", raw=raw)
    return parts


def _tool_calls_from_openai(calls: Any, raw: Any) -> list[ToolCall]:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise FormatError("tool_calls must be a list", raw=raw)
    out = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            raise FormatError(f"tool call without a function object: {call!r:.80}", raw=raw)
        fn = call["function"]
        arguments, error = parse_arguments(fn.get("arguments"))
        out.append(
            ToolCall(
                id=str(call.get("id") or ""),
                name=str(fn.get("name", "")),
                arguments=arguments,
                error=error,
                raw_arguments=fn.get("arguments") if error else None,
                extra={str(k): v for k, v in call.items() if k not in _CALL_KEYS},
            )
        )
    return out


def from_openai(message: dict[str, Any]) -> Message:
    """Convert one OpenAI chat message dict to a yiemagent message.

    Args:
        message: ``{"role": "system"|"developer"|"user"|"assistant"|"tool", ...}``
            as in the module docstring. A user message may also be a plain string.

    Raises:
        FormatError: the dict is not a chat message this module can read.
    """
    if isinstance(message, str):
        return UserMessage([TextContent(message)])
    if not isinstance(message, dict):
        raise FormatError(f"a message must be a dict, not {type(message).__name__}", raw=message)
    role = message.get("role")
    if role == "user":
        name = message.get("name")
        return UserMessage(_user_parts(message.get("content"), message), name=name if isinstance(name, str) else None)
    if role == "assistant":
        content: list[TextContent | ReasoningContent] = []
        extra = {k: v for k, v in message.items() if k not in _ASSISTANT_KEYS}
        for key in ("reasoning_content", "reasoning"):
            value = message.get(key)
            if isinstance(value, str) and value:
                content.append(ReasoningContent(value, field=key))
            elif value is not None and not (isinstance(value, str) and value):
                extra[key] = value  # a structured reasoning object, or DeepSeek's "": kept as it came
        text = _text_of(message.get("content"), "assistant", message)
        if text:
            content.append(TextContent(text))
        return AssistantMessage(
            content=content, tool_calls=_tool_calls_from_openai(message.get("tool_calls"), message), extra=extra
        )
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise FormatError("tool message without a tool_call_id", raw=message)
        return ToolResultMessage(call_id, [TextContent(_text_of(message.get("content"), "tool", message))])
    if role in ("system", "developer"):
        return SystemMessage(_text_of(message.get("content"), role, message), role=role)
    raise FormatError(f"unknown message role {role!r}", raw=message)


def messages_from_openai(messages: list[dict[str, Any]]) -> list[Message]:
    """Convert a whole OpenAI history with ``from_openai``."""
    return [from_openai(m) for m in messages]
