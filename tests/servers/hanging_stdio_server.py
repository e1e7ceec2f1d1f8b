"""A stdio MCP server (stdlib only) that never answers the methods named with ``--hang``.

Why not a real server: no real server hangs its ``server/discover``, ``initialize`` or ``tools/list`` on
demand; a wedged or overloaded one does, and that is the wait under test (an abort must cut it).

    python hanging_stdio_server.py [--modern] [--hang METHOD ...] [--log FILE]

Otherwise it answers like a small server: ``server/discover`` (with ``--modern``: a 2026-07-28
``DiscoverResult``; without: JSON-RPC -32601, so the client falls back to ``initialize``),
``initialize`` (2025-11-25), ``tools/list`` (one tool, ``noop``), ``ping``. Every method received is
appended to ``FILE``, one per line, so a test can count what really reached the server.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

MODERN = "2026-07-28"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--modern", action="store_true")
    parser.add_argument("--hang", action="append", default=[])
    parser.add_argument("--log")
    args = parser.parse_args()
    tools = [{"name": "noop", "inputSchema": {"type": "object"}}]
    capabilities = {"tools": {}}
    info = {"name": "hanging", "version": "1"}

    def send(message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method = message.get("method")
        if method is None:
            continue
        if args.log:
            with open(args.log, "a", encoding="utf-8") as log:
                log.write(method + "\n")
        if "id" not in message or method in args.hang:
            continue
        result: dict[str, Any] | None = None
        if method == "server/discover" and args.modern:
            result = {"supportedVersions": [MODERN], "capabilities": capabilities,
                      "_meta": {"io.modelcontextprotocol/serverInfo": info}}
        elif method == "initialize" and not args.modern:
            result = {"protocolVersion": "2025-11-25", "capabilities": capabilities, "serverInfo": info}
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "ping":
            result = {}
        if args.modern and result is not None:
            result["resultType"] = "complete"
        if result is None:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no such method"}})
        else:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main()
