"""Issue 16 point 3: resources, resource templates, subscriptions, prompts and completion, against real servers.

Servers: the ``mcp`` 2.3 SDK server (tests/servers/sdk_server.py), npm server-everything, and fastmcp with
``list_page_size=25`` (paging). The raw peer only where no real server sends the shape (said in each test).
"""

from __future__ import annotations

import threading
import time
import warnings

import pytest

from tests.servers.raw_http_peer import Reply
from yiemagent import Agent, ImageContent, TextContent, UserMessage
from yiemagent.exceptions import MCPProtocolError, MCPRPCError, YiemagentWarning
from yiemagent.mcp import MCPClient, attach_resource, prompt_messages, read_resource_tool
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

# --------------------------------------------------------------------------- resources (SDK server)


def test_resources_templates_and_reads_of_the_sdk_server(sdk_server, open_client):
    client = open_client(sdk_server)
    resources = {r["uri"]: r for r in client.list_resources()}
    assert {"notes://readme", "notes://logo.png", "notes://data.bin"} <= set(resources)
    assert resources["notes://readme"]["title"] == "Read me" and resources["notes://readme"]["mimeType"] == "text/plain"
    assert [t["uriTemplate"] for t in client.list_resource_templates()] == ["notes://{name}"]
    assert client.read_resource("notes://readme") == [
        {"uri": "notes://readme", "mimeType": "text/plain", "text": "Read me first."}]
    assert client.read_resource("notes://todo")[0]["text"] == "1. write tests"  # through the template
    blob = client.read_resource("notes://logo.png")[0]
    assert blob["mimeType"] == "image/png" and blob["blob"].startswith("iVBORw0KGgo")


def test_reading_an_unknown_resource_raises_the_servers_json_rpc_error(sdk_server, open_client):
    client = open_client(sdk_server)
    with pytest.raises(MCPRPCError):
        client.read_resource("nowhere://x")


def test_attach_resource_gives_user_message_parts_text_image_and_a_binary_line(sdk_server, open_client):
    """The user attaches resources to a message: text with its URI, the PNG as an image, binary as a line."""
    client = open_client(sdk_server)
    text, = attach_resource(client, "notes://readme")
    image, = attach_resource(client, "notes://logo.png")
    binary, = attach_resource(client, "notes://data.bin")
    assert text == TextContent("[resource notes://readme text/plain]\nRead me first.")
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert binary == TextContent("[resource notes://data.bin application/octet-stream, 5 bytes]")
    message = UserMessage([TextContent("What does this say?"), text, image])
    assert [type(p).__name__ for p in message.content] == ["TextContent", "TextContent", "ImageContent"]


def test_an_attached_resource_reaches_the_model_in_the_user_message(sdk_server):
    llm = ScriptedLLM([text_reply("ok")])
    agent = Agent(llm, mcp_servers={"notes": sdk_server})
    try:
        parts = attach_resource(agent.mcp.clients[0], "notes://readme")
        agent.ask(UserMessage([TextContent("Summarise:"), *parts]), timeout_seconds=10)
    finally:
        agent.shutdown()
    sent = llm.calls[0]["messages"][-1]
    assert sent["role"] == "user" and "Read me first." in str(sent["content"])
    assert "notes://readme" in str(sent["content"])


