"""Issue 16 points 3 and 4: tool annotations, the destructive-tool approval hook, ``outputSchema``, malformed
tool definitions, and embedded resources / resource links in tool results, against real servers.

Servers: the ``mcp`` 2.3 SDK server (tests/servers/sdk_server.py), npm server-everything, the fastmcp
hostile-text server over stdio. The raw peer only for tool definitions no real server sends (said there).
"""

from __future__ import annotations

import sys
import threading

import pytest

from tests.helpers import PYTHON
from tests.servers.hostile_resource_server import __file__ as HOSTILE_SERVER
from yiemagent import (
    Agent,
    BeforeToolCallResult,
    ImageContent,
    TextContent,
    ToolRegistry,
    approve_destructive_tools,
    is_destructive,
    tool,
)
from yiemagent.mcp import MCPClient, MCPToolset, result_to_tool_result
from yiemagent.models.openai_chat import model_request_body
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply


def _counts(client: MCPClient) -> dict[str, int]:
    import json

    return json.loads(client.call_tool("call_counts")["content"][0]["text"])


# --------------------------------------------------------------------------- annotations, title, icons


def test_annotations_title_and_icons_are_kept_on_the_tool(sdk_server, open_client):
    registry = ToolRegistry()
    MCPToolset([open_client(sdk_server)], registry).refresh()
    read_notes, delete_note, add = registry.get("read_notes"), registry.get("delete_note"), registry.get("add")
    assert read_notes.annotations == {"readOnlyHint": True, "title": "Read the notes"}
    assert read_notes.title == "Read the notes"
    assert read_notes.icons == [{"src": "https://example.com/notes.png", "mimeType": "image/png"}]
    assert delete_note.annotations == {"destructiveHint": True, "idempotentHint": True, "title": "Delete a note"}
    assert add.annotations == {} and add.title is None and add.icons is None  # the server sent none
    assert "annotations" not in str(read_notes.to_openai())  # hints are for the application, not the model


def test_annotations_reach_the_hooks_and_the_tool_execution_events(sdk_server):
    seen: dict[str, object] = {}

    def before(ctx, abort_event):
        seen["before"] = ctx.annotations
        return None

    def after(ctx):
        seen["after"] = ctx.annotations
        return None

    events = EventRecorder()
    llm = ScriptedLLM([tool_call_reply("read_notes", {}), text_reply("ok")])
    agent = Agent(llm, mcp_servers={"notes": sdk_server}, before_tool_call=before, after_tool_call=after,
                  event_sink=events)
    try:
        agent.ask("notes?", timeout_seconds=10)
    finally:
        agent.shutdown()
    expected = {"readOnlyHint": True, "title": "Read the notes"}
    assert seen == {"before": expected, "after": expected}
    start, = events.of_type("tool_execution_start")
    end, = events.of_type("tool_execution_end")
    assert start.annotations == expected and end.annotations == expected


def test_everything_server_annotations_reach_the_tools(everything_server, open_client):
    registry = ToolRegistry()
    MCPToolset([open_client(everything_server)], registry).refresh()
    assert registry.get("echo").annotations["readOnlyHint"] is True
    assert not is_destructive(registry.get("echo").annotations)
    assert registry.get("gzip-file-as-resource").annotations["destructiveHint"] is False


@pytest.mark.parametrize(("annotations", "destructive"), [
    (None, True), ({}, True), ({"readOnlyHint": True}, False), ({"readOnlyHint": True, "destructiveHint": True}, False),
    ({"destructiveHint": False}, False), ({"readOnlyHint": False}, True), ({"title": "x"}, True),
])
def test_apollo_mcp_server_510_destructive_hint_counts_only_when_not_read_only(annotations, destructive):
    """apollographql/apollo-mcp-server PR #510: ``destructiveHint`` defaults to true and must be ignored
    when ``readOnlyHint`` is true ("OpenAI doesn't appear to implement this correctly"). The spec's defaults:
    no annotations = destructive. Before: yiemagent had no such rule (no ``is_destructive``); after: as here.
    """
    assert is_destructive(annotations) is destructive


# --------------------------------------------------------------------------- approval of destructive tools


