"""The MCP server the official conformance suite's *server* scenarios test (``conformance server --url``).

Built with ``yiemagent.mcp.server.MCPServer`` and served by its WSGI app under werkzeug's threaded
server; it offers what the scenarios of ``@modelcontextprotocol/conformance`` 0.2.0-alpha.12 name
(``test_simple_text``, ``test://static-text``, ``test_simple_prompt``...: read from the suite's
scenario sources). Usage: ``python tests/servers/conformance_server.py --port PORT`` -> ``http://127.0.0.1:PORT/mcp``.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
from typing import Any

from yiemagent.mcp.server import MCPServer, Prompt, PromptArgument, Resource, ResourceTemplate, ToolReply, current_call
from yiemagent.tools import AgentTool

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
"""A 1x1 red PNG, base64."""
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00\x80>\x00\x00"
                       b"\x02\x00\x10\x00data\x00\x00\x00\x00").decode("ascii")
"""A WAV header with no samples, base64."""
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


def _reply(*blocks: dict[str, Any]) -> ToolReply:
    return ToolReply(list(blocks))


def _tool(name: str, description: str, execute: Any, schema: dict[str, Any] | None = None) -> AgentTool:
    return AgentTool(name, description, schema or NO_ARGUMENTS, lambda _id, args, abort: execute(args))


def _with_logging(args: dict[str, Any]) -> str:
    call = current_call()
    assert call is not None
    for text in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        call.log("info", text)
        time.sleep(0.05)
    return "Tool with logging executed successfully"


def _with_progress(args: dict[str, Any]) -> str:
    call = current_call()
    assert call is not None
    for step in (0, 50, 100):
        call.progress(step, 100)
        time.sleep(0.05)
    return "Tool with progress executed successfully"


def _fails(args: dict[str, Any]) -> str:
    raise RuntimeError("This tool intentionally returns an error for testing")


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]}, "phone": {"type": "string"},
                   "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]}, "else": {"required": ["email"]}, "additionalProperties": False,
}


def build() -> MCPServer:
    """The conformance fixture server."""
    tools = [
        _tool("test_simple_text", "Returns simple text",
              lambda a: "This is a simple text response for testing."),
        _tool("test_image_content", "Returns an image",
              lambda a: _reply({"type": "image", "data": PNG, "mimeType": "image/png"})),
        _tool("test_audio_content", "Returns audio",
              lambda a: _reply({"type": "audio", "data": WAV, "mimeType": "audio/wav"})),
        _tool("test_embedded_resource", "Returns an embedded resource",
              lambda a: _reply({"type": "resource", "resource": {
                  "uri": "test://embedded-resource", "mimeType": "text/plain",
                  "text": "This is an embedded resource content."}})),
        _tool("test_multiple_content_types", "Returns text, an image and a resource",
              lambda a: _reply({"type": "text", "text": "Multiple content types test:"},
                               {"type": "image", "data": PNG, "mimeType": "image/png"},
                               {"type": "resource", "resource": {
                                   "uri": "test://mixed-content-resource", "mimeType": "application/json",
                                   "text": json.dumps({"test": "data", "value": 123})}})),
        _tool("test_tool_with_logging", "Sends three log messages", _with_logging),
        _tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100", _with_progress),
        _tool("test_error_handling", "Always fails", _fails),
        _tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", lambda a: "ok",
              JSON_SCHEMA_2020_12),
    ]
    resources: list[Resource | ResourceTemplate] = [
        Resource("test://static-text", "static-text", lambda: "This is the content of the static text resource.",
                 description="A static text resource", mime_type="text/plain"),
        Resource("test://static-binary", "static-binary", lambda: base64.b64decode(PNG),
                 description="A static binary resource (a PNG)", mime_type="image/png"),
        Resource("test://watched-resource", "watched-resource", lambda: "Watched resource content",
                 description="A resource to subscribe to", mime_type="text/plain"),
        ResourceTemplate("test://template/{id}/data", "template-data",
                         lambda uri, values: json.dumps({"id": values["id"], "templateTest": True,
                                                         "data": f"Data for ID: {values['id']}"}),
                         description="Data by id", mime_type="application/json"),
    ]
    prompts = [
        Prompt("test_simple_prompt", lambda a: "This is a simple prompt for testing.",
               description="A prompt without arguments"),
        Prompt("test_prompt_with_arguments",
               lambda a: f"Prompt with arguments: arg1='{a['arg1']}', arg2='{a['arg2']}'",
               description="A prompt with two arguments",
               arguments=[PromptArgument("arg1", "First test argument", True),
                          PromptArgument("arg2", "Second test argument", True)]),
        Prompt("test_prompt_with_embedded_resource",
               lambda a: [{"role": "user", "content": {"type": "resource", "resource": {
                   "uri": a["resourceUri"], "mimeType": "text/plain",
                   "text": "Embedded resource content for testing."}}},
                   {"role": "user",
                    "content": {"type": "text", "text": "Please process the embedded resource above."}}],
               description="A prompt embedding a resource",
               arguments=[PromptArgument("resourceUri", "URI of the resource to embed", True)]),
        Prompt("test_prompt_with_image",
               lambda a: [{"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
                          {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}],
               description="A prompt with an image"),
    ]
    return MCPServer("yiemagent-conformance-server", "1.0.0", tools=tools, resources=resources, prompts=prompts)


def main() -> None:
    """Serve ``build()`` at http://127.0.0.1:PORT/mcp until killed."""
    from werkzeug.serving import make_server

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    make_server("127.0.0.1", args.port, build().wsgi_app(), threaded=True).serve_forever()


if __name__ == "__main__":
    main()
