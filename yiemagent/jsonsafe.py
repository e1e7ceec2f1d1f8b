"""JSON safety: values every strict JSON parser accepts, and strict (de)serialisation.

``json.dumps`` writes ``NaN``/``Infinity`` (not JSON), raises on ``bytes``,
sets and non-string keys of odd types, and ``str.encode`` raises on lone
surrogates, so one such value in a history would make every later request
fail before it is sent. ``json_safe(value)`` returns a copy holding only
what RFC 8259 JSON can carry; ``dumps_strict`` and ``loads_strict`` refuse the
rest.

Rules of ``json_safe`` (each loosens, never drops a container):

* ``NaN``, ``Infinity``, ``-Infinity`` -> ``None``;
* dict keys -> ``str(key)`` (``True`` -> ``"True"``, ``1`` -> ``"1"``);
* ``bytes``/``bytearray`` -> text (UTF-8, undecodable bytes as U+FFFD);
* tuples, sets, frozensets -> lists (sets sorted by ``repr`` so output is stable);
* lone surrogates in strings -> U+FFFD;
* anything else (objects, Decimals, dates) -> ``str(value)``;
* nesting deeper than ``max_depth`` (default 64) -> ``None``; cycles -> ``None``.

Spec: RFC 8259 (JSON); Python ``json`` module.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["dumps_strict", "is_clean_text", "json_safe", "loads_strict"]

MAX_DEPTH = 64


def is_clean_text(text: str) -> bool:
    """True when ``text`` encodes as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _fix_text(text: str) -> str:
    if is_clean_text(text):
        return text
    return "".join(ch if not 0xD800 <= ord(ch) <= 0xDFFF else "\ufffd" for ch in text)


def json_safe(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """Return ``value`` with everything JSON cannot carry replaced (see the module docstring)."""
    return _safe(value, max_depth, set())


def _safe(value: Any, depth: int, active: set[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return _fix_text(str(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _fix_text(bytes(value).decode("utf-8", "replace"))
    if depth <= 0 or id(value) in active:
        return None
    if isinstance(value, dict):
        active.add(id(value))
        try:
            return {_fix_text(k) if isinstance(k, str) else str(_safe(k, 1, active)): _safe(v, depth - 1, active)
                    for k, v in list(value.items())}
        finally:
            active.discard(id(value))
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
        active.add(id(value))
        try:
            return [_safe(v, depth - 1, active) for v in items]
        finally:
            active.discard(id(value))
    try:
        return _fix_text(str(value))
    except Exception:  # a __str__ that raises: the type name still says what it was
        return f"<{type(value).__name__}>"


def dumps_strict(value: Any) -> str:
    """``json.dumps`` that writes only RFC 8259 JSON (characters kept, no ``\\u`` escapes).

    Values JSON cannot carry are replaced first (``json_safe``), so this never
    raises for a value of any type.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        text = json.dumps(json_safe(value), ensure_ascii=False, allow_nan=False)
    return text if is_clean_text(text) else _fix_text(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_STRICT = json.JSONDecoder(parse_constant=_no_constant)


def loads_strict(text: str) -> Any:
    """``json.loads`` that refuses ``NaN``/``Infinity`` and too deep nesting.

    Raises:
        ValueError: not RFC 8259 JSON (``json.JSONDecodeError`` is a ValueError);
            nesting too deep for the parser is reported the same way.
    """
    try:
        return _STRICT.decode(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
