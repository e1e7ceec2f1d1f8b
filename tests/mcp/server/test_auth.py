"""Authorization as a resource server (issue 28 point 3): ``BearerAuth`` in front of the served app.

In-process tests go through werkzeug's test client with real signed JWTs (PyJWT, HS256 and RS256); the slow
test puts yiemagent's server behind the SDK's real authorization server (tests/servers/oauth_sdk_server.py, its
RFC 7662 ``/introspect``) and lets yiemagent's own OAuth client log in, call, and step up for a scope.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from werkzeug.test import Client

from tests.mcp.server.kit import build, serving
from yiemagent.exceptions import ConfigError
from yiemagent.mcp.server.auth import BearerAuth, IntrospectionVerifier, JWTVerifier
from yiemagent.tools import tool

RESOURCE = "http://127.0.0.1:8000/mcp"
ISSUER = "http://127.0.0.1:9000"
KEY = "hs256-test-key-that-is-long-enough-0123456789"
ACCEPT = {"Accept": "application/json, text/event-stream"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}


@tool
def admin_report() -> str:
    """A report only admins may read."""
    return "all fine"


def token(scope: str = "mcp", audience: str = RESOURCE, seconds: float = 600, key: Any = KEY,
          algorithm: str = "HS256") -> str:
    claims = {"iss": ISSUER, "aud": audience, "sub": "alice", "scope": scope, "exp": int(time.time() + seconds),
              "client_id": "app"}
    return jwt.encode(claims, key, algorithm=algorithm)


def protected(**options: Any) -> BearerAuth:
    server = build()
    server.add_tool(admin_report)
    verifier = JWTVerifier(key=KEY, issuer=ISSUER, algorithms=["HS256"])
    return BearerAuth(server.wsgi_app(stateless=True), verifier, resource=RESOURCE, authorization_servers=[ISSUER],
                      required_scopes=["mcp"], tool_scopes={"admin_report": ["admin"]}, **options)


def post(client: Client, message: Any, bearer: str | None = None) -> Any:
    headers = dict(ACCEPT)
    if bearer is not None:
        headers["Authorization"] = f"Bearer {bearer}"
    return client.post("/mcp", data=json.dumps(message), headers=headers, content_type="application/json")


def challenge(response: Any) -> dict[str, str]:
    scheme, _, rest = response.headers["WWW-Authenticate"].partition(" ")
    assert scheme == "Bearer"
    return {name: value.replace('\\"', '"') for name, value in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', rest)}


def test_protected_resource_metadata_is_served_at_both_well_known_paths() -> None:
    client = Client(protected())
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        response = client.get(path)
        assert response.status_code == 200 and response.json == {
            "resource": RESOURCE, "authorization_servers": [ISSUER], "scopes_supported": ["mcp", "admin"],
            "bearer_methods_supported": ["header"]}
    assert client.post("/.well-known/oauth-protected-resource/mcp").status_code == 405


def test_no_token_a_bad_token_and_a_foreign_or_expired_token_get_401_with_the_challenge() -> None:
    client = Client(protected())
    missing = post(client, INIT)
    assert missing.status_code == 401
    assert challenge(missing) == {"resource_metadata": "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp",
                                  "scope": "mcp"}
    for bad in ("not-a-jwt", token(audience="https://other.example/mcp"), token(seconds=-60),
                token(key="another-key-that-is-long-enough-0123456789")):
        response = post(client, INIT, bad)
        assert response.status_code == 401 and challenge(response)["error"] == "invalid_token", bad
    assert post(client, INIT, token()).status_code == 200


def test_a_tool_needing_a_scope_the_token_lacks_is_403_insufficient_scope_and_a_stepped_up_token_calls_it() -> None:
    client = Client(protected())
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "admin_report", "arguments": {}}}
    refused = post(client, call, token("mcp"))
    assert refused.status_code == 403
    fields = challenge(refused)
    assert fields["error"] == "insufficient_scope" and set(fields["scope"].split()) == {"mcp", "admin"}
    assert "admin" in fields["error_description"]
    listed = post(client, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, token("mcp"))
    assert listed.status_code == 200 and "admin_report" in [t["name"] for t in listed.json["result"]["tools"]]
    allowed = post(client, call, token("mcp admin"))
    assert allowed.status_code == 200 and allowed.json["result"]["content"][0]["text"] == "all fine"
    plain = post(client, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                          "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}, token("mcp"))
    assert plain.status_code == 200 and plain.json["result"]["content"][0]["text"] == "3"
    assert post(client, call, token("admin")).status_code == 403  # the required scope is missing


def test_the_verified_token_reaches_the_app_and_never_a_response_or_a_log(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Any] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.append(environ.get("yiemagent.mcp.access_token"))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    guarded = BearerAuth(app, JWTVerifier(key=KEY, issuer=ISSUER, algorithms=["HS256"]), resource=RESOURCE,
                         authorization_servers=[ISSUER])
    good, stale = token("mcp read"), token(seconds=-60)
    caplog.set_level(logging.DEBUG)
    client = Client(guarded)
    assert client.get("/mcp", headers={"Authorization": f"Bearer {good}"}).status_code == 200
    refused = client.get("/mcp", headers={"Authorization": f"Bearer {stale}"})
    assert refused.status_code == 401
    (access,) = seen
    assert access.scopes == {"mcp", "read"} and access.subject == "alice" and access.client_id == "app"
    assert access.audience == (RESOURCE,)
    texts = [refused.get_data(as_text=True), str(refused.headers), caplog.text]
    assert not any(good in t or stale in t for t in texts)


def test_a_session_belongs_to_the_token_subject_that_began_it() -> None:
    """A fresh user's trial: Mallory, with a valid token of her own, could call tools on Alice's
    ``Mcp-Session-Id``, open her GET stream and end her session. Another subject's request on a session is now
    answered 404, as an unknown session; Alice's own requests go on.
    """
    server = build()
    app = BearerAuth(server.wsgi_app(), JWTVerifier(key=KEY, issuer=ISSUER, algorithms=["HS256"]),
                     resource=RESOURCE, authorization_servers=[ISSUER], required_scopes=["mcp"])
    client = Client(app)

    def as_user(subject: str) -> str:
        return jwt.encode({"iss": ISSUER, "aud": RESOURCE, "sub": subject, "scope": "mcp",
                           "exp": int(time.time()) + 600}, KEY, algorithm="HS256")

    alice, mallory = as_user("alice"), as_user("mallory")
    started = post(client, INIT, alice)
    session = started.headers["Mcp-Session-Id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}

    def send(bearer: str, method: str = "POST") -> Any:
        headers = {**ACCEPT, "Authorization": f"Bearer {bearer}", "Mcp-Session-Id": session}
        if method == "POST":
            return client.post("/mcp", data=json.dumps(ping), headers=headers, content_type="application/json")
        if method == "GET":
            return client.get("/mcp", headers={**headers, "Accept": "text/event-stream"})
        return client.delete("/mcp", headers=headers)

    assert send(mallory).status_code == 404
    assert send(mallory, "GET").status_code == 404
    assert send(mallory, "DELETE").status_code == 404
    assert send(alice).status_code == 200  # her session is still there
    assert send(alice, "DELETE").status_code == 200


def test_rs256_tokens_from_a_jwks_document() -> None:
    """A JWKS URL as authorization servers publish them (a real HTTP server serving the JSON document)."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    jwk.update(kid="k1", use="sig", alg="RS256")
    document = json.dumps({"keys": [jwk]}).encode()

    def jwks(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "application/json")])
        return [document]

    with serving(jwks, "/jwks") as jwks_url:
        verifier = JWTVerifier(jwks_url=jwks_url, issuer=ISSUER, audience=RESOURCE)
        signed = jwt.encode({"iss": ISSUER, "aud": RESOURCE, "scope": "mcp", "exp": int(time.time()) + 60},
                            private, algorithm="RS256", headers={"kid": "k1"})
        access = verifier.verify(signed)
        assert access is not None and access.scopes == {"mcp"}
        forged = jwt.encode({"iss": ISSUER, "aud": RESOURCE, "exp": int(time.time()) + 60}, KEY, algorithm="HS256",
                            headers={"kid": "k1"})
        assert verifier.verify(forged) is None  # alg confusion: HS256 is not among the accepted algorithms


