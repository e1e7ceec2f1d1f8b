"""Cases from public reports against MCP clients, HTTP side (issue 9, point 9).

Each test is named after its source and says what the report showed. Real servers where they can show the
behaviour; the raw peer where the report is about a shape real servers here do not send (said per test).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.helpers import RecordingSession
from tests.servers.raw_http_peer import REQUEST_ID, Reply
from yiemagent.exceptions import MCPProtocolError, MCPTransportError
from yiemagent.mcp import HTTPTransport, MCPClient


def test_python_sdk_2110_http_500_fails_the_call_at_once_with_status_and_body(raw_peer):
    """modelcontextprotocol/python-sdk #2110 (also #1010, PR #2047; PrefectHQ/fastmcp #2595): a 5xx after
    the handshake was logged and swallowed, and the caller hung forever. Raw peer (a real server does not
    answer 500 on demand): ``MCPTransportError`` at once with ``status_code`` 500 and the body; a
    ``tools/call`` is not retried; the next call works.
    """
    peer = raw_peer()
    peer.script("tools/call", Reply(500, body="upstream exploded", headers={"Content-Type": "text/plain"}))
    with MCPClient(peer.url, timeout_seconds=10) as client:
        client.connect()
        started = time.monotonic()
        with pytest.raises(MCPTransportError) as caught:
            client.call_tool("get_time")
        assert time.monotonic() - started < 1.0
        assert caught.value.status_code == 500 and "upstream exploded" in caught.value.body
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
    assert peer.count("tools/call") == 2


def test_python_sdk_1943_a_server_without_a_get_stream_never_blocks_requests(raw_peer):
    """modelcontextprotocol/python-sdk PR #1943: when the standalone GET failed with 405, the client gave up
    on it silently and later requests blocked forever (Dapr Agents against GitHub's MCP server). Raw peer
    (it answers GET with 405; the real servers here all offer the stream): ``listen=True`` costs one GET,
    the listener ends, and requests answer at once.
    """
    peer = raw_peer()
    client = MCPClient(peer.url, timeout_seconds=10, listen=True)
    try:
        started = time.monotonic()
        assert [t["name"] for t in client.list_tools()] == ["get_time"]
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
        assert time.monotonic() - started < 2
        listener = client.transport._listener
        listener._thread.join(5)
        assert not listener.alive
    finally:
        client.close()
    assert peer.count("GET") == 1


def test_prompts_chat_1117_a_get_answered_with_json_is_not_reopened_forever(raw_peer):
    """f/prompts.chat PR #1117 (also awslabs/mcp #3352, asciimoo/hister #691): servers answer the standalone
    ``GET`` with ``200 application/json`` (or a web page); clients took it for a broken stream and
    reconnected in a loop (~95% of that server's requests). Raw peer (the shape is the servers' bug): one
    ``GET``, the listener stops at once, requests work.
    """
    peer = raw_peer()
    peer.script("GET", Reply(200, body='{"name": "not a stream"}', headers={"Content-Type": "application/json"}))
    client = MCPClient(peer.url, timeout_seconds=5, listen=True)
    try:
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
        listener = client.transport._listener
        listener._thread.join(1.0)
        assert not listener.alive
        time.sleep(1.2)  # past the 1 s retry delay: nothing reopens it
    finally:
        client.close()
    assert peer.count("GET") == 1


def test_go_mcp_136_json_and_sse_replies_with_a_charset_parameter_are_read(raw_peer):
    """ThinkInAIXYZ/go-mcp PR #136 and junjiem/dify-plugin-agent-mcp_sse PR #88: a reply with
    ``Content-Type: application/json; charset=utf-8`` was refused as an unexpected content type. Raw peer
    (to choose the exact header): the media type is compared without parameters and case, for JSON and SSE.
    """
    peer = raw_peer()
    peer.script("tools/list", Reply(body='{"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}',
                                    headers={"Content-Type": "Application/JSON; charset=utf-8"}))
    peer.script("tools/call", Reply(sse=[{"jsonrpc": "2.0", "id": REQUEST_ID, "result": {"content": [
        {"type": "text", "text": "é"}]}}], headers={"Content-Type": "text/event-stream; charset=UTF-8"}))
    with MCPClient(peer.url, timeout_seconds=5) as client:
        assert client.list_tools() == []
        assert client.call_tool("get_time")["content"][0]["text"] == "é"


def test_csharp_sdk_1527_requests_carry_a_plain_application_json_content_type(sdk_server):
    """modelcontextprotocol/csharp-sdk #1527: the client sent ``Content-Type: application/json;
    charset=utf-8`` and spec-strict servers answered 415. Real SDK server, recorded requests: every POST
    says exactly ``application/json`` and accepts both reply types.
    """
    http = RecordingSession()
    client = MCPClient(transport=HTTPTransport(sdk_server, session=http, timeout_seconds=10))
    with client:
        client.call_tool("add", {"a": 1, "b": 1})
    posts = [r for r in http.sent if r.method == "POST"]
    assert posts and all(r.headers["content-type"] == "application/json" for r in posts)
    assert all(r.headers["accept"] == "application/json, text/event-stream" for r in posts)


def test_python_sdk_2393_a_stream_that_drops_after_each_event_is_not_resumed_forever(raw_peer):
    """modelcontextprotocol/python-sdk #2393 (PRs #2397/#2398; also #3257): a server that delivers an event
    with an id and drops the stream, on every resume, made the client reconnect forever (the counter was
    reset on each partial delivery). Raw peer (no real server drops streams on demand): at most 5 resumes,
    then ``MCPTransportError``, well inside the timeout; ``tools/call`` went out once.
    """
    peer = raw_peer()
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "working"}}
    peer.script("tools/call", Reply(sse=["id: 1\nretry: 10\n", f"event: message\ndata: {json.dumps(note)}\n\n"]))
    peer.script("GET", *[Reply(sse=[f"id: {n}\nretry: 10\n", note]) for n in range(2, 20)])
    with MCPClient(peer.url, timeout_seconds=10) as client:
        client.connect()
        started = time.monotonic()
        with pytest.raises(MCPTransportError, match="ended without the response"):
            client.call_tool("get_time")
        assert time.monotonic() - started < 5
    assert peer.count("GET") == 5 and peer.count("tools/call") == 1


def test_typescript_sdk_2682_a_standby_stream_closed_at_once_is_not_reopened_forever(raw_peer):
    """modelcontextprotocol/typescript-sdk #2682 (and python-sdk #3356): a server that gracefully ends the
    standby GET stream right away made the client reopen it forever. Raw peer (it ends the stream at once,
    asking for a 10 ms retry): the listener reopens it a bounded number of times (6), then stops.
    """
    peer = raw_peer()
    peer.script("GET", *[Reply(sse=["retry: 10\n\n"]) for _ in range(50)])
    client = MCPClient(peer.url, timeout_seconds=5, listen=True)
    try:
        client.connect()
        listener = client.transport._listener
        listener._thread.join(5)
        assert not listener.alive
    finally:
        client.close()
    assert peer.count("GET") == 6


def test_agentchattr_80_a_session_id_header_sent_twice_is_taken_once(raw_peer):
    """bcurts/agentchattr #80 (fixed by PR #79): a proxy sent ``Mcp-Session-Id`` twice with the same value;
    clients that join repeated headers echoed ``abc123, abc123`` and every request got 404 (Claude Code, the
    Python SDK). Raw peer (the duplicate is the proxy's bug): the same value twice is one session id, sent
    back alone; two different values are refused with ``MCPProtocolError``.
    """
    peer = raw_peer(sessions=False)
    init = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "p", "version": "0"}}
    peer.script("initialize", Reply(headers={"Mcp-Session-Id": ["abc123", "abc123"]}, result=init, framing="length"),
                Reply(headers={"Mcp-Session-Id": ["abc123", "zzz999"]}, result=init, framing="length"))
    with MCPClient(peer.url, timeout_seconds=5) as client:
        client.call_tool("get_time")
    assert peer.received("tools/call")[0].headers["mcp-session-id"] == "abc123"
    second = MCPClient(peer.url, timeout_seconds=5, retry_attempts=1)
    with pytest.raises(MCPProtocolError, match="two different"):
        second.connect()
    second.close()


def test_laravel_mcp_132_the_session_header_in_any_capitalization_is_taken(raw_peer):
    """laravel/mcp PR #132 and modelcontextprotocol PR #1325: servers spell it ``MCP-Session-Id``,
    ``Mcp-Session-Id`` or ``mcp-session-id`` (HTTP names are case-insensitive, RFC 9110 5.1). Raw peer, to
    choose the spelling: each is taken and sent back.
    """
    init = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "p", "version": "0"}}
    for spelling in ("MCP-Session-Id", "mcp-session-id"):
        peer = raw_peer(sessions=False)
        peer.script("initialize", Reply(headers={spelling: "s-77"}, result=init))
        with MCPClient(peer.url, timeout_seconds=5) as client:
            client.call_tool("get_time")
        assert peer.received("tools/call")[0].headers["mcp-session-id"] == "s-77"
