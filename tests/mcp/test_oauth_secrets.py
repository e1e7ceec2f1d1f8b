"""OAuth secrets never leak (issue 17, point 3): sentinels over every channel, against the real SDK server.

The sentinels are what the real server (tests/servers/oauth_sdk_server.py) minted or received in the run:
every access token, refresh token, authorization code, client secret (DCR-issued) and PKCE code verifier
(``OAuthServer.issued()``), random per run. The channels: the log at DEBUG of every logger (root, urllib3,
yiemagent), the reprs of client, transport, ``OAuth``, storage and agent, every event, the chat transcript
and the agent's state, the store's rows outside its token table, the exceptions of failed logins (text,
``args``, the ``__cause__``/``__context__`` chain and the formatted traceback), and what a second loopback
origin received (metadata hosted there; a token endpoint redirecting there). Each test checks that its
sentinels are real (the server saw them, the token table holds them) so a check could fail.

Public cases:
    google_workspace_mcp 446 / opencode PR 33711: bearer tokens and OAuth state in logs and debug output
    adobe/fetch 447, crawlee 4134, whatwg/fetch 944: credentials carried across a cross-origin redirect;
        here the token endpoint answers 307 to another origin (a POST body with the code, the verifier and
        the client secret would follow a 307), and the MCP endpoint redirects an authorized call there
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

import pytest

from tests.mcp.conftest import assert_era
from tests.mcp.oauth_rig import find_leaks
from tests.mcp.test_secrets import chain_texts
from yiemagent import Agent
from yiemagent.exceptions import MCPAuthorizationError, MCPError
from yiemagent.mcp import MCPClient
from yiemagent.mcp.auth import HeadlessRedirectHandler, OAuth
from yiemagent.store import StoreTokenStorage
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply

KINDS = ("access_tokens", "refresh_tokens", "codes", "client_secrets", "code_verifiers")


def store_rows(store: Any) -> dict[str, str]:
    """``{table: every row as text}`` for the store's tables (its prefix)."""
    from yiemagent.store import PostgresStore

    prefix = store.conversations_table[: -len("conversations")]
    dumped: dict[str, str] = {}
    with store._use() as conn:
        if isinstance(store, PostgresStore):
            with conn.cursor() as cur:
                cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
                            " AND table_name LIKE %s", (prefix + "%",))
                for (table,) in cur.fetchall():
                    cur.execute(f"SELECT * FROM {table}")
                    dumped[table] = repr(cur.fetchall())
        else:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                if table.startswith(prefix):
                    dumped[table] = repr(conn.execute(f"SELECT * FROM {table}").fetchall())
    return dumped


def refused(url: str) -> tuple[str, str | None]:
    raise RuntimeError("no user here to log in")


def test_google_workspace_mcp_446_no_oauth_secret_in_any_channel(oauth_server, era, store, caplog, capsys):
    """Both eras, SQLite and PostgreSQL: a stored conversation whose agent logs in (DCR, PKCE), calls tools,
    outlives a token expiry by refresh, steps up for ``admin``, then fails to log in again after the
    grant is revoked (an error event, an error tool result, an ``MCPAuthorizationError``). The Protected
    Resource Metadata lives on another origin (``--metadata-on-trap``). No sentinel in any channel; the trap
    origin got the metadata requests but no ``Authorization`` header and no sentinel.
    """
    caplog.set_level(logging.DEBUG)
    server = oauth_server("--token-seconds", "2", "--metadata-on-trap", split=True, trap=True)
    storage = StoreTokenStorage(store)
    auth = OAuth(redirect_handler=HeadlessRedirectHandler(timeout_seconds=10), storage=storage,
                 refresh_margin_seconds=0.5, timeout_seconds=10)
    client = MCPClient(server.url, auth=auth, timeout_seconds=10, name="protected")
    events = EventRecorder()

    def after_expiry(messages: Any, tools: Any) -> dict[str, Any]:
        time.sleep(2.6)
        return tool_call_reply("admin_report", {}, call_id="c2")

    conversation = f"oauth-{uuid.uuid4().hex[:8]}"
    agent = Agent(ScriptedLLM([tool_call_reply("whoami", {}, call_id="c1"), after_expiry,
                               tool_call_reply("add", {"a": 1, "b": 2}, call_id="c3"), text_reply("all done")]),
                  mcp_servers=[client], event_sink=events, store=store, conversation_id=conversation)
    failing = MCPClient(server.url, auth=OAuth(redirect_handler=refused, storage=storage, timeout_seconds=10),
                        timeout_seconds=10, name="protected", retry_attempts=1)
    failing_agent = Agent(ScriptedLLM([tool_call_reply("add", {"a": 5, "b": 5}, call_id="c9"),
                                       text_reply("could not")]), mcp_servers=[failing], event_sink=events)
    caught: list[BaseException] = []
    try:
        assert agent.ask("go", timeout_seconds=60)["content"] == "all done"
        assert_era(client, era)
        time.sleep(2.6)
        server.revoke()
        try:
            failing.call_tool("add", {"a": 1, "b": 1})
        except MCPAuthorizationError as exc:
            caught.append(exc)
        failing_agent.ask("again", timeout_seconds=30)
        transcript = json.dumps(agent.openai_messages()) + json.dumps(failing_agent.openai_messages())
        state = agent.state_to_json()
        reprs = {
            "repr(client)": repr(client), "repr(transport)": repr(client.transport),
            "vars(transport)": str(vars(client.transport)), "repr(oauth)": repr(auth),
            "vars(oauth)": str(vars(auth)), "vars(client)": str(vars(client)),
            "repr(storage)": repr(storage), "repr(agent)": repr(agent), "repr(tools)": repr(list(agent.tools)),
            "repr(failing)": repr(failing), "repr(failing.transport)": repr(failing.transport),
        }
    finally:
        agent.shutdown()
        failing_agent.shutdown()
        client.close()
        failing.close()
    assert len(caught) == 1, "the revoked grant with no login possible raises MCPAuthorizationError"
    counts = server.counts()
    assert counts["refresh_grants"] >= 1 and counts["step_ups"] == 1 and counts["authorizations"] == 2, counts

    secrets = server.issued()
    assert all(secrets[kind] for kind in KINDS), {k: len(v) for k, v in secrets.items()}
    rows = store_rows(store)
    token_table = [t for t in rows if t.endswith("oauth")]
    assert len(token_table) == 1 and any(v in rows[token_table[0]] for v in secrets["refresh_tokens"])
    assert any(v in json.dumps(server.log("rs")) for v in secrets["access_tokens"])  # the sentinels are real

    trap = server.log("trap")
    assert trap and all(e["path"].startswith("/.well-known/oauth-protected-resource") for e in trap)
    assert not [e for e in trap if "authorization" in e["headers"]]
    metadata_requests = [e for e in server.log("as") if e["path"].startswith("/.well-known/")]
    assert metadata_requests and not [e for e in metadata_requests if "authorization" in e["headers"]]

    channels = {"log": caplog.text, "stdout+stderr": "".join(capsys.readouterr()),
                "events": "\n".join(repr(e) for e in events.events), "transcript": transcript, "state": state,
                **{f"exception {i}": text for i, text in enumerate(chain_texts(caught[0]))},
                **{f"store {t}": text for t, text in rows.items() if t not in token_table},
                "trap": json.dumps(trap), **reprs}
    assert "urllib3" in caplog.text and len(events.events) > 5
    assert not find_leaks(channels, {k: secrets[k] for k in KINDS})
    sentinel_count = sum(len(secrets[k]) for k in KINDS)
    print(f"\nOAUTH-SECRETS-FIGURES channels={len(channels)} sentinels={sentinel_count} "
          f"checks={len(channels) * sentinel_count} kinds={ {k: len(secrets[k]) for k in KINDS} }")


