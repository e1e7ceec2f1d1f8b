"""The pieces of yiemagent.mcp.auth by their specs: challenge parsing, discovery URL orders, the resource
check, the RFC 9207 table, PKCE S256, client assertions, the headless handler, secrets in reprs.

Pure functions are called directly; the headless handler runs against a raw loopback peer (an
authorization endpoint that answers each way the RFC allows, shapes the SDK server does not send).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from yiemagent.exceptions import MCPAuthorizationError
from yiemagent.mcp.auth import HeadlessRedirectHandler, MemoryTokenStorage, OAuth
from yiemagent.mcp.auth.challenge import parse_bearer_challenge
from yiemagent.mcp.auth.discovery import as_metadata_urls, prm_urls, resource_matches
from yiemagent.mcp.auth.tokens import ClientAuth, Pkce, check_authorization_response


def test_bearer_challenge_parameters_quoted_unquoted_and_among_other_schemes():
    header = ('Basic realm="x", Bearer error="insufficient_scope", scope="files:read files:write", '
              'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", '
              'error_description="needs \\"write\\""')
    assert parse_bearer_challenge(header) == {
        "error": "insufficient_scope", "scope": "files:read files:write",
        "resource_metadata": "https://mcp.example.com/.well-known/oauth-protected-resource",
        "error_description": 'needs "write"'}
    assert parse_bearer_challenge("Bearer error=invalid_token") == {"error": "invalid_token"}
    assert parse_bearer_challenge('DPoP algs="ES256", Bearer scope="a"') == {"scope": "a"}
    assert parse_bearer_challenge("Bearer") == {}
    assert parse_bearer_challenge(None) == {}
    assert parse_bearer_challenge('Basic realm="only basic"') == {}


def test_prm_urls_header_then_path_based_then_root():
    assert prm_urls("https://h.example/api/mcp", "https://meta.example/prm") == [
        "https://meta.example/prm", "https://h.example/.well-known/oauth-protected-resource/api/mcp",
        "https://h.example/.well-known/oauth-protected-resource"]
    assert prm_urls("https://h.example/", None) == ["https://h.example/.well-known/oauth-protected-resource"]


def test_authorization_server_metadata_urls_in_the_spec_order():
    assert as_metadata_urls("https://auth.example/tenant1") == [
        "https://auth.example/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example/.well-known/openid-configuration/tenant1",
        "https://auth.example/tenant1/.well-known/openid-configuration"]
    assert as_metadata_urls("https://auth.example") == [
        "https://auth.example/.well-known/oauth-authorization-server",
        "https://auth.example/.well-known/openid-configuration"]


@pytest.mark.parametrize(("resource", "server", "ok"), [
    ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp", True),
    ("https://mcp.example.com", "https://mcp.example.com/mcp", True),
    ("https://MCP.example.com:443/", "https://mcp.example.com/mcp", True),
    ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp-other", False),
    ("https://mcp.example.com/other", "https://mcp.example.com/mcp", False),
    ("https://evil.example/mcp", "https://mcp.example.com/mcp", False),
    ("http://mcp.example.com/mcp", "https://mcp.example.com/mcp", False),
])
def test_prm_resource_must_name_the_server(resource, server, ok):
    assert resource_matches(resource, server) is ok


def test_rfc_9207_table_of_mcp_2026_07_28():
    issuer = "https://auth.example"
    check_authorization_response("s", issuer, "s", issuer, True)       # advertised, present, equal
    check_authorization_response("s", None, "s", issuer, False)        # not advertised, absent
    check_authorization_response("s", issuer, "s", issuer, False)      # not advertised, present, equal
    for state, iss, supported in [("s", None, True), ("s", "https://evil.example", True),
                                  ("s", "https://evil.example", False), ("s", "https://auth.example/", True),
                                  ("s", "HTTPS://auth.example", False), ("other", issuer, True)]:
        with pytest.raises(MCPAuthorizationError):
            check_authorization_response(state, iss, "s", issuer, supported)


def test_pkce_s256_pair_and_state_are_fresh_and_hidden_in_reprs():
    one, two = Pkce.new(), Pkce.new()
    assert one.verifier != two.verifier and one.state != two.state
    assert 43 <= len(one.verifier) <= 128
    digest = base64.urlsafe_b64encode(hashlib.sha256(one.verifier.encode()).digest()).rstrip(b"=").decode()
    assert one.challenge == digest
    assert one.verifier not in repr(one) and one.state not in repr(one)


def test_private_key_jwt_assertion_verifies_with_the_public_key():
    jwt = pytest.importorskip("jwt")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    data: dict[str, str] = {}
    ClientAuth("svc", None, "private_key_jwt", pem, "ES256").apply(data, {}, "https://auth.example")
    assert data["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    claims = jwt.decode(data["client_assertion"], key.public_key(), algorithms=["ES256"],
                        audience="https://auth.example")
    assert (claims["iss"], claims["sub"]) == ("svc", "svc") and claims["exp"] - claims["iat"] == 300
    with pytest.raises(MCPAuthorizationError, match="signing the client assertion failed") as caught:
        ClientAuth("svc", None, "private_key_jwt", b"not a key", "ES256").assertion("https://auth.example")
    assert "not a key" not in str(caught.value)


def test_oauth_repr_and_storage_repr_hold_no_secret():
    storage = MemoryTokenStorage()
    storage.set_tokens("https://rs/mcp", {"access_token": "at-SENTINEL-123456", "refresh_token": "rt-SENTINEL-9"})
    oauth = OAuth(client_id="app", client_secret="cs-SENTINEL-abcdef", storage=storage)
    text = repr(oauth) + repr(storage) + str(oauth.headers("https://rs/mcp"))
    assert "SENTINEL" not in text
    assert oauth.headers("https://rs/mcp")["Authorization"] == "Bearer at-SENTINEL-123456"


class _AuthorizeEndpoint(BaseHTTPRequestHandler):
    """A raw authorization endpoint: ``/hop`` -> ``/authorize`` -> redirect URI (or an error, or a page)."""

    mode = "ok"

    def do_GET(self) -> None:
        if self.path.startswith("/hop"):
            self.send_response(302)
            self.send_header("Location", "/authorize?x=1")
        elif self.mode == "page":
            self.send_response(200)
        else:
            self.send_response(302)
            query = ("error=access_denied&error_description=user+said+no&state=st" if self.mode == "error"
                     else "code=CODE-SENTINEL&state=st&iss=https%3A%2F%2Fas")
            self.send_header("Location", f"http://127.0.0.1:9/callback?{query}")  # port 9: never fetched
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def authorize_endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AuthorizeEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_headless_handler_reads_code_state_iss_without_fetching_the_redirect_uri(authorize_endpoint):
    _AuthorizeEndpoint.mode = "ok"
    handler = HeadlessRedirectHandler(timeout_seconds=5)
    handler.redirect_uri = "http://127.0.0.1:9/callback"
    assert handler(f"{authorize_endpoint}/hop") == ("CODE-SENTINEL", "st", "https://as")


@pytest.mark.parametrize(("mode", "message"), [("error", "access_denied"), ("page", "HTTP 200")])
def test_headless_handler_errors_name_the_error_never_the_code(authorize_endpoint, mode, message):
    _AuthorizeEndpoint.mode = mode
    with pytest.raises(MCPAuthorizationError, match=message):
        HeadlessRedirectHandler(timeout_seconds=5)(f"{authorize_endpoint}/authorize")


@pytest.mark.parametrize("url", ["javascript:alert(document.cookie)", "file:///etc/passwd",
                                 "data:text/html,<script>x</script>", "http://evil.example/authorize",
                                 "https://user:pw@as.example/authorize", "ftp://as.example/a", 42])
def test_issue_27_untrusted_endpoint_urls_in_authorization_server_metadata_are_refused(url):
    """Issue 27: ``authorization_endpoint`` values with ``javascript:``, ``file:`` and ``data:`` schemes were
    handed to the browser step. Endpoints are untrusted input: https, or http on this machine, only.
    """
    from yiemagent import MCPAuthorizationError
    from yiemagent.mcp.auth.discovery import AuthorizationServer

    server = AuthorizationServer("https://as.example", {"authorization_endpoint": url, "token_endpoint": url})
    for member in ("authorization_endpoint", "token_endpoint"):
        with pytest.raises(MCPAuthorizationError, match="not an https URL"):
            getattr(server, member)
    good = AuthorizationServer("https://as.example", {"authorization_endpoint": "https://as.example/authorize",
                                                      "token_endpoint": "http://127.0.0.1:8000/token"})
    assert good.authorization_endpoint == "https://as.example/authorize"
    assert good.token_endpoint == "http://127.0.0.1:8000/token" and good.registration_endpoint is None


def _token_server(body: bytes, drip_seconds: float) -> Any:
    """A raw token endpoint: answers every POST with ``body``, one byte per ``drip_seconds`` (no real
    authorization server drips on purpose; a slow or hostile network does).
    """
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for i in range(len(body)):
                try:
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(drip_seconds)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_issue_27_a_dripping_token_endpoint_is_cut_at_the_total_deadline_with_the_documented_error():
    """Issue 27: the OAuth token request had no total deadline (a drip held it 34.9 s) and raised urllib3's
    ``ReadTimeoutError``. The whole request now ends by ``timeout_seconds`` with ``MCPAuthorizationError``.
    """
    from yiemagent._internal.http import CancellableSession
    from yiemagent.mcp.auth.tokens import ClientAuth, request_token

    server = _token_server(json.dumps({"access_token": "a" * 200, "token_type": "Bearer"}).encode(), 0.05)
    try:
        started = time.monotonic()
        with pytest.raises(MCPAuthorizationError, match="within 1s"):
            request_token(CancellableSession(), f"http://127.0.0.1:{server.server_port}/token",
                          {"grant_type": "client_credentials"}, ClientAuth("c"), "http://127.0.0.1/mcp", 1.0)
        assert time.monotonic() - started < 5  # generous: the drip would take 11 s
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("value", "expected"), [(3600, 3600.0), ("3600", 3600.0), (" 60.5 ", 60.5), (-5, 0.0),
                                                 ("soon", None), (float("nan"), None), (True, None), (None, None)])
def test_issue_27_expires_in_may_come_as_a_string_a_float_or_nonsense(value, expected):
    """Issue 27's rule: every numeric field a peer sends may come as a string, a float or nonsense."""
    from yiemagent.mcp.auth.tokens import seconds_field

    assert seconds_field(value) == expected
