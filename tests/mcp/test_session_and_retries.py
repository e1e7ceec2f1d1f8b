"""Session expiry (C13) and retries: what is sent again, and what never is.

Rules under test (MCPClient docstring): ``initialize``, ``tools/list`` and ``ping`` are retried on
connection failures and 429/502/503 (honouring ``Retry-After``); ``tools/call`` is sent again only
when the answer proves it did not run (connection refused; 404 / 400 for the session). Server-side
counts prove how often a request really arrived. ``retry_sleep`` is a fake, so nothing sleeps. Tests
taking ``era`` run in both eras (``RawPeer(modern=True)``): the retry rule holds in 2026-07-28 too.
"""

from __future__ import annotations

import threading
import time

import pytest
import requests

from tests.helpers import RecordingSession
from tests.mcp.conftest import MODERN, assert_era
from tests.servers.raw_http_peer import RawPeer, Reply
from yiemagent.exceptions import MCPError, MCPSessionExpiredError, MCPTimeoutError, MCPTransportError
from yiemagent.mcp import MCPClient
from yiemagent.mcp.bridge import MCPToolExecutor


def counts(client: MCPClient) -> dict[str, int]:
    """How often each tool ran in the sdk server process."""
    return client.call_tool("call_counts")["structuredContent"]  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- session expiry (C13)


def test_c13_exchange_reinitializes_without_the_old_session_and_retries_the_call_once(raw_peer):
    """Case C13 exactly, raw peer (to script the 404 on this very tools/call): every request after
    ``initialize`` carries ``s-1``; the 404 leads to a fresh ``initialize`` without the header, then
    ``notifications/initialized`` and the retried ``tools/call`` carry ``s-2``.
    """
    peer = raw_peer()
    peer.script("tools/call", Reply(404, body="session not found"))
    with MCPClient(peer.url, timeout_seconds=5) as client:
        result = client.call_tool("get_time")
    assert result["content"][0]["text"] == "called get_time"
    sent = [(r.method or r.http_method, r.headers.get("mcp-session-id"), r.status) for r in peer.requests]
    assert sent == [
        ("initialize", None, 200), ("notifications/initialized", "s-1", 202), ("tools/call", "s-1", 404),
        ("initialize", None, 200), ("notifications/initialized", "s-2", 202), ("tools/call", "s-2", 200),
        ("DELETE", "s-2", 200),
    ]


def test_c13_a_second_404_on_the_retry_becomes_an_error_tool_result_without_a_loop(raw_peer):
    """Case C13, raw peer (two 404s in a row on demand): the retry's 404 raises ``MCPSessionExpiredError``
    (code -32001, the session in ``.data``); as a tool it is an error result; one re-initialize per call.
    """
    peer = raw_peer()
    peer.script("tools/call", Reply(404), Reply(404), Reply(404), Reply(404))
    client = MCPClient(peer.url, timeout_seconds=5)
    with pytest.raises(MCPSessionExpiredError) as caught:
        client.call_tool("get_time")
    assert caught.value.code == -32001
    assert caught.value.data == {"session_id": "s-2", "status_code": 404}
    assert (peer.count("initialize"), peer.count("tools/call")) == (2, 2)
    result = MCPToolExecutor(client, "get_time")("call_1", {}, threading.Event())
    client.close()
    assert result.is_error and "not known to the server" in result.text
    assert (peer.count("initialize"), peer.count("tools/call")) == (3, 4)  # s-2 -> 404 -> s-3 -> 404


def test_a_404_without_a_session_id_is_not_an_expiry_but_a_transport_error(raw_peer, no_sleep):
    """Spec: only a 404 for a request that carried ``Mcp-Session-Id`` means "session gone". A stateless
    peer (no session; a wrong path gives 404) is reported as HTTP 404, with no re-initialize.
    """
    peer = raw_peer(sessions=False)
    peer.script("tools/call", Reply(404, body="no such endpoint"))
    client = MCPClient(peer.url, timeout_seconds=5, retry_sleep=no_sleep.append)
    with pytest.raises(MCPTransportError) as caught:
        client.call_tool("get_time")
    client.close()
    assert caught.value.status_code == 404 and caught.value.body == "no such endpoint"
    assert peer.count("initialize") == 1 and no_sleep == []


