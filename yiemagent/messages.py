"""Messages: yiemagent's own message types and their OpenAI chat format.

The history of an agent holds only these dataclasses. ``to_openai`` and
``from_openai`` convert one message; ``messages_to_openai`` a whole history.

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
  in ``yiemagent.jsonsafe``); a call whose arguments were unusable is written with
  ``"{}"`` and its original text kept in ``ToolCall.raw_arguments``;
* unknown keys on an assistant message (``refusal``, ``audio``, ...) are kept in
  ``AssistantMessage.extra``; ``to_openai`` writes them back unchanged, the
  agent's formatter leaves them out unless ``send_extra=True``.

Fields marked "yiemagent-side" have no place in the OpenAI format; they do not
take part in equality, so ``from_openai(to_openai(m)) == m``.

Spec: OpenAI Chat Completions ``messages``; ``reasoning_content`` as sent by
DeepSeek, vLLM and llama.cpp.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Union

from dataclasses_json import DataClassJsonMixin, config

from .arguments import parse_arguments
from .exceptions import FormatError
from .jsonsafe import dumps_strict

__all__ = [
    "AssistantMessage",
    "Content",
    "ImageContent",
    "Message",
    "ReasoningContent",
    "SystemMessage",
    "TextContent",
    "ToolCall",
    "ToolResultMessage",
    "UserMessage",
    "from_openai",
    "message_from_dict",
    "message_to_dict",
    "messages_from_dicts",
    "messages_from_openai",
    "messages_to_openai",
    "to_openai",
]


@dataclass
class TextContent(DataClassJsonMixin):
    """A piece of text."""

    text: str
    type: Literal["text"] = "text"


@dataclass
class ImageContent(DataClassJsonMixin):
    """An image, by URL: ``https://...`` or a ``data:<mime>;base64,<data>`` URL."""

    url: str
    """The image URL exactly as sent to the model."""
    detail: str | None = None
    """OpenAI ``image_url.detail`` (``"low"``, ``"high"``, ``"auto"``), or None."""
    type: Literal["image"] = "image"

    @classmethod
    def from_base64(cls, data: str, mime_type: str = "image/png", detail: str | None = None) -> ImageContent:
        """Build from base64 ``data`` (no ``data:`` prefix) and its MIME type."""
        return cls(url=f"data:{mime_type};base64,{data}", detail=detail)

    @property
    def mime_type(self) -> str | None:
        """The MIME type of a ``data:`` URL, else None."""
        if self.url.startswith("data:"):
            return self.url[5:].split(";", 1)[0].split(",", 1)[0] or None
        return None

    @property
    def data(self) -> str | None:
        """The base64 payload of a ``data:`` URL, else None."""
        if self.url.startswith("data:") and ";base64," in self.url:
            return self.url.split(";base64,", 1)[1]
        return None

    def placeholder(self) -> str:
        """A short text standing for the image, e.g. ``[image image/png, 8 bytes]``."""
        data = self.data
        if data is None:
            return f"[image {self.url}]"
        try:
            size = len(base64.b64decode(data, validate=False))
        except (binascii.Error, ValueError):
            size = len(data)
        return f"[image {self.mime_type or 'unknown'}, {size} bytes]"


@dataclass
class ReasoningContent(DataClassJsonMixin):
    """The model's reasoning (chain of thought) as the server reported it."""

    text: str
    field: str = "reasoning_content"
    """The OpenAI-compatible key that carried it (``reasoning_content`` or ``reasoning``)."""
    type: Literal["reasoning"] = "reasoning"


Content = Union[TextContent, ImageContent, ReasoningContent]


