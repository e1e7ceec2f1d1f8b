"""Authorization as an OAuth 2.1 resource server: bearer tokens checked in front of the MCP endpoint.

::

    from yiemagent.mcp.server import MCPServer
    from yiemagent.mcp.server.auth import BearerAuth, IntrospectionVerifier

    app = BearerAuth(
        MCPServer("notes", tools=[...]).wsgi_app(),
        verifier=IntrospectionVerifier("https://auth.example.com/introspect", client_id="rs", client_secret="..."),
        resource="https://notes.example.com/mcp",
        authorization_servers=["https://auth.example.com"],
        required_scopes=["mcp"], tool_scopes={"delete_note": ["notes:write"]},
    )

``BearerAuth`` is WSGI middleware around the app ``MCPServer.wsgi_app()`` returns:

- ``GET /.well-known/oauth-protected-resource/<path>`` (and without the path) answer the Protected
  Resource Metadata (RFC 9728): ``{"resource", "authorization_servers", "scopes_supported",
  "bearer_methods_supported": ["header"]}``;
- every other request needs ``Authorization: Bearer <token>``. Without one: 401 with
  ``WWW-Authenticate: Bearer resource_metadata="<metadata URL>", scope="<required scopes>"``; a token
  the verifier refuses (unknown, expired, for another resource: RFC 8707 audience) is 401 with
  ``error="invalid_token"``; a token without the ``required_scopes`` is 403 ``error="insufficient_scope"``
  naming the scopes needed (the client steps up, MCP "Scope Challenge Handling");
- a ``tools/call`` of a tool listed in ``tool_scopes`` also needs that tool's scopes (403 as above).
  The request body is read once (at most ``max_body_bytes``) and handed on unchanged.

The token that passed is ``environ["yiemagent.mcp.access_token"]`` (an ``AccessToken``) for the app below;
``MCPServer.wsgi_app()`` hands it to every served call (``RequestContext.identity``,
``current_call().identity``) and binds to its ``principal`` what a client holds: a 2025-11-25 session
(``Mcp-Session-Id``: another principal's request on it is answered 404, as an unknown session; MCP security
best practices, session hijacking), the sessions one principal may open (``MemorySessions``), a 2026-07-28
``requestState`` and ``conversation_tool``'s conversations. Tokens never reach a log, an error or a response: a verified
token is one of the text policy's known secrets (``register_secrets(transient=True)``: the 1,000 most recent),
a refused one is registered nowhere (a flood of made-up tokens would grow the registry, and the cost of every
scrub, without bound).

Under a URL prefix (the app mounted at ``SCRIPT_NAME``, e.g. werkzeug's ``DispatcherMiddleware({"/tools":
app})``), the ``resource_metadata`` URL of a challenge is one this middleware answers:
``<origin><SCRIPT_NAME>/.well-known/oauth-protected-resource<rest of the resource path>``.

Verifiers (``TokenVerifier``: ``verify(token) -> AccessToken | None``): ``IntrospectionVerifier``
(RFC 7662, with ``requests``) and ``JWTVerifier`` (signed JWTs, with PyJWT: ``pip install -e
".[jwt]"`` in the checkout; a JWKS URL or a key). Both check ``exp`` and the audience against ``resource``.

Spec: MCP 2025-11-25 "Authorization" (Protected Resource Metadata Discovery, Access Token Usage, Token
Audience Binding and Validation, Scope Challenge Handling); RFC 9728; RFC 6750 §3 (``WWW-Authenticate``);
RFC 7662; RFC 7519; RFC 8707.
"""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..._internal.checks import all_of, check_int, check_number, install_hint
from ..._internal.jsonload import loads_bounded
from ..._internal.numbers import peer_number
from ...exceptions import ConfigError
from ...textpolicy import register_secrets
from ..limits import DEFAULT_MAX_JSON_DEPTH

__all__ = ["AccessToken", "BearerAuth", "IntrospectionVerifier", "JWTVerifier", "TokenVerifier"]

logger = logging.getLogger("yiemagent.mcp.server.auth")

ENVIRON_KEY = "yiemagent.mcp.access_token"
"""Where the verified ``AccessToken`` is put in the WSGI environ for the app below."""

