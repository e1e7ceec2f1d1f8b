"""A fresh user's and an attacker's trial of issue 33 points 3 and 6 (identity, sessions, run records).

Hostile shapes no real client sends (thousands of made-up bearer tokens, tokens naming nobody) go through
werkzeug's test client on the real WSGI app, as ``test_identity.py`` does for its floods; each test says so.
"""

from __future__ import annotations

import json
import math
import secrets
from typing import Any

import pytest
from werkzeug.test import Client

from tests.mcp.server.kit import build
from tests.mcp.server.test_identity import ACCEPT, INIT, ISSUER, bearer, guarded
from yiemagent import ConfigError, textpolicy
from yiemagent.agent.ui_runs import RunRecord, RunRecords
from yiemagent.mcp.server import MCPServer
from yiemagent.mcp.server.auth import BearerAuth, JWTVerifier
from yiemagent.mcp.server.inputs import InputLimits
from yiemagent.mcp.server.rounds import MemoryUsedStates
from yiemagent.mcp.server.sessions import MemorySessions
from yiemagent.mcp.server.wsgi import WSGIApp


def _initialize(app: Any, token: str | None, address: str = "127.0.0.1") -> Any:
    headers = {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}
    return Client(app).post("/mcp", data=json.dumps(INIT), content_type="application/json", headers=headers,
                            environ_base={"REMOTE_ADDR": address})


