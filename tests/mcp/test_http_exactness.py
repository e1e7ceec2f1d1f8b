"""HTTPTransport exactness: HTTP error statuses, protocol-version negotiation (C15), SSE framing at the
socket level, malformed replies, 202 for a request, and SSE resumption with ``Last-Event-ID``.

Real servers give the 400/406/415 answers; the raw peer (tests/servers/raw_http_peer.py) only the
shapes they never send, as each docstring says.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import requests

from tests.helpers import RecordingSession
from tests.servers.raw_http_peer import REQUEST_ID, Reply
from yiemagent.exceptions import MCPProtocolError, MCPSessionExpiredError, MCPTimeoutError, MCPTransportError
from yiemagent.mcp import HTTPTransport, MCPClient
from yiemagent.mcp.bridge import MCPToolExecutor


class MangledSession(requests.Session):
    """Sends every request with some headers replaced, to provoke a real server's 4xx answers."""

    def __init__(self, **replace: str) -> None:
        super().__init__()
        self.replace = replace

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        request.headers.update(self.replace)
        return super().send(request, **kwargs)


def result_text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block.get("type") == "text")


# --------------------------------------------------------------------------- HTTP errors from real servers


WRONG_HEADERS = [
    ("sdk_server", {"Accept": "application/json"}, 406, "text/event-stream"),
    ("sdk_server", {"Content-Type": "text/plain"}, 400, "Content-Type"),  # the Python SDK says 400 here
    pytest.param("everything_server", {"Accept": "application/json"}, 406, "text/event-stream",
                 marks=pytest.mark.node),
    pytest.param("everything_server", {"Content-Type": "text/plain"}, 415, "Content-Type", marks=pytest.mark.node),
]


@pytest.mark.parametrize(("server", "replace", "status", "words"), WRONG_HEADERS)
def test_406_415_and_400_from_real_servers_are_transport_errors_with_status_and_body(
    request, server, replace, status, words
):
    """Spec (Streamable HTTP): a server refuses a wrong ``Accept`` (406) or ``Content-Type`` (415 from the
    Node SDK, 400 from the Python SDK); the client raises ``MCPTransportError`` carrying ``.status_code`` and
    the server's ``.body``, and does not retry it.
    """
    url = request.getfixturevalue(server)
    client = MCPClient(transport=HTTPTransport(url, session=MangledSession(**replace), timeout_seconds=5),
                       retry_sleep=pytest.fail)
    try:
        with pytest.raises(MCPTransportError) as caught:
            client.connect()
    finally:
        client.close()
    assert not isinstance(caught.value, MCPSessionExpiredError)
    assert caught.value.status_code == status
    assert words in caught.value.body
    assert f"HTTP {status}" in str(caught.value)


@pytest.mark.node
def test_bad_protocol_version_header_gives_server_everything_400_naming_the_supported_versions(
    everything_server, open_client
):
    """Spec (Versioning): a wrong ``MCP-Protocol-Version`` is a 400 from the Node SDK; it is reported with
    status and body, and not mistaken for an expired session although a session id was sent.
    """
    client = open_client(everything_server)
    client.connect()
    client.transport.set_protocol_version("1999-01-01")
    with pytest.raises(MCPTransportError) as caught:
        client.call_tool("echo", {"message": "x"})
    assert caught.value.status_code == 400
    assert "2025-11-25" in caught.value.body and "1999-01-01" in caught.value.body


def test_a_proxy_502_with_an_html_body_is_reported_with_status_and_body(raw_peer, no_sleep):
    """Raw peer: MCP servers never answer 502; a reverse proxy in front of one does (HTML body). After the
    retries of a safe method the error carries the status and the start of the body.
    """
    peer = raw_peer()
    page = Reply(502, body="<html><body>Bad Gateway: upstream mcp down</body></html>",
                 headers={"Content-Type": "text/html"})
    peer.script("tools/list", page, page, page)
    client = MCPClient(peer.url, timeout_seconds=5, retry_sleep=no_sleep.append)
    with pytest.raises(MCPTransportError) as caught:
        client.list_tools()
    client.close()
    assert caught.value.status_code == 502
    assert "upstream mcp down" in caught.value.body
    assert peer.count("tools/list") == 3 and len(no_sleep) == 2


