"""The client's identity at an authorization server: pre-registered, a Client ID Metadata Document, or DCR.

Order (MCP 2026-07-28 "Client Registration"): pre-registered credentials
(``OAuth(client_id=...)``); a client registered earlier at the same issuer
(the storage, keyed by ``issuer``); the Client ID Metadata Document URL as
``client_id`` when the server advertises
``client_id_metadata_document_supported``; Dynamic Client Registration
(RFC 7591, with ``application_type``: ``native`` for a loopback redirect URI,
else ``web``). A stored registration whose ``redirect_uris`` lack the current
redirect URI is registered again (the redirect URI changed). Credentials of
one issuer are never sent to another: a new authorization server means a new
registration.
"""

from __future__ import annotations

import ipaddress
import logging
import urllib.parse
from dataclasses import dataclass
from typing import Any

import requests

from ..._internal.jsonload import loads_bounded
from ..._internal.secrets import Secret, display_url
from ...exceptions import MCPAuthorizationError
from .discovery import AuthorizationServer
from .storage import TokenStorage
from .tokens import ClientAuth

__all__ = ["ClientSettings", "client_identity", "pick_auth_method"]

logger = logging.getLogger("yiemagent.mcp.auth")

_MAX_REGISTRATION_BYTES = 64 * 1024


@dataclass
class ClientSettings:
    """What ``OAuth`` was given about the client."""

    client_id: str | None
    client_secret: Secret | None
    client_metadata_url: str | None
    redirect_uri: str
    client_name: str
    token_endpoint_auth_method: str | None
    grant_type: str
    private_key: str | bytes | None
    signing_algorithm: str
    scope: str | None = None
    client_issuer: str | None = None

    def __repr__(self) -> str:
        return f"ClientSettings(client_id={self.client_id!r}, grant_type={self.grant_type!r})"


_SECRET_METHODS = ("client_secret_basic", "client_secret_post")


def pick_auth_method(server: AuthorizationServer, has_secret: bool, has_key: bool, wanted: str | None) -> str:
    """The token endpoint authentication method: ``wanted``, else the best the server supports for what we have.

    Without ``token_endpoint_auth_methods_supported`` the RFC 8414 default ``client_secret_basic`` is assumed.
    """
    if wanted:
        return wanted
    listed = server.metadata.get("token_endpoint_auth_methods_supported")
    supported = [m for m in listed if isinstance(m, str)] if isinstance(listed, list) else ["client_secret_basic"]
    if has_key:
        return "private_key_jwt"
    if has_secret:
        for method in ("client_secret_basic", "client_secret_post"):
            if method in supported:
                return method
        return "client_secret_basic"
    return "none"


