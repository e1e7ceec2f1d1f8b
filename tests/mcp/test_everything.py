"""MCPClient against npm ``@modelcontextprotocol/server-everything`` over Streamable HTTP (Node SDK;
replies are always SSE with LF line endings; an unknown session is HTTP 400, not 404).
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.helpers import RecordingSession, text_of
from yiemagent.mcp import result_to_tool_result
from yiemagent.messages import ImageContent

pytestmark = pytest.mark.node



def test_handshake_and_tools_list_show_the_reference_server_and_its_tools(everything_server, open_client):
    """The reference server negotiates 2025-11-25 and lists its 13-ish tools without paging."""
    client = open_client(everything_server)
    tools = {t["name"]: t for t in client.list_tools()}
    assert client.protocol_version == "2025-11-25"
    assert client.server_info["name"] == "mcp-servers/everything"
    assert 10 <= len(tools) <= 20
    assert {"echo", "get-sum", "get-tiny-image", "get-structured-content",
            "trigger-long-running-operation"} <= set(tools)
    assert tools["get-sum"]["inputSchema"]["required"] == ["a", "b"]


def test_echo_returns_the_message_with_non_ascii_intact(everything_server, open_client):
    """``echo`` answers ``Echo: <message>``; UTF-8 survives the Node SSE reply."""
    result = open_client(everything_server).call_tool("echo", {"message": "héllo ✓ 日本 🎉"})
    assert result == {"content": [{"type": "text", "text": "Echo: héllo ✓ 日本 🎉"}], "isError": False}


def test_get_sum_adds_two_numbers(everything_server, open_client):
    """``get-sum`` answers with the sum in its text."""
    result = open_client(everything_server).call_tool("get-sum", {"a": 2.5, "b": 4})
    assert result["isError"] is False
    assert text_of(result) == "The sum of 2.5 and 4 is 6.5."


def test_long_running_operation_streams_three_progress_notifications_before_its_result(
    everything_server, open_client
):
    """Spec (Progress): with ``_meta.progressToken`` the server streams 3 ``notifications/progress``
    and then the result in one SSE reply; each reaches the callback in order with our token.
    """
    http = RecordingSession()
    client = open_client(everything_server, session=http)
    seen: list[dict[str, Any]] = []
    result = client.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 3},
                              progress_callback=seen.append)
    assert result["isError"] is False
    assert "Long running operation completed" in text_of(result)
    assert [(p["progress"], p["total"]) for p in seen] == [(1, 3), (2, 3), (3, 3)]
    (call,) = http.rpc("tools/call")
    token = call.message["params"]["_meta"]["progressToken"]
    assert {p["progressToken"] for p in seen} == {token}


def test_unknown_tool_is_an_is_error_result_naming_invalid_params(everything_server, open_client):
    """Pinned server behaviour: the Node SDK answers an unknown tool with an ``isError`` result whose
    text carries MCP error -32602 (not a JSON-RPC error).
    """
    result = open_client(everything_server).call_tool("no-such-tool", {})
    assert result["isError"] is True
    assert "-32602" in text_of(result)
    assert "no-such-tool" in text_of(result)


def test_tiny_image_becomes_an_image_part_and_structured_content_keeps_its_text(everything_server, open_client):
    """Case C18/C17 with a real server: the image is an ``ImageContent`` (no base64 in text); a result
    with text and ``structuredContent`` keeps the text.
    """
    client = open_client(everything_server)
    image = result_to_tool_result(client.call_tool("get-tiny-image"))
    images = [part for part in image.content if isinstance(part, ImageContent)]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    assert images[0].data and images[0].data not in image.text
    weather = client.call_tool("get-structured-content", {"location": "New York"})
    converted = result_to_tool_result(weather)
    assert converted.text == text_of(weather)
    assert converted.details["structuredContent"] == weather["structuredContent"]


def test_client_initializes_again_when_the_node_server_answers_400_for_a_forgotten_session(
    everything_server, open_client
):
    """Case C13 with the Node SDK quirk: an unknown session is HTTP 400 "No valid session ID" here
    (404 in the spec); the client still re-initializes once and repeats the call.
    """
    http = RecordingSession()
    client = open_client(everything_server, session=http)
    client.connect()
    old_session = client.transport.session_id
    gone = requests.delete(everything_server, headers={"Mcp-Session-Id": old_session,
                                                       "MCP-Protocol-Version": "2025-11-25"}, timeout=5)
    assert gone.status_code == 200
    result = client.call_tool("get-sum", {"a": 1, "b": 2})
    assert text_of(result) == "The sum of 1 and 2 is 3."
    assert [r.status for r in http.rpc("tools/call")] == [400, 200]
    assert client.transport.session_id not in (None, old_session)
