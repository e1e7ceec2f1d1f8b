"""A real MCP server on the low-level ``mcp.server.lowlevel.Server`` that pages ``tools/list``.

Run::

    python tests/servers/paging_server.py --port P [--tools N] [--page-size N]

By default 60 tools ``tool_00`` .. ``tool_59``, 20 per page; ``nextCursor`` is the index of
the next page's first tool as a string ("20", "40"), absent on the last page. A cursor that
is not one of these is answered with JSON-RPC error -32602. ``tools/call`` of any listed
tool answers one text block: the tool's name. ``--page-size 0`` lists every tool at once
(scripts/bench_mcp.py runs ``--tools 50 --page-size 0``).
"""

from __future__ import annotations

import argparse
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

TOOL_COUNT = 60
PAGE_SIZE = 20


def _tools(count: int) -> list[types.Tool]:
    return [
        types.Tool(
            name=f"tool_{i:02d}",
            description=f"Test tool number {i}.",
            input_schema={"type": "object", "properties": {}},
        )
        for i in range(count)
    ]


TOOLS = _tools(TOOL_COUNT)
NAMES = {tool.name for tool in TOOLS}


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    cursor = params.cursor if params is not None else None
    if PAGE_SIZE <= 0:
        if cursor is None:
            return types.ListToolsResult(tools=TOOLS)
        raise MCPError(code=types.INVALID_PARAMS, message=f"invalid cursor {cursor!r} (no paging)")
    if cursor is None:
        start = 0
    elif cursor.isdigit() and int(cursor) % PAGE_SIZE == 0 and 0 < int(cursor) < TOOL_COUNT:
        start = int(cursor)
    else:
        raise MCPError(code=types.INVALID_PARAMS, message=f"invalid cursor {cursor!r}")
    end = start + PAGE_SIZE
    return types.ListToolsResult(tools=TOOLS[start:end], next_cursor=str(end) if end < TOOL_COUNT else None)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name not in NAMES:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"unknown tool {params.name}")],
                                    is_error=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])


def main() -> None:
    global TOOL_COUNT, PAGE_SIZE, TOOLS, NAMES
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tools", type=int, default=TOOL_COUNT)
    parser.add_argument("--page-size", type=int, default=PAGE_SIZE)
    args = parser.parse_args()
    TOOL_COUNT, PAGE_SIZE = args.tools, args.page_size
    TOOLS = _tools(TOOL_COUNT)
    NAMES = {tool.name for tool in TOOLS}
    srv = Server("yiemagent-test-paging-server", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
    uvicorn.run(srv.streamable_http_app(host="127.0.0.1"), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
