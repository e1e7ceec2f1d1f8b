"""The MCP server the official conformance suite's *server* scenarios test (``conformance server --url``).

Built with ``yiemagent.mcp.server.MCPServer`` and served by its WSGI app under werkzeug's threaded
server; it offers what the scenarios of ``@modelcontextprotocol/conformance`` 0.2.0-alpha.12 name
(``test_simple_text``, ``test://static-text``, ``test_simple_prompt``...: read from the suite's
scenario sources), in both eras (2025-11-25 and 2026-07-28): the tools that ask the client for input
(``test_sampling``, ``test_input_required_result_*``...) do it only through ``current_call()``, so
the same code runs as back-channel requests in one era and ``input_required`` rounds in the other.
Usage: ``python tests/servers/conformance_server.py --port PORT`` -> ``http://127.0.0.1:PORT/mcp``.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
from typing import Any

from yiemagent.mcp.server import (
    MCPServer,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    ServedCall,
    ToolReply,
    current_call,
)
from yiemagent.mcp.server.inputs import elicitation_request, roots_request, sampling_request
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


def _call() -> ServedCall:
    call = current_call()
    assert call is not None
    return call


def _text_schema(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": list(names)}


def _sampling(args: dict[str, Any]) -> str:
    reply = _call().sample(str(args["prompt"]), max_tokens=100)
    content = reply["content"]
    return f"LLM response: {content.get('text') if isinstance(content, dict) else content}"


def _elicitation(args: dict[str, Any]) -> str:
    schema = {"type": "object", "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"}}, "required": ["username", "email"]}
    answer = _call().elicit(str(args["message"]), schema)
    return f"User response: action={answer['action']}, content={json.dumps(answer.get('content'))}"


SEP1034_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
               "default": "active"},
    "verified": {"type": "boolean", "description": "Verification status", "default": True}}, "required": []}
SEP1330_SCHEMA = {"type": "object", "properties": {
    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"},
                                                 {"const": "value2", "title": "Second Option"},
                                                 {"const": "value3", "title": "Third Option"}]},
    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                   "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                         {"const": "value2", "title": "Second Choice"},
                                                         {"const": "value3", "title": "Third Choice"}]}}},
    "required": []}


def _elicit_with(schema: dict[str, Any], message: str) -> str:
    answer = _call().elicit(message, schema)
    return f"Elicitation completed: action={answer['action']}, content={json.dumps(answer.get('content'))}"


def _ask_name(args: dict[str, Any]) -> str:
    answer = _call().elicit("What is your name?", _text_schema("name"), key="user_name")
    return f"Hello, {(answer.get('content') or {}).get('name', 'stranger')}!"


def _ask_capital(args: dict[str, Any]) -> str:
    reply = _call().sample([{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
                           max_tokens=100, key="capital_question")
    return f"Sampling said: {json.dumps(reply['content'])}"


def _ask_roots(args: dict[str, Any]) -> str:
    roots = _call().list_roots(key="client_roots")
    return "Roots: " + ", ".join(str(r["uri"]) for r in roots)


def _ask_confirm(args: dict[str, Any]) -> str:
    call = _call()
    call.saved.setdefault("asked", "confirm")  # kept in the signed requestState across the round
    answer = call.elicit("Please confirm", {"type": "object", "properties": {"ok": {"type": "boolean"}},
                                            "required": ["ok"]}, key="confirm")
    return f"state-ok ({call.saved['asked']}): {json.dumps(answer.get('content'))}"


def _ask_three(args: dict[str, Any]) -> str:
    answers = _call().ask({
        "user_name": elicitation_request("What is your name?", _text_schema("name")),
        "greeting": sampling_request("Generate a greeting", 50),
        "client_roots": roots_request()})
    return f"Got {', '.join(sorted(answers))}"


def _ask_twice(args: dict[str, Any]) -> str:
    call = _call()
    name = call.elicit("Step 1: What is your name?", _text_schema("name"), key="step1")
    color = call.elicit("Step 2: What is your favorite color?", _text_schema("color"), key="step2")
    return f"{(name.get('content') or {}).get('name')} likes {(color.get('content') or {}).get('color')}"


def _ask_what_is_declared(args: dict[str, Any]) -> str:
    call = _call()
    if call.client_supports("elicitation"):
        return _ask_name(args)
    return _ask_capital(args)


def _needs_sampling(args: dict[str, Any]) -> str:
    _call().sample("Say hello", max_tokens=10)  # -32021 when the client did not declare sampling
    return "sampled"


def _logs(args: dict[str, Any]) -> str:
    for text in ("Tool execution started", "Tool execution completed"):
        _call().log("info", text)  # sent only when the request asked for a log level
    return "Tool with logging executed successfully"


def _prompt_asking(arguments: dict[str, str]) -> str:
    call = current_call()
    assert call is not None
    answer = call.elicit("What context should the prompt use?", _text_schema("context"), key="user_context")
    return f"Use this context: {(answer.get('content') or {}).get('context')}"


HEADER_SCHEMA = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                 "required": ["region"]}


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
        _tool("test_sampling", "Asks the client's model", _sampling, _text_schema("prompt")),
        _tool("test_elicitation", "Asks the user", _elicitation, _text_schema("message")),
        _tool("test_elicitation_sep1034_defaults", "Elicitation with defaults",
              lambda a: _elicit_with(SEP1034_SCHEMA, "Please review the defaults")),
        _tool("test_elicitation_sep1330_enums", "Elicitation with enums",
              lambda a: _elicit_with(SEP1330_SCHEMA, "Please choose")),
        _tool("test_input_required_result_elicitation", "Asks a name", _ask_name),
        _tool("test_input_required_result_sampling", "Asks the client's model", _ask_capital),
        _tool("test_input_required_result_list_roots", "Asks the roots", _ask_roots),
        _tool("test_input_required_result_request_state", "Asks a confirmation", _ask_confirm),
        _tool("test_input_required_result_tampered_state", "Asks a confirmation", _ask_confirm),
        _tool("test_input_required_result_multiple_inputs", "Asks three things at once", _ask_three),
        _tool("test_input_required_result_multi_round", "Asks twice", _ask_twice),
        _tool("test_input_required_result_capabilities", "Asks what the client declared", _ask_what_is_declared),
        _tool("test_missing_capability", "Needs sampling", _needs_sampling),
        _tool("test_streaming_elicitation", "Asks a name", _ask_name),
        _tool("test_logging_tool", "Sends log messages", _logs),
        _tool("test_header_param", "Echoes a region sent as a header too", lambda a: f"region {a['region']}",
              HEADER_SCHEMA),
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
        Prompt("test_input_required_result_prompt", _prompt_asking, description="A prompt that asks for context"),
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
