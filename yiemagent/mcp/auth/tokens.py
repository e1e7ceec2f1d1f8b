"""Token endpoint requests and client authentication.

The authorization code grant (PKCE S256, ``state``, ``iss``), refresh, ``client_credentials``.

Client authentication at the token endpoint (RFC 6749 §2.3, RFC 7523):
``client_secret_basic`` (HTTP Basic of the form-encoded id and secret; ``client_id`` in the body
too, as OAuth 2.1 §3.2.1 allows and the mcp SDK's server requires),
``client_secret_post`` (both in the body), ``none`` (``client_id`` in the
body), ``private_key_jwt`` (a signed assertion: ``iss`` = ``sub`` = client id,
``aud`` = the issuer, 5 minutes; needs the ``jwt`` extra, PyJWT[crypto]).

Token requests never follow a redirect (the body holds the code, the
verifier, the secret); an error answer raises ``MCPAuthorizationError`` with
the RFC 6749 §5.2 ``error`` code and description only.

Spec: OAuth 2.1 (draft-ietf-oauth-v2-1) §4.1 and §4.3, RFC 7636 (PKCE), RFC
8707 (``resource``), RFC 9207 (``iss``), RFC 7523; MCP 2025-11-25 and
2026-07-28 "Authorization".
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import secrets
import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests
import urllib3

from ..._internal.checks import install_hint
from ..._internal.http import CancellableSession, body_chunks
from ..._internal.jsonload import loads_bounded
from ..._internal.numbers import peer_number
from ..._internal.secrets import Secret, display_url
from ...exceptions import MCPAuthorizationError

__all__ = ["ClientAuth", "Pkce", "authorization_url", "check_authorization_response", "request_token"]

logger = logging.getLogger("yiemagent.mcp.auth")

JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_MAX_TOKEN_BYTES = 64 * 1024


@dataclass
class Pkce:
    """A PKCE S256 pair and the ``state`` of one authorization request (RFC 7636)."""

    verifier: Secret
    challenge: str
    state: Secret

    @classmethod
    def new(cls) -> Pkce:
        """A fresh verifier (96 characters), its S256 challenge, and a ``state``."""
        verifier = secrets.token_urlsafe(64)[:96]
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=")
        return cls(Secret(verifier), challenge.decode("ascii"), Secret(secrets.token_urlsafe(32)))


@dataclass
class ClientAuth:
    """A client's identity at the token endpoint and how it authenticates."""

    client_id: str
    client_secret: Secret | None = None
    method: str = "none"
    """``client_secret_basic``, ``client_secret_post``, ``private_key_jwt`` or ``none``."""
    private_key: str | bytes | None = None
    signing_algorithm: str = "ES256"
    alternatives: tuple[str, ...] = ()
    """Methods to try, in order, when the token endpoint answers ``invalid_client`` to ``method``: a
    pre-registered client whose method was not given does not know which one the server has on file
    (the mcp SDK's server, for one, registers ``client_secret_post`` and lists it first)."""

    def __repr__(self) -> str:
        return f"ClientAuth(client_id={self.client_id!r}, method={self.method!r})"

    def apply(self, data: dict[str, str], headers: dict[str, str], audience: str) -> None:
        """Add this client's authentication to a token request's form ``data`` and ``headers``."""
        data["client_id"] = self.client_id  # also with Basic: servers such as the mcp SDK's require it
        if self.method == "client_secret_basic" and self.client_secret:
            pair = f"{urllib.parse.quote_plus(self.client_id)}:{urllib.parse.quote_plus(self.client_secret)}"
            headers["Authorization"] = Secret("Basic " + base64.b64encode(pair.encode()).decode("ascii"))
        elif self.method == "client_secret_post" and self.client_secret:
            data["client_secret"] = self.client_secret
        elif self.method == "private_key_jwt":
            data["client_assertion_type"] = JWT_BEARER_ASSERTION
            data["client_assertion"] = self.assertion(audience)

    def assertion(self, audience: str) -> str:
        """A signed client assertion JWT (RFC 7523 §3) for ``audience`` (the issuer).

        Raises:
            MCPAuthorizationError: no private key, or PyJWT[crypto] is not installed, or signing failed.
        """
        if not self.private_key:
            raise MCPAuthorizationError("private_key_jwt needs a private_key")
        try:
            import jwt  # PyJWT, the optional ``jwt`` extra
        except ImportError:
            raise MCPAuthorizationError(
                f"private_key_jwt needs PyJWT with cryptography: {install_hint('jwt')}") from None
        now = int(time.time())
        claims = {"iss": self.client_id, "sub": self.client_id, "aud": audience, "iat": now, "exp": now + 300,
                  "jti": str(uuid.uuid4())}
        try:
            return str(jwt.encode(claims, self.private_key, algorithm=self.signing_algorithm))
        except Exception as exc:  # a bad key or algorithm: its text may quote the key, so only the type
            raise MCPAuthorizationError(f"signing the client assertion failed ({type(exc).__name__})") from None


