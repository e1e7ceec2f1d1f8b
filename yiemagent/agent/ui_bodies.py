"""Request bodies a web frontend sends, read bounded: size, JSON nesting, list lengths, string lengths.

A chat route reads what any client may send: an AG-UI ``RunAgentInput`` (``threadId``, ``messages``,
``resume``), a Vercel ``useChat`` body (``id``, ``messages`` of ``UIMessage`` with ``parts``), a plain
``{"message"}``. ``read_ui_body(stream, content_length)`` reads one with ``UIBodyLimits``; anything past a
bound is a ``UIBodyRefused`` carrying the HTTP status to answer, never a ``RecursionError`` (a framework's
``get_json`` on ``[[[[...`` nested 100,000 deep) nor a body read whole into memory::

    try:
        body = read_ui_body(request.stream, request.content_length)
    except UIBodyRefused as refused:
        return jsonify(error=str(refused)), refused.status

Bounds (``UIBodyLimits``, each >= 1):

- ``max_body_bytes`` (1 MiB): a longer body, or a ``Content-Length`` announcing one, is 413, read no further;
- ``max_depth`` (64): JSON nested deeper is 400 (``_internal.jsonload``: linear, no recursion);
- ``max_items`` (1,000): any array in the body longer than that (``messages``, a message's ``parts`` or
  ``content``, ``resume``) is 413;
- ``max_text_chars`` (256 Ki characters): any string longer than that (a part's ``text``, a tool result) is 413.

Not JSON (``NaN``, ``Infinity`` and a number past a float's range, ``1e999``, included), or JSON that is not
an object: 400.

Spec: RFC 9110 section 15.5.14 (413 Content Too Large); RFC 8259 section 9 (limits on depth and sizes);
AG-UI 1.0 ``RunAgentInput``; Vercel AI SDK ``useChat`` request body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .._internal.jsonload import loads_bounded

__all__ = ["UIBodyLimits", "UIBodyRefused", "check_ui_value", "read_ui_body"]


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


@dataclass(frozen=True)
class UIBodyLimits:
    """The bounds ``read_ui_body`` holds a body to (see the module docstring).

    Raises:
        ValueError: a bound that is not an int >= 1.
    """

    max_body_bytes: int = 1024 * 1024
    max_depth: int = 64
    max_items: int = 1000
    max_text_chars: int = 256 * 1024

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_depth", "max_items", "max_text_chars"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"UIBodyLimits.{name} must be an int >= 1, not {value!r}")


class UIBodyRefused(ValueError):
    """A body refused: ``status`` is the HTTP status to answer (400 unreadable, 413 too large), the message why."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def read_ui_body(stream: _Readable, content_length: int | None, limits: UIBodyLimits | None = None, *,
                 allow_empty: bool = False) -> dict[str, Any]:
    """The JSON object in the request body ``stream`` (``Content-Length`` ``content_length``, None if not given).

    Reads at most ``limits.max_body_bytes + 1`` bytes; the announced length past the bound is refused unread.
    ``allow_empty``: an empty body is ``{}`` (else 400).

    Raises:
        UIBodyRefused: 413 too large (bytes, an array, a string); 400 not JSON, nested too deep, not an object.
    """
    limits = limits or UIBodyLimits()
    if content_length is not None and content_length > limits.max_body_bytes:
        raise UIBodyRefused(f"the request body is larger than {limits.max_body_bytes} bytes", 413)
    raw = stream.read(limits.max_body_bytes + 1 if content_length is None else content_length)
    if len(raw) > limits.max_body_bytes:
        raise UIBodyRefused(f"the request body is larger than {limits.max_body_bytes} bytes", 413)
    if allow_empty and not raw.strip():
        return {}
    try:
        body = loads_bounded(raw, max_depth=limits.max_depth, parse_constant=_not_json, parse_float=_finite)
    except ValueError as exc:
        nested = "nested" in str(exc)
        raise UIBodyRefused(f"JSON nested deeper than {limits.max_depth} levels" if nested
                            else "the request body is not JSON", 400) from None
    if not isinstance(body, dict):
        raise UIBodyRefused("the request body must be a JSON object", 400)
    check_ui_value(body, limits)
    return body


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:20]} is not a finite number")
    return value


def check_ui_value(value: Any, limits: UIBodyLimits | None = None) -> None:
    """Refuse ``value`` (decoded JSON) with an array longer than ``max_items`` or a string past ``max_text_chars``.

    Iterative: no nesting exhausts the stack.

    Raises:
        UIBodyRefused: 413, naming the bound.
    """
    limits = limits or UIBodyLimits()
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if len(node) > limits.max_text_chars:
                raise UIBodyRefused(f"a string in the request body is longer than {limits.max_text_chars} "
                                    "characters", 413)
        elif isinstance(node, list):
            if len(node) > limits.max_items:
                raise UIBodyRefused(f"an array in the request body has more than {limits.max_items} items", 413)
            stack.extend(node)
        elif isinstance(node, dict):
            if len(node) > limits.max_items:
                raise UIBodyRefused(f"an object in the request body has more than {limits.max_items} members", 413)
            stack.extend(node.keys())
            stack.extend(node.values())
