"""State bound to the verified identity (issue 33 point 3, and the sessions of point 2).

``BearerAuth`` verifies real signed JWTs (PyJWT, HS256) in front of ``MCPServer.wsgi_app()``; the app is served
on a loopback socket (werkzeug's threaded server) and talked to by the official ``mcp`` SDK client (2025-11-25,
with an ``Authorization`` header) or, for what no real client sends (a replayed or another user's
``requestState``, a flood of 10,001 ``initialize``), by raw HTTP: each such use says so.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import jwt
import pytest
import requests
from werkzeug.test import Client

from tests.mcp.server.kit import Booking, serving
from tests.mcp.server.test_auth import ACCEPT, INIT, ISSUER, KEY, RESOURCE
from yiemagent import Agent
from yiemagent.mcp import MCPClient
from yiemagent.mcp.server import MCPServer, current_call
from yiemagent.mcp.server.auth import AccessToken, BearerAuth, JWTVerifier
from yiemagent.mcp.server.conversations import conversation_tool
from yiemagent.mcp.server.rounds import MemoryUsedStates
from yiemagent.mcp.server.sessions import MemorySessions, SessionRefused
from yiemagent.store import SQLiteStore
from yiemagent.testing import text_reply
from yiemagent.tools import AgentTool, tool

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}


def bearer(subject: str | None, client_id: str | None = "app") -> str:
    claims: dict[str, Any] = {"iss": ISSUER, "aud": RESOURCE, "scope": "mcp", "exp": int(time.time()) + 600}
    if subject is not None:
        claims["sub"] = subject
    if client_id is not None:
        claims["client_id"] = client_id
    return jwt.encode(claims, KEY, algorithm="HS256")


def guarded(server: MCPServer, **options: Any) -> BearerAuth:
    return BearerAuth(server.wsgi_app(**options), JWTVerifier(key=KEY, issuer=ISSUER, algorithms=["HS256"]),
                      resource=RESOURCE, authorization_servers=[ISSUER], required_scopes=["mcp"])


def sdk_calls(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """The ``mcp`` SDK client (2025-11-25, a session) calling ``calls`` in order with ``token``."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    results: list[Any] = []

    async def talk() -> None:
        with anyio.fail_after(120):
            async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http, \
                    streamable_http_client(url, http_client=http) as (read, write, *_), \
                    ClientSession(read, write) as session:
                await session.initialize()
                for name, arguments in calls:
                    results.append(await session.call_tool(name, arguments))

    anyio.run(talk)
    return results


def modern_call(url: str, token: str | None, name: str, arguments: dict[str, Any], **params: Any) -> Any:
    """A 2026-07-28 ``tools/call`` over raw HTTP (used for the rounds no real client replays)."""
    headers = {**ACCEPT, "Content-Type": "application/json", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call", "Mcp-Name": name}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": META, **params}}
    return requests.post(url, data=json.dumps(body), headers=headers, timeout=60)


@tool
def whoami() -> str:
    """Say who the verified caller is."""
    call = current_call()
    assert call is not None
    identity = call.identity
    return "nobody" if identity is None else f"{identity.subject}/{identity.client_id}/{identity.principal}"


@pytest.mark.slow  # a server on a socket, the mcp SDK client
def test_the_verified_identity_reaches_every_served_call_in_both_eras() -> None:
    """Before, a served call saw only the raw ``Authorization`` header, never the verified user."""
    server = MCPServer("who", tools=[whoami])
    with serving(guarded(server)) as url:
        (legacy,) = sdk_calls(url, bearer("alice"), [("whoami", {})])
        modern = modern_call(url, bearer("bob", None), "whoami", {})
    assert legacy.content[0].text == f"alice/app/iss:{ISSUER} sub:alice"
    assert modern.status_code == 200
    assert modern.json()["result"]["content"][0]["text"] == f"bob/None/iss:{ISSUER} sub:bob"
    reply = server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami"}})
    assert reply is not None and reply["result"]["content"][0]["text"] == "nobody"  # stdio: no identity


