"""``MCPServer.handle``: the transport-free dispatcher (issue 28 point 1), in-process."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.mcp.server.kit import SECRET, add, build, waiting_tool
from yiemagent.exceptions import ConfigError
from yiemagent.mcp.server import MCPServer, RequestContext, ToolReply
from yiemagent.mcp.server.wire import read_message, reply_bytes
from yiemagent.textpolicy import register_secrets
from yiemagent.tools import tool


def rpc(server: MCPServer, method: str, params: dict[str, Any] | None = None, context: RequestContext | None = None,
        request_id: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    reply = server.handle(message, context)
    assert reply is not None and reply["id"] == request_id
    return reply


@pytest.mark.parametrize(("asked", "answered"), [("2025-11-25", "2025-11-25"), ("2025-06-18", "2025-06-18"),
                                                 ("2025-03-26", "2025-03-26"), ("2024-11-05", "2024-11-05"),
                                                 ("1999-01-01", "2025-11-25")])
def test_initialize_negotiates_the_version(asked: str, answered: str) -> None:
    context = RequestContext()
    result = rpc(build(), "initialize", {"protocolVersion": asked, "capabilities": {"roots": {}},
                                         "clientInfo": {"name": "t", "version": "0"}}, context)["result"]
    assert result["protocolVersion"] == answered
    assert result["serverInfo"] == {"name": "kit", "version": "1.0"}
    assert result["instructions"] == "Use add for sums."
    assert set(result["capabilities"]) == {"tools", "logging", "completions", "resources", "prompts"}
    assert context.session.protocol_version == answered and context.session.client_capabilities == {"roots": {}}


def test_initialized_notification_and_ping() -> None:
    context = RequestContext()
    assert build().handle({"jsonrpc": "2.0", "method": "notifications/initialized"}, context) is None
    assert context.session.initialized
    assert rpc(build(), "ping")["result"] == {}


def test_tools_list_pages_with_next_cursor() -> None:
    server = build(page_size=2)
    first = rpc(server, "tools/list")["result"]
    assert [t["name"] for t in first["tools"]] == ["add", "leaky"]
    second = rpc(server, "tools/list", {"cursor": first["nextCursor"]})["result"]
    assert [t["name"] for t in second["tools"]] == ["steps"] and "nextCursor" not in second
    assert first["tools"][0]["inputSchema"]["required"] == ["a", "b"]
    assert rpc(server, "tools/list", {"cursor": "bogus"})["error"]["code"] == -32602


def test_tools_call_results_and_errors() -> None:
    server = build()
    ok = rpc(server, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})["result"]
    assert ok == {"content": [{"type": "text", "text": "5"}], "isError": False}
    bad = rpc(server, "tools/call", {"name": "add", "arguments": {"a": "x", "b": 3}})["result"]
    assert bad["isError"] is True and "$.a" in bad["content"][0]["text"]
    unknown = rpc(server, "tools/call", {"name": "nope", "arguments": {}})
    assert unknown["error"]["code"] == -32602 and "nope" in unknown["error"]["message"]
    assert rpc(server, "tools/call", {"arguments": {}})["error"]["code"] == -32602


def test_a_failing_tool_reports_no_secret_and_no_traceback() -> None:
    register_secrets([SECRET])
    result = rpc(build(), "tools/call", {"name": "leaky"})["result"]
    text = result["content"][0]["text"]
    assert result["isError"] is True and "RuntimeError" in text
    assert SECRET not in text and "***" in text and "Traceback" not in text


def test_structured_content_with_an_output_schema() -> None:
    server = MCPServer("s", "1")

    @tool
    def weather(city: str) -> dict[str, Any]:
        """Weather of a city."""
        return {"city": city, "celsius": 21} if city != "nowhere" else {"city": city}

    schema = {"type": "object", "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
              "required": ["city", "celsius"]}
    server.add_tool(weather, output_schema=schema)
    listed = rpc(server, "tools/list")["result"]["tools"][0]
    assert listed["outputSchema"] == schema
    result = rpc(server, "tools/call", {"name": "weather", "arguments": {"city": "Oslo"}})["result"]
    assert result["structuredContent"] == {"city": "Oslo", "celsius": 21} and result["isError"] is False
    assert '"celsius": 21' in result["content"][0]["text"]
    wrong = rpc(server, "tools/call", {"name": "weather", "arguments": {"city": "nowhere"}})["result"]
    assert wrong["isError"] is True and "outputSchema" in wrong["content"][0]["text"]
    with pytest.raises(ConfigError):
        server.add_tool(add, output_schema={"type": "string"})


def test_tool_reply_blocks_and_images_pass_as_mcp_content() -> None:
    audio = {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
    server = MCPServer("s", "1", tools=[tool(lambda: ToolReply([audio]), name="sound", description="d")])
    assert rpc(server, "tools/call", {"name": "sound"})["result"] == {"content": [audio], "isError": False}
    from yiemagent.messages import ImageContent

    server.add_tool(tool(lambda: ImageContent.from_base64("iVBO", "image/png"), name="pic", description="d"))
    result = rpc(server, "tools/call", {"name": "pic"})["result"]
    assert result["content"] == [{"type": "image", "data": "iVBO", "mimeType": "image/png"}]


def test_cancelled_notification_aborts_the_call_and_no_answer_is_sent() -> None:
    started = threading.Event()
    server = MCPServer("s", "1", tools=[waiting_tool(started)])
    context = RequestContext()
    answers: list[Any] = []
    worker = threading.Thread(target=lambda: answers.append(server.handle(
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "wait_for_abort"}}, context)))
    worker.start()
    assert started.wait(30)
    server.handle({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}, context)
    worker.join(30)
    assert answers == [None]
    assert context.session.calls == {}


def test_progress_and_log_notifications_go_to_the_context() -> None:
    notes: list[dict[str, Any]] = []
    context = RequestContext(notify=notes.append)
    result = rpc(build(), "tools/call", {"name": "steps", "arguments": {"count": 3}, "_meta": {"progressToken": "p"}},
                 context)["result"]
    assert result["content"][0]["text"] == "3 steps"
    progress = [n["params"] for n in notes if n["method"] == "notifications/progress"]
    assert progress == [{"progressToken": "p", "progress": i, "total": 3} for i in (1, 2, 3)]
    assert [n["params"]["data"] for n in notes if n["method"] == "notifications/message"] == ["steps done"]
    quiet: list[dict[str, Any]] = []
    context = RequestContext(notify=quiet.append)
    assert rpc(build(), "logging/setLevel", {"level": "error"}, context)["result"] == {}
    rpc(build(), "tools/call", {"name": "steps", "arguments": {"count": 1}}, context)
    assert quiet == []  # no progress token, and "info" is below "error"
    assert rpc(build(), "logging/setLevel", {"level": "loud"})["error"]["code"] == -32602


def test_resources_and_prompts() -> None:
    server = build()
    assert rpc(server, "resources/list")["result"]["resources"] == [
        {"uri": "memo://readme", "name": "readme", "description": "A memo", "mimeType": "text/plain"}]
    assert rpc(server, "resources/templates/list")["result"]["resourceTemplates"][0]["uriTemplate"] == \
        "memo://notes/{id}"
    assert rpc(server, "resources/read", {"uri": "memo://readme"})["result"]["contents"] == [
        {"uri": "memo://readme", "text": "hello", "mimeType": "text/plain"}]
    assert rpc(server, "resources/read", {"uri": "memo://notes/42"})["result"]["contents"][0]["text"] == "note 42"
    assert rpc(server, "resources/read", {"uri": "memo://nope"})["error"]["code"] == -32002
    listed = rpc(server, "prompts/list")["result"]["prompts"]
    assert listed == [{"name": "greet", "arguments": [{"name": "who", "required": True, "description": "whom"}],
                       "description": "Greets"}]
    got = rpc(server, "prompts/get", {"name": "greet", "arguments": {"who": "Ann"}})["result"]
    assert got["messages"] == [{"role": "user", "content": {"type": "text", "text": "Say hello to Ann"}}]
    assert rpc(server, "prompts/get", {"name": "greet"})["error"]["code"] == -32602
    assert rpc(server, "prompts/get", {"name": "nope"})["error"]["code"] == -32602
    assert rpc(server, "completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                               "argument": {"name": "who", "value": "A"}})["result"] == \
        {"completion": {"values": [], "hasMore": False}}
    bare = MCPServer("s", "1")
    assert rpc(bare, "resources/list")["error"]["code"] == -32601
    assert "resources" not in rpc(bare, "initialize", {"protocolVersion": "2025-11-25"})["result"]["capabilities"]


@pytest.mark.parametrize(("message", "code"), [
    ({"id": 1, "method": "ping"}, -32600),
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, -32600),
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, -32600),
    ({"jsonrpc": "2.0", "id": 1, "method": 5}, -32600),
    ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}, -32602),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/frobnicate"}, -32601),
    ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], -32600),
    ("ping", -32600),
])
def test_malformed_requests_get_the_json_rpc_codes(message: Any, code: int) -> None:
    reply = build().handle(message)
    assert reply is not None and reply["error"]["code"] == code


def test_notifications_and_responses_are_not_answered() -> None:
    assert build().handle({"jsonrpc": "2.0", "method": "notifications/whatever"}) is None
    assert build().handle({"jsonrpc": "2.0", "id": 3, "result": {}}) is None


def test_read_message_codes_and_reply_bytes_policy() -> None:
    assert read_message(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}') == (
        {"jsonrpc": "2.0", "id": 1, "method": "ping"}, None)
    assert read_message(b"{not json")[1]["error"]["code"] == -32700  # type: ignore[index]
    assert read_message(b"\xff\xfe")[1]["error"]["code"] == -32700  # type: ignore[index]
    assert read_message(b"42")[1]["error"]["code"] == -32600  # type: ignore[index]
    assert read_message(b"[1, 2]")[1]["error"]["code"] == -32600  # type: ignore[index]
    assert read_message(b"[" * 200 + b"]" * 200)[1] is not None
    register_secrets([SECRET])
    text = reply_bytes({"jsonrpc": "2.0", "id": 1, "result": {"x": float("nan"), "s": "a\ud800\n" + SECRET}})
    assert b"\n" not in text and SECRET.encode() not in text and b"null" in text


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ConfigError):
        MCPServer("s", "1", tools=[add, add])
    with pytest.raises(ConfigError):
        MCPServer("s", "1", page_size=0)
