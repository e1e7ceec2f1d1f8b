"""``WSGIApp``: Streamable HTTP 2025-11-25 as a WSGI app (issue 28 point 1), through werkzeug's test client
(in-process: the real app and werkzeug's real WSGI plumbing, no socket).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.test import Client

from tests.mcp.server.kit import build, waiting_tool
from yiemagent.mcp.server import MCPServer

ACCEPT = "application/json, text/event-stream"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}


def post(client: Client, message: Any, session: str | None = None, path: str = "/mcp", **headers: str) -> Any:
    sent = {"Accept": ACCEPT, **headers}
    if session is not None:
        sent["Mcp-Session-Id"] = session
    body = message if isinstance(message, (bytes, str)) else json.dumps(message)
    return client.post(path, data=body, headers=sent, content_type=headers.pop("content_type", "application/json"))


def start(client: Client) -> str:
    response = post(client, INIT)
    assert response.status_code == 200 and response.json["result"]["protocolVersion"] == "2025-11-25"
    session = response.headers["Mcp-Session-Id"]
    assert all(0x21 <= ord(c) <= 0x7E for c in session) and len(session) >= 32
    assert post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session).status_code == 202
    return str(session)


def test_session_lifecycle() -> None:
    client = Client(build().wsgi_app())
    session = start(client)
    listed = post(client, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session,
                  **{"MCP-Protocol-Version": "2025-11-25"})
    assert listed.status_code == 200 and listed.mimetype == "application/json"
    assert [t["name"] for t in listed.json["result"]["tools"]] == ["add", "leaky", "steps"]
    assert post(client, {"jsonrpc": "2.0", "id": 3, "method": "ping"}).status_code == 400  # no session id
    assert post(client, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, "unknown").status_code == 404
    assert client.delete("/mcp", headers={"Mcp-Session-Id": session}).status_code == 200
    assert post(client, {"jsonrpc": "2.0", "id": 4, "method": "ping"}, session).status_code == 404
    assert client.delete("/mcp", headers={"Mcp-Session-Id": session}).status_code == 404


def test_http_refusals() -> None:
    client = Client(MCPServer("s", "1").wsgi_app(max_body_bytes=1000))
    session = start(client)
    assert client.get("/mcp").status_code == 406  # the GET stream is text/event-stream
    assert client.get("/mcp", headers={"Accept": "text/event-stream"}).status_code == 400  # no session
    assert client.get("/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": "nope"}).status_code == 404
    assert Client(MCPServer("s", "1").wsgi_app(stateless=True)).get(
        "/mcp", headers={"Accept": "text/event-stream"}).status_code == 405
    assert client.put("/mcp").status_code == 405
    assert client.post("/other", data="{}", content_type="application/json").status_code == 404
    assert post(client, "{}", session, content_type="text/plain").status_code == 415
    assert post(client, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, session, Accept="text/html").status_code == 406
    big = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"pad": "x" * 2000}}
    assert post(client, big, session).status_code == 413
    broken = post(client, b"{nope", session)
    assert broken.status_code == 400 and broken.json["error"]["code"] == -32700
    old = post(client, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, session, **{"MCP-Protocol-Version": "1999-01-01"})
    assert old.status_code == 400


def test_origin_validation_against_dns_rebinding() -> None:
    client = Client(MCPServer("s", "1").wsgi_app(allowed_origins=["https://app.example.com"]))
    assert post(client, INIT, Origin="http://evil.example.com", Host="evil.example.com").status_code == 403
    assert post(client, INIT, Origin="http://localhost:5173").status_code == 200
    assert post(client, INIT, Origin="http://[::1]:8000").status_code == 200
    assert post(client, INIT, Origin="https://app.example.com").status_code == 200
    pinned = Client(MCPServer("s", "1").wsgi_app(allowed_hosts=["localhost", "127.0.0.1"]))
    assert post(pinned, INIT, Host="evil.example.com").status_code == 403
    assert post(pinned, INIT, Host="127.0.0.1:8000").status_code == 200


def test_a_call_with_notifications_streams_sse_and_a_plain_call_answers_json() -> None:
    client = Client(build().wsgi_app())
    session = start(client)
    plain = post(client, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}, session)
    assert plain.mimetype == "application/json" and plain.json["result"]["content"][0]["text"] == "3"
    streamed = post(client, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                             "params": {"name": "steps", "arguments": {"count": 2}, "_meta": {"progressToken": 9}}},
                    session)
    assert streamed.mimetype == "text/event-stream"
    events = [json.loads(line[6:]) for line in streamed.get_data(as_text=True).splitlines()
              if line.startswith("data: ")]
    assert [e.get("method") for e in events] == ["notifications/progress", "notifications/progress",
                                                 "notifications/message", None]
    assert events[-1]["id"] == 3 and events[-1]["result"]["content"][0]["text"] == "2 steps"


def test_cancel_over_http_reaches_the_call_of_the_same_session() -> None:
    started = threading.Event()
    client = Client(MCPServer("s", "1", tools=[waiting_tool(started)]).wsgi_app())
    session = start(client)
    answers: list[Any] = []
    worker = threading.Thread(target=lambda: answers.append(post(client, {
        "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "wait_for_abort"}}, session)))
    worker.start()
    assert started.wait(30)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
    assert post(client, cancel, session).status_code == 202
    worker.join(30)
    # the client is still there (its POST is open): it gets a JSON-RPC answer, as the mcp SDK's server sends
    assert answers and answers[0].status_code == 200
    assert answers[0].get_json() == {"jsonrpc": "2.0", "id": 5,
                                     "error": {"code": -32800, "message": "Request cancelled"}}


def test_stateless_mode_and_a_mount_under_a_prefix() -> None:
    app = DispatcherMiddleware(lambda environ, start: [], {"/tools/mcp": build().wsgi_app(path="/", stateless=True)})
    client = Client(app)
    response = post(client, INIT, path="/tools/mcp")
    assert response.status_code == 200 and "Mcp-Session-Id" not in response.headers
    called = post(client, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "add", "arguments": {"a": 4, "b": 5}}}, path="/tools/mcp")
    assert called.json["result"]["content"][0]["text"] == "9"
    assert client.delete("/tools/mcp").status_code == 405
