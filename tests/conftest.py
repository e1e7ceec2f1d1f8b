"""Shared fixtures: real MCP servers in subprocesses, and no network beyond loopback.

Autouse:
    no_network           every socket ``connect``/``connect_ex``, ``socket.create_connection`` and
                         ``socket.getaddrinfo`` to anything but 127.0.0.0/8, ::1 or ``localhost`` raises
                         ``NetworkAccessBlocked`` (an ``OSError``) at once, so no test touches the network.

Servers (session scope: started on first use, stopped at the end with terminate -> wait 5 s -> kill;
each yields the Streamable HTTP endpoint URL ``http://127.0.0.1:<port>/mcp``):
    sdk_server           tests/servers/sdk_server.py: official ``mcp`` SDK, SSE replies (CRLF), sessions
    sdk_server_json      the same with ``--json-response``: plain JSON replies, sessions
    sdk_server_stateless the same with ``--stateless``: SSE replies, no ``Mcp-Session-Id``
    paging_server        tests/servers/paging_server.py: low-level SDK server, 60 tools, 20 per page
    weather_server       yiemagent.examples.weather_server (the demo's server): get_weather, get_time
    everything_server    npm ``@modelcontextprotocol/server-everything`` (streamableHttp); skipped when
                         tests/node/servers/node_modules is missing (``.ci/run`` installs it with ``npm ci``)

The local model (session scope; tests using it are marked ``model``):
    local_model          ``yiemagent.models.local.LocalModel``: llama.cpp (xllamacpp) + Gemma 3 270M, started once;
                         each model call costs ~2-4 s, so keep such tests few

Conversation stores (issue 10):
    postgres_dsn         session: a throw-away PostgreSQL (Debian initdb/pg_ctl as user ``postgres``, free port on
                         127.0.0.1, socket in its own dir, ``helpers.start_postgres``); skipped with the reason when
                         no initdb is installed (``.ci/run`` installs ``postgresql``)
    store_factory        parametrized ``sqlite`` / ``postgres``: a picklable zero-argument callable making a new store
                         object on this test's own database (a tmp file / a fresh table prefix); call it in each
                         process (``multiprocessing`` children too)
    sqlite_store_factory, postgres_store_factory   the same for one backend
    store                ``store_factory()``, closed at teardown

Helpers as fixtures:
    free_port            a TCP port on 127.0.0.1 that nothing listens on (``helpers.free_port()``)
    open_client          ``open_client(url, *, session=None, timeout_seconds=30, name=None) -> MCPClient`` over
                         ``HTTPTransport`` (pass a ``helpers.RecordingSession`` to see the HTTP requests);
                         every client it made is closed at teardown

Servers are shared, so tests must not depend on server-side state they did not create: each test
makes its own ``MCPClient`` (its own session), and the sdk servers' ``call_counts`` tool is read as a
difference before/after.

The quick lane (``python -m pytest -m "not slow"``, ~2 minutes; issue 25 point 6): ``pytest_collection_modifyitems``
marks ``slow`` every test that uses a fixture of ``SLOW_FIXTURES`` (it starts a process: a server, PostgreSQL,
Redis, the local model, a worker), takes ``store_factory``/``any_rig``/``module_rig`` with ``postgres`` or a
parametrized fixture whose value names a fixture of the set, carries ``model``, ``node`` or ``browser``, or is
in tests/property (hypothesis, hundreds of examples each).
A test that starts a process itself, or takes seconds, says ``pytestmark = pytest.mark.slow`` /
``@pytest.mark.slow``; ``quick_tests_start_no_process`` fails a test of the quick lane that starts one.
"""

from __future__ import annotations

import functools
import ipaddress
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.helpers import (
    NODE_SERVERS,
    PYTHON,
    SERVERS,
    ensure_npm_packages,
    free_port,
    start_postgres,
    start_process,
    stop_process,
    wait_for_port,
)

# tests/ is a package (tests/__init__.py) so that tests/mcp/ imports as ``tests.mcp`` and never shadows the
# ``mcp`` SDK; appending tests/ (never prepending) keeps ``import helpers`` working as well.
sys.path.append(str(Path(__file__).parent))

EVERYTHING_JS = NODE_SERVERS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"

_STARTUP_SECONDS = 60


