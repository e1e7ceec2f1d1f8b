"""One depth-bounded JSON reader, for every body, line, file and schema yiemagent parses or walks.

Python's ``json`` decoder recurses once per nested array or object: a body
nested some thousand levels deep (``[[[[...``, a few kilobytes) raises
``RecursionError``, which callers that catch ``ValueError`` let through and
which may strike later, in whatever walks the value. Here nesting is bounded
*before* the decoder runs: ``loads_bounded`` counts the nesting of the text
(strings skipped) in linear time and refuses a text nested deeper than
``max_depth`` with ``JSONDepthError`` (a ``ValueError``), so every caller
that handles bad JSON handles it too. ``check_depth`` does the same for a
value already built (a JSON Schema given as ``output_type`` or a tool's
``input_schema``), iteratively.

Used at: model replies and stream events (``models.openai_chat``), MCP client
responses (HTTP bodies, SSE data, stdio lines: ``mcp.http_reply``,
``mcp.lines``, ``mcp.jsonrpc``), OAuth documents, stored state (``loop.state``,
``store.rows``, token files), config files (``mcp.config_dialects``) and
schema walking (``output.typed_output``, ``tools.agent_tool``). It is the one reader for
the served side's request bodies too (``mcp.server``), so both sides bound nesting alike.

Spec: RFC 8259 section 9 ("An implementation may set limits on ... the
maximum depth of nesting").
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["DEFAULT_MAX_DEPTH", "SCHEMA_MAX_DEPTH", "JSONDepthError", "check_depth", "check_schema_depth",
           "depth_exceeds", "loads_bounded", "nesting_exceeds"]

DEFAULT_MAX_DEPTH = 256
"""Deepest nesting of arrays and objects accepted (the outermost value is level 1).

Far above what any reply, message, schema or stored state needs, far below what the decoder and the
walks after it can follow."""

SCHEMA_MAX_DEPTH = 64
"""Deepest nesting of a JSON Schema given as ``output_type`` or a tool's ``input_schema`` (dicts and lists;
an object property is two levels): a validator walks a schema recursively, several frames a level."""

_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
"""A JSON string (skipped whole: its brackets are text) or one bracket."""


class JSONDepthError(ValueError):
    """A JSON text or value nested deeper than the bound (a ``ValueError``: bad JSON like any other)."""

    def __init__(self, max_depth: int, what: str = "JSON") -> None:
        super().__init__(f"{what} nested too deep (nested deeper than {max_depth} levels)")
        self.max_depth = max_depth


def depth_exceeds(text: str | bytes | bytearray, max_depth: int = DEFAULT_MAX_DEPTH) -> bool:
    """True when arrays and objects in the JSON ``text`` nest deeper than ``max_depth``; linear, no recursion.

    Brackets inside strings do not count. A text with fewer brackets than
    ``max_depth`` is answered at once (the common case: no scan).
    """
    if isinstance(text, (bytes, bytearray)):
        if text.count(b"[") + text.count(b"{") <= max_depth:
            return False
        text = bytes(text).decode("utf-8", "replace")
    elif text.count("[") + text.count("{") <= max_depth:
        return False
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif token in "]}":
            depth -= 1
    return False


def loads_bounded(text: str | bytes | bytearray, max_depth: int = DEFAULT_MAX_DEPTH, **options: Any) -> Any:
    """``json.loads(text, **options)`` refusing a text nested deeper than ``max_depth`` (the outer value is level 1).

    The nesting is counted on the text first (``depth_exceeds``), so the decoder never recurses past the bound.

    Raises:
        JSONDepthError: nested too deeply (a ``ValueError``, its message says "nested"); never ``RecursionError``.
        ValueError: not JSON (``json.JSONDecodeError``, ``UnicodeDecodeError``), or ``max_depth`` below 1.
    """
    if max_depth < 1:
        raise ValueError("max_depth must be at least 1")
    if depth_exceeds(text, max_depth):
        raise JSONDepthError(max_depth)
    try:
        return json.loads(text, **options)
    except RecursionError:  # a deep stack already: the bound was not enough here
        raise JSONDepthError(max_depth) from None


def nesting_exceeds(value: Any, max_depth: int) -> bool:
    """True when lists/dicts in ``value`` (a decoded value) nest deeper than ``max_depth``; iterative."""
    try:
        check_depth(value, max_depth)
    except JSONDepthError:
        return True
    return False


def check_depth(value: Any, max_depth: int = DEFAULT_MAX_DEPTH, what: str = "JSON value") -> None:
    """Raise ``JSONDepthError`` when dicts and lists in ``value`` nest deeper than ``max_depth``; iterative."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    deepest: dict[int, int] = {}  # a node shared by several parents is walked again only from deeper
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth > max_depth:  # a cycle (a dict holding itself) gets here too
            raise JSONDepthError(max_depth, what)
        if deepest.get(id(node), 0) >= depth:
            continue
        deepest[id(node)] = depth
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))


def check_schema_depth(schema: Any, what: str) -> None:
    """``ConfigError`` naming ``what`` when ``schema`` nests deeper than ``SCHEMA_MAX_DEPTH`` ."""
    try:
        check_depth(schema, SCHEMA_MAX_DEPTH, what)
    except JSONDepthError as exc:
        from ..exceptions import ConfigError

        raise ConfigError(f"{exc}: a JSON Schema this deep cannot be validated; flatten it or use $defs") from None
