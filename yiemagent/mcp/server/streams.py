"""The bodies of the app's streamed answers, and what a call sends its client (``yiemagent.mcp.server.wsgi``).

- ``Outbox``: the messages one call sends, in order: notifications (at most
  ``max_notes`` waiting for a client that reads slowly; later ones are dropped),
  requests to the client and the reply (never dropped). ``take`` waits for the
  next one while asking every ``presence.PROBE_SECONDS`` whether the client left.
- ``CallStream``: the SSE body of one call (``event: message`` events, a ``:
  keep-alive`` comment after ``KEEP_ALIVE_SECONDS`` of quiet); a client that leaves
  before the reply cancels the call (``cancel_call``).
- ``SessionStream``: the body of a session's GET stream; it ends within a second
  of the session's end or of its client leaving.

Spec: MCP 2025-11-25 "Transports" (Streamable HTTP: the SSE stream of a POST,
the GET stream, "Cancellation"); HTML Living Standard, server-sent events.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from .calls import ServerSession
from .presence import PROBE_SECONDS, ClientPresence
from .wire import error_response, reply_bytes

__all__ = ["DONE", "GONE", "KEEP_ALIVE_SECONDS", "LATE", "LISTEN_BUFFER", "QUIET", "REQUEST_CANCELLED", "CallStream",
           "Outbox", "SessionStream", "cancel_call", "cancelled_reply", "late_reply"]

DONE, GONE, QUIET, LATE = object(), object(), object(), object()
"""``Outbox.take`` markers: the call ended; the client left first; a quiet probe asked for a keep-alive; the call
ran past its deadline."""
REQUEST_CANCELLED = -32800
"""The error code answering a request whose call was cancelled (as the ``mcp`` SDK's Streamable HTTP server)."""
REGISTER_SECONDS = 5.0
"""How long ``cancel_call`` waits for a call that has not registered its abort event yet."""


def cancelled_reply(request_id: Any) -> dict[str, Any]:
    """The answer to a request whose call was cancelled, for a client still there to get it (as the SDK's)."""
    return error_response(request_id, REQUEST_CANCELLED, "Request cancelled")


def late_reply(request_id: Any, seconds: float) -> dict[str, Any]:
    """The answer to a request whose call ran past ``WSGIApp(max_call_seconds=)`` and was cancelled."""
    return error_response(request_id, REQUEST_CANCELLED, f"Request cancelled: the call ran longer than {seconds:g} s")


def cancel_call(session: ServerSession, request_id: Any, thread: threading.Thread) -> None:
    """Set the abort event of the call ``request_id``; a call not registered yet is waited for (a few seconds)."""
    deadline = time.monotonic() + REGISTER_SECONDS
    while not session.cancel(request_id) and thread.is_alive() and time.monotonic() < deadline:
        thread.join(0.02)


class Outbox:
    """What a call sends its client, in order, waiting for the stream to take it.

    Notifications: at most ``max_notes`` waiting, later ones are dropped. Requests to the client and the reply
    are never dropped (a session has few calls, and few questions: ``calls.MAX_PENDING_QUESTIONS``).
    """

    def __init__(self, max_notes: int, deadline: float | None = None) -> None:
        self.deadline = deadline
        """``time.monotonic()`` past which ``take`` gives ``LATE`` (None: never)."""
        self._items: deque[Any] = deque()
        self._notes = 0
        self._max_notes = max_notes
        self._ready = threading.Condition()

    def put(self, message: dict[str, Any]) -> None:
        """Queue a message of the call (``context.notify``)."""
        note = "id" not in message
        with self._ready:
            if note and self._notes >= self._max_notes:
                return  # a client that does not read: the newest notifications are dropped
            self._notes += note
            self._items.append(("note", message, note))
            self._ready.notify()

    def put_final(self, item: Any) -> None:
        """Queue the call's reply (``("reply", message | None)``) or ``DONE``."""
        with self._ready:
            self._items.append(item)
            self._ready.notify()

    def take(self, presence: ClientPresence, keep_alive: Callable[[], bool] | None = None) -> Any:
        """The next item, or a marker: ``GONE`` once the client left, ``LATE`` past the deadline.

        ``keep_alive`` is asked after each quiet probe; True gives ``QUIET`` (time for a keep-alive comment).
        """
        while True:
            with self._ready:
                if not self._items:
                    self._ready.wait(PROBE_SECONDS)
                if self._items:
                    item = self._items.popleft()
                    if isinstance(item, tuple) and len(item) == 3:
                        self._notes -= item[2]
                        item = item[:2]
                    return item
            if presence.gone():
                return GONE
            if self.deadline is not None and time.monotonic() > self.deadline:
                return LATE
            if keep_alive is not None and keep_alive():
                return QUIET


class CallStream:
    """The SSE body of one call: a client that leaves before the reply cancels the call.

    Leaving is seen by the probe (``presence``) within ``PROBE_SECONDS``, by a failed write, or when the server
    closes the body early; a ``: keep-alive`` comment goes out after ``KEEP_ALIVE_SECONDS`` of quiet.
    """

    def __init__(self, first: Any, outbox: Outbox, presence: ClientPresence, cancel: Callable[[], Any],
                 request_id: Any, max_call_seconds: float | None = None) -> None:
        self._first, self._outbox, self._presence, self._cancel = first, outbox, presence, cancel
        self._request_id, self._answered, self._quiet_since = request_id, False, time.monotonic()
        self._max_call_seconds = max_call_seconds

    def _quiet(self) -> bool:
        return time.monotonic() - self._quiet_since >= KEEP_ALIVE_SECONDS

    def __iter__(self) -> Iterator[bytes]:
        item = self._first
        while item is not DONE:
            if item is GONE:
                self.close()
                return
            if item is LATE:
                self.close()
                yield b"event: message\ndata: " + reply_bytes(late_reply(self._request_id, self._max_call_seconds or 0))
                yield b"\n\n"
                return
            if item is QUIET:
                self._quiet_since = time.monotonic()
                yield b": keep-alive\n\n"
            else:
                kind, payload = item
                if kind == "reply":
                    self._answered = True
                    payload = payload if payload is not None else cancelled_reply(self._request_id)
                yield b"event: message\ndata: " + reply_bytes(payload) + b"\n\n"
                self._quiet_since = time.monotonic()
            item = self._outbox.take(self._presence, self._quiet)
        self._answered = True

    def close(self) -> None:
        """The server is done with the body (PEP 3333): before the reply, the client left; cancel the call."""
        if not self._answered:
            self._answered = True
            self._cancel()


class SessionStream:
    """The body of a session's GET stream: its notifications as SSE, a keep-alive comment every 15 s of quiet.

    It ends within a second of the session's end (``DELETE``, expiry) or of the client leaving (the probe, a
    failed write, ``close``).
    """

    def __init__(self, session: ServerSession, listener: Any, events: queue.Queue[Any],
                 alive: Callable[[], bool], presence: ClientPresence) -> None:
        self._session, self._listener, self._events, self._alive = session, listener, events, alive
        self._presence = presence

    def __iter__(self) -> Iterator[bytes]:
        yield b": stream open\n\n"  # headers and a first byte now: the client knows the stream is there
        quiet = 0.0
        while self._alive() and not self._presence.gone():
            try:
                note = self._events.get(timeout=PROBE_SECONDS)
            except queue.Empty:
                quiet += PROBE_SECONDS
                if quiet >= KEEP_ALIVE_SECONDS:
                    quiet = 0.0
                    yield b": keep-alive\n\n"
                continue
            quiet = 0.0
            yield b"event: message\ndata: " + reply_bytes(note) + b"\n\n"

    def close(self) -> None:
        """The server is done with the body: the session may open another GET stream."""
        with self._session.lock:
            if self._session.listener is self._listener:
                self._session.listener = None


KEEP_ALIVE_SECONDS = 15.0
"""Quiet seconds after which a stream sends a ``: keep-alive`` comment."""
LISTEN_BUFFER = 1000
"""Notifications kept for a GET stream whose reader is behind; later ones are dropped."""