def pytest_configure(config: pytest.Config) -> None:
    """Ask ``uname -p`` before any test (``quick_tests_start_no_process``); installs wait for the collection."""
    import platform

    platform.processor()  # runs `uname -p` once (cached; the openai SDK asks) before any test's guard


SLOW_FIXTURES = frozenset({
    # conftest.py: servers in subprocesses, PostgreSQL, the local model, stdio servers
    "sdk_server", "sdk_server_json", "sdk_server_stateless", "paging_server", "everything_server",
    "weather_server", "fastmcp_server", "everything_stdio", "filesystem_stdio", "stdio_client", "local_model",
    "postgres_dsn", "postgres_store_factory", "scripted_model",
    # tests/mcp/conftest.py, tests/mcp/oauth_rig.py
    "modern_only_server", "oauth_server",
    # tests/workers/conftest.py: Redis and the rigs whose app processes the tests start
    "redis_url", "rig", "sqlite_rig", "any_rig", "module_rig",
    # module fixtures that start a server process (``servers``: tests/test_fallback.py)
    "callbacks_server", "not_mcp", "sdk_stdio", "quirks", "probe_http", "event_stream_error_body",
    "no_streaming", "json_error_body", "phoenix", "served_app", "scripted_app", "approval_app",
    "weather_agent_parts", "crashed", "servers",
})
"""Fixtures that start a process: a test using one (directly or through another fixture) is ``slow``."""

SLOW_MARKERS = ("model", "node", "browser")
"""Markers whose tests are ``slow`` too (the local model, the npm servers, Chromium)."""

SLOW_FOLDERS = ("property",)
"""Folders of tests/ whose tests are all ``slow``: tests/property runs hypothesis, hundreds of examples a test."""


def is_slow(item: pytest.Item) -> bool:
    """True when ``item`` uses a fixture of ``SLOW_FIXTURES``, PostgreSQL through a parameter, or a slow marker."""
    if any(item.get_closest_marker(name) is not None for name in ("slow", *SLOW_MARKERS)):
        return True
    if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    if item.path.parent.name in SLOW_FOLDERS and item.path.parent.parent == Path(__file__).parent:
        return True
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    return any(value == "postgres" or (isinstance(value, str) and value in SLOW_FIXTURES)
               for value in params.values())


@pytest.hookimpl(tryfirst=True)  # before -m "not slow" deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` the tests ``is_slow`` finds (``-m "not slow"`` is the quick lane)."""
    for item in items:
        if item.get_closest_marker("slow") is None and is_slow(item):
            item.add_marker(pytest.mark.slow)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Install what the selected tests need before the first starts, outside any test's time limit, and say
    what was done (so a skip is never a surprise): the npm servers and conformance suites (``npm ci``) when
    a ``slow`` test is selected, Phoenix's venv for ``phoenix``, the SmolLM2 file for ``model`` tests
    (``helpers.prepare``). The quick lane needs none of them; ``--collect-only`` installs nothing.
    """
    if session.config.option.collectonly or hasattr(session.config, "workerinput"):
        return
    from tests.helpers import prepare

    lines = []
    if any(item.get_closest_marker("slow") is not None for item in session.items):
        lines += [f"npm: {note}" for note in ensure_npm_packages()]  # nothing to say when all are current
    names = []
    if any("phoenix" in getattr(item, "fixturenames", ()) for item in session.items):
        names.append("phoenix")
    if any(item.get_closest_marker("model") is not None for item in session.items):
        names.append("smollm2")
    lines += [f"{name}: {'ready' if ok else 'NOT INSTALLED'}: {note}" for name, ok, note in prepare(names)]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for line in lines:
        if reporter is not None:
            reporter.write_line(line)


# --------------------------------------------------------------------------- no network


class NetworkAccessBlocked(OSError):
    """A test tried to reach a host other than loopback."""


_LOOPBACK_NAMES = {"localhost", "localhost.", "ip6-localhost", "ip6-loopback"}


def _is_loopback(host: Any) -> bool:
    if host is None:  # getaddrinfo(None, ...) means the local host
        return True
    if isinstance(host, (bytes, bytearray)):
        host = bytes(host).decode("ascii", errors="replace")
    if not isinstance(host, str):
        return False
    host = host.strip("[]").split("%", 1)[0]
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_address(family: int, address: Any) -> None:
    if family == getattr(socket, "AF_UNIX", object()):
        return
    host = address[0] if isinstance(address, tuple) and address else address
    if not _is_loopback(host):
        raise NetworkAccessBlocked(f"tests may only connect to loopback, not {address!r}")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any non-loopback connection (or DNS lookup) fail at once with ``NetworkAccessBlocked``."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_create_connection = socket.create_connection
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        _check_address(self.family, address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        _check_address(self.family, address)
        return real_connect_ex(self, address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        _check_address(socket.AF_INET, address)
        return real_create_connection(address, *args, **kwargs)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_loopback(host):
            raise NetworkAccessBlocked(f"tests may only resolve loopback names, not {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture(autouse=True)
def sigint_raises_keyboard_interrupt() -> Iterator[None]:
    """SIGINT raises ``KeyboardInterrupt`` in every test, even when the test run inherited it ignored.

    A CI wrapper or ``nohup`` starts pytest with SIGINT ignored; Python then keeps it ignored and
    ``_thread.interrupt_main()`` does nothing, so the Ctrl-C tests failed (issue 15). Each test
    gets Python's own handler and the inherited one is put back after it.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True)