def test_pyjwt_914_made_up_key_ids_do_not_fetch_the_jwks_per_request() -> None:
    """PyJWT #914 / #1207 (and the cooldown of panva/jose's remote JWKS): the ``kid`` of a token's header is the
    client's to choose and is read before any signature is checked; ``PyJWKClient`` fetched the JWKS again for
    every unknown one, so a client sending made-up ``kid`` values made the server send one request each to the
    authorization server. Recent PyJWT bounds this itself, older releases that the ``jwt`` extra allows (>= 2.8)
    do not; the verifier's own bound holds with both: one forced fetch per ``jwks_refresh_seconds``, 50 made-up
    key ids, 2 fetches in all (the first, and one refresh); a key rotated in after the cooldown is still found.
    A real HTTP server serves the JWKS and counts its requests; the tokens are signed with a key it does not
    publish (made up, as an attacker's).
    """
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    def key_pair(kid: str) -> tuple[Any, dict[str, Any]]:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
        jwk.update(kid=kid, use="sig", alg="RS256")
        return private, jwk

    first, first_jwk = key_pair("k1")
    rotated, rotated_jwk = key_pair("k2")
    published, fetches = [first_jwk], []

    def jwks(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        fetches.append(1)
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps({"keys": published}).encode()]

    def token(private: Any, kid: str) -> str:
        return jwt.encode({"iss": ISSUER, "aud": RESOURCE, "scope": "mcp", "exp": int(time.time()) + 60},
                          private, algorithm="RS256", headers={"kid": kid})

    with serving(jwks, "/jwks") as jwks_url:
        verifier = JWTVerifier(jwks_url=jwks_url, issuer=ISSUER, audience=RESOURCE, jwks_refresh_seconds=0.5)
        assert verifier.verify(token(first, "k1")) is not None
        for n in range(50):
            assert verifier.verify(token(rotated, f"made-up-{n}")) is None
        assert len(fetches) == 2, fetches  # before: 51
        published.append(rotated_jwk)  # the authorization server rotates its keys
        time.sleep(0.6)  # past the cooldown
        assert verifier.verify(token(rotated, "k2")) is not None
        assert verifier.verify(token(first, "k1")) is not None
    with pytest.raises(ConfigError):
        JWTVerifier(key=KEY, algorithms=["HS256"], jwks_refresh_seconds=float("nan"))


