"""The standalone SSE stream of a Streamable HTTP session (``GET``), read on a daemon thread.

Server messages tied to no request travel here: ``tools/list_changed``,
server requests such as ``elicitation/create`` or ``ping``. One bad event
(not JSON, a response nobody waits for, over the event limit) is logged and
skipped, or ends this connection only, which is reopened: it never stops the
listener while the server keeps the stream. A ``GET`` answered with an error
status or anything but ``text/event-stream`` (a web page, JSON) means the
server has no such stream: the listener stops at once (MCP: SSE or 405). A stream that ends is reopened
with ``Last-Event-ID`` after its ``retry`` delay, at most 5 times in a row
without an event. It has a connection of its own, so ``cancel()`` of the
transport leaves it open; ``stop()`` ends it within 2 s.

Spec: MCP 2025-11-25, "Streamable HTTP", "Listening for Messages from the Server".
"""

from __future__ import annotations

import codecs
import logging
import threading
from typing import Any, Protocol

import requests

from .._internal.http import CancellableSession, body_chunks
from ..exceptions import FormatError, MCPError, MCPProtocolError
from ..formats.sse import SSEEvent, SSEParser
from .http_reply import NO_REQUEST, ReplyReader
from .transport import MessageHandler

__all__ = ["Listener"]

logger = logging.getLogger("yiemagent.mcp.http")

_MAX_FAILURES = 5
_DEFAULT_RETRY_SECONDS = 1.0


class _Owner(Protocol):
    """What the listener needs of its ``HTTPTransport``."""

    url: str
    name: str
    connect_timeout_seconds: float
    max_event_bytes: int
    follow_cross_origin_redirects: bool

    def stream_headers(self, last_event_id: str | None) -> dict[str, str]: ...

    def reauthorize(self, response: requests.Response, again: bool = False) -> bool: ...

    def answer(self, message: dict[str, Any], on_message: MessageHandler | None) -> None: ...

    def scrub(self, text: str) -> str: ...


class Listener:
    """The ``GET`` stream of one session on a daemon thread.

    Args:
        owner: the transport (headers, answering server requests, scrubbing).
        on_message: ``on_message(message) -> reply | None``, called on the
            listener thread.
        listening: set while the server keeps the stream open (HTTP 200).
    """

    def __init__(self, owner: _Owner, on_message: MessageHandler, listening: threading.Event) -> None:
        self.owner = owner
        self.on_message = on_message
        self.listening = listening
        self._stop = threading.Event()
        self._settled = threading.Event()
        self.refusal: str | None = None
        """Set when the server refused the stream: ``"GET answered HTTP 405"``, ``"POST subscriptions/listen
        answered HTTP 404"`` (the status, or the Content-Type of a 2xx that is not SSE)."""
        self._session = CancellableSession(follow_cross_origin_redirects=owner.follow_cross_origin_redirects)
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"yiemagent-mcp-listen-{owner.name}")

    kind = "standalone SSE stream"
    """What the stream is called in the log."""
    request_line = "GET"
    """The request that opens the stream, as the log and ``refusal`` name it."""
    refused_level = logging.INFO
    """Log level of a refused stream (the handshake era's ``GET`` stream is optional)."""

    def start(self, settle_seconds: float) -> None:
        """Start the thread; return once the server answered the ``GET`` (at most ``settle_seconds``)."""
        self._thread.start()
        self._settled.wait(settle_seconds)

    def stop(self) -> None:
        """End the stream and the thread (joined for at most 2 s); safe from any thread, also the listener's."""
        self._stop.set()
        self.listening.clear()
        self._session.cancel()
        if self._thread is not threading.current_thread() and self._thread.is_alive():
            self._thread.join(timeout=2)
        self._session.close()

    @property
    def alive(self) -> bool:
        """True while the listener thread runs."""
        return self._thread.is_alive()

    def _run(self) -> None:
        try:
            self._listen()
        finally:
            self._settled.set()

    def _listen(self) -> None:
        owner = self.owner
        last_id: str | None = None
        wait = _DEFAULT_RETRY_SECONDS
        failures = 0
        reauthorized = False
        while not self._stop.is_set() and failures <= _MAX_FAILURES:
            reader = ReplyReader(NO_REQUEST, what=f"GET stream of {owner.name}", server=owner.name,
                                 deliver=lambda item: owner.answer(item, self.on_message),
                                 max_event_bytes=owner.max_event_bytes, max_messages=2**62, scrub=owner.scrub)
            parser = reader.parser()
            try:
                with self._open(last_id) as response:
                    content_type = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
                    if response.status_code in (401, 403) and not reauthorized and self._reauthorize(response):
                        reauthorized = True  # a new token (OAuth): open the stream once more
                        continue
                    if response.status_code >= 400 or content_type != "text/event-stream":
                        # spec: SSE or 405; a web page or JSON is not a stream to reopen forever
                        self._refused(response, content_type)
                        return
                    self.listening.set()
                    self._settled.set()
                    reauthorized = False  # the token may expire again while the stream is open
                    if self._read(response, reader, parser):
                        failures = 0
            except (requests.RequestException, MCPProtocolError) as exc:
                if self._stop.is_set():
                    return
                logger.debug("%s: the standalone SSE stream broke: %s", owner.name, owner.scrub(str(exc)))
            finally:
                if not self._stop.is_set():
                    self.listening.clear()
            last_id = parser.last_event_id or last_id
            wait = parser.retry_ms / 1000 if parser.retry_ms is not None else wait
            failures += 1
            self._stop.wait(wait)

    def _reauthorize(self, response: requests.Response) -> bool:
        """The transport's OAuth flow for a 401/403 of the stream; False (logged) if it failed."""
        try:
            return self.owner.reauthorize(response)
        except MCPError as exc:
            logger.warning("%s: no %s: %s", self.owner.name, self.kind, exc)
            return False

    def _refused(self, response: requests.Response, content_type: str) -> None:
        """Record and log that the server has no such stream (an error status, or not ``text/event-stream``)."""
        status = response.status_code
        how = f"HTTP {status}" if status >= 400 else f"HTTP {status} with Content-Type {content_type!r}"
        self.refusal = f"{self.request_line} answered {how}"  # the body is not read: this stream has no deadline
        level = self.refused_level if status != 405 else logging.DEBUG
        logger.log(level, "%s: no %s (%s)", self.owner.name, self.kind, self.refusal)

    def _open(self, last_id: str | None) -> requests.Response:
        """The stream's HTTP response (legacy: ``GET`` with ``Last-Event-ID``; see ``SubscriptionListener``)."""
        return self._session.get(self.owner.url, headers=self.owner.stream_headers(last_id), stream=True,
                                 timeout=(self.owner.connect_timeout_seconds, None))

    def _read(self, response: requests.Response, reader: ReplyReader, parser: SSEParser) -> bool:
        """Read events until the stream ends; True if at least one arrived. Bad events are logged and skipped."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        got = False
        for chunk in body_chunks(response):
            for event in _feed(reader, parser, decoder.decode(chunk)):
                got = True
                try:
                    reader.event(event)
                except MCPProtocolError as exc:
                    logger.warning("%s: skipped a bad message on the standalone stream: %s", self.owner.name, exc)
        return got


def _feed(reader: ReplyReader, parser: SSEParser, text: str) -> list[SSEEvent]:
    try:
        return parser.feed(text)
    except FormatError as exc:  # an event over the limit ends this connection; it is reopened
        raise reader.error(str(exc)) from None

