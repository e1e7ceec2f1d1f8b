"""The process side of the stdio transport: environment allow-list, starting, stderr tail, stopping.

The child sees only an allow-list of the parent's environment (``HOME``,
``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``, as the MCP Python SDK
does) plus the ``env`` given, so secrets in the parent's environment do not
leak to third-party servers. On POSIX the server runs in its own process
group, and a server that has to be stopped is stopped with its children:
close stdin, wait 2 s, SIGTERM, wait 2 s, SIGKILL; and whatever is left of its
group after it exited (the server a launcher such as ``npx`` started) is
stopped too.

Spec: MCP 2025-11-25, "Transports", stdio; "Lifecycle", "Shutdown".
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

__all__ = [
    "DEFAULT_INHERITED_ENV_VARS",
    "SHUTDOWN_WAIT_SECONDS",
    "STDERR_TAIL_BYTES",
    "StderrTail",
    "close_quietly",
    "default_environment",
    "spawn",
    "stop_at_exit",
    "stop_process",
]

logger = logging.getLogger("yiemagent.mcp.stdio")

DEFAULT_INHERITED_ENV_VARS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
"""Variables of the parent's environment a stdio server inherits (the MCP Python SDK's POSIX list)."""

STDERR_TAIL_BYTES = 4096
"""How much of the end of the server's stderr is kept for error messages."""

SHUTDOWN_WAIT_SECONDS = 2.0
"""Seconds ``close()`` waits after closing stdin, and again after SIGTERM."""


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


def spawn(command: str, args: Sequence[str], env: Mapping[str, str],
          cwd: str | os.PathLike[str] | None) -> subprocess.Popen[bytes]:
    """Start ``command args`` with stdin, stdout and stderr piped and ``default_environment() | env``.

    Raises:
        OSError, ValueError: the command cannot be started.
    """
    process = subprocess.Popen(
        [command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**default_environment(), **env},
        cwd=cwd,
        start_new_session=os.name == "posix",
    )
    with _live_lock:
        if not _live:
            atexit.register(stop_at_exit)  # once per set of servers; unregistered when none is left
        _live[process.pid] = process
    return process


_live: dict[int, subprocess.Popen[bytes]] = {}
"""Servers started and not stopped yet: a script that ends without ``close()`` / ``Agent.shutdown()``
stops them at interpreter exit (``stop_at_exit``) instead of leaving them running."""
_live_lock = threading.Lock()
EXIT_WAIT_SECONDS = 1.0
"""At interpreter exit: how long the servers get after stdin closes, and after SIGTERM, all at once."""


def stop_at_exit() -> None:
    """Stop every server still running (``atexit``): stdin closed, then SIGTERM, then SIGKILL, to all at once."""
    with _live_lock:
        left = list(_live.values())
        _live.clear()
    for process in left:
        close_quietly(process.stdin)
    for signum in (None, signal.SIGTERM, signal.SIGKILL):
        if signum is not None:
            for process in left:
                _signal(process, signum)
        deadline = time.monotonic() + EXIT_WAIT_SECONDS
        while left and time.monotonic() < deadline:
            left = [p for p in left if p.poll() is None or (os.name == "posix" and _group_alive(p.pid))]
            time.sleep(0.02)
        if not left:
            return


class StderrTail:
    """Reads a process's stderr on a daemon thread and keeps its last ``STDERR_TAIL_BYTES``.

    Each chunk is also logged at DEBUG (as ``<name> stderr: ...``).
    """

    def __init__(self, process: subprocess.Popen[bytes], name: str) -> None:
        self.name = name
        self._data = bytearray()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, args=(process.stderr,), daemon=True,
                                       name=f"yiemagent-stdio-err-{process.pid}")

    @property
    def text(self) -> str:
        """The tail as UTF-8 (undecodable bytes replaced)."""
        with self._lock:
            data = bytes(self._data)
        return data.decode("utf-8", errors="replace")

    def _read(self, stream: Any) -> None:
        try:
            while True:
                chunk = stream.read1(4096)
                if not chunk:
                    break
                with self._lock:
                    self._data += chunk
                    del self._data[:-STDERR_TAIL_BYTES]
                if logger.isEnabledFor(logging.DEBUG):
                    logger.debug("%s stderr: %s", self.name, chunk.decode("utf-8", errors="replace").rstrip())
        except (OSError, ValueError) as exc:  # the pipe was closed under us
            logger.debug("%s: stderr reader stopped: %s", self.name, exc)
        finally:
            close_quietly(stream)


def stop_process(process: subprocess.Popen[bytes], name: str) -> None:
    """Stop ``process`` (its stdin closed already) and every process left in its group.

    Wait for it to exit; else SIGTERM, then SIGKILL, to its process group.
    Then, on POSIX, if the group still has members (the real server of a
    launcher such as ``npx`` or ``sh -c``, which outlives the launcher it
    was started by), SIGTERM and then SIGKILL them too: nothing the server
    started is left running. Each wait is ``SHUTDOWN_WAIT_SECONDS``.
    """
    with _live_lock:
        _live.pop(process.pid, None)
        if not _live:
            atexit.unregister(stop_at_exit)
    if not _exited(process):
        logger.info("%s: did not exit %gs after stdin closed; terminating", name, SHUTDOWN_WAIT_SECONDS)
        _signal(process, signal.SIGTERM)
        if not _exited(process):
            logger.warning("%s: still running %gs after SIGTERM; killing", name, SHUTDOWN_WAIT_SECONDS)
            _signal(process, signal.SIGKILL)
            if not _exited(process):
                logger.warning("%s: pid %d survived SIGKILL", name, process.pid)
    if os.name == "posix" and _group_alive(process.pid):
        logger.info("%s: processes of its group outlived it; terminating them", name)
        for signum in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, signum)
            except (ProcessLookupError, PermissionError):
                return
            deadline = time.monotonic() + SHUTDOWN_WAIT_SECONDS
            while time.monotonic() < deadline:
                if not _group_alive(process.pid):
                    return
                time.sleep(0.02)
        logger.warning("%s: processes of group %d survived SIGKILL", name, process.pid)


def _exited(process: subprocess.Popen[bytes]) -> bool:
    try:
        process.wait(timeout=SHUTDOWN_WAIT_SECONDS)
        return True
    except subprocess.TimeoutExpired:
        return False


def _group_alive(pgid: int) -> bool:
    """True while the process group ``pgid`` has a member (POSIX)."""
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # a member we may not signal: it exists
        return True


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


def close_quietly(stream: IO[bytes] | None) -> None:
    """Close ``stream``, ignoring errors (a pipe already closed or broken)."""
    if stream is None:
        return
    try:
        stream.close()
    except (OSError, ValueError):
        pass