def test_made_up_bearer_tokens_are_never_registered_as_secrets_and_verified_ones_are_bounded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, ``BearerAuth`` registered every bearer token it was *sent* as a process-wide secret, before checking
    it: an anonymous client sending made-up tokens grew the registry without bound, and each one recompiled a regex
    of all of them under a global lock (3,000 made-up tokens: the last 500 requests took 87.6 s, 175 ms each, and
    scrubbing 10 kB of text took 44 ms for every log line of every user). Now a refused token is registered
    nowhere, and verified ones are kept as *transient* secrets: the most recent ``MAX_TRANSIENT_SECRETS``.
    Made-up tokens through werkzeug's test client (no real client sends 300 of them).
    """
    app = guarded(build())
    before, permanent = textpolicy.known_secrets(), frozenset(textpolicy._SECRETS)
    made_up = [secrets.token_urlsafe(32) for _ in range(300)]
    statuses = {_initialize(app, token).status_code for token in made_up}
    assert statuses == {401}
    assert textpolicy.known_secrets() == before  # not one of them registered

    monkeypatch.setattr(textpolicy, "MAX_TRANSIENT_SECRETS", 3)
    valid = [bearer(f"user-{n}") for n in range(5)]
    for token in valid:
        assert _initialize(app, token).status_code == 200
        assert token in textpolicy.known_secrets()  # a verified token is hidden at every boundary
    assert textpolicy.scrub_secrets(f"leak {valid[-1]}") == "leak ***"
    known = textpolicy.known_secrets()
    assert [t in known for t in valid] == [False, False, True, True, True]  # the most recent 3 are kept
    assert permanent <= known  # never a permanent secret dropped
    assert _initialize(app, valid[2]).status_code == 200  # used again: the most recent now
    textpolicy.register_secrets([secrets.token_urlsafe(32)], transient=True)
    assert valid[2] in textpolicy.known_secrets() and valid[3] not in textpolicy.known_secrets()


def test_tokens_naming_nobody_do_not_share_one_owner_of_sessions() -> None:
    """A verified token with neither ``sub`` nor a client id (RFC 7662 makes both optional) had the session owner
    ``"principal "``, the same for every such token: one such user's 2 sessions (the bound here) refused every
    other such user's ``initialize`` with 429. Such a token now counts by the client's address, as no token does.
    Raw requests through werkzeug's test client (the addresses are set in the environ).
    """
    app = guarded(build(), sessions=MemorySessions(max_sessions_per_owner=2))
    nobody = bearer(None, None)
    assert [_initialize(app, nobody, "10.0.0.1").status_code for _ in range(3)] == [200, 200, 429]
    assert _initialize(app, bearer(None, None), "10.0.0.2").status_code == 200  # before: 429
    assert _initialize(app, bearer("alice"), "10.0.0.1").status_code == 200  # a principal has a share of its own


NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(("make", "value"), [
    (lambda v: MemorySessions(max_sessions_per_owner=v), NAN),
    (lambda v: MemorySessions(max_sessions_per_owner=v), 2.5),
    (lambda v: MemorySessions(max_sessions_per_owner=v), True),
    (lambda v: MemorySessions(max_sessions_per_owner=v), -1),
    (lambda v: MemorySessions(max_sessions=v), NAN),
    (lambda v: MemorySessions(idle_seconds=v), NAN),
    (lambda v: MemorySessions(idle_seconds=v), INF),
    (lambda v: RunRecords(max_records=v), NAN),
    (lambda v: RunRecords(max_items=v), NAN),
    (lambda v: RunRecords(max_records=v), 0),
    (lambda v: RunRecord(iter(()), heartbeat_seconds=v), -1.0),
    (lambda v: RunRecord(iter(()), heartbeat_seconds=v), NAN),
    (lambda v: RunRecord(iter(()), max_items=v), NAN),
    (lambda v: MemoryUsedStates(max_entries=v), True),
    (lambda v: InputLimits(max_rounds=v), NAN),
    (lambda v: InputLimits(max_rounds=v), INF),
    (lambda v: InputLimits(deadline_seconds=v), NAN),
    (lambda v: InputLimits(max_state_chars=v), 1.5),
    (lambda v: WSGIApp(build(), max_body_bytes=v), NAN),
    (lambda v: BearerAuth(build().wsgi_app(), JWTVerifier(key="k" * 40, algorithms=["HS256"]),
                          resource="https://x/mcp", authorization_servers=["https://as"], max_body_bytes=v), NAN),
    (lambda v: MCPServer("x", used_states=v), object()),
    (lambda v: MCPServer("x", cache_ttl_ms=v), True),
])
def test_a_bound_given_nan_a_fraction_a_bool_or_out_of_range_is_refused_never_unbounded(make: Any, value: Any) -> None:
    """Before, ``NaN`` passed every ``< 1`` check of these options and then compared False with every count:
    ``MemorySessions(max_sessions_per_owner=nan)`` let one owner open any number of sessions, ``RunRecords
    (max_records=nan)`` kept every run, ``InputLimits(max_rounds=nan)`` any number of rounds, ``max_body_bytes=nan``
    read any body; ``RunRecord(heartbeat_seconds=-1)`` made every quiet follower a busy loop of keep-alives. Each is
    now a ``ConfigError`` (a ``ValueError``) when given.
    """
    with pytest.raises(ConfigError):
        make(value)


def test_cache_scope_names_the_nearest_valid_value() -> None:
    with pytest.raises(ConfigError, match="did you mean 'private'"):
        MCPServer("x", cache_scope="privat")


@pytest.mark.slow  # a server on a socket
def test_one_user_spending_rounds_fast_fills_only_her_own_share_of_the_used_states() -> None:
    """stacklok/toolhive #3874 (limits per client identity, enforced independently of the global one), for the
    record of spent ``requestState`` nonces: before, it was bounded only in all (100,000, each kept until its state
    expires, 600 s), so one user spending rounds fast filled it and every other user's rounds were refused -32603
    (here with a record of 4: Mallory's 4 spent rounds refused Alice's first). Now one principal holds at most
    ``max_entries_per_owner``: Mallory's 4th is refused, Alice's round goes through. Raw HTTP 2026-07-28 rounds
    (``test_identity.modern_call``): no real client spends rounds in a loop.
    """
    from tests.mcp.server.kit import Booking, serving
    from tests.mcp.server.test_identity import modern_call

    yes = {"confirm": {"action": "accept", "content": {"ok": True}}}
    kept = Booking()
    used = MemoryUsedStates(max_entries=4, max_entries_per_owner=3)
    with serving(guarded(kept.server(used_states=used))) as url:
        def round_trip(user: str, room: str) -> Any:
            first = modern_call(url, bearer(user), "book", {"room": room}).json()["result"]
            return modern_call(url, bearer(user), "book", {"room": room}, inputResponses=yes,
                               requestState=first["requestState"])

        mallory = [round_trip("mallory", f"M{n}") for n in range(4)]
        alice = round_trip("alice", "A")
    assert [r.status_code for r in mallory[:3]] == [200] * 3
    refused = mallory[3].json()["error"]
    assert refused["code"] == -32603 and "this client has 3" in refused["message"]
    assert alice.status_code == 200 and alice.json()["result"]["content"][0]["text"].startswith("booked A")
    assert len(used) == 4


def test_toolhive_3874_a_session_flood_from_many_addresses_recycles_its_own_sessions_first() -> None:
    """stacklok/toolhive #3874 and cmer81/open-meteo-mcp PR #25 (session floods): the per-owner bound stops one
    address, but a flood from many addresses (10 here, 10 sessions each, in a process of 30) filled the process
    and then the least recently used idle session made room: Alice's, between two of her calls, was dropped
    (her next request 404). Now the idle sessions of the owner holding the most make room first: the flood
    recycles its own and Alice's session lives. Raw requests through werkzeug's test client (the addresses are set
    in the environ; no real client opens 100 sessions).
    """
    app = build().wsgi_app(sessions=MemorySessions(max_sessions=30, max_sessions_per_owner=10))
    alice = _initialize(app, None, "192.0.2.1")
    session_id = alice.headers["Mcp-Session-Id"]
    statuses = [_initialize(app, None, f"198.51.100.{n}").status_code for n in range(10) for _ in range(10)]
    assert statuses == [200] * 100
    listed = Client(app).post("/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
                              content_type="application/json",
                              headers={**ACCEPT, "Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"},
                              environ_base={"REMOTE_ADDR": "192.0.2.1"})
    assert listed.status_code == 200 and "tools" in listed.json["result"]  # before: 404, her session dropped


def test_an_ipv6_client_counts_as_its_64_network_not_as_each_of_its_addresses() -> None:
    """A host on IPv6 holds a whole /64: counted per address, one client opened sessions from as many addresses as
    it liked (here 5 from one /64 past a bound of 3), so the per-owner bound bound nobody. Now the /64 is the
    owner; another /64 and IPv4 clients are counted apart. Raw requests (addresses set in the environ).
    """
    app = build().wsgi_app(sessions=MemorySessions(max_sessions_per_owner=3))
    same_64 = [_initialize(app, None, f"2001:db8:1:2::{n:x}").status_code for n in range(1, 6)]
    assert same_64 == [200, 200, 200, 429, 429]  # before: five 200s
    assert _initialize(app, None, "2001:db8:1:3::1").status_code == 200
    assert _initialize(app, None, "::ffff:192.0.2.7").status_code == 200  # an IPv4 client on a dual stack


@pytest.mark.slow  # gunicorn
@pytest.mark.timeout(300)
def test_under_the_guides_gunicorn_one_user_cannot_hold_every_thread_with_get_streams() -> None:
    """modelcontextprotocol/typescript-sdk and python-sdk keep one standalone ``GET`` stream per session, and each
    holds a thread of the guide's deployment (gunicorn gthread, 8 threads). Before, Mallory opened 8 sessions (well
    within her 100) and a ``GET`` stream on each: every thread was held and Alice got no answer at all (a 20 s
    read timeout, and it would have been forever). Now one owner holds at most ``max_streams_per_owner`` (4) open
    streams: Mallory's 5th and later ``GET`` get 429 at once and Alice's call is answered. Raw HTTP for Mallory
    (no real client opens 8 GET streams); Alice is yiemagent's ``MCPClient``.
    """
    import requests

    from tests.helpers import PYTHON, free_port, process_output, start_process, stop_process, wait_for_port
    from yiemagent.mcp import MCPClient

    port = free_port()
    process = start_process([PYTHON, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "-k", "gthread", "--workers",
                             "1", "--threads", "8", "--timeout", "120", "tests.servers.served_wsgi:bearer"])
    url, streams, statuses = f"http://127.0.0.1:{port}/mcp", [], []
    try:
        wait_for_port(port, process=process)
        headers = {**ACCEPT, "Content-Type": "application/json", "Authorization": f"Bearer {bearer('mallory')}"}
        for _ in range(8):
            began = requests.post(url, data=json.dumps(INIT), headers=headers, timeout=30)
            session_id = began.headers["Mcp-Session-Id"]
            stream = requests.get(url, headers={**headers, "Accept": "text/event-stream", "Mcp-Session-Id": session_id,
                                                "MCP-Protocol-Version": "2025-11-25"}, stream=True, timeout=60)
            streams.append(stream)
            statuses.append(stream.status_code)
        with MCPClient(url, headers={"Authorization": f"Bearer {bearer('alice')}"}, listen=False,
                       protocol_version="2025-11-25", timeout_seconds=60) as alice:
            answer = alice.call_tool("add", {"a": 2, "b": 3})
    except Exception:
        print(process_output(process))
        raise
    finally:
        for stream in streams:
            stream.close()
        stop_process(process)
    assert statuses == [200] * 4 + [429] * 4
    assert answer["content"][0]["text"] == "5"


def test_get_streams_are_bounded_per_owner_over_its_sessions() -> None:
    from yiemagent.mcp.server.calls import ServerSession

    sessions: MemorySessions[Any] = MemorySessions(max_streams_per_owner=2)
    mine = [ServerSession() for _ in range(3)]
    for each in mine:
        sessions.add(each, "principal sub:m")
    theirs = ServerSession()
    sessions.add(theirs, "principal sub:a")
    assert [sessions.listen(each, print) for each in mine] == [0, 0, 429]
    assert sessions.listen(mine[0], print) == 409  # one per session, as before
    assert sessions.listen(theirs, print) == 0  # another owner's share is untouched
    mine[0].listener = None  # its stream closed
    assert sessions.listen(mine[2], print) == 0


def test_a_caller_without_authentication_cannot_name_a_users_conversation_by_its_store_id(tmp_path: Any) -> None:
    """One ``MCPServer`` (one store) served behind ``BearerAuth`` over HTTP and without authentication beside it
    (stdio, or an internal port): Alice's conversation ``c-1`` is ``"<digest of her principal>/c-1"`` in the store, and
    before, a caller without authentication who sent that as its ``conversation_id`` went on with Alice's
    conversation (her PIN in the answer). Now an unauthenticated id of that shape is an error result. In process:
    werkzeug's test client for Alice, ``MCPServer.handle`` for the stdio caller.
    """
    import hashlib

    from yiemagent import Agent
    from yiemagent.mcp.server.conversations import conversation_tool
    from yiemagent.store import SQLiteStore
    from yiemagent.testing import text_reply

    def echo(messages: list[dict[str, Any]], tools: Any) -> Any:
        return text_reply("I know: " + " | ".join(str(m["content"]) for m in messages if m["role"] == "user"))

    store = SQLiteStore(str(tmp_path / "c.db"))
    server = MCPServer("helpdesk", tools=[conversation_tool(
        lambda conversation_id: Agent(echo, store=store, conversation_id=conversation_id), "ask", "Ask.")])

    def body(conversation_id: str, text: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "ask", "arguments": {"input": text, "conversation_id": conversation_id}}}

    alice = Client(guarded(server, stateless=True)).post(
        "/mcp", data=json.dumps(body("c-1", "my PIN is 4711")), content_type="application/json",
        headers={**ACCEPT, "Authorization": f"Bearer {bearer('alice')}"}).json["result"]
    assert alice["content"][0]["text"] == "I know: my PIN is 4711"
    bound = hashlib.sha256(f"iss:{ISSUER} sub:alice".encode()).hexdigest()[:32] + "/c-1"
    crafted = server.handle(body(bound, "what is my PIN?"))
    assert crafted is not None and crafted["result"]["isError"] is True
    assert "4711" not in json.dumps(crafted)  # before: "I know: my PIN is 4711 | what is my PIN?"
    plain = server.handle(body("c-2", "hello"))
    assert plain is not None and plain["result"]["content"][0]["text"] == "I know: hello"  # other ids as before


@pytest.mark.slow  # a server on a socket
def test_a_token_naming_nobody_gets_no_request_state_another_such_token_could_use() -> None:
    """A verified token with neither ``sub`` nor a client id has no principal, so its ``requestState`` was bound to
    nobody: before, another such user's token completed the first user's booking with it (``book`` ran for her).
    Now no state is minted for such a token (-32600, as ``conversation_tool`` refuses to bind a conversation to
    it). Raw HTTP 2026-07-28 rounds (``test_identity.modern_call``): no real client sends another's state.
    """
    from tests.mcp.server.kit import Booking, serving
    from tests.mcp.server.test_identity import modern_call

    kept = Booking()
    with serving(guarded(kept.server())) as url:
        first = modern_call(url, bearer(None, None), "book", {"room": "Hall"})
        if first.status_code == 200 and "requestState" in first.json().get("result", {}):  # before the fix
            stolen = modern_call(url, bearer(None, None), "book", {"room": "Hall"},
                                 inputResponses={"confirm": {"action": "accept", "content": {"ok": True}}},
                                 requestState=first.json()["result"]["requestState"])
            pytest.fail(f"a state bound to nobody was minted; another such token used it: {stolen.json()}")
        named = modern_call(url, bearer("alice"), "book", {"room": "Den"})
    assert first.status_code == 400 and first.json()["error"]["code"] == -32600
    assert "names no subject" in first.json()["error"]["message"]
    assert named.json()["result"]["resultType"] == "input_required"  # a named user's rounds as before


def test_the_same_subject_from_two_issuers_is_two_principals() -> None:
    """A subject is unique only within its issuer (OpenID Connect Core 1.0 section 2): behind a verifier that trusts
    two authorization servers, ``sub: alice`` of one and ``sub: alice`` of the other are two users, so neither
    reaches the other's sessions, conversations or ``requestState`` (before, both were ``"sub:alice"``). An
    issuer with a space cannot end inside another issuer's key. Without ``iss`` the principal is as before.
    """
    from yiemagent.mcp.server.auth import AccessToken

    one = AccessToken(subject="alice", claims={"iss": "https://one.example"})
    other = AccessToken(subject="alice", claims={"iss": "https://two.example"})
    assert one.principal == "iss:https://one.example sub:alice"
    assert one.principal != other.principal
    crafted = AccessToken(subject="b sub:c", claims={"iss": "a"})
    spaced = AccessToken(subject="c", claims={"iss": "a sub:b"})
    assert crafted.principal != spaced.principal
    assert AccessToken(subject="alice").principal == "sub:alice"
    assert AccessToken(client_id="app", claims={"iss": "https://one.example"}).principal == \
        "iss:https://one.example client:app"
    assert AccessToken(claims={"iss": "https://one.example"}).principal is None
