"""Every per-client resource of the served app is bounded per client (issue 33 point 2), and a stdio server exits
when its client closes stdin (point 7; modelcontextprotocol/typescript-sdk PR #1613, mongodb-js/mongodb-mcp-server
PR #1517: exit at once, cancel what runs).

In-process through werkzeug's test client (the real app): calls in flight per session (one session's flood is
refused 429, another session is served), notifications buffered for a client that does not read, questions
waiting per session, request bodies nested deeply (also behind ``BearerAuth``, which reads the body before the
app: a ``RecursionError`` there was a 500). The stdio case runs ``python -m yiemagent.mcp.server`` as a desktop
client does.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tests.helpers import PYTHON
from tests.mcp.server.test_client_leaves import BOUND_SECONDS, wait_for
from tests.mcp.server.test_wsgi import post, start
from tests.servers.leaving_wsgi import build
from yiemagent._internal.jsonload import loads_bounded
from yiemagent.mcp.server import MCPServer, ServerSession, current_call
from yiemagent.mcp.server.calls import MAX_PENDING_QUESTIONS
from yiemagent.mcp.server.inputs import InputUnavailable, elicitation_request
from yiemagent.tools import tool


def _deep(depth: int) -> bytes:
    return b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "x", "arguments": ' + (
        b"[" * depth + b"]" * depth) + b"}}"


def test_loads_bounded_refuses_deep_nesting_with_a_value_error_never_a_recursion_error() -> None:
    assert loads_bounded('{"a": [[1]]}', 3) == {"a": [[1]]}
    for depth in (4, 5_000, 200_000):
        text = "[" * depth + "]" * depth
        with pytest.raises(ValueError, match="nested"):
            loads_bounded(text, 3)
    with pytest.raises(ValueError):
        loads_bounded("{not json", 3)


def test_a_body_nested_deeply_is_a_clean_400_behind_bearer_auth_too() -> None:
    from tests.mcp.server.test_auth import protected, token

    for app in (MCPServer("s", "1").wsgi_app(stateless=True), protected()):
        client = Client(app)
        for depth in (200, 100_000):
            response = client.post("/mcp", data=_deep(depth), content_type="application/json",
                                   headers={"Accept": "application/json, text/event-stream",
                                            "Authorization": f"Bearer {token()}"})
            assert response.status_code == 400, (type(app).__name__, depth, response.status_code)
            assert response.json["error"]["code"] == -32700 and "nested" in response.json["error"]["message"]


def test_one_session_gets_only_its_share_of_calls_in_flight(tmp_path: Path) -> None:
    client = Client(build(tmp_path).wsgi_app(max_calls_per_session=2))
    greedy, other = start(client), start(client)
    answers: list[Any] = []
    workers = [threading.Thread(target=lambda n=n: answers.append(post(client, {
        "jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "wait_for_abort",
                                                                      "arguments": {"tag": f"greedy-{n}"}}}, greedy)))
        for n in (1, 2)]
    for worker in workers:
        worker.start()
    assert wait_for(tmp_path / "greedy-1.started") and wait_for(tmp_path / "greedy-2.started")
    add = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}
    refused = post(client, add, greedy)
    assert refused.status_code == 429 and refused.json["error"]["code"] == -32603 and refused.json["id"] == 3
    served = post(client, add, other)
    assert served.status_code == 200 and served.json["result"]["content"][0]["text"] == "5"
    for n in (1, 2):
        assert post(client, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": n}},
                    greedy).status_code == 202
    for worker in workers:
        worker.join(BOUND_SECONDS)
    assert [a.json["error"]["code"] for a in answers] == [-32800, -32800]
    assert post(client, add, greedy).json["result"]["content"][0]["text"] == "5"  # its share is back


@pytest.mark.parametrize("accept", ["application/json", "application/json, text/event-stream"])
def test_a_call_past_max_call_seconds_is_cancelled_and_its_client_answered(tmp_path: Path, accept: str) -> None:
    """How long one client may hold a thread while it stays: ``WSGIApp(max_call_seconds=)``."""
    client = Client(build(tmp_path).wsgi_app(max_call_seconds=1))
    session = start(client)
    tag = f"late-{len(accept)}"
    progress = {"_meta": {"progressToken": "p"}} if "event-stream" in accept else {}
    answer = post(client, {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                           "params": {"name": "progress_then_wait", "arguments": {"tag": tag}, **progress}},
                  session, Accept=accept)
    assert answer.status_code == 200
    text = answer.get_data(as_text=True)
    reply = json.loads(text if accept == "application/json" else text.rsplit("data: ", 1)[1])
    assert reply["id"] == 8 and reply["error"]["code"] == -32800 and "longer than 1 s" in reply["error"]["message"]
    assert wait_for(tmp_path / f"{tag}.aborted")
    with pytest.raises(ValueError, match="max_call_seconds"):
        build(tmp_path).wsgi_app(max_call_seconds=float("nan"))


def test_notifications_for_a_client_that_does_not_read_are_bounded() -> None:
    sent = threading.Event()

    @tool
    def chatty() -> str:
        """Log 5,000 messages, then answer."""
        call = current_call()
        assert call is not None
        for n in range(5000):
            call.log("info", f"line {n}")
        sent.set()
        return "done"

    client = Client(MCPServer("s", "1", tools=[chatty]).wsgi_app(max_buffered_messages=100))
    session = start(client)
    response = client.post("/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                    "params": {"name": "chatty"}}),
                           headers={"Accept": "application/json, text/event-stream", "Mcp-Session-Id": session},
                           content_type="application/json", buffered=False)
    assert sent.wait(BOUND_SECONDS)  # every message sent before the client reads one more
    events = [json.loads(line[6:]) for line in response.get_data().decode().splitlines() if line.startswith("data: ")]
    assert events[-1]["result"]["content"][0]["text"] == "done"
    assert 1 < len(events) <= 1 + 1 + 100  # the first message, at most 100 buffered, the reply


def test_questions_waiting_in_one_session_are_bounded() -> None:
    session = ServerSession()
    stop = threading.Event()
    asked = threading.Semaphore(0)

    def send(message: dict[str, Any]) -> None:
        asked.release()

    waiting = [threading.Thread(target=lambda: _ask(session, send, stop), daemon=True)
               for _ in range(MAX_PENDING_QUESTIONS)]
    for thread in waiting:
        thread.start()
    for _ in waiting:
        assert asked.acquire(timeout=BOUND_SECONDS)
    with pytest.raises(InputUnavailable, match="waiting"):
        session.ask(elicitation_request("one more?", {"type": "object", "properties": {}}), send, 60, threading.Event())
    stop.set()
    for thread in waiting:
        thread.join(BOUND_SECONDS)
    assert session.asked == {}


def _ask(session: ServerSession, send: Any, stop: threading.Event) -> None:
    try:
        session.ask(elicitation_request("ok?", {"type": "object", "properties": {}}), send, 60, stop)
    except InputUnavailable:
        pass


@pytest.mark.slow
def test_a_stdio_server_exits_when_its_client_closes_stdin_and_cancels_the_running_call(tmp_path: Path) -> None:
    """The client's shutdown (MCP "Lifecycle", stdio: close the server's input, wait for it to exit). Before,
    the server waited 10 s for the running call before it exited; the bound below is half of that.
    """
    process = subprocess.Popen([PYTHON, "-m", "yiemagent.mcp.server", "tests.servers.leaving_wsgi:stdio_server"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env={**os.environ, "YIEMAGENT_LEAVING_MARKS": str(tmp_path)},
                               cwd=str(Path(__file__).resolve().parents[3]))
    try:
        assert process.stdin is not None and process.stdout is not None
        for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "0"}}},
                        {"jsonrpc": "2.0", "method": "notifications/initialized"},
                        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "wait_for_abort", "arguments": {"tag": "stdio"}}}):
            process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        assert wait_for(tmp_path / "stdio.started", 60)
        closed = time.monotonic()
        process.stdin.close()
        process.wait(timeout=BOUND_SECONDS)
        took = time.monotonic() - closed
        print(f"the stdio server exited {took:.2f} s after its stdin closed")
        assert (tmp_path / "stdio.aborted").exists(), "the running call was not cancelled"
        assert process.returncode == 0 and took < 5.0
        assert process.stdout.read() == b""  # a cancelled call is not answered
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()


@pytest.mark.parametrize("how", ["DELETE", "expired"])
def test_a_call_whose_session_ends_still_answers_its_waiting_client(tmp_path: Path, how: str) -> None:
    """The session ends while a call runs (DELETE, or expired past ``idle_seconds`` and dropped for a new one;
    a busy session that has not expired is never dropped: tests/mcp/server/test_identity.py): the call is
    cancelled, and its POST, still open, gets -32800 (before: 202 with an empty body).
    """
    from yiemagent.mcp.server import MemorySessions

    client = Client(build(tmp_path).wsgi_app(sessions=MemorySessions(max_sessions=1, idle_seconds=1.0)))
    session = start(client)
    answers: list[Any] = []
    worker = threading.Thread(target=lambda: answers.append(post(client, {
        "jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "wait_for_abort", "arguments": {"tag": how}}}, session, Accept="application/json")))
    worker.start()
    assert wait_for(tmp_path / f"{how}.started")
    if how == "DELETE":
        assert client.delete("/mcp", headers={"Mcp-Session-Id": session}).status_code == 200
    else:
        time.sleep(1.5)  # past idle_seconds: the first session has expired
        start(client)  # a second session: the expired first one is dropped for it
    worker.join(BOUND_SECONDS)
    assert wait_for(tmp_path / f"{how}.aborted")
    assert answers and answers[0].status_code == 200
    assert answers[0].get_json() == {"jsonrpc": "2.0", "id": 6,
                                     "error": {"code": -32800, "message": "Request cancelled"}}
