"""Checking the arguments of ``MCPClient()`` when it is built, before anything connects.

A wrong type or range raises ``ConfigError`` naming the argument (e.g.
``"timeout_seconds must be a number"``), so a typo in a configuration fails
at once instead of at the first request. Seconds are numbers,
``max_pages`` and ``retry_attempts`` integers of at least 1, ``headers`` a
dict of str to str, ``request_handlers`` a dict of method name to callable.
The rules are yiemagent-defined. The per-call checks (``check_timeout``,
``check_call_arguments``, ``string_arguments``) hold the methods' arguments to
the same rules (ConfigError, which is a ValueError), so nothing malformed is
sent to a server. ``check_http_url`` is the one URL check of ``MCPClient`` and
of server configurations (``yiemagent.mcp.config``).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

from .._internal.checks import check_bool, check_callable, check_int, check_number, check_str, check_timeout, one_of
from ..exceptions import ConfigError
from .transport import Transport

__all__ = [
    "HTTP_ONLY_KEYWORDS",
    "check_call_arguments",
    "check_client_arguments",
    "check_http_url",
    "check_timeout",
    "string_arguments",
]

HTTP_ONLY_KEYWORDS = frozenset({"url", "headers", "transport", "connect_timeout_seconds",
                                "follow_cross_origin_redirects", "auth"})
"""Keywords of ``MCPClient()`` that ``MCPClient.stdio()`` does not take (every other one it passes on)."""


def check_http_url(url: Any, where: str = "url") -> str:
    """``url`` if it is an ``http://`` or ``https://`` URL with a host, else ``ConfigError`` naming ``where``.

    Spec: MCP 2025-11-25, "Transports" (Streamable HTTP: an HTTP(S) endpoint).
    """
    if not isinstance(url, str):
        raise ConfigError(f"{where}: a URL must be a string, not {type(url).__name__}")
    try:
        parts = urllib.parse.urlsplit(url.strip())
        host = parts.hostname
    except ValueError as exc:
        raise ConfigError(f"{where}: {url!r:.100} is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise ConfigError(f"{where}: {url!r:.100} is not an http(s):// URL with a host (e.g. "
                          "\"http://127.0.0.1:3001/mcp\"); a stdio server is MCPClient.stdio(command, args)")
    return url


def check_call_arguments(what: str, arguments: Any) -> None:
    """``arguments`` is None or a dict with str keys (a JSON object), else ``ConfigError`` naming ``what``."""
    if arguments is not None and not (isinstance(arguments, Mapping) and all(isinstance(k, str) for k in arguments)):
        raise ConfigError(f"{what} must be a dict of argument name to value (a JSON object) or None, "
                          f"not {type(arguments).__name__} {arguments!r:.60}")


def string_arguments(what: str, arguments: Any) -> dict[str, str]:
    """``{name: value}`` with str values (an int or float becomes its text); else ``ConfigError`` naming ``what``.

    MCP prompt and completion arguments are strings (MCP 2025-11-25, "Prompts",
    ``GetPromptRequest.params.arguments: {[key: string]: string}``): None,
    bool, lists and dicts are refused, never sent as ``"None"``.
    """
    check_call_arguments(what, arguments)
    converted: dict[str, str] = {}
    for key, value in (arguments or {}).items():
        if isinstance(value, str):
            converted[key] = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            converted[key] = str(value)
        else:
            raise ConfigError(f"{what}[{key!r:.40}] must be a string, not {type(value).__name__} {value!r:.40}")
    return converted


def check_client_arguments(args: dict[str, Any]) -> None:
    """``ConfigError`` naming the first argument of ``MCPClient()`` with a wrong type or range.

    ``args`` is ``locals()`` at the start of ``MCPClient.__init__``: every parameter by name.
    """
    check_str("url", args["url"], optional=True)
    if args["url"] and args["transport"] is None:
        check_http_url(args["url"])
    check_str("name", args["name"], optional=True)
    headers = args["headers"]
    if headers is not None and (not isinstance(headers, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items())):
        raise ConfigError(f"headers must be a dict of str to str, not {headers!r:.60}")
    if args["transport"] is not None and not isinstance(args["transport"], Transport):
        raise ConfigError(f"transport must be a Transport, not {type(args['transport']).__name__}")
    for seconds in ("timeout_seconds", "list_deadline_seconds", "connect_timeout_seconds"):
        check_number(seconds, args[seconds])
    check_int("max_pages", args["max_pages"], minimum=1)
    check_int("retry_attempts", args["retry_attempts"], minimum=1)
    check_callable("retry_sleep", args["retry_sleep"], optional=False)
    if args["capabilities"] is not None and not isinstance(args["capabilities"], Mapping):
        raise ConfigError(f"capabilities must be a dict, not {type(args['capabilities']).__name__}")
    handlers = args["request_handlers"]
    if handlers is not None and (not isinstance(handlers, Mapping) or not all(
            isinstance(k, str) and callable(v) for k, v in handlers.items())):
        raise ConfigError(f"request_handlers must be a dict of method name to callable, not {handlers!r:.60}")
    if args["listen"] is not None:  # None: automatic (see MCPClient)
        check_bool("listen", args["listen"])
    callbacks = args.get("callbacks")
    if callbacks is not None and not callable(getattr(callbacks, "install", None)):
        raise ConfigError(f"callbacks must be a ClientCallbacks, not {type(callbacks).__name__}")
    from .era import LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    version = args.get("protocol_version")
    one_of("protocol_version", version, (None, *MODERN_PROTOCOL_VERSIONS, *LEGACY_PROTOCOL_VERSIONS))
    check_number("probe_timeout_seconds", args.get("probe_timeout_seconds", 5.0))
    check_int("max_input_rounds", args.get("max_input_rounds", 8), minimum=0)
    auth = args.get("auth")
    if auth is not None and not (callable(getattr(auth, "headers", None))
                                 and callable(getattr(auth, "handle_unauthorized", None))):
        raise ConfigError(f"auth must be a yiemagent.mcp.auth.OAuth, not {type(auth).__name__}")
