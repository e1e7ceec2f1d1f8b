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


def test_c16_is_error_result_becomes_an_error_tool_result_with_its_text():
    """Case C16: ``isError: true`` sets ``is_error`` and keeps the message for the model."""
    converted = result_to_tool_result({"content": [{"type": "text", "text": "unknown city"}], "isError": True})
    assert converted.is_error is True
    assert converted.text == "unknown city"


def test_success_without_is_error_is_not_an_error():
    """Spec: a missing ``isError`` means success."""
    converted = result_to_tool_result({"content": [{"type": "text", "text": "fine"}]})
    assert converted.is_error is False
    assert converted.content == [TextContent("fine")]


def test_c17_structured_content_with_empty_content_becomes_its_json_text():
    """Case C17: ``content: []`` plus ``structuredContent`` reaches the model as the JSON, never ''."""
    converted = result_to_tool_result(
        {"content": [], "structuredContent": {"temp_c": 21, "sky": "clear"}, "isError": False}
    )
    assert json.loads(converted.text) == {"temp_c": 21, "sky": "clear"}
    assert converted.text == '{"temp_c": 21, "sky": "clear"}'
    assert converted.details == {"structuredContent": {"temp_c": 21, "sky": "clear"}}


def test_c17_text_content_wins_over_structured_content_which_stays_in_details():
    """Case C17: when ``content`` has text, that text is used; ``structuredContent`` is kept in details."""
    converted = result_to_tool_result(
        {"content": [{"type": "text", "text": "21 C, clear"}], "structuredContent": {"temp_c": 21}}
    )
    assert converted.text == "21 C, clear"
    assert converted.details["structuredContent"] == {"temp_c": 21}


def test_c18_image_and_embedded_resources_keep_text_make_an_image_part_and_never_inline_base64():
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


def test_c18_unknown_audio_and_link_content_become_placeholders_not_crashes():
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
def test_c20_missing_or_non_object_input_schema_becomes_an_empty_object_schema(schema):
    """Case C20: no usable ``inputSchema`` -> ``{"type": "object", "properties": {}}``, never None."""
    assert normalize_input_schema(schema) == {"type": "object", "properties": {}}


def test_c20_object_schema_without_properties_gets_empty_properties():
    """Case C20: ``{"type": "object"}`` gets ``"properties": {}`` (OpenAI rejects it otherwise)."""
    original = {"type": "object"}
    assert normalize_input_schema(original) == {"type": "object", "properties": {}}
    assert original == {"type": "object"}  # the server's object is not modified


def test_c20_defs_and_ref_are_kept_and_still_validate_nested_arguments():
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


def test_c20_recursive_ref_does_not_recurse_forever():
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


def test_c21_mcp_tool_timeout_becomes_an_error_result_not_an_exception(sdk_server, open_client):
    """Case C21: a tool call that outlives its timeout gives an error result naming the timeout."""
    client = open_client(sdk_server)
    execute = MCPToolExecutor(client, "slow", timeout_seconds=1)
    result = execute("call_9", {"seconds": 10}, threading.Event())
    assert result.is_error is True
    assert "timed out" in result.text
    assert client.call_tool("echo", {"text": "still alive"})["content"][0]["text"] == "still alive"


# --------------------------------------------------------------------------- schemas OpenAI rejects (C20)


def openai_accepts(parameters: dict[str, Any]) -> bool:
    """What OpenAI's function format demands of ``parameters`` at the top level."""
    return (
        parameters.get("type") == "object"
        and isinstance(parameters.get("properties"), dict)
        and not {"anyOf", "oneOf", "allOf", "enum", "not", "$ref"} & set(parameters)
    )


def validates(schema: dict[str, Any], arguments: dict[str, Any]) -> bool:
    tool = AgentTool(name="t", description="", input_schema=schema, execute=noop)
    try:
        tool.validate(arguments)
    except ToolArgumentsError:
        return False
    return True


@pytest.mark.parametrize("schema", [
    {"type": "string"}, {"type": "array", "items": {"type": "integer"}}, {"type": ["null", "string"]},
])
def test_a_top_level_type_other_than_object_becomes_an_object_schema_taking_any_object(schema):
    """yiemagent-defined: MCP demands an object schema; a server that sends another type gets a permissive
    object schema (the server still validates), never one OpenAI rejects.
    """
    normalized = normalize_input_schema(schema)
    assert normalized == {"type": "object", "properties": {}}
    assert validates(normalized, {"anything": 1})