def test_prompts_and_resources_see_the_identity_too() -> None:
    """Every served call, not only tools: a prompt's ``render`` and a resource's ``read`` see the same identity."""
    from yiemagent.mcp.server import Prompt, RequestContext, Resource

    def who() -> str:
        call = current_call()
        return "nobody" if call is None or call.identity is None else str(call.identity.subject)

    server = MCPServer("who", prompts=[Prompt("greet", lambda arguments: f"Hello {who()}")],
                       resources=[Resource("memo://me", "me", who)])
    context = RequestContext(identity=AccessToken(subject="zoe"))
    prompt = server.handle({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "greet"}},
                           context)
    read = server.handle({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "memo://me"}},
                         context)
    assert prompt is not None and prompt["result"]["messages"][0]["content"]["text"] == "Hello zoe"
    assert read is not None and read["result"]["contents"][0]["text"] == "zoe"


def _echo_memory(messages: list[dict[str, Any]], tools: Any) -> Any:
    """A model that repeats every user message it was given: what the conversation holds is in its answer."""
    said = [m["content"] for m in messages if m["role"] == "user"]
    return text_reply("I know: " + " | ".join(str(s) for s in said))


@pytest.mark.slow  # a server on a socket, the mcp SDK client
def test_repliers_mcp_server_14_another_user_given_a_conversation_id_gets_a_conversation_of_their_own(
        tmp_path: Path) -> None:
    """Repliers-io/mcp-server #14, mcp-gateway-registry #1357 (state not bound to the caller): before, Mallory, with a
    token of her own and Alice's ``conversation_id``, read Alice's conversation. Now the id is namespaced by the
    verified principal: Mallory reaches an empty conversation of her own; Alice goes on with hers.
    """
    store = SQLiteStore(str(tmp_path / "c.db"))
    made: list[tuple[str, AccessToken | None]] = []

    def make_agent(store_id: str, *, identity: AccessToken | None = None) -> Agent:
        made.append((store_id, identity))
        return Agent(_echo_memory, store=store, conversation_id=store_id)

    server = MCPServer("helpdesk", tools=[conversation_tool(make_agent, "ask_agent", "Ask the agent.")])
    with serving(guarded(server, stateless=True)) as url:
        (first,) = sdk_calls(url, bearer("alice"), [("ask_agent", {"input": "my PIN is 4711"})])
        conversation = first.structured_content["conversation_id"]
        (stolen,) = sdk_calls(url, bearer("mallory"), [("ask_agent", {"input": "what do you know?",
                                                                      "conversation_id": conversation})])
        (again,) = sdk_calls(url, bearer("alice"), [("ask_agent", {"input": "and?", "conversation_id": conversation})])
    assert "4711" not in json.dumps(stolen.model_dump())
    assert stolen.structured_content == {"answer": "I know: what do you know?", "conversation_id": conversation,
                                        "input_id": stolen.structured_content["input_id"], "status": "completed"}
    assert again.content[0].text == "I know: my PIN is 4711 | and?"
    assert [identity.subject for _, identity in made] == ["alice", "mallory", "alice"]  # type: ignore[union-attr]
    assert made[0][0] == made[2][0] != made[1][0] and made[0][0].endswith("/" + conversation)


def test_a_one_argument_make_agent_still_works_and_a_token_naming_nobody_gets_an_error(tmp_path: Path) -> None:
    """Old ``make_agent(conversation_id)`` signatures keep working (given the bound store id); a token with
    neither ``sub`` nor a client id cannot own a conversation: an error result, no agent made.
    """
    store = SQLiteStore(str(tmp_path / "c.db"))
    made: list[str] = []

    def make_agent(conversation_id: str) -> Agent:
        made.append(conversation_id)
        return Agent(_echo_memory, store=store, conversation_id=conversation_id)

    server = MCPServer("helpdesk", tools=[conversation_tool(make_agent, "ask_agent", "Ask the agent.")])
    client = Client(guarded(server, stateless=True))
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ask_agent", "arguments": {"input": "hi", "conversation_id": "c-1"}}}

    def post(token: str) -> Any:
        return client.post("/mcp", data=json.dumps(body), content_type="application/json",
                           headers={**ACCEPT, "Authorization": f"Bearer {token}"}).json["result"]

    assert post(bearer("alice"))["content"][0]["text"] == "I know: hi"
    nobody = post(bearer(None, None))
    assert nobody["isError"] is True and "names no subject" in nobody["content"][0]["text"]
    assert len(made) == 1 and made[0].endswith("/c-1") and made[0] != "c-1"
    unauthenticated = MCPServer("h", tools=[conversation_tool(make_agent, "ask_agent", "Ask.")]).handle(body)
    assert unauthenticated is not None and made[-1] == "c-1"  # no identity: the id as it is (documented)


