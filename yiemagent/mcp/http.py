"""Streamable HTTP transport on a ``requests.Session`` (keep-alive).

Every JSON-RPC message is one ``POST`` to the endpoint with
``Accept: application/json, text/event-stream``. The server answers a request
with a JSON body or an SSE stream that may carry notifications and server
requests before the response; a notification is answered ``202 Accepted``
(or an empty ``200``). The ``Mcp-Session-Id`` the server gives at
``initialize`` is sent on every later request, the negotiated
``MCP-Protocol-Version`` once known; ``close()`` sends ``DELETE``.

An SSE stream that ends (or breaks) before the response, after the server
gave it an event id, is resumed with ``GET`` and ``Last-Event-ID`` after the
stream's ``retry`` delay; the request itself is never sent twice. A request
cut by ``cancel()`` is never resumed: each ``cancel()`` starts a new cancel
generation, and a request that sees the generation change fails at once with
``MCPTransportError``. ``listen()`` opens the standalone ``GET`` stream on a
daemon thread, for server messages tied to no request (``tools/list_changed``,
server requests such as ``elicitation/create``); it has a connection of its
own, which ``cancel()`` leaves open.

Static headers (``Authorization: Bearer ...``) are kept as values whose
``repr`` is ``'***'`` and are scrubbed from every error message and log line.

Spec: MCP 2025-11-25 (also 2025-06-18, 2025-03-26), "Transports",
"Streamable HTTP" (incl. "Resumability and Redelivery").
"""

from __future__ import annotations

import codecs
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import requests
import urllib3.exceptions

from ..__version__ import __version__
from .._http import CancellableSession
from .._retry import retry_after_seconds
from ..exceptions import (
    MCPError,
    MCPProtocolError,
    MCPSessionExpiredError,
    MCPTimeoutError,
    MCPTransportError,
)
from . import jsonrpc
from ._secrets import Secret, display_url, scrub, secrets_of
from .sse import SSEParser
from .transport import MessageHandler, Transport

__all__ = ["HTTPTransport"]

logger = logging.getLogger("yiemagent.mcp.http")

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
_ERROR_BODY_CHARS = 2000
_MAX_RESUMES = 5
_DEFAULT_RETRY_SECONDS = 1.0


def _is_read_timeout(exc: BaseException) -> bool:
    cause: BaseException | None = exc
    for _ in range(6):
        if cause is None:
            return False
        if isinstance(cause, (urllib3.exceptions.ReadTimeoutError, socket.timeout, requests.exceptions.Timeout)):
            return True
        if isinstance(cause, requests.exceptions.ConnectionError) and cause.args and isinstance(
            cause.args[0], BaseException
        ):
            cause = cause.args[0]
            continue
        cause = cause.__cause__ or cause.__context__
    return False


class _Cancelled(Exception):
    """Internal: ``cancel()`` was called while the request was in flight."""


class _StreamEnded(Exception):
    """Internal: an SSE stream ended or broke before the response; ``cause`` is the break, if any."""

    def __init__(self, cause: BaseException | None) -> None:
        super().__init__(str(cause) if cause else "end of stream")
        self.cause = cause


