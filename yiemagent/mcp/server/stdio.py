"""Serving MCP on stdin/stdout: newline-delimited JSON-RPC, one session per connection.

``serve_stdio(server)`` reads one message a line from stdin (UTF-8, at most
``max_line_bytes`` a line: a longer one is answered -32600 and never held in
memory; ``yiemagent.mcp.lines.LineReader``) and writes each reply and
notification as one line to stdout (``yiemagent.mcp.server.wire.reply_bytes``).
Requests run on threads (at most ``max_concurrent`` at a time; more are answered
-32603 "server busy"), so a ``notifications/cancelled`` reaches a call in flight.
While it serves, ``sys.stdout`` is pointed at stderr: a tool's ``print`` cannot
break the protocol; logs go to stderr.

The end of stdin is the client's shutdown (the spec's stdio shutdown: the client
closes the server's input, then waits for it to exit): the requests already read
may finish for ``drain_seconds`` (default 0: none), then every call still in flight
is cancelled (its abort event set: a tool waiting for the client's answer stops
waiting) and the function returns once they ended, or after
``ABORT_GRACE_SECONDS`` at most (``python -m yiemagent.mcp.server`` then exits;
a tool that ignores its abort event does not hold the process). A cancelled call
is not answered.

Spec: MCP 2025-11-25, "Transports", stdio (messages delimited by newlines, no
embedded newlines; the server MUST NOT write anything else to stdout; it MAY log
to stderr).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Any

from ..limits import DEFAULT_MAX_JSON_DEPTH, DEFAULT_MAX_LINE_BYTES
from ..lines import LineReader, OversizedLine
from .calls import MessageHandler, RequestContext, ServerSession
from .wire import INTERNAL_ERROR, INVALID_REQUEST, error_response, read_message, reply_bytes

__all__ = ["ABORT_GRACE_SECONDS", "serve_stdio"]

ABORT_GRACE_SECONDS = 2.0
"""After stdin ends and the calls in flight are cancelled, how long they may take to end before serving returns."""


def serve_stdio(server: MessageHandler, *, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None,
                max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, max_concurrent: int = 16,
                drain_seconds: float = 0.0) -> None:
    """Serve ``server`` until ``stdin`` ends (defaults: the process's stdin and stdout, binary).

    ``drain_seconds``: how long the requests read before the end of stdin may go on before they are cancelled
    (a client that pipes requests in and reads the answers: a few seconds; the default, 0, cancels at once).

    Raises:
        ValueError: ``max_line_bytes`` or ``max_concurrent`` below 1, ``drain_seconds`` negative or not finite.
    """
    if max_concurrent < 1:
        raise ValueError("max_concurrent must be at least 1")
    if not 0 <= drain_seconds < float("inf"):
        raise ValueError(f"drain_seconds must be a finite number >= 0, not {drain_seconds!r}")
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer
    write_lock = threading.Lock()

    def write(message: dict[str, Any]) -> None:
        line = reply_bytes(message) + b"\n"
        with write_lock:
            try:
                sink.write(line)
                sink.flush()
            except (OSError, ValueError):  # the client closed stdout: nothing is listening
                pass

    session = ServerSession(listener=write)  # resource updates and other messages tied to no request: stdout
    context = RequestContext(session=session, notify=write, back_channel=True)
    slots = threading.BoundedSemaphore(max_concurrent)

    def answer(message: dict[str, Any]) -> None:
        try:
            reply = server.handle(message, context)
            if reply is not None:
                write(reply)
        finally:
            slots.release()

    saved_stdout = sys.stdout
    if stdout is None:
        sys.stdout = sys.stderr  # a stray print() must not reach the protocol stream
    try:
        for raw in LineReader(source, max_line_bytes):
            if isinstance(raw, OversizedLine):
                write(error_response(None, INVALID_REQUEST, f"message longer than {max_line_bytes} bytes"))
                continue
            if not raw.strip():
                continue
            message, error = read_message(raw, max_depth=DEFAULT_MAX_JSON_DEPTH)
            if error is not None:
                write(error)
                continue
            if "id" not in message or "method" not in message:
                reply = server.handle(message, context)  # notifications (cancellation) at once, in order
                if reply is not None:
                    write(reply)
                continue
            if not slots.acquire(blocking=False):
                write(error_response(message.get("id"), INTERNAL_ERROR, "server busy: too many requests in flight"))
                continue
            threading.Thread(target=answer, args=(message,), name="yiemagent-mcp-serve", daemon=True).start()
        # stdin ended: the client is shutting down. The requests read may finish for drain_seconds; then what
        # still runs is cancelled (again and again: a call may register its abort event after the first try).
        _wind_down(slots, max_concurrent, session, time.monotonic() + drain_seconds)
    finally:
        session.cancel_all()
        sys.stdout = saved_stdout


def _wind_down(slots: threading.BoundedSemaphore, count: int, session: ServerSession, drain_until: float) -> None:
    """Wait until every request slot is free: until ``drain_until`` untouched, then cancelling, within bounds."""
    give_up = drain_until + ABORT_GRACE_SECONDS
    held = 0
    while held < count:
        now = time.monotonic()
        if now >= give_up:
            break
        if now >= drain_until:
            session.cancel_all()
        if slots.acquire(timeout=min(0.05, max(0.0, give_up - now))):
            held += 1
