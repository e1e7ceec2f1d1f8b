"""Both protocol eras against real servers: MCP 2026-07-28 (discover, ``_meta``, headers, MRTR, listen), handshake.

Servers: the ``mcp`` 2.3 SDK (tests/servers/sdk_server.py) serving both eras on one endpoint, and with
``--modern-only`` as a 2026-07-28-only server (HTTP 400 -32022 to anything else); its stdio server
(sdk_stdio_server.py, both eras); npm server-everything (TypeScript SDK, handshake era only) over HTTP and
stdio; stdio_quirks.py ``--silent-unknown`` for a handshake-era server that never answers ``server/discover``
(a shape the spec names, PR #2844, that no server here has).

Public cases:
    rust-sdk #1040      auto mode fell back to ``initialize`` only on -32601; deployed legacy servers answer
                        "Unsupported protocol version" with a plain 400 -> ``test_rust_sdk_1040_...``
    spec PR #2844       legacy stdio servers answer -32602, -32601, or nothing before ``initialize``
                        -> ``test_spec_pr_2844_...``
    go-sdk #1243        ``Mcp-Name`` of a name that is not header-safe was sent raw -> ``test_go_sdk_1243_...``
    strands harness-sdk #4094 / hermes-agent #106800
                        a tool that elicits mid-call failed against a 2026-07-28 server -> ``test_strands_4094_...``
"""

from __future__ import annotations

import base64
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import RecordingSession, free_port, start_process, stop_process, wait_for_port
from tests.servers.raw_http_peer import RawPeer, Reply
from yiemagent import Agent
from yiemagent.exceptions import MCPProtocolError, MCPRPCError, MCPTransportError
from yiemagent.mcp import HTTPTransport, MCPClient
from yiemagent.mcp.http_headers import encode_header_value, tool_header_problem
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

SERVERS = Path(__file__).resolve().parents[1] / "servers"
EVERYTHING_JS = Path(__file__).resolve().parents[1] / "node" / "servers" / "node_modules" / "@modelcontextprotocol" \
    / "server-everything" / "dist" / "index.js"
META = "io.modelcontextprotocol/protocolVersion"




def recorded(url: str, made: list[MCPClient], **options: Any) -> tuple[MCPClient, RecordingSession]:
    session = RecordingSession()
    client = MCPClient(transport=HTTPTransport(url, session=session, timeout_seconds=10), timeout_seconds=10,
                       **options)
    made.append(client)
    return client, session


