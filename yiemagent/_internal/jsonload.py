"""JSON a peer sent, decoded with bounded nesting: never a ``RecursionError``, whatever the text.

``loads_bounded(text, max_depth)`` is ``json.loads`` for text from outside
(request and reply bodies, stdio lines, schemas): a value nested deeper than
``max_depth`` (arrays and objects; the outer value is level 1) is a
``ValueError`` naming the bound, and so is text so deep that Python's decoder
itself gives up (its ``RecursionError`` becomes a ``ValueError``).
``nesting_exceeds(value, max_depth)`` checks a decoded value without recursion
(linear in its nodes), for values that did not come as text.

Spec: RFC 8259 section 9 ("An implementation may set limits on ... the maximum
depth of nesting").
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["DEFAULT_MAX_DEPTH", "loads_bounded", "nesting_exceeds"]

DEFAULT_MAX_DEPTH = 128
"""Deepest nesting accepted when the caller names none (as ``yiemagent.mcp.limits.DEFAULT_MAX_JSON_DEPTH``)."""


def nesting_exceeds(value: Any, max_depth: int) -> bool:
    """True when lists/dicts in ``value`` nest deeper than ``max_depth`` (``value`` itself is level 1).

    Iterative: no input can exhaust the Python stack here.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def loads_bounded(text: str | bytes | bytearray, max_depth: int = DEFAULT_MAX_DEPTH, **options: Any) -> Any:
    """``json.loads(text, **options)``, refusing nesting deeper than ``max_depth``.

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``, ``UnicodeDecodeError``), or nested deeper than
            ``max_depth`` (the message says "nested"), or ``max_depth`` below 1.
    """
    if max_depth < 1:
        raise ValueError("max_depth must be at least 1")
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise ValueError(f"JSON nested too deep to decode (more than {max_depth} levels)") from None
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if raw.count(b"[") + raw.count(b"{") > max_depth and nesting_exceeds(value, max_depth):
        raise ValueError(f"JSON nested deeper than {max_depth} levels")
    return value
