"""Stdio transport: an MCP server run as a subprocess, one JSON-RPC message per line.

The client writes each message to the server's stdin as one line of UTF-8
JSON ending in ``\\n``; the server writes its messages to stdout the same way
and may log anything to stderr. A reader thread reads stdout and hands each
response to the request waiting for its ``id``; notifications and server
requests go to the ``on_message`` handler (a server ``ping`` is always
answered). A line that is not JSON is logged and skipped, never fatal.

Lifecycle::

    StdioTransport(...)      nothing runs yet
    first send() / start()   the process starts (stdin, stdout, stderr piped)
    ... sends ...            concurrent sends are fine; writes are serialized
    the process exits        every waiting send fails at once with MCPTransportError
                             (exit code and the last ~4 KB of stderr); later sends too:
                             the process is never restarted (make a new transport/client)
    close()                  close stdin, wait 2 s, SIGTERM, wait 2 s, SIGKILL

The child sees only an allow-list of the parent's environment (``HOME``,
``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``, as the MCP Python SDK
does) plus the ``env`` given, so secrets in the parent's environment do not
leak to third-party servers. On POSIX the server runs in its own process
group, and a server that has to be stopped is stopped with its children.

Spec: MCP 2025-11-25, "Transports", stdio; "Lifecycle", "Shutdown".
"""

from __future__ import annotations

import collections
import json
import logging
import os
import shlex
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any

from ..exceptions import ConfigError, MCPTimeoutError, MCPTransportError
from . import jsonrpc
from .transport import MessageHandler, Transport

__all__ = ["DEFAULT_INHERITED_ENV_VARS", "StdioTransport", "default_environment", "parse_line"]

logger = logging.getLogger("yiemagent.mcp.stdio")

DEFAULT_INHERITED_ENV_VARS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
"""Variables of the parent's environment a stdio server inherits (the MCP Python SDK's POSIX list)."""

STDERR_TAIL_BYTES = 4096
"""How much of the end of the server's stderr is kept for error messages."""

SHUTDOWN_WAIT_SECONDS = 2.0
"""Seconds ``close()`` waits after closing stdin, and again after SIGTERM."""

_EXIT_WAIT_SECONDS = 1.0  # after stdout EOF: time for the exit code and the last stderr bytes
_ABANDONED_IDS = 1024  # ids of timed-out or cancelled requests remembered, to discard late answers
_EARLY_MESSAGES = 100  # notifications kept while no handler is known yet


def default_environment() -> dict[str, str]:
    """The allow-listed part of this process's environment (``DEFAULT_INHERITED_ENV_VARS``).

    Values that start with ``()`` (exported shell functions) are left out, as
    the MCP Python SDK does.
    """
    env = {}
    for key in DEFAULT_INHERITED_ENV_VARS:
        value = os.environ.get(key)
        if value is not None and not value.startswith("()"):
            env[key] = value
    return env