def _waiting(started: threading.Event, release: threading.Event) -> AgentTool:
    def execute(call_id: str, arguments: dict[str, Any], abort: threading.Event) -> str:
        started.set()
        if not release.wait(60):
            return "never released"
        return "aborted" if abort.is_set() else "finished normally"

    return AgentTool("long_job", "A job that runs until released.", {"type": "object", "properties": {}}, execute)


@pytest.mark.slow  # a server on a socket, the mcp SDK client, 10,001 requests
@pytest.mark.timeout(300)
def test_python_sdk_3395_a_10001_session_flood_from_one_user_never_touches_another_users_running_call() -> None:
    """modelcontextprotocol/python-sdk PR #3395 and stacklok/toolhive #3874 (sessions capped per client): before,
    Mallory opened 10,001 sessions and the global LRU evicted Alice's: her running call was cancelled and her
    ``tools/call`` got 202 with an empty body. Now, with the default ``MemorySessions()``, Mallory gets her 100
    sessions and then 429 with a JSON-RPC error; Alice's call finishes normally and her session goes on. Alice
    is yiemagent's ``MCPClient`` without the standalone GET stream (whose polling happened to keep the mcp SDK
    client's session fresh in the old LRU). Mallory's flood is sent in-process (werkzeug's test client on the
    same app object): no real client opens 10,001 sessions.
    """
    started, release = threading.Event(), threading.Event()
    server = MCPServer("jobs", tools=[_waiting(started, release), whoami])
    app = guarded(server)
    alice: dict[str, Any] = {}

    def alice_works() -> None:
        try:
            with MCPClient(url, headers={"Authorization": f"Bearer {bearer('alice')}"}, listen=False,
                           protocol_version="2025-11-25", timeout_seconds=120) as client:
                alice["results"] = [client.call_tool("long_job", {}), client.call_tool("whoami", {})]
        except BaseException as exc:
            alice["error"] = repr(exc)

    with serving(app) as url:
        worker = threading.Thread(target=alice_works, daemon=True)
        worker.start()
        assert started.wait(60), alice
        flood, token, statuses = Client(app), bearer("mallory"), {}
        began = time.monotonic()
        for _ in range(10_001):
            response = flood.post("/mcp", data=json.dumps(INIT), content_type="application/json",
                                  headers={**ACCEPT, "Authorization": f"Bearer {token}"})
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        flood_seconds = time.monotonic() - began
        refused = response.json
        release.set()
        worker.join(60)
    assert statuses == {200: 100, 429: 9_901}, statuses
    assert refused["error"]["code"] == -32000 and "Too many sessions" in refused["error"]["message"]
    assert "error" not in alice, alice
    long_job, who = alice["results"]
    assert long_job["content"][0]["text"] == "finished normally" and not long_job["isError"]
    assert who["content"][0]["text"] == f"alice/app/iss:{ISSUER} sub:alice"  # her session still there after the flood
    print(f"flood of 10,001 initialize: {flood_seconds:.1f} s")