def quick_tests_start_no_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A test not marked ``slow`` that starts a process (``subprocess.Popen``, a ``multiprocessing`` process)
    fails at teardown, naming what it started: the quick lane (``-m "not slow"``) starts none. Mark it
    ``@pytest.mark.slow`` or give it a fixture of ``SLOW_FIXTURES``.
    """
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    import multiprocessing.process

    started: list[str] = []
    real_init = subprocess.Popen.__init__
    real_start = multiprocessing.process.BaseProcess.start

    def init(self: subprocess.Popen[Any], args: Any, *more: Any, **kwargs: Any) -> None:
        real_init(self, args, *more, **kwargs)
        started.append(str(args if isinstance(args, (str, bytes)) else [str(a) for a in args])[:120])

    def start(self: multiprocessing.process.BaseProcess) -> None:
        real_start(self)
        started.append(f"multiprocessing {type(self).__name__} {self.name}")

    monkeypatch.setattr(subprocess.Popen, "__init__", init)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start)
    yield
    if started:
        pytest.fail(f"{request.node.nodeid} is in the quick lane but started {len(started)} process(es), "
                    f"the first {started[0]}: mark it @pytest.mark.slow (tests/conftest.py SLOW_FIXTURES)",
                    pytrace=False)


# --------------------------------------------------------------------------- servers


def _serve(args: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    process: subprocess.Popen[bytes] = start_process(args, env=env)
    try:
        wait_for_port(port, timeout_seconds=_STARTUP_SECONDS, process=process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


def _sdk_server(*flags: str) -> Iterator[str]:
    port = free_port()
    yield from _serve([PYTHON, str(SERVERS / "sdk_server.py"), "--port", str(port), *flags], port)


@pytest.fixture(scope="session")
def sdk_server() -> Iterator[str]:
    """URL of the ``mcp`` SDK test server: SSE replies with CRLF line endings, sessions."""
    yield from _sdk_server()


@pytest.fixture(scope="session")
def sdk_server_json() -> Iterator[str]:
    """URL of the ``mcp`` SDK test server answering plain JSON (``json_response=True``), sessions."""
    yield from _sdk_server("--json-response")


@pytest.fixture(scope="session")
def sdk_server_stateless() -> Iterator[str]:
    """URL of the ``mcp`` SDK test server without sessions (``stateless_http=True``), SSE replies."""
    yield from _sdk_server("--stateless")


@pytest.fixture(scope="session")
def paging_server() -> Iterator[str]:
    """URL of the low-level SDK server listing ``tool_00``..``tool_59``, 20 per page."""
    port = free_port()
    yield from _serve([PYTHON, str(SERVERS / "paging_server.py"), "--port", str(port)], port)


@pytest.fixture(scope="session")
def everything_server() -> Iterator[str]:
    """URL of npm ``@modelcontextprotocol/server-everything`` over Streamable HTTP."""
    if not EVERYTHING_JS.exists():
        pytest.skip(
            f"npm MCP servers not installed ({EVERYTHING_JS} is missing); "
            "run `npm ci` in tests/node/servers (as .ci/run does)"
        )
    port = free_port()
    yield from _serve(["node", str(EVERYTHING_JS), "streamableHttp"], port, env={"PORT": str(port)})


# --------------------------------------------------------------------------- clients


@pytest.fixture(name="free_port")
def free_port_fixture() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_port()


@pytest.fixture
def open_client() -> Iterator[Callable[..., Any]]:
    """Factory of ``MCPClient``s over ``HTTPTransport``; all are closed at teardown."""
    from yiemagent.mcp import HTTPTransport, MCPClient

    clients: list[MCPClient] = []

    def make(
        url: str, *, session: requests.Session | None = None, timeout_seconds: float = 30, name: str | None = None
    ) -> MCPClient:
        transport = HTTPTransport(url, session=session, timeout_seconds=timeout_seconds, name=name or url)
        client = MCPClient(transport=transport, timeout_seconds=timeout_seconds, name=name)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture(scope="session")
def weather_server() -> Iterator[str]:
    """The demo's example server (yiemagent.examples.weather_server, on the mcp SDK): 2 tools."""
    port = free_port()
    yield from _serve([PYTHON, "-m", "yiemagent.examples.weather_server", "--port", str(port)], port)


