"""Finding the authorization server of an MCP server: RFC 9728, then RFC 8414 / OpenID Connect discovery.

Protected Resource Metadata (PRM) is tried at, in order: the ``resource_metadata``
URL of the ``WWW-Authenticate`` challenge, the path-based well-known URL
(``/.well-known/oauth-protected-resource/<path>``), the root one. Its
``resource`` must name the MCP server (same origin, and the server's path at
or under the resource's path): a PRM for another resource is refused
(RFC 9728 §3.3). Authorization server metadata is tried in the spec's order
(for an issuer with a path: ``/.well-known/oauth-authorization-server/<path>``,
``/.well-known/openid-configuration/<path>``, ``<path>/.well-known/openid-configuration``;
without: the first two at the root); a document whose ``issuer`` differs from
the issuer used to build its URL is never used (RFC 8414 §3.3).

Without any PRM (a 2025-03-26 server) the MCP server's origin is the
authorization server: its RFC 8414 metadata (its ``issuer`` taken as is:
there is none to compare it with), else the default endpoints
``/authorize``, ``/token`` and ``/register``.

These requests carry no credentials, and follow no redirect to another origin.

Spec: MCP 2025-11-25 "Authorization" ("Authorization Server Discovery"), MCP
2026-07-28 "Authorization Server Discovery", MCP 2025-03-26 "Authorization"
("Server Metadata Discovery", "Fallbacks for Servers without Metadata Discovery").
"""

from __future__ import annotations

import logging
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import requests

from ..._internal.jsonload import loads_bounded
from ..._internal.secrets import display_url
from ...exceptions import MCPAuthorizationError

__all__ = ["AuthorizationServer", "Discovery", "as_metadata_urls", "discover", "endpoint_url", "prm_urls",
           "resource_matches"]

logger = logging.getLogger("yiemagent.mcp.auth")

_MAX_METADATA_BYTES = 256 * 1024


@dataclass
class AuthorizationServer:
    """An authorization server's validated metadata (RFC 8414), or the 2025-03-26 defaults."""

    issuer: str
    metadata: dict[str, Any] = field(default_factory=dict)
    fallback: bool = False
    """True: no metadata document; the endpoints are the 2025-03-26 defaults at the MCP server's origin."""

    @property
    def authorization_endpoint(self) -> str | None:
        """The ``authorization_endpoint`` URL, or None (``MCPAuthorizationError`` for one ``endpoint_url`` refuses)."""
        return endpoint_url(self.metadata, "authorization_endpoint")

    @property
    def token_endpoint(self) -> str | None:
        """The ``token_endpoint`` URL, or None (``MCPAuthorizationError`` for one ``endpoint_url`` refuses)."""
        return endpoint_url(self.metadata, "token_endpoint")

    @property
    def registration_endpoint(self) -> str | None:
        """The ``registration_endpoint`` URL (RFC 7591), or None (refused as the others)."""
        return endpoint_url(self.metadata, "registration_endpoint")

    def supports(self, member: str, value: str) -> bool:
        """True if the metadata list ``member`` holds ``value``."""
        listed = self.metadata.get(member)
        return isinstance(listed, list) and value in listed


