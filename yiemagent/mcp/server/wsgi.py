"""Streamable HTTP as a plain PEP 3333 WSGI app: mount it in Flask or Django, run it under waitress or gunicorn.

``WSGIApp(server, path="/mcp")`` (``MCPServer.wsgi_app``) answers, at ``path``:

- ``POST`` one JSON-RPC message (``Content-Type: application/json``, else 415;
  the body at most ``max_body_bytes``, else 413; a client accepting neither
  ``application/json`` nor ``text/event-stream`` gets 406). A notification or a
  response: 202, no body. A request: 200 ``application/json`` with the response;
  a ``tools/call`` (``prompts/get``, ``resources/read``) whose tool sends progress
  or log notifications while the client accepts ``text/event-stream``: 200
  ``text/event-stream``, the notifications and then the response as ``event:
  message`` events (a ``: keep-alive`` comment after 15 s of quiet). Unreadable
  JSON, or JSON nested deeper than 128 levels: 400 with a JSON-RPC error.
- Clients that leave: those three methods run on a thread of their own while the
  request's thread waits for their first message, asking every ``PROBE_SECONDS``
  (0.5 s) whether the client is still connected (``presence.ClientPresence``:
  waitress with ``channel_request_lookahead`` >= 1, gunicorn, werkzeug; under
  another server only a failed write shows it). A client that leaves at any
  point (before the first event, while a tool waits for its answer, while the
  call streams; JSON or SSE; both eras) cancels the call: its abort event is set
  and the request's thread returns. ``max_call_seconds`` (default None) bounds how
  long a client that stays may hold one: past it the call is cancelled and
  answered ``-32800``. A call cancelled otherwise
  (``notifications/cancelled``, the session's end) while its client waits is
  answered ``-32800 "Request cancelled"`` (as the ``mcp`` SDK's server).
- Per client: at most ``max_calls_per_session`` such calls run at once in a
  session, and at most ``max_calls_per_owner`` for one owner (the verified
  token's principal, else the client's address, as sessions are owned:
  ``sessions.session_owner``) across its sessions, 2026-07-28 requests and
  ``stateless`` requests, which have no session (one more: 429 with a JSON-RPC
  error; the share is back when the call ends, is cancelled or its client
  leaves), and as many open ``GET`` streams (each holds a thread too; one more:
  429); each buffers at most
  ``max_buffered_messages`` notifications for a client that reads slowly (later
  ones are dropped; requests to the client and the reply never are); a session
  has one GET stream, and at most ``calls.MAX_PENDING_QUESTIONS`` questions waiting.
- Sessions (2025-11-25, the default): ``initialize`` answers with an
  ``Mcp-Session-Id`` header (192 random bits, visible ASCII); every later request
  must carry it: none, 400; unknown, ended, expired or another principal's, 404
  (the client starts a new session). ``DELETE`` with it ends the session (200;
  calls in flight are aborted). A session belongs to the verified token's
  principal (``BearerAuth``), else the client's address; one owner's
  ``initialize`` past its share gets 429, a full process whose sessions all
  have calls in flight 503 (``yiemagent.mcp.server.sessions``). The verified
  token reaches each call as ``RequestContext.identity``. Sessions live in this
  process (``MemorySessions``): with several gunicorn workers use
  ``stateless=True``, or one process with threads.
- ``stateless=True``: no session ids; each request stands alone (as the SDK's
  ``stateless_http``): any worker can answer any request, a
  ``notifications/cancelled`` on another request cannot reach a call, and
  ``logging/setLevel`` lasts one request. ``DELETE``: 405.
- 2026-07-28 requests (``MCP-Protocol-Version: 2026-07-28``, or any version
  that is not a handshake one; ``yiemagent.mcp.server.modern.request_era``) need
  no session: ``Mcp-Session-Id`` is ignored, each request stands alone, its
  headers are checked (``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``), and a
  JSON-RPC error is sent with the status the spec gives it (400: -32700,
  -32600, -32602, -32020, -32021, -32022; 404: -32601). A notification or a
  response is 202 and dropped. One app serves both eras, so several gunicorn
  workers serve 2026-07-28 clients with sessions on, as long as they share
  ``state_keys`` (``MCPServer``) for ``input_required`` rounds.
- A 2025-11-25 ``tools/call``, ``prompts/get`` or ``resources/read`` whose tool
  asks the client for input (``ServedCall.ask``) sends the request on the
  response's SSE stream; the client POSTs its answer in the session (202). Not
  in ``stateless`` mode, nor to a client that does not accept
  ``text/event-stream`` (the ask raises ``InputUnavailable``).
- ``GET`` with ``Accept: text/event-stream`` and the session id: the session's standalone SSE stream
  (messages tied to no request: ``notifications/resources/updated`` for its subscriptions), a
  ``: keep-alive`` comment after 15 s of quiet, one stream per session (a second: 409) and
  ``MemorySessions.max_streams_per_owner`` (4) per owner over its sessions (one more: 429; each holds a
  thread); it ends with the session, or within a second of its client leaving. Stateless: 405. Other
  methods 405.
- DNS rebinding: a request whose ``Origin`` header is not allowed gets 403.
  Allowed: ``http(s)://localhost``, ``127.0.0.1`` and ``[::1]`` on any port, and
  each entry of ``allowed_origins`` (``"https://app.example.com"``). Requests
  without ``Origin`` (programs, not browsers) pass. ``allowed_hosts`` (e.g.
  ``["localhost", "127.0.0.1"]``, ports ignored), when given, also refuses any
  other ``Host`` with 403.

Spec: MCP 2025-11-25, "Transports", Streamable HTTP (Sending Messages to the
Server, Session Management, Protocol Version Header, Security Warning); MCP
2026-07-28 "Transports" (Request Metadata, Server Validation); PEP 3333.
"""

