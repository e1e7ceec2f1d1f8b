"""OAuth settings of an ``mcpServers`` entry, as each desktop client writes them, read as one form.

``canonical_oauth(entry, where, dialect)`` takes the auth keys out of one server
entry and returns the canonical settings (or ``None`` for no OAuth); the entry
then carries them under ``"oauth"``. ``make_oauth(settings, ...)`` builds the
``yiemagent.mcp.auth.OAuth`` object. Shapes read (source: each client's own
documentation, 2026):

====================  ===================================================================================
client                shape
====================  ===================================================================================
Claude Code           ``"oauth": {"clientId", "callbackPort", "scopes": "a b"}`` (``.mcp.json``;
                      ``authServerMetadataUrl`` is refused: yiemagent discovers the server's metadata)
VS Code               ``"oauth": {"clientId"}`` (``mcp.json``)
Gemini CLI            ``"oauth": {"enabled", "clientId", "clientSecret", "scopes": [...], "redirectUri"}``
                      with ``"authProviderType": "dynamic_discovery"`` (the default; Google credential
                      providers are refused); ``authorizationUrl``/``tokenUrl``/``registrationUrl``/
                      ``audiences``/``tokenParamName`` are refused (endpoints come from discovery)
opencode              ``"oauth": {"clientId", "clientSecret", "scope": "a b", "callbackPort",
                      "redirectUri"}``; ``"oauth": false`` turns OAuth off
Cursor                ``"auth": {"CLIENT_ID", "CLIENT_SECRET", "scopes": [...]}``
Codex CLI             ``[mcp_servers.NAME.oauth] client_id = ...`` (snake_case keys: ``client_id``,
                      ``client_secret``, ``callback_port``, ``redirect_uri``, ``scopes``), and
                      ``scopes = [...]`` on the server table
====================  ===================================================================================

Canonical settings (every key optional)::

    {"client_id": str, "client_secret": str, "scopes": [str, ...],
     "callback_port": int (1..65535), "redirect_uri": "http://127.0.0.1:PORT/path"}

``${VAR}`` in string values is expanded by ``yiemagent.mcp.config`` like every other value
(keep ``clientSecret`` in the environment: ``"${MCP_CLIENT_SECRET}"``); the secret is then
registered so it shows as ``***``. Any other key, a value of the wrong type, or an OAuth
setting on a stdio server is a ``ConfigError`` naming the entry and the key.
"""

from __future__ import annotations

import inspect
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from ..exceptions import ConfigError
from ..textpolicy import register_secrets

__all__ = ["OAUTH_SETTINGS", "canonical_oauth", "expand_oauth", "make_oauth"]

OAUTH_SETTINGS = ("client_id", "client_secret", "scopes", "callback_port", "redirect_uri")

_ALIASES = {
    "clientId": "client_id", "client_id": "client_id", "CLIENT_ID": "client_id",
    "clientSecret": "client_secret", "client_secret": "client_secret", "CLIENT_SECRET": "client_secret",
    "scopes": "scopes", "scope": "scopes",
    "callbackPort": "callback_port", "callback_port": "callback_port",
    "redirectUri": "redirect_uri", "redirect_uri": "redirect_uri",
}
_REFUSED = {
    "authServerMetadataUrl": "yiemagent discovers the authorization server from the MCP server "
                             "(RFC 9728, RFC 8414); remove it",
    "authorizationUrl": "yiemagent discovers the endpoints from the MCP server (RFC 9728, RFC 8414); remove it",
    "tokenUrl": "yiemagent discovers the endpoints from the MCP server (RFC 9728, RFC 8414); remove it",
    "registrationUrl": "yiemagent discovers the registration endpoint (RFC 8414); remove it",
    "audiences": "yiemagent sends the RFC 8707 resource of the MCP server; remove it",
    "tokenParamName": "tokens are sent as an Authorization: Bearer header only; remove it",
}