@dataclass
class Discovery:
    """What discovery found for one MCP server."""

    authorization_server: AuthorizationServer
    resource_metadata: dict[str, Any] | None
    """The validated PRM document, or None (a 2025-03-26 server without one)."""

    @property
    def resource(self) -> str | None:
        """The PRM's ``resource`` (sent as the RFC 8707 ``resource`` parameter), or None without a PRM."""
        return _text((self.resource_metadata or {}).get("resource"))

    @property
    def scopes_supported(self) -> list[str] | None:
        """The PRM's ``scopes_supported``, or None."""
        scopes = (self.resource_metadata or {}).get("scopes_supported")
        return [str(s) for s in scopes] if isinstance(scopes, list) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def endpoint_url(metadata: dict[str, Any], member: str) -> str | None:
    """The URL ``metadata[member]`` names, or None when absent; untrusted input, checked before any use.

    Only ``https`` URLs are used, and ``http`` ones on this machine (a
    loopback host, for development): an endpoint is opened in the user's
    browser or sent credentials, so ``javascript:``, ``file:``, ``data:``
    and the like, a URL with user info, or plain ``http`` elsewhere, are refused.

    Raises:
        MCPAuthorizationError: ``member`` is present but not such a URL (named, cut to 80 characters).

    Spec: RFC 8414 section 2 (endpoints are URLs), OAuth 2.1 section 1.5 (TLS), MCP authorization
    ("all authorization server endpoints MUST be served over HTTPS").
    """
    value = metadata.get(member)
    if value is None or value == "":
        return None
    url = value if isinstance(value, str) else ""
    try:
        parts = urllib.parse.urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        parts, host = urllib.parse.urlsplit(""), ""
    safe = bool(host) and parts.username is None and parts.password is None and (
        parts.scheme == "https" or (parts.scheme == "http" and host in _LOOPBACK))
    if not safe:
        raise MCPAuthorizationError(f"the authorization server's {member} {str(value)[:80]!r} is not an https URL "
                                    "(or http on this machine); it is not used")
    return url


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _path(url: str) -> str:
    return urllib.parse.urlsplit(url).path.rstrip("/")


def prm_urls(server_url: str, header_url: str | None) -> list[str]:
    """Where to look for the Protected Resource Metadata of ``server_url``, in order (no duplicates)."""
    origin, path = _origin(server_url), _path(server_url)
    urls = [header_url] if header_url else []
    if path:
        urls.append(f"{origin}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{origin}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def as_metadata_urls(issuer: str) -> list[str]:
    """Where to look for the metadata of the authorization server ``issuer``, in the spec's order."""
    origin, path = _origin(issuer), _path(issuer)
    if path:
        return [f"{origin}/.well-known/oauth-authorization-server{path}",
                f"{origin}/.well-known/openid-configuration{path}",
                f"{origin}{path}/.well-known/openid-configuration"]
    return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]


def _normal(url: str) -> tuple[str, str, int | None, str]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"https": 443, "http": 80}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port, parts.path.rstrip("/")


def resource_matches(resource: str, server_url: str) -> bool:
    """True if the PRM ``resource`` names ``server_url``: same origin, and the server's path at or under its path."""
    try:
        r_scheme, r_host, r_port, r_path = _normal(resource)
        s_scheme, s_host, s_port, s_path = _normal(server_url)
    except ValueError:
        return False
    if (r_scheme, r_host, r_port) != (s_scheme, s_host, s_port):
        return False
    return s_path == r_path or s_path.startswith(r_path + "/")


def fetch_json(session: requests.Session, url: str, timeout_seconds: float) -> dict[str, Any] | None:
    """GET a metadata document: its JSON object, or None (error status, not JSON, too large, unreachable).

    Same-origin redirects are followed (at most 5), others are not; no credentials are sent.
    """
    headers = {"Accept": "application/json", "MCP-Protocol-Version": "2025-11-25"}
    for _ in range(5):
        try:
            response = session.get(url, headers=headers, timeout=timeout_seconds, allow_redirects=False,
                                   stream=True)
        except (requests.RequestException, ValueError) as exc:
            logger.debug("metadata %s: %s", display_url(url), type(exc).__name__)
            return None
        with response:
            location = response.headers.get("Location")
            if 300 <= response.status_code < 400 and location:
                target = urllib.parse.urljoin(url, location)
                if _origin(target) != _origin(url):
                    logger.info("metadata %s redirects to another origin: not followed", display_url(url))
                    return None
                url = target
                continue
            if response.status_code != 200:
                logger.debug("metadata %s: HTTP %d", display_url(url), response.status_code)
                return None
            try:
                body = response.raw.read(_MAX_METADATA_BYTES + 1, decode_content=True)
                document = loads_bounded(body) if len(body) <= _MAX_METADATA_BYTES else None
            except (ValueError, requests.RequestException, OSError):
                document = None
            return document if isinstance(document, dict) else None
    return None


