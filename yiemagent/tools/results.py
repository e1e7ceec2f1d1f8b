"""Tool results: ``AgentToolResult`` (what a tool gives back), ``to_result`` and ``cap_result``.

``to_result`` turns whatever a tool's ``execute`` returned into an
``AgentToolResult``: a ``str`` becomes text, a ``dict``/``list``/number JSON
text written with the characters themselves (no ``\\u`` escapes; sets,
tuples, enums and dataclasses made plain, NaN and infinity ``null``), bytes
their UTF-8 text (else a note of their size), ``TextContent``/``ImageContent``
parts pass as they are. ``cap_result`` cuts a result to a number of
characters (text plus image data) and says so in a last text part.

The parts are ``TextContent`` and ``ImageContent`` of ``yiemagent.messages.types``;
``yiemagent.tools`` gathers these names.

Spec: JSON text, RFC 8259 (``allow_nan=False``).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._internal.checks import check_int
from ..messages.types import ImageContent, TextContent

__all__ = ["AgentToolResult", "cap_result", "to_result"]


@dataclass
class AgentToolResult:
    """What a tool gives back to the model.

    ``content`` may be given as a string (one text part) or a list of
    ``TextContent`` / ``ImageContent``.
    """

    content: list[TextContent | ImageContent] = field(default_factory=list)
    """What the model sees."""
    is_error: bool = False
    """True when the tool failed; the model sees the content as an error report."""
    terminate: bool = False
    """True asks the run to end after this batch (only if every result of the batch asks)."""
    details: Any = None
    """Data for the application (hooks, events, state); never sent to the model."""
    usage: dict[str, Any] | None = None
    """What the tool spent on models, in OpenAI ``usage`` figures plus ``requests`` and ``tool_calls``
    (an agent used as a tool: its run's usage, ``Agent.as_tool``), or None. The loop adds it to the run's
    usage, where usage limits see it; journaled with the result; never sent to the model."""

    if TYPE_CHECKING:  # the generated __init__ also takes a str (one text part); tell type checkers so

        def __init__(
            self, content: str | Sequence[TextContent | ImageContent] = ..., is_error: bool = False,
            terminate: bool = False, details: Any = None, usage: dict[str, Any] | None = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        if isinstance(self.content, str):
            self.content = [TextContent(self.content)]

    @property
    def text(self) -> str:
        """Text parts joined by newlines; images as short placeholders."""
        return "\n".join(c.text if isinstance(c, TextContent) else c.placeholder() for c in self.content)

    @classmethod
    def error(cls, message: str, details: Any = None) -> AgentToolResult:
        """An error result with one text part."""
        return cls([TextContent(message)], is_error=True, details=details)


def to_result(value: Any) -> AgentToolResult:
    """Turn what ``execute`` returned into an ``AgentToolResult``.

    ``AgentToolResult`` passes through; ``str`` -> text; ``dict``/``list``/numbers
    -> JSON text (``ensure_ascii=False``); ``TextContent``/``ImageContent`` -> one
    part; ``None`` -> empty text.
    """
    if isinstance(value, AgentToolResult):
        return value
    if value is None:
        return AgentToolResult([TextContent("")])
    if isinstance(value, str):
        return AgentToolResult([TextContent(value)])
    if isinstance(value, (TextContent, ImageContent)):
        return AgentToolResult([value])
    if isinstance(value, list) and value and all(isinstance(v, (TextContent, ImageContent)) for v in value):
        return AgentToolResult(list(value))
    if isinstance(value, (bytes, bytearray)):
        return AgentToolResult([TextContent(_bytes_text(bytes(value)))])
    return AgentToolResult([TextContent(json.dumps(_jsonable(value), ensure_ascii=False, allow_nan=False))])


def _bytes_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"[{len(data)} bytes of binary data]"


def _jsonable(value: Any) -> Any:
    """``value`` made plain for JSON.

    Sets and tuples become lists, bytes text, enums their value, dataclasses
    dicts, NaN and infinity None, other objects ``str``.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [_jsonable(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, (bytes, bytearray)):
        return _bytes_text(bytes(value))
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    return str(value)


def cap_result(result: AgentToolResult, max_chars: int | None) -> AgentToolResult:
    """``result`` cut to ``max_chars`` characters (text plus image data), with a visible note.

    Beyond the cap, text is cut, images are replaced by their placeholder, and
    a last text part says ``[truncated: the tool result has N characters; the
    first M are shown]``; ``details`` gets ``{"truncated": {"chars": N,
    "max_chars": M}}`` when it is a dict or None. None: no cap.

    Raises:
        ConfigError: ``max_chars`` not an int >= 0 (NaN, -1 or ``True`` is not a cap).
    """
    check_int("max_chars", max_chars, minimum=0, optional=True)
    if max_chars is None:
        return result
    parts = result.content
    total = sum(len(p.text) if isinstance(p, TextContent) else len(p.data or p.url) for p in parts)
    if total <= max_chars:
        return result
    budget = max(0, max_chars)
    kept: list[TextContent | ImageContent] = []
    for part in parts:
        if isinstance(part, TextContent):
            if budget > 0:
                kept.append(TextContent(part.text[:budget]))
            budget -= len(part.text)
        else:
            size = len(part.data or part.url)
            kept.append(part if size <= budget else TextContent(f"{part.placeholder()} (left out: over the size cap)"))
            budget -= size
    note = f"[truncated: the tool result has {total:,} characters; the first {max_chars:,} are shown]"
    kept.append(TextContent(note))
    details = result.details
    if details is None or isinstance(details, dict):
        details = {**(details or {}), "truncated": {"chars": total, "max_chars": max_chars}}
    return AgentToolResult(kept, is_error=result.is_error, terminate=result.terminate, details=details,
                           usage=result.usage)
