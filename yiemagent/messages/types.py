"""Message types: the dataclasses an agent's history holds.

Content parts: ``TextContent``, ``ImageContent`` (a URL: ``https://...`` or a
``data:<mime>;base64,<data>`` URL) and ``ReasoningContent``; a ``ToolCall``;
and the four messages ``SystemMessage``, ``UserMessage``, ``AssistantMessage``
and ``ToolResultMessage`` (``Message`` is their union). Where a message takes a
list of parts, a plain string is accepted as one text part.

Fields marked "yiemagent-side" have no place in the OpenAI format; they do not
take part in equality. Every class is a dataclasses-json ``DataClassJsonMixin``
(``to_dict``/``from_dict``); ``yiemagent.messages.dicts`` builds the same saved
form faster, ``yiemagent.messages.openai`` converts to and from the OpenAI chat
format. ``yiemagent.messages`` gathers all these names.

Spec: OpenAI Chat Completions ``messages`` (the parts and fields carried).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Union

from dataclasses_json import DataClassJsonMixin, config

from .._internal.checks import one_of
from ..exceptions import FormatError
from ..textpolicy import dumps_strict

__all__ = [
    "MODEL_IMAGE_TYPES",
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
    "is_model_image_type",
]


@dataclass
class TextContent(DataClassJsonMixin):
    """A piece of text."""

    text: str
    type: Literal["text"] = "text"


MODEL_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types a model request may carry as an image part: what the OpenAI Chat Completions API accepts
("Images and vision": PNG, JPEG, WEBP, non-animated GIF); other ``image/*`` (SVG, TIFF, BMP, HEIC...) make the
whole request fail there, so MCP results, resources and sampling messages turn them into a described line
(``is_model_image_type``)."""


def is_model_image_type(mime: object) -> bool:
    """True when ``mime`` (``"image/png"``, ``"IMAGE/JPEG; q=1"``, ``"image/jpg"``) is in ``MODEL_IMAGE_TYPES``."""
    if not isinstance(mime, str):
        return False
    base = mime.split(";", 1)[0].strip().lower()
    return (base if base != "image/jpg" else "image/jpeg") in MODEL_IMAGE_TYPES


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
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    """Unknown keys of the OpenAI tool call (Gemini's ``extra_content`` with its ``thought_signature``),
    kept and written back unchanged (``yiemagent.formats.dialects`` says which are sent to the model)."""

    def __repr__(self) -> str:
        extra = f", error={self.error!r}" if self.error else ""
        return f"ToolCall(id={self.id!r}, name={self.name!r}, arguments={self.arguments!r}{extra})"

    def to_openai(self) -> dict[str, Any]:
        """Return ``{"id", "type": "function", "function": {"name", "arguments": "<json>"}}`` and ``extra``."""
        out: dict[str, Any] = {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": dumps_strict(self.arguments)},
        }
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


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

    def __post_init__(self) -> None:
        one_of("SystemMessage role", self.role, ("system", "developer"))  # "developr" would reach the model


@dataclass
class UserMessage(DataClassJsonMixin):
    """A message from the user: text and images."""

    content: list[TextContent | ImageContent] = field(default_factory=list, metadata=_PARTS_FIELD)
    name: str | None = None
    """OpenAI ``name`` of the participant, or None."""
    excluded: str | None = field(default=None, compare=False)
    """yiemagent-side: why this message is left out of what is sent to the model (its run failed), or None."""
    compaction: dict[str, Any] | None = field(default=None, compare=False)
    """yiemagent-side: set on a compaction summary (``yiemagent.context.compaction``): ``{"first_kept": <history
    index>, "tokens_before": int, "tokens_after": int, ...}``; None on every other user message."""
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
    model: str | None = field(default=None, compare=False)
    """yiemagent-side: the response's ``model`` (which model answered: ``fallback_llm`` sets it), or None;
    never sent back to a model."""
    excluded: str | None = field(default=None, compare=False)
    """yiemagent-side: why this message is left out of what is sent to the model (its run failed), or None."""
    role: Literal["assistant"] = "assistant"

    if TYPE_CHECKING:  # the generated __init__ also takes a str (one text part); tell type checkers so

        def __init__(
            self, content: str | Sequence[TextContent | ReasoningContent] = ..., tool_calls: list[ToolCall] = ...,
            extra: dict[str, Any] = ..., finish_reason: str | None = None, usage: dict[str, Any] | None = None,
            model: str | None = None, role: Literal["assistant"] = "assistant",
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