def parse_line(raw: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of one stdout line (a batch array gives several).

    Args:
        raw: one line as read, with or without its ``\\n`` / ``\\r\\n``.

    Returns:
        The message objects; ``[]`` for a blank line.

    Raises:
        ValueError: the line is not UTF-8, not JSON, or not JSON objects
            (``UnicodeDecodeError`` and ``json.JSONDecodeError`` are ValueErrors).
    """
    line = raw.strip()
    if not line:
        return []
    item = json.loads(line.decode("utf-8"))
    items = item if isinstance(item, list) else [item]
    if not items or not all(isinstance(each, dict) for each in items):
        raise ValueError("a JSON value that is not a JSON-RPC message object")
    return items


class _Slot:
    """Where the reader thread leaves the answer for one waiting request."""

    __slots__ = ("error", "event", "response")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.response: dict[str, Any] | None = None
        self.error: _Failure | None = None


class _Failure:
    """Why requests cannot be answered (the process exited, cancel, close)."""

    __slots__ = ("exit_code", "message", "stderr_tail")

    def __init__(self, message: str, exit_code: int | None = None, stderr_tail: str = "") -> None:
        self.message = message
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail

    def error(self, server: str) -> MCPTransportError:
        """A fresh exception (each waiting thread raises its own)."""
        text = self.message
        if self.stderr_tail.strip():
            text += "; stderr ends with:\n" + self.stderr_tail.rstrip()
        exc = MCPTransportError(text, server=server, stderr_tail=self.stderr_tail)
        exc.exit_code = self.exit_code  # type: ignore[attr-defined]
        return exc


class StdioTransport(Transport):
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
    ) -> None:
        if isinstance(args, str):
            raise ConfigError("args must be a sequence of strings, not one string (use shlex.split)")
        self.command = str(command)
        self.args = [str(a) for a in args]
        self.env = dict(env or {})
        self.cwd = cwd
        self.timeout_seconds = timeout_seconds
        self.name = name or shlex.join([os.path.basename(self.command), *self.args])[:80]
        self.process: subprocess.Popen[bytes] | None = None
        self.protocol_version: str | None = None
        self._lock = threading.Lock()  # guards the fields below
        self._write_lock = threading.Lock()  # one message on stdin at a time
        self._pending: dict[Any, _Slot] = {}
        self._abandoned: collections.OrderedDict[Any, None] = collections.OrderedDict()
        self._failure: _Failure | None = None  # set once the connection is gone for good
        self._closed = False
        self._handler: MessageHandler | None = None
        self._early: list[dict[str, Any]] = []
        self._stderr = bytearray()
        self._stderr_lock = threading.Lock()
        self._threads: list[threading.Thread] = []

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
        with self._stderr_lock:
            data = bytes(self._stderr)
        return data.decode("utf-8", errors="replace")

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
                raise MCPTransportError(f"the stdio transport of {self.name} is closed", server=self.name)
            if self.process is not None:
                return
            env = {**default_environment(), **self.env}
            try:
                process = subprocess.Popen(
                    [self.command, *self.args],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                    cwd=self.cwd,
                    start_new_session=os.name == "posix",
                )
            except (OSError, ValueError) as exc:
                raise MCPTransportError(f"cannot start {self.name}: {exc}", server=self.name) from exc
            self.process = process
            logger.debug("%s: started pid %d (extra env: %s)", self.name, process.pid, sorted(self.env))
            self._threads = [
                threading.Thread(target=self._read_stdout, args=(process,), daemon=True,
                                 name=f"yiemagent-stdio-out-{process.pid}"),
                threading.Thread(target=self._read_stderr, args=(process,), daemon=True,
                                 name=f"yiemagent-stdio-err-{process.pid}"),
            ]
            for thread in self._threads:
                thread.start()

    def _read_stderr(self, process: subprocess.Popen[bytes]) -> None:
        stream: Any = process.stderr
        try:
            while True:
                chunk = stream.read1(4096)
                if not chunk:
                    break
                with self._stderr_lock:
                    self._stderr += chunk
                    del self._stderr[:-STDERR_TAIL_BYTES]
                if logger.isEnabledFor(logging.DEBUG):
                    logger.debug("%s stderr: %s", self.name, chunk.decode("utf-8", errors="replace").rstrip())
        except (OSError, ValueError) as exc:  # the pipe was closed under us
            logger.debug("%s: stderr reader stopped: %s", self.name, exc)
        finally:
            _close_quietly(stream)

    def _read_stdout(self, process: subprocess.Popen[bytes]) -> None:
        stream: Any = process.stdout
        try:
            for raw in iter(stream.readline, b""):
                try:
                    messages = parse_line(raw)
                except ValueError as exc:
                    logger.warning("%s: skipped a stdout line that is not a JSON-RPC message (%s): %.200r",
                                   self.name, exc, raw)
                    continue
                for message in messages:
                    try:
                        self._dispatch(message)
                    except Exception:  # a handler bug must not kill the reader
                        logger.exception("%s: handling a server message failed", self.name)
        except (OSError, ValueError) as exc:
            logger.debug("%s: stdout reader stopped: %s", self.name, exc)
        finally:
            _close_quietly(stream)
            self._process_gone(process)

    def _process_gone(self, process: subprocess.Popen[bytes]) -> None:
        """Stdout ended: record why and fail every waiting request at once."""
        try:
            code: int | None = process.wait(timeout=_EXIT_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        if len(self._threads) > 1:
            self._threads[1].join(timeout=_EXIT_WAIT_SECONDS)  # the last stderr bytes
        if code is None:
            message = f"{self.name} closed its stdout (pid {process.pid} still running)"
        else:
            message = f"the server process {self.name} exited with code {code}"
        if code is not None and self._write_lock.acquire(timeout=_EXIT_WAIT_SECONDS):
            try:
                _close_quietly(process.stdin)
            finally:
                self._write_lock.release()
        if not self._closed:
            logger.warning("%s", message)
        self._fail_pending(_Failure(message, code, self.stderr_tail), final=True)

    # ------------------------------------------------------------------ reading

    def _dispatch(self, message: dict[str, Any]) -> None:
        if jsonrpc.is_response(message):
            request_id = message["id"]
            with self._lock:
                slot = self._pending.pop(request_id, None)
                late = slot is None and request_id in self._abandoned
            if slot is not None:
                slot.response = message
                slot.event.set()
            elif late:
                logger.info("%s: discarded a late response to request %r (timed out or cancelled)",
                            self.name, request_id)
            else:
                logger.warning("%s: discarded a response to unknown request %r", self.name, request_id)
            return
        handler = self._handler
        if jsonrpc.is_request(message):
            # On a thread of its own: a handler may block (ask a user), and the
            # reader must never wait for stdin.
            threading.Thread(target=self._answer, args=(message, handler), daemon=True,
                             name="yiemagent-stdio-request").start()
        elif jsonrpc.is_notification(message):
            if handler is not None:
                handler(message)
            else:
                with self._lock:
                    if len(self._early) < _EARLY_MESSAGES:
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

    # ------------------------------------------------------------------ writing

    def _write(self, message: dict[str, Any]) -> None:
        process = self.process
        assert process is not None and process.stdin is not None
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
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
        failure = self._failure or _Failure(f"writing to {self.name} failed: {error}", process.poll(),
                                            self.stderr_tail)
        raise failure.error(self.name) from error

    def _answer(self, request: dict[str, Any], handler: MessageHandler | None) -> None:
        """Reply to a server request: the handler's answer, ``{}`` for ``ping``, else -32601."""
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
            self._write(reply)
        except MCPTransportError as exc:
            logger.debug("%s: could not answer a server request: %s", self.name, exc)

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
                not block for them; each server request gets a thread of its
                own, where it may block. What it returns for a request is
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
            ConfigError: the request reuses an ``id`` still waiting or recently
                abandoned (spec: ids are unique within a session).

        Spec: MCP 2025-11-25, "Transports", stdio.
        Thread safety: safe from any thread.
        """
        if on_message is not None:
            self._use_handler(on_message)
        self.start()
        timeout = self.timeout_seconds if timeout_seconds is None else timeout_seconds
        slot: _Slot | None = None
        request_id: Any = None
        with self._lock:
            self._raise_if_gone()
            if jsonrpc.is_request(message):
                request_id = message["id"]
                if request_id in self._pending or request_id in self._abandoned:
                    raise ConfigError(f"request id {request_id!r} is already in use on {self.name}")
                slot = self._pending[request_id] = _Slot()
        if slot is not None and slot.error is not None:
            raise slot.error.error(self.name)  # cancelled before it was written: never write it
        try:
            self._write(message)
        except MCPTransportError:
            if slot is not None:
                with self._lock:
                    self._pending.pop(request_id, None)
            raise
        if slot is None:
            return None
        if not slot.event.wait(timeout):
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
            slot.event.wait(_EXIT_WAIT_SECONDS)  # answered just now: the reader is setting it
        if slot.error is not None:
            raise slot.error.error(self.name)
        assert slot.response is not None
        return slot.response

    def _raise_if_gone(self) -> None:
        """Raise the stored failure (call with ``_lock`` held)."""
        if self._closed:
            raise MCPTransportError(f"the stdio transport of {self.name} is closed", server=self.name)
        if self._failure is not None:
            raise self._failure.error(self.name)

    def _abandon(self, request_id: Any) -> None:
        """Remember an id whose response is no longer awaited (call with ``_lock`` held)."""
        self._abandoned[request_id] = None
        while len(self._abandoned) > _ABANDONED_IDS:
            self._abandoned.popitem(last=False)

    def _fail_pending(self, failure: _Failure, *, final: bool) -> int:
        """Fail every waiting send with ``failure``; ``final`` also fails every later send."""
        with self._lock:
            if final and self._failure is None:
                self._failure = failure
            slots = list(self._pending.items())
            self._pending.clear()
            for request_id, _ in slots:
                self._abandon(request_id)
        for _, slot in slots:
            slot.error = failure
            slot.event.set()
        return len(slots)

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
        count = self._fail_pending(_Failure(f"{self.name}: cancelled"), final=False)
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
        self._fail_pending(_Failure(f"the stdio transport of {self.name} was closed"), final=True)
        if process is None:
            return
        if self._write_lock.acquire(timeout=SHUTDOWN_WAIT_SECONDS):
            try:
                _close_quietly(process.stdin)
            finally:
                self._write_lock.release()
        try:
            process.wait(timeout=SHUTDOWN_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            logger.info("%s: did not exit %gs after stdin closed; terminating", self.name, SHUTDOWN_WAIT_SECONDS)
            _signal(process, signal.SIGTERM)
            try:
                process.wait(timeout=SHUTDOWN_WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                logger.warning("%s: still running %gs after SIGTERM; killing", self.name, SHUTDOWN_WAIT_SECONDS)
                _signal(process, signal.SIGKILL)
                try:
                    process.wait(timeout=SHUTDOWN_WAIT_SECONDS)
                except subprocess.TimeoutExpired:
                    logger.warning("%s: pid %d survived SIGKILL", self.name, process.pid)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=SHUTDOWN_WAIT_SECONDS)
                if thread.is_alive():  # a child of the server still holds the pipe open
                    logger.warning("%s: %s did not stop", self.name, thread.name)
        _close_quietly(process.stdin)


def _signal(process: subprocess.Popen[bytes], signum: int) -> None:
    """Send ``signum`` to the server's process group (POSIX), or to the process."""
    try:
        if os.name == "posix":
            os.killpg(process.pid, signum)
        elif signum == signal.SIGTERM:
            process.terminate()
        else:
            process.kill()
    except (ProcessLookupError, PermissionError) as exc:
        logger.debug("signal %d to %d: %s", signum, process.pid, exc)


def _close_quietly(stream: IO[bytes] | None) -> None:
    if stream is None:
        return
    try:
        stream.close()
    except (OSError, ValueError):
        pass
