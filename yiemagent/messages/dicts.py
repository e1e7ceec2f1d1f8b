"""Saved messages: yiemagent's own lossless JSON form of a message (every field, for saving state).

``message_to_dict(m)`` is the dict dataclasses-json's ``m.to_dict(encode_json=True)``
gives: the dataclass fields in order, content parts with their ``type``
(``"text"``, ``"image"``, ``"reasoning"``), tool calls with parsed
``arguments`` and the yiemagent-side fields; ``ToolResultMessage.details``
keeps JSON values (anything else as ``{"repr": ...}``). ``message_from_dict``
is its inverse and type-checks every field, raising ``FormatError`` for
anything else; ``messages_from_dicts`` reads a whole saved history.

The types are in ``yiemagent.messages.types``; ``yiemagent.messages`` gathers all these names.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..exceptions import FormatError
from .normalise import finish_reason_text
from .types import (
    _PARTS,
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    _jsonable,
)

__all__ = ["message_from_dict", "message_to_dict", "messages_from_dicts"]

_ROLES: dict[str, Any] = {"system": SystemMessage, "developer": SystemMessage, "user": UserMessage,
                          "assistant": AssistantMessage, "tool": ToolResultMessage}


def message_to_dict(message: Message) -> dict[str, Any]:
    """Yiemagent's own JSON form of a message (every field, for saving state).

    The same dict as dataclasses-json's ``message.to_dict(encode_json=True)``
    (a property test checks it), built directly: several times faster, which
    matters where every message is saved (state, the durable journal).
    """
    return _plain(message)  # type: ignore[no-any-return]


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """``value`` as JSON values: dataclasses as dicts in field order, ``details`` through ``_jsonable``."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    cls = type(value)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        if not dataclasses.is_dataclass(cls):
            return value.to_dict(encode_json=True) if hasattr(value, "to_dict") else _jsonable(value)
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    out = {name: _plain(getattr(value, name)) for name in names}
    if cls is ToolResultMessage:
        out["details"] = _plain(_jsonable(value.details))
    return out


def message_from_dict(data: dict[str, Any]) -> Message:
    """Inverse of ``message_to_dict`` (dispatches on ``role``); every field is type-checked.

    Raises:
        FormatError: not a saved message: unknown role or content type, or a
            field of the wrong type (a tampered or foreign state). Never
            another exception, for any input.
    """
    cls = _ROLES.get(data.get("role", "")) if isinstance(data, dict) and isinstance(data.get("role"), str) else None
    if cls is None:
        raise FormatError(f"not a saved yiemagent message: {data!r:.100}", raw=data)
    if cls is AssistantMessage:
        data = _older_reply(data)
    problem = _saved_problem(data)
    if problem:
        raise FormatError(f"not a saved yiemagent message: {problem}", raw=data)
    try:
        return _build(cls, data)  # type: ignore[no-any-return]
    except FormatError:
        raise
    except Exception as exc:  # dataclasses-json raises many kinds for bad shapes
        raise FormatError(f"not a saved yiemagent message: {type(exc).__name__}: {exc}", raw=data) from exc


def _older_reply(data: dict[str, Any]) -> dict[str, Any]:
    """What earlier versions stored unnormalised (before issue 15), read as they would store it now.

    A reply answered ``completed`` with a ``finish_reason`` that was not a string (``7``, an
    Anthropic-style integer) or a ``usage`` that was not an object was committed as it came,
    and the conversation could not be loaded again. Such a state loads: the finish reason as
    its JSON text (as ``yiemagent.messages.normalise`` now stores it), such a usage as null.
    """
    reason, usage = data.get("finish_reason"), data.get("usage")
    if (reason is None or isinstance(reason, str)) and (usage is None or isinstance(usage, dict)):
        return data
    fixed = dict(data)
    fixed["finish_reason"] = finish_reason_text(reason)
    if not (usage is None or isinstance(usage, dict)):
        fixed["usage"] = None
    return fixed


def _opt(value: Any, kind: type | tuple[type, ...]) -> bool:
    return value is None or isinstance(value, kind)