@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The embedded local model, started once for the session and stopped at the end."""
    from yiemagent.models.local import LocalModel

    model = LocalModel()
    model.start()
    try:
        yield model
    finally:
        model.stop()


# --------------------------------------------------------------------------- stdio servers (issue 4)
#
#   everything_stdio     argv of npm server-everything over stdio: ``["node", <index.js>, "stdio"]``
#   filesystem_stdio     argv of npm server-filesystem (append the allowed directories)
#   stdio_client         ``stdio_client(argv, *, env=None, cwd=None, timeout_seconds=30, name=None) -> MCPClient``
#                        via ``MCPClient.stdio``; at teardown every client is closed and its process must be gone
# (both argv fixtures skip when tests/node/servers/node_modules is missing)

FILESYSTEM_BIN = NODE_SERVERS / ".bin" / "mcp-server-filesystem"


def _require_node_servers() -> None:
    """Skip when the npm servers were never installed; a package missing from an install is a failure."""
    if not NODE_SERVERS.is_dir():
        pytest.skip(f"npm MCP servers not installed ({NODE_SERVERS} is missing); run `npm ci` in tests/node/servers "
                    "(as .ci/run does)")


@pytest.fixture
def everything_stdio() -> list[str]:
    """Command line of npm ``@modelcontextprotocol/server-everything`` over stdio."""
    _require_node_servers()
    assert EVERYTHING_JS.exists(), f"{EVERYTHING_JS} is missing: run `npm ci` in tests/node/servers"
    return ["node", str(EVERYTHING_JS), "stdio"]


@pytest.fixture
def filesystem_stdio() -> list[str]:
    """Command line of npm ``@modelcontextprotocol/server-filesystem`` (append allowed directories)."""
    _require_node_servers()
    assert FILESYSTEM_BIN.exists(), f"{FILESYSTEM_BIN} is missing: run `npm ci` in tests/node/servers"
    return [str(FILESYSTEM_BIN)]


@pytest.fixture
def stdio_client() -> Iterator[Callable[..., Any]]:
    """Factory of stdio ``MCPClient``s; all are closed at teardown, and none may leave its process running."""
    from yiemagent.mcp import MCPClient

    clients: list[MCPClient] = []

    def make(
        argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
        timeout_seconds: float = 30, name: str | None = None,
    ) -> MCPClient:
        client = MCPClient.stdio(argv[0], argv[1:], env=env, cwd=cwd, timeout_seconds=timeout_seconds, name=name)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
    processes = [(c.name, getattr(c.transport, "process", None)) for c in clients]
    alive = [name for name, process in processes if process is not None and process.poll() is None]
    assert not alive, f"stdio servers still running after close(): {alive}"


# --------------------------------------------------------------------------- HTTP-side fixtures (issue 4)


@pytest.fixture(scope="session")
def fastmcp_server() -> Iterator[str]:
    """URL of tests/servers/fastmcp_server.py: PyPI ``fastmcp`` with ``list_page_size=25``, 64 tools in 3 pages
    (opaque cursors), 4 of them with names OpenAI rejects.
    """
    port = free_port()
    yield from _serve([PYTHON, str(SERVERS / "fastmcp_server.py"), "--port", str(port)], port)


@pytest.fixture
def peer() -> Iterator[Any]:
    """A raw OpenAI-compatible peer (``tests/servers/raw_llm_peer.py``): replies scripted per test."""
    from tests.servers.raw_llm_peer import LLMPeer

    with LLMPeer() as running:
        yield running


@pytest.fixture
def raw_peer() -> Iterator[Callable[..., Any]]:
    """Factory of started ``tests.servers.raw_http_peer.RawPeer``s (kwargs go to ``RawPeer``); all stopped at
    teardown. Only for wire shapes no real server sends: each test using it says why.
    """
    from tests.servers.raw_http_peer import RawPeer

    peers: list[RawPeer] = []

    def make(**kwargs: Any) -> RawPeer:
        peer = RawPeer(**kwargs).start()
        peers.append(peer)
        return peer

    yield make
    for peer in peers:
        peer.stop()


@pytest.fixture
def no_sleep() -> Iterator[list[float]]:
    """A fake ``sleep`` for ``MCPClient(retry_sleep=...)``: records the seconds asked, never sleeps.
    Use as ``retry_sleep=no_sleep.append``.
    """
    yield []


# --------------------------------------------------------------------------- conversation stores (issue 10)


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """DSN of a PostgreSQL server started for this session (skipped when PostgreSQL is not installed)."""
    try:
        server = start_postgres()
    except FileNotFoundError as exc:
        pytest.skip(f"PostgreSQL is not installed here ({exc}); .ci/run installs Debian's postgresql")
    try:
        yield server.dsn
    finally:
        server.stop()


class _ClosingFactory:
    """``factory() -> store`` that keeps what it made and closes it at teardown (picklable: without those).

    Agents are garbage-collected once dropped (they keep no pool thread alive), so a store a test
    made and never closed would otherwise be closed by the GC mid-test, with a ResourceWarning.
    """

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make
        self.made: list[Any] = []

    def __call__(self) -> Any:
        store = self.make()
        self.made.append(store)
        return store

    def __getstate__(self) -> dict[str, Any]:
        return {"make": self.make, "made": []}

    def close_all(self) -> None:
        for store in self.made:
            try:
                store.close()
            except Exception:  # already closed, or the test broke it on purpose
                pass


@pytest.fixture
def sqlite_store_factory(tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """``factory() -> SQLiteStore`` on a fresh file of this test (picklable)."""
    from yiemagent.store.sqlite import SQLiteStore

    factory = _ClosingFactory(functools.partial(SQLiteStore, str(tmp_path / "conversations.db")))
    yield factory
    factory.close_all()


_prefixes = iter(range(1, 1_000_000))


@pytest.fixture
def postgres_store_factory(postgres_dsn: str) -> Iterator[Callable[[], Any]]:
    """``factory() -> PostgresStore`` on tables of this test only (fresh prefix; picklable)."""
    import os

    from yiemagent.store.postgres import PostgresStore

    prefix = f"t{os.getpid()}_{next(_prefixes)}_"
    factory = _ClosingFactory(functools.partial(PostgresStore, postgres_dsn, table_prefix=prefix))
    yield factory
    factory.close_all()


@pytest.fixture(params=["sqlite", "postgres"])
def store_factory(request: pytest.FixtureRequest) -> Callable[[], Any]:
    """Both backends, one after the other."""
    return request.getfixturevalue(f"{request.param}_store_factory")  # type: ignore[no-any-return]


@pytest.fixture
def store(store_factory: Callable[[], Any]) -> Iterator[Any]:
    """A store of each backend for this test; closed at teardown."""
    made = store_factory()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def scripted_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``(base_url, log file)`` of tests/servers/scripted_openai_server.py (an OpenAI-compatible model that
    answers known words at a known pace; one JSON line per request in the log: ``n``, ``last``, ``stream``,
    ``cut``, ``tools``, ``model``, ``authorization``), started once per test module.
    """
    from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, wait_for_port

    log = tmp_path_factory.mktemp("scripted") / "requests.jsonl"
    log.write_text("", encoding="utf-8")
    port = free_port()
    process = start_process([PYTHON, str(SERVERS / "scripted_openai_server.py"), "--port", str(port),
                             "--log", str(log)])
    try:
        wait_for_port(port, timeout_seconds=20, process=process)
        yield f"http://127.0.0.1:{port}/v1", log
    finally:
        stop_process(process)
