"""``yiemagent.mcp.bridge``: MCP results -> ``AgentToolResult``, ``inputSchema`` normalisation, tool names,
and ``MCPToolset`` with a real ``mcp`` SDK server.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import RecordingSession
from yiemagent.exceptions import ToolArgumentsError
from yiemagent.mcp import MCPToolset, mcp_tool, normalize_input_schema, result_to_tool_result, sanitize_tool_name
from yiemagent.mcp.bridge import MCPToolExecutor
from yiemagent.messages import ImageContent, TextContent
from yiemagent.tools import AgentTool, ToolRegistry

VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def noop(tool_call_id: str, arguments: dict[str, Any], abort_event: threading.Event) -> str:
    return "ok"


# --------------------------------------------------------------------------- result_to_tool_result


def test_is_error_result_becomes_an_error_tool_result_with_its_text():
    """Case C16: ``isError: true`` sets ``is_error`` and keeps the message for the model."""
    converted = result_to_tool_result({"content": [{"type": "text", "text": "unknown city"}], "isError": True})
    assert converted.is_error is True
    assert converted.text == "unknown city"


def test_success_without_is_error_is_not_an_error():
    """Spec: a missing ``isError`` means success."""
    converted = result_to_tool_result({"content": [{"type": "text", "text": "fine"}]})
    assert converted.is_error is False
    assert converted.content == [TextContent("fine")]


def test_structured_content_with_empty_content_becomes_its_json_text():
    """Case C17: ``content: []`` plus ``structuredContent`` reaches the model as the JSON, never ''."""
    converted = result_to_tool_result(
        {"content": [], "structuredContent": {"temp_c": 21, "sky": "clear"}, "isError": False}
    )
    assert json.loads(converted.text) == {"temp_c": 21, "sky": "clear"}
    assert converted.text == '{"temp_c": 21, "sky": "clear"}'
    assert converted.details == {"structuredContent": {"temp_c": 21, "sky": "clear"}}


def test_text_content_wins_over_structured_content_which_stays_in_details():
    """Case C17: when ``content`` has text, that text is used; ``structuredContent`` is kept in details."""
    converted = result_to_tool_result(
        {"content": [{"type": "text", "text": "21 C, clear"}], "structuredContent": {"temp_c": 21}}
    )
    assert converted.text == "21 C, clear"
    assert converted.details["structuredContent"] == {"temp_c": 21}


def test_image_and_embedded_resources_keep_text_make_an_image_part_and_never_inline_base64():
    """Case C18: text and embedded text resources become text; the image becomes an ``ImageContent``
    (a short placeholder in text); the PDF blob becomes a placeholder with its URI; no base64 in text.
    """
    converted = result_to_tool_result({"isError": False, "content": [
        {"type": "text", "text": "chart ready"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "line one"}},
        {"type": "resource", "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": "JVBERi0="}},
    ]})
    text = converted.text
    assert "chart ready" in text and "line one" in text
    assert "iVBORw0KGgo" not in text and "JVBERi0" not in text
    images = [part for part in converted.content if isinstance(part, ImageContent)]
    assert len(images) == 1
    assert images[0].mime_type == "image/png" and images[0].data == "iVBORw0KGgo="
    assert "[image image/png, 8 bytes]" in text
    assert "file:///r.pdf" in text and "application/pdf" in text


def test_unknown_audio_and_link_content_become_placeholders_not_crashes():
    """Case C18: audio, resource links and unknown block types become short placeholders."""
    converted = result_to_tool_result({"content": [
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
        {"type": "hologram", "data": "AAAA"},
        "not a block",
    ]})
    assert len(converted.content) == 4
    assert all(isinstance(part, TextContent) for part in converted.content)
    assert "audio/wav" in converted.text and "UklGRg" not in converted.text
    assert "file:///a.txt" in converted.text
    assert "hologram" in converted.text and "AAAA" not in converted.text


# --------------------------------------------------------------------------- normalize_input_schema


@pytest.mark.parametrize("schema", [None, "not a schema", ["type", "object"]])
def test_missing_or_non_object_input_schema_becomes_an_empty_object_schema(schema):
    """Case C20: no usable ``inputSchema`` -> ``{"type": "object", "properties": {}}``, never None."""
    assert normalize_input_schema(schema) == {"type": "object", "properties": {}}


def test_object_schema_without_properties_gets_empty_properties():
    """Case C20: ``{"type": "object"}`` gets ``"properties": {}`` (OpenAI rejects it otherwise)."""
    original = {"type": "object"}
    assert normalize_input_schema(original) == {"type": "object", "properties": {}}
    assert original == {"type": "object"}  # the server's object is not modified


def test_defs_and_ref_are_kept_and_still_validate_nested_arguments():
    """Case C20: ``$defs`` stays next to ``$ref`` so the schema remains resolvable and validates."""
    schema = {"type": "object", "required": ["q"], "properties": {"q": {"$ref": "#/$defs/Query"}},
              "$defs": {"Query": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}}
    normalized = normalize_input_schema(schema)
    assert normalized["$defs"] == schema["$defs"]
    assert normalized["properties"]["q"] == {"$ref": "#/$defs/Query"}
    tool = AgentTool(name="find_order", description="", input_schema=normalized, execute=noop)
    tool.validate({"q": {"id": 7}})
    with pytest.raises(ToolArgumentsError) as caught:
        tool.validate({"q": {"id": "seven"}})
    assert any("id" in error for error in caught.value.errors)


def test_recursive_ref_does_not_recurse_forever():
    """Case C20: a self-referencing ``$ref`` is kept as is and validates a nested tree."""
    schema = {"type": "object", "properties": {"node": {"$ref": "#/$defs/Node"}},
              "$defs": {"Node": {"type": "object", "properties": {
                  "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}
    normalized = normalize_input_schema(schema)
    tool = AgentTool(name="tree", description="", input_schema=normalized, execute=noop)
    tool.validate({"node": {"value": 1, "children": [{"value": 2, "children": []}]}})
    with pytest.raises(ToolArgumentsError):
        tool.validate({"node": {"value": 1, "children": [{"value": "deep"}]}})


def test_mcp_tool_exposes_normalized_parameters_in_openai_format():
    """Case C20: a tool listed without ``inputSchema`` gets ``parameters`` = empty object schema."""
    spec = mcp_tool(client=None, spec={"name": "noop", "description": "Does nothing."})  # type: ignore[arg-type]
    assert spec.to_openai()["function"]["parameters"] == {"type": "object", "properties": {}}


# --------------------------------------------------------------------------- sanitize_tool_name


@pytest.mark.parametrize("name", ["get_weather", "get-sum", "tool_00", "A" * 64])
def test_valid_tool_names_are_kept_unchanged(name):
    """yiemagent-defined: a name OpenAI accepts is not touched."""
    assert sanitize_tool_name(name) == name


def test_invalid_names_become_valid_and_distinct_names_stay_distinct():
    """yiemagent-defined: bad characters become ``_`` with a hash suffix, so ``a.b`` and ``a/b`` differ."""
    dotted, slashed = sanitize_tool_name("files.read"), sanitize_tool_name("files/read")
    assert VALID_NAME.match(dotted) and VALID_NAME.match(slashed)
    assert dotted.startswith("files_read_") and slashed.startswith("files_read_")
    assert dotted != slashed
    assert sanitize_tool_name("files.read") == dotted  # stable


@settings(deadline=None)
@given(st.text(max_size=200))
def test_any_name_sanitizes_to_a_valid_stable_openai_name(name):
    """Any string (empty, non-ASCII, very long) gives a name matching ``^[a-zA-Z0-9_-]{1,64}$``."""
    cleaned = sanitize_tool_name(name)
    assert VALID_NAME.match(cleaned)
    assert sanitize_tool_name(name) == cleaned


# --------------------------------------------------------------------------- MCPToolset with a real server


def counts(client: Any) -> dict[str, int]:
    return client.call_tool("call_counts")["structuredContent"]  # type: ignore[no-any-return]


def test_toolset_registers_the_server_tools_and_a_registry_call_runs_the_tool_once(sdk_server, open_client):
    """``MCPToolset.refresh`` registers every server tool; ``ToolRegistry.call`` sends exactly one
    ``tools/call`` and the server executes the tool exactly once.
    """
    http = RecordingSession()
    client = open_client(sdk_server, session=http)
    registry = ToolRegistry()
    toolset = MCPToolset([client], registry)
    added, removed = toolset.refresh()
    assert removed == []
    assert {"add", "echo", "fail", "structured", "tiny_image", "call_counts"} <= set(added)
    assert set(registry.names()) == set(added)
    before = counts(client)
    result = registry.call("add", {"a": 2, "b": 3}, tool_call_id="call_1")
    assert result.is_error is False
    assert result.text == "5"
    add_posts = [r for r in http.rpc("tools/call") if r.message["params"]["name"] == "add"]
    assert len(add_posts) == 1
    assert counts(client)["add"] == before.get("add", 0) + 1


def test_registry_rejects_bad_arguments_before_the_server_sees_them(sdk_server, open_client):
    """The listed ``inputSchema`` is enforced locally: bad arguments raise ``ToolArgumentsError`` and
    no ``tools/call`` is sent.
    """
    http = RecordingSession()
    client = open_client(sdk_server, session=http)
    registry = ToolRegistry()
    MCPToolset([client], registry).refresh()
    with pytest.raises(ToolArgumentsError) as caught:
        registry.call("add", {"a": "two"})
    assert caught.value.tool_name == "add"
    assert http.rpc("tools/call") == []


def test_tool_failure_structured_and_image_results_convert_through_the_registry(sdk_server, open_client):
    """Cases C16, C17, C18 end to end: ``fail`` is an error result with its message, ``structured``
    gives JSON text, ``tiny_image`` gives an image part without base64 in the text.
    """
    registry = ToolRegistry()
    MCPToolset([open_client(sdk_server)], registry).refresh()
    failed = registry.call("fail", {"message": "disk full"})
    assert failed.is_error is True and "disk full" in failed.text
    assert json.loads(registry.call("structured", {}).text) == {"temp_c": 21, "sky": "clear"}
    image = registry.call("tiny_image", {})
    (part,) = image.content
    assert isinstance(part, ImageContent) and part.mime_type == "image/png"
    assert part.data not in image.text and image.text.startswith("[image image/png,")


def test_second_server_with_the_same_tool_names_gets_prefixed_names(sdk_server, sdk_server_json, open_client):
    """yiemagent-defined: a name already taken by another server is registered as ``<server>_<name>``;
    each name calls its own server.
    """
    first, second = open_client(sdk_server, name="sse"), open_client(sdk_server_json, name="json")
    registry = ToolRegistry()
    toolset = MCPToolset([first, second], registry)
    added, _ = toolset.refresh()
    assert "add" in added and "json_add" in added
    assert registry.call("json_add", {"a": 1, "b": 2}).text == "3"
    servers = {entry["name"]: entry["server"] for entry in toolset.describe()}
    assert servers["add"] == "sse" and servers["json_add"] == "json"
    assert toolset.refresh() == ([], [])  # nothing changed, nothing re-listed


def test_mcp_tool_timeout_becomes_an_error_result_not_an_exception(sdk_server, open_client):
    """Case C21: a tool call that outlives its timeout gives an error result naming the timeout."""
    client = open_client(sdk_server)
    execute = MCPToolExecutor(client, "slow", timeout_seconds=1)
    result = execute("call_9", {"seconds": 10}, threading.Event())
    assert result.is_error is True
    assert "timed out" in result.text
    assert client.call_tool("echo", {"text": "still alive"})["content"][0]["text"] == "still alive"
