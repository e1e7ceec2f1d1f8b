"""``python -m yiemagent.mcp.server module:attribute``: serve an ``MCPServer`` on stdin/stdout.

``module`` is imported (the current directory is on ``sys.path``), ``attribute``
names an ``MCPServer`` or a function returning one. Logs go to stderr
(``--log-level``, default WARNING); stdout carries only the protocol. When
stdin ends (the client's shutdown) the calls still running are cancelled and
the process exits at once; ``--drain-seconds N`` lets them finish for N seconds
first (requests piped in by a script that reads the answers afterwards). Exit
status: 0 when stdin ends, 2 for a bad argument.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from ...tools import AgentTool
from .server import MCPServer


def load(target: str) -> MCPServer:
    """The ``MCPServer`` named by ``module:attribute``.

    Raises:
        ValueError: ``target`` is not ``module:attribute`` or names no ``MCPServer``.
        ImportError: the module cannot be imported.
    """
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected module:attribute, not {target!r}")
    value = importlib.import_module(module_name)
    for part in attribute.split("."):
        value = getattr(value, part)
    if isinstance(value, AgentTool):  # a @tool function is callable too, but not a server factory
        raise ValueError(f"{target} is a tool, not an MCPServer: serve MCPServer(name, tools=[{attribute}])")
    if callable(value) and not isinstance(value, MCPServer):
        try:
            value = value()
        except TypeError as exc:
            raise ValueError(f"{target} is not an MCPServer or a function of no arguments returning one ({exc})"
                             ) from None
    if not isinstance(value, MCPServer):
        raise ValueError(f"{target} is {type(value).__name__}, not an MCPServer")
    return value


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, load the server, serve stdio; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m yiemagent.mcp.server",
                                     description="Serve a yiemagent MCPServer over stdio.")
    parser.add_argument("target", help="module:attribute naming an MCPServer (or a function returning one)")
    parser.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")
    parser.add_argument("--drain-seconds", type=float, default=0.0,
                        help="after stdin ends, seconds running calls may finish before they are cancelled (default 0)")
    args = parser.parse_args(argv)
    if not 0 <= args.drain_seconds < float("inf"):
        parser.error(f"--drain-seconds must be a finite number >= 0, not {args.drain_seconds}")
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        server = load(args.target)
    except (ValueError, ImportError, AttributeError) as exc:
        print(f"python -m yiemagent.mcp.server: {exc}", file=sys.stderr)
        return 2
    server.run_stdio(drain_seconds=args.drain_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
