"""Stdio transport: an MCP server run as a subprocess, one JSON-RPC message per line.

The client writes each message to the server's stdin as one line of UTF-8
JSON ending in ``\\n``; the server writes its messages to stdout the same way
and may log anything to stderr. A reader thread reads stdout and hands each
response to the request waiting for its ``id``; notifications and server
requests go to the ``on_message`` handler (a server ``ping`` is always
answered, by a small bounded pool of threads, never a thread each).

A bad line is never fatal: whatever the server writes (bytes that are not
UTF-8, text that is not JSON, JSON nested 100,000 deep, a line of 300 MB, a
response with both ``result`` and ``error``), the reader goes on and the
connection keeps serving. An error with ``id: null`` is logged only: over
stdio it cannot be tied to one request. If the bad line answers a request we can identify
(its top-level ``id``), that request fails at once with ``MCPProtocolError``;
otherwise the line is logged at WARNING and skipped. Lines longer than
``max_line_bytes`` are never held in memory (see ``yiemagent.mcp.lines``), and
the limits are listed in ``yiemagent.mcp.limits``.

Lifecycle::

    StdioTransport(...)      nothing runs yet
    first send() / start()   the process starts (stdin, stdout, stderr piped)
    ... sends ...            concurrent sends are fine; writes are serialized
    the process exits        every waiting send fails at once with MCPTransportError
                             (exit code and the last ~4 KB of stderr); later sends too:
                             the process is never restarted (make a new transport/client)
    close()                  close stdin, wait 2 s, SIGTERM, wait 2 s, SIGKILL

The child sees only an allow-list of the parent's environment plus the
``env`` given, and runs in its own process group (see
``yiemagent.mcp.stdio_process``).

Spec: MCP 2025-11-25, "Transports", stdio; "Lifecycle", "Shutdown".

Split out: the stdout reader (``stdio_reader``) and the table of waiting requests (``stdio_pending``).
"""

from __future__ import annotations

import collections
import logging
import os
import shlex
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._internal.checks import check_arguments
from .._internal.deadlines import PausableClock, wait_until
from .._internal.fork import fork_note, on_fork_in_child
from ..exceptions import ConfigError, MCPProtocolError, MCPTimeoutError, MCPTransportError
from . import jsonrpc
from .limits import (
    DEFAULT_MAX_JSON_DEPTH,
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_MAX_SERVER_REQUESTS,
    DEFAULT_SERVER_REQUEST_WORKERS,
)
from .lines import encode_message, parse_line
from .request_workers import RequestWorkers
from .stdio_pending import Failure, Slot, raise_for
from .stdio_process import (
    DEFAULT_INHERITED_ENV_VARS,
    SHUTDOWN_WAIT_SECONDS,
    StderrTail,
    close_quietly,
    default_environment,
    spawn,
    stop_process,
)
from .stdio_reader import EXIT_WAIT_SECONDS, StdoutReader
from .transport import MessageHandler, Transport

__all__ = [
    "DEFAULT_INHERITED_ENV_VARS",
    "SHUTDOWN_WAIT_SECONDS",
    "StdioTransport",
    "default_environment",
    "parse_line",
]

logger = logging.getLogger("yiemagent.mcp.stdio")


