"""``--auth oauth`` for ``yiemagent tools``, ``call`` and ``chat``: OAuth login for HTTP MCP servers.

::

    yiemagent tools https://mcp.example.com/mcp --auth oauth
    yiemagent call https://mcp.example.com/mcp search '{"q": "x"}' --auth oauth --client-id ID --scope "read write"
    YIEMAGENT_OAUTH_CLIENT_SECRET=... yiemagent chat https://mcp.example.com/mcp --auth oauth --client-id ID

``--auth oauth`` applies to the servers given as URLs on the command line. Servers of a
``--config`` file log in when their entry has OAuth settings (``yiemagent.mcp.config_auth``),
with the same token file and callback server. Flags:

``--client-id ID`` / ``--client-secret SECRET``
    a client registered in advance; without them the client registers itself (Client ID
    Metadata Document or Dynamic Client Registration). The secret may come from the
    environment variable ``YIEMAGENT_OAUTH_CLIENT_SECRET`` instead (not in shell history).
``--scope SCOPES``
    scopes to ask for (space-separated; repeatable); default: what the server asks for.
``--callback-port PORT``
    the loopback port of the redirect URI ``http://127.0.0.1:PORT/callback`` (default 33419;
    a client registered in advance must have this redirect URI).
``--open-browser``
    also open the login page in a browser (otherwise the URL is printed on stderr only).
``--login-timeout SECONDS``
    how long a login waits for the browser (default 300).
``--token-file FILE``
    where tokens and registered clients are kept (default ``~/.config/yiemagent/tokens.json``,
    ``$XDG_CONFIG_HOME`` if set; mode 0600, see ``yiemagent.mcp.auth.storage_file``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from ..exceptions import ConfigError
from ..mcp.auth.loopback import LoopbackRedirectHandler, check_redirect_uri
from ..mcp.auth.storage_file import FileTokenStorage
from ..mcp.config import MCPServerConfig
from ..mcp.config_auth import make_oauth
from ..textpolicy import register_secrets

__all__ = ["DEFAULT_CALLBACK_PORT", "SECRET_ENV", "add_auth_options", "apply_auth", "check_auth_usage"]

SECRET_ENV = "YIEMAGENT_OAUTH_CLIENT_SECRET"
"""The environment variable ``--client-secret`` falls back to."""
DEFAULT_CALLBACK_PORT = 33419
"""The loopback port of the CLI's redirect URI (fixed: a registered client keeps its redirect URI)."""

_FLAGS = ("client_id", "client_secret", "scope", "token_file")


def add_auth_options(command: argparse.ArgumentParser) -> None:
    """Add ``--auth`` and its flags to a verb's parser."""
    group = command.add_argument_group("OAuth (HTTP servers given as URLs)")
    group.add_argument("--auth", choices=["oauth"], default=None,
                       help="log in to the URL servers with OAuth 2.1 (the browser login of the MCP spec)")
    group.add_argument("--client-id", metavar="ID", help="a client ID registered in advance (default: the "
                       "client registers itself)")
    group.add_argument("--client-secret", metavar="SECRET",
                       help=f"its secret (or set ${SECRET_ENV}, which stays out of shell history)")
    group.add_argument("--scope", action="append", metavar="SCOPES",
                       help="scopes to ask for, space-separated (repeatable; default: what the server asks for)")
    group.add_argument("--callback-port", type=int, default=DEFAULT_CALLBACK_PORT, metavar="PORT",
                       help=f"loopback port of the redirect URI http://127.0.0.1:PORT/callback "
                            f"(default {DEFAULT_CALLBACK_PORT}; 0: any free port)")
    group.add_argument("--open-browser", action="store_true", help="open the login page in a browser too")
    group.add_argument("--login-timeout", type=float, default=300.0, metavar="SECONDS",
                       help="how long a login waits for the browser (default 300)")
    group.add_argument("--token-file", metavar="FILE",
                       help="tokens file (default $XDG_CONFIG_HOME or ~/.config: yiemagent/tokens.json, mode 0600)")


