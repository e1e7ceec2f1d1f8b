"""A served call ends when its client leaves (issue 33 point 1), at every point, in both eras and response modes.

The app runs under werkzeug's threaded server on a real socket (``serving``); clients are ``http.client``
connections that send a real request and close the connection: before the call's first event (a JSON answer, or
an SSE stream not started yet), while the tool waits for the client's answer to an elicitation (2025-11-25, on
the call's SSE stream), and while the call streams. The tools (tests/servers/leaving_wsgi.py) write a mark when
their abort event is set. Before the fix none of these calls was cancelled: the request thread waited for the
call's next event (120 s here; 600 s for a question) and never looked at the socket.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.mcp.server.kit import serving
from tests.servers.leaving_wsgi import build

pytestmark = pytest.mark.slow

V2025, V2026 = "2025-11-25", "2026-07-28"
JSON_ONLY, BOTH, SSE_ONLY = "application/json", "application/json, text/event-stream", "text/event-stream"
META = {"io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/logLevel": "info"}
BOUND_SECONDS = 30.0


def wait_for(path: Path, seconds: float = BOUND_SECONDS) -> bool:
    """Bounded poll for a mark file."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return path.exists()


class Peer:
    """One HTTP/1.1 connection to the served app (``http.client``), speaking either era."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.path = parts.path
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=BOUND_SECONDS)
        self.session: str | None = None

    def send(self, message: dict[str, Any], accept: str = BOTH, version: str = V2025) -> None:
        headers = {"Content-Type": "application/json", "Accept": accept, "MCP-Protocol-Version": version}
        if version == V2026:
            headers["Mcp-Method"] = str(message["method"])
            name = message.get("params", {}).get("name") or message.get("params", {}).get("uri")
            if name is not None:
                headers["Mcp-Name"] = str(name)
        elif self.session is not None:
            headers["Mcp-Session-Id"] = self.session
        self.conn.request("POST", self.path, json.dumps(message).encode(), headers)

    def initialize(self) -> None:
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": V2025, "capabilities": {"elicitation": {}},
                              "clientInfo": {"name": "leaver", "version": "0"}}})
        response = self.conn.getresponse()
        assert response.status == 200, response.read()
        self.session = response.getheader("Mcp-Session-Id")
        response.read()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert self.conn.getresponse().read() == b""

    def read_until(self, needle: str) -> str:
        """Read the response (an SSE stream) line by line until one contains ``needle``."""
        response = self.conn.getresponse()
        assert response.status == 200
        while True:
            line = response.readline().decode()
            assert line, f"the stream ended before {needle!r}"
            if needle in line:
                return line

    def leave(self) -> None:
        self.conn.close()


def call(method: str, tag: str, version: str, progress: bool = False) -> dict[str, Any]:
    params: dict[str, Any]
    if method == "tools/call":
        params = {"name": "progress_then_wait" if progress else "wait_for_abort", "arguments": {"tag": tag}}
    elif method == "prompts/get":
        params = {"name": "wait_prompt", "arguments": {"tag": tag}}
    else:
        params = {"uri": f"wait://{tag}"}
    meta: dict[str, Any] = dict(META) if version == V2026 else {}
    if progress:
        meta["progressToken"] = "p-1"
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with serving(build(tmp_path).wsgi_app()) as url:
        yield url, tmp_path


@pytest.mark.parametrize("version", [V2025, V2026])
@pytest.mark.parametrize("accept", [JSON_ONLY, BOTH, SSE_ONLY])
@pytest.mark.parametrize("method", ["tools/call", "prompts/get", "resources/read"])
def test_a_client_that_leaves_before_the_first_event_cancels_the_call(
        served: tuple[str, Path], method: str, accept: str, version: str) -> None:
    url, marks = served
    peer = Peer(url)
    if version == V2025:
        peer.initialize()
    tag = f"{method.replace('/', '-')}-{len(accept)}-{version}"
    peer.send(call(method, tag, version), accept=accept, version=version)
    assert wait_for(marks / f"{tag}.started")
    peer.leave()
    assert wait_for(marks / f"{tag}.aborted"), "the call ran on after its client left"
    assert not (marks / f"{tag}.finished").exists()


@pytest.mark.parametrize("version", [V2025, V2026])
def test_a_client_that_leaves_while_the_call_streams_cancels_it(served: tuple[str, Path], version: str) -> None:
    url, marks = served
    peer = Peer(url)
    if version == V2025:
        peer.initialize()
    peer.send(call("tools/call", f"stream-{version}", version, progress=True), version=version)
    assert "half way" in peer.read_until("notifications/progress")
    assert wait_for(marks / f"stream-{version}.started")
    peer.leave()
    assert wait_for(marks / f"stream-{version}.aborted"), "the call ran on after its client left"


@pytest.mark.parametrize("accept", [BOTH, SSE_ONLY])
def test_a_client_that_leaves_mid_question_cancels_the_call(served: tuple[str, Path], accept: str) -> None:
    """2025-11-25: the tool waits for the answer to its elicitation; the client closes the stream instead."""
    url, marks = served
    peer = Peer(url)
    peer.initialize()
    tag = f"question-{len(accept)}"
    peer.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "confirm",
                                                                             "arguments": {"tag": tag}}}, accept)
    assert "elicitation/create" in peer.read_until("elicitation/create")
    peer.leave()
    assert wait_for(marks / f"{tag}.aborted"), "the question waited on after its client left"


def test_a_client_that_leaves_its_get_stream_frees_it(served: tuple[str, Path]) -> None:
    """One GET stream per session: once its client leaves, the session can open another (not 409), sooner than
    the stream's first keep-alive comment (15 s), which was the only way the server noticed before.
    """
    url, _ = served
    peer = Peer(url)
    peer.initialize()
    assert peer.session is not None
    parts = urlsplit(url)
    headers = {"Accept": SSE_ONLY, "Mcp-Session-Id": peer.session}
    first = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=BOUND_SECONDS)
    first.request("GET", parts.path, headers=headers)
    assert first.getresponse().readline().startswith(b": stream open")
    first.close()
    deadline = time.monotonic() + 10.0
    while True:
        second = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=BOUND_SECONDS)
        second.request("GET", parts.path, headers=headers)
        response = second.getresponse()
        status = response.status
        second.close()
        if status == 200 or time.monotonic() > deadline:
            break
        assert status == 409
        time.sleep(0.2)
    assert status == 200


def test_a_real_sdk_client_that_dies_mid_question_cancels_the_call(served: tuple[str, Path]) -> None:
    """The ``mcp`` SDK client in a process of its own exits when the elicitation reaches it."""
    import subprocess

    from tests.helpers import PYTHON

    url, marks = served
    done = subprocess.run([PYTHON, "-m", "tests.servers.sdk_leaver", url, "sdk"], capture_output=True,
                          timeout=180, cwd=str(Path(__file__).resolve().parents[3]))
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert (marks / "sdk.started").exists()
    assert wait_for(marks / "sdk.aborted"), "the question waited on after its client died"