@pytest.mark.slow  # a server process, 10,001 requests over a socket
@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["waitress", "gunicorn"])
def test_under_the_guides_server_a_10001_session_flood_leaves_another_user_served(kind: str) -> None:
    """The serving guide's deployments (waitress, 8 threads; gunicorn gthread, one worker, 8 threads) behind
    ``BearerAuth``: Mallory sends 10,001 ``initialize`` on one keep-alive connection while Alice calls ``add`` in
    her session again and again. Mallory gets 100 sessions and 429s; every call of Alice's is answered and her
    session lives. Raw HTTP for the flood (no real client opens 10,001 sessions); Alice is yiemagent's
    ``MCPClient``.
    """
    from tests.helpers import PYTHON, free_port, process_output, start_process, stop_process, wait_for_port
    from tests.mcp.server.test_served_front import COMMANDS

    port = free_port()
    listen = [f"--listen=127.0.0.1:{port}"] if kind == "waitress" else ["--bind", f"127.0.0.1:{port}"]
    process = start_process([PYTHON, *COMMANDS[kind], *listen, "tests.servers.served_wsgi:bearer"])
    url, flooding, alice = f"http://127.0.0.1:{port}/mcp", threading.Event(), {"answers": [], "seconds": []}

    def alice_works() -> None:
        try:
            with MCPClient(url, headers={"Authorization": f"Bearer {bearer('alice')}"}, listen=False,
                           protocol_version="2025-11-25", timeout_seconds=60) as client:
                n = 0
                while flooding.is_set() or n < 3:
                    began = time.monotonic()
                    alice["answers"].append(client.call_tool("add", {"a": n, "b": 1})["content"][0]["text"])
                    alice["seconds"].append(time.monotonic() - began)
                    n += 1
        except BaseException as exc:
            alice["error"] = repr(exc)

    try:
        wait_for_port(port, process=process)
        statuses: dict[int, int] = {}
        flooding.set()
        worker = threading.Thread(target=alice_works, daemon=True)
        worker.start()
        with requests.Session() as mallory:
            headers = {**ACCEPT, "Content-Type": "application/json", "Authorization": f"Bearer {bearer('mallory')}"}
            began = time.monotonic()
            for _ in range(10_001):
                status = mallory.post(url, data=json.dumps(INIT), headers=headers, timeout=60).status_code
                statuses[status] = statuses.get(status, 0) + 1
            flood_seconds = time.monotonic() - began
        flooding.clear()
        worker.join(120)
    except Exception:
        print(process_output(process))
        raise
    finally:
        flooding.clear()
        stop_process(process)
    assert statuses == {200: 100, 429: 9_901}, statuses
    assert "error" not in alice, alice
    assert alice["answers"] == [str(n + 1) for n in range(len(alice["answers"]))] and len(alice["answers"]) >= 3
    print(f"{kind} flood: {flood_seconds:.1f} s; Alice's {len(alice['answers'])} calls meanwhile: slowest "
          f"{max(alice['seconds']):.3f} s, median {sorted(alice['seconds'])[len(alice['seconds']) // 2]:.3f} s")


def test_sessions_are_bounded_per_owner_and_a_busy_session_is_never_dropped_for_room() -> None:
    """The owner's share refuses (429) without evicting anyone; a full process drops only an idle session, and
    refuses (503) when every session has a call in flight.
    """
    from yiemagent.mcp.server.calls import ServerSession

    sessions = MemorySessions(max_sessions=3, max_sessions_per_owner=2)
    a1, a2, b1 = ServerSession(), ServerSession(), ServerSession()
    sessions.add(a1, "principal sub:a")
    sessions.add(a2, "principal sub:a")
    with pytest.raises(SessionRefused) as own:
        sessions.add(ServerSession(), "principal sub:a")
    assert own.value.status == 429 and len(sessions) == 2
    sessions.add(b1, "principal sub:b")
    for busy in (a1, a2, b1):
        busy.calls["r"] = threading.Event()
    with pytest.raises(SessionRefused) as full:
        sessions.add(ServerSession(), "principal sub:c")
    assert full.value.status == 503 and len(sessions) == 3
    assert not any(s.calls["r"].is_set() for s in (a1, a2, b1))  # nobody's call was cancelled
    del a2.calls["r"]
    c1 = ServerSession()
    sessions.add(c1, "principal sub:c")
    assert sessions.get(a2.id) is None and sessions.get(a1.id) is a1 and sessions.get(c1.id) is c1
    assert sessions.get(a1.id, "principal sub:b") is None  # another principal: as if unknown
    assert not sessions.remove(a1.id, "principal sub:b") and sessions.get(a1.id) is a1
    unauthenticated = ServerSession()
    sessions.remove(c1.id)
    sessions.add(unauthenticated, "address 10.0.0.1")
    assert sessions.get(unauthenticated.id, "address 10.0.0.2") is unauthenticated  # addresses are not checked


@pytest.fixture
def booking() -> Iterator[tuple[Booking, str]]:
    kept = Booking()
    with serving(guarded(kept.server())) as url:
        yield kept, url


YES = {"confirm": {"action": "accept", "content": {"ok": True}}}