WELL_KNOWN = "/.well-known/oauth-protected-resource"
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class AccessToken:
    """What a verifier learnt of a valid token (never the token itself).

    Attributes:
        scopes: the scopes granted.
        expires_at: Unix time in seconds, or None (no ``exp``).
        audience: the ``aud`` values (resource URLs) the token is for.
        subject: ``sub``, or None. client_id: the OAuth client, or None.
        claims: the other fields (introspection response or JWT claims), as the peer sent them.
    """

    scopes: frozenset[str] = frozenset()
    expires_at: float | None = None
    audience: tuple[str, ...] = ()
    subject: str | None = None
    client_id: str | None = None
    claims: Mapping[str, Any] = field(default_factory=dict)

    @property
    def principal(self) -> str | None:
        """Whom the token speaks for: the key a client's state is bound to.

        ``"sub:<subject>"``, else ``"client:<client_id>"`` (a client-credentials token), else None (a token
        naming neither: nothing can be bound to it). A token whose claims carry an issuer (``iss``) is prefixed
        with it, ``"iss:<issuer> sub:<subject>"``: a subject is unique only within its issuer (OpenID Connect
        Core 1.0, section 2), so the same ``sub`` from two trusted authorization servers is two principals
        (spaces and ``%`` in the issuer are percent-encoded, so no issuer can end inside another's key).
        """
        if self.subject:
            name = f"sub:{self.subject}"
        elif self.client_id:
            name = f"client:{self.client_id}"
        else:
            return None
        issuer = self.claims.get("iss") if isinstance(self.claims, Mapping) else None
        if isinstance(issuer, str) and issuer:
            return f"iss:{issuer.replace('%', '%25').replace(' ', '%20')} {name}"
        return name


class TokenVerifier(Protocol):
    """Checks a bearer token: an ``AccessToken`` when it is valid for this resource, None when it is not."""

    def verify(self, token: str) -> AccessToken | None:
        """The token's ``AccessToken``, or None (unknown, expired, revoked, for another resource)."""


def _scopes(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, (list, tuple)):
        return frozenset(str(v) for v in value if isinstance(v, str))
    return frozenset()


def _audience(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def _same_resource(a: str, b: str) -> bool:
    """RFC 8707 resource URLs compared as the MCP spec's canonical URIs (case of scheme/host, trailing ``/``)."""
    def canonical(url: str) -> tuple[str, str, str]:
        parts = urlsplit(url)
        return parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/")
    return canonical(a) == canonical(b)


def _token_from(claims: Mapping[str, Any], resource: str | None) -> AccessToken | None:
    """An ``AccessToken`` of ``claims`` (introspection or JWT), None when expired or for another resource."""
    expires = peer_number(claims.get("exp"))
    if expires is not None and expires <= time.time():
        return None
    audience = _audience(claims.get("aud"))
    if resource is not None and audience and not any(_same_resource(a, resource) for a in audience):
        return None
    scopes = _scopes(claims.get("scope", claims.get("scp")))
    subject, client = claims.get("sub"), claims.get("client_id", claims.get("azp"))
    return AccessToken(scopes, None if expires is None else float(expires), audience,
                       subject if isinstance(subject, str) else None, client if isinstance(client, str) else None,
                       dict(claims))


class IntrospectionVerifier:
    """RFC 7662 token introspection at ``endpoint`` (the authorization server's).

    Args:
        endpoint: the introspection URL: https, or http on a loopback host.
        client_id, client_secret: the resource server's credentials (HTTP Basic), if the server wants them.
        resource: this resource's URL; a token whose ``aud`` names other resources only is refused.
            ``BearerAuth`` sets it when None.
        timeout_seconds: the whole introspection request's bound.
        require_audience: refuse tokens whose response has no ``aud`` at all.

    ``verify`` returns None for an inactive, expired or foreign token and when the endpoint cannot
    be reached or answers nonsense (logged at WARNING without the token): a request is refused, never
    let through, when the authorization server is down.
    """

    def __init__(self, endpoint: str, *, client_id: str | None = None, client_secret: str | None = None,
                 resource: str | None = None, timeout_seconds: float = 10.0, require_audience: bool = False) -> None:
        parts = urlsplit(endpoint)
        if parts.scheme != "https" and not (parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost",
                                                                                         "::1")):
            raise ConfigError(f"introspection endpoint must be https (or http on a loopback host): {endpoint!r}")
        check_number("timeout_seconds", timeout_seconds)
        self.endpoint, self.client_id, self.resource = endpoint, client_id, resource
        self._secret = client_secret
        if client_secret:
            register_secrets([client_secret])
        self.timeout_seconds, self.require_audience = timeout_seconds, require_audience

    def verify(self, token: str) -> AccessToken | None:
        """Ask the introspection endpoint about ``token`` (see the class docstring)."""
        import requests

        auth = (self.client_id, self._secret) if self.client_id and self._secret else None
        data = {"token": token, "token_type_hint": "access_token"}
        if self.client_id and not self._secret:
            data["client_id"] = self.client_id
        try:
            response = requests.post(self.endpoint, data=data, auth=auth, timeout=self.timeout_seconds,
                                     headers={"Accept": "application/json"}, allow_redirects=False)
            answer = loads_bounded(response.content) if response.status_code == 200 else None
        except (requests.RequestException, ValueError) as exc:
            logger.warning("token introspection at %s failed: %s", self.endpoint, type(exc).__name__)
            return None
        if not isinstance(answer, dict):
            logger.warning("token introspection at %s answered HTTP %d without a JSON object", self.endpoint,
                           response.status_code)
            return None
        if answer.get("active") is not True:
            return None
        if self.require_audience and not _audience(answer.get("aud")):
            return None
        return _token_from(answer, self.resource)


