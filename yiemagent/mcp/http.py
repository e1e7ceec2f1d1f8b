"""Streamable HTTP transport on a ``requests.Session`` (keep-alive).

Every JSON-RPC message is one ``POST`` with ``Accept: application/json,
text/event-stream``; a request's answer is a JSON body or an SSE stream that
may carry server messages before the response (read by
``http_reply.ReplyReader``: strictly, under size limits), a notification's is
``202``. ``Mcp-Session-Id`` (from ``initialize``) and the negotiated
``MCP-Protocol-Version`` go on every later request; ``close()`` sends
``DELETE``. ``timeout_seconds`` bounds the whole request whatever the framing
and however slowly bytes come (``CancellableSession.deadline``). Redirects:
same origin followed; another origin refused (``MCPTransportError`` naming
both) unless ``follow_cross_origin_redirects=True``, and never for
``tools/call`` (see ``yiemagent._internal.http``); a plain ``requests.Session`` follows
none. An SSE stream that ends before the response, after giving an event id,
is resumed with ``GET`` and ``Last-Event-ID`` (the request is never sent
twice); a request cut by ``cancel()`` is never resumed. ``listen()`` opens the
standalone ``GET`` stream (``http_listen``). Header values and URL secrets are
``***`` in every message, chained exception and log line.

In the 2026-07-28 era (``set_protocol_version("2026-07-28")``) there is no
session and no resumption: every POST carries ``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` (``http_headers``), and a
stream that ends before its response is ``MCPTransportError`` (the client
re-issues a safe request as a new one; never a ``tools/call``).

Spec: MCP 2025-11-25 (also 2025-06-18, 2025-03-26), "Transports",
"Streamable HTTP" (incl. "Resumability and Redelivery"); MCP 2026-07-28,
"Streamable HTTP" ("Request Metadata", "Backward Compatibility").

Split out: resuming an SSE stream that ended before its response (``http_resume``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import requests

from ..__version__ import __version__
from .._internal.checks import check_arguments
from .._internal.deadlines import PausableClock
from .._internal.http import CancellableSession, CrossOriginRedirect, connection_problem
from .._internal.secrets import Secret, display_url, register_log_secrets, scrub, scrub_exception, secrets_of
from ..exceptions import MCPError, MCPProtocolError, MCPTimeoutError, MCPTransportError
from . import auth as _auth  # the package only: the OAuth flow loads when a caller makes an OAuth
from . import jsonrpc
from .auth.hook import reauthorize
from .http_body import (
    Cancelled,
    check_accepted,
    encode_http_body,
    http_transport_repr,
    is_read_timeout,
    redirect_error,
    session_id_of,
)
from .http_headers import message_headers, trace_headers
from .http_listen import Listener
from .http_reply import MAX_BODY_BYTES, MAX_EVENT_BYTES, MAX_MESSAGES, ReplyReader
from .http_resume import StreamResumption
from .http_subscriptions import SubscriptionListener
from .transport import MessageHandler, Transport

__all__ = ["HTTPTransport"]

logger = logging.getLogger("yiemagent.mcp.http")

MODERN_SINCE = "2026-07-28"
"""Protocol versions from this one on are the modern era (no ``initialize``, per-request metadata)."""
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
_CLOSE_SECONDS = 2.0


class HTTPTransport(StreamResumption, Transport):
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
            ``CancellableSession`` (so ``cancel()`` can cut requests and
            deadlines hold against a slow peer).
        name: label of the server in errors and logs; None uses the URL
            without password or query values.
        sleep: ``sleep(seconds)`` used to wait the SSE ``retry`` delay
            before resuming a stream (tests inject a fake).
        follow_cross_origin_redirects: follow a redirect to another origin
            without the static headers and ``Mcp-Session-Id`` (never for
            ``tools/call``); False refuses it.
        max_body_bytes: bytes a JSON reply may have (``MAX_BODY_BYTES``).
        max_event_bytes: characters one SSE event may hold (``MAX_EVENT_BYTES``).
        max_messages: messages one request may receive before its response
            (``MAX_MESSAGES``). Past a limit the request fails with
            ``MCPProtocolError`` and the rest is not read.
        auth: OAuth 2.1 (``yiemagent.mcp.auth.OAuth``): its token on every POST, GET and DELETE; a 401
            (or 403 ``insufficient_scope``) runs its flow (not counted in ``timeout_seconds``), then the
            request once more (safe for ``tools/call``: the server refused it before running it).

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
        follow_cross_origin_redirects: bool = False,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
        max_messages: int = MAX_MESSAGES,
        auth: _auth.OAuth | None = None,
    ) -> None:
        check_arguments(locals(), seconds=("timeout_seconds", "connect_timeout_seconds"),
                        counts=("max_body_bytes", "max_event_bytes", "max_messages"))
        self.url, self.auth = url, auth
        self.display_url = display_url(url)
        self.name = name or self.display_url
        self.timeout_seconds, self.connect_timeout_seconds = timeout_seconds, connect_timeout_seconds
        self.follow_cross_origin_redirects = follow_cross_origin_redirects
        self.max_body_bytes, self.max_event_bytes, self.max_messages = max_body_bytes, max_event_bytes, max_messages
        self._static_headers = {str(k): Secret(v) for k, v in (headers or {}).items()}
        self._secrets = secrets_of(self._static_headers, url)
        """Texts replaced by ``***`` in messages: header values, their long words, URL secrets."""
        register_log_secrets(self._secrets)  # hidden in logs, events, statuses, terminals (yiemagent.textpolicy)
        self._session = session or CancellableSession(follow_cross_origin_redirects=follow_cross_origin_redirects)
        self._sleep = sleep
        self._listener: Listener | None = None
        self._cancel_generation = 0
        self._cancelled = threading.Condition()
        """Notified by ``cancel()``: wakes a request waiting to resume its SSE stream."""
        self.clock = PausableClock()
        """The clock of request deadlines; the client pauses it while a callback answers a server request."""
        self.listening = threading.Event()
        """Set while the standalone GET stream of ``listen()`` is open (the server answered 200)."""
        self.session_id: str | None = None
        """The ``Mcp-Session-Id`` the server gave, or None (stateless server)."""
        self.protocol_version: str | None = None
        """The negotiated version sent as ``MCP-Protocol-Version``; None before the handshake."""
        self.modern = False
        """True in the 2026-07-28 era (``set_protocol_version`` of a modern version): every POST carries
        ``Mcp-Method`` (and ``Mcp-Name``, ``Mcp-Param-*``), no session, no ``Last-Event-ID`` resumption."""
        self.tool_header_paths: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        """Tool name -> its ``x-mcp-header`` declarations (``http_headers.header_paths``), set by ``list_tools``."""

    def __repr__(self) -> str:
        return http_transport_repr(self.display_url, sorted(self._static_headers))

    def scrub(self, text: str) -> str:
        """``text`` with every static header value, URL secret and OAuth secret replaced by ``***``."""
        return scrub(text, self.secrets())

    def secrets(self) -> list[Secret]:
        """The texts hidden in messages: static header values, URL secrets, the OAuth tokens and client secret."""
        return self._secrets if self.auth is None else self._secrets + self.auth.secrets()

    def reauthorize(self, response: requests.Response, again: bool = False) -> bool:
        """``auth.hook.reauthorize`` for this transport: True means send the request once more."""
        return reauthorize(self.auth, self.url, response, self.clock, self.name, again)

    _scrub = scrub

    # ------------------------------------------------------------------ state

    def reset_session(self) -> None:
        """Forget ``Mcp-Session-Id`` and the protocol version (before a new ``initialize``)."""
        self.session_id = None
        self.protocol_version = None

    def set_protocol_version(self, version: str | None) -> None:
        """Send ``MCP-Protocol-Version: <version>`` on every later request (a 2026-07-28+ version: modern era)."""
        self.protocol_version = version
        self.modern = version is not None and version >= MODERN_SINCE

    @property
    def cancels_by_closing(self) -> bool:
        """True in the modern era: closing the response stream cancels; no ``notifications/cancelled``."""
        return self.modern

    def _message_headers(self, message: dict[str, Any]) -> dict[str, str]:
        """The trace context (``trace_headers``) and the modern era's ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*``."""
        return {**trace_headers(message), **(message_headers(message, self.tool_header_paths) if self.modern else {})}

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
        if self.auth is not None:
            headers.update(self.auth.headers(self.url))
        return headers

    def stream_headers(self, last_event_id: str | None = None) -> dict[str, str]:
        """Headers of a ``GET`` for an SSE stream (with ``Last-Event-ID`` when resuming)."""
        headers = self._headers(accept="text/event-stream")
        headers.pop("Content-Type", None)
        if last_event_id is not None:
            # the id is the server's text: sent as its UTF-8 bytes (WHATWG SSE), never as an encoding error
            headers["Last-Event-ID"] = last_event_id.encode("utf-8").decode("latin-1")
        return headers

    def _deadline(self, at: float) -> AbstractContextManager[None]:
        deadline = getattr(self._session, "deadline", None)  # a CancellableSession's, on the pausable clock
        return deadline(at, self.clock) if callable(deadline) else nullcontext()

    def _redirect_kwargs(self, method: str) -> dict[str, Any]:
        if not isinstance(self._session, CancellableSession):
            return {"allow_redirects": False}  # a plain Session would carry every header to any origin
        return {"cross_origin": False} if method == "tools/call" else {}

    # ------------------------------------------------------------------ errors

    def _transport_error(self, what: str, exc: BaseException, timeout: float) -> MCPTransportError:
        if isinstance(exc, CrossOriginRedirect):
            return MCPTransportError(f"{what}: {exc}", server=self.name, status_code=exc.status_code)
        if isinstance(exc, requests.exceptions.ConnectTimeout):
            seconds = min(self.connect_timeout_seconds, timeout)
            return MCPTimeoutError(f"{what}: no connection within {seconds:g}s", server=self.name)
        if is_read_timeout(exc):
            return MCPTimeoutError(f"{what}: no answer within {timeout:g}s", server=self.name)
        problem = connection_problem(exc, self.url)
        if problem is not None:
            return MCPTransportError(self.scrub(f"{what}: {problem}"), server=self.name)
        return MCPTransportError(self.scrub(f"{what} failed: {exc}"), server=self.name)

    def _cancelled_error(self, what: str) -> MCPTransportError:
        return MCPTransportError(f"{what}: cancelled (cancel() cut the request; it is not resumed or sent again)",
                                 server=self.name)

    def _check(self, generation: int) -> None:
        """Raise ``Cancelled`` if ``cancel()`` was called since ``generation`` was read."""
        if self._cancel_generation != generation:
            raise Cancelled()

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
                cut the request (never resumed), a redirect to another origin
                was refused (both named), or HTTP non-2xx (``.status_code``,
                ``.body``; ``.retry_after`` in seconds for 429/503 with
                ``Retry-After``).
            MCPSessionExpiredError: HTTP 404 (or a 400 naming the session) for
                a request that carried ``Mcp-Session-Id``; ``.data`` is
                ``{"session_id": str, "status_code": int}``.
            MCPProtocolError: the message cannot be encoded (a lone
                surrogate), or the reply breaks the protocol (see
                ``http_reply``), passes a size limit, or has no response to
                the request (``.body``).
        """
        timeout = self.timeout_seconds if timeout_seconds is None else timeout_seconds
        method = str(message.get("method") or ("response" if "id" in message else "message"))
        what = f"{method} to {self.name}"
        generation = self._cancel_generation
        deadline = self.clock.now() + timeout  # a client callback's time (clock paused) does not count
        try:
            try:
                with self._deadline(deadline):
                    return self._send(message, method, what, timeout, deadline, generation, on_message)
            except Cancelled:
                raise self._cancelled_error(what) from None
            except MCPError as exc:
                if self._cancel_generation != generation:
                    # the cut showed as a broken stream, a parse error, a timeout or a rejected session: say so
                    raise self._cancelled_error(what) from exc
                if not isinstance(exc, MCPTimeoutError) and self.clock.now() >= deadline:
                    raise MCPTimeoutError(f"{what}: no complete answer within {timeout:g}s",
                                          server=self.name) from exc  # the watchdog cut the socket
                raise
        except MCPError as exc:
            scrub_exception(exc, self.secrets())  # tracebacks print the chained exceptions too
            raise

    def _encode(self, message: dict[str, Any], what: str) -> bytes:
        return encode_http_body(message, what=what, server=self.name)

    def _send(
        self, message: dict[str, Any], method: str, what: str, timeout: float, deadline: float, generation: int,
        on_message: MessageHandler | None, authorized_again: bool = False,
    ) -> dict[str, Any] | None:
        body = self._encode(message, what)
        sent_session = self.session_id
        try:
            response = self._session.post(
                self.url, data=body, headers=self.post_headers(message), stream=True,
                timeout=(min(self.connect_timeout_seconds, timeout), timeout), **self._redirect_kwargs(method),
            )
        except requests.RequestException as exc:
            self._check(generation)
            error = self._transport_error(what, exc, timeout)
            if connection_problem(exc, self.url) is not None:  # one line says it all; urllib3's chain only in debug
                logger.debug("%s: %r", what, exc)
                raise error from None
            raise error from exc
        with response:
            self._check(generation)  # cut while connecting: the new connection escaped the cut
            if response.status_code in (401, 403) and self.reauthorize(response, authorized_again):
                response.close()
                return self._send(message, method, what, timeout, deadline, generation, on_message, True)
            if response.status_code >= 400:
                self._raise_for_status(response, what, sent_session, deadline,
                                       message.get("id") if jsonrpc.is_request(message) else None)
            if 300 <= response.status_code < 400:
                raise redirect_error(response, what=what, server=self.name)
            if method == "initialize":
                self._take_session_id(response, what)
            if not jsonrpc.is_request(message):
                self._read_accepted(response, what, deadline, timeout)
                return None
            content_type = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
            reader = ReplyReader(
                message["id"], what=what, server=self.name, deliver=lambda item: self.answer(item, on_message),
                max_body_bytes=self.max_body_bytes, max_event_bytes=self.max_event_bytes,
                max_messages=self.max_messages, scrub=self.scrub,
            )
            if content_type == "text/event-stream":
                return self._read_sse(response, reader, what, deadline, timeout, generation)
            if content_type == "application/json":
                return self._read_json(response, reader, what, deadline, timeout, generation)
            body_text = self._body_text(response, deadline, what, timeout)
            if response.status_code == 202:
                raise MCPProtocolError(
                    f"{what}: HTTP 202 Accepted without a body, but a request needs a JSON or SSE answer",
                    server=self.name, body=body_text,
                )
            raise MCPProtocolError(
                f"{what}: unexpected Content-Type {content_type!r} (HTTP {response.status_code}): {body_text[:200]}",
                server=self.name, body=body_text,
            )

    def _read_accepted(self, response: requests.Response, what: str, deadline: float, timeout: float) -> None:
        check_accepted(self._body_text(response, deadline, what, timeout), what=what, server=self.name)

    def _take_session_id(self, response: requests.Response, what: str) -> None:
        session_id = session_id_of(response, what=what, server=self.name, url=self.url)
        if session_id is not None:
            self.session_id = session_id

    def answer(self, item: dict[str, Any], on_message: MessageHandler | None) -> None:
        """Hand a server message to ``on_message``; POST the reply to a server request (``ping`` always)."""
        if "id" not in item:
            if on_message:
                on_message(item)
            return
        reply = on_message(item) if on_message else None
        if reply is None and item.get("method") == "ping":
            reply = jsonrpc.make_response(item["id"], {})
        if reply is None:
            reply = {"jsonrpc": "2.0", "id": item["id"],
                     "error": {"code": -32601, "message": f"method not supported: {item.get('method')}"}}
        try:
            self.send(reply)
        except MCPError as exc:
            logger.warning("%s: answering the server's %s failed: %s", self.name, item.get("method"), exc)

    def _read_json(
        self, response: requests.Response, reader: ReplyReader, what: str, deadline: float, timeout: float,
        generation: int,
    ) -> dict[str, Any]:
        length = response.headers.get("Content-Length", "")
        try:
            return reader.read_json(self._chunks(response, deadline, what, timeout, generation),
                                    int(length) if length.isdigit() else None)
        except requests.RequestException as exc:
            raise self._transport_error(f"{what}: reading the JSON answer", exc, timeout) from exc

    # ------------------------------------------------------------------ standalone GET stream

    def listen(self, on_message: MessageHandler) -> None:
        """Open the standalone SSE stream (``GET``) for the current session on a daemon thread.

        Notifications on it go to ``on_message``; server requests are answered
        with what ``on_message`` returns (``ping`` always). A server without
        that stream (HTTP 405) is left alone; see ``http_listen`` for what
        reopens it. Calling it again replaces the previous listener;
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
        self._listener = Listener(self, on_message, self.listening)
        self._listener.start(min(self.timeout_seconds, 5.0))

    def subscribe(self, on_message: MessageHandler, request: Callable[[], dict[str, Any]]) -> str | None:
        """Open a ``subscriptions/listen`` stream (2026-07-28) on a daemon thread, replacing any listener.

        Args:
            on_message: receives each message of the stream (the acknowledgment, then the notifications).
            request: ``request() -> message``: a new ``subscriptions/listen`` request for each opening.

        Returns once the server answered (at most ``timeout_seconds``, 5 s at most); ``close()`` stops it.

        Returns:
            None, or why the server refused the stream (``"POST
            subscriptions/listen answered HTTP 400: ..."``; also logged at WARNING).

        Spec: MCP 2026-07-28, "Subscriptions".
        """
        self._stop_listening()
        listener = SubscriptionListener(self, on_message, self.listening, request)
        self._listener = listener
        listener.start(min(self.timeout_seconds, 5.0))
        return listener.refusal

    def post_headers(self, message: dict[str, Any]) -> dict[str, str]:
        """The headers of a POST of ``message`` (static, session or era headers)."""
        return {**self._headers(), **self._message_headers(message)}

    def encode(self, message: dict[str, Any]) -> bytes:
        """``message`` as the UTF-8 JSON body of a POST (``MCPProtocolError`` if it cannot be)."""
        return self._encode(message, f"{message.get('method')} to {self.name}")

    def _stop_listening(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.stop()

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
        """Stop ``listen()``, end the session with ``DELETE`` (best effort), close the connections.

        Returns within about 4 s whatever the server does (2 s for the
        listener thread, 2 s for the ``DELETE``, whose body is not read).
        """
        self._stop_listening()
        if self.session_id:
            headers = self._headers()
            headers.pop("Content-Type", None)
            try:
                with self._deadline(time.monotonic() + _CLOSE_SECONDS):
                    answer = self._session.delete(self.url, headers=headers, stream=True,
                                                  timeout=(_CLOSE_SECONDS, _CLOSE_SECONDS),
                                                  **self._redirect_kwargs("DELETE"))
                    answer.close()
                if answer.status_code >= 400 and answer.status_code != 405:  # 405: the server keeps sessions
                    logger.debug("DELETE %s answered HTTP %d", self.display_url, answer.status_code)
            except requests.RequestException as exc:
                logger.debug("DELETE %s failed: %s", self.display_url, self.scrub(str(exc)))
        self.reset_session()
        self._session.close()