def _run_with_approval(url: str, calls: list[tuple[str, dict]], answer: str | None, **hook_kwargs):
    asked: list[str] = []

    def ask(prompt: str, abort_event: threading.Event) -> str | None:
        asked.append(prompt)
        return answer

    @tool
    def local_note(text: str) -> str:
        """A local tool without annotations."""
        return f"noted {text}"

    replies = [tool_call_reply(name, args) for name, args in calls] + [text_reply("ok")]
    llm = ScriptedLLM(replies)
    agent = Agent(llm, tools=[local_note], mcp_servers={"notes": url},
                  before_tool_call=approve_destructive_tools(ask, **hook_kwargs))
    try:
        agent.ask("go", timeout_seconds=20)
    finally:
        agent.shutdown()
    results = [m for m in llm.calls[-1]["messages"] if m["role"] == "tool"]
    return asked, results


def test_useful_software_executor_459_destructive_tools_need_approval_and_the_prompt_uses_the_title(
        sdk_server, open_client):
    """UsefulSoftwareCo/executor PR #459: "make destructive MCPs require approval by default", with
    ``annotations.title`` as the approval description. Real SDK server: ``delete_note`` (destructiveHint)
    and ``add`` (no annotations: destructive by the spec's defaults) are asked and, refused, not run;
    ``read_notes`` (readOnlyHint) and the local tool run without a question.
    Before: no ready-made approval hook (each application wrote its own); after: as asserted.
    """
    probe = open_client(sdk_server)
    before = _counts(probe)
    asked, results = _run_with_approval(
        sdk_server, [("delete_note", {"name": "todo"}), ("add", {"a": 1, "b": 2}), ("read_notes", {}),
                     ("local_note", {"text": "x"})], answer="n")
    after = _counts(probe)
    assert asked == ['Run Delete a note (destructive) with {"name": "todo"}? [y/N] ',
                     'Run add (destructive) with {"a": 1, "b": 2}? [y/N] ']
    assert after.get("delete_note", 0) == before.get("delete_note", 0)  # refused: never reached the server
    assert after.get("add", 0) == before.get("add", 0)
    assert after.get("read_notes", 0) == before.get("read_notes", 0) + 1
    texts = [str(r["content"]) for r in results]
    assert "the user did not approve this destructive tool" in texts[0] and "noted x" in texts[3]


def test_an_approved_destructive_tool_runs_and_undeclared_local_tools_can_be_asked_too(sdk_server):
    asked, results = _run_with_approval(sdk_server, [("delete_note", {"name": "todo"}), ("local_note", {"text": "y"})],
                                        answer="Yes", undeclared=True)
    assert len(asked) == 2 and asked[1].startswith("Run local_note (destructive)")
    assert "deleted todo" in str(results[0]["content"]) and "noted y" in str(results[1]["content"])


def test_the_approval_prompt_strips_escape_sequences_from_names_and_arguments():
    """The prompt goes to a terminal; the model writes the arguments: escape sequences are removed."""
    asked: list[str] = []
    hook = approve_destructive_tools(lambda prompt, ev: asked.append(prompt) or None, undeclared=True)
    from yiemagent import AgentTool, ToolCall, ToolCallContext

    wipe = AgentTool("rm", "", {"type": "object"}, lambda *a: None, annotations={"title": "Wipe\x1b]0;PWNED\x07 disk"})
    ctx = ToolCallContext(ToolCall("1", "rm", {"path": "\x1b]0;PWNED\x07a\x1b[2J"}), wipe, [])
    answer = hook(ctx, threading.Event())
    assert isinstance(answer, BeforeToolCallResult) and answer.block
    assert asked[0].startswith("Run Wipe disk (destructive) with {")
    assert not any(char in asked[0] for char in "\x1b\x07\x9b")


# --------------------------------------------------------------------------- outputSchema


def _call(registry: ToolRegistry, name: str, arguments: dict | None = None):
    return registry.call(name, arguments or {})


def test_mastra_22556_structured_content_that_breaks_the_output_schema_is_annotated_for_the_model(
        sdk_server, open_client, caplog):
    """mastra-ai/mastra PR #22556: ``structuredContent`` was never validated against ``outputSchema``, so a
    misbehaving server handed a malformed payload to the model unremarked. Real SDK server, ``bad_weather``
    answers ``{"temp_c": "warm"}`` for a schema of number + string. Issue 27's policy (validate, annotate, never
    hide): the model gets the server's result with a note naming the schema errors, logged at WARNING.
    """
    registry = ToolRegistry()
    MCPToolset([open_client(sdk_server)], registry).refresh()
    good = _call(registry, "weather", {"city": "Paris"})
    assert not good.is_error and good.details["structuredContent"] == {"temp_c": 21.5, "sky": "clear"}
    assert "outputSchema" not in good.text
    with caplog.at_level("WARNING", logger="yiemagent.mcp"):
        bad = _call(registry, "bad_weather")
    assert not bad.is_error and "warm" in bad.text  # what the server answered reaches the model
    assert "does not match the tool's outputSchema" in bad.text and "$.temp_c: 'warm' is not of type 'number'" \
        in bad.text and "'sky' is a required property" in bad.text
    assert bad.details["structuredContent"] == {"temp_c": "warm"} and "temp_c" in bad.details["output_schema_error"]
    assert any("does not conform" in r.getMessage() for r in caplog.records)