def protected_resource_metadata(session: requests.Session, server_url: str, header_url: str | None,
                                timeout_seconds: float) -> dict[str, Any] | None:
    """The first PRM document found for ``server_url`` (see ``prm_urls``), or None.

    Raises:
        MCPAuthorizationError: a PRM was found but names another resource.
    """
    for url in prm_urls(server_url, header_url):
        document = fetch_json(session, url, timeout_seconds)
        if document is None:
            continue
        resource = _text(document.get("resource"))
        if resource is None or not resource_matches(resource, server_url):
            raise MCPAuthorizationError(
                f"the protected resource metadata at {display_url(url)} is for resource {resource!r}, "
                f"not {display_url(server_url)} (RFC 9728 §3.3): not used")
        return document
    return None


def authorization_server_metadata(session: requests.Session, issuer: str,
                                  timeout_seconds: float) -> dict[str, Any] | None:
    """The validated metadata of ``issuer`` (``issuer`` member identical), or None if none was found.

    Raises:
        MCPAuthorizationError: documents were found but each names another issuer.
    """
    mismatch = None
    for url in as_metadata_urls(issuer):
        document = fetch_json(session, url, timeout_seconds)
        if document is None:
            continue
        if document.get("issuer") != issuer:
            mismatch = f"{display_url(url)} names issuer {str(document.get('issuer'))[:200]!r}"
            logger.warning("authorization server metadata %s: issuer mismatch, not used", mismatch)
            continue
        return document
    if mismatch is not None:
        raise MCPAuthorizationError(
            f"the authorization server metadata does not match issuer {issuer!r}: {mismatch} (RFC 8414 §3.3)")
    return None


def legacy_metadata(session: requests.Session, origin: str, timeout_seconds: float) -> dict[str, Any] | None:
    """2025-03-26 (no PRM): the metadata at the MCP server's origin, whatever ``issuer`` it names.

    There is no issuer known beforehand to compare with (the MCP server's own
    origin vouches for it, as in that revision); its ``issuer`` becomes the
    recorded one (``iss`` checks, registrations).
    """
    for url in as_metadata_urls(origin):
        document = fetch_json(session, url, timeout_seconds)
        if document is not None:
            return document
    return None


def discover(session: requests.Session, server_url: str, header_url: str | None,
             timeout_seconds: float) -> Discovery:
    """The PRM and authorization server of ``server_url``.

    Raises:
        MCPAuthorizationError: the PRM names another resource or no
            authorization server, or the authorization server's metadata is
            missing or names another issuer.
    """
    prm = protected_resource_metadata(session, server_url, header_url, timeout_seconds)
    if prm is None:  # 2025-03-26: the MCP server's origin is the authorization server
        issuer = _origin(server_url)
        metadata = legacy_metadata(session, issuer, timeout_seconds)
        if metadata is None:
            return Discovery(AuthorizationServer(issuer, {
                "issuer": issuer, "authorization_endpoint": f"{issuer}/authorize",
                "token_endpoint": f"{issuer}/token", "registration_endpoint": f"{issuer}/register"},
                fallback=True), None)
        return Discovery(AuthorizationServer(_text(metadata.get("issuer")) or issuer, metadata), None)
    servers = prm.get("authorization_servers")
    issuers = [s for s in servers if isinstance(s, str) and s] if isinstance(servers, list) else []
    if not issuers:
        raise MCPAuthorizationError(
            f"the protected resource metadata of {display_url(server_url)} names no authorization server")
    problems = []
    for issuer in issuers:
        try:
            metadata = authorization_server_metadata(session, issuer, timeout_seconds)
        except MCPAuthorizationError as exc:
            problems.append(str(exc))
            continue
        if metadata is not None:
            return Discovery(AuthorizationServer(issuer, metadata), prm)
        problems.append(f"no metadata found for authorization server {issuer!r}")
    raise MCPAuthorizationError("; ".join(problems))
