"""``serve_stdio``: newline-delimited JSON-RPC on a pair of pipes (issue 28 point 1), in-process."""

from __future__ import annotations

import io
import json
import os
import threading
from typing import Any

from tests.mcp.server.kit import build, waiting_tool
from yiemagent.mcp.server import MCPServer
from yiemagent.mcp.server.stdio import serve_stdio


def run(server: MCPServer, lines: list[Any], **options: Any) -> list[dict[str, Any]]:
    raw = b"".join((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines)
    out = io.BytesIO()
    options.setdefault("drain_seconds", 60)  # the lines all come before the end of stdin: let their calls finish
    serve_stdio(server, stdin=io.BytesIO(raw), stdout=out, **options)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_session_on_stdio() -> None:
    replies = run(build(), [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 1}}},
        b"{broken",
        b"",
        b"x" * 200,
    ], max_line_bytes=150)
    by_id = {r.get("id"): r for r in replies if "id" in r and r["id"] is not None}
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id[2]["result"]["content"] == [{"type": "text", "text": "2"}]
    errors = sorted(r["error"]["code"] for r in replies if r.get("id") is None)
    assert errors == [-32700, -32600]  # the broken line, the line over max_line_bytes


def test_cancellation_on_stdio_reaches_the_call() -> None:
    started = threading.Event()
    server = MCPServer("s", "1", tools=[waiting_tool(started)])
    read_end, write_end = os.pipe()
    out = io.BytesIO()
    stdin = open(read_end, "rb", buffering=0)
    thread = threading.Thread(target=serve_stdio, args=(server,), kwargs={"stdin": stdin, "stdout": out})
    thread.start()
    with open(write_end, "wb", buffering=0) as feed:
        feed.write(b'{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"wait_for_abort"}}\n')
        assert started.wait(30)
        feed.write(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}}\n')
        feed.write(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    thread.join(30)
    stdin.close()
    assert not thread.is_alive()
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert replies == [{"jsonrpc": "2.0", "id": 2, "result": {}}]  # the cancelled call is not answered
