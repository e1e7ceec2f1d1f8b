"""Serving MCP on stdin/stdout: newline-delimited JSON-RPC, one session per connection.

``serve_stdio(server)`` reads one message a line from stdin (UTF-8, at most
``max_line_bytes`` a line: a longer one is answered -32600 and never held in
memory; ``yiemagent.mcp.lines.LineReader``) and writes each reply and
notification as one line to stdout (``yiemagent.mcp.server.wire.reply_bytes``).
Requests run on threads (at most ``max_concurrent`` at a time; more are answered
-32603 "server busy"), so a ``notifications/cancelled`` reaches a call in flight.
While it serves, ``sys.stdout`` is pointed at stderr: a tool's ``print`` cannot
break the protocol; logs go to stderr. At the end of stdin the requests already
read may finish for ``drain_seconds``; then every call still in flight is aborted
(its abort event set) and the function returns.

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

__all__ = ["serve_stdio"]


def serve_stdio(server: MessageHandler, *, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None,
                max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, max_concurrent: int = 16,
                drain_seconds: float = 10.0) -> None:
    """Serve ``server`` until ``stdin`` ends (defaults: the process's stdin and stdout, binary).

    Raises:
        ValueError: ``max_line_bytes`` or ``max_concurrent`` below 1.
    """
    if max_concurrent < 1:
        raise ValueError("max_concurrent must be at least 1")
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
        deadline = time.monotonic() + drain_seconds  # stdin ended: let the requests read finish, within bounds
        for _ in range(max_concurrent):
            if not slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
                break
    finally:
        session.cancel_all()
        sys.stdout = saved_stdout
