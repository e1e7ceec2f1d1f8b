"""Hostile 2026-07-28 peers: the old era's promises hold in the new one (issue 16 point 1).

Raw peer (``RawPeer(modern=True)``: answers ``server/discover``, checks ``MCP-Protocol-Version`` and the
``_meta`` envelope): every shape here is one no real server sends on demand (a ``resultType`` the client
never opted in to, an ``input_required`` on ``tools/list``, an ``input_required`` with nothing to answer,
a stream that never ends, a drip, a repeated cursor, lone surrogates in a result). The same promises
against the real ``mcp`` SDK server run through the ``era`` fixture in the other files of this folder.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.servers.raw_http_peer import REQUEST_ID, RawPeer, Reply
from yiemagent.exceptions import MCPProtocolError, MCPTimeoutError, MCPTransportError
from yiemagent.mcp import MCPClient

SSE = {"Content-Type": "text/event-stream"}
DONE = {"resultType": "complete"}


@pytest.fixture
def peer(raw_peer: Any) -> RawPeer:
    return raw_peer(modern=True)  # type: ignore[no-any-return]


def client_of(peer: RawPeer, **kwargs: Any) -> MCPClient:
    client = MCPClient(peer.url, **{"timeout_seconds": 10, "retry_sleep": lambda seconds: None, **kwargs})
    client.connect()
    assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
    return client


def test_tower_mcp_950_an_unknown_result_type_is_a_protocol_error_not_an_empty_result(peer):
    """tower-mcp #950 lists a task-owned ``resultType: "task"``; the schema's ``ResultType`` is an open string
    (dart-lang/ai #565). ``resultType: "task"`` (an extension this client never declared) on ``tools/call``:
    before the fix it came back as a complete result with no content (the model saw an empty tool result); now
    ``MCPProtocolError`` naming the type, and the next call works. The call was sent once.
    """
    peer.script("tools/call", Reply(result={"resultType": "task", "task": {"taskId": "t1"}}))
    with client_of(peer) as client:
        with pytest.raises(MCPProtocolError, match="unsupported resultType 'task'"):
            client.call_tool("get_time")
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
    assert peer.count("tools/call") == 2


def test_input_required_on_tools_list_is_a_protocol_error_not_an_empty_listing(peer):
    """Spec (MRTR): servers MUST NOT answer ``input_required`` to anything but tools/call, prompts/get and
    resources/read. Before the fix ``list_tools`` returned ``[]`` (the server's tools silently gone).
    """
    peer.script("tools/list", Reply(result={"resultType": "input_required", "requestState": "s"}))
    with client_of(peer) as client:
        with pytest.raises(MCPProtocolError, match="input_required"):
            client.list_tools()
        assert [t["name"] for t in client.list_tools()] == ["get_time"]


def test_input_required_with_nothing_to_answer_fails_at_once_instead_of_looping(peer):
    """Spec (MRTR): an ``InputRequiredResult`` MUST carry ``inputRequests`` or ``requestState``. One with
    neither could only be retried blindly: before the fix the call went out ``max_input_rounds + 1`` times;
    now ``MCPProtocolError`` after the first, and nothing is sent again.
    """
    lost = Reply(result={"resultType": "input_required"})
    peer.script("tools/call", *[lost] * 12)
    with client_of(peer, max_input_rounds=10) as client:
        with pytest.raises(MCPProtocolError, match="neither inputRequests nor requestState"):
            client.call_tool("get_time")
    assert peer.count("tools/call") == 1


def test_airlift_2079_request_state_alone_is_echoed_exactly_on_a_new_id(peer):
    """Airlift #2079 (review): a state-only ``input_required`` (``requestState``, no ``inputRequests``) was
    taken for complete. Here it is retried once with the exact state and a new id.
    """
    peer.script("tools/call", Reply(result={"resultType": "input_required", "requestState": "opaque é/=="}))
    with client_of(peer) as client:
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
    first, second = peer.received("tools/call")
    assert second.message["params"]["requestState"] == "opaque é/=="
    assert "requestState" not in first.message["params"] and first.message["id"] != second.message["id"]


@pytest.mark.parametrize("kind", ["json", "sse"])
def test_a_reply_dripping_a_byte_every_half_second_ends_at_the_deadline(peer, kind):
    """2026-07-28 twin of test_slow_peers' drip (chunked): ``MCPTimeoutError`` at the 1.5 s timeout, the call
    sent once, and the next call works.
    """
    result = {"content": [{"type": "text", "text": "slow"}], **DONE}
    reply = Reply(result=result, framing="chunked", drip_seconds=0.5) if kind == "json" else \
        Reply(sse=[{"jsonrpc": "2.0", "id": REQUEST_ID, "result": result}], framing="chunked", drip_seconds=0.5)
    peer.script("tools/call", reply)
    with client_of(peer) as client:
        started = time.monotonic()
        with pytest.raises(MCPTimeoutError):
            client.call_tool("get_time", timeout_seconds=1.5)
        assert 1.4 < time.monotonic() - started < 2.5
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
    assert peer.count("tools/call") == 2


def test_a_stream_that_never_ends_after_its_response_returns_at_once(peer):
    """The response event, then the stream stays open 30 s: the call returns at once."""
    body = "event: message\ndata: " + json.dumps({"jsonrpc": "2.0", "id": 2, "result": {
        "content": [{"type": "text", "text": "first"}], **DONE}}) + "\n\n: keep-alive\n"
    peer.script("tools/call", Reply(body=body, headers=SSE, framing="chunked", linger_seconds=30))
    with client_of(peer) as client:
        started = time.monotonic()
        assert client.call_tool("get_time")["content"][0]["text"] == "first"
        assert time.monotonic() - started < 1.0


def test_python_sdk_1577_a_stream_ending_before_its_response_fails_and_tools_call_is_not_resent(peer):
    """python-sdk #1577 / PR #3052 (a POST SSE stream closing before its response left ``call_tool`` waiting
    forever), in 2026-07-28. Only progress, then the stream closes: tools/call is an ``MCPTransportError``
    (its effect is unknown: never sent twice, never resumed with GET); ``tools/list`` on the same break is
    sent again with a new id.
    """
    cut = Reply(sse=["id: e1\ndata: " + json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
        "progressToken": "p", "progress": 1}}) + "\n\n"])
    peer.script("tools/call", cut)
    peer.script("tools/list", cut)
    with client_of(peer) as client:
        with pytest.raises(MCPTransportError):
            client.call_tool("get_time")
        assert [t["name"] for t in client.list_tools()] == ["get_time"]
    assert peer.count("tools/call") == 1 and peer.count("GET") == 0
    first, second = peer.received("tools/list")
    assert first.message["id"] != second.message["id"]


def test_a_repeated_cursor_stops_paging_with_a_warning(peer):
    """The paging guard in 2026-07-28: a server that answers the same ``nextCursor`` forever is stopped with a
    warning after the repeat; each tool once.
    """
    page = Reply(result={"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "same", **DONE})
    peer.script("tools/list", page, page, page, page)
    with client_of(peer) as client:
        with pytest.warns(Warning, match="repeated cursor 'same'"):
            assert [t["name"] for t in client.list_tools()] == ["a"]
    assert peer.count("tools/list") == 2


def test_hostile_text_in_a_2026_result_reaches_the_agent_cleaned(peer):
    """A lone surrogate in a 2026-07-28 tools/call result: the text policy of the bridge applies as in the
    handshake era (the tool result the model sees is valid UTF-8, the text around the surrogate kept).
    """
    from yiemagent import Agent
    from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

    peer.script("tools/call", Reply(body=b'{"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", '
                                         b'"content": [{"type": "text", "text": "a\\ud800b\\u0000c"}]}}',
                                    headers={"Content-Type": "application/json"}))
    llm = ScriptedLLM([tool_call_reply("get_time", {}), text_reply("ok")])
    client = MCPClient(peer.url, timeout_seconds=10)
    agent = Agent(llm, mcp_servers=[client], builtin_list_tools=False)
    try:
        assert agent.ask("go", timeout_seconds=20)["content"] == "ok"
    finally:
        agent.shutdown()
        client.close()
    assert client.era == "modern"
    seen = llm.calls[1]["messages"][-1]["content"]
    seen.encode("utf-8")  # raises on a lone surrogate
    assert seen.startswith("a") and "b\x00c" in seen and "\ud800" not in seen


# --------------------------------------------------------------------------- public cases

SERVERS = __import__("pathlib").Path(__file__).resolve().parents[1] / "servers"


@pytest.mark.slow
def test_typescript_sdk_2317_a_timed_out_probe_sends_no_cancellation_before_initialize():
    """typescript-sdk #2317: a ``notifications/cancelled`` naming the ``server/discover`` probe wedged the
    server's fallback ``initialize``. stdio_quirks ``--silent-unknown --strict-start`` (a handshake-era
    server silent to the probe, for which anything but ``initialize`` first is fatal; no real server here
    is): before the fix the probe's timeout sent ``notifications/cancelled`` before ``initialize`` and the
    server exited; now the probe's timeout is silent and the handshake follows.
    """
    import sys

    stdio = MCPClient.stdio(sys.executable, [str(SERVERS / "stdio_quirks.py"), "--silent-unknown", "--strict-start"])
    client = MCPClient(transport=stdio.transport, probe_timeout_seconds=0.5, timeout_seconds=30)
    try:
        assert client.call_tool("echo", {"text": "after the probe"})["content"][0]["text"] == "after the probe"
        assert client.era == "legacy"
    finally:
        client.close()


def test_csharp_sdk_1765_a_probe_refused_with_http_404_invalid_session_falls_back_to_initialize(raw_peer):
    """csharp-sdk #1765: a handshake-era server that wants ``Mcp-Session-Id`` on every request answers the
    session-less probe ``404 "Invalid session ID"`` (Datadog's hosted server); the client must fall back to
    ``initialize``, not fail. Raw peer: the default handshake-era peer answers exactly that.
    """
    peer = raw_peer()
    peer.script("server/discover", Reply(404, body="Invalid session ID", headers={"Content-Type": "text/plain"}))
    with MCPClient(peer.url, timeout_seconds=5, protocol_version=None) as client:
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
        assert client.era == "legacy"
    assert peer.count("initialize") == 1


@pytest.mark.parametrize("reply", [Reply(204), Reply(200, body="", headers={"Content-Type": "application/json"}),
                                   Reply(200, body="ok", headers={"Content-Type": "text/plain"})],
                         ids=["204", "empty-json", "text-plain"])
def test_typescript_sdk_2619_an_unusable_2xx_to_the_probe_falls_back_to_initialize(raw_peer, reply):
    """typescript-sdk #2619/#2620: an intermediary that swallows the unknown ``server/discover`` POST into an
    unusable 2xx (a bare 204, an empty JSON body, text/plain) made ``connect()`` fail, while a 400 fell back.
    Raw peer (a proxy in front of a handshake-era server; no real server answers so): the client falls back
    to ``initialize`` and works.
    """
    peer = raw_peer()
    peer.script("server/discover", reply)
    with MCPClient(peer.url, timeout_seconds=5, protocol_version=None) as client:
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
        assert client.era == "legacy"


def _confirm(key: str) -> dict[str, Any]:
    return {key: {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Please confirm",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}}


def test_rust_sdk_1098_and_typescript_sdk_2313_each_retry_carries_only_its_own_round(peer):
    """rust-sdk #1098: an ``input_required`` result with ``_meta: {}`` was parsed as a complete result (its
    ``inputRequests`` and ``requestState`` dropped). typescript-sdk #2313 (review): stale ``inputResponses`` /
    ``requestState`` of an earlier round leaked into later retries. Raw peer (scripted rounds): round 1 has
    ``_meta: {}``, state ``s1`` and a request ``a``; round 2 a request ``b`` and no state; then complete.
    Retry 1 carries ``{a}`` and ``s1``; retry 2 carries ``{b}`` only and no ``requestState``; new ids each time.
    """
    peer.script("tools/call",
                Reply(result={"resultType": "input_required", "_meta": {}, "inputRequests": _confirm("a"),
                              "requestState": "s1"}),
                Reply(result={"resultType": "input_required", "inputRequests": _confirm("b")}))
    asked: list[str] = []

    def confirm(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"ok": True}}

    with client_of(peer, capabilities={"elicitation": {}}, request_handlers={"elicitation/create": confirm}) as client:
        assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"
    first, second, third = (r.message for r in peer.received("tools/call"))
    assert len({first["id"], second["id"], third["id"]}) == 3 and asked == ["Please confirm"] * 2
    assert "inputResponses" not in first["params"] and "requestState" not in first["params"]
    assert set(second["params"]["inputResponses"]) == {"a"} and second["params"]["requestState"] == "s1"
    assert set(third["params"]["inputResponses"]) == {"b"} and "requestState" not in third["params"]


def test_issue_27_a_sampling_flood_and_a_huge_request_state_are_refused_not_answered_or_resent(peer):
    """Issue 27: a 2026-07-28 server answering ``tools/call`` with ``input_required`` carrying 200
    ``sampling/createMessage`` requests made the agent's model answer 1,600 sampling calls for one tool call
    (8 rounds x 200), and a 7.3 MB ``requestState`` was sent back on each of 9 retries. A round asking more than
    16 inputs, or a ``requestState`` over 256 KiB, is ``MCPProtocolError``: nothing answered, nothing sent again.
    (A raw peer: no real server floods on purpose.)
    """
    sampled: list[Any] = []

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        sampled.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    flood = {f"s{i}": {"method": "sampling/createMessage",
                       "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                                  "maxTokens": 100000}} for i in range(200)}
    peer.script("tools/call", Reply(result={"resultType": "input_required", "inputRequests": flood}))
    with client_of(peer, request_handlers={"sampling/createMessage": sample}) as client:
        with pytest.raises(MCPProtocolError, match="asks 200 inputs at once"):
            client.call_tool("get_time")
    assert sampled == [] and peer.count("tools/call") == 1

    peer.script("tools/call", Reply(result={"resultType": "input_required", "requestState": "x" * 7_300_000}))
    with client_of(peer) as client:
        with pytest.raises(MCPProtocolError, match="requestState of"):
            client.call_tool("get_time")
    assert peer.count("tools/call") == 2  # the one above and this one: no retry carried the state
