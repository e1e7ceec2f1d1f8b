"""Resuming a request's SSE stream that ended before its response (Streamable HTTP, ``Last-Event-ID``).

A request's answer may be an SSE stream. If that stream ends, or its
connection breaks, before the response came, and the server gave event ids,
the transport waits the stream's ``retry`` delay (milliseconds in the stream;
``_DEFAULT_RETRY_SECONDS``, 1 s, if it gave none), then sends ``GET`` to the
endpoint with ``Last-Event-ID: <last id>``, and the server replays the stream
from there: the request itself is never sent twice. At most ``_MAX_RESUMES``
(5) resumes per request, all within the request's deadline (a wait that would
pass it is a ``MCPTimeoutError`` at once). A stream without event ids is not
resumed (``MCPTransportError``: it ended or broke without the response), and
neither is a request cut by ``cancel()``: the cut ends the wait at once.

``StreamResumption`` is a base class of ``HTTPTransport``, which sets the
attributes and defines the methods declared on it.

Spec: MCP 2025-11-25, "Streamable HTTP", "Resumability and Redelivery";
WHATWG "Server-sent events" (``id``, ``retry``, ``Last-Event-ID``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import requests

from .._internal.deadlines import PausableClock
from ..exceptions import MCPProtocolError, MCPTimeoutError, MCPTransportError
from .http_body import Cancelled, body_text, status_error, timed_chunks
from .http_reply import ReplyReader

__all__ = ["StreamResumption"]

logger = logging.getLogger("yiemagent.mcp.http")

_MAX_RESUMES = 5
_DEFAULT_RETRY_SECONDS = 1.0


class _StreamEnded(Exception):
    """Internal: an SSE stream ended or broke before the response; ``cause`` is the break, if any."""

    def __init__(self, cause: BaseException | None) -> None:
        super().__init__(str(cause) if cause else "end of stream")
        self.cause = cause


class StreamResumption:
    """Read a request's SSE answer, resuming it with ``GET`` and ``Last-Event-ID`` (a base of ``HTTPTransport``)."""

    url: str
    name: str
    session_id: str | None
    modern: bool
    connect_timeout_seconds: float
    _session: requests.Session
    _sleep: Callable[[float], None]
    _cancel_generation: int
    _cancelled: threading.Condition
    clock: PausableClock

    if TYPE_CHECKING:  # defined by HTTPTransport
        def stream_headers(self, last_event_id: str | None = None) -> dict[str, str]:
            """Headers of a ``GET`` for an SSE stream (with ``Last-Event-ID`` when resuming)."""

        def _redirect_kwargs(self, method: str) -> dict[str, Any]: ...

        def reauthorize(self, response: requests.Response, again: bool = False) -> bool:
            """The OAuth flow for a 401/403 (``HTTPTransport.reauthorize``); True: send once more."""

        def _check(self, generation: int) -> None: ...

        def _transport_error(self, what: str, exc: BaseException, timeout: float) -> MCPTransportError: ...

        def scrub(self, text: str) -> str:
            """``text`` with the transport's secrets replaced by ``***``."""

    # ------------------------------------------------------------------ reading (deadlines on ``clock``)

    def _chunks(
        self, response: requests.Response, deadline: float, what: str, timeout: float, generation: int | None = None
    ) -> Iterator[bytes]:
        """``http_body.timed_chunks``; with ``generation``, a ``cancel()`` since then raises ``Cancelled``."""
        check = (lambda: self._check(generation)) if generation is not None else None
        return timed_chunks(response, deadline=deadline, what=what, timeout=timeout, server=self.name, check=check,
                            now=self.clock.now)

    def _body_text(self, response: requests.Response, deadline: float, what: str, timeout: float) -> str:
        return body_text(response, deadline=deadline, what=what, timeout=timeout, server=self.name, scrub=self.scrub,
                         now=self.clock.now)

    def _raise_for_status(
        self, response: requests.Response, what: str, sent_session: str | None, deadline: float,
        request_id: Any = None,
    ) -> None:
        raise status_error(response, what=what, sent_session=sent_session, deadline=deadline, server=self.name,
                           scrub=self.scrub, now=self.clock.now, request_id=request_id)

    def _read_sse(
        self, response: requests.Response, reader: ReplyReader, what: str, deadline: float, timeout: float,
        generation: int,
    ) -> dict[str, Any]:
        last_id: str | None = None
        retry_ms: int | None = None
        resumes = 0
        while True:
            parser = reader.parser()
            try:
                found = reader.read_sse(self._sse_chunks(response, deadline, what, timeout, generation), parser)
                if found is not None:
                    return found
                raise _StreamEnded(None)
            except _StreamEnded as ended:
                self._check(generation)  # a cut stream is not an early end: never resume it
                last_id = parser.last_event_id or last_id
                retry_ms = parser.retry_ms if parser.retry_ms is not None else retry_ms
                if last_id is None or resumes >= _MAX_RESUMES or self.modern:  # 2026-07-28: no resumption
                    if ended.cause is not None:
                        raise self._transport_error(f"{what}: the SSE stream broke", ended.cause, timeout) \
                            from ended.cause
                    raise MCPTransportError(f"{what}: the SSE stream ended without the response",
                                            server=self.name) from None
            finally:
                response.close()
            resumes += 1
            wait = retry_ms / 1000 if retry_ms is not None else _DEFAULT_RETRY_SECONDS
            if self.clock.now() + wait >= deadline:
                raise MCPTimeoutError(f"{what}: no response within {timeout:g}s (the stream ended; resuming "
                                      f"after {wait:g}s would pass the deadline)", server=self.name)
            logger.debug("%s: SSE stream ended before the response; resuming after event %r in %gs",
                         self.name, last_id, wait)
            self._pause(wait, generation)
            self._check(generation)
            response = self._resume(last_id, what, deadline, timeout, generation)

    def _sse_chunks(
        self, response: requests.Response, deadline: float, what: str, timeout: float, generation: int
    ) -> Iterator[bytes]:
        try:
            yield from self._chunks(response, deadline, what, timeout, generation)
        except requests.RequestException as exc:
            raise _StreamEnded(exc) from exc

    def _pause(self, seconds: float, generation: int) -> None:
        """Wait ``seconds`` before resuming; ``cancel()`` ends the wait at once (unless ``sleep`` was injected)."""
        if self._sleep is not time.sleep:
            self._sleep(seconds)
            return
        with self._cancelled:
            self._cancelled.wait_for(lambda: self._cancel_generation != generation, timeout=seconds)

    def _resume(
        self, last_event_id: str, what: str, deadline: float, timeout: float, generation: int,
        authorized_again: bool = False,
    ) -> requests.Response:
        """``GET`` the endpoint with ``Last-Event-ID``: the server replays the stream from there."""
        remaining = max(deadline - self.clock.now(), 0.001)
        try:
            response = self._session.get(
                self.url, headers=self.stream_headers(last_event_id), stream=True,
                timeout=(min(self.connect_timeout_seconds, remaining), remaining), **self._redirect_kwargs("GET"),
            )
        except requests.RequestException as exc:
            self._check(generation)
            raise self._transport_error(f"{what}: resuming the SSE stream", exc, timeout) from exc
        if self._cancel_generation != generation:
            response.close()
            raise Cancelled()
        if response.status_code in (401, 403) and self.reauthorize(response, authorized_again):
            response.close()  # a new token (OAuth): the GET once more
            return self._resume(last_event_id, what, deadline, timeout, generation, True)
        if response.status_code >= 400:
            with response:
                self._raise_for_status(response, f"{what} (resuming with GET)", self.session_id, deadline)
        content_type = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        if content_type != "text/event-stream":
            response.close()
            raise MCPProtocolError(f"{what}: resuming with GET gave Content-Type {content_type!r}", server=self.name)
        return response