def canonical_oauth(entry: dict[str, Any], where: str, dialect: str = "") -> dict[str, Any] | None:
    """Take the auth keys (``oauth``, ``auth``, ``authProviderType``, Codex ``scopes``) out of ``entry``.

    Args:
        entry: one server entry (modified: the auth keys are removed).
        where: the entry's place, for error messages (``"mcpServers.docs"``).
        dialect: ``"codex"`` when the entry is from a Codex ``mcp_servers`` table.

    Returns:
        The canonical settings (see the module), ``{}`` for OAuth with every setting
        left to discovery and registration, or ``None`` when the entry asks for no OAuth.

    Raises:
        ConfigError: an auth shape yiemagent cannot honour, named with the key.
    """
    provider = entry.pop("authProviderType", None)
    if provider not in (None, "dynamic_discovery"):
        raise ConfigError(f"{where}.authProviderType: {provider!r:.60} is a Google credential provider of "
                          "Gemini CLI; yiemagent supports \"dynamic_discovery\" (MCP OAuth) only")
    found: list[tuple[str, Any]] = [(k, entry.pop(k)) for k in ("oauth", "auth") if k in entry]
    scopes_on_entry = entry.pop("scopes", None) if dialect == "codex" or found else None
    if len(found) > 1:
        raise ConfigError(f"{where}: give OAuth settings in one of \"oauth\" or \"auth\", not both")
    if not found:
        if scopes_on_entry is not None:
            found = [("oauth", {})]
        elif provider is None:
            return None
        else:
            found = [("oauth", {})]
    key, value = found[0]
    if value is False or value is None:  # opencode: "oauth": false
        return None
    if value is True:
        value = {}
    if isinstance(value, str):
        if value.lower() == "oauth":  # "auth": "oauth"
            value = {}
        else:
            raise ConfigError(f"{where}.{key}: {value!r:.40} is not an auth setting yiemagent knows; "
                              "use an object such as {\"clientId\": ...}, or \"headers\" for a static token")
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}.{key}: must be an object of OAuth settings, not {type(value).__name__}")
    settings: dict[str, Any] = {}
    for name, item in value.items():
        place = f"{where}.{key}.{name}"
        if name == "enabled":  # Gemini CLI
            if not isinstance(item, bool):
                raise ConfigError(f"{place}: must be true or false, not {item!r:.40}")
            if item is False:
                return None
            continue
        if name in _REFUSED:
            raise ConfigError(f"{place}: not supported: {_REFUSED[name]}")
        canonical = _ALIASES.get(name)
        if canonical is None:
            raise ConfigError(f"{place}: unknown OAuth setting; known: clientId, clientSecret, scopes (or scope), "
                              "callbackPort, redirectUri (and their snake_case / Cursor CLIENT_ID forms)")
        if canonical in settings:
            raise ConfigError(f"{place}: {canonical} given twice")
        settings[canonical] = _value(canonical, item, place)
    if scopes_on_entry is not None:
        if "scopes" in settings:
            raise ConfigError(f"{where}: scopes given twice (in the server and in its {key})")
        settings["scopes"] = _value("scopes", scopes_on_entry, f"{where}.scopes")
    if "redirect_uri" in settings and "callback_port" in settings:
        port = urllib.parse.urlsplit(settings["redirect_uri"]).port
        if port != settings["callback_port"]:
            raise ConfigError(f"{where}.{key}: redirectUri names port {port} but callbackPort is "
                              f"{settings['callback_port']}: the login would wait on the wrong port")
    return settings


def _value(name: str, item: Any, place: str) -> Any:
    if name in ("client_id", "client_secret"):
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(f"{place}: must be a non-empty string")
        return item
    if name == "scopes":
        if isinstance(item, str):
            return item.split()
        if isinstance(item, list) and all(isinstance(s, str) and s and " " not in s for s in item):
            return list(item)
        raise ConfigError(f"{place}: must be a list of scope names or one space-separated string")
    if name == "callback_port":
        if isinstance(item, bool) or not isinstance(item, int) or not 0 < item < 65536:
            raise ConfigError(f"{place}: must be a TCP port number (1-65535), not {item!r:.40}")
        return item
    # redirect_uri: a loopback http URL with a port (RFC 8252 7.3): the CLI listens there
    if not isinstance(item, str):
        raise ConfigError(f"{place}: must be a URL string")
    parts = urllib.parse.urlsplit(item)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost", "::1") or port is None:
        raise ConfigError(f"{place}: must be a loopback URL with a port, e.g. http://127.0.0.1:33418/callback "
                          f"(yiemagent listens there for the login), not {item!r:.80}")
    return item


def expand_oauth(settings: Mapping[str, Any] | None, where: str,
                 expand: Callable[[str, str], str]) -> dict[str, Any] | None:
    """``settings`` with ``expand(text, where)`` (``${VAR}``) applied to its strings.

    The client secret is registered as a secret (shown ``***`` everywhere, ``yiemagent.textpolicy``).
    """
    if settings is None:
        return None
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, str):
            value = expand(value, f"{where}.{key}")
            if key == "client_secret":
                register_secrets([value])
        out[key] = value
    return out


def make_oauth(settings: Mapping[str, Any], *, storage: Any = None, redirect_handler: Any = None,
               redirect_uri: str | None = None) -> Any:
    """The ``yiemagent.mcp.auth.OAuth`` for canonical ``settings``.

    Args:
        settings: from ``canonical_oauth`` (``callback_port`` is for a redirect handler the caller
            makes; it is not passed on).
        storage: a ``TokenStorage`` (None: OAuth's default, in memory).
        redirect_handler: a ``RedirectHandler`` (None: OAuth's default).
        redirect_uri: overrides the settings' ``redirect_uri`` (the handler's own URI).

    Raises:
        ConfigError: the installed ``OAuth`` does not take one of the settings.
    """
    from .auth import OAuth

    kwargs: dict[str, Any] = {k: v for k, v in settings.items() if k in ("client_id", "client_secret", "scopes")}
    uri = redirect_uri or settings.get("redirect_uri")
    if uri:
        kwargs["redirect_uri"] = uri
    if storage is not None:
        kwargs["storage"] = storage
    if redirect_handler is not None:
        kwargs["redirect_handler"] = redirect_handler
    accepted = inspect.signature(OAuth).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            raise ConfigError(f"OAuth does not take {', '.join(unknown)}")
    return OAuth(**kwargs)
