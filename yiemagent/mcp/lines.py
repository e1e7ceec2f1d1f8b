"""Newline-delimited JSON-RPC framing for stdio: bounded line reading, parsing, and strict encoding.

Reading (``LineReader``): a byte stream is cut into lines of at most
``max_line_bytes``, read in chunks of ``CHUNK_BYTES``; a longer line is never
held in memory: its first and last ``SNIFF_BYTES`` are kept (to find the
request it answered) and the rest is discarded up to the next ``\\n``. Work is
linear in the bytes read, whatever their shape.

Parsing (``parse_line``): one line -> its JSON-RPC message objects; anything
else (not UTF-8, not JSON, nested too deep, not objects) is a ``ValueError``.
A UTF-8 byte order mark at the start of a line is ignored (RFC 8259 §8.1).

Identifying (``sniff_response_id``): the ``id`` of a response whose line could
not be parsed, from the top-level ``"id"`` at the start or end of the line as
the SDKs write it (Python: ``{"jsonrpc","id","result"}``; TypeScript:
``{"result","jsonrpc","id"}``), so that the request it answered fails at once
instead of waiting out its timeout.

Writing (``encode_message``): compact UTF-8 JSON plus ``\\n``; a value a strict
peer would reject (a lone surrogate, ``NaN``/``Infinity``, a non-JSON type) is a
``MCPProtocolError`` before anything is written.

Spec: MCP 2025-11-25, "Transports", stdio (messages are delimited by newlines
and MUST NOT contain embedded newlines; UTF-8); JSON-RPC 2.0; RFC 8259.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from .._internal.jsonload import loads_bounded
from ..exceptions import MCPProtocolError
from ..textpolicy import boundary, strict_json_text

__all__ = [
    "CHUNK_BYTES",
    "SNIFF_BYTES",
    "LineReader",
    "OversizedLine",
    "encode_message",
    "parse_line",
    "sniff_response_id",
]

CHUNK_BYTES = 65536
"""Bytes asked from the pipe per read."""

SNIFF_BYTES = 4096
"""Bytes kept from the start and the end of a line that cannot be used, to find its ``id``."""

BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark; ignored at the start of a line."""


@dataclass
class OversizedLine:
    """A line longer than ``max_line_bytes``: only its ends were kept."""

    size: int
    """Bytes of the line (without its ``\\n``); a lower bound if the stream ended first."""
    head: bytes
    """Its first ``SNIFF_BYTES``."""
    tail: bytes
    """Its last ``SNIFF_BYTES``."""


