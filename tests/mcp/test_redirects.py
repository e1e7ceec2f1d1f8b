"""Redirects never carry credentials or calls to another origin (issue 9, point 1).

yiemagent-defined (RFC 9110 redirects, RFC 6454 origins). The redirecting server is the raw peer: no real
MCP server answers a POST with 302/307 on demand, so the redirect itself is a raw shape. Where the target's
side matters (did the call run there?) the target is the real SDK server on another port; where the
headers the target received matter, it is a second raw peer, because a real server does not show them.
"""

from __future__ import annotations

import pytest

from tests.mcp.conftest import MODERN, assert_era
from tests.servers.raw_http_peer import Reply
from yiemagent._internal.http import CancellableSession, CrossOriginRedirect, origin_of
from yiemagent.exceptions import LLMError, MCPTransportError
from yiemagent.mcp import HTTPTransport, MCPClient
from yiemagent.models.openai_chat import openai_chat

HEADERS = {"X-Api-Key": "key-0123456789", "Authorization": "Bearer tok-abcdefghijkl"}


def call_count(url: str, tool: str) -> int:
    with MCPClient(url, timeout_seconds=10) as client:
        counts = client.call_tool("call_counts")["structuredContent"]
    return int(counts.get("result", counts).get(tool, 0))


def test_origin_of_spells_the_default_port_and_drops_user_path_and_query():
    """RFC 6454: scheme, host and port make the origin; 80/443 are the same as no port."""
    assert origin_of("http://127.0.0.1/mcp") == origin_of("http://127.0.0.1:80/x?y=1") == "http://127.0.0.1:80"
    assert origin_of("https://u:p@Host.example/mcp") == "https://host.example:443"
    assert origin_of("http://127.0.0.1:8001/") != origin_of("http://127.0.0.1:8002/")


@pytest.mark.parametrize("status", [302, 307, 308])
def test_a_cross_origin_redirect_of_tools_call_is_refused_and_the_tool_never_runs_there(
    raw_peer, sdk_server, status, era
):
    """A 307 used to re-run the whole ``tools/call`` on the other port and accept its result; now every
    redirect status to another origin is refused with an error naming both origins, and the real server
    behind the redirect never executes the tool (both eras).
    """
    peer = raw_peer(modern=era == MODERN)
    peer.script("tools/call", Reply(status, headers={"Location": sdk_server}))
    before = call_count(sdk_server, "add")
    with MCPClient(peer.url, headers=HEADERS, timeout_seconds=5, retry_attempts=1) as client:
        client.connect()
        assert_era(client, era)
        with pytest.raises(MCPTransportError) as caught:
            client.call_tool("add", {"a": 1, "b": 2})
    message = str(caught.value)
    assert origin_of(peer.url) in message and origin_of(sdk_server) in message
    assert caught.value.status_code == status
    assert call_count(sdk_server, "add") == before
    assert "key-0123456789" not in message and "tok-abcdefghijkl" not in message
    with MCPClient(sdk_server, timeout_seconds=10) as direct:  # the count does see a call that runs
        direct.call_tool("add", {"a": 1, "b": 2})
    assert call_count(sdk_server, "add") == before + 1


def test_opting_in_still_never_sends_tools_call_to_another_origin(raw_peer, sdk_server):
    """``follow_cross_origin_redirects=True`` lets the handshake follow a moved server, but a ``tools/call``
    is never re-run on a server the caller did not name: still refused, still not executed there.
    """
    peer = raw_peer()
    peer.script("tools/call", Reply(307, headers={"Location": sdk_server}))
    before = call_count(sdk_server, "add")
    transport = HTTPTransport(peer.url, headers=HEADERS, timeout_seconds=5, follow_cross_origin_redirects=True)
    with MCPClient(transport=transport, retry_attempts=1) as client:
        with pytest.raises(MCPTransportError) as caught:
            client.call_tool("add", {"a": 1, "b": 2})
    assert "never followed for this request" in str(caught.value)
    assert call_count(sdk_server, "add") == before