def test_the_builtin_read_resource_tool_reads_what_the_model_asks(sdk_server):
    """Opt-in builtin tool: the model follows a URI and gets the contents as its tool result."""
    llm = ScriptedLLM([tool_call_reply("read_resource", {"uri": "notes://todo"}), text_reply("done")])
    agent = Agent(llm, mcp_servers={"notes": sdk_server})
    try:
        offered_before = "read_resource" in agent.tools
        agent.tools.add(agent.mcp.read_resource_tool())
        agent.ask("what is on my list?", timeout_seconds=10)
    finally:
        agent.shutdown()
    assert not offered_before  # opt-in
    tool_message = llm.calls[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "1. write tests" in str(tool_message["content"])
    assert agent.tools.get("read_resource").annotations == {"readOnlyHint": True, "title": "Read a resource"}


def test_read_resource_tool_errors_are_results_naming_the_servers(sdk_server, open_client):
    clients = [open_client(sdk_server, name="a"), open_client(sdk_server, name="b")]
    tool = read_resource_tool(clients)
    event = threading.Event()
    assert "name one with 'server'" in tool.execute("1", {"uri": "notes://readme"}, event).text
    assert "no MCP server named 'c'" in tool.execute("1", {"uri": "notes://readme", "server": "c"}, event).text
    refused = tool.execute("1", {"uri": "nowhere://x", "server": "b"}, event)
    assert refused.is_error and "JSON-RPC error" in refused.text
    assert "Read me first." in tool.execute("1", {"uri": "notes://readme", "server": "a"}, event).text


# --------------------------------------------------------------------------- subscriptions


def test_subscribe_delivers_resource_updates_to_the_callback_and_unsubscribe_stops_them(sdk_server, open_client):
    """Old era: ``resources/subscribe``; the update comes on the standalone stream, which subscribing opens."""
    client = open_client(sdk_server)
    got: list[dict] = []
    arrived = threading.Event()
    client.subscribe_resource("notes://readme", lambda params: (got.append(params), arrived.set()))
    assert client.call_tool("touch_note", {"uri": "notes://readme"})["content"][0]["text"] == "updated"
    assert arrived.wait(5) and got == [{"uri": "notes://readme"}]
    client.unsubscribe_resource("notes://readme")
    assert client.call_tool("touch_note", {"uri": "notes://readme"})["content"][0]["text"] == "not subscribed"


def test_subscribing_where_the_server_announces_no_subscriptions_says_so(fastmcp_server, open_client):
    client = open_client(fastmcp_server)
    with pytest.raises(MCPProtocolError, match="does not announce resource subscriptions"):
        client.subscribe_resource("res://r/00", lambda params: None)


# --------------------------------------------------------------------------- prompts and completion


def test_prompts_list_get_and_messages_of_the_sdk_server(sdk_server, open_client):
    client = open_client(sdk_server)
    prompt, = [p for p in client.list_prompts() if p["name"] == "code_review"]
    assert prompt["title"] == "Code review"
    assert [a["name"] for a in prompt["arguments"]] == ["code", "language"]
    result = client.get_prompt("code_review", {"code": "x = 1", "language": "rust"})
    messages = prompt_messages(result)
    assert len(messages) == 1 and messages[0].text == "Please review this rust code:\nx = 1"
    with pytest.raises(MCPRPCError):
        client.get_prompt("code_review", {})  # a required argument is missing


def test_completion_of_a_prompt_argument_and_a_resource_template_variable(sdk_server, open_client):
    client = open_client(sdk_server)
    completion = client.complete({"type": "ref/prompt", "name": "code_review"}, {"name": "language", "value": "p"})
    assert completion == {"values": ["python", "pyret", "perl"], "total": 3, "hasMore": False}
    assert client.complete({"type": "ref/resource", "uri": "notes://{name}"},
                           {"name": "name", "value": "t"})["values"] == ["todo"]
    with pytest.raises(ValueError):
        client.complete({"type": "ref/tool", "name": "x"}, {"name": "a", "value": ""})


def test_everything_server_prompts_with_an_embedded_resource_and_completion_with_context(everything_server,
                                                                                          open_client):
    client = open_client(everything_server)
    assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= {
        p["name"] for p in client.list_prompts()}
    messages = prompt_messages(client.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": "3"}))
    assert "[resource demo://resource/dynamic/text/3 text/plain]\nResource 3:" in messages[-1].text
    team = client.complete({"type": "ref/prompt", "name": "completable-prompt"}, {"name": "name", "value": ""},
                           {"department": "Engineering"})
    assert team["values"] == ["Alice", "Bob", "Charlie"]
    assert len(client.list_resources()) >= 7 and len(client.list_resource_templates()) == 2


# --------------------------------------------------------------------------- paging


def test_ibm_context_forge_4664_resources_and_prompts_are_paged_through_every_page(fastmcp_server, open_client):
    """IBM/mcp-context-forge #4664 and Hmbown/Codewhale #1256: only the first page of resources/prompts was
    returned. Real fastmcp with ``list_page_size=25``: 30 resources and 30 prompts come back whole.
    Before: yiemagent had no resource or prompt listing at all (AttributeError); after: 30 and 30.
    """
    client = open_client(fastmcp_server)
    resources, prompts = client.list_resources(), client.list_prompts()
    assert [r["uri"] for r in resources] == [f"res://r/{i:02d}" for i in range(30)]
    assert [p["name"] for p in prompts] == [f"p_{i:02d}" for i in range(30)]
    assert client.read_resource("res://r/29")[0]["text"] == "resource 29"


def test_mcp_use_2470_a_repeated_resources_cursor_stops_paging_with_a_warning(raw_peer, open_client):
    """mcp-use/mcp-use #2470 (PR #2471): ``listAllResources`` looped forever on a repeated cursor. Raw peer:
    no real server repeats a cursor. The tools/list guard now covers every listing: paging stops, with
    a ``YiemagentWarning``, keeping what was listed. Before: no resource listing (AttributeError).
    """
    peer = raw_peer()
    page = {"resources": [{"uri": "a://1", "name": "one"}], "nextCursor": "same"}
    peer.script("resources/list", *[Reply(result=page)] * 3)
    client = open_client(peer.url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resources = client.list_resources()
    assert [r["uri"] for r in resources] == ["a://1"]
    assert peer.count("resources/list") == 2
    assert any(issubclass(w.category, YiemagentWarning) and "repeated cursor" in str(w.message) for w in caught)


def test_malformed_resources_and_prompts_are_skipped_one_by_one(raw_peer, open_client):
    """Raw peer: no real server lists a resource without ``uri`` or a prompt with non-list ``arguments``
    (their SDKs refuse to build them). The valid items stay usable; ``skipped`` names the others.
    """
    peer = raw_peer()
    peer.script("resources/list", Reply(result={"resources": [
        {"uri": "a://ok", "name": "ok"}, {"name": "no uri"}, "junk", {"uri": "a://no-name"}]}))
    peer.script("prompts/list", Reply(result={"prompts": [
        {"name": "good"}, {"name": "bad", "arguments": "city"}, {"title": "nameless"}]}))
    client = open_client(peer.url)
    resources = client.list_resources()
    assert [r["uri"] for r in resources] == ["a://ok"]
    assert [s["item"] for s in resources.skipped] == ["no uri", "'junk'", "a://no-name"]
    prompts = client.list_prompts()
    assert [p["name"] for p in prompts] == ["good"]
    assert [s["reason"] for s in prompts.skipped] == [
        "'arguments' is not a list of {name, ...} objects", "no string 'name'"]



def test_resources_prompts_and_completion_in_the_2026_07_28_era(modern_only_server):
    """The same calls against a server that speaks only 2026-07-28 (requests carry ``_meta`` and headers)."""
    with MCPClient(modern_only_server, protocol_version=None, timeout_seconds=10) as client:
        assert {"notes://readme", "notes://logo.png"} <= {r["uri"] for r in client.list_resources()}
        assert client.era == "modern"
        assert client.read_resource("notes://todo")[0]["text"] == "1. write tests"
        assert [t["uriTemplate"] for t in client.list_resource_templates()] == ["notes://{name}"]
        assert prompt_messages(client.get_prompt("code_review", {"code": "y"}))[0].text.endswith("y")
        assert client.complete({"type": "ref/prompt", "name": "code_review"},
                               {"name": "language", "value": "r"})["values"] == ["rust"]


def test_subscriptions_in_the_2026_07_28_era_go_through_subscriptions_listen(modern_only_server):
    """2026-07-28 has no ``resources/subscribe``: the URI joins ``resourceSubscriptions`` of the listen stream;
    unsubscribing reopens the stream without it (the server then sends nothing for that URI).
    """
    with MCPClient(modern_only_server, protocol_version=None, timeout_seconds=10) as client:
        got: list[str] = []
        arrived = threading.Event()
        client.subscribe_resource("notes://readme", lambda params: (got.append(params["uri"]), arrived.set()))
        deadline = time.monotonic() + 5
        while not (client.subscription_acknowledged or {}).get("resourceSubscriptions") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert client.subscription_acknowledged["resourceSubscriptions"] == ["notes://readme"]
        client.call_tool("touch_note", {"uri": "notes://readme"})
        assert arrived.wait(5) and got == ["notes://readme"]
        client.unsubscribe_resource("notes://readme")
        deadline = time.monotonic() + 5
        while (client.subscription_acknowledged or {}).get("resourceSubscriptions") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not (client.subscription_acknowledged or {}).get("resourceSubscriptions")
        client.call_tool("touch_note", {"uri": "notes://readme"})
        time.sleep(0.5)
        assert got == ["notes://readme"]


def test_subscriptions_over_stdio_deliver_server_everythings_updates(everything_stdio):
    """Over stdio there is no GET stream: updates come on the one channel and still reach the callback.
    server-everything's ``toggle-subscriber-updates`` sends ``notifications/resources/updated`` for every
    subscribed URI (every 5 s).
    """
    command, *args = everything_stdio
    with MCPClient.stdio(command, args) as client:
        got: list[dict] = []
        arrived = threading.Event()
        client.subscribe_resource("demo://resource/dynamic/text/1", lambda params: (got.append(params), arrived.set()))
        client.call_tool("toggle-subscriber-updates")
        assert arrived.wait(12)
        assert got[0] == {"uri": "demo://resource/dynamic/text/1"}