# --------------------------------------------------------------------------- protocol versions (C15)


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26"])
def test_c15_an_older_supported_version_is_accepted_and_sent_on_every_later_request(raw_peer, version):
    """Case C15, raw peer: every real server here answers our latest version, so only the peer can answer an
    older one. ``initialize`` asks for 2025-11-25 without the header; every later request, including
    ``notifications/initialized``, carries the negotiated version.
    """
    peer = raw_peer(protocol_version=version)
    with MCPClient(peer.url, timeout_seconds=5) as client:
        client.list_tools()
        client.call_tool("get_time")
        assert client.protocol_version == version
    init, *later = peer.requests
    assert init.message["params"]["protocolVersion"] == "2025-11-25"
    assert "mcp-protocol-version" not in init.headers and "mcp-session-id" not in init.headers
    assert [r.method or r.http_method for r in later] == [
        "notifications/initialized", "tools/list", "tools/call", "DELETE"]
    assert all(r.headers["mcp-protocol-version"] == version for r in later)


def test_c15_an_unsupported_version_answer_is_refused_the_session_closed_and_nothing_else_sent(raw_peer):
    """Case C15 variant, raw peer: no real server answers a version newer than ours (server-everything
    answers 2025-11-25 to anything). The client raises ``MCPProtocolError`` naming it, DELETEs the session
    and sends neither ``notifications/initialized`` nor ``tools/list``.
    """
    peer = raw_peer(protocol_version="2099-01-01")
    client = MCPClient(peer.url, timeout_seconds=5)
    with pytest.raises(MCPProtocolError) as caught:
        client.list_tools()
    client.close()
    assert "2099-01-01" in str(caught.value) and "unsupported protocol version" in str(caught.value)
    assert caught.value.body == "2099-01-01"
    assert [(r.http_method, r.method) for r in peer.requests] == [("POST", "initialize"), ("DELETE", None)]
    assert peer.requests[1].headers["mcp-session-id"] == "s-1"
    assert "mcp-protocol-version" not in peer.requests[1].headers


@pytest.mark.node
def test_server_everything_answers_our_latest_version_and_gets_it_back_on_every_request(
    everything_server, open_client
):
    """Spec (Lifecycle): the Node reference server agrees to 2025-11-25; every later request says so."""
    http = RecordingSession()
    client = open_client(everything_server, session=http)
    client.call_tool("get-sum", {"a": 1, "b": 1})
    assert client.protocol_version == "2025-11-25"
    assert [r.headers.get("mcp-protocol-version") for r in http.sent] == [None, "2025-11-25", "2025-11-25"]


# --------------------------------------------------------------------------- SSE at the socket level


SSE_REPLY = [
    ": a comment line\n",
    "id: 7\ndata: \n\n",  # a priming event: empty data, not dispatched
    {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "héllo ✓ 日本"}},
    "data: {\"jsonrpc\": \"2.0\",\ndata:  \"method\": \"notifications/tools/list_changed\"}\n\n",  # 2 data lines,
    # no ``event:`` line
    {"jsonrpc": "2.0", "id": REQUEST_ID, "result": {"content": [{"type": "text", "text": "done ✓ 🎉"}]}},
]


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
@pytest.mark.parametrize("split", [1, 2, 3, 7, 64])
def test_sse_reply_split_at_arbitrary_byte_boundaries_gives_the_same_result(
    raw_peer, open_client, caplog, split, crlf
):
    """Raw peer: real servers write whole events, so only the peer can cut an SSE reply into 1..64-byte HTTP
    chunks (inside CRLF pairs and UTF-8 characters). Comments, a priming event, multi-line ``data`` and
    events without ``event:`` all parse; the notifications are handled before the result arrives.
    """
    peer = raw_peer()
    events = [e.replace("\n", "\r\n") if isinstance(e, str) and crlf else e for e in SSE_REPLY]
    peer.script("tools/call", Reply(sse=events, crlf=crlf, split=split))
    client = open_client(peer.url)
    caplog.set_level("INFO", logger="yiemagent.mcp")
    result = client.call_tool("get_time")
    assert result_text(result) == "done ✓ 🎉"
    assert client.tools_changed.is_set()
    assert "héllo ✓ 日本" in caplog.text