from __future__ import annotations

import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..._internal.checks import check_bool, check_int, check_number, check_str
from ...exceptions import ConfigError
from .auth import ENVIRON_KEY as _IDENTITY
from .calls import MemorySessions, MessageHandler, RequestContext, ServerSession
from .modern import http_status, request_era
from .presence import ClientPresence
from .sessions import SessionRefused, session_owner
from .streams import (
    DONE,
    GONE,
    LATE,
    LISTEN_BUFFER,
    CallStream,
    Outbox,
    SessionStream,
    cancel_call,
    cancelled_reply,
    late_reply,
)
from .wire import INTERNAL_ERROR, INVALID_REQUEST, error_response, read_message, reply_bytes

__all__ = ["DEFAULT_MAX_BODY_BYTES", "WSGIApp"]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""Largest request body read (bytes); a longer one is answered 413 unread."""

StartResponse = Callable[..., Any]
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
DEFAULT_MAX_CALLS_PER_SESSION = 16
"""Calls (``tools/call``, ``prompts/get``, ``resources/read``) one session may have running at once."""
DEFAULT_MAX_CALLS_PER_OWNER = 16
"""Calls one owner (principal, else address) may have running at once in all its sessions and sessionless requests."""
DEFAULT_MAX_BUFFERED_MESSAGES = 1000
"""Notifications one call may have waiting for a client that reads slowly; later ones are dropped."""


def _status(code: int) -> str:
    return {200: "200 OK", 202: "202 Accepted", 400: "400 Bad Request", 403: "403 Forbidden", 404: "404 Not Found",
            405: "405 Method Not Allowed", 406: "406 Not Acceptable", 409: "409 Conflict", 413: "413 Content Too Large",
            415: "415 Unsupported Media Type", 429: "429 Too Many Requests",
            503: "503 Service Unavailable"}[code]


class WSGIApp:
    """The WSGI callable (see the module docstring for the behaviour and the options).

    Args:
        server: the ``MCPServer`` (any ``MessageHandler``) answering the messages.
        path: the endpoint (``PATH_INFO``); other paths get 404. Mounted under a prefix (werkzeug's
            ``DispatcherMiddleware({"/mcp": app})``), ``PATH_INFO`` is what follows the prefix: pass ``path="/"``
            (``""`` is the same).
        allowed_origins: browser origins allowed besides localhost ones.
        allowed_hosts: when given, the only ``Host`` names accepted.
        stateless: serve without sessions.
        sessions: the session store (default ``MemorySessions()``).
        max_body_bytes: largest request body.
        max_calls_per_session: calls one session may have running at once (more: 429 with a JSON-RPC error).
        max_calls_per_owner: calls one owner (``sessions.session_owner``: the verified principal, else
            ``REMOTE_ADDR``) may have running at once across its sessions and its sessionless (2026-07-28,
            ``stateless``) requests; more: 429 with a JSON-RPC error. Each takes a thread while it runs. The
            owner's open ``GET`` streams are bounded by the same number (one more: 429).
        max_buffered_messages: notifications one call may have waiting for its client (more are dropped).
        max_call_seconds: longest a call may run (seconds); then it is cancelled and its client answered -32800.
            None: as long as its client stays.

    Raises:
        ConfigError: ``stateless`` not a bool, ``path`` not a string, ``allowed_origins`` / ``allowed_hosts`` a
            single string, ``max_body_bytes``, ``max_calls_per_session``, ``max_calls_per_owner`` or
            ``max_buffered_messages`` not an int >= 1, or ``max_call_seconds`` not a positive finite number (a
            ``ValueError``).
    """

    def __init__(self, server: MessageHandler, *, path: str = "/mcp", allowed_origins: Sequence[str] = (),
                 allowed_hosts: Sequence[str] | None = None, stateless: bool = False,
                 sessions: MemorySessions[ServerSession] | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 max_calls_per_session: int = DEFAULT_MAX_CALLS_PER_SESSION,
                 max_buffered_messages: int = DEFAULT_MAX_BUFFERED_MESSAGES,
                 max_call_seconds: float | None = None,
                 max_calls_per_owner: int = DEFAULT_MAX_CALLS_PER_OWNER) -> None:
        check_bool("stateless", stateless)  # "no" is truthy: it would serve without sessions
        check_str("path", path)
        for name, names in (("allowed_origins", allowed_origins), ("allowed_hosts", allowed_hosts)):
            if isinstance(names, (str, bytes)):  # "localhost" would be read as its letters
                raise ConfigError(f"{name} must be a list of names, not the string {names!r:.50}")
        for name, value in (("max_body_bytes", max_body_bytes), ("max_calls_per_session", max_calls_per_session),
                            ("max_buffered_messages", max_buffered_messages),
                            ("max_calls_per_owner", max_calls_per_owner)):
            check_int(name, value, minimum=1)  # NaN would pass a "< 1" test: never unbounded
        check_number("max_call_seconds", max_call_seconds, optional=True)
        self.max_call_seconds = max_call_seconds
        self.server = server
        self.path = path.rstrip("/")
        self.allowed_origins = frozenset(o.rstrip("/").lower() for o in allowed_origins)
        self.allowed_hosts = None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)
        self.stateless = stateless
        self.sessions: MemorySessions[ServerSession] = sessions if sessions is not None else MemorySessions()
        self.max_body_bytes = max_body_bytes
        self.max_calls_per_session = max_calls_per_session
        self.max_calls_per_owner = max_calls_per_owner
        self._owner_running: dict[str, int] = {}
        self.max_buffered_messages = max_buffered_messages
        self._lock = threading.Lock()
        self._running: weakref.WeakKeyDictionary[ServerSession, int] = weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------ WSGI

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Answer one HTTP request (PEP 3333)."""
        if environ.get("PATH_INFO", "").rstrip("/") != self.path:
            return _plain(start_response, 404, "not found")
        refusal = self._check_origin(environ)
        if refusal:
            return _plain(start_response, 403, refusal)
        method = environ.get("REQUEST_METHOD", "")
        if method == "POST":
            return self._post(environ, start_response)
        if method == "DELETE" and not self.stateless:
            return self._delete(environ, start_response)
        if method == "GET" and not self.stateless:
            return self._listen(environ, start_response)
        allow = "POST" if self.stateless else "GET, POST, DELETE"
        start_response(_status(405), [("Allow", allow), ("Content-Type", "text/plain"), ("Content-Length", "18")])
        return [b"method not allowed"]

    def _check_origin(self, environ: dict[str, Any]) -> str:
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None:
            parts = urlsplit(origin.strip())
            host = (parts.hostname or "").lower()
            local = parts.scheme in ("http", "https") and (host in _LOCAL_HOSTS or f"[{host}]" in _LOCAL_HOSTS)
            if not local and origin.strip().rstrip("/").lower() not in self.allowed_origins:
                return "origin not allowed"
        if self.allowed_hosts is not None:
            host_header = environ.get("HTTP_HOST", "").lower()
            name = host_header.rsplit(":", 1)[0] if not host_header.endswith("]") else host_header
            if name not in self.allowed_hosts and host_header not in self.allowed_hosts:
                return "host not allowed"
        return ""

    def _delete(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        if not session_id:
            return _rpc_error(start_response, 400, "Bad Request: Mcp-Session-Id header is required")
        if not self.sessions.remove(session_id, _owner(environ)):
            return _rpc_error(start_response, 404, "Session not found")
        return _plain(start_response, 200, "")

    def _listen(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """The session's standalone SSE stream: messages tied to no request (resource updates); one at a time."""
        if "text/event-stream" not in environ.get("HTTP_ACCEPT", "").lower():
            return _rpc_error(start_response, 406, "Not Acceptable: the GET stream is text/event-stream")
        session, headers = self._session(environ, False)
        if isinstance(session, int):
            return _rpc_error(start_response, session, "Bad Request: Mcp-Session-Id header is required"
                              if session == 400 else "Session not found")
        events: queue.Queue[Any] = queue.Queue(maxsize=LISTEN_BUFFER)

        def listener(note: dict[str, Any]) -> None:
            try:
                events.put_nowait(note)
            except queue.Full:  # a reader that stopped: the oldest are kept, the newest dropped
                pass

        refused = self.sessions.listen(session, listener)  # one per session, max_streams_per_owner per owner
        if refused:
            return _rpc_error(start_response, refused, "Conflict: this session has a GET stream open already"
                              if refused == 409 else "Too many open GET streams for this client; close one")
        start_response(_status(200), [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                                      ("X-Accel-Buffering", "no"), *headers])
        return SessionStream(session, listener, events, lambda: self.sessions.get(session.id) is session,
                             ClientPresence(environ))

    def _post(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        content_type = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
        if content_type != "application/json":
            return _rpc_error(start_response, 415, "Unsupported Media Type: Content-Type must be application/json")
        accept = environ.get("HTTP_ACCEPT", "").lower()
        wants_json = not accept or "application/json" in accept or "*/*" in accept
        wants_sse = "text/event-stream" in accept or "*/*" in accept
        if not wants_json and not wants_sse:
            return _rpc_error(start_response, 406, "Not Acceptable: accept application/json or text/event-stream")
        body = self._read_body(environ)
        if body is None:
            return _rpc_error(start_response, 413, f"request body larger than {self.max_body_bytes} bytes")
        message, error = read_message(body)
        if error is not None:
            return _json(start_response, 400, error)
        is_request = isinstance(message, dict) and "method" in message and "id" in message
        headers, identity = _headers(environ), environ.get(_IDENTITY)
        if request_era(message, headers) == "modern":
            if not is_request:
                return _plain(start_response, 202, "")
            context = RequestContext(session=ServerSession(), headers=headers, identity=identity)
            if message.get("method") in _ASKING:
                return self._call(message, context, [], environ, start_response, wants_json, wants_sse, modern=True)
            reply = self.server.handle(message, context)
            if reply is None:
                return _plain(start_response, 202, "")
            return _json(start_response, http_status(reply), reply)
        initializing = is_request and message.get("method") == "initialize"
        session, answer_headers = self._session(environ, initializing)
        if isinstance(session, int):
            return _rpc_error(start_response, session, "Bad Request: Mcp-Session-Id header is required"
                              if session == 400 else "Session not found")
        if not is_request:
            self.server.handle(message, RequestContext(session=session, headers=headers, identity=identity))
            return _plain(start_response, 202, "", answer_headers)
        if message.get("method") in _ASKING:
            context = RequestContext(session=session, back_channel=not self.stateless, headers=headers,
                                     identity=identity)
            return self._call(message, context, answer_headers, environ, start_response, wants_json, wants_sse,
                              modern=False)
        reply = self.server.handle(message, RequestContext(session=session, headers=headers, identity=identity))
        if initializing and not self.stateless and reply is not None and "result" in reply:
            try:
                self.sessions.add(session, _owner(environ))  # bounded per owner: the principal, else the address
            except SessionRefused as refused:
                return _rpc_error(start_response, refused.status, str(refused))
            answer_headers = [("Mcp-Session-Id", session.id)]
        if reply is None:
            return _plain(start_response, 202, "", answer_headers)
        return _json(start_response, 200, reply, answer_headers)

    def _session(self, environ: dict[str, Any],
                 initializing: bool) -> tuple[ServerSession | int, list[tuple[str, str]]]:
        """The request's session and the headers to answer with, or (HTTP status, []) when refused."""
        if self.stateless or initializing:
            return ServerSession(), []
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        if not session_id:
            return 400, []
        session = self.sessions.get(session_id, _owner(environ))  # another principal's session: unknown
        if session is None:
            return 404, []
        return session, [("Mcp-Session-Id", session.id)]

    def _read_body(self, environ: dict[str, Any]) -> bytes | None:
        stream = environ["wsgi.input"]
        try:
            length = int(environ.get("CONTENT_LENGTH") or -1)
        except ValueError:
            length = -1
        if length > self.max_body_bytes:
            return None
        body = stream.read(length) if length >= 0 else stream.read(self.max_body_bytes + 1)
        return None if len(body) > self.max_body_bytes else bytes(body)

    # ------------------------------------------------------------------ a call that may stream

    def _call(self, message: dict[str, Any], context: RequestContext, headers: list[tuple[str, str]],
              environ: dict[str, Any], start_response: StartResponse, wants_json: bool, wants_sse: bool, *,
              modern: bool) -> Iterable[bytes]:
        """Run the call on a thread while this one watches the client; answer JSON if its reply comes first, else SSE.

        The SSE stream carries the messages the call sends (notifications, requests to the client), then the reply.
        A client that leaves (``presence.ClientPresence``) before the reply cancels the call.
        """
        session, request_id, owner = context.session, message.get("id"), _owner(environ)
        with self._lock:
            running = self._running.get(session, 0)
            if running >= self.max_calls_per_session:
                return _json(start_response, 429, error_response(
                    request_id, INTERNAL_ERROR, f"too many requests in flight in this session ({running})"), headers)
            owned = self._owner_running.get(owner, 0)
            if owned >= self.max_calls_per_owner:
                return _json(start_response, 429, error_response(
                    request_id, INTERNAL_ERROR, f"too many requests in flight for this client ({owned})"), headers)
            self._running[session] = running + 1
            self._owner_running[owner] = owned + 1
        limit = self.max_call_seconds
        outbox = Outbox(self.max_buffered_messages, None if limit is None else time.monotonic() + limit)
        context.back_channel = context.back_channel and wants_sse
        if wants_sse:
            context.notify = outbox.put

        def release() -> None:
            with self._lock:  # the session's and the owner's shares are back before the client hears the reply
                left = self._running.get(session, 1) - 1
                if left > 0:
                    self._running[session] = left
                else:
                    self._running.pop(session, None)
                owned_left = self._owner_running.get(owner, 1) - 1
                if owned_left > 0:
                    self._owner_running[owner] = owned_left
                else:
                    self._owner_running.pop(owner, None)

        def run() -> None:
            reply: Any = None
            try:
                reply = self.server.handle(message, context)
            finally:
                release()
                outbox.put_final(("reply", reply))
                outbox.put_final(DONE)

        thread = threading.Thread(target=run, name="yiemagent-mcp-call", daemon=True)
        try:
            thread.start()
        except BaseException:  # no thread to run it (RuntimeError: can't start new thread): the share is back
            release()
            raise
        presence = ClientPresence(environ)

        def cancel() -> None:
            cancel_call(session, request_id, thread)

        first = outbox.take(presence)
        if first is GONE or first is LATE:
            cancel()  # GONE: nobody reads the answer
            ended = cancelled_reply(request_id) if first is GONE else late_reply(request_id, limit or 0)
            return _json(start_response, 200, ended, headers)
        if not wants_sse or (wants_json and (first is DONE or first[0] == "reply")):
            reply = None if first is DONE else first[1]
            if reply is None:  # cancelled (notifications/cancelled, the session ended): the client still gets an answer
                reply = cancelled_reply(request_id)
            return _json(start_response, http_status(reply) if modern else 200, reply, headers)
        start_response(_status(200), [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                                      ("X-Accel-Buffering", "no"), *headers])
        return CallStream(first, outbox, presence, cancel, request_id, limit)


_ASKING = frozenset({"tools/call", "prompts/get", "resources/read"})
"""Requests that may stream: progress and log notifications, and (2025-11-25) requests to the client."""


def _owner(environ: dict[str, Any]) -> str:
    """Who a session belongs to: the verified token's principal, else the client's address (``sessions``)."""
    return session_owner(environ.get(_IDENTITY), environ.get("REMOTE_ADDR"))


def _headers(environ: dict[str, Any]) -> dict[str, str]:
    """The request's headers, lower-case names (``mcp-method``), as the 2026-07-28 checks read them."""
    found = {key[5:].replace("_", "-").lower(): str(value) for key, value in environ.items()
             if key.startswith("HTTP_")}
    if "CONTENT_TYPE" in environ:
        found["content-type"] = str(environ["CONTENT_TYPE"])
    return found


def _plain(start_response: StartResponse, status: int, text: str,
           headers: Sequence[tuple[str, str]] = ()) -> list[bytes]:
    data = text.encode("utf-8")
    start_response(_status(status), [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data))),
                                     *headers])
    return [data] if data else []


def _json(start_response: StartResponse, status: int, message: dict[str, Any],
          headers: Sequence[tuple[str, str]] = ()) -> list[bytes]:
    data = reply_bytes(message)
    start_response(_status(status), [("Content-Type", "application/json"), ("Content-Length", str(len(data))),
                                     *headers])
    return [data]


def _rpc_error(start_response: StartResponse, status: int, text: str) -> list[bytes]:
    return _json(start_response, status, error_response(None, -32000 if status != 413 else INVALID_REQUEST, text))