def test_a_type_list_containing_object_is_narrowed_to_object_and_keeps_its_properties():
    """yiemagent-defined: ``["object", "null"]`` becomes ``"object"``; properties and required stay."""
    normalized = normalize_input_schema({"type": ["object", "null"], "properties": {"a": {"type": "integer"}},
                                         "required": ["a", 7]})
    assert normalized == {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    assert openai_accepts(normalized)


def test_a_top_level_ref_is_replaced_by_its_target_and_still_validates():
    """Case C20 variant (pydantic-style root ``$ref``): the target is inlined one level, ``$defs`` kept."""
    schema = {"$ref": "#/$defs/Args", "$defs": {
        "Args": {"type": "object", "properties": {"q": {"$ref": "#/$defs/Query"}}, "required": ["q"]},
        "Query": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}}
    normalized = normalize_input_schema(schema)
    assert openai_accepts(normalized)
    assert normalized["required"] == ["q"] and "$defs" in normalized
    assert validates(normalized, {"q": {"id": 3}})
    assert not validates(normalized, {"q": {"id": "three"}})
    assert schema["$ref"] == "#/$defs/Args"  # the server's object is untouched


def test_a_recursive_top_level_ref_is_inlined_once_and_validates_a_deep_tree():
    """Case C20: a root ``$ref`` to a self-referencing schema does not recurse forever."""
    schema = {"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object", "properties": {
        "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}
    normalized = normalize_input_schema(schema)
    assert openai_accepts(normalized)
    deep: dict[str, Any] = {"value": 0, "children": []}
    for level in range(50):
        deep = {"value": level, "children": [deep]}
    assert validates(normalized, deep)
    assert not validates(normalized, {"value": 1, "children": [{"value": "x"}]})


def test_top_level_any_of_is_folded_into_one_object_schema_that_is_never_stricter():
    """yiemagent-defined: OpenAI rejects a top-level ``anyOf``; branches' properties are merged and only
    what every branch requires stays required, so whatever the server accepts passes locally.
    """
    schema = {"anyOf": [
        {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
         "required": ["city", "days"]},
        {"type": "object", "properties": {"lat": {"type": "number"}, "days": {"type": "integer"}},
         "required": ["lat", "days"]},
    ]}
    normalized = normalize_input_schema(schema)
    assert openai_accepts(normalized)
    assert set(normalized["properties"]) == {"city", "lat", "days"}
    assert normalized["required"] == ["days"]
    assert validates(normalized, {"city": "Lima", "days": 2}) and validates(normalized, {"lat": 1.5, "days": 2})
    assert not validates(normalized, {"city": "Lima", "days": "two"})


def test_top_level_all_of_merges_properties_and_required():
    """yiemagent-defined: ``allOf`` branches (a ``$ref`` among them) become one object schema."""
    schema = {"allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"b": {"type": "string"}}, "required": ["b"]}],
              "$defs": {"Base": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}
    normalized = normalize_input_schema(schema)
    assert openai_accepts(normalized)
    assert set(normalized["properties"]) == {"a", "b"} and normalized["required"] == ["a", "b"]
    assert not validates(normalized, {"a": 1})


def test_dangling_remote_and_cyclic_refs_become_anything_so_validation_always_ends():
    """Case C20: a ``$ref`` without its target, a remote URL, or a ref-only cycle (A -> B -> A) would make
    validation raise or recurse forever; each becomes "anything", the rest of the schema still validates.
    """
    schema = {"type": "object", "required": ["n"], "properties": {
        "missing": {"$ref": "#/$defs/Nowhere"},
        "remote": {"$ref": "https://example.com/schema.json"},
        "cycle": {"$ref": "#/$defs/A"},
        "n": {"type": "integer"}},
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}
    normalized = normalize_input_schema(schema)
    assert validates(normalized, {"missing": 1, "remote": "x", "cycle": [1], "n": 2})
    assert not validates(normalized, {"n": "two"})
    assert schema["properties"]["cycle"] == {"$ref": "#/$defs/A"}  # the server's object is untouched


def test_c20_tools_listed_by_a_server_become_openai_parameters_that_resolve(raw_peer, open_client):
    """Case C20 end to end, raw peer (every real server here sends an ``inputSchema`` with properties):
    ``ping`` and ``noop`` get an empty object schema, ``find_order`` keeps ``$defs`` next to its ``$ref``,
    and a registry call validates the nested argument before sending it.
    """
    peer = raw_peer(tools=[
        {"name": "ping", "inputSchema": {"type": "object"}},
        {"name": "noop"},
        {"name": "find_order", "inputSchema": {"type": "object", "required": ["q"],
                                               "properties": {"q": {"$ref": "#/$defs/Query"}},
                                               "$defs": {"Query": {"type": "object",
                                                                   "properties": {"id": {"type": "integer"}},
                                                                   "required": ["id"]}}}},
    ])
    registry = ToolRegistry()
    MCPToolset([open_client(peer.url)], registry).refresh()
    parameters = {t.name: t.to_openai()["function"]["parameters"] for t in registry}
    assert parameters["ping"] == parameters["noop"] == {"type": "object", "properties": {}}
    assert parameters["find_order"]["properties"]["q"] == {"$ref": "#/$defs/Query"}
    assert "Query" in parameters["find_order"]["$defs"]
    with pytest.raises(ToolArgumentsError):
        registry.call("find_order", {"q": {"id": "seven"}})
    assert registry.call("find_order", {"q": {"id": 7}}).text == "called find_order"
    assert peer.count("tools/call") == 1


# --------------------------------------------------------------------------- results: readable text and a size cap


def test_c18_resource_links_and_text_resources_become_readable_text_naming_their_uri():
    """Case C18: a resource link shows its URI, title, type and description; an embedded text resource
    shows a header with its URI, then its text.
    """
    converted = result_to_tool_result({"content": [
        {"type": "resource_link", "uri": "file:///logs/app.log", "name": "app.log", "title": "App log",
         "mimeType": "text/plain", "description": "Last 100 lines."},
        {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "line one"}},
    ]})
    assert converted.content[0].text == "[resource link file:///logs/app.log text/plain App log] Last 100 lines."
    assert converted.content[1].text == "[resource file:///notes.txt text/plain]\nline one"


def test_a_result_over_the_size_cap_is_cut_with_a_visible_note_and_details():
    """yiemagent-defined: past ``max_chars`` the text is cut and a last part says how much was shown;
    ``details["truncated"]`` keeps the numbers.
    """
    converted = result_to_tool_result({"content": [{"type": "text", "text": "a" * 150},
                                                   {"type": "text", "text": "b" * 150}]}, max_chars=200)
    texts = [part.text for part in converted.content]
    assert texts[:2] == ["a" * 150, "b" * 50]
    assert texts[2] == "[truncated: the tool result has 300 characters; the first 200 are shown]"
    assert converted.details == {"truncated": {"chars": 300, "max_chars": 200}}
    assert converted.is_error is False


def test_an_image_that_does_not_fit_the_cap_is_left_out_as_a_placeholder():
    """yiemagent-defined: image data counts against the cap; an image that does not fit is replaced by its
    placeholder, so no megabytes of base64 reach the model.
    """
    big = "A" * 4000
    converted = result_to_tool_result({"content": [{"type": "text", "text": "chart"},
                                                   {"type": "image", "data": big, "mimeType": "image/png"}]},
                                      max_chars=1000)
    assert not any(isinstance(part, ImageContent) for part in converted.content)
    assert "[image image/png, 3000 bytes] (left out: over the size cap)" in converted.text
    assert big not in converted.text and "truncated" in converted.text


def test_no_cap_keeps_a_large_result_whole():
    """``max_chars=None`` turns the cap off."""
    converted = result_to_tool_result({"content": [{"type": "text", "text": "z" * 300_000}]}, max_chars=None)
    assert converted.text == "z" * 300_000 and converted.details is None


def test_toolset_max_result_chars_caps_a_real_tool_result(sdk_server, open_client):
    """``MCPToolset(max_result_chars=...)`` reaches every tool: a 5000-character echo is cut to 1000."""
    registry = ToolRegistry()
    MCPToolset([open_client(sdk_server)], registry, max_result_chars=1000).refresh()
    result = registry.call("echo", {"text": "é" * 5000})
    assert result.content[0].text == "é" * 1000
    assert result.text.endswith("[truncated: the tool result has 5,000 characters; the first 1,000 are shown]")


# --------------------------------------------------------------------------- names across servers (point 7)


def test_names_openai_rejects_get_valid_names_and_the_wire_carries_the_original(fastmcp_server, open_client):
    """yiemagent-defined, real fastmcp server: ``files.read``, ``weather report``, ``météo`` and a 70-character
    name are registered under valid names; calling one sends the server's original name, which the server
    answers with; ``resolve`` maps back.
    """
    from tests.servers.fastmcp_server import ODD_NAMES

    http = RecordingSession()
    client = open_client(fastmcp_server, session=http)
    registry = ToolRegistry()
    toolset = MCPToolset([client], registry)
    toolset.refresh()
    assert len(registry) == 64 and all(VALID_NAME.match(name) for name in registry.names())
    by_original = {entry["mcp_name"]: entry["name"] for entry in toolset.describe()}
    for original in ODD_NAMES:
        model_name = by_original[original]
        assert model_name != original
        assert toolset.resolve(model_name) == (client, original)
        assert registry.call(model_name, {}).text == original
    assert [r.message["params"]["name"] for r in http.rpc("tools/call")] == ODD_NAMES


def test_a_local_tool_keeps_its_name_and_the_clashing_mcp_tool_gets_the_server_prefix(sdk_server, open_client):
    """yiemagent-defined: a name taken by a local tool goes to the MCP tool as ``<server>_<name>``."""
    local = AgentTool(name="add", description="local add", input_schema={"type": "object", "properties": {}},
                      execute=noop)
    registry = ToolRegistry([local])
    toolset = MCPToolset([open_client(sdk_server, name="calc")], registry)
    toolset.refresh()
    assert registry.get("add") is local
    assert toolset.resolve("calc_add")[1] == "add"
    assert registry.call("calc_add", {"a": 2, "b": 2}).text == "4"


def test_three_servers_with_the_same_tools_and_names_all_get_unique_callable_names(
    sdk_server, sdk_server_json, sdk_server_stateless, open_client
):
    """yiemagent-defined: two servers even share a name; every tool still gets a unique valid name
    (``add``, ``x_add``, ``x_add_2``) and each name reaches its own server.
    """
    sessions = [RecordingSession() for _ in range(3)]
    clients = [open_client(url, name="x", session=http)
               for url, http in zip([sdk_server, sdk_server_json, sdk_server_stateless], sessions, strict=True)]
    registry = ToolRegistry()
    toolset = MCPToolset(clients, registry)
    toolset.refresh()
    count = len(clients[0].list_tools())  # the SDK server's tools (17 since issue 16)
    assert count >= 11 and len(registry) == 3 * count and len(set(registry.names())) == 3 * count
    names = [name for name in ("add", "x_add", "x_add_2") if toolset.resolve(name)]
    assert [toolset.resolve(name)[0] for name in names] == clients
    for index, name in enumerate(names):
        assert registry.call(name, {"a": index, "b": 1}).text == str(index + 1)
        assert [r.message["params"]["name"] for r in sessions[index].rpc("tools/call")] == ["add"]


def test_an_agent_takes_named_servers_and_the_model_reaches_each_by_its_tool_names(sdk_server, sdk_server_json):
    """yiemagent-defined: ``Agent(mcp_servers={name: url})`` names each server; a clash is prefixed with
    that name, and the model's call of ``json_add`` runs on the JSON server.
    """
    from yiemagent import Agent
    from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

    llm = ScriptedLLM([tool_call_reply("json_add", {"a": 40, "b": 2}), text_reply("42")])
    agent = Agent(llm, mcp_servers={"sse": sdk_server, "json": sdk_server_json})
    try:
        assert agent.ask("add", timeout_seconds=10)["content"] == "42"
        servers = {entry["name"]: entry["server"] for entry in agent.mcp.describe()}
    finally:
        agent.shutdown()
    assert servers["add"] == "sse" and servers["json_add"] == "json"
    offered = {tool["function"]["name"] for tool in llm.calls[0]["tools"]}
    assert {"add", "json_add", "list_tools"} <= offered
    assert llm.calls[1]["messages"][-1]["content"] == "42"
    assert [c.name for c in agent.mcp.clients] == ["sse", "json"]


# --------------------------------------------------------------------------- default server names


@pytest.mark.parametrize(("url", "name"), [
    ("http://127.0.0.1:3001/mcp", "127_0_0_1_3001"),
    ("https://tools.example.com/mcp", "tools_example_com"),
    ("https://user:pw@tools.example.com/weather/mcp?api_key=k#x", "tools_example_com_weather"),
    ("http://localhost:8000/v1/sse", "localhost_8000_v1"),
    ("http://[::1]:3001/mcp/", "ipv6_1_3001"),
    ("http://" + "a" * 80 + ".example/mcp", "a" * 40),
])
def test_a_client_made_from_a_url_gets_a_short_valid_default_name(url, name):
    """yiemagent-defined: host, port and path without a last ``/mcp``; never a password or query value."""
    from yiemagent.mcp import MCPClient

    client = MCPClient(url)
    assert client.name == name and VALID_NAME.match(client.name)
    client.close()


def test_an_agent_given_urls_only_prefixes_a_clash_with_a_readable_name(sdk_server, sdk_server_json):
    """yiemagent-defined: ``Agent(mcp_servers=[url, url])``: the first server keeps ``add``, the second's is
    ``<host>_<port>_add`` (no URL punctuation, no hash) and the model's call of it runs there.
    """
    from yiemagent import Agent
    from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

    port = sdk_server_json.split(":")[-1].split("/")[0]
    prefixed = f"127_0_0_1_{port}_add"
    llm = ScriptedLLM([tool_call_reply(prefixed, {"a": 40, "b": 2}), text_reply("42")])
    agent = Agent(llm, mcp_servers=[sdk_server, sdk_server_json])
    try:
        assert agent.ask("add", timeout_seconds=10)["content"] == "42"
        servers = {entry["name"]: entry["server"] for entry in agent.mcp.describe()}
    finally:
        agent.shutdown()
    assert servers["add"] == f"127_0_0_1_{sdk_server.split(':')[-1].split('/')[0]}"
    assert servers[prefixed] == f"127_0_0_1_{port}"
    assert llm.calls[1]["messages"][-1]["content"] == "42"
