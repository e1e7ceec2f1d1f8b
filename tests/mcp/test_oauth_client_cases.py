"""Public OAuth client bugs of other MCP clients, replayed against yiemagent's ``OAuth`` (issue 17).

Against the real OAuth-protected ``mcp`` 2.3 SDK server (tests/servers/oauth_sdk_server.py, via
tests/mcp/oauth_rig.py) unless said otherwise. Before issue 17 yiemagent had no OAuth client at all:
each of these failed with a 401 ``MCPTransportError``.

    python-sdk 1315 / ai-dial-core 1609: ``client_secret_basic`` without ``client_id`` in the body is
        refused by the SDK's token endpoint ("Missing client_id")
    litellm 31635: the Basic credentials must be form-urlencoded before joining (RFC 6749 §2.3.1)
    vercel/ai 13988 / claude-code 52871 / claude-code 90497: ``resource`` missing, or sent with a trailing
        slash added, on the authorization, token or refresh request
    kimi-code 2606 / pi-mcp-adapter 97: a stored DCR registration for another redirect URI was reused, and
        the authorization server refused the redirect URI on every login
    claude-code 28258 / 44652: a step-up "refreshed" the old grant (same scopes: 403 again) instead of a new
        authorization for the union of the scopes
    mcpjungle 293 / archestra 7246: the ``resource_metadata`` URL of the challenge was ignored (only the
        path-aware well-known URL tried); here it names another origin, which must not get the token
"""

from __future__ import annotations

import base64
import urllib.parse
from typing import Any

import pytest

from tests.helpers import make_oauth, text_of
from yiemagent.mcp import MCPClient
from yiemagent.mcp.auth import MemoryTokenStorage, OAuth
from yiemagent.mcp.auth.tokens import ClientAuth


def form(text: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(text or ""))


def test_python_sdk_1315_client_secret_basic_also_sends_client_id_in_the_body(oauth_server):
    """The SDK's token endpoint reads ``client_id`` from the body even with HTTP Basic: the client sends it
    there too (not a second authentication method: the secret is only in the header).
    """
    server = oauth_server("--no-dcr", "--client-id", "basic-app", "--client-secret", "cs-basic-0123456789",
                          "--client-auth-method", "client_secret_basic")
    auth = make_oauth(client_id="basic-app", client_secret="cs-basic-0123456789")
    with MCPClient(server.url, auth=auth, timeout_seconds=10) as client:
        assert text_of(client.call_tool("add", {"a": 2, "b": 3})) == "5"
    (token_request,) = [e for e in server.log() if e["path"] == "/token"]
    body = form(token_request["body"])
    assert body["client_id"] == "basic-app" and "client_secret" not in body
    assert token_request["headers"]["authorization"].startswith("Basic ")


def test_litellm_31635_basic_credentials_are_form_urlencoded_before_the_join():
    """RFC 6749 §2.3.1: id and secret are application/x-www-form-urlencoded, then joined with ``:``."""
    data: dict[str, str] = {}
    headers: dict[str, str] = {}
    ClientAuth("client:one", None, "client_secret_basic").apply(data, headers, "https://as")
    assert "Authorization" not in headers  # no secret: no Basic header
    ClientAuth("client:one", __import__("yiemagent._internal.secrets", fromlist=["Secret"]).Secret("sec+ret:two two"),
               "client_secret_basic").apply(data, headers, "https://as")
    decoded = base64.b64decode(headers["Authorization"].split(" ", 1)[1]).decode()
    assert decoded == "client%3Aone:sec%2Bret%3Atwo+two"
    assert repr(headers["Authorization"]) == "'***'"


def test_vercel_ai_13988_resource_is_sent_exactly_as_the_prm_names_it_on_every_request(oauth_server):
    """The PRM's ``resource`` goes verbatim (no trailing slash added, never left out) on ``/authorize``, the
    code exchange and the refresh; the SDK's resource server checks the token's resource.
    """
    server = oauth_server(split=True)
    prm = __import__("requests").get(server.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"),
                                     timeout=10).json()
    with MCPClient(server.url, auth=make_oauth(), timeout_seconds=10) as client:
        assert text_of(client.call_tool("echo", {"text": "a"})) == "a"
        server.expire()
        assert text_of(client.call_tool("echo", {"text": "b"})) == "b"  # 401 -> refresh grant
    (authorize,) = [e for e in server.log("as") if e["path"] == "/authorize"]
    tokens = [form(e["body"]) for e in server.log("as") if e["path"] == "/token"]
    assert [t["grant_type"] for t in tokens] == ["authorization_code", "refresh_token"]
    assert form(authorize["query"])["resource"] == prm["resource"]
    assert [t["resource"] for t in tokens] == [prm["resource"]] * 2
    assert not prm["resource"].endswith("/")


