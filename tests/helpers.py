"""Helpers for tests that start real servers as subprocesses.

``free_port()`` picks a loopback port, ``start_process()`` starts a server with
its output captured to a log file (never a pipe nobody reads, which would
block a chatty server), ``wait_for_port()`` polls until the server accepts
connections and fails at once, with the server's output, if it exited, and
``stop_process()`` ends it (terminate, wait 5 s, kill). ``start_postgres()`` runs a
throw-away PostgreSQL server (Debian's ``initdb``/``pg_ctl``) on a free loopback port.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from yiemagent import tool

__all__ = [
    "NODE_SERVERS",
    "PYTHON",
    "SERVERS",
    "PostgresServer",
    "RecordingSession",
    "SentRequest",
    "ensure_npm_packages",
    "find_postgres_bin",
    "free_port",
    "get_weather",
    "process_output",
    "start_postgres",
    "start_process",
    "stop_process",
    "wait_for_port",
]

TESTS = Path(__file__).parent
NODE_SERVERS = TESTS / "node" / "servers" / "node_modules"
"""node_modules of the npm MCP servers (installed by ``.ci/run`` with ``npm ci`` in tests/node/servers)."""
SERVERS = TESTS / "servers"
"""The Python test servers (``sdk_server.py``, ``paging_server.py``)."""
PYTHON = sys.executable

_POLL_SECONDS = 0.02
STARTUP_SECONDS = 60
"""The least ``wait_for_port`` waits for a server to listen: a Python server importing the ``mcp`` SDK starts in
~1 s, in tens of seconds on a loaded 2-core machine; one that exits fails at once whatever the bound."""


def text_of(result: dict[str, Any]) -> str:
    """The text blocks of an MCP tool result (``content``), joined with newlines."""
    return "\n".join(block["text"] for block in result["content"] if block.get("type") == "text")


def make_oauth(**kwargs: Any) -> Any:
    """``yiemagent.mcp.auth.OAuth`` for tests: a headless browser stand-in and 10 s bounds unless given."""
    from yiemagent.mcp.auth import HeadlessRedirectHandler, OAuth

    kwargs.setdefault("redirect_handler", HeadlessRedirectHandler(timeout_seconds=10))
    kwargs.setdefault("timeout_seconds", 10)
    return OAuth(**kwargs)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_process(args: Sequence[str], env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``args`` with stdout and stderr going to a temporary log file.

    ``env`` entries are added to (not substituted for) the current environment.
    The log path is kept as ``process.log_path`` (see ``process_output``).
    """
    full_env = {**os.environ, **(env or {})}
    log = tempfile.NamedTemporaryFile(prefix="yiemagent-server-", suffix=".log", delete=False)
    try:
        process = subprocess.Popen(
            list(args), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=full_env,
            cwd=str(TESTS.parent),
        )
    except BaseException:
        log.close()
        os.unlink(log.name)
        raise
    finally:
        log.close()  # the child keeps its own handle
    process.log_path = log.name  # type: ignore[attr-defined]
    return process


def process_output(process: subprocess.Popen[bytes], limit: int = 4000) -> str:
    """The last ``limit`` characters the process wrote to stdout/stderr ('' if unknown)."""
    path = getattr(process, "log_path", None)
    if not path or not os.path.exists(path):
        return ""
    with open(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")[-limit:]


def wait_for_port(port: int, timeout_seconds: float = STARTUP_SECONDS,
                  process: subprocess.Popen[bytes] | None = None) -> None:
    """Block until 127.0.0.1:``port`` accepts TCP connections.

    The start of a server is never what a test tests: the bound is at least ``STARTUP_SECONDS``.

    Raises:
        RuntimeError: ``process`` exited first (its exit code and output are in the message).
        TimeoutError: nothing listened within ``timeout_seconds``.
    """
    timeout_seconds = max(timeout_seconds, STARTUP_SECONDS)
    deadline = time.monotonic() + timeout_seconds
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                f"server process {process.args!r} exited with code {process.returncode} before port {port} "
                f"opened; its output:\n{process_output(process)}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            pass
        if time.monotonic() >= deadline:
            output = f"; its output:\n{process_output(process)}" if process is not None else ""
            raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {timeout_seconds:g}s{output}")
        time.sleep(_POLL_SECONDS)


def stop_process(process: subprocess.Popen[bytes], timeout_seconds: float = 5) -> None:
    """Terminate ``process``, wait up to ``timeout_seconds``, then kill it; remove its log file."""
    try:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout_seconds)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout_seconds)
    finally:
        path = getattr(process, "log_path", None)
        if path and os.path.exists(path):
            os.unlink(path)