def authorization_url(endpoint: str, params: dict[str, str]) -> str:
    """``endpoint`` with ``params`` added to its query (existing query parameters kept)."""
    parts = urllib.parse.urlsplit(endpoint)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True) + list(params.items())
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def check_authorization_response(state: str | None, iss: str | None, expected_state: str, issuer: str,
                                 iss_supported: bool) -> None:
    """Check the redirect's ``state`` and ``iss`` (RFC 9207 §2.4, the MCP 2026-07-28 table).

    ``iss`` is compared by simple string comparison (no normalisation).

    Raises:
        MCPAuthorizationError: ``state`` differs; ``iss`` differs from the
            recorded issuer; ``iss`` missing although the server advertises
            ``authorization_response_iss_parameter_supported``.
    """
    if state != expected_state:
        raise MCPAuthorizationError("the authorization response's state does not match the request (not used)")
    if iss is not None:
        if iss != issuer:
            raise MCPAuthorizationError(
                f"the authorization response came from issuer {iss[:200]!r}, not {issuer!r} (RFC 9207; not used)")
    elif iss_supported:
        raise MCPAuthorizationError(
            f"the authorization response has no iss although {issuer!r} advertises it (RFC 9207; not used)")


def seconds_field(value: Any) -> float | None:
    """A number of seconds a peer sent (``expires_in``): a number or a numeric string; None for anything else.

    Peers send ``3600``, ``3600.0`` or ``"3600"``; NaN, infinities, booleans and
    text are not a lifetime (``yiemagent._internal.numbers.peer_number``); a
    negative one is 0 (already expired).
    """
    number = peer_number(value)
    return None if number is None else max(0.0, float(number))


def _post_token_request(
    session: requests.Session, endpoint: str, data: dict[str, str], client: ClientAuth, audience: str,
    timeout_seconds: float,
) -> tuple[requests.Response, dict[str, Any]]:
    """One token request with ``client``'s authentication: the response and its JSON object (``{}`` if none)."""
    headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
    client.apply(data, headers, audience)
    deadline = time.monotonic() + timeout_seconds
    # the whole request within timeout_seconds, however slowly the bytes come (a CancellableSession cuts it)
    whole = session.deadline(deadline) if isinstance(session, CancellableSession) else contextlib.nullcontext()
    with whole:
        try:
            response = session.post(endpoint, data=data, headers=headers, timeout=timeout_seconds,
                                    allow_redirects=False, stream=True)
        except (requests.RequestException, ValueError) as exc:
            late = " (no answer within the deadline)" if time.monotonic() >= deadline else ""
            raise MCPAuthorizationError(
                f"the token request to {display_url(endpoint)} failed: {type(exc).__name__}{late}") from None
        with response:
            try:
                body = b""
                for chunk in body_chunks(response):
                    body += chunk
                    if len(body) > _MAX_TOKEN_BYTES or time.monotonic() >= deadline:
                        break
                document = loads_bounded(body) if len(body) <= _MAX_TOKEN_BYTES else None
            except (ValueError, requests.RequestException, OSError, urllib3.exceptions.HTTPError):
                document = None
    if time.monotonic() >= deadline:
        raise MCPAuthorizationError(f"the token request to {display_url(endpoint)} got no complete answer within "
                                    f"{timeout_seconds:g}s")
    return response, document if isinstance(document, dict) else {}


def request_token(
    session: requests.Session, endpoint: str, data: dict[str, str], client: ClientAuth, audience: str,
    timeout_seconds: float, clock: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """POST a token request; the stored token dict (``access_token``, ``token_type``, ``expires_at``...).

    Raises:
        MCPAuthorizationError: unreachable, an error answer (its ``error`` and
            ``error_description``), a redirect, or an answer without
            ``access_token``. ``status_code`` is None (the authorization server's status is in the text).
    """
    where = display_url(endpoint)
    while True:
        response, answer = _post_token_request(session, endpoint, dict(data), client, audience, timeout_seconds)
        if response.status_code in (400, 401) and answer.get("error") == "invalid_client" and client.alternatives:
            # the server refused how the client authenticated (before looking at the grant): try the next method
            logger.info("the token endpoint %s refused %s; trying %s", where, client.method, client.alternatives[0])
            client.method, client.alternatives = client.alternatives[0], client.alternatives[1:]
            continue
        break
    if 300 <= response.status_code < 400:
        raise MCPAuthorizationError(f"the token endpoint {where} answered HTTP {response.status_code}, a redirect: "
                                    "not followed (the request holds the code, verifier or client secret)")
    if response.status_code != 200 or "error" in answer:
        error = str(answer.get("error") or "no error code")[:100]
        description = str(answer.get("error_description") or "")[:200]
        raise MCPAuthorizationError(
            f"the token endpoint {where} answered HTTP {response.status_code}: {error}"
            + (f" ({description})" if description else ""))
    token = answer.get("access_token")
    if not isinstance(token, str) or not token:
        raise MCPAuthorizationError(f"the token endpoint {where} answered without an access_token")
    token_type = str(answer.get("token_type") or "Bearer")
    lifetime = seconds_field(answer.get("expires_in"))
    tokens: dict[str, Any] = {
        "access_token": token, "token_type": token_type,
        "expires_at": clock() + lifetime if lifetime is not None else None,
    }
    if isinstance(answer.get("refresh_token"), str) and answer["refresh_token"]:
        tokens["refresh_token"] = answer["refresh_token"]
    if isinstance(answer.get("scope"), str):
        tokens["scope"] = answer["scope"]
    return tokens
