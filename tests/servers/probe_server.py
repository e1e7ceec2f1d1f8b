"""A real MCP server on the official ``mcp`` SDK that reports how it was started (config-file tests).

Run::

    python tests/servers/probe_server.py [ARG ...]                 # stdio
    python tests/servers/probe_server.py --http PORT [ARG ...]     # Streamable HTTP on /mcp

Tools:
    argv()            -> JSON list: the arguments after the script name, as the process got them
    env(name)         -> the value of environment variable ``name``, or "<unset>"
    cwd()             -> the working directory
    headers()         -> JSON object: the HTTP request headers of this call (lower-case names); {} on stdio
    wait(seconds)     sleeps, then -> "waited <seconds>"
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("yiemagent-probe", version="1.0.0", log_level="WARNING")
_ARGV: list[str] = []


@server.tool()
def argv() -> str:
    """The server's command-line arguments as a JSON list."""
    return json.dumps(_ARGV)


@server.tool()
def env(name: str) -> str:
    """The value of one environment variable of the server process."""
    return os.environ.get(name, "<unset>")


@server.tool()
def cwd() -> str:
    """The server's working directory."""
    return os.getcwd()


@server.tool()
def headers(ctx: Context) -> str:
    """The HTTP headers of this request as a JSON object."""
    found = ctx.headers or {}
    return json.dumps({str(k).lower(): str(v) for k, v in found.items()})


@server.tool()
async def wait(seconds: float) -> str:
    """Sleep ``seconds``, then answer."""
    await asyncio.sleep(seconds)
    return f"waited {seconds:g}"


def main() -> None:
    args = sys.argv[1:]
    port = None
    if args[:1] == ["--http"]:
        port, args = int(args[1]), args[2:]
    _ARGV[:] = sys.argv[1:]
    if port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