def test_claude_code_14465_a_text_only_success_of_a_tool_with_an_output_schema_reaches_the_model(
        sdk_server, open_client):
    """anthropics/claude-code #14465 and HexSleeves/tailscale-mcp PR #101 (issue 27): a tool that declares an
    ``outputSchema`` and answers a successful text-only result had become an error for the model (it reached the
    model before). IBM/mcp-context-forge #4208 asked that the missing ``structuredContent`` not pass silently:
    it reaches the model, with a note saying so.
    """
    registry = ToolRegistry()
    MCPToolset([open_client(sdk_server)], registry).refresh()
    result = _call(registry, "bad_weather", {"missing": True})
    assert not result.is_error and "no structuredContent" in result.text
    assert result.details["output_schema_error"].startswith("the result has no structuredContent")


@pytest.mark.parametrize(("city", "server_text"), [
    ("nowhere", "unknown city nowhere"), ("atlantis", "city under water")])
def test_typescript_sdk_1943_an_is_error_result_is_never_validated_against_the_output_schema(
        sdk_server, open_client, city, server_text):
    """modelcontextprotocol/typescript-sdk #1943 (PR #1945/#1947) and cyanheads/mcp-ts-core #241: clients
    validated the ``{"error": ...}`` envelope of an ``isError`` result against the success schema and threw,
    hiding the server's message. Real SDK server: ``weather`` fails without ``structuredContent``
    (``nowhere``) and with an error envelope (``atlantis``). Before and after: the model gets the server's
    own error text (yiemagent validated nothing before; now it validates, and skips ``isError`` results).
    """
    registry = ToolRegistry()
    MCPToolset([open_client(sdk_server)], registry).refresh()
    result = _call(registry, "weather", {"city": city})
    assert result.is_error and server_text in result.text and "outputSchema" not in result.text


def test_everything_server_structured_content_conforms_to_its_output_schema(everything_server, open_client):
    registry = ToolRegistry()
    MCPToolset([open_client(everything_server)], registry).refresh()
    result = _call(registry, "get-structured-content", {"location": "Chicago"})
    assert not result.is_error and set(result.details["structuredContent"]) >= {"temperature", "conditions"}


# --------------------------------------------------------------------------- malformed tool definitions


