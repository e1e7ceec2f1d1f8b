"""Hostile clients against the served app (issue 28 point 7), as the hostile-server suites test the client.

Each case sends what a broken or hostile client may send, through werkzeug's test client (the real WSGI app) and
through the stdio loop (the real line reader on pipes). Every answer must be a well-formed JSON-RPC error (or an
HTTP status the spec names) with a bounded message that quotes no secret, no traceback and no control character;
the server must answer a normal call afterwards. Raw shapes: no real client program sends these on purpose.
"""

from __future__ import annotations

import io
import json
import threading

import pytest
from werkzeug.test import Client

from tests.mcp.server.kit import SECRET, build
from yiemagent.textpolicy import register_secrets

ACCEPT = "application/json, text/event-stream"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
CODES = {-32700, -32600, -32601, -32602, -32603, -32002}


def _deep(depth: int) -> bytes:
    return b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": ' + b"[" * depth + b"]" * depth + b"}"


HOSTILE: list[tuple[str, bytes]] = [
    ("not JSON", b"{not json"),
    ("invalid UTF-8", b'{"jsonrpc": "2.0", "id": 2, "method": "\xff\xfe"}'),
    ("nested 100,000 deep", _deep(100_000)),
    ("a batch", b'[{"jsonrpc": "2.0", "id": 3, "method": "ping"}]'),
    ("an object as id", b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}'),
    ("a huge integer id", b'{"jsonrpc": "2.0", "id": 1' + b"0" * 5000 + b', "method": "ping"}'),
    ("jsonrpc 1.0", b'{"jsonrpc": "1.0", "id": 4, "method": "ping"}'),
    ("a number as method", b'{"jsonrpc": "2.0", "id": 6, "method": 7}'),
    ("params an array", b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": [1]}'),
    ("NaN", b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "add", "arguments": '
            b'{"a": NaN, "b": 1}}}'),
    ("arguments a string", b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "add", '
                           b'"arguments": "a=1"}}'),
    ("wrong argument types", b'{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "add", '
                             b'"arguments": {"a": "one", "b": [2]}}}'),
    ("a secret and controls in the tool name", json.dumps(
        {"jsonrpc": "2.0", "id": 11, "method": "tools/call",
         "params": {"name": f"{SECRET}\x1b[2J\u202e\ud800", "arguments": {}}}).encode()),
    ("a 1 MB tool name", json.dumps({"jsonrpc": "2.0", "id": 12, "method": "tools/call",
                                     "params": {"name": "x" * 1_000_000, "arguments": {}}}).encode()),
    ("a forged cursor", b'{"jsonrpc": "2.0", "id": 13, "method": "tools/list", "params": {"cursor": "../../etc"}}'),
    ("a file URI", b'{"jsonrpc": "2.0", "id": 14, "method": "resources/read", "params": {"uri": "file:///etc/passwd"}}'),
    ("prompt arguments not strings", b'{"jsonrpc": "2.0", "id": 15, "method": "prompts/get", "params": '
                                     b'{"name": "greet", "arguments": {"who": {"$ne": 1}}}}'),
    ("an unknown method", b'{"jsonrpc": "2.0", "id": 16, "method": "admin/shutdown"}'),
    ("a tool that leaks a secret", b'{"jsonrpc": "2.0", "id": 17, "method": "tools/call", "params": '
                                   b'{"name": "leaky", "arguments": {}}}'),
]


def check_answer(label: str, body: bytes) -> None:
    text = body.decode("utf-8")
    assert SECRET not in text and "Traceback" not in text and "\x1b" not in text, label
    assert len(body) < 20_000, f"{label}: a {len(body)}-byte answer"
    reply = json.loads(text)
    if "error" in reply:
        assert reply["error"]["code"] in CODES, (label, reply)
    else:  # a tool error is a result with isError (the leaking tool)
        assert reply["result"]["isError"] is True, (label, reply)


@pytest.fixture(autouse=True)
def _known_secret() -> None:
    register_secrets([SECRET])


def start(client: Client) -> str:
    response = client.post("/mcp", data=json.dumps(INIT), headers={"Accept": ACCEPT}, content_type="application/json")
    session = str(response.headers["Mcp-Session-Id"])
    client.post("/mcp", data=b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
                headers={"Accept": ACCEPT, "Mcp-Session-Id": session}, content_type="application/json")
    return session


@pytest.mark.parametrize(("label", "body"), HOSTILE, ids=[label for label, _ in HOSTILE])
def test_each_hostile_message_over_http_gets_a_clean_error_and_the_session_goes_on(label: str, body: bytes) -> None:
    client = Client(build().wsgi_app())
    session = start(client)
    headers = {"Accept": ACCEPT, "Mcp-Session-Id": session}
    response = client.post("/mcp", data=body, headers=headers, content_type="application/json")
    assert response.status_code in (200, 400), (label, response.status_code)
    check_answer(label, response.get_data())
    after = client.post("/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                                                  "params": {"name": "add", "arguments": {"a": 2, "b": 2}}}),
                        headers=headers, content_type="application/json")
    assert after.status_code == 200 and after.json["result"]["content"][0]["text"] == "4", label


def test_http_framing_abuse_is_refused_by_status() -> None:
    client = Client(build().wsgi_app())
    post = client.post
    assert post("/mcp", data=b"x" * (5 * 1024 * 1024), headers={"Accept": ACCEPT},
                content_type="application/json").status_code == 413
    assert post("/mcp", data=json.dumps(INIT), headers={"Accept": ACCEPT}, content_type="text/plain").status_code == 415
    assert post("/mcp", data=json.dumps(INIT), headers={"Accept": "image/png"},
                content_type="application/json").status_code == 406
    ping = b'{"jsonrpc": "2.0", "id": 2, "method": "ping"}'
    assert post("/mcp", data=ping, headers={"Accept": ACCEPT}, content_type="application/json").status_code == 400
    forged = post("/mcp", data=ping, headers={"Accept": ACCEPT, "Mcp-Session-Id": "s" * 100_000},
                  content_type="application/json")
    assert forged.status_code == 404 and len(forged.get_data()) < 1000
    assert post("/mcp", data=ping, headers={"Accept": ACCEPT, "Origin": "https://evil.example"},
                content_type="application/json").status_code == 403


def test_a_flood_of_notifications_leaves_the_server_answering() -> None:
    client = Client(build().wsgi_app())
    session = start(client)
    headers = {"Accept": ACCEPT, "Mcp-Session-Id": session}
    for n in range(2000):
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": n, "reason": "x" * 100}}
        assert client.post("/mcp", data=json.dumps(note), headers=headers,
                           content_type="application/json").status_code == 202
    ping = client.post("/mcp", data=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', headers=headers,
                       content_type="application/json")
    assert ping.status_code == 200 and ping.json["result"] == {}


def test_each_hostile_line_over_stdio_gets_a_clean_error_and_the_loop_goes_on() -> None:
    from yiemagent.mcp.server.stdio import serve_stdio

    lines = [json.dumps(INIT).encode(), b'{"jsonrpc": "2.0", "method": "notifications/initialized"}']
    lines += [body.replace(b"\n", b" ") for _, body in HOSTILE]
    lines.append(b'{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "add", '
                 b'"arguments": {"a": 2, "b": 2}}}')
    stdin, stdout = io.BytesIO(b"\n".join(lines) + b"\n"), io.BytesIO()
    done = threading.Thread(target=serve_stdio, args=(build(),), daemon=True,  # a client that reads after its EOF:
                            kwargs={"stdin": stdin, "stdout": stdout, "drain_seconds": 60})  # the requests may finish
    done.start()
    done.join(120)
    assert not done.is_alive()
    answers = [line for line in stdout.getvalue().split(b"\n") if line]
    replies = [json.loads(a) for a in answers]
    assert next(r for r in replies if r.get("id") == 1)["result"]["protocolVersion"] == "2025-11-25"
    for answer, reply in zip(answers, replies, strict=True):  # requests run concurrently: answers in any order
        if reply.get("id") not in (1, 99):
            check_answer(f"stdio answer {reply.get('id')!r}", answer)
    last = [r for r in replies if r.get("id") == 99]
    assert last and last[0]["result"]["content"][0]["text"] == "4"
    assert len(replies) == 1 + len(HOSTILE) + 1  # one answer per request line, none for the notification