class HTTPTransport(Transport):
    """Streamable HTTP transport.

    Args:
        url: the MCP endpoint, e.g. ``"http://127.0.0.1:3001/mcp"``.
        headers: static headers sent on every request, e.g.
            ``{"Authorization": "Bearer <token>"}``; their values never appear
            in logs, ``repr`` or error messages (replaced by ``***``).
        timeout_seconds: default seconds one request may take in all: waiting
            for the answer's headers and reading the whole body or SSE stream
            (progress events do not extend it).
        connect_timeout_seconds: seconds to wait for the TCP (and TLS)
            connection; capped by the request's timeout.
        session: a ``requests.Session`` to use; None makes a
            ``CancellableSession`` (so ``cancel()`` can cut requests).
        name: label of the server in errors and logs; None uses the URL
            without password or query values.
        sleep: ``sleep(seconds)`` used to wait the SSE ``retry`` delay
            before resuming a stream (tests inject a fake).

    Thread safety: ``send`` may be called from several threads at once.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        timeout_seconds: float = 30.0,
        connect_timeout_seconds: float = 10.0,
        session: requests.Session | None = None,
        name: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url
        self.display_url = display_url(url)
        self.name = name or self.display_url
        self.timeout_seconds = timeout_seconds
        self.connect_timeout_seconds = connect_timeout_seconds
        self._static_headers = {str(k): Secret(v) for k, v in (headers or {}).items()}
        self._secrets = secrets_of(self._static_headers, url)
        """Texts replaced by ``***`` in messages: header values, their long words, URL secrets."""
        self._session = session or CancellableSession()
        self._sleep = sleep
        self._listener: tuple[threading.Thread, threading.Event, CancellableSession] | None = None
        self._cancel_generation = 0
        self._cancelled = threading.Condition()
        """Notified by ``cancel()``: wakes a request waiting to resume its SSE stream."""
        self.listening = threading.Event()
        """Set while the standalone GET stream of ``listen()`` is open (the server answered 200)."""
        self.session_id: str | None = None
        """The ``Mcp-Session-Id`` the server gave, or None (stateless server)."""
        self.protocol_version: str | None = None
        """The negotiated version sent as ``MCP-Protocol-Version``; None before the handshake."""

    def __repr__(self) -> str:
        headers = f", headers={sorted(self._static_headers)!r}" if self._static_headers else ""
        return f"HTTPTransport(url={self.display_url!r}{headers})"

    def _scrub(self, text: str) -> str:
        """``text`` with every static header value (and URL secret) replaced by ``***``."""
        return scrub(text, self._secrets)

    # ------------------------------------------------------------------ state

    def reset_session(self) -> None:
        """Forget ``Mcp-Session-Id`` and the protocol version (before a new ``initialize``)."""
        self.session_id = None
        self.protocol_version = None

    def set_protocol_version(self, version: str | None) -> None:
        """Send ``MCP-Protocol-Version: <version>`` on every later request."""
        self.protocol_version = version

    def _headers(self, accept: str = "application/json, text/event-stream") -> dict[str, str]:
        headers = {
            **self._static_headers,
            "Accept": accept,
            "Content-Type": "application/json",
            "User-Agent": f"yiemagent/{__version__}",
        }
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version:
            headers[VERSION_HEADER] = self.protocol_version
        return headers

    # ------------------------------------------------------------------ errors

    def _transport_error(self, what: str, exc: BaseException, timeout: float) -> MCPTransportError:
        if isinstance(exc, requests.exceptions.ConnectTimeout):
            seconds = min(self.connect_timeout_seconds, timeout)
            return MCPTimeoutError(f"{what}: no connection within {seconds:g}s", server=self.name)
        if _is_read_timeout(exc):
            return MCPTimeoutError(f"{what}: no answer within {timeout:g}s", server=self.name)
        return MCPTransportError(self._scrub(f"{what} failed: {exc}"), server=self.name)

    def _cancelled_error(self, what: str) -> MCPTransportError:
        return MCPTransportError(f"{what}: cancelled (cancel() cut the request; it is not resumed or sent again)",
                                 server=self.name)

    def _check(self, generation: int) -> None:
        """Raise ``_Cancelled`` if ``cancel()`` was called since ``generation`` was read."""
        if self._cancel_generation != generation:
            raise _Cancelled()

    # ------------------------------------------------------------------ send

    def send(
        self,
        message: dict[str, Any],
        *,
        timeout_seconds: float | None = None,
        on_message: MessageHandler | None = None,
    ) -> dict[str, Any] | None:
        """POST one message; see ``Transport.send``. SSE and JSON replies are read alike.

        Raises:
            MCPTimeoutError: connecting, the answer's headers, or the whole
                body took longer than ``timeout_seconds``.
            MCPTransportError: unreachable, the connection broke, ``cancel()``
                cut the request (never resumed), or HTTP non-2xx
                (``.status_code``, ``.body``; ``.retry_after`` in seconds for
                429/503 with ``Retry-After``).
            MCPSessionExpiredError: HTTP 404 (or a 400 naming the session) for
                a request that carried ``Mcp-Session-Id``; ``.data`` is
                ``{"session_id": str, "status_code": int}``.
            MCPProtocolError: the body is not JSON/SSE, not JSON-RPC, or has
                no response to the request (``.body``).
        """
        timeout = self.timeout_seconds if timeout_seconds is None else timeout_seconds
        method = str(message.get("method") or ("response" if "id" in message else "message"))
        what = f"{method} to {self.name}"
        generation = self._cancel_generation
        try:
            return self._send(message, method, what, timeout, generation, on_message)
        except _Cancelled:
            raise self._cancelled_error(what) from None
        except MCPError as exc:
            if self._cancel_generation != generation:
                # the cut showed as a broken stream, a parse error, a timeout or a rejected session: say so
                raise self._cancelled_error(what) from exc
            raise

    def _send(
        self, message: dict[str, Any], method: str, what: str, timeout: float, generation: int,
        on_message: MessageHandler | None,
    ) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        sent_session = self.session_id
        try:
            response = self._session.post(
                self.url,
                data=json.dumps(message, ensure_ascii=False).encode("utf-8"),
                headers=self._headers(),
                timeout=(min(self.connect_timeout_seconds, timeout), timeout),
                stream=True,
            )
        except requests.RequestException as exc:
            self._check(generation)
            raise self._transport_error(what, exc, timeout) from exc
        with response:
            self._check(generation)  # cut while connecting: the new connection escaped the cut
            if response.status_code >= 400:
                self._raise_for_status(response, what, sent_session, deadline)
            if method == "initialize":
                self._take_session_id(response, what)
            if not jsonrpc.is_request(message):
                # a notification or our reply to a server request: 202 (or an empty 200); reading the
                # (empty) body lets the keep-alive connection go back to the pool
                self._body_text(response, deadline, what, timeout)
                return None
            content_type = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
            if content_type == "text/event-stream":
                return self._read_sse(response, message["id"], what, deadline, timeout, on_message, generation)
            if content_type == "application/json":
                return self._read_json(response, message["id"], what, deadline, timeout, on_message, generation)
            body = self._body_text(response, deadline, what, timeout)
            if response.status_code == 202:
                raise MCPProtocolError(
                    f"{what}: HTTP 202 Accepted without a body, but a request needs a JSON or SSE answer",
                    server=self.name, body=body,
                )
            raise MCPProtocolError(
                f"{what}: unexpected Content-Type {content_type!r} (HTTP {response.status_code}): {body[:200]}",
                server=self.name, body=body,
            )

    def _take_session_id(self, response: requests.Response, what: str) -> None:
        session_id = response.headers.get(SESSION_HEADER)
        if session_id is None:
            return
        if not session_id or not all(0x21 <= ord(c) <= 0x7E for c in session_id):
            raise MCPProtocolError(f"{what}: the Mcp-Session-Id is not visible ASCII: {session_id!r:.80}",
                                   server=self.name)
        self.session_id = session_id

    # ------------------------------------------------------------------ reading

    def _chunks(
        self, response: requests.Response, deadline: float, what: str, timeout: float, generation: int | None = None
    ) -> Iterator[bytes]:
        """The body's chunks as they arrive; the whole read ends at ``deadline`` (monotonic seconds).

        With ``generation``, a ``cancel()`` since it was read raises ``_Cancelled`` (also when the cut
        shows as a clean end of the body).
        """
        chunks = response.iter_content(chunk_size=None)
        while True:
            if generation is not None:
                self._check(generation)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise MCPTimeoutError(f"{what}: no complete answer within {timeout:g}s", server=self.name)
            self._set_read_timeout(response, remaining)
            try:
                chunk = next(chunks)
            except StopIteration:
                if generation is not None:
                    self._check(generation)
                return
            except requests.exceptions.ConnectionError as exc:
                if generation is not None:
                    self._check(generation)
                if _is_read_timeout(exc):
                    raise MCPTimeoutError(
                        f"{what}: no complete answer within {timeout:g}s", server=self.name
                    ) from exc
                raise
            yield chunk

    @staticmethod
    def _set_read_timeout(response: requests.Response, seconds: float) -> None:
        """Bound the next socket read to ``seconds`` (so the request's total deadline holds)."""
        connection = getattr(response.raw, "connection", None) or getattr(response.raw, "_connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            try:
                sock.settimeout(max(seconds, 0.001))
            except OSError:
                pass

    def _body_text(self, response: requests.Response, deadline: float, what: str, timeout: float,
                   limit: int = _ERROR_BODY_CHARS) -> str:
        """Up to ``limit`` characters of the body (scrubbed); never waits past ``deadline``."""
        data = b""
        try:
            for chunk in self._chunks(response, deadline, what, timeout):
                data += chunk
                if len(data) >= limit * 4:
                    break
        except (MCPTimeoutError, requests.RequestException) as exc:
            logger.debug("%s: reading the body failed: %s", self.name, self._scrub(str(exc)))
        return self._scrub(data.decode("utf-8", errors="replace")[:limit])

    def _raise_for_status(
        self, response: requests.Response, what: str, sent_session: str | None, deadline: float
    ) -> None:
        status = response.status_code
        body = self._body_text(response, min(deadline, time.monotonic() + 5.0), what, 5.0)
        if sent_session and (status == 404 or (status == 400 and "session" in body.lower())):
            # Python SDK: 404 for an unknown session; Node SDK: 400 "No valid session ID provided"
            raise MCPSessionExpiredError(
                -32001, f"session {sent_session!r} is not known to the server (HTTP {status}): {body[:200]}",
                {"session_id": sent_session, "status_code": status}, server=self.name,
            )
        reason = f" {response.reason}" if response.reason else ""
        raise MCPTransportError(
            f"{what} answered HTTP {status}{reason}: {body[:500]}", server=self.name, status_code=status, body=body,
            retry_after=retry_after_seconds(response.headers.get("Retry-After")),
        )

    def _deliver(self, item: Any, request_id: Any, on_message: MessageHandler | None) -> dict[str, Any] | None:
        """Return ``item`` if it answers ``request_id``; hand anything else to ``on_message``."""
        if jsonrpc.is_response(item) and item.get("id") == request_id:
            return item  # type: ignore[no-any-return]
        if jsonrpc.is_request(item):
            reply = on_message(item) if on_message else None
            if reply is None and item.get("method") == "ping":
                reply = jsonrpc.make_response(item["id"], {})
            if reply is not None:
                try:
                    self.send(reply)
                except (MCPTransportError, MCPProtocolError) as exc:
                    logger.warning("%s: answering the server's %s failed: %s", self.name, item.get("method"), exc)
        elif jsonrpc.is_notification(item):
            if on_message:
                on_message(item)
        else:
            logger.debug("%s: ignoring a message that answers nothing we wait for: %.200r", self.name, item)
        return None

    def _read_json(
        self, response: requests.Response, request_id: Any, what: str, deadline: float, timeout: float,
        on_message: MessageHandler | None, generation: int,
    ) -> dict[str, Any]:
        try:
            raw = b"".join(self._chunks(response, deadline, what, timeout, generation))
        except requests.RequestException as exc:
            raise self._transport_error(f"{what}: reading the JSON answer", exc, timeout) from exc
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            body = self._scrub(raw[:_ERROR_BODY_CHARS].decode("utf-8", errors="replace"))
            raise MCPProtocolError(f"{what}: the JSON answer does not parse: {exc}", server=self.name,
                                   body=body) from exc
        for item in payload if isinstance(payload, list) else [payload]:
            found = self._deliver(item, request_id, on_message)
            if found is not None:
                return found
        raise MCPProtocolError(f"{what}: the answer has no response with id {request_id!r}", server=self.name,
                               body=self._scrub(raw[:_ERROR_BODY_CHARS].decode("utf-8", errors="replace")))

    def _read_sse(
        self,
        response: requests.Response,
        request_id: Any,
        what: str,
        deadline: float,
        timeout: float,
        on_message: MessageHandler | None,
        generation: int,
    ) -> dict[str, Any]:
        last_id: str | None = None
        retry_ms: int | None = None
        resumes = 0
        while True:
            parser = SSEParser()
            try:
                return self._read_stream(response, parser, request_id, what, deadline, timeout, on_message,
                                         generation)
            except _StreamEnded as ended:
                self._check(generation)  # a cut stream is not an early end: never resume it
                last_id = parser.last_event_id or last_id
                retry_ms = parser.retry_ms if parser.retry_ms is not None else retry_ms
                if last_id is None or resumes >= _MAX_RESUMES:
                    if ended.cause is not None:
                        raise self._transport_error(f"{what}: the SSE stream broke", ended.cause, timeout) \
                            from ended.cause
                    raise MCPTransportError(f"{what}: the SSE stream ended without the response",
                                            server=self.name) from None
            finally:
                response.close()
            resumes += 1
            wait = retry_ms / 1000 if retry_ms is not None else _DEFAULT_RETRY_SECONDS
            if time.monotonic() + wait >= deadline:
                raise MCPTimeoutError(f"{what}: no response within {timeout:g}s (the stream ended; resuming "
                                      f"after {wait:g}s would pass the deadline)", server=self.name)
            logger.debug("%s: SSE stream ended before the response; resuming after event %r in %gs",
                         self.name, last_id, wait)
            self._pause(wait, generation)
            self._check(generation)
            response = self._resume(last_id, what, deadline, timeout, generation)

    def _pause(self, seconds: float, generation: int) -> None:
        """Wait ``seconds`` before resuming; ``cancel()`` ends the wait at once (unless ``sleep`` was injected)."""
        if self._sleep is not time.sleep:
            self._sleep(seconds)
            return
        with self._cancelled:
            self._cancelled.wait_for(lambda: self._cancel_generation != generation, timeout=seconds)

    def _read_stream(
        self,
        response: requests.Response,
        parser: SSEParser,
        request_id: Any,
        what: str,
        deadline: float,
        timeout: float,
        on_message: MessageHandler | None,
        generation: int,
    ) -> dict[str, Any]:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            for chunk in self._chunks(response, deadline, what, timeout, generation):
                for event in parser.feed(decoder.decode(chunk)):
                    found = self._sse_event(event.data, event.event, request_id, what, on_message)
                    if found is not None:
                        return found
        except requests.RequestException as exc:
            raise _StreamEnded(exc) from exc
        for event in parser.feed(decoder.decode(b"", final=True)) + parser.close():
            found = self._sse_event(event.data, event.event, request_id, what, on_message)
            if found is not None:
                return found
        raise _StreamEnded(None)

    def _resume(
        self, last_event_id: str, what: str, deadline: float, timeout: float, generation: int
    ) -> requests.Response:
        """``GET`` the endpoint with ``Last-Event-ID``: the server replays the stream from there."""
        headers = self._headers(accept="text/event-stream")
        headers.pop("Content-Type", None)
        headers["Last-Event-ID"] = last_event_id
        remaining = max(deadline - time.monotonic(), 0.001)
        try:
            response = self._session.get(
                self.url, headers=headers, stream=True,
                timeout=(min(self.connect_timeout_seconds, remaining), remaining),
            )
        except requests.RequestException as exc:
            self._check(generation)
            raise self._transport_error(f"{what}: resuming the SSE stream", exc, timeout) from exc
        if self._cancel_generation != generation:
            response.close()
            raise _Cancelled()
        if response.status_code >= 400:
            with response:
                self._raise_for_status(response, f"{what} (resuming with GET)", self.session_id, deadline)
        content_type = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        if content_type != "text/event-stream":
            response.close()
            raise MCPProtocolError(f"{what}: resuming with GET gave Content-Type {content_type!r}", server=self.name)
        return response

    def _sse_event(
        self, data: str, event: str, request_id: Any, what: str, on_message: MessageHandler | None
    ) -> dict[str, Any] | None:
        if event != "message" or not data.strip():
            return None  # priming events, other event types
        try:
            item = json.loads(data)
        except ValueError as exc:
            raise MCPProtocolError(f"{what}: an SSE event is not JSON: {exc}", server=self.name,
                                   body=self._scrub(data[:500])) from exc
        for each in item if isinstance(item, list) else [item]:
            found = self._deliver(each, request_id, on_message)
            if found is not None:
                return found
        return None

    # ------------------------------------------------------------------ standalone GET stream

    def listen(self, on_message: MessageHandler) -> None:
        """Open the standalone SSE stream (``GET``) for the current session on a daemon thread.

        Notifications on it go to ``on_message``; server requests are answered
        with what ``on_message`` returns (``ping`` always). A server without
        that stream (HTTP 405) is left alone; a stream that ends is reopened
        with ``Last-Event-ID`` after its ``retry`` delay, at most 5 times in a
        row without an event. Calling it again replaces the previous listener;
        ``close()`` stops it; ``cancel()`` does not (the stream has a
        connection of its own). Returns once the server answered the ``GET``
        (at most ``timeout_seconds``, 5 s at most), so that what the server
        sends from then on is not lost.

        Args:
            on_message: ``on_message(message) -> reply | None``, called on the
                listener thread.

        Spec: MCP 2025-11-25, "Streamable HTTP", "Listening for Messages from the Server".
        """
        self._stop_listening()
        stop = threading.Event()
        session = CancellableSession()
        settled = threading.Event()
        thread = threading.Thread(target=self._listen_loop, args=(on_message, stop, session, settled), daemon=True,
                                  name=f"yiemagent-mcp-listen-{self.name}")
        self._listener = (thread, stop, session)
        thread.start()
        settled.wait(min(self.timeout_seconds, 5.0))

    def _stop_listening(self) -> None:
        listener, self._listener = self._listener, None
        if listener is None:
            return
        thread, stop, session = listener
        stop.set()
        self.listening.clear()
        session.cancel()
        if thread is not threading.current_thread():
            thread.join(timeout=2)
        session.close()

    def _listen_loop(
        self, on_message: MessageHandler, stop: threading.Event, session: CancellableSession,
        settled: threading.Event,
    ) -> None:
        try:
            self._listen(on_message, stop, session, settled)
        finally:
            settled.set()

    def _listen(
        self, on_message: MessageHandler, stop: threading.Event, session: CancellableSession,
        settled: threading.Event,
    ) -> None:
        last_id: str | None = None
        wait = _DEFAULT_RETRY_SECONDS
        failures = 0
        while not stop.is_set() and failures <= _MAX_RESUMES:
            headers = self._headers(accept="text/event-stream")
            headers.pop("Content-Type", None)
            if last_id is not None:
                headers["Last-Event-ID"] = last_id
            parser = SSEParser()
            try:
                with session.get(self.url, headers=headers, stream=True,
                                 timeout=(self.connect_timeout_seconds, None)) as response:
                    if response.status_code == 405:
                        logger.debug("%s: no standalone SSE stream (HTTP 405)", self.name)
                        return
                    if response.status_code >= 400:
                        logger.info("%s: the standalone SSE stream was refused (HTTP %d)", self.name,
                                    response.status_code)
                        return
                    self.listening.set()
                    settled.set()
                    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
                    for chunk in response.iter_content(chunk_size=None):
                        for event in parser.feed(decoder.decode(chunk)):
                            failures = 0
                            self._sse_event(event.data, event.event, object(), "GET stream", on_message)
            except (requests.RequestException, MCPProtocolError) as exc:
                if stop.is_set():
                    return
                logger.debug("%s: the standalone SSE stream broke: %s", self.name, self._scrub(str(exc)))
            finally:
                if not stop.is_set():
                    self.listening.clear()
            last_id = parser.last_event_id or last_id
            wait = parser.retry_ms / 1000 if parser.retry_ms is not None else wait
            failures += 1
            stop.wait(wait)

    def cancel(self) -> None:
        """Cut every request in flight: each fails at once with ``MCPTransportError``.

        A cut request is never resumed (``Last-Event-ID``) nor sent again, even
        when its SSE stream had event ids; requests sent after ``cancel()`` are
        not affected. The standalone stream of ``listen()`` has a connection
        of its own and stays open.

        Thread safety: safe from any thread.
        """
        with self._cancelled:
            self._cancel_generation += 1  # first, so that the reading code sees the cut as a cancel
            self._cancelled.notify_all()
        cancel = getattr(self._session, "cancel", None)
        if cancel is not None:
            cancel()

    # ------------------------------------------------------------------ close

    def close(self) -> None:
        """Stop ``listen()``, end the session with ``DELETE`` (best effort, 2 s), close the connections."""
        self._stop_listening()
        if self.session_id:
            headers = self._headers()
            headers.pop("Content-Type", None)
            try:
                answer = self._session.delete(self.url, headers=headers, timeout=(2, 2))
                answer.close()
                if answer.status_code >= 400 and answer.status_code != 405:  # 405: the server keeps sessions
                    logger.debug("DELETE %s answered HTTP %d", self.display_url, answer.status_code)
            except requests.RequestException as exc:
                logger.debug("DELETE %s failed: %s", self.display_url, self._scrub(str(exc)))
        self.reset_session()
        self._session.close()
