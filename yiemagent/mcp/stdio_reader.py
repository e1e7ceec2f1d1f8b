"""The stdout reader of a stdio transport: a daemon thread that reads the server's lines and routes each message.

Lines (``lines.LineReader``: at most ``max_line_bytes`` bytes each) are
parsed (``lines.parse_line``) into messages. A response goes to the request
waiting for its ``id`` (``stdio_pending``). A server request goes to the
bounded pool of ``request_workers``, never answered on the reader (it must
never wait for stdin); past ``max_server_requests`` waiting it is dropped and
logged. A notification goes to the ``on_message`` handler on the reader
thread, in order; until a handler is given, up to ``MAX_EARLY_NOTIFICATIONS``
are kept for it. A bad line is never fatal: it fails the request it answers
if its ``id`` can be found, else it is logged at WARNING and skipped; either
way it counts in ``bad_lines``. When stdout ends, the exit code and the last
stderr bytes are recorded (``EXIT_WAIT_SECONDS`` each) and every waiting
request fails at once.

``StdoutReader`` is a base class of ``StdioTransport``, whose ``__init__``
sets the attributes declared on it.

Spec: MCP 2025-11-25, "Transports", stdio.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from typing import TYPE_CHECKING, Any

from ..exceptions import MCPProtocolError
from . import jsonrpc
from .limits import MAX_EARLY_NOTIFICATIONS
from .lines import SNIFF_BYTES, LineReader, OversizedLine, parse_line, sniff_response_id
from .request_workers import RequestWorkers
from .stdio_pending import Failure, PendingRequests
from .stdio_process import close_quietly
from .transport import MessageHandler

__all__ = ["EXIT_WAIT_SECONDS", "StdoutReader"]

logger = logging.getLogger("yiemagent.mcp.stdio")

EXIT_WAIT_SECONDS = 1.0
"""After stdout EOF: seconds for the exit code and the last stderr bytes (and for a reader setting a slot)."""


class StdoutReader(PendingRequests):
    """The reading side of a ``StdioTransport`` (a base class of it; see above)."""

    max_line_bytes: int
    max_json_depth: int
    max_server_requests: int
    bad_lines: int
    _handler: MessageHandler | None
    _early: list[dict[str, Any]]
    """Notifications that came before any handler."""
    _workers: RequestWorkers
    _threads: list[threading.Thread]
    """The stdout reader, then the stderr reader."""
    _write_lock: threading.Lock

    if TYPE_CHECKING:
        @property
        def stderr_tail(self) -> str:
            """The last ~4 KB the server wrote to stderr (a property of ``StdioTransport``)."""

    def _read_stdout(self, process: subprocess.Popen[bytes]) -> None:
        stream: Any = process.stdout
        try:
            for line in LineReader(stream, self.max_line_bytes):
                try:
                    self._handle_line(line)
                except Exception:  # whatever a line does, the reader lives on (a bad line is never fatal)
                    logger.exception("%s: handling a stdout line failed", self.name)
        except (OSError, ValueError) as exc:
            logger.debug("%s: stdout reader stopped: %s", self.name, exc)
        finally:
            close_quietly(stream)
            self._process_gone(process)

    def _handle_line(self, line: bytes | OversizedLine) -> None:
        if isinstance(line, OversizedLine):
            self._bad_line(f"a line of {line.size:,} bytes, over max_line_bytes={self.max_line_bytes:,}",
                           line.head, line.tail)
            return
        try:
            messages = parse_line(line, max_depth=self.max_json_depth)
        except ValueError as exc:
            self._bad_line(str(exc), line[:SNIFF_BYTES], line[-SNIFF_BYTES:])
            return
        size = len(line) // max(1, len(messages))
        for message in messages:
            try:
                self._dispatch(message, size)
            except Exception:  # a handler bug must not kill the reader
                logger.exception("%s: handling a server message failed", self.name)

    def _bad_line(self, reason: str, head: bytes, tail: bytes) -> None:
        """A line that cannot be used: fail the request it answers, if we can tell which; else log it."""
        self.bad_lines += 1
        request_id = sniff_response_id(head, tail)
        body = head[:200].decode("utf-8", errors="replace")
        if request_id is not None and self._fail_one(request_id, MCPProtocolError(
                f"{self.name} answered request {request_id!r} with a line that cannot be read: {reason}",
                server=self.name, body=body)):
            logger.warning("%s: request %r failed: its response is unreadable (%s)", self.name, request_id, reason)
            return
        logger.warning("%s: skipped a stdout line that is not a usable JSON-RPC message (%s): %.200r",
                       self.name, reason, head)

    def _process_gone(self, process: subprocess.Popen[bytes]) -> None:
        """Stdout ended: record why and fail every waiting request at once."""
        try:
            code: int | None = process.wait(timeout=EXIT_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        if len(self._threads) > 1 and self._threads[1].ident is not None:  # started before this reader
            self._threads[1].join(timeout=EXIT_WAIT_SECONDS)  # the last stderr bytes
        if code is None:
            message = f"{self.name} closed its stdout (pid {process.pid} still running)"
        else:
            message = f"the server process {self.name} exited with code {code}"
        if code is not None and self._write_lock.acquire(timeout=EXIT_WAIT_SECONDS):
            try:
                close_quietly(process.stdin)
            finally:
                self._write_lock.release()
        if not self._closed:
            logger.warning("%s", message)
        self._fail_pending(Failure(message, code, self.stderr_tail), final=True)

    # ------------------------------------------------------------------ routing

    def _dispatch(self, message: dict[str, Any], size: int = 0) -> None:
        if "id" in message and "method" not in message:
            self._dispatch_response(message)
            return
        handler = self._handler
        if jsonrpc.is_request(message):
            # On a worker (a handler may block, e.g. to ask a user), never on the reader: the reader
            # must never wait for stdin. The pool is bounded, so a flood of requests costs no threads.
            if not self._workers.submit({"message": message, "handler": handler}, size):
                dropped = self._workers.dropped
                if dropped & (dropped - 1) == 0:  # the 1st, 2nd, 4th, 8th...: a flood is not a log flood
                    logger.warning("%s: dropped server request %.50r (%.50r): too many (at most %d, %s bytes) "
                                   "wait for an answer (%d dropped so far)", self.name, message.get("id"),
                                   message.get("method"), self.max_server_requests, f"{self.max_line_bytes:,}",
                                   dropped)
        elif jsonrpc.is_notification(message):
            if handler is not None:
                handler(message)
            else:
                with self._lock:
                    if len(self._early) < MAX_EARLY_NOTIFICATIONS:
                        self._early.append(message)
        else:
            logger.warning("%s: skipped a message that is not JSON-RPC: %.200r", self.name, message)

    def _use_handler(self, on_message: MessageHandler) -> None:
        with self._lock:
            self._handler = on_message
            early, self._early = self._early, []
        for message in early:
            try:
                on_message(message)
            except Exception:
                logger.exception("%s: handling a server message failed", self.name)
