"""Numbers a peer sent: read the same way at every boundary (model replies, MCP, OAuth, HTTP headers).

A peer's numeric field may come as a number, a float where an integer is meant
(``12.0``), a numeric string (``"12"``, ``" 3600 "``, ``"1e3"``) or nonsense
(``"abc"``, ``true``, ``NaN``, ``"Infinity"``, ``"1e999"``, an object). The
functions here turn each into a finite number or None; none of them raises.
Used for ``usage`` of model replies (``yiemagent.messages.normalise``), the
``Retry-After`` header (``_internal.retry``), OAuth ``expires_in`` and stored
``expires_at`` (``mcp.auth.tokens``), MCP ``notifications/progress`` and
sampling fields.

Spec: RFC 8259 section 6 (JSON numbers); the rule of issue 27: *every numeric
field a peer sends may come as a string, a float or nonsense*.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["peer_count", "peer_number", "peer_numbers"]

_MAX_TEXT = 64  # a longer "number" is nonsense (and float() of a huge digit string is slow)


def peer_number(value: Any) -> float | int | None:
    """``value`` as a finite number, or None.

    An ``int`` stays an ``int``; a numeric string or a float is read as a
    float (an integral one as an ``int``); booleans, NaN, infinities and
    anything else are None.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if not text or len(text) > _MAX_TEXT:
            return None
        try:
            return int(text)
        except ValueError:
            pass
        try:
            value = float(text)
        except ValueError:
            return None
    if not isinstance(value, float) or not math.isfinite(value):
        return None
    return int(value) if value.is_integer() and abs(value) < 2**63 else value


def peer_count(value: Any) -> int | None:
    """``value`` as a count (an integer >= 0: tokens, items), or None.

    ``12``, ``12.0`` and ``"12"`` are 12; a fraction, a negative number and
    nonsense are None.
    """
    number = peer_number(value)
    return number if isinstance(number, int) and number >= 0 else None


def peer_numbers(value: Any, *, _depth: int = 0) -> Any:
    """A copy of a numbers object (a reply's ``usage``) with numeric strings read as numbers.

    Nested objects (``prompt_tokens_details``) are read up to 4 levels; an
    integral float becomes an ``int`` (``7.0`` tokens are 7), a non-finite
    one None; a string that is not a number, and every other value, is kept
    as it is. ``value`` itself is returned when
    nothing changes (the common case: no copy).
    """
    if not isinstance(value, dict) or _depth > 4:
        return value
    changed: dict[str, Any] | None = None
    for key, item in value.items():
        new = item
        if isinstance(item, str):
            number = peer_number(item)
            new = item if number is None else number
        elif isinstance(item, float):
            new = peer_number(item)  # 7.0 tokens are 7; NaN and infinities are None
        elif isinstance(item, dict):
            new = peer_numbers(item, _depth=_depth + 1)
        if new is not item:
            if changed is None:
                changed = dict(value)
            changed[key] = new
    return value if changed is None else changed