class JWTVerifier:
    """Signed JWT access tokens (RFC 9068 profile), checked with PyJWT.

    Args:
        jwks_url: the authorization server's JWKS (keys fetched and cached by ``jwt.PyJWKClient``), or
        key: one verification key (a PEM public key, or the shared secret of HS256).
        issuer: the required ``iss``. audience: the required ``aud`` (default: ``resource``, set by
            ``BearerAuth``). algorithms: the accepted ``alg`` values (never ``none``).
        leeway_seconds: clock skew allowed on ``exp``/``nbf``.
        jwks_refresh_seconds: a token naming a key id (``kid``) the cached JWKS lacks fetches the JWKS again
            (the authorization server rotated its keys) at most once in this many seconds (default 30); other
            such tokens are refused without a fetch. The ``kid`` is the client's to choose, before any signature
            is checked: without the bound, made-up ``kid`` values made one JWKS request each (PyJWT #914, #1207;
            the cooldown of panva/jose's remote JWKS).

    Raises:
        ConfigError: PyJWT is not installed (the ``jwt`` extra), neither or both of
            ``jwks_url`` and ``key``, ``none`` among the algorithms, or ``jwks_refresh_seconds`` or
            ``leeway_seconds`` not a finite number >= 0.
    """

    def __init__(self, *, jwks_url: str | None = None, key: Any = None, issuer: str | None = None,
                 audience: str | None = None, algorithms: Sequence[str] = ("RS256", "ES256"),
                 leeway_seconds: float = 30.0, jwks_refresh_seconds: float = 30.0) -> None:
        check_number("leeway_seconds", leeway_seconds, positive=False)
        check_number("jwks_refresh_seconds", jwks_refresh_seconds, positive=False)
        try:
            import jwt
        except ImportError as exc:
            raise ConfigError(f"JWTVerifier needs PyJWT: {install_hint('jwt')}") from exc
        if (jwks_url is None) == (key is None):
            raise ConfigError("JWTVerifier needs exactly one of jwks_url and key")
        if not isinstance(algorithms, (str, bytes)) and any(str(a).lower() == "none" for a in algorithms):
            raise ConfigError("JWTVerifier never accepts alg 'none'")
        known = set(jwt.algorithms.get_default_algorithms()) | set(getattr(jwt.algorithms, "requires_cryptography", ()))
        all_of("algorithms", algorithms, sorted(known - {"none"}), empty=False)  # "HS265", or "RS256" as one str
        self._jwt = jwt
        self._jwks = jwt.PyJWKClient(jwks_url) if jwks_url is not None else None
        self._key, self.issuer, self.resource = key, issuer, audience
        self.algorithms, self.leeway_seconds = list(algorithms), leeway_seconds
        self.jwks_refresh_seconds = jwks_refresh_seconds
        self._refresh_lock = threading.Lock()
        self._refreshed_at: float | None = None

    def _signing_key(self, token: str) -> Any:
        """The JWKS key the token's header names; one forced JWKS fetch per ``jwks_refresh_seconds`` at most."""
        jwks, jwt = self._jwks, self._jwt
        assert jwks is not None
        kid = jwt.get_unverified_header(token).get("kid")
        for refresh in (False, True):
            if refresh:
                with self._refresh_lock:
                    now = time.monotonic()
                    if self._refreshed_at is not None and now - self._refreshed_at < self.jwks_refresh_seconds:
                        raise jwt.PyJWKClientError("the token's key id is not in the JWKS (not fetched again yet)")
                    self._refreshed_at = now
            for signing in jwks.get_signing_keys(refresh=refresh):
                if signing.key_id == kid:
                    return signing.key
        raise jwt.PyJWKClientError("the token's key id is not in the JWKS")

    def verify(self, token: str) -> AccessToken | None:
        """Check ``token``'s signature, ``exp``, ``iss`` and ``aud`` (see the class docstring)."""
        jwt = self._jwt
        try:
            key = self._signing_key(token) if self._jwks is not None else self._key
            claims = jwt.decode(token, key, algorithms=self.algorithms, issuer=self.issuer,
                                audience=self.resource, leeway=self.leeway_seconds,
                                options={"require": ["exp"], "verify_aud": self.resource is not None})
        except jwt.PyJWTError as exc:
            logger.info("a bearer token was refused: %s", type(exc).__name__)
            return None
        return _token_from(claims, self.resource) if isinstance(claims, dict) else None


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class BearerAuth:
    """WSGI middleware: Protected Resource Metadata and bearer checks in front of ``app`` (see the module).

    Args:
        app: the WSGI app to protect (``MCPServer.wsgi_app()``).
        verifier: the ``TokenVerifier``.
        resource: this MCP endpoint's canonical URL (``https://host/mcp``): the metadata's ``resource``,
            the audience tokens must be for.
        authorization_servers: issuer URLs of the authorization servers (at least one).
        required_scopes: scopes every request needs.
        tool_scopes: ``{tool name: scopes}`` a ``tools/call`` of that tool needs besides.
        scopes_supported: the metadata's ``scopes_supported`` (default: all scopes named above).
        metadata_url: where clients find the metadata (default: the well-known URL of ``resource``).
        max_body_bytes: largest body read to find a ``tools/call``'s tool (a longer one: 413).

    Raises:
        ConfigError: ``resource`` is not an absolute http(s) URL, no authorization server is given, or
            ``max_body_bytes`` is not an int >= 1.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], verifier: TokenVerifier, *, resource: str,
                 authorization_servers: Sequence[str], required_scopes: Iterable[str] = (),
                 tool_scopes: Mapping[str, Iterable[str]] | None = None, scopes_supported: Iterable[str] | None = None,
                 metadata_url: str | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        parts = urlsplit(resource)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
            raise ConfigError(f"resource must be an absolute http(s) URL without a fragment: {resource!r}")
        if not authorization_servers or not all(isinstance(s, str) and s for s in authorization_servers):
            raise ConfigError("BearerAuth needs at least one authorization server URL")
        self.app, self.verifier, self.resource = app, verifier, resource
        for attribute in ("resource",):  # verifiers that check the audience learn it here when not told
            if getattr(verifier, attribute, "unset") is None:
                setattr(verifier, attribute, resource)
        self.required_scopes = tuple(dict.fromkeys(required_scopes))
        self.tool_scopes = {name: tuple(dict.fromkeys(scopes)) for name, scopes in (tool_scopes or {}).items()}
        every = [*self.required_scopes, *(s for scopes in self.tool_scopes.values() for s in scopes)]
        self.metadata = {"resource": resource, "authorization_servers": list(authorization_servers),
                         "scopes_supported": list(dict.fromkeys(scopes_supported or every)),
                         "bearer_methods_supported": ["header"]}
        path = parts.path.rstrip("/")
        self.metadata_paths = {WELL_KNOWN + path, WELL_KNOWN} if path else {WELL_KNOWN}
        self._origin, self._resource_path, self._metadata_url = f"{parts.scheme}://{parts.netloc}", path, metadata_url
        self.metadata_url = metadata_url or f"{self._origin}{WELL_KNOWN}{path}"
        check_int("max_body_bytes", max_body_bytes, minimum=1)  # NaN would read any body: never unbounded
        self.max_body_bytes = max_body_bytes

    def _is_metadata(self, environ: dict[str, Any]) -> bool:
        """True for a request of the metadata: at the host's root, or under the prefix the app is mounted at."""
        script, info = environ.get("SCRIPT_NAME", "").rstrip("/"), environ.get("PATH_INFO", "").rstrip("/")
        if (script + info or "/") in self.metadata_paths or info == WELL_KNOWN:
            return True
        return bool(info.startswith(WELL_KNOWN + "/") and script + info[len(WELL_KNOWN):] == self._resource_path)

    def advertised_metadata_url(self, environ: dict[str, Any]) -> str:
        """The ``resource_metadata`` URL of a challenge for the request ``environ``.

        ``metadata_url`` when given; else the well-known URL of the resource, under ``SCRIPT_NAME`` when the
        app is mounted at a prefix (so that it reaches this middleware:
        ``<origin><SCRIPT_NAME>/.well-known/oauth-protected-resource<rest of the resource path>``).
        """
        script = environ.get("SCRIPT_NAME", "").rstrip("/")
        if self._metadata_url is not None or not script:
            return self.metadata_url
        rest = self._resource_path[len(script):] if self._resource_path.startswith(script + "/") else ""
        return f"{self._origin}{script}{WELL_KNOWN}{rest}"

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Answer the metadata, refuse with a challenge, or call ``app`` with the verified token in ``environ``."""
        if self._is_metadata(environ):
            if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
                return self._plain(start_response, "405 Method Not Allowed", [("Allow", "GET")])
            body = json.dumps(self.metadata).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                      ("Cache-Control", "max-age=3600")])
            return [body]
        if environ.get("REQUEST_METHOD") == "OPTIONS":  # a CORS preflight carries no credentials
            return self.app(environ, start_response)
        header = environ.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return self._challenge(environ, start_response, 401, None, self.required_scopes)
        access = self.verifier.verify(token)  # which never prints it
        if access is None:  # not registered as a secret: a flood of made-up tokens must not grow the registry
            return self._challenge(environ, start_response, 401, "invalid_token", self.required_scopes,
                                   "the access token is invalid, expired or not for this resource")
        register_secrets([token], transient=True)  # never printed below; the most recent 1,000 tokens kept
        needed = set(self.required_scopes)
        if self.tool_scopes and environ.get("REQUEST_METHOD") == "POST":
            read = self._body(environ)
            if read is None:
                return self._plain(start_response, "413 Content Too Large", [])
            needed |= set(self._tool_scopes_of(read))
        missing = needed - access.scopes
        if missing:
            wanted = [*dict.fromkeys([*access.scopes & needed, *sorted(needed)])]
            return self._challenge(environ, start_response, 403, "insufficient_scope", wanted,
                                   f"this request needs the scopes {' '.join(sorted(missing))}")
        environ[ENVIRON_KEY] = access  # the served calls' identity; sessions and states are bound to it (wsgi.py)
        return self.app(environ, start_response)

    def _body(self, environ: dict[str, Any]) -> bytes | None:
        """The request body, read once and put back as ``wsgi.input``; None when longer than the cap."""
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > self.max_body_bytes:
            return None
        body = environ["wsgi.input"].read(length) if length > 0 else b""
        environ["wsgi.input"] = io.BytesIO(body)
        return body

    def _tool_scopes_of(self, body: bytes) -> list[str]:
        try:
            message = loads_bounded(body, DEFAULT_MAX_JSON_DEPTH)  # a body nested 100,000 deep: no RecursionError
        except ValueError:
            return []  # the app answers the parse error
        messages = message if isinstance(message, list) else [message]
        needed: list[str] = []
        for item in messages:
            if isinstance(item, dict) and item.get("method") == "tools/call" and isinstance(item.get("params"), dict):
                needed += self.tool_scopes.get(str(item["params"].get("name")), ())
        return needed

    def _challenge(self, environ: dict[str, Any], start_response: Callable[..., Any], status: int,
                   error: str | None, scopes: Sequence[str], description: str | None = None) -> list[bytes]:
        fields = [f"resource_metadata={_quoted(self.advertised_metadata_url(environ))}"]
        if error:
            fields.insert(0, f"error={_quoted(error)}")
        if scopes:
            fields.append(f"scope={_quoted(' '.join(scopes))}")
        if description:
            fields.append(f"error_description={_quoted(description)}")
        body = json.dumps({"error": error or "invalid_request",
                           "error_description": description or "a bearer token is required"}).encode()
        start_response("401 Unauthorized" if status == 401 else "403 Forbidden",
                       [("WWW-Authenticate", "Bearer " + ", ".join(fields)), ("Content-Type", "application/json"),
                        ("Content-Length", str(len(body)))])
        return [body]

    @staticmethod
    def _plain(start_response: Callable[..., Any], status: str, headers: list[tuple[str, str]]) -> list[bytes]:
        start_response(status, [*headers, ("Content-Length", "0")])
        return [b""]