def _part_problem(part: Any, allowed: tuple[str, ...]) -> str | None:
    if not isinstance(part, dict) or part.get("type") not in allowed:
        return f"content part {part!r:.60} is not one of {allowed}"
    if part["type"] in ("text", "reasoning") and not isinstance(part.get("text"), str):
        return "a text part without text"
    if part["type"] == "reasoning" and part.get("field", "reasoning_content") not in ("reasoning_content",
                                                                                      "reasoning"):
        return f"reasoning field {part.get('field')!r}"
    if part["type"] == "image" and not (isinstance(part.get("url"), str) and _opt(part.get("detail"), str)):
        return "an image part without a url"
    return None


def _saved_problem(data: dict[str, Any]) -> str | None:
    """What makes ``data`` not a saved message of its role, or None."""
    role = data["role"]
    if not _opt(data.get("excluded"), str):
        return "excluded must be a string or null"
    if role in ("system", "developer"):
        return None if isinstance(data.get("content"), str) else "system content must be a string"
    allowed = {"user": ("text", "image"), "tool": ("text", "image"), "assistant": ("text", "reasoning")}[role]
    content = data.get("content", [])
    if not isinstance(content, list):
        return "content must be a list of parts"
    for part in content:
        problem = _part_problem(part, allowed)
        if problem:
            return problem
    if role == "user":
        if not _opt(data.get("compaction"), dict):
            return "compaction must be an object or null"
        return None if _opt(data.get("name"), str) else "name must be a string or null"
    if role == "tool":
        if not isinstance(data.get("tool_call_id"), str) or not data["tool_call_id"]:
            return "a tool result needs a tool_call_id string"
        if not _opt(data.get("tool_name", ""), str) or not _opt(data.get("is_error", False), bool):
            return "tool_name must be a string and is_error a boolean"
        return None
    calls = data.get("tool_calls", [])
    if not isinstance(calls, list):
        return "tool_calls must be a list"
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not isinstance(call.get("name"), str):
            return f"tool call {call!r:.60} needs string id and name"
        if not isinstance(call.get("arguments", {}), dict):
            return "tool call arguments must be an object"
        if not all(_opt(call.get(k), str) for k in ("error", "raw_arguments", "note")):
            return "tool call error/raw_arguments/note must be strings or null"
        if not isinstance(call.get("extra", {}), dict) or not all(isinstance(k, str) for k in call.get("extra", {})):
            return "tool call extra must be an object"
    if not isinstance(data.get("extra", {}), dict) or not all(isinstance(k, str) for k in data.get("extra", {})):
        return "extra must be an object"
    if not _opt(data.get("finish_reason"), str) or not _opt(data.get("usage"), dict):
        return "finish_reason must be a string and usage an object (or null)"
    return None


def messages_from_dicts(items: Any) -> list[Message]:
    """A whole saved history (``[message_to_dict(m), ...]``) back to messages.

    Raises:
        FormatError: ``items`` is not a list of saved messages (never another exception).
    """
    if not isinstance(items, list):
        raise FormatError(f"a saved history must be a list, not {type(items).__name__}", raw=items)
    return [message_from_dict(item) for item in items]


def _build(cls: type, data: dict[str, Any]) -> Any:
    """``cls(**data)`` for the fields ``cls`` has (others ignored), content parts and tool calls built too.

    What dataclasses-json's ``from_dict`` gives for yiemagent's own dicts (a
    property test checks it), without its per-call type inspection.
    """
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    kwargs = {name: data[name] for name in names if name in data}
    if "content" in kwargs and isinstance(kwargs["content"], list):
        parts = []
        for item in kwargs["content"]:
            part_cls = _PARTS.get(item.get("type", "")) if isinstance(item, dict) else None
            if part_cls is None:
                raise FormatError(f"unknown content type in state: {item!r:.60}", raw=item)
            parts.append(_build(part_cls, item))
        kwargs["content"] = parts
    if cls is AssistantMessage and isinstance(kwargs.get("tool_calls"), list):
        kwargs["tool_calls"] = [_build(ToolCall, c) for c in kwargs["tool_calls"]]
    return cls(**kwargs)
