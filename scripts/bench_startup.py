"""Start-up tables of ``scripts/bench_loop.py``: each measured in a fresh child interpreter.

- ``table_import`` (section ``import``): ``import yiemagent`` beside importing its dependencies
  (requests, jsonschema, tenacity, dataclasses_json), in alternating fresh interpreters.
- ``table_mcp`` (section ``mcp``): process start to 50 tools listed by a cold MCP client against
  ``tests/servers/paging_server.py``: yiemagent's ``MCPClient`` (negotiated, and with the 2025-11-25
  handshake), raw ``requests``, and when installed the mcp SDK's client and fastmcp's.

``child_seconds`` runs one child with the repository and ``scripts/`` on its ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _path in (str(ROOT), str(HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench_peers import Table, interleaved, spread, target  # noqa: E402

# --------------------------------------------------------------------------- 4. import


def child_seconds(code: str, env: dict[str, str] | None = None) -> float:
    """Run ``code`` in a fresh interpreter; it prints a float (seconds), returned."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)]), **(env or {})})
    if out.returncode != 0:
        raise RuntimeError(f"child failed: {out.stderr.strip()[-2000:]}")
    return float(out.stdout.strip().splitlines()[-1])


IMPORT_CODE = "import time; t = time.perf_counter(); import {}; print(time.perf_counter() - t)"


def table_import(runs: int) -> Table:
    table = Table(f"4. import in a fresh interpreter (median of {runs} runs, alternating; ms)",
                  ["import", "ms", "p10", "p90", "vs deps", "target"])
    values = interleaved({"yiemagent": lambda: child_seconds(IMPORT_CODE.format("yiemagent")) * 1000,
                          "requests, jsonschema, tenacity, dataclasses_json": lambda: child_seconds(
                              IMPORT_CODE.format("requests, jsonschema, tenacity, dataclasses_json")) * 1000},
                         runs, warmup=False)
    deps = statistics.median(values["requests, jsonschema, tenacity, dataclasses_json"])
    for name, times in values.items():
        median, p10, p90 = spread(times)
        goal = target(median / deps <= 1.3, "<= 1.3x deps") if name == "yiemagent" else None
        table.rows.append([name, median, p10, p90, median / deps, goal])
    return table


# --------------------------------------------------------------------------- 5. MCP start-up


MCP_CHILD = "import time, bench_mcp, bench_peers; {}; print(time.time())"
MCP_CLIENTS = {
    "yiemagent MCPClient (negotiated)": "bench_mcp.yiemagent_discovery({url!r}, {tools}, None)()",
    "yiemagent MCPClient (2025-11-25 handshake)": "bench_mcp.yiemagent_discovery({url!r}, {tools}, '2025-11-25')()",
    "raw requests (handshake)": "bench_mcp.requests_discovery({url!r}, {tools})()",
    "mcp SDK Client (legacy)": "bench_mcp.sdk_discovery({url!r}, {tools}, 1, 'legacy', warmup=0)",
    "fastmcp Client": "bench_peers.fastmcp_listing({url!r}, {tools})",
}


def table_mcp(runs: int, tools: int = 50) -> Table:
    import importlib.util

    from tests.helpers import free_port, start_process, stop_process, wait_for_port

    table = Table(f"5. MCP start-up: process start to {tools} tools listed (cold client in a fresh interpreter; "
                  f"median of {runs} runs, alternating; ms)", ["client", "ms", "p10", "p90", "vs requests", "target"])
    clients = dict(MCP_CLIENTS)
    for name, module in (("mcp SDK Client (legacy)", "mcp"), ("fastmcp Client", "fastmcp")):
        if importlib.util.find_spec(module) is None:
            del clients[name]
            table.notes.append(f"{name}: not installed (pip install {module})")
    port = free_port()
    server = start_process([sys.executable, str(ROOT / "tests" / "servers" / "paging_server.py"), "--port",
                            str(port), "--tools", str(tools), "--page-size", "0"])
    try:
        wait_for_port(port, timeout_seconds=20, process=server)
        url = f"http://127.0.0.1:{port}/mcp"

        def measure(call: str) -> Callable[[], float]:
            def run() -> float:
                started = time.time()
                return (child_seconds(MCP_CHILD.format(call.format(url=url, tools=tools))) - started) * 1000
            return run

        values = interleaved({name: measure(call) for name, call in clients.items()}, runs)
    finally:
        stop_process(server)
    raw = statistics.median(values["raw requests (handshake)"])
    for name, times in values.items():
        median, p10, p90 = spread(times)
        goal = target(median / raw <= 1.3, "<= 1.3x raw requests") if name.startswith("yiemagent") else None
        table.rows.append([name, median, p10, p90, median / raw, goal])
    return table