class LineReader:
    """Iterate over the lines of ``stream`` (``bytes`` without ``\\n``, or ``OversizedLine``).

    Args:
        stream: a binary stream with ``read1`` (``subprocess.Popen.stdout``)
            or ``read``.
        max_line_bytes: longest line given whole; longer ones come as
            ``OversizedLine`` and are never buffered whole.

    Ends at end of stream; a last line without ``\\n`` is given too. Memory
    used: at most ``max_line_bytes + CHUNK_BYTES`` bytes.
    """

    def __init__(self, stream: IO[bytes], max_line_bytes: int) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be at least 1")
        self._read = stream.read1 if hasattr(stream, "read1") else stream.read
        self.max_line_bytes = max_line_bytes

    def __iter__(self) -> Iterator[bytes | OversizedLine]:
        buffer = bytearray()
        oversized: OversizedLine | None = None  # set while discarding the rest of a long line
        limit = self.max_line_bytes
        while True:
            chunk = self._read(CHUNK_BYTES)
            if not chunk:
                break
            start = 0
            while start < len(chunk):
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                start = len(chunk) if end < 0 else end + 1
                if oversized is not None:
                    oversized.size += len(piece)
                    if len(oversized.head) < SNIFF_BYTES:
                        oversized.head = (oversized.head + piece[:SNIFF_BYTES])[:SNIFF_BYTES]
                    oversized.tail = (oversized.tail + piece)[-SNIFF_BYTES:]
                elif len(buffer) + len(piece) > limit:
                    head = (bytes(buffer[:SNIFF_BYTES]) + piece[:SNIFF_BYTES])[:SNIFF_BYTES]
                    oversized = OversizedLine(len(buffer) + len(piece), head,
                                              (bytes(buffer[-SNIFF_BYTES:]) + piece)[-SNIFF_BYTES:])
                    buffer.clear()
                else:
                    buffer += piece
                if end >= 0:
                    if oversized is not None:
                        yield oversized
                        oversized = None
                    else:
                        yield bytes(buffer)
                        buffer.clear()
        if oversized is not None:
            yield oversized
        elif buffer:
            yield bytes(buffer)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def parse_line(raw: bytes, *, max_depth: int = 128) -> list[dict[str, Any]]:
    """The JSON-RPC messages of one stdout line (a batch array gives several).

    Args:
        raw: one line as read, with or without its ``\\n`` / ``\\r\\n``.
        max_depth: deepest nesting of arrays and objects accepted (the
            message object itself is depth 1).

    Returns:
        The message objects; ``[]`` for a blank line.

    Raises:
        ValueError: the line is not UTF-8, not JSON (``NaN``,
            ``Infinity`` and numbers out of float range are not JSON, nor are
            integers over Python's 4,300-digit limit), nested deeper than
            ``max_depth``, or not JSON objects (``UnicodeDecodeError`` and
            ``json.JSONDecodeError`` are ValueErrors; a ``RecursionError``
            of the decoder becomes one too).
    """
    line = raw.strip()
    if line.startswith(BOM):  # RFC 8259 §8.1: a parser may ignore a byte order mark (Windows servers write one)
        line = line[len(BOM):].lstrip()
    if not line:
        return []
    text = line.decode("utf-8")
    item = loads_bounded(text, max_depth, parse_constant=_no_constant, parse_float=_finite_float)
    items = item if isinstance(item, list) else [item]
    if not items or not all(isinstance(each, dict) for each in items):
        raise ValueError("a JSON value that is not a JSON-RPC message object")
    return items


_ID_VALUE = rb'(-?\d{1,18}|"(?:[^"\\\x00-\x1f]|\\.){0,256}")'
_HEAD_ID = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID_VALUE + rb"\s*[,}]")
_TAIL_ID = re.compile(rb'[{,]\s*"id"\s*:\s*' + _ID_VALUE + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')


def sniff_response_id(head: bytes, tail: bytes = b"") -> int | str | None:
    """The top-level ``id`` of an unreadable response line, from its first or last bytes; None if not found.

    Only an ``id`` that is the first member (or second, after ``"jsonrpc":
    "2.0"``) or the last member (or the one before a final ``"jsonrpc"``) is
    taken, so an ``"id"`` inside the result is never mistaken for it. Both
    inputs are at most ``SNIFF_BYTES`` long: the patterns cannot backtrack
    badly.
    """
    head = head[len(BOM):] if head.startswith(BOM) else head
    for pattern, data in ((_HEAD_ID, head[:SNIFF_BYTES]), (_TAIL_ID, (tail or head)[-SNIFF_BYTES:])):
        found = pattern.search(data)
        if found is None:
            continue
        token = found.group(1)
        try:
            value = json.loads(token.decode("utf-8"))
        except ValueError:
            continue
        if isinstance(value, (int, str)) and not isinstance(value, bool):
            return value
    return None


@boundary("mcp_request_stdio", "mcp")
def encode_message(message: dict[str, Any], *, server: str = "") -> bytes:
    """``message`` as one line of compact UTF-8 JSON ending in ``\\n``.

    The outbound text policy's ``mcp`` rule (``yiemagent.textpolicy``): C1
    controls written as ``\\u`` escapes; what strict peers refuse is refused.

    Raises:
        MCPProtocolError: a value no strict JSON peer accepts: a string with
            a lone surrogate (cannot be UTF-8), ``NaN`` or ``Infinity``, or a
            value that is not JSON (a set, bytes, an object).
    """
    what = message.get("method") or "a reply"
    try:
        return strict_json_text(message, separators=(",", ":")).encode("utf-8") + b"\n"
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end]
        raise MCPProtocolError(
            f"cannot send {what} to {server or 'the server'}: it holds a string that is not valid Unicode "
            f"({bad.encode('unicode_escape').decode('ascii')} at character {exc.start}, a lone surrogate)",
            server=server,
        ) from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise MCPProtocolError(f"cannot send {what} to {server or 'the server'}: not JSON: {exc}",
                               server=server) from None