def is_loopback(url: str) -> bool:
    """True for an ``http://localhost``, ``127.0.0.0/8`` or ``[::1]`` URL (a native app's redirect, RFC 8252)."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def client_identity(settings: ClientSettings, server: AuthorizationServer, storage: TokenStorage,
                    session: requests.Session, timeout_seconds: float) -> ClientAuth:
    """The ``ClientAuth`` to use at ``server`` (registering the client if needed).

    Raises:
        MCPAuthorizationError: no way to identify the client (no client id,
            no CIMD support, no registration endpoint) or registration failed.
    """
    if settings.client_id:
        if settings.client_issuer and settings.client_issuer != server.issuer:
            raise MCPAuthorizationError(
                f"the client was registered at {settings.client_issuer!r}, but the server's authorization server "
                f"is {server.issuer!r}: its credentials are not sent there (register it there too)")
        method = pick_auth_method(server, settings.client_secret is not None, settings.private_key is not None,
                                  settings.token_endpoint_auth_method)
        alternatives: tuple[str, ...] = ()
        if settings.token_endpoint_auth_method is None and method in _SECRET_METHODS:
            # which secret method the server has on file is unknown: the other one it lists, on invalid_client
            listed = server.metadata.get("token_endpoint_auth_methods_supported")
            alternatives = tuple(m for m in _SECRET_METHODS if m != method and isinstance(listed, list) and m in listed)
        return ClientAuth(settings.client_id, settings.client_secret, method, settings.private_key,
                          settings.signing_algorithm, alternatives)
    stored = storage.get_client(server.issuer)
    if stored and isinstance(stored.get("client_id"), str) and _fits(stored, settings):
        return _auth_of(stored, server, settings)
    if settings.client_metadata_url and server.metadata.get("client_id_metadata_document_supported") is True:
        return ClientAuth(settings.client_metadata_url, None, "none")
    if not server.registration_endpoint:
        raise MCPAuthorizationError(
            f"the authorization server {server.issuer!r} has no registration endpoint and does not accept "
            "client ID metadata documents: pass OAuth(client_id=...) of a pre-registered client")
    registered = register(settings, server, session, timeout_seconds)
    storage.set_client(server.issuer, registered)
    return _auth_of(registered, server, settings)


def _fits(stored: dict[str, Any], settings: ClientSettings) -> bool:
    """False if the stored registration was for another redirect URI (then the client registers again)."""
    uris = stored.get("redirect_uris")
    if settings.grant_type != "authorization_code" or not isinstance(uris, list):
        return True
    return settings.redirect_uri in uris


def _auth_of(client: dict[str, Any], server: AuthorizationServer, settings: ClientSettings) -> ClientAuth:
    secret = client.get("client_secret")
    method = client.get("token_endpoint_auth_method")
    if not isinstance(method, str) or not method:
        method = pick_auth_method(server, bool(secret), False, None)
    return ClientAuth(str(client["client_id"]), Secret(secret) if isinstance(secret, str) and secret else None,
                      method)


def register(settings: ClientSettings, server: AuthorizationServer, session: requests.Session,
             timeout_seconds: float) -> dict[str, Any]:
    """Dynamic Client Registration (RFC 7591): the registration response (``client_id``, ``client_secret``?...).

    Raises:
        MCPAuthorizationError: the request failed or was refused (the server's ``error`` and description).
    """
    endpoint = str(server.registration_endpoint)
    supported = server.metadata.get("token_endpoint_auth_methods_supported")
    methods = supported if isinstance(supported, list) else []
    method = settings.token_endpoint_auth_method or (
        "none" if "none" in methods or not methods else
        "client_secret_post" if "client_secret_post" in methods and "client_secret_basic" not in methods
        else "client_secret_basic")
    grant_types = (["client_credentials"] if settings.grant_type == "client_credentials"
                   else ["authorization_code", "refresh_token"])
    body: dict[str, Any] = {
        "client_name": settings.client_name,
        "redirect_uris": [settings.redirect_uri],
        "grant_types": grant_types,
        "response_types": ["code"] if settings.grant_type == "authorization_code" else [],
        "token_endpoint_auth_method": method,
        "application_type": "native" if is_loopback(settings.redirect_uri) else "web",
    }
    if settings.scope:
        body["scope"] = settings.scope
    where = display_url(endpoint)
    try:
        response = session.post(endpoint, json=body, headers={"Accept": "application/json"},
                                timeout=timeout_seconds, allow_redirects=False, stream=True)
    except (requests.RequestException, ValueError) as exc:
        raise MCPAuthorizationError(f"client registration at {where} failed: {type(exc).__name__}") from None
    with response:
        try:
            raw = response.raw.read(_MAX_REGISTRATION_BYTES + 1, decode_content=True)
            document = loads_bounded(raw) if len(raw) <= _MAX_REGISTRATION_BYTES else None
        except (ValueError, requests.RequestException, OSError):
            document = None
    answer = document if isinstance(document, dict) else {}
    if response.status_code not in (200, 201) or not isinstance(answer.get("client_id"), str):
        error = str(answer.get("error") or "no client_id")[:100]
        description = str(answer.get("error_description") or "")[:200]
        raise MCPAuthorizationError(
            f"client registration at {where} answered HTTP {response.status_code}: {error}"
            + (f" ({description})" if description else "")
            + " (pass OAuth(client_id=...) of a pre-registered client, or another redirect_uri)")
    answer.setdefault("redirect_uris", body["redirect_uris"])
    logger.info("registered client %s at %s", answer["client_id"], server.issuer)
    return answer
