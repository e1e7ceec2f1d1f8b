"""Discovery and call latency of yiemagent's MCP client against a 50-tool server, beside two peers.

Usage::

    python scripts/bench_mcp.py [--runs 30] [--tools 50]

The server is tests/servers/paging_server.py (the official ``mcp`` SDK's low-level ``Server``,
Streamable HTTP, SSE replies, sessions) started with ``--tools 50 --page-size 0``: 50 tools in
one ``tools/list`` page. Three clients are measured:

- yiemagent ``MCPClient`` (blocking, ``requests``), in each era: negotiated (the server speaks
  2026-07-28: ``server/discover`` + ``tools/list``) and forced to the handshake
  (``protocol_version="2025-11-25"``: ``initialize``, ``notifications/initialized``, ``tools/list``);
- the official ``mcp`` SDK client (``mcp.Client(url, mode=...)``: async, run with asyncio), ``auto``
  (its 2026-07-28 probe) and ``legacy`` (the handshake);
- a plain ``requests`` client doing the handshake exchange by hand (the floor: no checks at all).

"discovery" = a cold client: connect, negotiate, ``tools/list`` (closing is not timed). "call" = one
``tools/call`` on a warm, connected client. Times are wall-clock milliseconds over ``--runs`` runs
(after 3 warm-up runs each): mean and median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# tests.helpers, yiemagent.mcp and asyncio are imported where used: a child process of bench_loop.py's MCP start-up
# table imports this module and times a raw requests client, which must not pay for them.

WARMUP = 3
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT_PARAMS = {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "bench-requests", "version": "0"}}


def timed(fn: Callable[[], Any], runs: int) -> list[float]:
    """Milliseconds of ``runs`` calls of ``fn`` after ``WARMUP`` untimed ones."""
    for _ in range(WARMUP):
        fn()
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


# --------------------------------------------------------------------------- yiemagent


def yiemagent_discovery(url: str, tools: int, version: str | None) -> Callable[[], None]:
    from yiemagent.mcp import MCPClient

    def run() -> None:
        client = MCPClient(url, timeout_seconds=10, protocol_version=version)
        try:
            assert len(client.list_tools()) == tools
        finally:
            client.close()

    return run


def yiemagent_calls(url: str, runs: int, version: str | None) -> list[float]:
    from yiemagent.mcp import MCPClient

    with MCPClient(url, timeout_seconds=10, protocol_version=version) as client:
        return timed(lambda: client.call_tool("tool_07"), runs)


# --------------------------------------------------------------------------- plain requests


def _rpc(session: requests.Session, url: str, message: dict[str, Any], headers: dict[str, str]) -> Any:
    response = session.post(url, json=message, headers=headers, timeout=10)
    response.raise_for_status()
    if "id" not in message:
        return None
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                return json.loads(line[5:])
    return response.json()


def _requests_connect(url: str) -> tuple[requests.Session, dict[str, str]]:
    session = requests.Session()
    init = session.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS},
                        headers=ACCEPT, timeout=10)
    init.raise_for_status()
    headers = {**ACCEPT, "MCP-Protocol-Version": "2025-11-25"}
    if "Mcp-Session-Id" in init.headers:
        headers["Mcp-Session-Id"] = init.headers["Mcp-Session-Id"]
    _rpc(session, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    return session, headers


def requests_discovery(url: str, tools: int) -> Callable[[], None]:
    def run() -> None:
        session, headers = _requests_connect(url)
        listed = _rpc(session, url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers)
        assert len(listed["result"]["tools"]) == tools
        session.delete(url, headers=headers, timeout=10)
        session.close()

    return run


def requests_calls(url: str, runs: int) -> list[float]:
    session, headers = _requests_connect(url)
    message = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "tool_07", "arguments": {}}}
    try:
        return timed(lambda: _rpc(session, url, message, headers), runs)
    finally:
        session.delete(url, headers=headers, timeout=10)
        session.close()


# --------------------------------------------------------------------------- the official mcp SDK (async)


def sdk_discovery(url: str, tools: int, runs: int, mode: str, warmup: int = WARMUP) -> list[float]:
    import asyncio

    from mcp import Client

    async def once() -> float:
        start = time.perf_counter()
        async with Client(url, mode=mode) as client:
            listed = await client.list_tools()
            elapsed = (time.perf_counter() - start) * 1000
        assert len(listed.tools) == tools
        return elapsed

    async def main() -> list[float]:
        for _ in range(warmup):
            await once()
        return [await once() for _ in range(runs)]

    return asyncio.run(main())


def sdk_calls(url: str, runs: int, mode: str) -> list[float]:
    import asyncio

    from mcp import Client

    async def main() -> list[float]:
        async with Client(url, mode=mode) as client:
            out = []
            for index in range(WARMUP + runs):
                start = time.perf_counter()
                await client.call_tool("tool_07", {})
                if index >= WARMUP:
                    out.append((time.perf_counter() - start) * 1000)
            return out

    return asyncio.run(main())


# --------------------------------------------------------------------------- main


def cell(values: list[float]) -> str:
    return f"{statistics.mean(values):7.2f} / {statistics.median(values):7.2f}"


def main(argv: list[str] | None = None) -> int:
    from tests.helpers import free_port, start_process, stop_process, wait_for_port

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--tools", type=int, default=50)
    args = parser.parse_args(argv)
    port = free_port()
    server: subprocess.Popen[bytes] = start_process(
        [sys.executable, str(ROOT / "tests" / "servers" / "paging_server.py"), "--port", str(port),
         "--tools", str(args.tools), "--page-size", "0"])
    try:
        wait_for_port(port, timeout_seconds=20, process=server)
        url = f"http://127.0.0.1:{port}/mcp"
        rows = {
            "discovery (cold: negotiate + tools/list)": {
                "yiemagent 2026": timed(yiemagent_discovery(url, args.tools, None), args.runs),
                "yiemagent 2025": timed(yiemagent_discovery(url, args.tools, "2025-11-25"), args.runs),
                "SDK auto": sdk_discovery(url, args.tools, args.runs, "auto"),
                "SDK legacy": sdk_discovery(url, args.tools, args.runs, "legacy"),
                "requests": timed(requests_discovery(url, args.tools), args.runs),
            },
            "call (warm tools/call)": {
                "yiemagent 2026": yiemagent_calls(url, args.runs, None),
                "yiemagent 2025": yiemagent_calls(url, args.runs, "2025-11-25"),
                "SDK auto": sdk_calls(url, args.runs, "auto"),
                "SDK legacy": sdk_calls(url, args.runs, "legacy"),
                "requests": requests_calls(url, args.runs),
            },
        }
    finally:
        stop_process(server)
    print(f"MCP client latency, {args.tools}-tool server (mcp SDK low-level Server, SSE replies), "
          f"{args.runs} runs; ms mean / median")
    names = ["yiemagent 2026", "yiemagent 2025", "SDK auto", "SDK legacy", "requests"]
    print(f"{'':42}" + "".join(f"{name:>20}" for name in names))  # 2026: 2026-07-28 negotiated; 2025: handshake
    for label, by_client in rows.items():
        print(f"{label:42}" + "".join(f"{cell(by_client[name]):>20}" for name in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
