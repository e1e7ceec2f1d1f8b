"""Hypothesis strategies and checks for the MCP HTTP wire: JSON-RPC messages, SSE byte streams, JSON bodies.

Shared by ``tests/property/test_wire_fuzz.py`` (a few thousand examples in CI) and
``scripts/fuzz_mcp_wire.py`` (100,000+). Each ``check_*`` function runs one example and raises
``AssertionError`` when a rule breaks:

- only documented exceptions come out (``MCPProtocolError`` from ``ReplyReader``; ``FormatError`` from a
  bounded ``SSEParser``);
- the outcome does not depend on where the chunks split (same response, same delivered messages, same
  error message);
- a returned response answers the pending id; every delivered message is a request or notification.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from yiemagent.exceptions import FormatError, MCPProtocolError
from yiemagent.formats.sse import SSEParser
from yiemagent.mcp.http_reply import ReplyReader

PENDING_ID = 7

json_scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=6), inner, max_size=3), max_leaves=8)
ids = st.one_of(st.just(PENDING_ID), st.integers(-3, 10), st.sampled_from(["7", "a", ""]), st.booleans(), st.none(),
                st.just(7.0))
methods = st.one_of(st.sampled_from(["ping", "notifications/progress", "notifications/message",
                                     "elicitation/create", "tools/list_changed"]), st.text(max_size=10), st.integers())


@st.composite
def messages(draw: Any) -> Any:
    """One JSON-RPC message, well-formed or not: notification, request, response, error, or any JSON."""
    kind = draw(st.sampled_from(["notification", "request", "result", "error", "junk", "both"]))
    base: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind == "notification":
        return {**base, "method": draw(methods), **draw(st.fixed_dictionaries({}, optional={"params": json_values}))}
    if kind == "request":
        return {**base, "id": draw(ids), "method": draw(methods)}
    if kind == "result":
        return {**base, "id": draw(ids), "result": draw(json_values)}
    if kind == "error":
        return {**base, "id": draw(ids), "error": {"code": draw(st.integers(-33000, 0)), "message": draw(st.text())}}
    if kind == "both":
        return {**base, "id": draw(ids), "result": {}, "error": {"code": 1, "message": ""}}
    return draw(json_values)


def _line_end(draw: Any) -> str:
    return str(draw(st.sampled_from(["\n", "\r\n", "\r"])))


@st.composite
def sse_streams(draw: Any) -> bytes:
    """An SSE byte stream of JSON-RPC messages with comments, ids, retry fields, other event types, mixed line
    endings, multi-line data and, sometimes, raw junk.
    """
    parts: list[str] = []
    if draw(st.booleans()):
        parts.append("\ufeff")
    for _ in range(draw(st.integers(0, 6))):
        end = _line_end(draw)
        choice = draw(st.sampled_from(["message", "message", "message", "comment", "id", "retry", "other", "junk",
                                       "multi"]))
        if choice == "message":
            parts.append(f"event: message{end}data: {json.dumps(draw(messages()))}{end}{end}")
        elif choice == "multi":
            text = json.dumps(draw(messages()), indent=1)
            parts.append("".join(f"data: {line}{end}" for line in text.split("\n")) + end)
        elif choice == "comment":
            parts.append(f": {draw(st.text(max_size=8)).replace(chr(10), ' ').replace(chr(13), ' ')}{end}")
        elif choice == "id":
            parts.append(f"id: {draw(st.text(max_size=5))}{end}data:{end}{end}")
        elif choice == "retry":
            parts.append(f"retry: {draw(st.integers(0, 10**12))}{end}")
        elif choice == "other":
            parts.append(f"event: ping{end}data: {draw(st.text(max_size=8))}{end}{end}")
        else:
            parts.append(draw(st.text(max_size=20)))
    data = "".join(parts).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        data = draw(st.binary(max_size=20)) + data if draw(st.booleans()) else data + draw(st.binary(max_size=20))
    return data


@st.composite
def json_bodies(draw: Any) -> bytes:
    """A JSON reply body: a message, a batch, or bytes that are almost or not at all JSON."""
    kind = draw(st.sampled_from(["message", "batch", "bytes", "deep", "number"]))
    if kind == "message":
        return json.dumps(draw(messages())).encode()
    if kind == "batch":
        return json.dumps(draw(st.lists(messages(), max_size=4))).encode()
    if kind == "deep":
        depth = draw(st.integers(1, 5000))
        return ("[" * depth + "]" * depth).encode()
    if kind == "number":
        return draw(st.sampled_from([b"1e999999", b"-1e400", b"NaN", b"Infinity", b"9" * 5000, b"1.5e-999"]))
    return bytes(draw(st.binary(max_size=40)))


def splits(data: bytes) -> Any:
    """Strategy: ``data`` cut into chunks at arbitrary byte boundaries (a multi-byte character may be split)."""
    return st.lists(st.integers(0, len(data)), max_size=8).map(
        lambda cuts: [data[a:b] for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(data)], strict=True)])


def _reader(delivered: list[Any], **limits: int) -> ReplyReader:
    return ReplyReader(PENDING_ID, what="tools/call to fuzz", server="fuzz", deliver=delivered.append, **limits)


def read_outcome(kind: str, chunks: list[bytes], **limits: int) -> tuple[str, Any, list[Any]]:
    """Run one reader over ``chunks``: ``("response", message, delivered)``, ``("ended", None, delivered)`` or
    ``("error", message text, delivered)``. Any other exception propagates (a fuzz failure).
    """
    delivered: list[Any] = []
    reader = _reader(delivered, **limits)
    try:
        if kind == "sse":
            found = reader.read_sse(iter(chunks), reader.parser())
        else:
            found = reader.read_json(iter(chunks))
    except MCPProtocolError as exc:
        assert str(exc).startswith("tools/call to fuzz: "), str(exc)[:200]
        return "error", str(exc), delivered
    if found is None:
        assert kind == "sse", "read_json never ends without a response or an error"
        return "ended", None, delivered
    return "response", found, delivered


def check_reader(kind: str, data: bytes, chunks: list[bytes], **limits: int) -> str:
    """The rules for one body: chunking-independent outcome, the response answers the pending id, delivered
    messages are requests or notifications with a string method. Returns the outcome kind.
    """
    assert b"".join(chunks) == data
    whole = read_outcome(kind, [data], **limits)
    split = read_outcome(kind, chunks, **limits)
    assert whole == split, (whole, split)
    outcome, value, delivered = split
    if outcome == "response":
        assert (value.get("id") == PENDING_ID and type(value.get("id")) is int) or (
            value.get("id") is None and "error" in value), value
    for item in delivered:
        assert isinstance(item, dict) and isinstance(item.get("method"), str), item
    return outcome


def check_sse_parser(text: str, cuts: list[int], max_event_chars: int | None) -> None:
    """``SSEParser`` gives the same events (or the same ``FormatError``) however the text is cut."""

    def run(pieces: list[str]) -> Any:
        parser = SSEParser(max_event_chars=max_event_chars)
        events: list[Any] = []
        try:
            for piece in pieces:
                events += parser.feed(piece)
            events += parser.close()
        except FormatError as exc:
            return "error", str(exc)
        return events, parser.last_event_id, parser.retry_ms

    bounds = sorted(set(cuts))
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]
    assert run([text]) == run(pieces)
