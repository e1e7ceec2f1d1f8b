"""A real MCP server on PyPI ``fastmcp`` (4.x) that pages ``tools/list``, Streamable HTTP on ``/mcp``.

Run::

    python tests/servers/fastmcp_server.py --port P

``FastMCP("yiemagent-fastmcp", list_page_size=25)``: 64 tools over 3 pages (25, 25, 14) with
fastmcp's opaque base64 cursors. 60 are ``t_00`` .. ``t_59``; 4 have names OpenAI rejects:
``files.read``, ``weather report``, ``météo`` and a 70-character name. Each tool takes no
arguments and answers its own name, so a test can see which name reached the server.

Resources and prompts page the same way (issue 16): 30 resources ``res://r/00`` .. ``res://r/29``
(text ``resource NN``) and 30 prompts ``p_00`` .. ``p_29``: 2 pages each (25, 5).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from fastmcp import FastMCP

PAGE_SIZE = 25
ODD_NAMES = ["files.read", "weather report", "météo", "x" * 70]
NAMES = [f"t_{i:02d}" for i in range(60)] + ODD_NAMES
RESOURCES = 30


def _answers(name: str) -> Callable[[], str]:
    def tool() -> str:
        return name

    return tool


def build() -> FastMCP:
    """The server with every tool registered."""
    server = FastMCP("yiemagent-fastmcp", list_page_size=PAGE_SIZE)
    for name in NAMES:
        server.tool(_answers(name), name=name, description=f"Answers its own name ({name}).")
    for i in range(RESOURCES):
        server.resource(f"res://r/{i:02d}", name=f"r_{i:02d}", mime_type="text/plain")(_answers(f"resource {i:02d}"))
        server.prompt(name=f"p_{i:02d}")(_answers(f"prompt {i:02d}"))
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    build().run("http", host="127.0.0.1", port=args.port, show_banner=False, log_level="warning")


if __name__ == "__main__":
    main()
