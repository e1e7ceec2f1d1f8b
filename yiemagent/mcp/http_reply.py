"""Reading one Streamable HTTP reply (a JSON body or an SSE stream) strictly and under size limits.

Pure: the transport hands in the body as byte chunks (any boundaries) and a
``deliver`` callback for server messages; ``ReplyReader`` returns the
response to the pending request or raises ``MCPProtocolError`` at the first
byte that breaks the protocol, so a broken peer never makes a request wait
out its timeout:

- bytes that are not UTF-8, text that is not JSON (also ``NaN``,
  ``Infinity``, a number out of float range, an integer over Python's digit
  limit), nesting deeper than ``MAX_JSON_DEPTH`` (128, as on stdio), a
  message that is neither a request, a notification nor a response;
- a response whose ``id`` is not the pending request's (compared with its
  JSON type: ``1``, ``1.0``, ``true`` and ``"1"`` are four ids); an error
  with ``id: null`` answers the pending request (JSON-RPC 2.0: the server
  could not read its id);
- more than ``max_body_bytes`` of JSON body, an SSE event over
  ``max_event_bytes``, more than ``max_messages`` messages for one request
  (nothing past the limit is read into memory).

Time and memory are linear in the input. Limits (yiemagent-defined):
``MAX_BODY_BYTES`` (8 MiB), ``MAX_EVENT_BYTES`` (8 MiB), ``MAX_MESSAGES``
(10,000 per request, SSE events of any type and JSON batch items alike).

Spec: MCP 2025-11-25, "Transports" (Streamable HTTP), "Base Protocol"
(JSON-RPC 2.0 ids); RFC 8259 (JSON), WHATWG "Server-sent events".
"""

from __future__ import annotations

import codecs
import math
from collections.abc import Callable, Iterable
from typing import Any

from .._internal.jsonload import loads_bounded
from ..exceptions import FormatError, MCPProtocolError
from ..formats.sse import SSEEvent, SSEParser

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_EVENT_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_MESSAGES",
    "NO_REQUEST",
    "ReplyReader",
    "loads_strict",
    "too_deep",
]

MAX_BODY_BYTES = 8 * 1024 * 1024
"""Bytes a JSON reply body may have (checked against ``Content-Length`` first, then as it arrives)."""
MAX_EVENT_BYTES = 8 * 1024 * 1024
"""Characters (at most as many bytes) one SSE event may hold."""
MAX_MESSAGES = 10_000
"""Messages (SSE events, JSON batch items) one request may receive before its response."""
MAX_JSON_DEPTH = 128
"""Deepest nesting of arrays and objects in one message (the message object is level 1); the same rule as
the stdio transport's, so that nothing later (encoding, validation) meets a recursion limit."""

NO_REQUEST = object()
"""``request_id`` of a stream that answers no request (the standalone ``GET``): every response is unexpected."""

