"""The ``OAuth`` class: bearer tokens for an MCP server, and the flow that gets them.

See the package docstring for the steps. Thread safety: one lock per
``OAuth`` serialises the flows and refreshes (two requests that get a 401 at
once run one flow; the second re-reads the storage and finds the new token).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal

import requests

from ..._internal.checks import check_bool, check_int, check_number, one_of
from ..._internal.http import CancellableSession
from ..._internal.secrets import Secret, register_log_secrets
from ...exceptions import ConfigError, MCPAuthorizationError
from .challenge import parse_bearer_challenge
from .discovery import Discovery, discover
from .registration import ClientSettings, client_identity
from .storage import MemoryTokenStorage, RedirectHandler, TokenStorage
from .tokens import (
    ClientAuth,
    Pkce,
    authorization_url,
    check_authorization_response,
    request_token,
    seconds_field,
)

__all__ = ["DEFAULT_REDIRECT_URI", "OAuth"]

logger = logging.getLogger("yiemagent.mcp.auth")

DEFAULT_REDIRECT_URI = "http://127.0.0.1:33418/callback"
"""The redirect URI registered when none is given (a loopback one, RFC 8252 §7.3)."""

GrantType = Literal["authorization_code", "client_credentials"]
GRANT_TYPES: tuple[GrantType, ...] = ("authorization_code", "client_credentials")
AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt", "none")
"""The ``token_endpoint_auth_method`` values yiemagent can use (RFC 7591 section 2)."""
SIGNING_ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA")
"""JWS algorithms of a ``private_key_jwt`` assertion (RFC 7518 section 3.1, asymmetric ones; RFC 8037)."""


@dataclass
class _Server:
    """What the flow learnt about one MCP server (its resource URL)."""

    discovery: Discovery
    client: ClientAuth
    requested_scope: str | None = None
    step_ups: dict[frozenset[str], int] = field(default_factory=dict)
    """Challenged scope set -> step-ups done for it (capped by ``max_step_ups``)."""


class OAuth:
    """OAuth 2.1 authorization for ``MCPClient(url, auth=OAuth(...))`` (HTTP only).

    Args:
        client_id: a pre-registered client id; None uses ``client_metadata_url``
            (when the authorization server supports Client ID Metadata
            Documents) or Dynamic Client Registration.
        client_secret: the pre-registered client's secret (confidential client).
        client_issuer: the issuer of the authorization server the client was
            pre-registered at: another one is refused (``MCPAuthorizationError``),
            never sent these credentials (MCP 2026-07-28 "Authorization Server Binding").
        client_metadata_url: the HTTPS URL of this client's Client ID Metadata
            Document, used as ``client_id`` where the authorization server
            advertises ``client_id_metadata_document_supported``.
        scopes: scopes to request (space-separated string or list), with the
            challenge's ``scope`` added; None selects them as the spec says (the
            challenge's ``scope``, else the Protected Resource Metadata's
            ``scopes_supported``, else none).
        redirect_uri: where the authorization server sends the user back.
        redirect_handler: ``handler(authorization_url) -> (code, state)`` or
            ``(code, state, iss)`` (or a 2-tuple and the redirect's ``iss`` in its
            ``iss`` attribute): lets the user log in (``HeadlessRedirectHandler``
            for tests). Required for ``authorization_code`` unless tokens are stored.
        storage: where tokens and registered clients live; None keeps them in memory.
        token_endpoint_auth_method: ``client_secret_basic``, ``client_secret_post``,
            ``private_key_jwt`` or ``none``; None picks from the server's
            ``token_endpoint_auth_methods_supported`` and what the client has.
        grant_type: ``authorization_code`` (a user logs in) or ``client_credentials``
            (the client acts on its own behalf, with a secret or ``private_key``).
        private_key: a PEM private key for ``private_key_jwt`` (RFC 7523); needs the
            ``jwt`` extra (PyJWT[crypto]).
        signing_algorithm: the JWS algorithm of the client assertion (``ES256``, ``RS256``...).
        client_name: the ``client_name`` of registrations.
        timeout_seconds: seconds each request to an authorization server may take.
        max_step_ups: how many times a 403 ``insufficient_scope`` may raise the
            scopes of one server before it is a permanent failure.
        refresh_margin_seconds: a token this close to expiry is refreshed before use.
        offline_access: ask for ``offline_access`` (a refresh token) when the
            authorization server lists it in ``scopes_supported``.
        session: the ``requests.Session`` for authorization server requests.

    Secrets (tokens, the client secret, codes, verifiers, the private key)
    never appear in ``repr``, logs or exception texts.
    """

    def __init__(
        self,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        client_metadata_url: str | None = None,
        client_issuer: str | None = None,
        scopes: str | list[str] | None = None,
        redirect_uri: str = DEFAULT_REDIRECT_URI,
        redirect_handler: RedirectHandler | None = None,
        storage: TokenStorage | None = None,
        token_endpoint_auth_method: str | None = None,
        grant_type: GrantType = "authorization_code",
        private_key: str | bytes | None = None,
        signing_algorithm: str = "ES256",
        client_name: str = "yiemagent",
        timeout_seconds: float = 30.0,
        max_step_ups: int = 2,
        refresh_margin_seconds: float = 60.0,
        offline_access: bool = True,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        one_of("grant_type", grant_type, GRANT_TYPES)
        one_of("token_endpoint_auth_method", token_endpoint_auth_method, (None, *AUTH_METHODS))
        one_of("signing_algorithm", signing_algorithm, SIGNING_ALGORITHMS)
        check_number("timeout_seconds", timeout_seconds)
        check_number("refresh_margin_seconds", refresh_margin_seconds, positive=False)
        check_int("max_step_ups", max_step_ups, minimum=0)
        check_bool("offline_access", offline_access)
        if grant_type == "client_credentials" and client_id is None:
            raise ConfigError("client_credentials needs a client_id (and client_secret or private_key)")
        self.client_id = client_id
        self._client_secret = Secret(client_secret) if client_secret else None
        self.client_metadata_url = client_metadata_url
        self.client_issuer = client_issuer
        self.scopes = " ".join(scopes) if isinstance(scopes, list) else scopes
        self.redirect_uri = redirect_uri
        self.redirect_handler = redirect_handler
        self.storage: TokenStorage = storage if storage is not None else MemoryTokenStorage()
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.grant_type = grant_type
        self._private_key = private_key
        self.signing_algorithm = signing_algorithm
        self.client_name = client_name
        self.timeout_seconds = timeout_seconds
        self.max_step_ups = max_step_ups
        self.refresh_margin_seconds = refresh_margin_seconds
        self.offline_access = offline_access
        self._session = session or CancellableSession()  # the token request's deadline cuts it
        self._clock = clock
        self._lock = threading.RLock()
        self._servers: dict[str, _Server] = {}
        self._secrets: list[Secret] = []
        self._remember_secret(client_secret)

    def __repr__(self) -> str:
        return (f"OAuth(client_id={self.client_id!r}, grant_type={self.grant_type!r}, "
                f"client_secret={'***' if self._client_secret else None}, storage={type(self.storage).__name__})")

    # ------------------------------------------------------------------ secrets

    def _remember_secret(self, value: str | None) -> None:
        if value and len(value) >= 4:
            self._secrets.append(Secret(value))
            self._secrets.sort(key=len, reverse=True)
            register_log_secrets([value])

    def secrets(self) -> list[Secret]:
        """The secret texts known so far (tokens, the client secret): the transport scrubs them from errors."""
        return list(self._secrets)

    # ------------------------------------------------------------------ transport hooks

    def headers(self, resource_url: str) -> dict[str, str]:
        """``{"Authorization": "Bearer <token>"}`` for ``resource_url``, or {} before the first login.

        A token within ``refresh_margin_seconds`` of expiry is refreshed first
        (or, for ``client_credentials``, requested again), before it is sent,
        even when this process has not run discovery yet (a token stored by an
        earlier process: discovery runs first, from the resource's
        well-known metadata); if that fails the stored token is sent as is
        (the server's 401 starts the flow).
        """
        tokens = self.storage.get_tokens(resource_url)
        if tokens and self._expiring(tokens):
            with self._lock, self._refresh_guard(resource_url):
                tokens = self.storage.get_tokens(resource_url)  # another thread or process may have refreshed it
                if tokens and self._expiring(tokens):
                    try:
                        tokens = self._renew(resource_url, tokens) or tokens
                    except MCPAuthorizationError as exc:
                        logger.info("refreshing the token of %s before expiry failed: %s", resource_url, exc)
        if not tokens or not isinstance(tokens.get("access_token"), str):
            return {}
        self._remember_secret(tokens["access_token"])
        return {"Authorization": Secret(f"Bearer {tokens['access_token']}")}

    def _refresh_guard(self, resource_url: str) -> AbstractContextManager[Any]:
        """The storage's ``refresh_lock(key)`` (one refresher at a time across processes), if it has one."""
        lock = getattr(self.storage, "refresh_lock", None)
        return lock(resource_url) if callable(lock) else nullcontext()

    def _expiring(self, tokens: dict[str, Any]) -> bool:
        """Whether stored tokens must be refreshed before use: ``expires_at`` near, past, or unreadable.

        What storage holds is read as a peer's field (a number or a numeric string); a value that is
        neither counts as expired, so a token of unknown age is refreshed rather than sent.
        """
        raw = tokens.get("expires_at")
        if raw is None:
            return False  # the server gave no lifetime
        expires_at = seconds_field(raw)
        return expires_at is None or expires_at - self.refresh_margin_seconds <= self._clock()

    def handle_unauthorized(self, resource_url: str, response: requests.Response) -> bool:
        """Run the flow for a 401, or a 403 ``insufficient_scope``; True means: send the request again (once).

        On a 401: if another thread stored a new token since this request was
        sent, True at once; else discovery runs again (the authorization
        server may have changed: then the old tokens and client are not
        used), the refresh token is tried, and then the whole flow. On a 403
        ``insufficient_scope``: the flow with the union of the scopes asked
        before and the challenge's (at most ``max_step_ups`` times for one
        challenged scope set). Returns False for another 403.

        Raises:
            MCPAuthorizationError: the flow failed (discovery, an issuer or
                resource mismatch, registration, the login, the token request),
                or the step-up limit was reached. ``status_code`` is the MCP server's 401/403.
        """
        challenge = parse_bearer_challenge(response.headers.get("WWW-Authenticate"))
        status = response.status_code
        if status == 403 and challenge.get("error") != "insufficient_scope":
            return False
        sent = str(response.request.headers.get("Authorization") or "") if response.request is not None else ""
        try:
            with self._lock:
                return self._handle(resource_url, status, challenge, sent)
        except MCPAuthorizationError as exc:
            if exc.status_code is None:
                exc.status_code = status
            raise

    def _handle(self, resource_url: str, status: int, challenge: dict[str, str], sent: str) -> bool:
        stored = self.storage.get_tokens(resource_url)
        if status == 401 and stored and sent != f"Bearer {stored.get('access_token')}":
            return True  # a new token arrived meanwhile (another thread or process): use it
        found = discover(self._session, resource_url, challenge.get("resource_metadata"), self.timeout_seconds)
        issuer = found.authorization_server.issuer
        known = self._servers.get(resource_url)
        if known is not None and known.discovery.authorization_server.issuer != issuer:
            logger.info("the authorization server of %s changed to %s: logging in again", resource_url, issuer)
            known = None
        if stored and stored.get("issuer") not in (None, issuer):
            self.storage.delete(resource_url)  # never send a token of another authorization server
            stored = None
        client = known.client if known is not None else client_identity(
            self._client_settings(), found.authorization_server, self.storage, self._session, self.timeout_seconds)
        server = _Server(found, client, known.requested_scope if known else None,
                         known.step_ups if known else {})
        self._servers[resource_url] = server
        if status == 401 and stored and stored.get("refresh_token"):
            with self._refresh_guard(resource_url):
                current = self.storage.get_tokens(resource_url)
                if current and current.get("access_token") != stored.get("access_token"):
                    return True  # another process refreshed while this one waited for the lock
                try:
                    self._store(resource_url, self._refresh(server, stored), stored)
                    return True
                except MCPAuthorizationError as exc:
                    logger.info("refreshing the token of %s failed (%s): logging in again", resource_url, exc)
        scope = self._select_scope(server, status, challenge)
        self._store(resource_url, self._obtain(server, scope, resource_url), None)
        return True

    def _select_scope(self, server: _Server, status: int, challenge: dict[str, str]) -> str | None:
        """The scope of a new authorization (MCP "Scope Selection Strategy", "Step-Up Authorization Flow")."""
        challenged = challenge.get("scope") or None
        if status == 403:
            wanted = frozenset((challenged or "").split())
            done = server.step_ups.get(wanted, 0)
            if done >= self.max_step_ups:
                raise MCPAuthorizationError(
                    f"the server still refuses with insufficient_scope after {done} step-up authorizations "
                    f"for scope {challenged!r}: giving up")
            server.step_ups[wanted] = done + 1
            union = dict.fromkeys((server.requested_scope or "").split() + (challenged or "").split())
            return " ".join(union) or None
        if self.scopes is not None:  # the caller's scopes, plus what the challenge demands (authoritative)
            return " ".join(dict.fromkeys(self.scopes.split() + (challenged or "").split())) or None
        if challenged:
            return challenged
        supported = server.discovery.scopes_supported
        return " ".join(supported) if supported else None

    def _with_offline_access(self, scope: str | None, server: _Server) -> str | None:
        """``scope`` plus ``offline_access`` when wanted and the authorization server lists it (MCP 2026-07-28)."""
        if (not scope or not self.offline_access or self.grant_type != "authorization_code"
                or not server.discovery.authorization_server.supports("scopes_supported", "offline_access")
                or "offline_access" in scope.split()):
            return scope
        return f"{scope} offline_access"

    def _client_settings(self) -> ClientSettings:
        return ClientSettings(self.client_id, self._client_secret, self.client_metadata_url, self.redirect_uri,
                              self.client_name, self.token_endpoint_auth_method, self.grant_type,
                              self._private_key, self.signing_algorithm, self.scopes, self.client_issuer)

    def _store(self, resource_url: str, tokens: dict[str, Any], previous: dict[str, Any] | None) -> None:
        server = self._servers[resource_url]
        tokens["issuer"] = server.discovery.authorization_server.issuer
        if previous and "refresh_token" not in tokens and previous.get("refresh_token"):
            tokens["refresh_token"] = previous["refresh_token"]  # OAuth 2.1 §4.3.3: the old one stays valid
        for name in ("access_token", "refresh_token"):
            self._remember_secret(tokens.get(name))
        self.storage.set_tokens(resource_url, tokens)

    def _renew(self, resource_url: str, tokens: dict[str, Any]) -> dict[str, Any] | None:
        """A fresh token before expiry (refresh, or ``client_credentials`` again); None if not possible yet."""
        server = self._servers.get(resource_url)
        if server is None and (tokens.get("refresh_token") or self.grant_type == "client_credentials"):
            server = self._discover_for_renewal(resource_url)  # a stored token, a new process: refresh first
        if server is None or (server.discovery.authorization_server.issuer != tokens.get("issuer", None) and (
                tokens.get("issuer") is not None)):
            return None  # the authorization server changed (or is unknown): the server's 401 starts the flow
        if tokens.get("refresh_token"):
            self._store(resource_url, self._refresh(server, tokens), tokens)
        elif self.grant_type == "client_credentials":
            self._store(resource_url, self._obtain(server, server.requested_scope, resource_url), None)
        else:
            return None
        return self.storage.get_tokens(resource_url)

    def _discover_for_renewal(self, resource_url: str) -> _Server:
        """Discovery before the first request of this process, to refresh a stored token that expired.

        python-sdk #1250, openai/codex #27165: a token stored by an earlier process was sent expired
        (a 401 first), because refreshing waited for discovery, which only a 401 started. The
        protected resource metadata is read from the resource's well-known URL (RFC 9728 section 3);
        the client is the stored one (``client_identity``). Raises ``MCPAuthorizationError``.
        """
        found = discover(self._session, resource_url, None, self.timeout_seconds)
        client = client_identity(self._client_settings(), found.authorization_server, self.storage, self._session,
                                 self.timeout_seconds)
        server = self._servers[resource_url] = _Server(found, client)
        return server

    # ------------------------------------------------------------------ grants

    def _token_data(self, server: _Server, data: dict[str, str], scope: str | None) -> dict[str, str]:
        if server.discovery.resource:
            data["resource"] = server.discovery.resource  # RFC 8707
        if scope:
            data["scope"] = scope
        return data

    def _token_endpoint(self, server: _Server) -> str:
        endpoint = server.discovery.authorization_server.token_endpoint
        if not endpoint:
            raise MCPAuthorizationError(
                f"the authorization server {server.discovery.authorization_server.issuer!r} has no token_endpoint")
        return endpoint

    def _refresh(self, server: _Server, tokens: dict[str, Any]) -> dict[str, Any]:
        data = self._token_data(server, {"grant_type": "refresh_token",
                                         "refresh_token": str(tokens["refresh_token"])}, None)
        return request_token(self._session, self._token_endpoint(server), data, server.client,
                             server.discovery.authorization_server.issuer, self.timeout_seconds, self._clock)

    def _obtain(self, server: _Server, scope: str | None, resource_url: str) -> dict[str, Any]:
        """New tokens by the configured grant, asking for ``scope``."""
        server.requested_scope = scope
        issuer = server.discovery.authorization_server.issuer
        if self.grant_type == "client_credentials":
            data = self._token_data(server, {"grant_type": "client_credentials"}, scope)
            return request_token(self._session, self._token_endpoint(server), data, server.client, issuer,
                                 self.timeout_seconds, self._clock)
        if self.redirect_handler is None:
            raise MCPAuthorizationError(
                f"{resource_url} needs a login, and OAuth has no redirect_handler to let the user log in")
        metadata = server.discovery.authorization_server
        endpoint = metadata.authorization_endpoint
        if not endpoint:
            raise MCPAuthorizationError(f"the authorization server {issuer!r} has no authorization_endpoint")
        methods = metadata.metadata.get("code_challenge_methods_supported")
        if isinstance(methods, list) and "S256" not in methods:
            raise MCPAuthorizationError(f"the authorization server {issuer!r} does not support PKCE S256")
        pkce = Pkce.new()
        self._remember_secret(pkce.verifier)
        scope = self._with_offline_access(scope, server)
        params = {"response_type": "code", "client_id": server.client.client_id, "redirect_uri": self.redirect_uri,
                  "state": pkce.state, "code_challenge": pkce.challenge, "code_challenge_method": "S256"}
        url = authorization_url(endpoint, self._token_data(server, params, scope))
        if hasattr(self.redirect_handler, "redirect_uri"):
            self.redirect_handler.redirect_uri = self.redirect_uri
        try:
            answer = self.redirect_handler(url)
        except MCPAuthorizationError:
            raise
        except Exception as exc:  # the handler's own failure: its type only (its text may hold the URL)
            raise MCPAuthorizationError(f"the login failed: {type(exc).__name__}") from None
        code, state = answer[0], answer[1]
        # the redirect's iss: a 3-tuple's third item, or the handler's ``iss`` attribute (set by each call)
        iss = answer[2] if len(answer) > 2 else getattr(self.redirect_handler, "iss", None)
        self._remember_secret(code)
        check_authorization_response(state, iss, pkce.state, issuer,
                                     metadata.metadata.get("authorization_response_iss_parameter_supported") is True)
        data = self._token_data(server, {"grant_type": "authorization_code", "code": code,
                                         "redirect_uri": self.redirect_uri, "code_verifier": pkce.verifier}, None)
        return request_token(self._session, self._token_endpoint(server), data, server.client, issuer,
                             self.timeout_seconds, self._clock)
