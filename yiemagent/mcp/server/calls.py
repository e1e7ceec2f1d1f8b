"""The state a served request runs in: the session, the call in flight, and what a tool may send back.

- ``ServerSession``: what one client negotiated (``protocolVersion``, capabilities,
  ``clientInfo``), its logging level, and the ``tools/call`` requests in flight
  (request id -> abort ``threading.Event``, set by ``notifications/cancelled``).
- ``MemorySessions``: the sessions of one process, bounded (``max_sessions``; the
  least recently used is dropped) and expiring after ``idle_seconds``. Sessions are
  per process: under gunicorn with several workers, serve statelessly
  (``MCPServer.wsgi_app(stateless=True)``) or pin a client to one worker.
- ``RequestContext``: what ``MCPServer.handle`` needs besides the message: the
  session and where notifications about this request go (an SSE stream, stdout).
- ``ServedCall`` / ``current_call()``: the ``tools/call`` running on this thread;
  a tool sends ``notifications/progress`` (``yiemagent.tools.report_progress``
  or ``current_call().progress``) and ``notifications/message``
  (``current_call().log``) through it.

Spec: MCP 2025-11-25, "Lifecycle", "Transports" (Session Management),
"Utilities" (Cancellation, Progress, Logging).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["LOG_LEVELS", "MemorySessions", "MessageHandler", "RequestContext", "ServedCall", "ServerSession",
           "current_call"]

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""The syslog severities of MCP logging, least severe first (RFC 5424)."""

Notify = Callable[[dict[str, Any]], None]


def _no_notify(message: dict[str, Any]) -> None:
    """Drop a notification (a request with nowhere to send one)."""


@dataclass
class ServerSession:
    """One client's session (2025-11-25 era; one per stdio connection, or per ``Mcp-Session-Id``)."""

    id: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    """Visible ASCII (0x21-0x7E) only, as ``Mcp-Session-Id`` must be; unguessable (192 random bits)."""
    protocol_version: str | None = None
    """What ``initialize`` negotiated; None before it."""
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] = field(default_factory=dict)
    initialized: bool = False
    """True once ``notifications/initialized`` came."""
    log_level: str = "info"
    """Least severe ``notifications/message`` level sent (``logging/setLevel``)."""
    last_seen: float = field(default_factory=time.monotonic)
    calls: dict[Any, threading.Event] = field(default_factory=dict, repr=False)
    """Request id -> abort event of each ``tools/call`` in flight."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def cancel(self, request_id: Any) -> bool:
        """Set the abort event of the call ``request_id``; False when no such call is in flight."""
        with self.lock:
            event = self.calls.get(request_id) if isinstance(request_id, (str, int)) else None
        if event is None:
            return False
        event.set()
        return True

    def cancel_all(self) -> None:
        """Set every in-flight call's abort event (the session ends)."""
        with self.lock:
            events = list(self.calls.values())
        for event in events:
            event.set()


class MemorySessions:
    """The sessions of this process, bounded and expiring (see the module docstring).

    Thread-safe. Raises ``ConfigError``-free: bad bounds are ``ValueError``.
    """

    def __init__(self, max_sessions: int = 10_000, idle_seconds: float = 3600.0) -> None:
        if max_sessions < 1 or idle_seconds <= 0:
            raise ValueError("max_sessions must be >= 1 and idle_seconds > 0")
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self._sessions: OrderedDict[str, ServerSession] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, session: ServerSession) -> None:
        """Keep ``session``; drops the least recently used one past ``max_sessions``."""
        with self._lock:
            self._sessions[session.id] = session
            while len(self._sessions) > self.max_sessions:
                _, dropped = self._sessions.popitem(last=False)
                dropped.cancel_all()

    def get(self, session_id: str) -> ServerSession | None:
        """The live session ``session_id`` (its ``last_seen`` updated), or None (unknown or expired)."""
        now = time.monotonic()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            if now - session.last_seen > self.idle_seconds:
                del self._sessions[session_id]
                session.cancel_all()
                return None
            session.last_seen = now
            self._sessions.move_to_end(session_id)
            return session

    def remove(self, session_id: str) -> bool:
        """End the session (its calls in flight are aborted); False when it was not there."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        session.cancel_all()
        return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


@dataclass
class RequestContext:
    """What ``MCPServer.handle`` needs besides the message."""

    session: ServerSession = field(default_factory=ServerSession)
    notify: Notify = _no_notify
    """Where notifications about this request go (progress, log messages)."""


class MessageHandler(Protocol):
    """What the transports need of a server: ``MCPServer.handle``."""

    def handle(self, message: Any, context: RequestContext | None = None) -> dict[str, Any] | None:
        """The reply to ``message``, or None (see ``MCPServer.handle``)."""
        ...


_current = threading.local()


class ServedCall:
    """The ``tools/call`` running on this thread (``current_call()``)."""

    def __init__(self, request_id: Any, arguments: dict[str, Any], context: RequestContext,
                 progress_token: Any, abort_event: threading.Event) -> None:
        self.request_id = request_id
        self.arguments = arguments
        self.context = context
        self.progress_token = progress_token
        """``params._meta.progressToken`` of the request, or None (then ``progress`` sends nothing)."""
        self.abort_event = abort_event
        """Set when the client cancels the call or its session ends."""

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` (only when the request gave a ``progressToken``)."""
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self.context.notify({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    def report(self, value: Any) -> None:
        """Send what ``yiemagent.tools.report_progress`` got inside a served tool as progress.

        A number, or ``{"progress", "total"?, "message"?}``; anything else is sent as the ``message``.
        """
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.progress(value)
        elif isinstance(value, dict) and isinstance(value.get("progress"), (int, float)):
            total = value.get("total")
            message = value.get("message")
            self.progress(value["progress"], total if isinstance(total, (int, float)) else None,
                          message if isinstance(message, str) else None)
        else:
            self.progress(0, None, str(value))

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` when ``level`` is at least the session's level.

        Raises:
            ValueError: ``level`` is not one of ``LOG_LEVELS``.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"log level {level!r} is not one of {', '.join(LOG_LEVELS)}")
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(self.context.session.log_level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.context.notify({"jsonrpc": "2.0", "method": "notifications/message", "params": params})


def current_call() -> ServedCall | None:
    """The served ``tools/call`` running on this thread, or None (not inside a served tool)."""
    return getattr(_current, "call", None)


@contextmanager
def running(call: ServedCall) -> Iterator[None]:
    """Make ``call`` the current call of this thread while the tool runs."""
    previous = getattr(_current, "call", None)
    _current.call = call
    try:
        yield
    finally:
        _current.call = previous