_ERROR_CHARS = 500


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def loads_strict(text: str) -> Any:
    """``json.loads`` that refuses what RFC 8259 refuses, with one exception type.

    Raises:
        ValueError: not JSON, ``NaN``/``Infinity``, a number out of range, an
            integer over ``sys.get_int_max_str_digits()`` digits, or nesting
            too deep for the decoder (a ``RecursionError`` inside).
    """
    try:
        return loads_bounded(text, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("JSON nested too deeply to decode") from None


def too_deep(value: Any, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """True when lists and dicts in ``value`` nest deeper than ``max_depth`` (``value`` is level 1).

    Iterative and linear in the number of containers: no input exhausts the Python stack here.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _same_id(got: Any, expected: Any) -> bool:
    return type(got) is type(expected) and got == expected and not isinstance(got, bool)


def _valid_request_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class ReplyReader:
    """Reads the reply to one request (or the messages of a stream tied to none).

    Args:
        request_id: the id of the pending request; ``NO_REQUEST`` for the
            standalone stream.
        what: ``"tools/call to <server>"``, the start of every error message.
        server: the server name carried by errors.
        deliver: receives each server request and notification, in order
            (the transport answers requests).
        max_body_bytes, max_event_bytes, max_messages: the limits above.
        scrub: hides secrets in the excerpts kept in errors.

    ``messages`` counts what was read so far, across resumed streams.
    Not thread-safe: one reader per request.
    """

    def __init__(
        self,
        request_id: Any,
        *,
        what: str,
        server: str,
        deliver: Callable[[dict[str, Any]], None],
        max_body_bytes: int = MAX_BODY_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
        max_messages: int = MAX_MESSAGES,
        scrub: Callable[[str], str] = str,
    ) -> None:
        self.request_id = request_id
        self.what = what
        self.server = server
        self.deliver = deliver
        self.max_body_bytes = max_body_bytes
        self.max_event_bytes = max_event_bytes
        self.max_messages = max_messages
        self.scrub = scrub
        self.messages = 0

    def error(self, problem: str, excerpt: str = "") -> MCPProtocolError:
        """``MCPProtocolError("<what>: <problem>")`` with a scrubbed excerpt as ``.body``."""
        return MCPProtocolError(f"{self.what}: {problem}", server=self.server,
                                body=self.scrub(excerpt[:_ERROR_CHARS]))

    # ------------------------------------------------------------------ JSON bodies

    def read_json(self, chunks: Iterable[bytes], declared_length: int | None = None) -> dict[str, Any]:
        """Read a whole ``application/json`` body; return the response to ``request_id``.

        Raises:
            MCPProtocolError: see the module (also: the body has no response).
            whatever ``chunks`` raises (the transport's read errors).
        """
        if declared_length is not None and declared_length > self.max_body_bytes:
            raise self.error(f"the JSON answer has {declared_length} bytes (Content-Length), over the "
                             f"{self.max_body_bytes}-byte limit; it was not read")
        body = bytearray()
        for chunk in chunks:
            body += chunk
            if len(body) > self.max_body_bytes:
                raise self.error(f"the JSON answer is over the {self.max_body_bytes}-byte limit; the rest was "
                                 "not read", body[:_ERROR_CHARS].decode("utf-8", "replace"))
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"the JSON answer is not UTF-8 ({exc.reason} at byte {exc.start})",
                             body[:_ERROR_CHARS].decode("utf-8", "replace")) from None
        found = self.take(text, "the JSON answer")
        if found is None:
            raise self.error(f"the answer has no response with id {self.request_id!r}", text)
        return found

    # ------------------------------------------------------------------ SSE streams

    def parser(self) -> SSEParser:
        """A fresh ``SSEParser`` bounded by ``max_event_bytes``."""
        return SSEParser(max_event_chars=self.max_event_bytes)

    def read_sse(self, chunks: Iterable[bytes], parser: SSEParser) -> dict[str, Any] | None:
        """Read an SSE stream until the response to ``request_id``; None if it ended first.

        ``parser`` keeps ``last_event_id`` and ``retry_ms`` for a resume.

        Raises:
            MCPProtocolError: see the module.
            whatever ``chunks`` raises (a broken stream: the transport may resume).
        """
        decoder = codecs.getincrementaldecoder("utf-8")("strict")
        for chunk in chunks:
            try:
                text = decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                # what came before the bad byte counts, so the outcome never depends on where chunks split
                found = self._events(parser, bytes(exc.object[:exc.start]).decode("utf-8"))
                if found is not None:
                    return found
                self._events(parser, "")  # an overflow in that text comes first
                raise self.error(f"the SSE stream is not UTF-8 ({exc.reason})") from None
            found = self._events(parser, text)
            if found is not None:
                return found
        try:
            tail = decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            self._events(parser, "")  # an overflow seen before the cut character comes first
            raise self.error(f"the SSE stream ends inside a UTF-8 character ({exc.reason})") from None
        found = self._events(parser, tail)
        if found is not None:
            return found
        for event in parser.close():
            found = self.event(event)
            if found is not None:
                return found
        return None

    def _events(self, parser: SSEParser, text: str) -> dict[str, Any] | None:
        try:
            events = parser.feed(text)
        except FormatError as exc:
            raise self.error(f"{exc} (limit max_event_bytes={self.max_event_bytes})") from None
        for event in events:
            found = self.event(event)
            if found is not None:
                return found
        return None

    def event(self, event: SSEEvent) -> dict[str, Any] | None:
        """Take one dispatched SSE event; return the response if it is the one awaited."""
        if event.event != "message":
            self._count()
            return None  # other event types carry no JSON-RPC message
        return self.take(event.data, "an SSE event")

    # ------------------------------------------------------------------ messages

    def _count(self) -> None:
        self.messages += 1
        if self.messages > self.max_messages:
            raise self.error(f"over {self.max_messages} messages before the response (limit max_messages)")

    def take(self, text: str, where: str) -> dict[str, Any] | None:
        """Decode one JSON text (a message or a batch); deliver server messages; return the awaited response."""
        try:
            payload = loads_strict(text)
        except ValueError as exc:
            raise self.error(f"{where} is not JSON: {exc}", text) from None
        if isinstance(payload, (dict, list)) and too_deep(payload, MAX_JSON_DEPTH + isinstance(payload, list)):
            raise self.error(f"{where} nests deeper than {MAX_JSON_DEPTH} levels (limit MAX_JSON_DEPTH)",
                             text[:_ERROR_CHARS])
        if isinstance(payload, list):
            if not payload:
                raise self.error(f"{where} is an empty batch", text)
            items = payload
        else:
            items = [payload]
        for item in items:
            found = self.message(item)
            if found is not None:
                return found
        return None

    def message(self, item: Any) -> dict[str, Any] | None:
        """Classify one decoded message: deliver a request or notification, return the awaited response."""
        self._count()
        if not isinstance(item, dict):
            raise self.error(f"a message is not a JSON object: {type(item).__name__}", repr(item))
        if "method" in item:
            if not isinstance(item["method"], str):
                raise self.error("a message's method is not a string", repr(item))
            if "id" in item and not _valid_request_id(item["id"]):
                raise self.error(f"a server request has an id that is not a string or integer: {item['id']!r:.80}",
                                 repr(item))
            self.deliver(item)
            return None
        if "id" in item and ("result" in item) != ("error" in item):
            if self.request_id is not NO_REQUEST and (
                _same_id(item["id"], self.request_id) or (item["id"] is None and "error" in item)
            ):
                return item  # id null: the server's error for a request it could not read (JSON-RPC 2.0, 5.1)
            pending = "no request is pending on this stream" if self.request_id is NO_REQUEST else (
                f"the pending request is {self.request_id!r}")
            raise self.error(f"a response for id {item['id']!r:.80}, but {pending}", repr(item))
        raise self.error("a message is neither a request, a notification nor a response", repr(item))
