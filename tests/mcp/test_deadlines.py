"""Deadlines on every request (connect and read; per client and per call), and case C21: a hung
``tools/call`` becomes an error tool result and the agent goes on.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests.helpers import RecordingSession
from tests.mcp.conftest import LEGACY, assert_era
from yiemagent import Agent
from yiemagent.exceptions import MCPTimeoutError
from yiemagent.mcp import HTTPTransport, MCPClient
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply


def counts(client: MCPClient) -> dict[str, int]:
    return client.call_tool("call_counts")["structuredContent"]  # type: ignore[no-any-return]


def test_the_whole_reply_is_bounded_even_while_the_server_keeps_streaming_progress(sdk_server, open_client, era):
    """yiemagent-defined, real server, both eras: a call streaming a progress event every 0.2 s for 4 s still
    ends at its 1 s timeout (events do not extend it); 2025-11-25: ``notifications/cancelled`` names the
    request; 2026-07-28: closing the stream is the cancellation (spec), no notification is sent.
    """
    http = RecordingSession()
    client = open_client(sdk_server, session=http)
    client.connect()  # the handshake is not timed
    seen: list[dict] = []
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError):
        client.call_tool("progress", {"steps": 20, "delay_seconds": 0.2}, timeout_seconds=1,
                         progress_callback=seen.append)
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 1.8
    assert 2 <= len(seen) < 20  # events did arrive, and did not keep the call alive
    assert_era(client, era)
    (call,) = http.rpc("tools/call")
    if era == LEGACY:
        (cancelled,) = http.rpc("notifications/cancelled")
        assert cancelled.message["params"] == {"requestId": call.message["id"], "reason": "timeout"}
    else:
        assert http.rpc("notifications/cancelled") == []


def test_the_client_timeout_applies_when_a_call_gives_none(sdk_server, era):
    """``MCPClient(timeout_seconds=...)`` is the default deadline of every request without its own (both eras)."""
    client = MCPClient(sdk_server, timeout_seconds=0.6)
    try:
        client.connect()
        assert_era(client, era)
        started = time.monotonic()
        with pytest.raises(MCPTimeoutError):
            client.call_tool("slow", {"seconds": 5})
        assert 0.5 <= time.monotonic() - started < 1.5
        assert client.call_tool("slow", {"seconds": 0.1}, timeout_seconds=5)["content"][0]["text"] == "slept 0.1"
    finally:
        client.close()


@pytest.fixture
def unanswered_port() -> Iterator[int]:
    """A port whose accept queue is full, so a new connection hangs in the handshake (Linux drops the SYN)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.settimeout(0.2)
        try:
            filler.connect(("127.0.0.1", port))
        except OSError:
            fillers.append(filler)
            break
        fillers.append(filler)
    else:
        listener.close()
        pytest.skip("this kernel accepted every connection; cannot make a connect hang")
    yield port
    for filler in fillers:
        filler.close()
    listener.close()


def test_connecting_is_bounded_by_connect_timeout_seconds(unanswered_port):
    """``connect_timeout_seconds`` bounds the TCP handshake on its own (well under the 10 s request
    timeout); the error says no connection was made.
    """
    transport = HTTPTransport(f"http://127.0.0.1:{unanswered_port}/mcp", timeout_seconds=10,
                              connect_timeout_seconds=0.3)
    client = MCPClient(transport=transport, retry_sleep=pytest.fail)
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        client.connect()
    client.close()
    assert time.monotonic() - started < 2
    assert "no connection within 0.3s" in str(caught.value)


def test_c21_a_hung_tool_call_becomes_an_error_tool_message_and_the_agent_goes_on(sdk_server, era):
    """Case C21 through the agent, real server, both eras: ``slow`` outlives the 1 s timeout; the model's next
    call sees a tool message saying it timed out after 1s, the run completes, the tool event is an error,
    the call was cancelled (2025-11-25: ``notifications/cancelled`` sent; 2026-07-28: its stream closed, no
    notification), and the tool was sent (and ran) once.
    """
    http = RecordingSession()
    client = MCPClient(transport=HTTPTransport(sdk_server, session=http, timeout_seconds=1), timeout_seconds=1,
                       name="sdk")
    llm = ScriptedLLM([tool_call_reply("slow", {"seconds": 10}, call_id="call_11"), text_reply("gave up")])
    events = EventRecorder()
    agent = Agent(llm, mcp_servers=[client], event_sink=events, builtin_list_tools=False)
    try:
        before = counts(client).get("slow", 0)
        started = time.monotonic()
        answer = agent.ask("make the report", timeout_seconds=10)
        elapsed = time.monotonic() - started
        after = counts(client).get("slow", 0)
    finally:
        agent.shutdown()
        client.close()
    assert answer["content"] == "gave up"
    assert elapsed < 5
    tool_message = llm.calls[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_11"
    assert "timed out after 1s" in tool_message["content"]
    (end,) = events.of_type("tool_execution_end")
    assert end.is_error is True
    slow_calls = [r for r in http.rpc("tools/call") if r.message["params"]["name"] == "slow"]
    assert len(slow_calls) == 1
    assert [r.message["params"]["requestId"] for r in http.rpc("notifications/cancelled")] == (
        [slow_calls[0].message["id"]] if era == LEGACY else [])
    assert after == before + 1
    assert_era(client, era)


@pytest.mark.slow
def test_a_stdio_call_past_its_timeout_is_cancelled_by_notification_in_both_eras(era):
    """Real SDK server over stdio (``sdk_server.py --stdio``), both eras: ``slow`` outlives its 1 s timeout,
    ``MCPTimeoutError`` comes at 1 s, and ``notifications/cancelled`` names it (MCP 2026-07-28 "Cancellation":
    stdio has no stream to close, the client MUST send it; over HTTP closing is the cancel). The process
    keeps serving. The sent messages are read from a recording wrapper around the real transport's ``send``.
    """
    import sys
    from pathlib import Path

    server = Path(__file__).resolve().parents[1] / "servers" / "sdk_server.py"
    client = MCPClient.stdio(sys.executable, [str(server), "--stdio"], timeout_seconds=30)
    sent: list[dict] = []
    send = client.transport.send

    def recording_send(message, **kwargs):  # type: ignore[no-untyped-def]
        sent.append(message)
        return send(message, **kwargs)

    client.transport.send = recording_send  # type: ignore[method-assign]
    try:
        client.connect()
        assert_era(client, era)
        started = time.monotonic()
        with pytest.raises(MCPTimeoutError):
            client.call_tool("slow", {"seconds": 10}, timeout_seconds=1)
        assert 0.9 <= time.monotonic() - started < 2
        assert client.call_tool("echo", {"text": "still here"})["content"][0]["text"] == "still here"
    finally:
        client.close()
    (call,) = [m for m in sent if m.get("method") == "tools/call" and m["params"]["name"] == "slow"]
    cancels = [m["params"] for m in sent if m.get("method") == "notifications/cancelled"]
    assert cancels == [{"requestId": call["id"], "reason": "timeout"}]