class StdioTransport(StdoutReader, Transport):
    """Run an MCP server as a subprocess and talk to it over stdin/stdout.

    The process starts lazily, on the first ``send`` (or an explicit
    ``start()``), so building an ``MCPClient`` never spawns anything; a
    command that cannot be started fails that first send.

    Args:
        command: the executable, e.g. ``"node"`` or ``sys.executable``;
            looked up on the ``PATH`` of the child's environment.
        args: its arguments, e.g. ``["-m", "mcp_server_time"]``.
        env: extra environment variables for the server, added over
            ``default_environment()`` (the allow-list); None adds nothing.
            Values are never logged.
        cwd: working directory of the server; None inherits ours.
        timeout_seconds: default seconds ``send`` waits for a response.
        name: label of the server in errors and logs; empty uses the command line.
        max_line_bytes: longest stdout line read (bytes, without ``\\n``);
            a longer one is discarded without being held in memory, and the
            request it answered (if its ``id`` can be found in its first or
            last 4 KB) fails with ``MCPProtocolError``.
        max_json_depth: deepest nesting of arrays/objects in one message;
            deeper is treated like a line that is not JSON.
        max_server_requests: server requests waiting for an answer at most
            (and ``max_line_bytes`` of them in all); more are dropped
            (logged at WARNING; the server gets no answer to those).
        server_request_workers: threads answering server requests at most.

    Attributes:
        process: the ``subprocess.Popen`` once started, else None.

    Errors raised by ``send`` carry ``stderr_tail`` (the last ~4 KB the server
    wrote to stderr, also appended to the message) and ``exit_code`` (the
    process's exit status, None while it runs; negative for a signal).

    Thread safety: ``send``, ``cancel`` and ``close`` may be called from any
    thread; concurrent sends are matched to their responses by ``id``.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout_seconds: float = 30.0,
        name: str = "",
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
        max_server_requests: int = DEFAULT_MAX_SERVER_REQUESTS,
        server_request_workers: int = DEFAULT_SERVER_REQUEST_WORKERS,
    ) -> None:
        if isinstance(args, str):
            raise ConfigError("args must be a sequence of strings, not one string (use shlex.split)")
        self.command = str(command)
        self.args = [str(a) for a in args]
        self.env = dict(env or {})
        self.cwd = cwd
        self.timeout_seconds = timeout_seconds
        self.name = name or shlex.join([os.path.basename(self.command), *self.args])[:80]
        check_arguments(locals(), seconds=("timeout_seconds",), counts=(
            "max_line_bytes", "max_json_depth", "max_server_requests", "server_request_workers"))
        self.max_line_bytes = max_line_bytes
        self.max_json_depth = max_json_depth
        self.max_server_requests = max_server_requests
        self.process: subprocess.Popen[bytes] | None = None
        self.protocol_version: str | None = None
        self._lock = threading.Lock()  # guards the fields below
        self._write_lock = threading.Lock()  # one message on stdin at a time
        self._pending: dict[Any, Slot] = {}
        self._abandoned: collections.OrderedDict[Any, None] = collections.OrderedDict()
        self._failure: Failure | None = None  # set once the connection is gone for good
        self._closed = False
        self._handler: MessageHandler | None = None
        self._subscription: Any = None  # the id of the open subscriptions/listen request (2026-07-28), if any
        self.clock = PausableClock()
        """The clock of response deadlines; the client pauses it while a callback answers a server request."""
        self._early: list[dict[str, Any]] = []
        self._stderr: StderrTail | None = None
        self._threads: list[threading.Thread] = []
        self._workers = RequestWorkers(self._answer, self._write_replies, max_workers=server_request_workers,
                                       max_pending=max_server_requests, max_pending_bytes=max_line_bytes,
                                       name="yiemagent-stdio-request")
        self.bad_lines = 0
        """Stdout lines that could not be used (not UTF-8, not JSON, too long or deep, not JSON-RPC)."""
        self._closed_reason = f"the stdio transport of {self.name} is closed"
        on_fork_in_child(self._after_fork)

    def _after_fork(self) -> None:
        """In a forked child (``yiemagent._internal.fork``): a started server's process and pipes are the parent's."""
        self._lock, self._write_lock = threading.Lock(), threading.Lock()
        if self.process is not None and not self._closed:
            self._closed_reason = fork_note(f"the stdio MCP server {self.name}")
            self.process = None  # never signalled, waited for or written to from here
            self._closed = True

    def __repr__(self) -> str:
        pid = self.process.pid if self.process is not None else None
        return f"StdioTransport(name={self.name!r}, pid={pid})"

    def __enter__(self) -> StdioTransport:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ state

    @property
    def stderr_tail(self) -> str:
        """The last ~4 KB the server wrote to stderr (UTF-8, undecodable bytes replaced)."""
        return self._stderr.text if self._stderr is not None else ""

    def reset_session(self) -> None:
        """Do nothing: over stdio the process is the session."""

    def set_protocol_version(self, version: str | None) -> None:
        """Record the negotiated version (stdio sends no version header)."""
        self.protocol_version = version

    # ------------------------------------------------------------------ process

    def start(self) -> None:
        """Start the server process and its reader threads, if not started yet.

        Raises:
            MCPTransportError: the transport is closed, or the command cannot
                be started (not found, not executable, bad ``cwd``).
        """
        with self._lock:
            if self._closed:
                raise MCPTransportError(self._closed_reason, server=self.name)
            if self.process is not None:
                return
            try:
                process = spawn(self.command, self.args, self.env, self.cwd)
            except (OSError, ValueError) as exc:
                raise MCPTransportError(f"cannot start {self.name}: {exc}", server=self.name) from exc
            self.process = process
            logger.debug("%s: started pid %d (extra env: %s)", self.name, process.pid, sorted(self.env))
            self._stderr = StderrTail(process, self.name)
            self._threads = [
                threading.Thread(target=self._read_stdout, args=(process,), daemon=True,
                                 name=f"yiemagent-stdio-out-{process.pid}"),
                self._stderr.thread,
            ]
            # The stderr reader first: the stdout reader of a server that exits at once reaches EOF at
            # once and joins the stderr reader for the last bytes (joining an unstarted thread raises).
            for thread in reversed(self._threads):
                thread.start()

    # ------------------------------------------------------------------ writing

    def _write(self, data: bytes) -> None:
        process = self.process
        assert process is not None and process.stdin is not None
        with self._write_lock:
            try:
                process.stdin.write(data)
                process.stdin.flush()
                return
            except (OSError, ValueError) as exc:  # BrokenPipeError, or stdin already closed
                error = exc
        # The process is gone or going: let the reader see stdout end and record
        # the exit code and the whole stderr tail.
        reader = self._threads[0] if self._threads else None
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=SHUTDOWN_WAIT_SECONDS)
        failure = self._failure or Failure(f"writing to {self.name} failed: {error}", process.poll(),
                                           self.stderr_tail)
        raise failure.error(self.name) from error

    def _answer(self, job: dict[str, Any]) -> bytes | None:
        """The encoded reply to a server request (on a worker): the handler's, ``{}`` for ``ping``, else -32601."""
        request: dict[str, Any] = job["message"]
        handler: MessageHandler | None = job["handler"]
        reply = None
        if handler is not None:
            try:
                reply = handler(request)
            except Exception:
                logger.exception("%s: the handler of %r raised", self.name, request.get("method"))
                reply = {"jsonrpc": "2.0", "id": request["id"],
                         "error": {"code": -32603, "message": "the client failed to handle the request"}}
        if reply is None:
            if request.get("method") == "ping":
                reply = jsonrpc.make_response(request["id"], {})
            else:
                reply = {"jsonrpc": "2.0", "id": request["id"],
                         "error": {"code": -32601, "message": f"method not found: {request.get('method')}"}}
        try:
            return encode_message(reply, server=self.name)
        except MCPProtocolError as exc:
            logger.warning("%s: could not answer server request %r: %s", self.name, request.get("id"), exc)
            return encode_message({"jsonrpc": "2.0", "id": request["id"], "error": {
                "code": -32603, "message": "the client's answer could not be encoded as JSON"}}, server=self.name)

    def _write_replies(self, data: bytes) -> None:
        try:
            self._write(data)
        except MCPTransportError as exc:
            logger.debug("%s: could not answer server requests: %s", self.name, exc)

    # ------------------------------------------------------------------ send

    def send(
        self,
        message: dict[str, Any],
        *,
        timeout_seconds: float | None = None,
        on_message: MessageHandler | None = None,
    ) -> dict[str, Any] | None:
        """Write one JSON-RPC message; for a request, wait for its response.

        Args:
            message: a request (``{"jsonrpc", "id", "method", "params"?}``), a
                notification (no ``id``) or a reply to a server request.
            timeout_seconds: seconds to wait for the response; None uses the
                transport's default. Writing itself is not bounded (a pipe is
                only full when the server stopped reading).
            on_message: receives the notifications and server requests the
                server sends from now on (the last handler given wins).
                Contract: notifications are handed over on the reader thread,
                in order and before any later response is returned, so it must
                not block for them; server requests are handed over on a
                small pool of worker threads (``server_request_workers``,
                ``max_server_requests`` waiting), where it may block. What it returns for a request is
                written back (a ``ping`` it leaves unanswered gets ``{}``, any
                other method -32601); an exception is logged (a request then
                gets -32603).

        Returns:
            The response (``{"jsonrpc", "id", "result" | "error"}``) for a
            request; None for anything else, as soon as it is written.

        Raises:
            MCPTimeoutError: no response within the timeout (a late response is
                discarded; the process keeps running).
            MCPTransportError: the process could not start, exited (``exit_code``,
                ``stderr_tail``), or ``cancel()``/``close()`` was called.
            MCPProtocolError: ``message`` cannot be sent as strict JSON (a
                lone surrogate, NaN; nothing is written), or the server's
                response to it is unreadable (not UTF-8, not JSON, over
                ``max_line_bytes``, both ``result`` and ``error``): raised
                as soon as that response arrives, the connection stays up.
            ConfigError: the request reuses an ``id`` still waiting or recently
                abandoned (spec: ids are unique within a session).

        Spec: MCP 2025-11-25, "Transports", stdio.
        Thread safety: safe from any thread.
        """
        data = encode_message(message, server=self.name)  # before anything is registered or written
        if on_message is not None:
            self._use_handler(on_message)
        self.start()
        timeout = self.timeout_seconds if timeout_seconds is None else timeout_seconds
        slot: Slot | None = None
        request_id: Any = None
        with self._lock:
            self._raise_if_gone()
            if jsonrpc.is_request(message):
                request_id = message["id"]
                if request_id in self._pending or request_id in self._abandoned:
                    raise ConfigError(f"request id {request_id!r} is already in use on {self.name}")
                slot = self._pending[request_id] = Slot()
        if slot is not None and slot.error is not None:
            raise_for(slot.error, self.name)  # cancelled before it was written: never write it
        try:
            self._write(data)
        except MCPTransportError:
            if slot is not None:
                with self._lock:
                    self._pending.pop(request_id, None)
            raise
        if slot is None:
            return None
        if not wait_until(slot.event, self.clock.now() + timeout, self.clock):  # a callback's time does not count
            with self._lock:
                timed_out = self._pending.get(request_id) is slot
                if timed_out:
                    del self._pending[request_id]
                    self._abandon(request_id)
            if timed_out:
                raise MCPTimeoutError(
                    f"{message.get('method')} to {self.name}: no response within {timeout:g}s",
                    server=self.name, stderr_tail=self.stderr_tail,
                )
            slot.event.wait(EXIT_WAIT_SECONDS)  # answered just now: the reader is setting it
        if slot.error is not None:
            raise_for(slot.error, self.name)
        assert slot.response is not None
        return slot.response

    def subscribe(self, on_message: MessageHandler, request: Callable[[], dict[str, Any]]) -> str | None:
        """Send a ``subscriptions/listen`` request (2026-07-28), replacing this transport's earlier one.

        Its answer is the stream: the acknowledgment and the change notifications come on stdout like
        any other message, to ``on_message`` (on the reader thread); the response that ends the
        subscription, if the server ever sends one, is discarded. The earlier subscription gets
        ``notifications/cancelled``. ``cancel()`` does not end it; ``close()`` does (with the process).
        Returns at once, None (over stdio the server's refusal is a late response, logged).

        Args:
            on_message: receives the server's notifications and requests from now on.
            request: ``request() -> message``: the ``subscriptions/listen`` request (id, ``_meta``, filter).

        Raises:
            MCPTransportError: the process cannot start, has exited, or the transport is closed.

        Spec: MCP 2026-07-28, "Subscriptions".
        """
        message = request()
        data = encode_message(message, server=self.name)
        self._use_handler(on_message)
        self.start()
        with self._lock:
            self._raise_if_gone()
            self._abandon(message["id"])  # never awaited: its response, if any, is a late one
            earlier, self._subscription = self._subscription, message["id"]
        self._write(data)
        if earlier is not None:
            self._write(encode_message(jsonrpc.make_notification(
                "notifications/cancelled", {"requestId": earlier, "reason": "replaced by a new filter"}),
                server=self.name))
        return None

    # ------------------------------------------------------------------ cancel / close

    def cancel(self) -> None:
        """Make every waiting send fail at once with ``MCPTransportError``; the process keeps running.

        Responses that arrive later for those requests are discarded; nothing
        is resumed or written again. The process, its stdout reader and the
        notifications it sends (``tools/list_changed``) are not affected, and
        later sends work as before. A request cancelled before it was written
        is not written at all.
        Thread safety: safe from any thread.
        """
        count = self._fail_pending(Failure(f"{self.name}: cancelled"), final=False)
        if count:
            logger.info("%s: cancelled %d request(s) in flight", self.name, count)

    def close(self) -> None:
        """Stop the server: close stdin, wait 2 s, SIGTERM, wait 2 s, SIGKILL. Safe to call twice.

        Waiting sends fail with ``MCPTransportError``. On POSIX the signals go
        to the server's process group (its children too).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            process = self.process
        self._fail_pending(Failure(f"the stdio transport of {self.name} was closed"), final=True)
        self._workers.close(SHUTDOWN_WAIT_SECONDS)
        if process is None:
            return
        if self._write_lock.acquire(timeout=SHUTDOWN_WAIT_SECONDS):
            try:
                close_quietly(process.stdin)
            finally:
                self._write_lock.release()
        stop_process(process, self.name)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=SHUTDOWN_WAIT_SECONDS)
                if thread.is_alive():  # a child of the server still holds the pipe open
                    logger.warning("%s: %s did not stop", self.name, thread.name)
        close_quietly(process.stdin)