@dataclass
class SentRequest:
    """One HTTP request a ``RecordingSession`` sent."""

    method: str
    headers: dict[str, str]
    message: Any
    """The JSON body (a JSON-RPC message), or None."""
    status: int | None = None
    """The HTTP status of the answer; None if no answer came (e.g. a timeout)."""

    @property
    def rpc_method(self) -> str | None:
        """``method`` of the JSON-RPC message, or None (a response, or no body)."""
        return self.message.get("method") if isinstance(self.message, dict) else None


class RecordingSession(requests.Session):
    """A ``requests.Session`` that records every request it sends (for ``HTTPTransport(session=...)``)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[SentRequest] = []

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        body = request.body
        try:
            message = json.loads(body) if body else None
        except ValueError:
            message = None
        record = SentRequest(str(request.method), {k.lower(): v for k, v in request.headers.items()}, message)
        self.sent.append(record)
        response = super().send(request, **kwargs)
        record.status = response.status_code
        return response

    def rpc(self, method: str) -> list[SentRequest]:
        """The recorded POSTs whose JSON-RPC ``method`` is ``method``."""
        return [r for r in self.sent if r.rpc_method == method]


@contextlib.contextmanager
def serve_http(args: Sequence[str], port: int | None = None, path: str = "/mcp") -> Iterator[str]:
    """Start a server process (``args`` + ``--port <port>``), wait for its port, yield its URL, stop it."""
    port = port or free_port()
    process = start_process([*args, "--port", str(port)])
    try:
        wait_for_port(port, timeout_seconds=20, process=process)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        stop_process(process)


def run_in_thread(fn: Any, *args: Any, **kwargs: Any) -> tuple[threading.Thread, list[Any]]:
    """Start ``fn`` on a thread; the list receives its result or its exception."""
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(fn(*args, **kwargs))
        except Exception as exc:
            out.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, out


NPM_FOLDERS = (TESTS / "node" / "servers", TESTS / "node" / "conformance", TESTS / "node" / "conformance-0.1",
               TESTS / "node" / "ui")
"""The npm folders the tests use: real MCP servers, the official conformance suites 0.2.0-alpha.12 and
0.1.16, and the web-frontend protocol clients (``@ag-ui/client``, ``ai``: tests/test_ui_streams.py) (each has
a lockfile; installed with the system ``npm ci``, run with ``node24()``)."""


def _lock_digest(folder: Path) -> str:
    import hashlib

    return hashlib.sha256((folder / "package-lock.json").read_bytes()).hexdigest()


def _npm_install_current(folder: Path) -> bool:
    """True when ``folder/node_modules`` was installed by ``npm ci`` from the current lockfile."""
    stamp = folder / "node_modules" / ".yiemagent-lock"
    try:
        return stamp.read_text() == _lock_digest(folder)
    except OSError:
        return False


def ensure_npm_packages(folders: Sequence[Path] = NPM_FOLDERS, timeout_seconds: float = 600) -> list[str]:
    """Install each folder's npm packages with ``npm ci`` when its ``node_modules`` is missing or stale.

    ``node_modules`` is stale when the stamp written after the last install
    (``node_modules/.yiemagent-lock``: the SHA-256 of ``package-lock.json``) does not match the
    lockfile, e.g. after a pinned version changed (a checkout kept the conformance suite 0.1.11 when
    the lockfile moved to 0.2.0-alpha.12).

    So that ``pip install -e ".[test]" && python -m pytest`` runs the whole suite on a machine with
    node (issue 11 point 7). An exclusive file lock per folder makes parallel pytest processes wait for
    one install. Without ``npm`` on PATH, or when ``npm ci`` fails (no registry), nothing is raised:
    the tests that need the packages skip with a reason, as before.

    Returns:
        One line per folder saying what happened (printed after the collection).
    """
    import fcntl
    import shutil

    npm = shutil.which("npm")
    notes = []
    for folder in folders:
        if _npm_install_current(folder):
            continue
        if npm is None:
            notes.append(f"{folder.name}: npm not found, tests that need its packages are skipped")
            continue
        with open(folder / ".npm-install.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _npm_install_current(folder):
                continue
            try:
                done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=folder,
                                      capture_output=True, text=True, timeout=timeout_seconds)
            except subprocess.TimeoutExpired:
                notes.append(f"{folder.name}: npm ci timed out after {timeout_seconds:g}s")
                continue
            if done.returncode == 0:
                (folder / "node_modules" / ".yiemagent-lock").write_text(_lock_digest(folder))
                notes.append(f"{folder.name}: npm packages installed")
            else:
                shutil.rmtree(folder / "node_modules", ignore_errors=True)
                notes.append(f"{folder.name}: npm ci failed ({done.stderr.strip()[-300:]})")
    return notes

# --------------------------------------------------------------------------- PostgreSQL


def find_postgres_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` (newest Debian version first), or None."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0,
                        reverse=True)
    found = shutil.which("initdb")
    if found:
        candidates.append(os.path.realpath(found))
    for initdb in candidates:
        folder = Path(initdb).parent
        if (folder / "pg_ctl").exists():
            return folder
    return None


@dataclass
class PostgresServer:
    """A PostgreSQL server started by ``start_postgres``; ``stop()`` ends it and removes its files."""

    dsn: str
    """libpq DSN: ``host=127.0.0.1 port=<port> user=postgres dbname=postgres``."""
    port: int
    data_dir: Path
    bin_dir: Path
    as_postgres: bool
    """True when the server runs as the ``postgres`` user (we are root)."""

    def _run(self, *args: str, timeout_seconds: float = 60) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout_seconds, check=False)

    def stop(self) -> None:
        """Stop the server (immediate mode) and delete its data directory."""
        try:
            self._run("pg_ctl", "-D", str(self.data_dir / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def start_postgres(timeout_seconds: float = 120) -> PostgresServer:
    """Start a fresh PostgreSQL on a free port of 127.0.0.1 (trust auth, socket in its own dir).

    As root the server runs as user ``postgres`` (``runuser -u postgres --``),
    which must exist (Debian's ``postgresql`` package makes it).

    Raises:
        FileNotFoundError: no ``initdb``/``pg_ctl`` (install Debian's ``postgresql``).
        RuntimeError: ``initdb`` or ``pg_ctl start`` failed (their output is in the message).
    """
    bin_dir = find_postgres_bin()
    if bin_dir is None:
        raise FileNotFoundError("no initdb/pg_ctl found (apt-get install -y postgresql)")
    as_postgres = os.geteuid() == 0
    base = Path(tempfile.mkdtemp(prefix="yiemagent-pg-"))
    if as_postgres:
        shutil.chown(base, user="postgres", group="postgres")
    port = free_port()
    server = PostgresServer(f"host=127.0.0.1 port={port} user=postgres dbname=postgres", port, base, bin_dir,
                            as_postgres)
    data = base / "data"
    try:
        done = server._run("initdb", "-D", str(data), "--auth=trust", "-U", "postgres", "--no-sync",
                           "-E", "UTF8", "--locale=C.UTF-8", timeout_seconds=timeout_seconds)
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=100"
        done = server._run("pg_ctl", "-D", str(data), "-l", str(base / "server.log"), "-o", options, "-w",
                           "-t", str(int(timeout_seconds)), "start", timeout_seconds=timeout_seconds + 5)
        if done.returncode != 0:
            log = (base / "server.log").read_text(errors="replace") if (base / "server.log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n{log}")
    except BaseException:
        server.stop()
        raise
    return server



@tool
def get_weather(city: str) -> str:
    """Weather of a city."""
    return f"sunny in {city}"

# --------------------------------------------------------------------------- Phoenix (an OTLP receiver)

PHOENIX_VERSION = "20.26.1"
"""``arize-phoenix``, the tracing UI the tracing tests send spans to (installed in a venv of its own)."""
_PHOENIX_FAILED: list[str] = []


def phoenix_executable(timeout_seconds: float = 900) -> Path | str:
    """The ``phoenix`` command of a venv holding ``arize-phoenix==PHOENIX_VERSION``, made on first use.

    The venv is ``$YIEMAGENT_CACHE/phoenix-<version>`` (default ``~/.cache/yiemagent``), apart from the
    test venv: Phoenix brings ~150 packages whose pins must not move ours. A stamp file written after a
    successful install marks it complete; an exclusive file lock makes parallel runs wait for one install.

    Returns:
        The path of the command, or a str saying why it could not be installed (the test skips with it; a
        failure is kept, so one pytest process tries once).
    """
    import fcntl

    if _PHOENIX_FAILED:
        return _PHOENIX_FAILED[0]
    cache = Path(os.environ.get("YIEMAGENT_CACHE") or Path.home() / ".cache" / "yiemagent")
    venv = cache / f"phoenix-{PHOENIX_VERSION}"
    command, stamp = venv / "bin" / "phoenix", venv / ".yiemagent-complete"
    if stamp.exists() and command.exists():
        return command
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"phoenix-{PHOENIX_VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and command.exists():
            return command
        try:
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, capture_output=True,
                           timeout=120)
            done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"arize-phoenix=={PHOENIX_VERSION}"],
                                  capture_output=True, text=True, timeout=timeout_seconds)
        except (subprocess.SubprocessError, OSError) as exc:
            _PHOENIX_FAILED.append(f"the Phoenix venv could not be made: {exc}")
            return _PHOENIX_FAILED[0]
        if done.returncode != 0 or not command.exists():
            _PHOENIX_FAILED.append(f"pip install arize-phoenix=={PHOENIX_VERSION} failed: {done.stderr.strip()[-300:]}")
            return _PHOENIX_FAILED[0]
        stamp.write_text(PHOENIX_VERSION)
        return command


@contextlib.contextmanager
def serve_phoenix(command: Path, working_dir: Path, timeout_seconds: float = 180) -> Iterator[str]:
    """Run ``phoenix serve`` on loopback (a free HTTP port; gRPC on another); yield its base URL.

    Spans go to ``<url>/v1/traces`` (OTLP over HTTP, protobuf); ``GET <url>/v1/projects/<name>/spans``
    reads them back. Stopped with terminate -> wait 10 s -> kill.
    """
    port = free_port()
    env = {"PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_WORKING_DIR": str(working_dir),
           "PHOENIX_TELEMETRY_ENABLED": "false", "DO_NOT_TRACK": "1"}
    process = start_process([str(command), "serve"], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_seconds
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"phoenix serve exited with {process.returncode}: {process_output(process, 2000)}")
            try:
                if requests.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"phoenix serve was not up within {timeout_seconds}s: "
                                   f"{process_output(process, 2000)}")
            time.sleep(0.5)
        yield url
    finally:
        stop_process(process, timeout_seconds=10)


# --------------------------------------------------------------------------- installs before the tests (issue 25)

COMPONENTS = ("npm", "phoenix", "smollm2")
"""What slow tests use that is installed on first use: the npm servers and conformance suites
(``ensure_npm_packages``), Phoenix's venv (``phoenix_executable``) and the SmolLM2 GGUF
(``yiemagent.models.local.smollm2_path``). A test must never install them inside its time limit:
``.ci/run`` runs ``python -m tests.helpers npm phoenix smollm2`` first, and tests/conftest.py's
``pytest_collection_finish`` installs what the selected tests need before the first one starts."""


def prepare(names: Sequence[str]) -> list[tuple[str, bool, str]]:
    """Install the ``COMPONENTS`` named (each once; a done install is checked in milliseconds).

    Returns:
        ``(name, ok, note)`` per component: ok is False when it could not be installed (the tests
        that need it skip with the reason).
    """
    done: list[tuple[str, bool, str]] = []
    for name in names:
        started = time.monotonic()
        if name == "npm":
            notes = ensure_npm_packages()
            failed = [note for note in notes if not note.endswith("npm packages installed")]
            done.append((name, not failed, "; ".join(notes) or "npm packages current"))
        elif name == "phoenix":
            found = phoenix_executable()
            done.append((name, not isinstance(found, str), str(found)))
        elif name == "smollm2":
            from yiemagent.exceptions import ConfigError
            from yiemagent.models.local import smollm2_path

            try:
                done.append((name, True, str(smollm2_path())))
            except ConfigError as exc:
                done.append((name, False, str(exc)))
        else:
            raise ValueError(f"unknown component {name!r}; one of {', '.join(COMPONENTS)}")
        name, ok, note = done[-1]
        done[-1] = (name, ok, f"{note} ({time.monotonic() - started:.0f}s)")
    return done


if __name__ == "__main__":  # python -m tests.helpers npm phoenix smollm2 (.ci/run)
    results = prepare(sys.argv[1:] or COMPONENTS)
    for name, ok, note in results:
        print(f"{name}: {'ready' if ok else 'NOT INSTALLED'}: {note}")
    sys.exit(0 if all(ok for _, ok, _ in results) else 1)
