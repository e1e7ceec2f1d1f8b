"""Every deadline holds whatever the framing of the body and however slowly it arrives (issue 9, point 7).

yiemagent-defined. Raw peer: a server that sends a byte every 0.5 s, or lies about its length, is a shape
no real MCP server produces on demand. A socket timeout bounds one ``recv`` only; the session's watchdog
bounds the whole request. Tests taking ``era`` run in both eras (``RawPeer(modern=True)``); the drip's
2026-07-28 twin is in test_modern_hostile.py (two cases, to keep the run short).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.mcp.conftest import MODERN, assert_era
from tests.servers.raw_http_peer import REQUEST_ID, Reply
from yiemagent._internal.deadlines import WATCHDOG
from yiemagent.exceptions import MCPTimeoutError, MCPTransportError
from yiemagent.mcp import MCPClient

RESULT = {"content": [{"type": "text", "text": "slow"}]}


def sse_body(result: dict) -> str:
    return f"event: message\ndata: {json.dumps({'jsonrpc': '2.0', 'id': 2, 'result': result})}\n\n"


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
@pytest.mark.parametrize("kind", ["json", "sse"])
def test_a_reply_dripping_a_byte_every_half_second_ends_at_the_deadline(raw_peer, framing, kind):
    """Status line, headers and body arrive a byte every 0.5 s (each read is quick, the whole would take
    minutes): ``tools/call`` with a 2 s timeout raises ``MCPTimeoutError`` at 2 s, for ``Content-Length``,
    chunked and close-delimited bodies, JSON and SSE alike; the next call works.
    """
    peer = raw_peer()
    if kind == "json":
        reply = Reply(result=RESULT, framing=framing, drip_seconds=0.5)
    else:
        reply = Reply(sse=[{"jsonrpc": "2.0", "id": REQUEST_ID, "result": RESULT}], framing=framing,
                      drip_seconds=0.5)
    peer.script("tools/call", reply)
    with MCPClient(peer.url, timeout_seconds=10) as client:
        client.connect()
        started = time.monotonic()
        with pytest.raises(MCPTimeoutError):
            client.call_tool("get_time", timeout_seconds=2)
        elapsed = time.monotonic() - started
        assert 1.9 < elapsed < 2.8
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
    assert WATCHDOG.armed == 0


@pytest.mark.parametrize("framing", ["length", "close", "chunked"])
def test_an_sse_event_is_seen_as_soon_as_it_arrives_whatever_the_framing(raw_peer, framing, era):
    """The response event comes first, then the peer keeps the stream open for 30 s: the call returns at
    once for a ``Content-Length`` body, a close-delimited one and a chunked one (no read-ahead waits for
    more bytes).
    """
    peer = raw_peer(modern=era == MODERN)
    body = sse_body(RESULT) + ": keep-alive\n" + " " * 10
    peer.script("tools/call", Reply(body=body, headers={"Content-Type": "text/event-stream"}, framing=framing,
                                    content_length=len(body) + 10_000 if framing == "length" else None,
                                    linger_seconds=30))
    with MCPClient(peer.url, timeout_seconds=10) as client:
        client.connect()
        assert_era(client, era)
        started = time.monotonic()
        assert client.call_tool("get_time")["content"][0]["text"] == "slow"
        assert time.monotonic() - started < 1.0


def test_a_body_shorter_than_its_content_length_fails_at_once_when_the_peer_closes(raw_peer, era):
    """``Content-Length`` promises more than comes, then the connection closes: a clear transport error at
    once, not a wait for the timeout.
    """
    peer = raw_peer(modern=era == MODERN)
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "result": RESULT})
    peer.script("tools/call", Reply(body=body[:20], headers={"Content-Type": "application/json"},
                                    framing="length", content_length=len(body)))
    with MCPClient(peer.url, timeout_seconds=10, retry_attempts=1) as client:
        client.connect()
        assert_era(client, era)
        started = time.monotonic()
        with pytest.raises(MCPTransportError) as caught:
            client.call_tool("get_time")
        assert time.monotonic() - started < 1.0
        assert not isinstance(caught.value, MCPTimeoutError)
