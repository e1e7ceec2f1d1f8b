"""One hostile corpus and the checks of each boundary kind (``yiemagent.textpolicy``): shared by
``tests/property/test_boundaries.py`` (CI) and ``scripts/fuzz_boundaries.py`` (100,000+ examples).
"""

from __future__ import annotations

import importlib
import json
import logging
import pkgutil
from typing import Any

from hypothesis import strategies as st

import yiemagent
from yiemagent.textpolicy import BOUNDARIES, Boundary, register_secrets

SECRET = "sk-boundary-0123456789abcdef"
"""A registered secret planted in the corpus; no boundary but ``mcp`` may write it."""

HOSTILE_PIECES = [
    "\x1b[2J", "\x1b[H", "\x1b[3A", "\x1b]0;title\x07", "\x1b]52;c;ZXZpbA==\x07", "\x1b]8;;http://x/\x1b\\",
    "\x1bP+q\x1b\\", "\x1b", "\x9b31m", "\x9d0;t\x9c", "\x07", "\r", "\n", "\x00", "\x7f", "\u202e", "\u2066",
    "\ud800", "\udcff", "\udfff", "\u2028", SECRET, "${TOKEN}", "caf\u00e9", "\U0001f600", "\ufeff",
]
pieces = st.sampled_from(HOSTILE_PIECES) | st.text(max_size=6)
hostile_text = st.lists(pieces, max_size=8).map("".join)
scalars = (hostile_text | st.none() | st.booleans() | st.integers(-2**70, 2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.binary(max_size=8))
hostile_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                              | st.dictionaries(hostile_text, inner, max_size=4), max_leaves=16)


def load_boundaries() -> dict[str, Boundary]:
    """Import every yiemagent module (each registers its boundaries) and return the table."""
    register_secrets([SECRET])
    for module in pkgutil.walk_packages(yiemagent.__path__, "yiemagent."):
        if ".examples" in module.name or module.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(module.name)
        except ImportError:  # an optional extra not installed
            pass
    return dict(BOUNDARIES)


def _bad_controls(text: str, allowed: str) -> list[str]:
    return [hex(ord(c)) for c in text if (ord(c) < 32 and c not in allowed) or 0x7F <= ord(c) <= 0x9F]


def feed(boundary: Boundary, value: Any) -> Any:
    """Run ``value`` through ``boundary`` the way its code does (a dict for JSON writers, text for others)."""
    if boundary.kind == "log":
        record = logging.LogRecord("yiemagent.fuzz", logging.WARNING, __file__, 1, "peer said %s and %r",
                                   (value, value), None)
        return boundary.apply(record).getMessage()
    if boundary.name == "sse":
        return boundary.apply("answer", {"content": value})
    if boundary.name == "ui_stream":
        return boundary.apply({"type": "TEXT_MESSAGE_CONTENT", "delta": value})
    if boundary.name == "mcp_unavailable":
        return json.dumps(boundary.apply(_text(value), _text(value)), ensure_ascii=False)
    if boundary.kind in ("terminal", "display"):
        return boundary.apply(_text(value))
    return boundary.apply({"content": value} if boundary.kind != "mcp" else
                          {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": value}})


def _text(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def check(boundary: Boundary, value: Any) -> None:
    """Run ``value`` through ``boundary`` and assert its kind's rule (raises AssertionError on a violation)."""
    if boundary.kind == "mcp":
        try:
            out = feed(boundary, value)
        except Exception as exc:  # the documented refusal only
            assert type(exc).__name__ == "MCPProtocolError", (boundary.name, type(exc), exc)
            return
        text = out.decode("utf-8") if isinstance(out, bytes) else out
        json.loads(text, parse_constant=_no_constant)
        assert not _bad_controls(text, "\n"), (boundary.name, text)
        return
    out = feed(boundary, value)
    text = out.decode("utf-8") if isinstance(out, bytes) else out
    assert isinstance(text, str)
    text.encode("utf-8")  # no lone surrogate
    assert SECRET not in text, (boundary.name, text)
    if boundary.kind == "json":
        sse = boundary.name in ("sse", "ui_stream")
        body = text.split("data: ", 1)[1] if sse else text
        json.loads(body, parse_constant=_no_constant)
        assert not _bad_controls(text, "\n" if sse else ""), (boundary.name, text)
    elif boundary.kind == "terminal":
        assert not _bad_controls(text, "\n\t"), (boundary.name, text)
        assert not any(0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069 for c in text)
    elif boundary.kind == "log":
        assert not _bad_controls(text, ""), (boundary.name, text)


def _no_constant(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON")
