"""Checking the arguments of ``MCPClient()`` when it is built, before anything connects.

A wrong type or range raises ``ConfigError`` naming the argument (e.g.
``"timeout_seconds must be a number"``), so a typo in a configuration fails
at once instead of at the first request. Seconds are numbers,
``max_pages`` and ``retry_attempts`` integers of at least 1, ``headers`` a
dict of str to str, ``request_handlers`` a dict of method name to callable.
The rules are yiemagent-defined.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._checks import check_bool, check_callable, check_int, check_number, check_str
from ..exceptions import ConfigError
from .transport import Transport

__all__ = ["check_client_arguments"]


def check_client_arguments(args: dict[str, Any]) -> None:
    """``ConfigError`` naming the first argument of ``MCPClient()`` with a wrong type or range.

    ``args`` is ``locals()`` at the start of ``MCPClient.__init__``: every parameter by name.
    """
    check_str("url", args["url"], optional=True)
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
    if version is not None and version not in MODERN_PROTOCOL_VERSIONS + LEGACY_PROTOCOL_VERSIONS:
        raise ConfigError(f"protocol_version must be None (negotiate) or one of "
                          f"{', '.join(MODERN_PROTOCOL_VERSIONS + LEGACY_PROTOCOL_VERSIONS)}, not {version!r:.40}")
    check_number("probe_timeout_seconds", args.get("probe_timeout_seconds", 5.0))
    check_int("max_input_rounds", args.get("max_input_rounds", 8), minimum=0)