def test_sse_data_that_is_not_json_is_a_protocol_error_and_an_error_tool_result(raw_peer, open_client):
    """Raw peer: no real server sends broken JSON. ``MCPProtocolError`` keeps the bad data in ``.body``; as a
    tool the failure becomes an error result and the tool call was sent once.
    """
    peer = raw_peer()
    bad = Reply(sse=["event: message\ndata: {\"jsonrpc\": \"2.0\", \"id\": \n\n"])
    peer.script("tools/call", bad, bad)
    client = open_client(peer.url)
    with pytest.raises(MCPProtocolError) as caught:
        client.call_tool("get_time")
    assert caught.value.body.startswith('{"jsonrpc": "2.0", "id":')
    result = MCPToolExecutor(client, "get_time")("call_1", {}, threading.Event())
    assert result.is_error and "not JSON" in result.text
    assert peer.count("tools/call") == 2


def test_a_json_reply_that_does_not_parse_is_a_protocol_error_with_the_body(raw_peer, open_client):
    """Raw peer: a truncated ``application/json`` body (as from a crashed proxy) is an ``MCPProtocolError``."""
    peer = raw_peer()
    peer.script("tools/list", Reply(body='{"jsonrpc": "2.0", "id": 2, "result": {"tools": [',
                                    headers={"Content-Type": "application/json"}))
    with pytest.raises(MCPProtocolError) as caught:
        open_client(peer.url).list_tools()
    assert caught.value.body == '{"jsonrpc": "2.0", "id": 2, "result": {"tools": ['
    assert peer.count("tools/list") == 1  # a reply that arrived is not retried


def test_a_reply_answering_another_id_is_a_protocol_error(raw_peer, open_client):
    """Raw peer: a JSON reply whose id is not the request's is never taken as its answer."""
    peer = raw_peer()
    peer.script("tools/call", Reply(body='{"jsonrpc": "2.0", "id": 999, "result": {"content": []}}',
                                    headers={"Content-Type": "application/json"}))
    with pytest.raises(MCPProtocolError) as caught:
        open_client(peer.url).call_tool("get_time")
    assert "a response for id 999, but the pending request is" in str(caught.value)


def test_202_accepted_for_a_request_is_a_clear_protocol_error(raw_peer, open_client):
    """Raw peer: the spec allows 202 only for notifications and responses; a request answered 202 (no body)
    is an ``MCPProtocolError`` saying so, not a confusing "not a JSON-RPC response: None".
    """
    peer = raw_peer()
    peer.script("tools/call", Reply(202))
    with pytest.raises(MCPProtocolError) as caught:
        open_client(peer.url).call_tool("get_time")
    assert "202" in str(caught.value)


def test_an_sse_stream_ending_before_the_response_without_an_event_id_is_a_transport_error(raw_peer, open_client):
    """Raw peer: a stream that ends early without any event id cannot be resumed: ``MCPTransportError``,
    and the tool call is not sent again.
    """
    peer = raw_peer()
    peer.script("tools/call", Reply(sse=[{"jsonrpc": "2.0", "method": "notifications/message",
                                          "params": {"level": "info", "data": "working"}}]))
    with pytest.raises(MCPTransportError) as caught:
        open_client(peer.url).call_tool("get_time")
    assert "ended without the response" in str(caught.value)
    assert peer.count("tools/call") == 1 and peer.count("GET") == 0


