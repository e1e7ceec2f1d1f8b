"""Resource subscriptions served (issue 28; MCP 2025-11-25 "Resources", Subscriptions): ``resources/subscribe``,
the session's standalone ``GET`` stream, ``MCPServer.resource_updated``; talked to by yiemagent's own
``MCPClient.subscribe_resource`` over real HTTP (werkzeug, threaded) and over the stdio loop.
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from werkzeug.test import Client

from tests.mcp.server.kit import build, serving
from yiemagent.mcp.server import MCPServer
from yiemagent.mcp.server.subscriptions import MAX_SUBSCRIPTIONS

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
ACCEPT = "application/json, text/event-stream"


def test_subscribe_is_announced_acknowledged_and_bounded() -> None:
    server = build()
    reply = server.handle(INIT)
    assert reply is not None and reply["result"]["capabilities"]["resources"]["subscribe"] is True
    client = Client(server.wsgi_app())
    session = client.post("/mcp", data=json.dumps(INIT), headers={"Accept": ACCEPT},
                          content_type="application/json").headers["Mcp-Session-Id"]

    def rpc(method: str, params: dict[str, Any]) -> Any:
        return client.post("/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}),
                           headers={"Accept": ACCEPT, "Mcp-Session-Id": session}, content_type="application/json").json

    assert rpc("resources/subscribe", {"uri": "memo://readme"})["result"] == {}
    assert rpc("resources/unsubscribe", {"uri": "memo://readme"})["result"] == {}
    assert rpc("resources/subscribe", {"uri": 5})["error"]["code"] == -32602
    for n in range(MAX_SUBSCRIPTIONS):
        assert "result" in rpc("resources/subscribe", {"uri": f"memo://n/{n}"})
    assert rpc("resources/subscribe", {"uri": "memo://one-too-many"})["error"]["code"] == -32602
    assert server.resource_updated("memo://n/1") == 0  # nobody listens: no stream is open


@pytest.fixture
def served() -> Iterator[tuple[MCPServer, str]]:
    server = build()
    with serving(server.wsgi_app()) as url:
        yield server, url


@pytest.mark.slow
def test_yiemagent_client_is_told_of_an_update_on_the_get_stream(served: tuple[MCPServer, str]) -> None:
    from yiemagent.mcp import MCPClient

    server, url = served
    seen: list[dict[str, Any]] = []
    got = threading.Event()
    with MCPClient(url, protocol_version="2025-11-25", timeout_seconds=60) as client:
        client.subscribe_resource("memo://readme", lambda params: (seen.append(params), got.set()))
        deadline = time.monotonic() + 30
        while server.resource_updated("memo://readme") == 0 and time.monotonic() < deadline:
            time.sleep(0.1)  # the client opens its GET stream after subscribing
        assert got.wait(30)
        assert seen[0] == {"uri": "memo://readme"}
        assert server.resource_updated("memo://other") == 0  # not subscribed
        client.unsubscribe_resource("memo://readme")
        assert server.resource_updated("memo://readme") == 0


def test_a_second_get_stream_of_a_session_is_409_and_the_stream_ends_with_the_session() -> None:
    server = build()
    app = server.wsgi_app()
    client = Client(app)
    session = client.post("/mcp", data=json.dumps(INIT), headers={"Accept": ACCEPT},
                          content_type="application/json").headers["Mcp-Session-Id"]
    stream = client.get("/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": session}, buffered=False)
    assert stream.status_code == 200 and stream.headers["Content-Type"] == "text/event-stream"
    chunks = iter(stream.response)
    assert next(chunks) == b": stream open\n\n"
    second = client.get("/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": session})
    assert second.status_code == 409
    client.post("/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                                         "params": {"uri": "memo://readme"}}),
                headers={"Accept": ACCEPT, "Mcp-Session-Id": session}, content_type="application/json")
    assert server.resource_updated("memo://readme") == 1
    event = next(chunks)
    assert event.startswith(b"event: message\ndata: ")
    assert json.loads(event.split(b"data: ", 1)[1]) == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                                        "params": {"uri": "memo://readme"}}
    assert client.delete("/mcp", headers={"Mcp-Session-Id": session}).status_code == 200
    started = time.monotonic()
    assert list(chunks) == []  # the stream ends with its session
    assert time.monotonic() - started < 10
    stream.close()


def test_over_stdio_updates_go_to_stdout() -> None:
    from yiemagent.mcp.server.stdio import serve_stdio

    server = build()
    writer = io.BytesIO()
    lines = [json.dumps(INIT), json.dumps({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                                           "params": {"uri": "memo://readme"}})]

    class Input(io.RawIOBase):
        """stdin that holds the connection open until the update was sent."""

        def __init__(self) -> None:
            self.data = ("\n".join(lines) + "\n").encode()
            self.done = threading.Event()

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            if not self.data:
                self.done.wait(30)
                return 0
            n = min(len(buffer), len(self.data))
            buffer[:n], self.data = self.data[:n], self.data[n:]
            return n

    stdin = Input()
    thread = threading.Thread(target=serve_stdio, args=(server,), kwargs={"stdin": stdin, "stdout": writer},
                              daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while b'"id":2' not in writer.getvalue().replace(b" ", b"") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.resource_updated("memo://readme") == 1
    stdin.done.set()
    thread.join(30)
    notes = [json.loads(line) for line in writer.getvalue().splitlines() if b"resources/updated" in line]
    assert notes == [{"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "memo://readme"}}]
