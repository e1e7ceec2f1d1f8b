"""OAuth 2.1 against a real OAuth-protected MCP server built on the ``mcp`` 2.3 SDK's auth (issue 17, point 5).

The server is tests/servers/oauth_sdk_server.py: the SDK's authorization server routes (metadata, DCR,
``/authorize`` that approves at once, ``/token`` with PKCE S256 and rotating refresh tokens) with an
in-memory ``OAuthAuthorizationServerProvider``, and an ``MCPServer`` resource server requiring a bearer
token with scope ``mcp`` and serving its Protected Resource Metadata; one origin, or the authorization
server on a second origin (``split``). It counts logins (``authorizations``), refresh grants and 401/403s,
so each test proves how the client got its token. The login is ``HeadlessRedirectHandler``.

Public cases (named after their source):
    codex 17265 / claude-code 76939 / opencode 34582: an expired token was sent again and again, the stored
        refresh token never used -> a 401 for a token the client thinks valid is refreshed, once
    python-sdk 3250 (PR 2875): a client rebuilt on stored tokens re-logged in instead of refreshing;
    python-sdk 2492: after a restart the refresh went to ``<server>/token``, not the metadata's endpoint
    python-sdk 2270 (PRs 2271/2274/2280) / mcp2cli 58: a refresh response without ``refresh_token`` erased
        the stored one, so the second expiry forced a login
    opencode 34074: parallel calls on an expired token each refreshed with the one rotating refresh token;
        the losers' ``invalid_grant`` wiped the credentials -> one refresh for all
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.helpers import make_oauth, text_of
from tests.mcp.conftest import assert_era
from tests.mcp.oauth_rig import OAuthServer
from yiemagent import Agent
from yiemagent.exceptions import MCPAuthorizationError
from yiemagent.mcp import MCPClient
from yiemagent.mcp.auth import MemoryTokenStorage
from yiemagent.mcp.auth.storage_file import FileTokenStorage
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply


def login_refused(url: str) -> tuple[str, str | None]:
    raise AssertionError(f"a login was started ({url[:40]}...) where stored tokens should have been used")




def bearers(server: OAuthServer, origin: str = "as+rs") -> list[str]:
    """The bearer tokens the MCP endpoint received, in order ("" for none)."""
    return [e["headers"].get("authorization", "")[7:] for e in server.log(origin) if e["path"] == "/mcp"]


@pytest.mark.parametrize("split", [False, True], ids=["one-origin", "as-on-its-own-origin"])
def test_an_agent_calls_a_protected_tool_after_a_headless_login(oauth_server, era, split):
    """Both eras, both layouts: the first request gets 401 + ``resource_metadata``; the client discovers the
    PRM and the authorization server, registers (DCR), logs in headless (PKCE, ``resource``), and the agent's
    tool call runs with the bearer token: one registration, one login, one code grant, no refresh.
    """
    server = oauth_server(split=split)
    client = MCPClient(server.url, auth=make_oauth(), timeout_seconds=10, name="protected")
    agent = Agent(ScriptedLLM([tool_call_reply("whoami", {}), text_reply("done")]), mcp_servers=[client])
    try:
        assert agent.ask("who am I?", timeout_seconds=30)["content"] == "done"
        assert_era(client, era)
        tool_messages = [m for m in agent.openai_messages() if m["role"] == "tool"]
    finally:
        agent.shutdown()
        client.close()
    assert tool_messages and " mcp" in str(tool_messages[0]["content"]), tool_messages
    counts = server.counts()
    assert (counts["registrations"], counts["authorizations"], counts["code_grants"],
            counts["refresh_grants"]) == (1, 1, 1, 0), counts
    assert counts["rs_401"] == 1, counts  # one 401 (the first request), never a loop
    issued = server.issued()
    rs_origin = "rs" if split else "as+rs"
    sent = bearers(server, rs_origin)
    assert sent[0] == "" and set(sent[1:]) == set(issued["access_tokens"]), sent
    token_requests = [e for e in server.log("as" if split else "as+rs") if e["path"] == "/token"]
    assert len(token_requests) == 1 and "code_verifier=" in token_requests[0]["body"]
    assert "resource=" in token_requests[0]["body"]  # RFC 8707: the server refuses tokens for other resources


def test_the_token_expires_and_the_next_call_survives_by_refresh_without_a_second_login(oauth_server):
    """Access tokens live 2 s: a call after expiry goes through with a refreshed token (a refresh grant on the
    server), never a second login, and the refreshed (rotated) token is the one sent afterwards.
    """
    server = oauth_server("--token-seconds", "2", split=True)
    with MCPClient(server.url, auth=make_oauth(refresh_margin_seconds=0.5), timeout_seconds=10) as client:
        assert text_of(client.call_tool("add", {"a": 1, "b": 2})) == "3"
        time.sleep(2.6)
        assert text_of(client.call_tool("add", {"a": 2, "b": 3})) == "5"
        time.sleep(2.6)
        assert text_of(client.call_tool("add", {"a": 3, "b": 4})) == "7"
    counts = server.counts()
    assert counts["authorizations"] == 1 and counts["code_grants"] == 1, counts
    assert counts["refresh_grants"] >= 2, counts
    issued = server.issued()
    assert bearers(server, "rs")[-1] == issued["access_tokens"][-1]


def test_codex_17265_a_401_for_a_token_the_client_thinks_valid_is_refreshed_not_resent(oauth_server):
    """Codex 17265 (also claude-code 76939, opencode 34582): the server ends the token early (its
    ``expires_at`` is an hour away for the client); the next call's 401 runs one refresh grant, the call is
    repeated once with the new token and succeeds; the dead token is sent exactly once; no second login.
    """
    server = oauth_server(split=True)
    with MCPClient(server.url, auth=make_oauth(), timeout_seconds=10) as client:
        assert text_of(client.call_tool("add", {"a": 1, "b": 1})) == "2"
        first = server.issued()["access_tokens"][0]
        seen = len(bearers(server, "rs"))
        server.expire()
        assert text_of(client.call_tool("add", {"a": 2, "b": 2})) == "4"
        assert text_of(client.call_tool("add", {"a": 3, "b": 3})) == "6"
    counts = server.counts()
    assert (counts["authorizations"], counts["refresh_grants"]) == (1, 1), counts
    after_expiry = bearers(server, "rs")[seen:]
    assert after_expiry[0] == first and first not in after_expiry[1:], "the dead token is sent once"
    assert set(after_expiry[1:]) == {server.issued()["access_tokens"][1]}
    assert counts["rs_401"] == 2, counts  # the first request, and the one dead-token request


def test_python_sdk_3250_a_new_client_on_stored_tokens_refreshes_at_the_metadata_token_endpoint(oauth_server,
                                                                                                tmp_path):
    """python-sdk 3250 / PR 2875 (and 2492): a second ``OAuth`` object and ``FileTokenStorage`` (a restarted
    process) on the same token file, with an expired stored token: it refreshes with the stored refresh
    token and registered client instead of logging in (its redirect handler fails the test if called), and the
    refresh goes to the authorization server's ``token_endpoint`` (another origin here), never to
    ``<MCP server>/token``.
    """
    server = oauth_server(split=True)
    path = tmp_path / "tokens.json"
    with MCPClient(server.url, auth=make_oauth(storage=FileTokenStorage(path)), timeout_seconds=10) as client:
        assert text_of(client.call_tool("add", {"a": 1, "b": 2})) == "3"
    server.expire()
    with MCPClient(server.url, auth=make_oauth(storage=FileTokenStorage(path), redirect_handler=login_refused),
                   timeout_seconds=10) as client:
        assert text_of(client.call_tool("add", {"a": 4, "b": 5})) == "9"
    counts = server.counts()
    assert (counts["registrations"], counts["authorizations"], counts["refresh_grants"]) == (1, 1, 1), counts
    assert not [e for e in server.log("rs") if e["path"] == "/token"]
    assert len([e for e in server.log("as") if e["path"] == "/token"]) == 2


def test_python_sdk_2270_a_refresh_response_without_refresh_token_keeps_the_stored_one(oauth_server):
    """python-sdk 2270 (PRs 2271/2274/2280), mcp2cli 58: the authorization server does not rotate (its refresh
    responses omit ``refresh_token``, RFC 6749 §6 allows it); the client keeps the refresh token it has, so a
    second and a third expiry are refreshed too, with one login in all.
    """
    server = oauth_server("--token-seconds", "2", "--no-refresh-rotation")
    storage = MemoryTokenStorage()
    with MCPClient(server.url, auth=make_oauth(storage=storage, refresh_margin_seconds=0.5),
                   timeout_seconds=10) as client:
        for n in range(3):
            assert text_of(client.call_tool("add", {"a": n, "b": 1})) == str(n + 1)
            time.sleep(2.6)
        assert text_of(client.call_tool("echo", {"text": "still here"})) == "still here"
    counts = server.counts()
    assert counts["authorizations"] == 1 and counts["refresh_grants"] >= 3, counts
    stored = [storage.get_tokens(key) for key in (server.url, server.url.rstrip("/"))]
    assert any(t and t.get("refresh_token") == server.issued()["refresh_tokens"][0] for t in stored), \
        "the one refresh token the server issued is still the stored one"


def test_opencode_34074_parallel_calls_on_an_expired_token_share_one_refresh(oauth_server):
    """Opencode 34074: 6 threads call at once after the server expired the token (rotating refresh tokens):
    they all succeed, with one refresh grant (not 6 racing ones, whose losers would get ``invalid_grant``)
    and no second login.
    """
    server = oauth_server(split=True)
    with MCPClient(server.url, auth=make_oauth(), timeout_seconds=15) as client:
        assert text_of(client.call_tool("add", {"a": 0, "b": 0})) == "0"
        server.expire()
        results: list[str] = []
        errors: list[BaseException] = []
        barrier = threading.Barrier(6)

        def call(n: int) -> None:
            barrier.wait(5)
            try:
                results.append(text_of(client.call_tool("add", {"a": n, "b": 100})))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=call, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert not errors, errors
    assert sorted(results) == sorted(str(n + 100) for n in range(6))
    counts = server.counts()
    assert (counts["authorizations"], counts["refresh_grants"]) == (1, 1), counts


def test_scope_step_up_against_the_real_server(oauth_server, era):
    """``admin_report`` needs scope ``admin``: the resource server answers 403 ``insufficient_scope`` with
    ``scope="mcp admin"``; the client logs in again for the union of scopes and repeats the call once; the
    tool ran with a token holding both scopes, and the other tools keep working.
    """
    server = oauth_server(split=True)
    client = MCPClient(server.url, auth=make_oauth(), timeout_seconds=10)
    agent = Agent(ScriptedLLM([tool_call_reply("admin_report", {}), tool_call_reply("whoami", {}, call_id="c2"),
                               text_reply("ok")]), mcp_servers=[client])
    try:
        assert agent.ask("report", timeout_seconds=30)["content"] == "ok"
        assert_era(client, era)
        tools = [str(m["content"]) for m in agent.openai_messages() if m["role"] == "tool"]
    finally:
        agent.shutdown()
        client.close()
    assert "admin report: all good" in tools[0], tools
    assert "admin mcp" in tools[1], tools
    counts = server.counts()
    assert (counts["rs_403"], counts["authorizations"]) == (1, 2), counts
    authorize = [e for e in server.log("as") if e["path"] == "/authorize"]
    assert "admin" in authorize[-1]["query"] and "mcp" in authorize[-1]["query"]


def test_a_pre_registered_confidential_client_logs_in_without_registration(oauth_server):
    """``--client-id``/``--client-secret`` with DCR off and ``client_secret_basic``: no ``/register`` request, the
    token request authenticates with HTTP Basic (the secret is not in the body), and the call works.
    """
    server = oauth_server("--no-dcr", "--client-id", "yiem-app", "--client-secret", "cs-pre-0123456789abcdef",
                          "--client-auth-method", "client_secret_basic", split=True)
    auth = make_oauth(client_id="yiem-app", client_secret="cs-pre-0123456789abcdef")
    with MCPClient(server.url, auth=auth, timeout_seconds=10) as client:
        assert text_of(client.call_tool("echo", {"text": "hi"})) == "hi"
    counts = server.counts()
    assert (counts["registrations"], counts["authorizations"]) == (0, 1), counts
    (token_request,) = [e for e in server.log("as") if e["path"] == "/token"]
    assert token_request["headers"]["authorization"].startswith("Basic ")
    assert "cs-pre-0123456789abcdef" not in token_request["body"]


def test_a_revoked_grant_ends_in_one_new_login_or_a_clear_error(oauth_server):
    """The server forgets every token (the user revoked the grant): the refresh grant fails with
    ``invalid_grant``; with a redirect handler the client logs in again (2 logins) and the call succeeds;
    without one (a headless worker) the call fails with ``MCPAuthorizationError``, not a loop of 401s.
    """
    server = oauth_server(split=True)
    storage = MemoryTokenStorage()
    with MCPClient(server.url, auth=make_oauth(storage=storage), timeout_seconds=10) as client:
        assert text_of(client.call_tool("add", {"a": 1, "b": 1})) == "2"
        server.revoke()
        assert text_of(client.call_tool("add", {"a": 2, "b": 2})) == "4"
    assert server.counts()["authorizations"] == 2
    server.revoke()
    before = server.counts()
    client = MCPClient(server.url, auth=make_oauth(storage=storage, redirect_handler=login_refused_quietly),
                       timeout_seconds=10, retry_attempts=1)
    try:
        with pytest.raises(MCPAuthorizationError) as caught:
            client.call_tool("add", {"a": 3, "b": 3})
    finally:
        client.close()
    assert "the login failed" in str(caught.value)
    after = server.counts()
    assert after["authorizations"] == before["authorizations"]
    assert after["rs_401"] - before["rs_401"] <= 2, (before, after)


def login_refused_quietly(url: str) -> tuple[str, str | None]:
    raise RuntimeError("no user here to log in")


@pytest.mark.parametrize("stored", ["1", "soon", 1.0])
def test_issue_27_a_credential_read_from_storage_is_checked_for_expiry_before_it_is_sent(oauth_server, stored):
    """Issue 27's rule: a credential read from storage is checked for expiry before it is sent. Storage that
    holds ``expires_at`` as a string (another program wrote it), nonsense, or a past time: the token is
    refreshed first (a refresh grant), and the stored token is never sent again.
    """
    from yiemagent.mcp.auth import MemoryTokenStorage

    storage = MemoryTokenStorage()
    server = oauth_server(split=True)
    with MCPClient(server.url, auth=make_oauth(storage=storage), timeout_seconds=10) as client:
        assert text_of(client.call_tool("add", {"a": 1, "b": 1})) == "2"
        (key,) = storage._tokens
        tokens = storage.get_tokens(key)
        assert tokens is not None
        old = tokens["access_token"]
        storage.set_tokens(key, {**tokens, "expires_at": stored})
        sent_before = len(bearers(server, "rs"))
        assert text_of(client.call_tool("add", {"a": 2, "b": 2})) == "4"
    assert server.counts()["refresh_grants"] >= 1
    assert old not in bearers(server, "rs")[sent_before:]


@pytest.mark.parametrize("split", [False, True], ids=["one-origin", "as-on-its-own-origin"])
def test_python_sdk_1250_a_stored_expired_token_is_refreshed_before_it_is_sent(oauth_server, tmp_path, split):
    """python-sdk #1250, openai/codex #27165: a process started on stored tokens whose access token expired
    sent it anyway (a 401 first), because the refresh waited for discovery, which only a 401 started. Now
    the refresh comes first, before the first request of the process: the MCP endpoint never sees the
    expired token, no 401 is answered, one refresh grant, no second login.
    """
    server = oauth_server(split=split)
    path = tmp_path / "tokens.json"
    with MCPClient(server.url, auth=make_oauth(storage=FileTokenStorage(path)), timeout_seconds=10) as client:
        assert text_of(client.call_tool("add", {"a": 1, "b": 2})) == "3"
    storage = FileTokenStorage(path)
    tokens = storage.get_tokens(server.url)
    assert tokens is not None and tokens.get("refresh_token"), tokens
    storage.set_tokens(server.url, {**tokens, "expires_at": time.time() - 3600})  # expired, for the client
    server.expire()  # and for the server: sending it would get a 401
    origin = "rs" if split else "as+rs"
    before, seen = server.counts(), len(bearers(server, origin))
    with MCPClient(server.url, auth=make_oauth(storage=FileTokenStorage(path), redirect_handler=login_refused),
                   timeout_seconds=10) as client:
        assert text_of(client.call_tool("add", {"a": 4, "b": 5})) == "9"
    after = server.counts()
    sent = bearers(server, origin)[seen:]
    assert tokens["access_token"] not in sent and sent, sent  # the expired token never left the client
    assert after["rs_401"] == before["rs_401"], (before, after)
    assert (after["authorizations"], after["refresh_grants"] - before["refresh_grants"]) == (1, 1), after