def test_an_sse_stream_ending_after_an_event_id_is_resumed_with_get_and_last_event_id(raw_peer):
    """Spec (Resumability, SEP-1699), raw peer: a server closing the POST stream after a priming event
    (``id`` + ``retry``) is asked again with ``GET`` + ``Last-Event-ID`` after ``retry`` ms; the result comes
    on that stream and the tool call itself is sent once. (The conformance ``sse-retry`` scenario checks
    the timing against the suite's own server.)
    """
    peer = raw_peer()
    peer.script("tools/call", Reply(sse=["id: ev-1\nretry: 250\ndata: \n\n"]))
    peer.script("GET", Reply(sse=["id: ev-2\ndata: \n\n", {"jsonrpc": "2.0", "id": REQUEST_ID,
                                                             "result": {"content": [{"type": "text",
                                                                                     "text": "resumed"}]}}]))
    slept: list[float] = []
    client = MCPClient(transport=HTTPTransport(peer.url, timeout_seconds=5, sleep=slept.append))
    try:
        result = client.call_tool("get_time")
    finally:
        client.close()
    assert result_text(result) == "resumed"
    assert slept == [0.25]
    (get,) = peer.received("GET")
    assert get.headers["last-event-id"] == "ev-1"
    assert get.headers["mcp-session-id"] == "s-1" and get.headers["accept"] == "text/event-stream"
    assert peer.count("tools/call") == 1


def test_resuming_is_refused_when_the_retry_delay_would_pass_the_deadline(raw_peer):
    """yiemagent-defined, raw peer: a ``retry`` longer than the time left ends in ``MCPTimeoutError`` at
    once instead of sleeping past the caller's deadline.
    """
    peer = raw_peer()
    peer.script("tools/call", Reply(sse=["id: ev-1\nretry: 60000\ndata: \n\n"]))
    client = MCPClient(transport=HTTPTransport(peer.url, timeout_seconds=5, sleep=pytest.fail))
    try:
        with pytest.raises(MCPTimeoutError):
            client.call_tool("get_time")
    finally:
        client.close()
    assert peer.count("GET") == 0


# --------------------------------------------------------------------------- the standalone GET stream (listen)


def test_listen_receives_a_list_changed_that_the_server_sends_on_the_standalone_stream(sdk_server, open_client):
    """Spec (Listening for Messages from the Server), real server: ``tools/list_changed`` tied to no request
    travels on the GET stream; with ``listen=True`` it sets ``tools_changed``, without it the client never
    hears of it. ``close()`` ends the listener.
    """
    quiet = open_client(sdk_server)
    quiet.call_tool("announce_change")
    client = MCPClient(sdk_server, timeout_seconds=5, listen=True)
    try:
        client.connect()
        assert client.transport.listening.is_set()  # connect() returns once the GET stream is open
        assert client.call_tool("announce_change")["content"][0]["text"] == "announced"
        assert client.tools_changed.wait(5)
    finally:
        client.close()
    assert not client.transport.listening.is_set()
    assert not quiet.tools_changed.wait(0.3)


def test_listen_leaves_a_server_without_a_get_stream_alone(raw_peer):
    """Raw peer (it answers GET with 405, as servers without a standalone stream do): one GET, no retries,
    and the client works as usual.
    """
    peer = raw_peer()
    client = MCPClient(peer.url, timeout_seconds=5, listen=True)
    try:
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
        listener = client.transport._listener
        listener._thread.join(timeout=5)
        assert not listener.alive
    finally:
        client.close()
    assert peer.count("GET") == 1
    assert peer.received("GET")[0].headers["mcp-session-id"] == "s-1"