@dataclass(repr=False)
class ToolCall(DataClassJsonMixin):
    """One call of a tool requested by the model."""

    id: str
    """Unique within the history; OpenAI ``tool_calls[].id`` / MCP-independent."""
    name: str
    """The tool name as the model wrote it."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Parsed JSON object; ``{}`` when the model sent nothing or something unusable."""
    error: str | None = field(default=None, compare=False)
    """yiemagent-side: why this call must not run (arguments not JSON, cut off)."""
    raw_arguments: str | None = field(default=None, compare=False)
    """yiemagent-side: the original arguments text when it could not be used."""
    note: str | None = field(default=None, compare=False)
    """yiemagent-side: a repair applied to the arguments (trailing comma, missing brace, split)."""

    def __repr__(self) -> str:
        extra = f", error={self.error!r}" if self.error else ""
        return f"ToolCall(id={self.id!r}, name={self.name!r}, arguments={self.arguments!r}{extra})"

    def to_openai(self) -> dict[str, Any]:
        """Return ``{"id", "type": "function", "function": {"name", "arguments": "<json>"}}``."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": dumps_strict(self.arguments)},
        }


_PARTS: dict[str, Any] = {}


def _decode_parts(items: Any) -> list[Any]:
    """dataclasses-json decoder for content lists: pick the class by ``type``."""
    out = []
    for item in items or []:
        if isinstance(item, dict):
            cls = _PARTS.get(item.get("type", ""))
            if cls is None:
                raise FormatError(f"unknown content type in state: {item.get('type')!r}", raw=item)
            out.append(cls.from_dict(item))
        else:
            out.append(item)
    return out


def _jsonable(value: Any) -> Any:
    """dataclasses-json encoder for ``details``: JSON values kept, anything else as its repr."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        if isinstance(value, dict):
            return {str(k): _jsonable(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [_jsonable(v) for v in value]
        if hasattr(value, "to_dict"):
            return _jsonable(value.to_dict())
        return {"repr": repr(value)}


_PARTS_FIELD = config(decoder=_decode_parts)


@dataclass
class SystemMessage(DataClassJsonMixin):
    """A system (or ``developer``) instruction."""

    content: str
    role: Literal["system", "developer"] = "system"


@dataclass
class UserMessage(DataClassJsonMixin):
    """A message from the user: text and images."""

    content: list[TextContent | ImageContent] = field(default_factory=list, metadata=_PARTS_FIELD)
    name: str | None = None
    """OpenAI ``name`` of the participant, or None."""
    excluded: str | None = field(default=None, compare=False)
    """yiemagent-side: why this message is left out of what is sent to the model (its run failed), or None."""
    role: Literal["user"] = "user"

    if TYPE_CHECKING:  # the generated __init__ also takes a str (one text part); tell type checkers so

        def __init__(
            self, content: str | Sequence[TextContent | ImageContent] = ..., name: str | None = None,
            role: Literal["user"] = "user",
        ) -> None: ...

    def __post_init__(self) -> None:
        if isinstance(self.content, str):
            self.content = [TextContent(self.content)]

    @property
    def text(self) -> str:
        """All text parts joined with newlines."""
        return "\n".join(c.text for c in self.content if isinstance(c, TextContent))


@dataclass
class AssistantMessage(DataClassJsonMixin):
    """A reply of the model: text, reasoning and tool calls."""

    content: list[TextContent | ReasoningContent] = field(default_factory=list, metadata=_PARTS_FIELD)
    tool_calls: list[ToolCall] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    """Unknown keys of the OpenAI message, kept and written back unchanged."""
    finish_reason: str | None = field(default=None, compare=False)
    """yiemagent-side: the response's ``finish_reason`` (``stop``, ``tool_calls``, ``length``)."""
    usage: dict[str, Any] | None = field(default=None, compare=False)
    """yiemagent-side: the response's ``usage`` (token counts), if reported."""
    excluded: str | None = field(default=None, compare=False)
    """yiemagent-side: why this message is left out of what is sent to the model (its run failed), or None."""
    role: Literal["assistant"] = "assistant"

    if TYPE_CHECKING:  # the generated __init__ also takes a str (one text part); tell type checkers so

        def __init__(
            self, content: str | Sequence[TextContent | ReasoningContent] = ..., tool_calls: list[ToolCall] = ...,
            extra: dict[str, Any] = ..., finish_reason: str | None = None, usage: dict[str, Any] | None = None,
            role: Literal["assistant"] = "assistant",
        ) -> None: ...

    def __post_init__(self) -> None:
        if isinstance(self.content, str):
            self.content = [TextContent(self.content)] if self.content else []

    @property
    def text(self) -> str:
        """All text parts joined (no reasoning)."""
        return "".join(c.text for c in self.content if isinstance(c, TextContent))

    @property
    def reasoning(self) -> str:
        """All reasoning parts joined."""
        return "".join(c.text for c in self.content if isinstance(c, ReasoningContent))


@dataclass
class ToolResultMessage(DataClassJsonMixin):
    """The result of one tool call, answering ``tool_call_id``."""

    tool_call_id: str
    content: list[TextContent | ImageContent] = field(default_factory=list, metadata=_PARTS_FIELD)
    tool_name: str = field(default="", compare=False)
    """yiemagent-side: the name of the tool that produced it."""
    is_error: bool = field(default=False, compare=False)
    """yiemagent-side: True when the tool failed (MCP ``isError``, a raise, a block)."""
    details: Any = field(default=None, compare=False, metadata=config(encoder=_jsonable))
    """yiemagent-side: data for the application, never sent to the model (state keeps JSON values)."""
    excluded: str | None = field(default=None, compare=False)
    """yiemagent-side: why this message is left out of what is sent to the model (its run failed), or None."""
    role: Literal["tool"] = "tool"

    if TYPE_CHECKING:  # the generated __init__ also takes a str (one text part); tell type checkers so

        def __init__(
            self, tool_call_id: str, content: str | Sequence[TextContent | ImageContent] = ..., tool_name: str = "",
            is_error: bool = False, details: Any = None, role: Literal["tool"] = "tool",
        ) -> None: ...

    def __post_init__(self) -> None:
        if isinstance(self.content, str):
            self.content = [TextContent(self.content)]

    @property
    def text(self) -> str:
        """Text parts joined by newlines; images become short placeholders."""
        parts = [c.text if isinstance(c, TextContent) else c.placeholder() for c in self.content]
        return "\n".join(parts)


Message = Union[SystemMessage, UserMessage, AssistantMessage, ToolResultMessage]

_PARTS.update(text=TextContent, image=ImageContent, reasoning=ReasoningContent)
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
    problem = _saved_problem(data)
    if problem:
        raise FormatError(f"not a saved yiemagent message: {problem}", raw=data)
    try:
        return _build(cls, data)  # type: ignore[no-any-return]
    except FormatError:
        raise
    except Exception as exc:  # dataclasses-json raises many kinds for bad shapes
        raise FormatError(f"not a saved yiemagent message: {type(exc).__name__}: {exc}", raw=data) from exc


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
            elif value not in (None, ""):  # e.g. a structured reasoning object: kept as it came
                extra[key] = value
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
