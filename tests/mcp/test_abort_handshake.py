"""Abort cuts everything: the handshake's requests are in flight like any other (issue 9, point 4).

yiemagent-defined. Hanging servers are the raw peer: no real server hangs its ``initialize`` on demand.
``abort()`` used to wait 7 s for a hanging first connection (README: about 0.05 s).
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.helpers import run_in_thread
from tests.servers.raw_http_peer import Reply
from yiemagent.exceptions import MCPTransportError
from yiemagent.mcp import MCPClient

HANG = Reply(hang_seconds=30)


def wait_in_flight(client: MCPClient, seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while not (client._in_flight or client._sending) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert client._in_flight or client._sending, "the request never went out"


@pytest.mark.parametrize("method", ["initialize", "notifications/initialized", "tools/list", "ping"])
def test_cancel_in_flight_cuts_a_hanging_handshake_request_at_once(raw_peer, method):
    """Each handshake step that hangs is cut within 0.25 s of ``cancel_in_flight()`` (measured ~5 ms), with
    ``MCPTransportError`` saying so, and is not retried.
    """
    peer = raw_peer()
    peer.script(method, HANG)
    client = MCPClient(peer.url, timeout_seconds=20)
    work = client.ping if method == "ping" else client.list_tools
    thread, out = run_in_thread(work)
    try:
        if method in ("tools/list", "ping"):
            deadline = time.monotonic() + 5
            while peer.count(method) == 0 and time.monotonic() < deadline:
                time.sleep(0.005)
        wait_in_flight(client)
        time.sleep(0.1)  # the request reached the peer and hangs there
        started = time.monotonic()
        client.cancel_in_flight()
        thread.join(5)
        elapsed = time.monotonic() - started
    finally:
        client.close()
    assert not thread.is_alive()
    assert isinstance(out[0], MCPTransportError) and "cancel" in str(out[0])
    assert elapsed < 0.25
    assert peer.count(method) == 1
    assert peer.count("initialize") == 1


def test_initialize_is_cut_but_never_gets_notifications_cancelled(raw_peer):
    """Spec (Cancellation): the client MUST NOT cancel ``initialize``; cutting it sends nothing."""
    peer = raw_peer()
    peer.script("initialize", HANG)
    client = MCPClient(peer.url, timeout_seconds=20)
    thread, out = run_in_thread(client.connect)
    wait_in_flight(client)
    (request_id,) = client.cancel_in_flight()
    thread.join(5)
    client.close()
    assert isinstance(out[0], MCPTransportError)
    assert peer.count("notifications/cancelled") == 0
    assert request_id == 1


def test_the_era_probe_is_cut_but_never_gets_notifications_cancelled(raw_peer):
    """2026-07-28 peer (raw: a ``server/discover`` that hangs is a shape no real server sends): cutting the
    probe sends nothing, like ``initialize``; the era is not settled while probing, and over HTTP closing
    the stream is the cancellation. Before the fix the cut probe reset the era first, so a handshake-era
    ``notifications/cancelled`` (without ``MCP-Protocol-Version``) went out for it.
    """
    peer = raw_peer(modern=True)
    peer.script("server/discover", HANG)
    client = MCPClient(peer.url, timeout_seconds=20, protocol_version=None)
    thread, out = run_in_thread(client.connect)
    wait_in_flight(client)
    time.sleep(0.1)  # the probe reached the peer
    assert client.cancel_in_flight() == [1]
    thread.join(5)
    client.close()
    assert isinstance(out[0], MCPTransportError) and "cancelled" in str(out[0])
    assert [r.method for r in peer.requests] == ["server/discover"]


def test_a_request_waiting_for_another_threads_handshake_ends_with_it(raw_peer):
    """Two threads start on a fresh client; the handshake hangs; one cancel ends both, and neither starts a
    second ``initialize``.
    """
    peer = raw_peer()
    peer.script("initialize", HANG)
    client = MCPClient(peer.url, timeout_seconds=20)
    first, out1 = run_in_thread(client.list_tools)
    wait_in_flight(client)
    second, out2 = run_in_thread(client.call_tool, "get_time")
    time.sleep(0.1)
    client.cancel_in_flight()
    first.join(5)
    second.join(5)
    client.close()
    assert isinstance(out1[0], MCPTransportError) and isinstance(out2[0], MCPTransportError)
    assert peer.count("initialize") == 1 and peer.count("tools/call") == 0


def test_cancel_ends_a_retry_wait_at_once(raw_peer):
    """A 503 with ``Retry-After: 20`` makes the handshake wait to retry; the cancel ends the wait at once and
    no second ``initialize`` goes out.
    """
    peer = raw_peer()
    peer.script("initialize", Reply(503, headers={"Retry-After": "20"}, body="busy"))
    client = MCPClient(peer.url, timeout_seconds=20)
    thread, out = run_in_thread(client.connect)
    deadline = time.monotonic() + 5
    while peer.count("initialize") == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.1)
    started = time.monotonic()
    client.cancel_in_flight()
    thread.join(5)
    elapsed = time.monotonic() - started
    client.close()
    assert isinstance(out[0], MCPTransportError) and elapsed < 0.5
    assert peer.count("initialize") == 1


def test_close_cuts_a_hanging_handshake_on_another_thread_and_returns_fast(raw_peer):
    """``close()`` while ``initialize`` hangs: the other thread fails at once, ``close()`` returns in well
    under its 5 s bound, and later requests say the client is closed.
    """
    peer = raw_peer()
    peer.script("initialize", HANG)
    client = MCPClient(peer.url, timeout_seconds=20)
    thread, out = run_in_thread(client.connect)
    wait_in_flight(client)
    started = time.monotonic()
    client.close()
    elapsed = time.monotonic() - started
    thread.join(5)
    assert elapsed < 1.0 and isinstance(out[0], MCPTransportError)
    with pytest.raises(MCPTransportError, match="closed"):
        client.list_tools()


def test_close_returns_within_its_bound_when_the_delete_hangs(raw_peer):
    """The ``DELETE`` of ``close()`` hangs on the server: ``close()`` still returns within ~2 s."""
    peer = raw_peer()
    peer.script("DELETE", Reply(hang_seconds=30))
    client = MCPClient(peer.url, timeout_seconds=5)
    client.connect()
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 3.0
    assert peer.count("DELETE") == 1


def test_close_returns_when_the_delete_answer_drips(raw_peer):
    """The ``DELETE`` answer comes a byte every 0.3 s (each read is quick, the whole is not): the watchdog
    ends it at 2 s.
    """
    peer = raw_peer()
    peer.script("DELETE", Reply(200, body="x" * 100, drip_seconds=0.3))
    client = MCPClient(peer.url, timeout_seconds=5)
    client.connect()
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 3.0


def test_agent_abort_cuts_a_hanging_first_connection(raw_peer):
    """``Agent.abort()`` while the agent's first MCP handshake hangs: the run ends within 1 s (it used to
    wait out 7 s), with an answer, and the agent keeps working.
    """
    from yiemagent import Agent
    from yiemagent.testing import ScriptedLLM, text_reply

    peer = raw_peer()
    peer.script("initialize", HANG)
    client = MCPClient(peer.url, timeout_seconds=20)
    agent = Agent(ScriptedLLM([text_reply("hi"), text_reply("again")]), mcp_servers=[client])
    try:
        done = threading.Event()
        answers: list[object] = []

        def ask() -> None:
            answers.append(agent.ask("hello", timeout_seconds=15))
            done.set()

        threading.Thread(target=ask, daemon=True).start()
        wait_in_flight(client)
        started = time.monotonic()
        agent.abort()
        assert done.wait(5)
        assert time.monotonic() - started < 1.0
    finally:
        agent.shutdown()
        client.close()