def name_answerer(seen: list[dict[str, Any]]) -> dict[str, Any]:
    def answer(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    return {"capabilities": {"elicitation": {}}, "request_handlers": {"elicitation/create": answer}}


# --------------------------------------------------------------------------- negotiation over HTTP


def test_auto_speaks_2026_07_28_to_the_dual_era_sdk_server_without_handshake_or_session(sdk_server, clients):
    """server/discover first; every request has the ``_meta`` trio and the headers; no initialize, no session."""
    client, session = recorded(sdk_server, clients)
    assert client.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5"
    assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
    assert client.server_info["name"] == "yiemagent-test-sdk-server"
    assert client.discover_result is not None and "2026-07-28" in client.discover_result["supportedVersions"]
    methods = [r.rpc_method for r in session.sent]
    assert methods == ["server/discover", "tools/call"]
    for sent in session.sent:
        meta = sent.message["params"]["_meta"]
        assert meta[META] == sent.headers["mcp-protocol-version"] == "2026-07-28"
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "yiemagent"
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
        assert sent.headers["mcp-method"] == sent.rpc_method
        assert "mcp-session-id" not in sent.headers
    assert session.sent[1].headers["mcp-name"] == "add"


def test_forced_handshake_version_speaks_initialize_to_the_same_server(sdk_server, clients):
    client, session = recorded(sdk_server, clients, protocol_version="2025-06-18")
    client.list_tools()
    assert (client.era, client.protocol_version) == ("legacy", "2025-06-18")
    assert [r.rpc_method for r in session.sent][:2] == ["initialize", "notifications/initialized"]
    assert "_meta" not in (session.rpc("tools/list")[0].message.get("params") or {})


def test_a_2026_only_server_is_reached_by_auto_and_refuses_a_forced_handshake_naming_its_versions(
        modern_only_server, clients):
    """The issue's measurement: before, yiemagent got HTTP 400 and could call nothing on such a server."""
    client, _ = recorded(modern_only_server, clients)
    assert client.call_tool("echo", {"text": "héllo"})["content"][0]["text"] == "héllo"
    assert client.era == "modern"
    legacy, _ = recorded(modern_only_server, clients, protocol_version="2025-11-25")
    with pytest.raises(MCPRPCError) as caught:
        legacy.list_tools()
    assert caught.value.code == -32022 and caught.value.data["supported"] == ["2026-07-28"]


def test_an_agent_calls_a_tool_of_a_2026_only_server(modern_only_server):
    llm = ScriptedLLM([tool_call_reply("add", {"a": 2, "b": 40}), text_reply("42")])
    agent = Agent(llm, mcp_servers=[modern_only_server]).start()
    try:
        answer = agent.ask("2 + 40?", timeout_seconds=30)
    finally:
        agent.shutdown()
    assert answer["content"] == "42"
    assert llm.calls[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}


def test_rust_sdk_1040_auto_falls_back_when_a_legacy_server_rejects_discover_with_a_plain_400(
        everything_server, clients):
    """rust-sdk #1040: fallback keyed to -32601 broke deployed legacy servers; the npm reference server (TypeScript
    SDK 1.x) answers the modern probe with HTTP 400 and a -32000 body. Any non-modern 4xx means legacy.
    """
    client, session = recorded(everything_server, clients)
    assert client.call_tool("echo", {"message": "hi"})["content"][0]["text"] == "Echo: hi"
    assert client.era == "legacy" and client.protocol_version == "2025-11-25"
    probe = session.rpc("server/discover")[0]
    assert probe.status == 400
    assert [r.rpc_method for r in session.sent][1:3] == ["initialize", "notifications/initialized"]


# --------------------------------------------------------------------------- headers


def test_go_sdk_1243_a_tool_name_that_is_not_header_safe_goes_base64_in_mcp_name(sdk_server, clients):
    """go-sdk #1243 (and python-sdk #2730): ``Mcp-Name`` was set raw; the SDK server decodes and checks it."""
    client, session = recorded(sdk_server, clients)
    assert client.call_tool("météo", {"city": "Zürich"})["content"][0]["text"] == "sunny in Zürich"
    header = session.rpc("tools/call")[0].headers["mcp-name"]
    assert header == "=?base64?" + base64.b64encode("météo".encode()).decode() + "?="


@pytest.mark.parametrize(("value", "header"), [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
])
def test_header_values_follow_the_spec_encoding_table(value, header):
    """MCP 2026-07-28, Streamable HTTP, "Value Encoding": the examples table, row by row."""
    assert encode_header_value(value) == header


def test_invalid_x_mcp_header_declarations_are_named():
    ok = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    assert tool_header_problem(ok) is None
    assert "number" in tool_header_problem({"properties": {"n": {"type": "number", "x-mcp-header": "N"}}})
    assert "twice" in tool_header_problem({"properties": {"a": {"type": "string", "x-mcp-header": "A"},
                                                          "b": {"type": "string", "x-mcp-header": "a"}}})
    assert "reachable" in tool_header_problem({"properties": {"l": {"type": "array", "items": {
        "type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "X"}}}}}})


# --------------------------------------------------------------------------- MRTR


@pytest.mark.parametrize("version", [None, "2025-11-25"])
def test_strands_4094_a_tool_that_elicits_mid_call_completes_in_both_eras(sdk_server, clients, version):
    """Strands harness-sdk #4094 / hermes-agent #106800: a mid-call elicitation dead-ended against 2026-07-28.
    Modern: ``input_required`` -> the handler -> a retry with ``inputResponses``/``requestState`` and a new id.
    Handshake era: the same handler answers the server's ``elicitation/create`` request.
    """
    seen: list[dict[str, Any]] = []
    client, session = recorded(sdk_server, clients, protocol_version=version, **name_answerer(seen))
    assert client.call_tool("ask_name", {})["content"][0]["text"] == "hello Ada"
    assert len(seen) == 1 and seen[0]["message"] == "What is your name?"
    calls = session.rpc("tools/call")
    if version is None:
        assert len(calls) == 2 and calls[0].message["id"] != calls[1].message["id"]
        retry = calls[1].message["params"]
        assert list(retry["inputResponses"].values()) == [{"action": "accept", "content": {"name": "Ada"}}]
        assert "requestState" in retry and "inputResponses" not in calls[0].message["params"]
    else:
        assert len(calls) == 1


def test_handler_time_does_not_count_against_the_call_timeout(sdk_server, clients):
    """Each round has its own timeout: a person taking 1.5 s to answer does not fail a 1 s call."""
    def slow_person(params: dict[str, Any]) -> dict[str, Any]:
        time.sleep(1.5)
        return {"action": "accept", "content": {"name": "Bo"}}

    client, _ = recorded(sdk_server, clients, capabilities={"elicitation": {}},
                         request_handlers={"elicitation/create": slow_person})
    assert client.call_tool("ask_name", {}, timeout_seconds=1)["content"][0]["text"] == "hello Bo"


def test_a_declared_capability_without_a_handler_stops_the_call_with_a_named_error(sdk_server, clients):
    client, session = recorded(sdk_server, clients, capabilities={"elicitation": {}})
    with pytest.raises(MCPProtocolError, match="elicitation/create"):
        client.call_tool("ask_name", {})
    assert len(session.rpc("tools/call")) == 1  # never retried without the input


def test_max_input_rounds_caps_the_retries(sdk_server, clients):
    """0 rounds allowed: the first ``input_required`` is a documented MCPProtocolError, nothing resent."""
    seen: list[dict[str, Any]] = []
    client, session = recorded(sdk_server, clients, max_input_rounds=0, **name_answerer(seen))
    with pytest.raises(MCPProtocolError, match="max_input_rounds"):
        client.call_tool("ask_name", {})
    assert seen == [] and len(session.rpc("tools/call")) == 1


# --------------------------------------------------------------------------- subscriptions/listen


def test_listen_opens_subscriptions_listen_and_tools_changed_is_set(sdk_server, clients):
    client, session = recorded(sdk_server, clients, listen=True)
    client.connect()
    assert client.transport.listening.wait(5)
    deadline = time.monotonic() + 5
    while client.subscription_acknowledged is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client.subscription_acknowledged == {"toolsListChanged": True}
    assert all(r.method == "POST" for r in session.sent)  # no GET stream in this era
    client.tools_changed.clear()
    assert client.call_tool("announce_change")["content"][0]["text"] == "announced"
    assert client.tools_changed.wait(5)


# --------------------------------------------------------------------------- stdio


@pytest.mark.parametrize(("version", "era"), [(None, "modern"), ("2025-11-25", "legacy")])
@pytest.mark.slow
def test_stdio_sdk_server_in_both_eras(version, era):
    with MCPClient.stdio(sys.executable, [str(SERVERS / "sdk_stdio_server.py")], protocol_version=version,
                         timeout_seconds=30) as client:
        assert client.call_tool("echo", {"text": "ok"})["content"][0]["text"] == "ok"
        assert client.era == era and client.server_info["name"] == "sdk-stdio-big"


@pytest.mark.slow
def test_stdio_reference_server_answers_the_probe_minus_32601_and_gets_the_handshake():
    if not EVERYTHING_JS.exists():
        pytest.skip("the reference servers are not installed; the test run installs them")
    with MCPClient.stdio("node", [str(EVERYTHING_JS), "stdio"], timeout_seconds=30) as client:
        assert client.call_tool("echo", {"message": "hi"})["content"][0]["text"] == "Echo: hi"
        assert client.era == "legacy"


@pytest.mark.slow
def test_spec_pr_2844_a_stdio_server_silent_to_discover_is_taken_for_legacy_after_the_probe_timeout():
    """Spec PR #2844: legacy servers answer -32601, -32602, or nothing at all before ``initialize``; silence
    for ``probe_timeout_seconds`` means legacy too (stdio_quirks ``--silent-unknown``: no real server here is).
    """
    client = MCPClient(transport=MCPClient.stdio(sys.executable, [str(SERVERS / "stdio_quirks.py"),
                                                                  "--silent-unknown"]).transport,
                       probe_timeout_seconds=1, timeout_seconds=30)
    started = time.monotonic()
    try:
        assert client.call_tool("echo", {"text": "late"})["content"][0]["text"] == "late"
        assert client.era == "legacy"
        assert time.monotonic() - started < 20  # the process start and the 1 s probe, not the 30 s timeout
    finally:
        client.close()


# --------------------------------------------------------------------------- broken streams (raw peer)

DISCOVER = Reply(result={"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                         "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "raw", "version": "0"}}})


def test_a_broken_tools_call_stream_is_never_resumed_or_resent_in_the_2026_era():
    """A stream that ends after an event id, before the response (a proxy cutting it): the handshake era would
    resume with GET + Last-Event-ID; 2026-07-28 has no resumption, and tools/call is not sent twice (its effect is
    unknown), so it is an MCPTransportError. Raw peer: no real server here ends a stream on demand.
    """
    with RawPeer(sessions=False) as peer:
        peer.script("server/discover", DISCOVER)
        peer.script("tools/call", Reply(sse=["id: e1\nretry: 10\ndata: \n\n"]))
        client = MCPClient(peer.url, timeout_seconds=5)
        try:
            with pytest.raises(MCPTransportError, match="ended without the response"):
                client.call_tool("x", {})
            assert client.era == "modern"
            assert peer.count("tools/call") == 1 and peer.count("GET") == 0
        finally:
            client.close()


def test_a_safe_request_on_a_broken_stream_is_reissued_as_a_new_request_with_a_new_id():
    """tools/list whose connection drops: re-sent as a new request (new JSON-RPC id), never resumed."""
    with RawPeer(sessions=False) as peer:
        peer.script("server/discover", DISCOVER)
        peer.script("tools/list", Reply(drop=True))
        client = MCPClient(peer.url, timeout_seconds=5, retry_sleep=lambda seconds: None)
        try:
            client.list_tools()
            sent = peer.received("tools/list")
            assert len(sent) == 2 and sent[0].message["id"] != sent[1].message["id"]
            assert all(r.headers.get("mcp-protocol-version") == "2026-07-28" for r in sent)
        finally:
            client.close()


@pytest.mark.slow
def test_the_cached_era_is_probed_again_when_the_server_behind_the_url_changes_era():
    """Spec ("Versioning": re-probe if the cached assumption later fails): the same URL served first by the
    handshake-era reference server, then by a 2026-07-28-only server, then by the reference server again; one
    client calls a tool each time and follows, sending each call once more only after a rejection.
    """
    if not EVERYTHING_JS.exists():
        pytest.skip("the reference servers are not installed; the test run installs them")
    port = free_port()
    legacy = [["node", str(EVERYTHING_JS), "streamableHttp"], {"PORT": str(port)}]
    modern = [[sys.executable, str(SERVERS / "sdk_server.py"), "--port", str(port), "--modern-only"], None]
    client = MCPClient(f"http://127.0.0.1:{port}/mcp", timeout_seconds=10, retry_sleep=lambda seconds: None)
    eras = []
    try:
        for args, env in (legacy, modern, legacy):
            process = start_process(args, env=env)
            try:
                wait_for_port(port, timeout_seconds=20, process=process)
                text = client.call_tool("echo", {"message": "hi"} if env else {"text": "hi"})["content"][0]["text"]
                assert text in ("Echo: hi", "hi")
                eras.append(client.era)
            finally:
                stop_process(process)
    finally:
        client.close()
    assert eras == ["legacy", "modern", "legacy"]


@pytest.mark.parametrize("version", [None, "2025-11-25"])
@pytest.mark.slow
def test_stdio_elicitation_mid_call_completes_in_both_eras(version):
    """The SDK server over stdio: 2026-07-28 answers ``input_required`` (MRTR); the handshake era sends
    ``elicitation/create`` on the pipe; one handler serves both.
    """
    seen: list[dict[str, Any]] = []
    options = name_answerer(seen)
    client = MCPClient(transport=MCPClient.stdio(sys.executable, [str(SERVERS / "sdk_server.py"), "--stdio"],
                                                 timeout_seconds=30).transport,
                       protocol_version=version, timeout_seconds=30, **options)
    try:
        assert client.call_tool("ask_name", {})["content"][0]["text"] == "hello Ada"
        assert client.era == ("modern" if version is None else "legacy") and len(seen) == 1
    finally:
        client.close()


def test_x_mcp_header_parameters_are_mirrored_and_a_header_mismatch_relists_the_tools_once(sdk_server, clients):
    """The SDK validates ``Mcp-Param-Region`` against the body. A call made before ``tools/list`` (so the
    client does not know the declaration) is refused -32020; the client lists the tools and sends it once
    more, as the spec says; after that the header goes with every call.
    """
    client, session = recorded(sdk_server, clients)
    assert client.call_tool("regional", {"region": "eu-west", "query": "q"})["content"][0]["text"] == "q in eu-west"
    calls = session.rpc("tools/call")
    assert [c.status for c in calls] == [400, 200] and len(session.rpc("tools/list")) == 1
    assert "mcp-param-region" not in calls[0].headers and calls[1].headers["mcp-param-region"] == "eu-west"
    client.call_tool("regional", {"region": "São Paulo", "query": "q"})
    assert session.rpc("tools/call")[-1].headers["mcp-param-region"] == encode_header_value("São Paulo")
    assert len(session.rpc("tools/list")) == 1