def test_arcade_mcp_340_one_malformed_tool_definition_never_hides_the_valid_ones(raw_peer, open_client):
    """ArcadeAI/arcade-mcp PR #340 ("skip listing tools that aren't valid ToolDefinitions") and
    sandialabs/atlas-ui-3 #727 (one tool's ``inputSchema`` ``{"type": "string"}`` broke every request).
    Raw peer: real SDKs refuse to build these definitions, so no real server sends them. The valid tools
    are registered; each malformed one is skipped with its reason; the loose ``{"type": "string"}``
    schema is loosened to an object schema (C20) so the request stays valid.
    Before: ``skipped`` was empty: the nameless item vanished silently and the four others were
    registered with their bad annotations/outputSchema ignored; after: all five skipped and listed.
    """
    peer = raw_peer(tools=[
        {"name": "first", "inputSchema": {"type": "object", "properties": {}}},
        {"inputSchema": {"type": "object"}},
        {"name": "list_schema", "inputSchema": ["type", "object"]},
        {"name": "string_hint", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": "yes"}},
        {"name": "list_annotations", "inputSchema": {"type": "object"}, "annotations": []},
        {"name": "string_output", "inputSchema": {"type": "object"}, "outputSchema": "a string"},
        {"name": "array_output", "inputSchema": {"type": "object"}, "outputSchema": {"type": "array"}},
        {"name": "lookup", "inputSchema": {"type": "string", "description": "the document title"}},
        {"name": "last", "inputSchema": {"type": "object", "properties": {}}},
    ])
    registry = ToolRegistry()
    toolset = MCPToolset([open_client(peer.url, name="peer")], registry)
    toolset.refresh()
    assert registry.names() == ["first", "array_output", "lookup", "last"]  # 2026-07-28: any outputSchema
    assert registry.get("lookup").to_openai()["function"]["parameters"]["type"] == "object"
    skipped = {entry["tool"]: entry["reason"] for entry in toolset.skipped}
    assert set(skipped) == {"{'inputSchema': {'type': 'object'}}", "list_schema", "string_hint", "list_annotations",
                            "string_output"}
    assert skipped["string_hint"] == "annotations.readOnlyHint is 'yes', not a boolean"
    assert skipped["list_schema"] == "inputSchema is a list, not an object"
    assert registry.call("last", {}).text == "called last"


# --------------------------------------------------------------------------- embedded resources and links


def test_strands_535_embedded_resources_and_resource_links_reach_the_model_as_content(sdk_server, open_client):
    """strands-agents/harness-sdk #535, anomalyco/opencode #7878 (PR #7879), coder/coder PR #23569: embedded
    resources were dropped or became ``[unsupported content type]``; agno #10009 and Kiro #8960: resource
    links dropped. Real SDK server ``notes_bundle``: a text resource, a PNG blob resource, a resource link.
    Before: the text resource and the link were already readable, the PNG blob was a placeholder
    ``[resource notes://logo.png image/png, 70 bytes]``; after: the PNG is an image part.
    """
    result = result_to_tool_result(open_client(sdk_server).call_tool("notes_bundle"))
    text, image, link = result.content
    assert text == TextContent("[resource notes://readme text/plain]\nRead me first.")
    assert isinstance(image, ImageContent) and image.mime_type == "image/png" and image.data.startswith("iVBOR")
    assert link == TextContent("[resource link notes://todo text/plain todo] The to-do list.")


def test_open_webui_24038_a_text_blob_resource_of_server_everything_is_read_not_a_placeholder(everything_server,
                                                                                             open_client):
    """open-webui/open-webui #24038: "MCP tool results with resource content type are silently dropped".
    server-everything's ``get-resource-reference`` with ``Blob`` embeds a base64 blob of type text/plain.
    Before: ``[resource demo://resource/dynamic/blob/2 text/plain, 55 bytes]``; after: its decoded text.
    """
    client = open_client(everything_server)
    result = result_to_tool_result(client.call_tool("get-resource-reference",
                                                    {"resourceType": "Blob", "resourceId": 2}))
    assert "[resource demo://resource/dynamic/blob/2 text/plain]\nResource 2: This is a base64 blob" in result.text
    links = result_to_tool_result(client.call_tool("get-resource-links", {"count": 2}))
    assert "[resource link demo://resource/dynamic/blob/1 text/plain Blob Resource 1] Resource 1:" in links.text


@pytest.mark.slow
def test_resource_text_from_a_hostile_server_reaches_the_model_through_the_text_policy():
    """Issue 15's text policy holds for resources: the embedded resource and the link description of a
    real (fastmcp, stdio) server carry terminal escape sequences; in the model request body they are
    ``\\u`` escapes (the ``json`` boundary), never raw ESC/C1 bytes.
    """
    client = MCPClient.stdio(PYTHON, [HOSTILE_SERVER], name="hostile")
    llm = ScriptedLLM([tool_call_reply("get_report", {}), text_reply("ok")])
    agent = Agent(llm, mcp_servers=[client], close_mcp_clients=True)
    try:
        agent.ask("report", timeout_seconds=20)
    finally:
        agent.shutdown()
    body = model_request_body({"messages": llm.calls[1]["messages"]})
    tool_message = next(m for m in llm.calls[1]["messages"] if m["role"] == "tool")
    assert "report://today" in str(tool_message["content"]) and "report://yesterday" in str(tool_message["content"])
    assert b"\x1b" not in body and "\x9b".encode() not in body and b"\\u001b]0;PWNED" in body
    assert sys.executable  # the server ran under this interpreter


def test_output_schema_of_the_2026_07_28_era_may_describe_any_json_value():
    """Spec 2026-07-28 (SEP-2106): ``outputSchema`` is any JSON Schema (2020-12 without ``$schema``) and
    ``structuredContent`` any JSON value, ``null`` included; a missing one still breaks the contract.
    """
    from yiemagent.mcp.tool_metadata import OutputCheck

    numbers = OutputCheck("ids", {"type": "array", "items": {"type": "integer"}})
    assert numbers.problem({"content": [], "structuredContent": [1, 2]}) is None
    assert "$[0]: 'x' is not of type 'integer'" in numbers.problem({"content": [], "structuredContent": ["x"]})
    assert OutputCheck("nothing", {"type": "null"}).problem({"content": [], "structuredContent": None}) is None
    assert "no structuredContent" in numbers.problem({"content": []})
    assert numbers.problem({"content": [], "isError": True, "structuredContent": "broken"}) is None
