"""Calls in flight are bounded per owner, not only per session (issue 33 point 2, hidden rule).

A 2026-07-28 request and a ``stateless=True`` request have no session: before this bound one client could
start any number of concurrent ``tools/call`` (each takes a thread of the server's pool) and starve the others
(modelcontextprotocol/python-sdk #1698: a client issuing many tool calls in parallel exhausts the server; a
bound per client, refused with a 429-like error).

Real concurrent HTTP clients (``requests``) on werkzeug's threaded server (``kit.serving``). Two owners from
one loopback address: werkzeug's ``ProxyFix`` sets ``REMOTE_ADDR`` from ``X-Forwarded-For``, as the guide says
to do behind a proxy; the owner is that address (no ``BearerAuth`` here).
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import requests
from werkzeug.middleware.proxy_fix import ProxyFix

from tests.mcp.server.kit import serving
from yiemagent.mcp.server import MCPServer
from yiemagent.tools import AgentTool

pytestmark = pytest.mark.slow  # a server on a socket

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
BOUND_SECONDS = 30.0


def gated_server(gate: threading.Event, started: threading.Semaphore) -> MCPServer:
    """``hold`` waits for ``gate`` (or its abort, at most 60 s); ``add`` answers at once."""

    def hold(call_id: str, arguments: dict[str, Any], abort: threading.Event) -> str:
        started.release()
        while not gate.is_set() and not abort.is_set():
            gate.wait(0.05)
        return "released"

    def add(call_id: str, arguments: dict[str, Any], abort: threading.Event) -> str:
        return str(int(arguments["a"]) + int(arguments["b"]))

    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    return MCPServer("owners", "1", tools=[
        AgentTool("hold", "Waits to be released.", {"type": "object", "properties": {}}, hold),
        AgentTool("add", "Adds.", schema, add)])


def call(url: str, owner: str, name: str, arguments: dict[str, Any], era: str, request_id: int = 1) -> Any:
    """One ``tools/call`` from ``owner`` (its address), in the 2026-07-28 era or a stateless 2025-11-25 one."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "X-Forwarded-For": owner}
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if era == "modern":
        headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name})
        params["_meta"] = META
    else:
        headers["MCP-Protocol-Version"] = "2025-11-25"
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return requests.post(url, data=json.dumps(body), headers=headers, timeout=BOUND_SECONDS)


@pytest.mark.parametrize("era", ["modern", "stateless"])
def test_python_sdk_1698_one_owner_without_a_session_gets_only_its_share_of_calls_in_flight(
        era: str) -> None:
    gate, started = threading.Event(), threading.Semaphore(0)
    app = gated_server(gate, started).wsgi_app(stateless=era == "stateless", max_calls_per_owner=3)
    answers: list[Any] = []
    with serving(ProxyFix(app, x_for=1)) as url:
        holders = [threading.Thread(target=lambda n=n: answers.append(call(url, "203.0.113.1", "hold", {}, era, n)))
                   for n in range(3)]
        try:
            for holder in holders:
                holder.start()
            for _ in holders:  # owner A holds its whole share
                assert started.acquire(timeout=BOUND_SECONDS)
            refused = call(url, "203.0.113.1", "add", {"a": 1, "b": 2}, era, 9)
            assert refused.status_code == 429
            assert refused.json()["id"] == 9 and "in flight" in refused.json()["error"]["message"]
            served = call(url, "203.0.113.2", "add", {"a": 2, "b": 3}, era)  # owner B is still served
            assert served.status_code == 200 and served.json()["result"]["content"][0]["text"] == "5"
        finally:
            gate.set()
            for holder in holders:
                holder.join(BOUND_SECONDS)
        assert [a.status_code for a in answers] == [200, 200, 200]
        again = call(url, "203.0.113.1", "add", {"a": 1, "b": 2}, era)  # A's calls ended: its share is back
        assert again.status_code == 200 and again.json()["result"]["content"][0]["text"] == "3"


def test_a_client_that_leaves_gives_its_share_back() -> None:
    gate, started = threading.Event(), threading.Semaphore(0)
    app = gated_server(gate, started).wsgi_app(max_calls_per_owner=1)
    with serving(ProxyFix(app, x_for=1)) as url:
        leaving = threading.Thread(target=lambda: _leave_after_start(url, started))
        leaving.start()
        leaving.join(BOUND_SECONDS)
        # the probe sees the client gone and cancels the call: its share comes back (bounded poll)
        deadline = threading.Event()
        for _ in range(int(BOUND_SECONDS / 0.1)):
            answer = call(url, "203.0.113.1", "add", {"a": 1, "b": 1}, "modern")
            if answer.status_code == 200:
                break
            assert answer.status_code == 429
            deadline.wait(0.1)
        assert answer.status_code == 200 and answer.json()["result"]["content"][0]["text"] == "2"
        assert not gate.is_set()  # the share came back because the client left, not because the call was released


def _leave_after_start(url: str, started: threading.Semaphore) -> None:
    """A raw client (a hostile shape: it sends the call, then closes its socket without reading)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "hold", "arguments": {}, "_meta": META}}).encode()
    head = (f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n"
            f"Mcp-Method: tools/call\r\nMcp-Name: hold\r\nX-Forwarded-For: 203.0.113.1\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=BOUND_SECONDS) as sock:
        sock.sendall(head + body)
        assert started.acquire(timeout=BOUND_SECONDS)


def _session(url: str, owner: str) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "X-Forwarded-For": owner}
    answer = requests.post(url, headers=headers, timeout=BOUND_SECONDS, data=json.dumps({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
    assert answer.status_code == 200
    return {**headers, "Mcp-Session-Id": answer.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25",
            "Accept": "text/event-stream"}


def test_one_owners_get_streams_are_bounded_and_given_back_when_closed() -> None:
    """Each GET stream holds a thread: one owner with 100 sessions held 100 of them (the sessions' share).
    ``MemorySessions(max_streams_per_owner=)`` bounds them per owner (the verified principal, else the address).
    """
    from yiemagent.mcp.server import MemorySessions

    gate, started = threading.Event(), threading.Semaphore(0)
    app = gated_server(gate, started).wsgi_app(sessions=MemorySessions(max_streams_per_owner=2))
    with serving(ProxyFix(app, x_for=1)) as url:
        held = [requests.get(url, headers=_session(url, "203.0.113.1"), stream=True, timeout=BOUND_SECONDS)
                for _ in range(2)]
        try:
            assert [h.status_code for h in held] == [200, 200]
            third = _session(url, "203.0.113.1")
            refused = requests.get(url, headers=third, stream=True, timeout=BOUND_SECONDS)
            assert refused.status_code == 429 and "GET streams" in refused.json()["error"]["message"]
            other = requests.get(url, headers=_session(url, "203.0.113.2"), stream=True, timeout=BOUND_SECONDS)
            assert other.status_code == 200  # another owner is served
            other.close()
            held.pop().close()  # the client leaves: within a probe its share is back (bounded poll)
            for _ in range(int(BOUND_SECONDS / 0.1)):
                again = requests.get(url, headers=third, stream=True, timeout=BOUND_SECONDS)
                if again.status_code == 200:
                    break
                assert again.status_code == 429
                gate.wait(0.1)
            assert again.status_code == 200
            again.close()
        finally:
            for stream in held:
                stream.close()
