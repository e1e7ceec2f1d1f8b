"""``MCPClient.cancel_in_flight()`` (what ``Agent.abort()`` calls) against real servers: a cut request
fails at once with ``MCPTransportError`` and is never resumed, retried or sent again, even when the
server gives its SSE stream event ids (npm server-everything does, so a cut stream looks like one
that ended early and could be resumed with ``Last-Event-ID``); the ``listen=True`` stream stays open.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.helpers import RecordingSession, run_in_thread
from tests.mcp.conftest import assert_era
from yiemagent import Agent
from yiemagent._internal.http import CancellableSession
from yiemagent.exceptions import MCPTimeoutError, MCPTransportError
from yiemagent.mcp import HTTPTransport, MCPClient
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply

LONG_CALL = ("trigger-long-running-operation", {"duration": 4, "steps": 4})
"""Four progress events one second apart, then the result: 4 s on server-everything."""


class RecordingCancellableSession(CancellableSession, RecordingSession):
    """A ``CancellableSession`` (so ``cancel()`` really cuts) that records every request it sends."""


def resumes(http: RecordingSession) -> list[Any]:
    """The ``GET`` requests that resumed a stream (they carry ``Last-Event-ID``)."""
    return [r for r in http.sent if r.method == "GET" and "last-event-id" in r.headers]


@pytest.mark.node
def test_cancel_in_flight_cuts_a_call_whose_sse_stream_has_event_ids_at_once(everything_server):
    """The reported case, as a user writes it: server-everything primes each SSE reply with an event id.
    The cut stream must not be taken for an early end and resumed (which blocked until the 6 s timeout
    and raised ``MCPTimeoutError``): ``MCPTransportError`` within 1 s, and the client serves on.
    """
    client = MCPClient(everything_server, timeout_seconds=6)
    try:
        client.connect()
        timer = threading.Timer(0.5, client.cancel_in_flight)
        timer.start()
        started = time.monotonic()
        with pytest.raises(MCPTransportError) as caught:
            client.call_tool(*LONG_CALL)
        elapsed = time.monotonic() - started
        timer.join()
        assert not isinstance(caught.value, MCPTimeoutError)
        assert "cancelled" in str(caught.value)
        assert elapsed < 1.5  # 0.5 s until the cancel, then at once
        assert client.call_tool("echo", {"message": "after"})["content"][0]["text"] == "Echo: after"
    finally:
        client.close()


@pytest.mark.node
def test_a_cut_call_is_sent_once_never_resumed_and_its_cancellation_is_sent(everything_server):
    """Cancelled after the first progress event (the stream has event ids by then): the error comes
    within 1 s of ``cancel_in_flight``; no ``GET`` with ``Last-Event-ID`` follows, even after the stream's
    retry delay; ``tools/call`` went out once and ``notifications/cancelled`` names it.
    """
    http = RecordingCancellableSession()
    transport = HTTPTransport(everything_server, session=http, timeout_seconds=10)
    client = MCPClient(transport=transport, timeout_seconds=10)
    try:
        client.connect()
        progressed = threading.Event()
        thread, out = run_in_thread(client.call_tool, *LONG_CALL, progress_callback=lambda params: progressed.set())
        assert progressed.wait(5)
        started = time.monotonic()
        (request_id,) = client.cancel_in_flight()
        thread.join(5)
        assert time.monotonic() - started < 1.0
        (error,) = out
        assert type(error) is MCPTransportError
        time.sleep(1.5)  # longer than the resume delay (the stream's retry, else 1 s): nothing may follow
        assert resumes(http) == []
        assert len(http.rpc("tools/call")) == 1
        (cancelled,) = http.rpc("notifications/cancelled")
        assert cancelled.message["params"] == {"requestId": request_id, "reason": "aborted by the user"}
    finally:
        client.close()


@pytest.mark.node
def test_agent_abort_ends_the_mcp_call_at_once_on_a_server_with_event_ids(everything_server):
    """``Agent.abort()`` during a long tool of server-everything: the aborted answer comes at once and the
    ``tools/call`` really ends (nothing left in flight within 1 s, no resumed stream), so the agent's worker
    is free; the next question is served.
    """
    http = RecordingCancellableSession()
    client = MCPClient(transport=HTTPTransport(everything_server, session=http, timeout_seconds=20),
                       timeout_seconds=20, name="everything")
    recorder = EventRecorder()
    llm = ScriptedLLM([tool_call_reply(LONG_CALL[0], LONG_CALL[1]), text_reply("after")])
    agent = Agent(llm, mcp_servers=[client], event_sink=recorder).start()
    try:
        agent.input_queue.put("go")
        deadline = time.monotonic() + 10
        while not http.rpc("tools/call") and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # the SSE reply (and its event id) has begun
        started = time.monotonic()
        agent.abort()
        assert agent.output_queue.get(timeout=5)["status"] == "aborted"
        while client._in_flight and time.monotonic() - started < 5:
            time.sleep(0.01)
        assert time.monotonic() - started < 1.0
        agent.input_queue.put("again")
        assert agent.output_queue.get(timeout=10)["content"] == "after"
        time.sleep(1.2)
        assert resumes(http) == [] and len(http.rpc("tools/call")) == 1
    finally:
        agent.shutdown()
        client.close()


def test_cancel_leaves_the_listen_stream_open_and_it_still_delivers(sdk_server, era):
    """``listen=True``, both eras: the stream (2025-11-25: GET; 2026-07-28: ``subscriptions/listen``) has
    its own connection, so ``cancel_in_flight`` cuts the slow call but not the stream: the same listener
    stays open, and a ``tools/list_changed`` the server sends on it after the cancel still arrives.
    Before the fix, in 2026-07-28 ``connect()`` took 5 s and returned with the stream not open (the
    listener thread waited for the client lock that the connecting thread held).
    """
    client = MCPClient(sdk_server, timeout_seconds=10, listen=True)
    try:
        started = time.monotonic()
        client.connect()
        assert time.monotonic() - started < 2
        assert_era(client, era)
        assert client.transport.listening.is_set()
        listener = client.transport._listener
        thread, out = run_in_thread(client.call_tool, "slow", {"seconds": 10})
        deadline = time.monotonic() + 5
        while not client._in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # let tools/call reach the server
        started = time.monotonic()
        assert client.cancel_in_flight()
        thread.join(5)
        assert time.monotonic() - started < 1.0 and type(out[0]) is MCPTransportError
        assert client.transport._listener is listener and listener.alive
        assert client.transport.listening.is_set()
        client.tools_changed.clear()
        assert client.call_tool("announce_change")["content"][0]["text"] == "announced"
        assert client.tools_changed.wait(5)
    finally:
        client.close()
    assert not client.transport.listening.is_set()