def test_a_cross_origin_redirect_of_initialize_is_refused_and_the_target_sees_nothing(raw_peer):
    """By default a 302/307 of the handshake to another port fails at once, naming both origins; the target
    (a second raw peer, to see what arrives) receives no request, so no header reaches it.
    """
    target = raw_peer()
    peer = raw_peer()
    peer.script("initialize", Reply(307, headers={"Location": target.url}))
    client = MCPClient(peer.url, headers=HEADERS, timeout_seconds=5, retry_attempts=1)
    with pytest.raises(MCPTransportError) as caught:
        client.connect()
    client.close()
    assert f"from {origin_of(peer.url)} to another origin, {origin_of(target.url)}" in str(caught.value)
    assert target.requests == []


def test_opted_in_cross_origin_redirects_carry_no_caller_header_and_no_session_id(raw_peer):
    """Opt-in: the handshake follows the 307 to the other port without ``X-Api-Key``, ``Authorization``,
    ``Mcp-Session-Id`` or cookies; a later ``tools/list`` redirected there carries no session id either.
    """
    target = raw_peer(sessions=False)
    peer = raw_peer()
    peer.script("tools/list", Reply(307, headers={"Location": target.url}))
    transport = HTTPTransport(peer.url, headers=HEADERS, timeout_seconds=5, follow_cross_origin_redirects=True)
    with MCPClient(transport=transport, retry_attempts=1) as client:
        assert [t["name"] for t in client.list_tools()] == ["get_time"]
        assert transport.session_id == "s-1"  # still the session of the server the caller named
    (listed,) = target.received("tools/list")
    assert "x-api-key" not in listed.headers and "authorization" not in listed.headers
    assert "mcp-session-id" not in listed.headers and "cookie" not in listed.headers
    assert listed.headers["accept"] == "application/json, text/event-stream"


def test_a_same_origin_redirect_is_followed_with_every_header(raw_peer):
    """Same origin (another path on the same port): followed, credentials and session id kept."""
    peer = raw_peer()
    peer.script("tools/call", Reply(307, headers={"Location": "/mcp-moved"}))
    with MCPClient(peer.url, headers=HEADERS, timeout_seconds=5) as client:
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
    first, second = peer.received("tools/call")
    assert second.headers["x-api-key"] == "key-0123456789" and second.headers["mcp-session-id"] == "s-1"
    assert first.message == second.message  # 307 keeps the method and the body


def test_openai_chat_refuses_a_307_to_another_port_and_the_prompt_never_arrives(raw_peer):
    """``openai_chat`` shares the session: a 307 used to re-send the whole prompt to the other port; now
    ``LLMError`` names both origins and the target receives nothing.
    """
    target = raw_peer()
    peer = raw_peer()
    peer.script("POST", Reply(307, headers={"Location": target.url.replace("/mcp", "/v1/chat/completions")}))
    llm = openai_chat(peer.url.replace("/mcp", "/v1"), "m", api_key="sk-secret-000000000")
    with pytest.raises(LLMError) as caught:
        llm([{"role": "user", "content": "my secret prompt"}], [])
    assert origin_of(peer.url) in str(caught.value) and origin_of(target.url) in str(caught.value)
    assert target.requests == []
    assert peer.count("POST") == 1  # refused, not retried


def test_a_redirect_to_a_non_http_scheme_is_refused(raw_peer):
    """A ``Location: file:///etc/passwd`` is never followed."""
    peer = raw_peer()
    peer.script("GET", Reply(302, headers={"Location": "file:///etc/passwd"}))
    session = CancellableSession(follow_cross_origin_redirects=True)
    with pytest.raises(Exception) as caught:
        session.get(peer.url, timeout=5)
    assert "refused a redirect" in str(caught.value)
    assert not isinstance(caught.value, CrossOriginRedirect)
