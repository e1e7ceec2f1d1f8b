"""Numbers a peer sent: read the same way at every boundary (model replies, MCP, OAuth, HTTP headers).

A peer's numeric field may come as a number, a float where an integer is meant
(``12.0``), a numeric string (``"12"``, ``" 3600 "``, ``"1e3"``) or nonsense
(``"abc"``, ``true``, ``NaN``, ``"Infinity"``, ``"1e999"``, an object). The
functions here turn each into a finite number or None; none of them raises.
Used for ``usage`` of model replies (``yiemagent.messages.normalise``), the
``Retry-After`` header (``_internal.retry``), OAuth ``expires_in`` and stored
``expires_at`` (``mcp.auth.tokens``), MCP ``notifications/progress`` and
sampling fields.

Counts fail closed (issue 33): a field that counts, prices or limits
(``usage``'s tokens and ``cost``, progress, ``maxTokens``) is never below 0
and always finite. A peer reporting ``completion_tokens: -1e9`` (a broken
proxy, an Anthropic-shape negative ``input_tokens``) or ``NaN`` has that
field dropped: it is *unknown*, it never lowers a total, a cost or a limit's
count. ``peer_usage`` reads a ``usage`` object so; ``count_value`` reads one
count of an object already read (a total, a stored usage). A WARNING is logged
once per field name and process.

Spec: RFC 8259 section 6 (JSON numbers); the rule of issue 27: *every numeric
field a peer sends may come as a string, a float or nonsense*.
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any

__all__ = ["count_value", "peer_count", "peer_number", "peer_numbers", "peer_usage"]

logger = logging.getLogger("yiemagent.numbers")
_warned: set[str] = set()
_warned_lock = threading.Lock()


def _warn_once(field: str, value: Any) -> None:
    """Log one WARNING per ``field`` name and process: a peer sent a count below 0 or not finite."""
    with _warned_lock:
        if field in _warned or len(_warned) > 256:
            return
        _warned.add(field)
    logger.warning("a peer reported %s=%.40r: a count is never below 0 or infinite; taken as unknown "
                   "(it does not lower any total)", field, value)

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


def count_value(value: Any, field: str = "") -> int | float | None:
    """``value`` when it is a finite number >= 0 (not a bool), else None (with a WARNING once per ``field``).

    For a count or a price already read as a number: a token count, a cost, a
    total summed from stored replies. A negative or non-finite number is
    unknown, never a negative amount.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if (isinstance(value, float) and not math.isfinite(value)) or value < 0:
        if field:
            _warn_once(field, value)
        return None
    return value


def peer_usage(value: Any, *, _depth: int = 0, _path: str = "usage") -> Any:
    """A model reply's ``usage`` object read as counts: as ``peer_numbers``, and no number below 0 or not finite.

    Every number of ``usage`` counts or prices (tokens, cached tokens, ``cost``):
    a negative or non-finite one (``-1e9``, ``NaN``, ``"-5"``, ``"1e999"``) is
    left out (unknown), with a WARNING once per field. Text that is no number
    (``"service_tier": "default"``) is kept. ``value`` itself is returned when
    nothing changes.
    """
    if not isinstance(value, dict) or _depth > 4:
        return value
    changed: dict[str, Any] | None = None
    for key, item in value.items():
        new, drop = item, False
        if isinstance(item, bool):
            continue
        if isinstance(item, str):
            number = peer_number(item)
            if number is not None:
                new = number
            elif _looks_numeric(item):  # "NaN", "-inf", "1e999": a number that is none
                drop = True
        elif isinstance(item, (int, float)):
            new = peer_number(item)
        elif isinstance(item, dict):
            new = peer_usage(item, _depth=_depth + 1, _path=f"{_path}.{key}")
        if isinstance(item, (int, float, str)) and not isinstance(new, dict) and (
                drop or (new is not item and new is None) or (isinstance(new, (int, float)) and new < 0)):
            drop = True
            _warn_once(f"{_path}.{key}", item)
        if drop or new is not item:
            if changed is None:
                changed = dict(value)
            if drop:
                del changed[key]
            else:
                changed[key] = new
    return value if changed is None else changed


def _looks_numeric(text: str) -> bool:
    """True for a text a number parser reads as a non-finite number (``"NaN"``, ``"-Infinity"``, ``"1e999"``)."""
    try:
        return not math.isfinite(float(text.strip()[:_MAX_TEXT]))
    except ValueError:
        return False
