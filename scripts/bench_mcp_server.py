"""``tools/call`` latency and throughput of yiemagent's MCP server beside the ``mcp`` SDK's and fastmcp's (issue 28).

Usage::

    python scripts/bench_mcp_server.py [--calls 300] [--threads 8] [--rounds 5]

Each server serves one tool, ``add(a, b)``, over Streamable HTTP at ``/mcp`` on loopback, each in its own
process, as it is deployed:

- **yiemagent**: ``MCPServer(...).wsgi_app()`` under gunicorn (``-k gthread``, 1 worker, 8 threads), the
  2025-11-25 handshake with sessions; and ``stateless=True``;
- **mcp SDK** (2.x): ``mcp.server.mcpserver.MCPServer`` (``streamable_http_app(json_response=True)``) under
  uvicorn;
- **fastmcp**: ``fastmcp.FastMCP`` (4.x) ``http_app()`` under uvicorn.

One client for all: a ``requests.Session`` that does the 2025-11-25 handshake (``initialize``,
``notifications/initialized``), then times ``tools/call``: **latency** = ``--calls`` sequential calls
(median, p10, p90 in ms); **throughput** = ``--threads`` threads, each with its own session, making
``--calls`` calls in all (calls per second). The servers are measured in turns, their order rotating
each round (``--rounds``), so that other load falls on all alike; ratios are to yiemagent. The load
average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}

# ------------------------------------------------------------------ the servers (run in child processes)


def yiemagent_app(stateless: bool = False) -> Any:
    """The WSGI app gunicorn serves (``scripts.bench_mcp_server:yiemagent_wsgi``)."""
    sys.path.insert(0, str(ROOT))
    from yiemagent.mcp.server import MCPServer
    from yiemagent.tools import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return MCPServer("bench", "1.0", tools=[add]).wsgi_app(stateless=stateless)


def serve_asgi(kind: str, port: int) -> None:
    import uvicorn

    if kind == "sdk":
        from mcp.server.mcpserver import MCPServer as SdkServer

        sdk = SdkServer("bench", log_level="WARNING")

        @sdk.tool()
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        app = sdk.streamable_http_app(json_response=True)
    else:
        from fastmcp import FastMCP

        fast = FastMCP("bench")

        @fast.tool(name="add")
        def add_fast(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        app = fast.http_app(path="/mcp")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(kind: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start server ``kind`` (``yiemagent``, ``yiemagent-stateless``, ``sdk``, ``fastmcp``); its process and URL."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if kind.startswith("yiemagent"):
        target = "scripts.bench_mcp_server:" + ("stateless_wsgi" if kind.endswith("stateless") else "yiemagent_wsgi")
        command = [sys.executable, "-m", "gunicorn", "-k", "gthread", "--workers", "1", "--threads", "8",
                   "--bind", f"127.0.0.1:{port}", "--log-level", "warning", target]
    else:
        command = [sys.executable, __file__, "--serve", kind, "--port", str(port)]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{kind} server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{kind} server did not start in 60 s")


# ------------------------------------------------------------------ the client


def _post(session: requests.Session, url: str, body: dict[str, Any]) -> Any:
    response = session.post(url, data=json.dumps(body), headers=ACCEPT, timeout=30)
    response.raise_for_status()
    if response.headers.get("Mcp-Session-Id"):
        session.headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        datas = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(datas[-1]) if datas else None
    return response.json() if response.content else None


def connect(url: str) -> requests.Session:
    session = requests.Session()
    _post(session, url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
    session.headers["MCP-Protocol-Version"] = "2025-11-25"
    _post(session, url, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return session


def call(session: requests.Session, url: str, n: int) -> None:
    reply = _post(session, url, {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                 "params": {"name": "add", "arguments": {"a": n, "b": 1}}})
    text = reply["result"]["content"][0]["text"]
    if text != str(n + 1):
        raise RuntimeError(f"add({n}, 1) answered {text!r}")


def latency_ms(url: str, calls: int) -> list[float]:
    session = connect(url)
    for n in range(5):
        call(session, url, n)
    out = []
    for n in range(calls):
        started = time.perf_counter()
        call(session, url, n)
        out.append((time.perf_counter() - started) * 1000)
    session.close()
    return out


def throughput(url: str, calls: int, threads: int) -> float:
    sessions = [connect(url) for _ in range(threads)]
    per = max(1, calls // threads)

    def work(session: requests.Session) -> None:
        for n in range(per):
            call(session, url, n)

    workers = [threading.Thread(target=work, args=(s,)) for s in sessions]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - started
    for session in sessions:
        session.close()
    return per * threads / seconds


# ------------------------------------------------------------------ main


def _available(kind: str) -> str | None:
    modules = {"sdk": "mcp", "fastmcp": "fastmcp", "yiemagent": "gunicorn",
               "yiemagent-stateless": "gunicorn"}
    import importlib.util

    name = modules[kind]
    return None if importlib.util.find_spec(name.split(".")[0]) is not None else f"not installed ({name})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", choices=["sdk", "fastmcp"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_asgi(args.serve, args.port)
        return 0
    kinds = ["yiemagent", "yiemagent-stateless", "sdk", "fastmcp"]
    print(f"bench_mcp_server: Python {sys.version.split()[0]}, {os.cpu_count()} cores, "
          f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{args.calls} calls, {args.threads} threads, {args.rounds} rounds", flush=True)
    servers: dict[str, str] = {}
    processes = []
    skipped = {}
    try:
        for kind in kinds:
            reason = _available(kind)
            if reason:
                skipped[kind] = reason
                continue
            process, url = start(kind)
            processes.append(process)
            servers[kind] = url
        lat: dict[str, list[float]] = {k: [] for k in servers}
        rate: dict[str, list[float]] = {k: [] for k in servers}
        order = list(servers)
        for round_number in range(args.rounds):
            turn = order[round_number % len(order):] + order[:round_number % len(order)]
            for kind in turn:
                lat[kind] += latency_ms(servers[kind], args.calls)
                rate[kind].append(throughput(servers[kind], args.calls, args.threads))
        base_lat = statistics.median(lat["yiemagent"]) if "yiemagent" in lat else None
        base_rate = statistics.median(rate["yiemagent"]) if "yiemagent" in rate else None
        print(f"\n{'server':<26}{'median ms':>10}{'p10':>8}{'p90':>8}{'x latency':>11}{'calls/s':>10}"
              f"{'x calls/s':>11}")
        for kind in servers:
            values = sorted(lat[kind])
            median = statistics.median(values)
            p10, p90 = values[len(values) // 10], values[len(values) * 9 // 10]
            per_second = statistics.median(rate[kind])
            print(f"{kind:<26}{median:>10.3f}{p10:>8.3f}{p90:>8.3f}"
                  f"{median / base_lat if base_lat else float('nan'):>11.2f}{per_second:>10.0f}"
                  f"{per_second / base_rate if base_rate else float('nan'):>11.2f}")
        for kind, reason in skipped.items():
            print(f"{kind:<26}{reason}")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
    print(f"\nload average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ != "__main__" and os.environ.get("BENCH_MCP_SERVER_APPS") != "0" and "gunicorn" in sys.modules:
    yiemagent_wsgi = yiemagent_app()
    stateless_wsgi = yiemagent_app(stateless=True)

if __name__ == "__main__":
    sys.exit(main())