def test_threads_meeting_one_expired_session_initialize_again_only_once(sdk_server, open_client):
    """yiemagent-defined, real server: after the server forgot the session, six threads calling at once
    all succeed with a single new ``initialize`` and each tool runs exactly once.
    """
    http = RecordingSession()
    client = open_client(sdk_server, session=http)
    before = counts(client)
    gone = requests.delete(sdk_server, headers={"Mcp-Session-Id": client.transport.session_id,
                                                "MCP-Protocol-Version": "2025-11-25"}, timeout=5)
    assert gone.status_code == 200
    barrier = threading.Barrier(6, timeout=5)
    results: dict[int, str] = {}

    def call(n: int) -> None:
        barrier.wait()
        results[n] = client.call_tool("echo", {"text": f"t{n}"})["content"][0]["text"]

    threads = [threading.Thread(target=call, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert results == {n: f"t{n}" for n in range(6)}
    assert len(http.rpc("initialize")) == 2
    assert counts(client)["echo"] == before.get("echo", 0) + 6


# --------------------------------------------------------------------------- retries: never a second tools/call


def test_tools_call_dropped_after_the_request_was_read_is_not_sent_again(raw_peer, no_sleep, era):
    """Raw peer (no real server drops a connection on demand after reading the request): the server got
    the call once; the client raises ``MCPTransportError`` and never resends it.
    """
    peer = raw_peer(modern=era == MODERN)
    peer.script("tools/call", Reply(drop=True))
    client = MCPClient(peer.url, timeout_seconds=5, retry_sleep=no_sleep.append)
    client.connect()
    assert_era(client, era)
    with pytest.raises(MCPTransportError) as caught:
        client.call_tool("get_time")
    assert not isinstance(caught.value, MCPTimeoutError)
    assert caught.value.status_code is None
    assert peer.count("tools/call") == 1 and no_sleep == []
    assert client.call_tool("get_time")["content"][0]["text"] == "called get_time"  # the client still works
    client.close()


@pytest.mark.parametrize("status", [429, 502, 503])
def test_tools_call_answered_429_502_or_503_is_not_retried(raw_peer, no_sleep, status, era):
    """yiemagent-defined: a status that "may" mean not-run is no proof for ``tools/call``; the error carries
    the status, the ``Retry-After`` seconds and the body, and the server saw one call.
    """
    peer = raw_peer(modern=era == MODERN)
    peer.script("tools/call", Reply(status, headers={"Retry-After": "3"}, body="slow down"))
    client = MCPClient(peer.url, timeout_seconds=5, retry_sleep=no_sleep.append)
    client.connect()
    assert_era(client, era)
    with pytest.raises(MCPTransportError) as caught:
        client.call_tool("get_time")
    client.close()
    assert caught.value.status_code == status
    assert caught.value.retry_after == 3.0
    assert caught.value.body == "slow down"
    assert peer.count("tools/call") == 1 and no_sleep == []


def test_tools_call_hitting_a_refused_connection_is_sent_once_the_server_is_back(free_port):
    """Spec-safe retry (the request never left): the server goes away after the handshake; the refused
    ``tools/call`` is retried when the fake sleep restarts it on the same port, and runs exactly once.
    """
    first = RawPeer(port=free_port, sessions=False).start()
    back: list[RawPeer] = []

    def restart(seconds: float) -> None:
        back.append(RawPeer(port=free_port, sessions=False).start())

    client = MCPClient(first.url, timeout_seconds=5, retry_sleep=restart)
    try:
        client.connect()
        first.stop()
        result = client.call_tool("get_time")
    finally:
        client.close()
        for peer in back:
            peer.stop()
    assert result["content"][0]["text"] == "called get_time"
    assert len(back) == 1
    assert first.count("tools/call") == 0 and back[0].count("tools/call") == 1


def test_tools_call_to_a_server_that_stays_down_fails_after_three_tries(free_port, no_sleep):
    """yiemagent-defined: connection refused is retried twice with backoff (0.1 s, 0.2 s), then raised."""
    client = MCPClient(f"http://127.0.0.1:{free_port}/mcp", timeout_seconds=5, retry_sleep=no_sleep.append)
    with pytest.raises(MCPTransportError) as caught:
        client.connect()
    client.close()
    assert caught.value.status_code is None
    assert no_sleep == [0.1, 0.2]


# --------------------------------------------------------------------------- retries: safe methods


def test_tools_list_dropped_after_the_request_is_sent_again_and_succeeds(raw_peer, no_sleep, era):
    """Raw peer (a dropped connection on demand): ``tools/list`` is safe to repeat, so it is retried."""
    peer = raw_peer(modern=era == MODERN)
    peer.script("tools/list", Reply(drop=True))
    client = MCPClient(peer.url, timeout_seconds=5, retry_sleep=no_sleep.append)
    client.connect()
    assert_era(client, era)
    assert [t["name"] for t in client.list_tools()] == ["get_time"]
    client.close()
    assert peer.count("tools/list") == 2 and len(no_sleep) == 1


@pytest.mark.parametrize(("method", "status"), [("initialize", 503), ("tools/list", 429), ("ping", 502)])
def test_safe_methods_answered_429_502_503_wait_retry_after_then_succeed(raw_peer, no_sleep, method, status):
    """Raw peer (real servers here never answer 429/502/503): the client waits the ``Retry-After`` seconds
    (through the injected sleep) and asks again; the server saw the request twice.
    """
    peer = raw_peer()
    peer.script(method, Reply(status, headers={"Retry-After": "7"}, body="busy"))
    client = MCPClient(peer.url, timeout_seconds=5, retry_sleep=no_sleep.append)
    client.connect()
    client.list_tools()
    client.ping()
    client.close()
    assert no_sleep == [7.0]
    assert peer.count(method) == 2


def test_retry_after_as_an_http_date_and_a_huge_value_are_honoured_but_capped(raw_peer, no_sleep):
    """RFC 9110 ``Retry-After``: an HTTP-date in the past means "now" (0 s); an hour is capped at 10 s so
    a caller is never parked for long.
    """
    peer = raw_peer()
    peer.script("tools/list", Reply(503, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),
                Reply(503, headers={"Retry-After": "3600"}))
    client = MCPClient(peer.url, timeout_seconds=5, retry_sleep=no_sleep.append)
    assert len(client.list_tools()) == 1
    client.close()
    assert no_sleep == [0.0, 10.0]


def test_a_timeout_is_not_retried_even_for_a_safe_method(raw_peer, no_sleep):
    """yiemagent-defined: the caller's deadline is spent; ``tools/list`` that timed out is not repeated."""
    peer = raw_peer()
    peer.script("tools/list", Reply(hang_seconds=5, result={"tools": []}))
    client = MCPClient(peer.url, timeout_seconds=5, retry_sleep=no_sleep.append)
    client.connect()
    with pytest.raises(MCPTimeoutError):
        client.list_tools(timeout_seconds=0.5)
    client.close()
    assert peer.count("tools/list") == 1 and no_sleep == []


def test_a_tools_list_cut_by_cancel_in_flight_is_not_sent_again(raw_peer, no_sleep):
    """Agent.abort() cuts requests with cancel_in_flight(): even a safe-to-repeat tools/list must not
    be retried, or the retry would undo the abort. Raw peer: a tools/list that hangs on demand.
    """
    peer = raw_peer()
    peer.script("tools/list", Reply(hang_seconds=10, result={"tools": []}))
    client = MCPClient(peer.url, retry_sleep=no_sleep.append)
    client.connect()
    errors = []
    worker = threading.Thread(target=lambda: errors.append(_capture(client.list_tools)))
    worker.start()
    deadline = time.monotonic() + 5
    while peer.count("tools/list") < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.cancel_in_flight()  # one request cut
    worker.join(5)
    assert isinstance(errors[0], MCPTransportError)
    assert peer.count("tools/list") == 1 and no_sleep == []
    client.close()


def _capture(fn):
    try:
        fn()
    except Exception as exc:  # the test asserts the class
        return exc
    return None


def test_qwen_code_5381_a_tool_that_ran_and_answered_a_json_rpc_error_is_never_sent_again(sdk_server, era):
    """qwen-code #5381 (a retry path rediscovered the server on an ordinary tool error, invalid params, and ran
    the tool again). Real SDK server, both eras: ``reject`` runs, then raises a JSON-RPC error -32602 from
    inside the tool.
    In 2026-07-28 the SDK answers it with HTTP 400 (its status table maps -32602 to 400, handler errors too);
    before the fix the client took that 400 for "a handshake-era server", probed again and sent the
    ``tools/call`` again: the tool ran twice. Now the error (carrying the request's id) is the answer:
    raised, the tool ran once. (Which ``MCPError`` subclass it is belongs to the HTTP 400 body rule.)
    """
    with MCPClient(sdk_server, timeout_seconds=10) as client:
        before = counts(client).get("reject", 0)
        assert_era(client, era)
        with pytest.raises(MCPError, match="-32602") as caught:
            client.call_tool("reject", {"message": "not this"})
        assert "not this" in str(caught.value)
        assert counts(client).get("reject", 0) == before + 1
