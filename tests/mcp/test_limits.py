"""Size caps on what a server sends over HTTP (issue 9, point 3, HTTP part).

yiemagent-defined limits (``yiemagent.mcp.http_reply``): ``max_body_bytes`` for a JSON body,
``max_event_bytes`` for one SSE event, ``max_messages`` per request. Against the real SDK server with small
caps where it can produce the size (an ``echo`` of a long text, ``progress`` with many steps); the raw peer
only for what no real server sends (a ``Content-Length`` of 1 GB, a stream that never ends a line).
Tests taking ``era`` run in both eras (the 2026-07-28 SDK server answers a plain call with JSON, so the
SSE-event cap is tested in the handshake era only).
"""

from __future__ import annotations

import time

import pytest

from tests.mcp.conftest import MODERN, assert_era
from tests.servers.raw_http_peer import Reply
from yiemagent.exceptions import MCPProtocolError
from yiemagent.mcp import HTTPTransport, MCPClient
from yiemagent.mcp.http_reply import MAX_BODY_BYTES, MAX_EVENT_BYTES, MAX_MESSAGES


def client_with(url: str, **caps: int) -> MCPClient:
    return MCPClient(transport=HTTPTransport(url, timeout_seconds=10, **caps), retry_attempts=1)


def test_the_default_caps_are_documented_constants():
    """The defaults are the module constants and what ``HTTPTransport`` uses."""
    transport = HTTPTransport("http://127.0.0.1:1/mcp")
    assert (transport.max_body_bytes, transport.max_event_bytes, transport.max_messages) == (
        MAX_BODY_BYTES, MAX_EVENT_BYTES, MAX_MESSAGES) == (8 * 1024 * 1024, 8 * 1024 * 1024, 10_000)


def test_a_json_body_over_max_body_bytes_fails_that_call_and_the_next_works(sdk_server_json, era):
    """Real server, JSON replies: echoing 20,000 characters with a 10,000-byte cap fails with
    ``MCPProtocolError`` naming the limit; a short echo on the same client works.
    """
    with client_with(sdk_server_json, max_body_bytes=10_000) as client:
        client.connect()
        assert_era(client, era)
        with pytest.raises(MCPProtocolError, match="10000-byte limit"):
            client.call_tool("echo", {"text": "x" * 20_000})
        assert client.call_tool("echo", {"text": "short"})["content"][0]["text"] == "short"


def test_an_sse_event_over_max_event_bytes_fails_that_call_and_the_next_works(sdk_server):
    """Real server, SSE replies: an event over the cap fails with ``MCPProtocolError`` naming
    ``max_event_bytes``; the client goes on.
    """
    with client_with(sdk_server, max_event_bytes=10_000) as client:
        with pytest.raises(MCPProtocolError, match="max_event_bytes=10000"):
            client.call_tool("echo", {"text": "y" * 20_000})
        assert client.call_tool("echo", {"text": "fine"})["content"][0]["text"] == "fine"


def test_more_messages_than_max_messages_fail_that_call(sdk_server, era):
    """Real server: 30 progress notifications with ``max_messages=10`` fail the call with
    ``MCPProtocolError``; 5 steps pass.
    """
    with client_with(sdk_server, max_messages=10) as client:
        client.connect()
        assert_era(client, era)
        with pytest.raises(MCPProtocolError, match="over 10 messages"):
            client.call_tool("progress", {"steps": 30}, progress_callback=lambda p: None)
        assert client.call_tool("progress", {"steps": 5}, progress_callback=lambda p: None)["content"][0][
            "text"] == "done 5"


def test_a_content_length_over_the_cap_fails_before_reading_the_body(raw_peer, era):
    """Raw peer (announces 1 GB and sends 10 bytes, then keeps the connection open): refused at once from
    the header, nothing waits for the body.
    """
    peer = raw_peer(modern=era == MODERN)
    peer.script("tools/call", Reply(body=b"{" * 10, headers={"Content-Type": "application/json"},
                                    content_length=1 << 30, linger_seconds=30))
    with MCPClient(peer.url, timeout_seconds=10, retry_attempts=1) as client:
        client.connect()
        assert_era(client, era)
        started = time.monotonic()
        with pytest.raises(MCPProtocolError, match="Content-Length"):
            client.call_tool("get_time")
        assert time.monotonic() - started < 1.0


def test_an_endless_sse_line_stops_at_the_cap_without_keeping_it(raw_peer, era):
    """Raw peer: 4 MB of ``data:`` without any line break (chunked, 64 KB pieces) with a 1 MB cap: the call
    fails once the cap is passed, fast, not at the timeout.
    """
    peer = raw_peer(modern=era == MODERN)
    peer.script("tools/call", Reply(body=b"data: " + b"z" * (4 << 20), headers={"Content-Type": "text/event-stream"},
                                    framing="chunked", split=65536, linger_seconds=30))
    with client_with(peer.url, max_event_bytes=1 << 20) as client:
        client.connect()
        assert_era(client, era)
        started = time.monotonic()
        with pytest.raises(MCPProtocolError, match="max_event_bytes"):
            client.call_tool("get_time")
        assert time.monotonic() - started < 3.0