def test_nonsense_settings_are_config_errors() -> None:
    app = build().wsgi_app()
    verifier = JWTVerifier(key=KEY, algorithms=["HS256"])
    with pytest.raises(ConfigError):
        BearerAuth(app, verifier, resource="/mcp", authorization_servers=[ISSUER])
    with pytest.raises(ConfigError):
        BearerAuth(app, verifier, resource=RESOURCE, authorization_servers=[])
    with pytest.raises(ConfigError):
        JWTVerifier(key=KEY, algorithms=["none"])
    with pytest.raises(ConfigError):
        JWTVerifier()
    with pytest.raises(ConfigError):
        IntrospectionVerifier("http://auth.example.com/introspect")


# --------------------------------------------------------------------------- with a real authorization server


@pytest.fixture
def behind_real_as(oauth_server: Any) -> Iterator[tuple[str, Any]]:
    """The yiemagent server as the resource server of the SDK's authorization server (split layout)."""
    authorization = oauth_server(split=True)
    server = build()
    server.add_tool(admin_report)
    holder: dict[str, Any] = {}

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        return holder["app"](environ, start_response)

    with serving(app) as resource:  # the resource URL is known once the port is: the app is set then
        holder["app"] = BearerAuth(server.wsgi_app(), IntrospectionVerifier(f"{authorization.as_base}/introspect"),
                                   resource=resource, authorization_servers=[authorization.as_base],
                                   required_scopes=["mcp"], tool_scopes={"admin_report": ["admin"]})
        yield resource, authorization


@pytest.mark.slow
def test_yiemagent_oauth_client_logs_in_calls_and_steps_up_against_the_served_resource(behind_real_as: Any) -> None:
    from tests.helpers import make_oauth
    from yiemagent.mcp import MCPClient

    resource, authorization = behind_real_as
    with MCPClient(resource, auth=make_oauth(), timeout_seconds=60) as client:
        assert "admin_report" in [t["name"] for t in client.list_tools()]
        assert client.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5"
        logins = authorization.counts()["authorizations"]
        report = client.call_tool("admin_report", {})
        assert report["isError"] is False and report["content"][0]["text"] == "all fine"
    counts = authorization.counts()
    assert logins >= 1 and counts["authorizations"] == logins + 1  # one step-up login for the admin scope
    introspected = [e for e in authorization.log("as") if e["path"] == "/introspect"]
    assert len(introspected) >= 3  # the resource server asked the authorization server about each request


@pytest.mark.parametrize(("mount", "resource", "inner_path"), [("/mcp", "http://127.0.0.1:8000/mcp", "/"),
                                                                ("/tools", "http://127.0.0.1:8000/tools/mcp", "/mcp")])
def test_under_a_url_prefix_the_advertised_metadata_url_answers_200(mount: str, resource: str,
                                                                    inner_path: str) -> None:
    """Issue 33: mounted at a prefix (``SCRIPT_NAME``, werkzeug's ``DispatcherMiddleware`` as the serving guide
    shows), the challenge named ``/.well-known/oauth-protected-resource/<path>`` at the host's root, which the
    outer app answers 404: a client could not find the authorization server. The advertised URL is now under
    the prefix, where this middleware answers it.
    """
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    def outer(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"the site's own 404"]

    inner = BearerAuth(build().wsgi_app(path=inner_path), JWTVerifier(key=KEY, issuer=ISSUER, algorithms=["HS256"]),
                       resource=resource, authorization_servers=[ISSUER], required_scopes=["mcp"])
    client = Client(DispatcherMiddleware(outer, {mount: inner}))
    endpoint = "/mcp" if inner_path == "/" else mount + inner_path
    refused = client.post(endpoint, data=json.dumps(INIT), headers=ACCEPT, content_type="application/json")
    assert refused.status_code == 401
    advertised = challenge(refused)["resource_metadata"]
    assert advertised.startswith("http://127.0.0.1:8000" + mount + "/.well-known/oauth-protected-resource")
    metadata = client.get(advertised.removeprefix("http://127.0.0.1:8000"))
    assert metadata.status_code == 200 and metadata.json["resource"] == resource
    token = jwt.encode({"iss": ISSUER, "aud": resource, "sub": "alice", "scope": "mcp",
                        "exp": int(time.time()) + 60}, KEY, algorithm="HS256")
    assert client.post(endpoint, data=json.dumps(INIT), content_type="application/json",
                       headers={**ACCEPT, "Authorization": f"Bearer {token}"}).status_code == 200