@pytest.mark.slow  # a server on a socket
def test_a_replayed_final_round_does_not_run_the_tool_again(booking: tuple[Booking, str]) -> None:
    """The serving guide's ``book`` says "runs once: after the last question"; before, a replayed final round (the
    same ``requestState`` and answers sent again) booked again. The state is now single-use: the replay is
    refused -32602 and ``book`` does not run. Raw HTTP: no real client replays a round.
    """
    kept, url = booking
    token = bearer("alice")
    first = modern_call(url, token, "book", {"room": "Lab"}).json()["result"]
    assert first["resultType"] == "input_required"
    final = {"inputResponses": YES, "requestState": first["requestState"]}
    booked = modern_call(url, token, "book", {"room": "Lab"}, **final)
    assert booked.json()["result"]["content"][0]["text"].startswith("booked Lab")
    runs = list(kept.runs)
    replayed = modern_call(url, token, "book", {"room": "Lab"}, **final)
    assert replayed.status_code == 400 and replayed.json()["error"]["code"] == -32602
    assert "used already" in replayed.json()["error"]["message"]
    assert kept.runs == runs == ["Lab", "Lab"]  # the replay ran nothing


@pytest.mark.slow  # a server on a socket
def test_eight_replays_of_a_final_round_sent_at_once_book_once(booking: tuple[Booking, str]) -> None:
    """The nonce is spent atomically before the tool runs: of eight copies of the final round sent at the same
    moment, one books and seven are refused -32602. Raw HTTP from threads: no real client sends these.
    """
    kept, url = booking
    token = bearer("alice")
    first = modern_call(url, token, "book", {"room": "Den"}).json()["result"]
    final = {"inputResponses": YES, "requestState": first["requestState"]}
    start, answers = threading.Barrier(8), []

    def send() -> None:
        start.wait(30)
        answers.append(modern_call(url, token, "book", {"room": "Den"}, **final))

    senders = [threading.Thread(target=send) for _ in range(8)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(60)
    assert sorted(a.status_code for a in answers) == [200] + [400] * 7
    assert kept.runs == ["Den", "Den"]  # the first round, and one final round


def test_unauthenticated_sessions_are_bounded_per_address() -> None:
    """Without ``BearerAuth`` a session's owner is the client's address: one address past its share gets 429 and
    another address is still served.
    """
    from tests.mcp.server.kit import build

    app = build().wsgi_app(sessions=MemorySessions(max_sessions_per_owner=3))

    def initialize(address: str) -> Any:
        return Client(app).post("/mcp", data=json.dumps(INIT), content_type="application/json", headers=ACCEPT,
                                environ_base={"REMOTE_ADDR": address})

    assert [initialize("10.0.0.1").status_code for _ in range(4)] == [200, 200, 200, 429]
    assert initialize("10.0.0.2").status_code == 200


@pytest.mark.slow  # a server on a socket
def test_another_users_request_state_is_refused(booking: tuple[Booking, str]) -> None:
    """Before, Mallory's token with Alice's ``requestState`` (and her own answer) went through: the state was bound
    to method, name and arguments only. It is now bound to the verified principal too. Raw HTTP: no real client
    sends another user's state.
    """
    kept, url = booking
    first = modern_call(url, bearer("alice"), "book", {"room": "Hall"}).json()["result"]
    final = {"inputResponses": YES, "requestState": first["requestState"]}
    stolen = modern_call(url, bearer("mallory"), "book", {"room": "Hall"}, **final)
    assert stolen.status_code == 400 and "another request" in stolen.json()["error"]["message"]
    assert kept.runs == ["Hall"]
    own = modern_call(url, bearer("alice"), "book", {"room": "Hall"}, **final)
    assert own.json()["result"]["content"][0]["text"].startswith("booked Hall")


def test_the_record_of_used_states_refuses_rather_than_forgets_a_live_nonce() -> None:
    from yiemagent.mcp.server.rounds import StateStoreFull

    used = MemoryUsedStates(max_entries=2)
    later = time.time() + 60
    assert used.use("a", later) and used.use("b", later) and not used.use("a", later)
    with pytest.raises(StateStoreFull):
        used.use("c", later)
    assert not used.use("b", later)  # still remembered
    expired = MemoryUsedStates(max_entries=1)
    assert expired.use("old", time.time() - 1) and expired.use("new", later) and len(expired) == 1
