"""A real MCP server on the official ``mcp`` SDK's low-level ``Server``, over stdio, listing loose schemas.

Run::

    python tests/servers/loose_schema_server.py

Tools (their ``inputSchema`` is sent exactly as written here, as servers built
from loose zod or OpenAPI specs do):
    tagger   ``{"tags": {"type": "array"}, "meta": {"type": "object", "properties": {"ids": {"type": "array"}}}}``
             (arrays without ``items``, top level and nested; case N02) -> "tagged <len(tags)>"
    LONG_NAME (70 characters) ``{}`` -> "long ok" (names longer than OpenAI's 64)
    nothing  ``{}`` -> a result with ``content: []`` (an empty result)
"""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TAGGER_SCHEMA = {
    "type": "object",
    "properties": {"tags": {"type": "array"},
                   "meta": {"type": "object", "properties": {"ids": {"type": "array"}}}},
    "required": ["tags"],
}


LONG_NAME = "fetch_quarterly_revenue_report_for_region_and_product_line_" + "x" * 11


async def list_tools(ctx, params):  # type: ignore[no-untyped-def]
    return types.ListToolsResult(tools=[
        types.Tool(name="tagger", description="Tag things.", input_schema=TAGGER_SCHEMA),
        types.Tool(name=LONG_NAME, description="A tool with a long name.", input_schema={"type": "object"}),
        types.Tool(name="nothing", description="Returns nothing.", input_schema={"type": "object"}),
    ])


async def call_tool(ctx, params):  # type: ignore[no-untyped-def]
    arguments = params.arguments or {}
    if params.name == "tagger":
        text = f"tagged {len(arguments['tags'])}"
    elif params.name == "nothing":
        return types.CallToolResult(content=[])
    else:
        text = "long ok"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("loose-schemas", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