def check_auth_usage(parser: argparse.ArgumentParser, args: argparse.Namespace, urls: Sequence[str]) -> None:
    """Usage errors (exit status 2) before any server starts."""
    given = [f"--{name.replace('_', '-')}" for name in _FLAGS[:3] if getattr(args, name, None)]
    if given and args.auth != "oauth":
        parser.error(f"{', '.join(given)} need(s) --auth oauth")
    if args.auth == "oauth" and not urls:
        parser.error("--auth oauth is for servers given as URLs (a --config entry has its own \"oauth\" settings)")
    if not 0 <= args.callback_port < 65536:
        parser.error(f"--callback-port must be a TCP port (0-65535), not {args.callback_port}")
    if not args.login_timeout > 0:
        parser.error("--login-timeout must be a positive number of seconds")


class _LoginOnDemand:
    """A ``RedirectHandler`` that binds its loopback port only when a login is needed (cached tokens: never)."""

    def __init__(self, port: int, path: str, timeout_seconds: float, open_browser: bool) -> None:
        self._handler: LoopbackRedirectHandler | None = None
        if port == 0:  # the port must be known for the redirect URI: bind now
            self._handler = LoopbackRedirectHandler(0, path=path, timeout_seconds=timeout_seconds,
                                                    open_browser=open_browser)
            port = self._handler.port
        self.port, self.path = port, path
        self.timeout_seconds, self.open_browser = timeout_seconds, open_browser

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    @redirect_uri.setter
    def redirect_uri(self, uri: str) -> None:  # OAuth sets its own: it must be ours
        check_redirect_uri(uri, self.port, self.path)

    def __call__(self, authorization_url: str) -> tuple[str, str | None]:
        if self._handler is None:
            self._handler = LoopbackRedirectHandler(self.port, path=self.path, timeout_seconds=self.timeout_seconds,
                                                    open_browser=self.open_browser)
        return self._handler(authorization_url)


def _handler_for(settings: dict[str, Any], default_port: int, args: argparse.Namespace,
                 made: dict[tuple[int, str], _LoginOnDemand]) -> _LoginOnDemand:
    import urllib.parse

    port, path = settings.get("callback_port", default_port), "/callback"
    if settings.get("redirect_uri"):
        parts = urllib.parse.urlsplit(settings["redirect_uri"])
        port, path = parts.port or port, parts.path or "/"
    key = (port, path)
    if key not in made or port == 0:
        made[key] = _LoginOnDemand(port, path, args.login_timeout, args.open_browser)
    return made[key]


def apply_auth(args: argparse.Namespace, servers: list[MCPServerConfig], url_count: int) -> None:
    """Give each server that logs in its ``OAuth`` (``MCPServerConfig.auth``).

    The first ``url_count`` servers are the command line's URLs (``--auth oauth`` applies to them);
    the others log in when their config entry has OAuth settings. All share one ``FileTokenStorage``.

    Raises:
        ConfigError: the OAuth settings cannot be used.
        RedirectError: ``--callback-port 0`` and no free port.
    """
    from_urls = args.auth == "oauth"
    wanted = [(i < url_count, s) for i, s in enumerate(servers)
              if (i < url_count and from_urls) or (i >= url_count and s.oauth is not None)]
    if not wanted:
        return
    secret = args.client_secret or os.environ.get(SECRET_ENV) or None
    if secret and from_urls:
        register_secrets([secret])
    storage = FileTokenStorage(args.token_file)
    made: dict[tuple[int, str], _LoginOnDemand] = {}
    for from_url, server in wanted:
        if from_url:
            scopes = " ".join(args.scope or []).split()
            settings = {k: v for k, v in (("client_id", args.client_id), ("client_secret", secret),
                                          ("scopes", scopes)) if v}
        else:
            settings = dict(server.oauth or {})
        handler = _handler_for(settings, args.callback_port, args, made)
        try:
            server.auth = make_oauth(settings, storage=storage, redirect_handler=handler,
                                     redirect_uri=handler.redirect_uri)
        except ConfigError as exc:
            raise ConfigError(f"{server.name or server.url}: {exc}") from exc