def test_kimi_code_2606_a_stored_registration_for_another_redirect_uri_is_registered_again(oauth_server):
    """The loopback port changed between logins: the stored DCR client (registered for the old redirect URI)
    is not reused with the new one (which the authorization server would refuse); the client registers
    again, and the login works.
    """
    server = oauth_server(split=True)
    storage = MemoryTokenStorage()
    with MCPClient(server.url, auth=make_oauth(storage=storage, redirect_uri="http://127.0.0.1:41001/callback"),
                   timeout_seconds=10) as client:
        assert text_of(client.call_tool("echo", {"text": "1"})) == "1"
    storage.delete(server.url)  # logged out; the registration stays stored
    with MCPClient(server.url, auth=make_oauth(storage=storage, redirect_uri="http://127.0.0.1:41002/callback"),
                   timeout_seconds=10) as client:
        assert text_of(client.call_tool("echo", {"text": "2"})) == "2"
    registrations = [form_json(e["body"]) for e in server.log("as") if e["path"] == "/register"]
    assert [r["redirect_uris"] for r in registrations] == [["http://127.0.0.1:41001/callback"],
                                                           ["http://127.0.0.1:41002/callback"]]
    assert all(r["application_type"] == "native" for r in registrations)
    client_ids = {form(e["query"])["client_id"] for e in server.log("as") if e["path"] == "/authorize"}
    assert len(client_ids) == 2


def form_json(text: str) -> dict[str, Any]:
    return dict(__import__("json").loads(text))


def test_claude_code_28258_step_up_is_a_new_authorization_for_the_union_not_a_refresh(oauth_server):
    """403 ``insufficient_scope`` with a refresh token at hand: a refresh would give the same scopes back
    (403 again); the client asks for a new authorization with the union of the old and challenged
    scopes, and repeats the call once.
    """
    server = oauth_server(split=True)
    with MCPClient(server.url, auth=make_oauth(), timeout_seconds=10) as client:
        assert text_of(client.call_tool("echo", {"text": "x"})) == "x"
        before = server.counts()
        assert "all good" in text_of(client.call_tool("admin_report", {}))
    after = server.counts()
    assert after["refresh_grants"] == before["refresh_grants"]
    assert (after["authorizations"] - before["authorizations"], after["rs_403"] - before["rs_403"]) == (1, 1)
    scopes = [set(form(e["query"]).get("scope", "").split()) for e in server.log("as") if e["path"] == "/authorize"]
    assert scopes[-1] >= scopes[0] | {"admin", "mcp"}, scopes


def test_mcpjungle_293_the_challenges_metadata_url_is_followed_and_never_gets_a_token(oauth_server):
    """The 401 names ``resource_metadata`` on another origin (the trap serves the genuine document): the
    client reads it there (before the well-known URLs) and logs in; the trap never sees a bearer token,
    a client secret or a code.
    """
    server = oauth_server("--metadata-on-trap", split=True, trap=True)
    with MCPClient(server.url, auth=make_oauth(), timeout_seconds=10) as client:
        assert text_of(client.call_tool("echo", {"text": "t"})) == "t"
    trap = server.log("trap")
    assert trap and all(e["method"] == "GET" for e in trap)
    assert not any("authorization" in {k.lower() for k in e["headers"]} for e in trap)
    issued = server.issued()
    seen = " ".join(str(e) for e in trap)
    assert not [v for kind in issued.values() for v in kind if v and v in seen]


@pytest.mark.parametrize("listed", [True, False])
def test_offline_access_is_asked_only_when_the_authorization_server_lists_it(listed):
    """MCP 2026-07-28 "Refresh Tokens": ``offline_access`` is added to a non-empty scope only when the
    authorization server's ``scopes_supported`` has it (the conformance suite checks both ways too).
    """
    from yiemagent.mcp.auth.discovery import AuthorizationServer, Discovery
    from yiemagent.mcp.auth.oauth import _Server

    metadata = {"issuer": "https://as", "scopes_supported": ["mcp"] + (["offline_access"] if listed else [])}
    server = _Server(Discovery(AuthorizationServer("https://as", metadata), {"resource": "https://rs/mcp"}),
                     ClientAuth("c"))
    oauth = OAuth()
    assert oauth._with_offline_access("mcp", server) == ("mcp offline_access" if listed else "mcp")
    assert oauth._with_offline_access(None, server) is None


def test_the_token_goes_on_the_get_stream_and_the_delete_too(oauth_server):
    """2025-11-25 era with ``listen=True``: the standalone ``GET`` stream and the closing ``DELETE`` carry
    the bearer token as every POST does (no 401 on them).
    """
    server = oauth_server(split=True)
    with MCPClient(server.url, auth=make_oauth(), timeout_seconds=10, protocol_version="2025-11-25",
                   listen=True) as client:
        assert text_of(client.call_tool("echo", {"text": "g"})) == "g"
        assert client.transport.listening.wait(5)
    methods = {}
    for entry in server.log("rs"):
        if entry["path"] == "/mcp":
            bearer = {k.lower(): v for k, v in entry["headers"].items()}.get("authorization", "")
            methods.setdefault(entry["method"], []).append(bearer.startswith("Bearer "))
    assert methods["GET"] and all(methods["GET"]), methods
    assert methods["DELETE"] == [True], methods
    assert methods["POST"].count(False) == 1, methods  # only the very first request, before any login


def test_a_server_that_refuses_every_new_token_ends_in_one_authorization_error(oauth_server):
    """Tokens that are dead on arrival (lifetime -1 s): after the flow the request is sent once more, its
    401 is final: ``MCPAuthorizationError`` with the server's status, no loop of logins.
    """
    from yiemagent.exceptions import MCPAuthorizationError

    server = oauth_server("--token-seconds=-1", split=True)
    client = MCPClient(server.url, auth=make_oauth(), timeout_seconds=10, retry_attempts=1)
    try:
        with pytest.raises(MCPAuthorizationError) as caught:
            client.connect()
    finally:
        client.close()
    assert caught.value.status_code == 401
    assert server.counts()["authorizations"] == 1
