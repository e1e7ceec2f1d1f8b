"""A peer that breaks the protocol ends the affected request at once with a clear ``MCPError``; the
connection stays usable (issue 9, point 7).

yiemagent-defined (MCP 2025-11-25 "Transports"; JSON-RPC 2.0; RFC 8259). Raw peer: real servers never
send invalid UTF-8, ``NaN``, responses for other ids or answers to notifications, so these are raw shapes.
Each test checks that the failure came at once (well under the 10 s timeout) and that the next request on
the same client works. Tests taking ``era`` run in both eras (``RawPeer(modern=True)`` answers
``server/discover``: the breaks are the same, the first request differs).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.mcp.conftest import MODERN, assert_era
from tests.servers.raw_http_peer import REQUEST_ID, Reply
from yiemagent.exceptions import MCPProtocolError, MCPRPCError
from yiemagent.mcp import MCPClient

SSE = {"Content-Type": "text/event-stream"}
JSON = {"Content-Type": "application/json"}


def sse(*events: str) -> bytes:
    return "".join(f"event: message\ndata: {e}\n\n" for e in events).encode()


def response(result_text: str = "late", request_id: object = 2) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text",
                                                                                   "text": result_text}]}})


BREAKS = {
    "invalid_utf8_in_sse": Reply(body=b"event: message\ndata: {\"a\": \"\xff\xfe\"}\n\n", headers=SSE,
                                 linger_seconds=30, framing="chunked"),
    "invalid_utf8_in_json": Reply(body=b'{"jsonrpc": "2.0", "id": 2, "result": {"x": "\xc3\x28"}}', headers=JSON),
    "sse_event_not_json": Reply(body=sse("{not json"), headers=SSE, linger_seconds=30, framing="chunked"),
    "nan_in_json": Reply(body='{"jsonrpc": "2.0", "id": 2, "result": {"x": NaN}}', headers=JSON),
    "number_out_of_range": Reply(body='{"jsonrpc": "2.0", "id": 2, "result": {"x": 1e999999}}', headers=JSON),
    "integer_over_digit_limit": Reply(body='{"jsonrpc": "2.0", "id": 2, "result": {"x": ' + "7" * 5000 + "}}",
                                      headers=JSON),
    "nesting_100k_deep": Reply(body='{"jsonrpc": "2.0", "id": 2, "result": {"x": ' + "[" * 100_000 + "]" * 100_000
                               + "}}", headers=JSON),
    "nesting_200_deep": Reply(body='{"jsonrpc": "2.0", "id": 2, "result": {"x": ' + "[" * 200 + "]" * 200 + "}}",
                              headers=JSON),
    "sse_response_for_another_id": Reply(body=sse(response(request_id=999)), headers=SSE, linger_seconds=30,
                                         framing="chunked"),
    "sse_response_with_a_bool_id": Reply(body=sse(response(request_id=True)), headers=SSE, linger_seconds=30,
                                         framing="chunked"),
    "message_not_an_object": Reply(body=sse("[1, 2]"), headers=SSE, linger_seconds=30, framing="chunked"),
    "empty_batch": Reply(body="[]", headers=JSON),
    "neither_request_nor_response": Reply(body=sse('{"jsonrpc": "2.0", "id": 2}'), headers=SSE, linger_seconds=30,
                                          framing="chunked"),
    "wrong_content_type": Reply(body="<html>hi</html>", headers={"Content-Type": "text/html"}),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_protocol_break_fails_the_request_at_once_and_the_next_call_works(raw_peer, name, era):
    """Each broken reply (the stream kept open afterwards where it is SSE) gives ``MCPProtocolError`` within
    1 s, never a wait for the 10 s timeout; the same client's next ``tools/call`` succeeds (both eras).
    """
    peer = raw_peer(modern=era == MODERN)
    peer.script("tools/call", BREAKS[name])
    with MCPClient(peer.url, timeout_seconds=10) as client:
        client.connect()
        assert_era(client, era)
        started = time.monotonic()
        with pytest.raises(MCPProtocolError) as caught:
            client.call_tool("get_time")
        assert time.monotonic() - started < 1.0, name
        assert caught.value.server and str(caught.value).startswith("tools/call to ")
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
    assert peer.count("tools/call") == 2  # never retried


def test_an_error_with_a_null_id_answers_the_pending_request(raw_peer, era):
    """JSON-RPC 2.0 section 5: a server that could not read the id answers ``id: null``; on the request's
    own stream that is its answer (``MCPRPCError`` with the server's code), not a protocol error (both eras).
    """
    peer = raw_peer(modern=era == MODERN)
    peer.script("tools/call", Reply(body='{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, '
                                         '"message": "Parse error"}}', headers=JSON))
    with MCPClient(peer.url, timeout_seconds=10) as client:
        with pytest.raises(MCPRPCError) as caught:
            client.call_tool("get_time")
    assert caught.value.code == -32700


def test_a_result_for_a_notification_is_a_protocol_error(raw_peer):
    """A server answering ``notifications/initialized`` (no id) with a JSON-RPC response breaks the
    protocol (MCP: 202 with no body): the handshake fails clearly instead of going on confused.
    """
    peer = raw_peer()
    peer.script("notifications/initialized", Reply(body=response(request_id=1), headers=JSON))
    client = MCPClient(peer.url, timeout_seconds=10, retry_attempts=1)
    with pytest.raises(MCPProtocolError, match="answered a notification"):
        client.connect()
    client.close()


def test_arguments_with_a_lone_surrogate_are_refused_before_anything_is_sent(raw_peer, era):
    """A string that cannot be encoded as UTF-8 (a lone surrogate, e.g. from a model's broken escape):
    ``MCPProtocolError`` at once, nothing reaches the server, and the client keeps working (both eras; in
    2026-07-28 the argument could also go to an ``Mcp-Param-*`` header: it never does).
    """
    peer = raw_peer(modern=era == MODERN)
    with MCPClient(peer.url, timeout_seconds=10) as client:
        with pytest.raises(MCPProtocolError, match="not valid Unicode"):
            client.call_tool("get_time", {"q": "bad \ud800 text"})
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
    assert peer.count("tools/call") == 1


def test_server_requests_and_notifications_before_the_response_still_work(raw_peer):
    """Control: a ping and a progress notification before the response on the same stream are handled
    (the ping is answered) and the response is taken.
    """
    peer = raw_peer()
    peer.script("tools/call", Reply(sse=[
        {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}},
        {"jsonrpc": "2.0", "id": REQUEST_ID, "result": {"content": [{"type": "text", "text": "ok"}]}},
    ]))
    with MCPClient(peer.url, timeout_seconds=10) as client:
        assert client.call_tool("get_time")["content"][0]["text"] == "ok"
    replies = [r.message for r in peer.requests if isinstance(r.message, dict) and r.message.get("id") == "srv-1"]
    assert replies == [{"jsonrpc": "2.0", "id": "srv-1", "result": {}}]


def test_an_event_id_outside_latin_1_is_sent_back_as_utf_8_when_resuming(raw_peer):
    """Found by scripts/fuzz_mcp_wire.py: a stream whose event id is ``"é€-1"`` ended early, and resuming
    raised ``UnicodeEncodeError`` from http.client (header values are Latin-1) instead of any MCP error. Now
    ``Last-Event-ID`` carries the id's UTF-8 bytes (WHATWG SSE) and the resumed stream gives the answer.
    """
    peer = raw_peer()
    peer.script("tools/call", Reply(sse=["id: é€-1\nretry: 10\ndata:\n\n"]))
    peer.script("GET", Reply(sse=[{"jsonrpc": "2.0", "id": REQUEST_ID, "result": {"content": [
        {"type": "text", "text": "resumed"}]}}]))
    with MCPClient(peer.url, timeout_seconds=10) as client:
        assert client.call_tool("get_time")["content"][0]["text"] == "resumed"
    (resume,) = peer.received("GET")
    assert resume.headers["last-event-id"].encode("latin-1").decode("utf-8") == "é€-1"


def test_nesting_up_to_the_limit_is_accepted(raw_peer, era):
    """Control for ``nesting_200_deep``: a result nested 100 levels (under ``MAX_JSON_DEPTH`` = 128, the
    stdio transport's rule too) arrives whole (both eras).
    """
    peer = raw_peer(modern=era == MODERN)
    deep = "[" * 100 + "]" * 100
    peer.script("tools/call", Reply(body='{"jsonrpc": "2.0", "id": 2, "result": {"content": [], "x": ' + deep + "}}",
                                    headers=JSON))
    with MCPClient(peer.url, timeout_seconds=10) as client:
        result = client.call_tool("get_time")
    depth, node = 0, result["x"]
    while isinstance(node, list):
        depth, node = depth + 1, node[0] if node else None
    assert depth == 100
