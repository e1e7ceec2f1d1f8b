"""MCPClient over Streamable HTTP against the real ``mcp`` SDK server (tests/servers/sdk_server.py).

Three server modes: SSE replies with sessions (``sdk_server``), plain JSON replies with sessions
(``sdk_server_json``) and SSE without sessions (``sdk_server_stateless``).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest
import requests

from tests.conftest import NetworkAccessBlocked
from tests.helpers import RecordingSession, free_port, text_of
from yiemagent.exceptions import MCPTimeoutError, MCPTransportError
from yiemagent.mcp import SUPPORTED_PROTOCOL_VERSIONS, MCPClient

SDK_TOOLS = {"add", "echo", "fail", "reject", "crash", "slow", "progress", "ping_client", "structured", "tiny_image",
             "announce_change", "call_counts", "ask_name", "météo", "regional",
             # issue 16: annotations, outputSchema, embedded resources, resource subscriptions
             "read_notes", "delete_note", "weather", "bad_weather", "notes_bundle", "touch_note",
             "odd_contents", "trace_context",
             # issue 27: a tool that adds a tool (tools/list_changed in both eras)
             "grow_tools"}
ALL_MODES = ["sdk_server", "sdk_server_json", "sdk_server_stateless"]
SESSION_MODES = ["sdk_server", "sdk_server_json"]
SSE_MODES = ["sdk_server", "sdk_server_stateless"]


def counts(client: MCPClient) -> dict[str, int]:
    """How often each tool ran in the server process (read through the server's own tool)."""
    return client.call_tool("call_counts")["structuredContent"]  # type: ignore[no-any-return]



@pytest.fixture(params=ALL_MODES)
def any_url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


@pytest.fixture(params=SESSION_MODES)
def session_url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


@pytest.fixture(params=SSE_MODES)
def sse_url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


def test_handshake_sets_the_negotiated_protocol_version_and_server_info(any_url, open_client):
    """Spec (Lifecycle): ``initialize`` returns the version and ``serverInfo``; the client keeps them."""
    client = open_client(any_url)
    assert client.protocol_version is None
    client.connect()
    assert client.protocol_version == "2025-11-25"
    assert client.protocol_version in SUPPORTED_PROTOCOL_VERSIONS
    assert client.server_info == {"name": "yiemagent-test-sdk-server", "version": "1.0.0"}


def test_session_id_and_negotiated_version_are_sent_on_every_request_after_initialize(session_url, open_client):
    """Spec (Transports): the ``Mcp-Session-Id`` from ``initialize`` and ``MCP-Protocol-Version`` go on
    every later request, ``notifications/initialized`` included (C13, C15).
    """
    http = RecordingSession()
    client = open_client(session_url, session=http)
    client.list_tools()
    client.call_tool("add", {"a": 1, "b": 2})
    session_id = client.transport.session_id
    assert session_id
    first, *later = http.sent
    assert first.rpc_method == "initialize"
    assert "mcp-session-id" not in first.headers and "mcp-protocol-version" not in first.headers
    assert [r.rpc_method for r in later] == ["notifications/initialized", "tools/list", "tools/call"]
    assert all(r.headers.get("mcp-session-id") == session_id for r in later)
    assert all(r.headers.get("mcp-protocol-version") == "2025-11-25" for r in later)
    assert http.rpc("notifications/initialized")[0].status == 202


def test_stateless_server_gives_no_session_and_close_sends_no_delete(sdk_server_stateless, open_client):
    """Spec: a stateless server sends no ``Mcp-Session-Id``; the client then sends none and no DELETE."""
    http = RecordingSession()
    client = open_client(sdk_server_stateless, session=http)
    assert client.call_tool("add", {"a": 2, "b": 2})["content"][0]["text"] == "4"
    assert client.transport.session_id is None
    client.close()
    assert all("mcp-session-id" not in r.headers for r in http.sent)
    assert [r.method for r in http.sent if r.method != "POST"] == []


def test_list_tools_returns_every_tool_with_its_input_schema(any_url, open_client):
    """Spec (Tools): ``tools/list`` gives each tool's name and ``inputSchema``."""
    tools = {t["name"]: t for t in open_client(any_url).list_tools()}
    assert set(tools) == SDK_TOOLS
    schema = tools["add"]["inputSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["a", "b"]
    assert schema["properties"]["a"]["type"] == "integer"


def test_call_tool_add_returns_text_and_structured_content(any_url, open_client):
    """Spec (Tools): a successful call gives text content, ``isError: false`` and, for typed output,
    ``structuredContent``.
    """
    result = open_client(any_url).call_tool("add", {"a": 20, "b": 22})
    assert result["isError"] is False
    assert result["content"] == [{"type": "text", "text": "42"}]
    assert result["structuredContent"] == {"result": 42}


def test_echo_keeps_long_non_ascii_text_intact_across_chunk_boundaries(any_url, open_client):
    """UTF-8 multi-byte characters survive JSON and SSE replies cut into many network chunks."""
    text = "héllo ✓ 日本語 🎉 \u2028 Ω " * 3000  # ~75 KB: many chunks, characters cut between them
    result = open_client(any_url).call_tool("echo", {"text": text})
    assert result["isError"] is False
    assert text_of(result) == text


def test_c16_tool_failure_is_an_is_error_result_carrying_the_message(any_url, open_client):
    """Spec (Tools), case C16: a tool's own failure is a result with ``isError: true`` and the text,
    not a raised exception.
    """
    result = open_client(any_url).call_tool("fail", {"message": "unknown city Atlantis"})
    assert result["isError"] is True
    assert "unknown city Atlantis" in text_of(result)


def test_unexpected_tool_exception_is_an_is_error_result_without_its_internal_text(sdk_server, open_client):
    """Pinned server behaviour: mcp 2.3 turns a non-``ToolError`` exception into ``isError: true`` with
    only "Error executing tool <name>"; the client reports it as a result, not an exception.
    """
    result = open_client(sdk_server).call_tool("crash")
    assert result["isError"] is True
    assert text_of(result) == "Error executing tool crash"


def test_unknown_tool_is_an_is_error_result_from_the_sdk_server(sdk_server, open_client):
    """Pinned server behaviour: mcp 2.3 answers an unknown tool name with an ``isError`` result
    (not a JSON-RPC error), and the client passes it through unchanged.
    """
    result = open_client(sdk_server).call_tool("no_such_tool", {})
    assert result["isError"] is True
    assert "no_such_tool" in text_of(result)


def test_c17_structured_only_result_keeps_empty_content_and_structured_content(any_url, open_client):
    """Case C17 at the client level: ``content: []`` with ``structuredContent`` arrives as sent."""
    result = open_client(any_url).call_tool("structured")
    assert result["isError"] is False
    assert result["content"] == []
    assert result["structuredContent"] == {"temp_c": 21, "sky": "clear"}


def test_image_result_keeps_its_base64_data_and_mime_type(sdk_server, open_client):
    """Spec (Tools): an ``image`` content block has base64 ``data`` and ``mimeType``."""
    (block,) = open_client(sdk_server).call_tool("tiny_image")["content"]
    assert block["type"] == "image"
    assert block["mimeType"] == "image/png"
    assert block["data"].startswith("iVBORw0KGgo")


def test_c21_slow_call_times_out_quickly_sends_cancelled_and_the_client_stays_usable(session_url, open_client):
    """Case C21: no answer within ``timeout_seconds`` raises ``MCPTimeoutError`` on time, the request is
    not resent (the tool ran once), ``notifications/cancelled`` names its id, and the next call works.
    """
    http = RecordingSession()
    client = open_client(session_url, session=http)
    before = counts(client)
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        client.call_tool("slow", {"seconds": 10}, timeout_seconds=1)
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 3
    assert isinstance(caught.value, TimeoutError)
    slow_calls = [r for r in http.rpc("tools/call") if r.message["params"]["name"] == "slow"]
    assert len(slow_calls) == 1  # a tools/call that may have reached the server is never resent
    (cancelled,) = http.rpc("notifications/cancelled")
    assert cancelled.message["params"] == {"requestId": slow_calls[0].message["id"], "reason": "timeout"}
    assert client.call_tool("add", {"a": 1, "b": 1})["content"][0]["text"] == "2"
    assert counts(client)["slow"] == before.get("slow", 0) + 1


def test_progress_and_log_notifications_on_the_reply_stream_reach_the_callback_then_the_result(
    sse_url, open_client
):
    """Spec (Progress): ``notifications/progress`` and ``notifications/message`` interleaved before the
    response in one SSE reply (CRLF) go to the callback in order; the result still arrives.
    """
    seen: list[dict[str, Any]] = []
    result = open_client(sse_url).call_tool("progress", {"steps": 3}, progress_callback=seen.append)
    assert text_of(result) == "done 3"
    assert [(p["progress"], p["total"], p["message"]) for p in seen] == [
        (1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")
    ]
    assert len({p["progressToken"] for p in seen}) == 1


def test_server_ping_during_a_call_is_answered_and_the_call_completes(sdk_server, open_client):
    """Spec (Transports, Ping): a server request on the reply stream is answered by POSTing a JSON-RPC
    response (the server answers it 202 with no body); the tool call then returns its result.
    """
    http = RecordingSession()
    client = open_client(sdk_server, session=http)
    result = client.call_tool("ping_client", timeout_seconds=8)
    assert result["isError"] is False
    assert text_of(result) == "pong received"
    replies = [r for r in http.sent if isinstance(r.message, dict) and "result" in r.message]
    assert len(replies) == 1 and replies[0].message["result"] == {} and replies[0].status == 202


def test_close_sends_delete_the_server_forgets_the_session_and_a_second_close_is_harmless(
    session_url, open_client
):
    """Spec (Transports): ``close()`` DELETEs the session (the server then answers 404 for it);
    closing again sends nothing and raises nothing; a closed client refuses new calls.
    """
    http = RecordingSession()
    client = open_client(session_url, session=http)
    client.connect()
    session_id = client.transport.session_id
    client.close()
    client.close()
    deletes = [r for r in http.sent if r.method == "DELETE"]
    assert len(deletes) == 1
    assert deletes[0].headers["mcp-session-id"] == session_id
    assert deletes[0].status == 200
    stale = requests.post(
        session_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream", "Mcp-Session-Id": session_id,
                 "MCP-Protocol-Version": "2025-11-25"},
        timeout=5,
    )
    assert stale.status_code == 404
    with pytest.raises(MCPTransportError) as caught:
        client.call_tool("add", {"a": 1, "b": 1})
    assert caught.value.status_code is None


def test_c13_client_initializes_again_once_when_the_server_forgot_the_session(session_url, open_client):
    """Case C13: on 404 for a known session the client initializes afresh and repeats the request
    once; the tool runs exactly once on the server.
    """
    http = RecordingSession()
    client = open_client(session_url, session=http)
    before = counts(client)
    old_session = client.transport.session_id
    gone = requests.delete(session_url, headers={"Mcp-Session-Id": old_session, "MCP-Protocol-Version": "2025-11-25"},
                           timeout=5)
    assert gone.status_code == 200
    assert client.call_tool("add", {"a": 5, "b": 6})["content"][0]["text"] == "11"
    assert client.transport.session_id not in (None, old_session)
    add_posts = [r for r in http.rpc("tools/call") if r.message["params"]["name"] == "add"]
    assert [r.status for r in add_posts] == [404, 200]
    assert add_posts[1].headers["mcp-session-id"] == client.transport.session_id
    _, second_init = http.rpc("initialize")
    assert "mcp-session-id" not in second_init.headers and "mcp-protocol-version" not in second_init.headers
    assert counts(client)["add"] == before.get("add", 0) + 1


def test_context_manager_connects_on_enter_and_ends_the_session_on_exit(sdk_server):
    """``with MCPClient(url)`` runs the handshake on entry and closes (DELETE) on exit."""
    with MCPClient(sdk_server, timeout_seconds=10) as client:
        assert client.initialize_result is not None
        session_id = client.transport.session_id
        client.ping()
    assert client.transport.session_id is None
    answer = requests.delete(sdk_server, headers={"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"},
                             timeout=5)
    assert answer.status_code == 404


def test_unreachable_server_raises_transport_error_not_timeout(open_client):
    """Connection refused is an ``MCPTransportError`` (a ``ConnectionError``) without HTTP status, fast."""
    client = open_client(f"http://127.0.0.1:{free_port()}/mcp", timeout_seconds=5)
    started = time.monotonic()
    with pytest.raises(MCPTransportError) as caught:
        client.list_tools()
    assert not isinstance(caught.value, MCPTimeoutError)
    assert isinstance(caught.value, ConnectionError)
    assert caught.value.status_code is None
    assert time.monotonic() - started < 3


def test_concurrent_calls_from_threads_share_one_handshake_and_get_their_own_results(sdk_server, open_client):
    """yiemagent-defined (MCPClient "Thread safety"): calls from several threads run the handshake
    once and each thread gets the answer to its own request.
    """
    http = RecordingSession()
    client = open_client(sdk_server, session=http)
    results: dict[int, str] = {}
    errors: list[Exception] = []

    def worker(n: int) -> None:
        try:
            results[n] = text_of(client.call_tool("echo", {"text": f"thread {n} ✓"}))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    assert results == {n: f"thread {n} ✓" for n in range(8)}
    assert len(http.rpc("initialize")) == 1
    assert len({r.message["id"] for r in http.rpc("tools/call")}) == 8


def test_non_loopback_urls_fail_fast_without_touching_the_network(open_client):
    """Test-suite guard (conftest ``no_network``): a non-loopback host is refused before any DNS
    lookup or connection, and the client reports it as ``MCPTransportError``.
    """
    client = open_client("http://mcp.example.com/mcp", timeout_seconds=5)
    started = time.monotonic()
    with pytest.raises(MCPTransportError) as caught:
        client.list_tools()
    assert time.monotonic() - started < 3
    assert "tests may only resolve loopback names" in str(caught.value)
    assert caught.value.status_code is None
    with pytest.raises(NetworkAccessBlocked):
        socket.create_connection(("192.0.2.1", 80), timeout=1)