def test_adobe_fetch_447_a_token_endpoint_redirect_to_another_origin_is_not_followed(oauth_server, caplog):
    """adobe/fetch 447, crawlee 4134 (credentials across a cross-origin redirect): the token endpoint answers
    307 to the trap origin. A 307 keeps the POST body, so following it would hand the code, the PKCE verifier
    and the client secret to another origin: the login fails with ``MCPAuthorizationError``, the trap
    received nothing at all, and neither the error chain nor the log holds a sentinel.
    """
    caplog.set_level(logging.DEBUG)
    server = oauth_server("--token-redirect", split=True, trap=True)
    client = MCPClient(server.url, auth=OAuth(redirect_handler=HeadlessRedirectHandler(timeout_seconds=10),
                                              timeout_seconds=10), timeout_seconds=10, retry_attempts=1)
    try:
        with pytest.raises(MCPAuthorizationError) as caught:
            client.call_tool("add", {"a": 1, "b": 1})
    finally:
        client.close()
    assert "HTTP 307" in str(caught.value)
    secrets = server.issued()
    assert secrets["codes"] and secrets["client_secrets"], secrets  # the flow got as far as the code
    assert [e["path"] for e in server.log("as") if e["path"] == "/token"]  # and asked the real token endpoint
    assert server.log("trap") == []
    channels = {f"exception {i}": t for i, t in enumerate(chain_texts(caught.value))}
    channels["log"] = caplog.text
    assert not find_leaks(channels, secrets)


@pytest.mark.parametrize("follow", [False, True], ids=["refused", "followed"])
def test_crawlee_4134_the_bearer_token_never_follows_a_cross_origin_redirect_of_the_mcp_endpoint(
        oauth_server, caplog, follow, era):
    """Crawlee 4134, whatwg/fetch 944: after the login, the MCP endpoint answers an authorized ``tools/list``
    with 307 to another origin. By default the redirect is refused (the trap gets nothing); with
    ``follow_cross_origin_redirects=True`` the trap gets the request without ``Authorization`` and without
    any sentinel (it answers 404, so listing fails). Both eras.
    """
    caplog.set_level(logging.DEBUG)
    server = oauth_server("--mcp-redirect", split=True, trap=True)
    client = MCPClient(server.url, auth=OAuth(redirect_handler=HeadlessRedirectHandler(timeout_seconds=10),
                                              timeout_seconds=10),
                       timeout_seconds=10, retry_attempts=1, follow_cross_origin_redirects=follow)
    try:
        client.connect()
        assert_era(client, era)
        with pytest.raises(MCPError) as caught:  # a refused redirect, or the trap's 404 (read as a lost session)
            client.list_tools()
    finally:
        client.close()
    secrets = server.issued()
    assert secrets["access_tokens"] and server.counts()["authorizations"] == 1
    trap = server.log("trap")
    assert (len(trap) > 0) == follow, trap
    assert not [e for e in trap if "authorization" in e["headers"]]
    channels = {"trap": json.dumps(trap), "log": caplog.text,
                **{f"exception {i}": t for i, t in enumerate(chain_texts(caught.value))}}
    assert not find_leaks(channels, secrets)
