"""A real stdio MCP server on the official ``mcp`` SDK (2.3, low-level ``Server``) that sends big things.

Run::

    python tests/servers/sdk_stdio_server.py [--many N]

The SDK does the framing, the handshake and the JSON-RPC envelopes (its own order of members), so the
tests see exactly what a real Python server writes; only the sizes are unusual. Tools:

    echo {"text"}                 -> the text
    big_structured {"chars"}      -> ``content: []`` and ``structuredContent: {"data": "x" * chars}``
    big_text {"chars"}            -> one text block of ``chars`` characters
    blob {"bytes"}                -> an embedded resource with a base64 ``blob`` of ``bytes`` bytes
    odd_images                    -> four image blocks: data as a whole ``data:`` URL, base64 wrapped at
                                     76 columns, text that is not base64, and a ``text/plain`` mimeType
    wordy                         a tool whose description has 1,000,000 characters
    deep_schema                   ``inputSchema`` nested 40 objects deep (80 levels of JSON)
    huge_schema                   ``inputSchema`` of about 200,000 characters (2,000 properties)
    <300 x "n">                   a tool whose name has 300 characters
    t000 ... t<N-1>               with ``--many N``: N more small tools
    get.data, get_data, get data, get-data, get_data (again)
                                  with ``--collide``: names that sanitise alike, and a duplicate;
                                  each answers with its own name
"""

from __future__ import annotations

import argparse
import base64
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


def _deep_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"inner": schema}}
    return schema


def _tools(many: int, collide: bool = False) -> list[types.Tool]:
    text_schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    number = {"type": "object", "properties": {"chars": {"type": "integer"}, "bytes": {"type": "integer"}}}
    tools = [
        types.Tool(name="echo", description="Echo the text", input_schema=text_schema),
        types.Tool(name="big_structured", description="structuredContent of N chars", input_schema=number),
        types.Tool(name="big_text", description="a text of N chars", input_schema=number),
        types.Tool(name="blob", description="a resource blob of N bytes", input_schema=number),
        types.Tool(name="odd_images", description="images in odd shapes", input_schema=OBJECT),
        types.Tool(name="wordy", description="w" * 1_000_000, input_schema=OBJECT),
        types.Tool(name="deep_schema", description="deep", input_schema=_deep_schema(40)),
        types.Tool(name="huge_schema", description="huge", input_schema={
            "type": "object", "properties": {f"p{i:04d}": {"type": "string", "description": "d" * 80}
                                             for i in range(2000)}}),
        types.Tool(name="n" * 300, description="long name", input_schema=OBJECT),
    ]
    tools += [types.Tool(name=f"t{i:03d}", description=f"tool {i}", input_schema=OBJECT) for i in range(many)]
    if collide:
        tools += [types.Tool(name=n, description=f"collide {i}", input_schema=OBJECT)
                  for i, n in enumerate(["get.data", "get_data", "get data", "get-data", "get_data"])]
    return tools


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--many", type=int, default=0)
    parser.add_argument("--collide", action="store_true")
    args = parser.parse_args()
    tools = _tools(args.many, args.collide)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        name = params.name
        if name == "big_structured":
            return types.CallToolResult(content=[], structured_content={"data": "x" * int(arguments["chars"])})
        if name == "big_text":
            return types.CallToolResult(content=[types.TextContent(text="y" * int(arguments["chars"]))])
        if name == "blob":
            data = base64.b64encode(b"\0" * int(arguments["bytes"])).decode("ascii")
            resource = types.BlobResourceContents(uri="file:///blob.bin", mime_type="application/octet-stream",
                                                  blob=data)
            return types.CallToolResult(content=[types.EmbeddedResource(resource=resource)])
        if name == "odd_images":
            png = base64.b64encode(TINY_PNG).decode("ascii")
            wrapped = base64.encodebytes(TINY_PNG * 4).decode("ascii")  # lines of 76 characters
            return types.CallToolResult(content=[
                types.ImageContent(data=f"data:image/png;base64,{png}", mime_type="image/png"),
                types.ImageContent(data=wrapped, mime_type="image/png"),
                types.ImageContent(data="not base64!!", mime_type="image/png"),
                types.ImageContent(data=png, mime_type="text/plain"),
            ])
        return types.CallToolResult(content=[types.TextContent(text=str(arguments.get("text", name)))])

    server = Server("sdk-stdio-big", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
