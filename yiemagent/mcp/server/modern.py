"""The 2026-07-28 era on the server: which requests are in it, the checks they pass, how results look.

One app serves both eras; each request is placed by ``request_era(message,
headers)`` (as the SDK's dual-era servers do, header first):

- an ``MCP-Protocol-Version`` header naming a handshake version (2025-11-25 and
  earlier) -> legacy (sessions, ``initialize``); any other value -> modern (an
  unknown one is then refused -32022 with the versions supported);
- no header (stdio, or a client of 2025-03-26 that sends none): modern when
  ``params._meta`` carries ``io.modelcontextprotocol/protocolVersion`` or the
  method is ``server/discover``, else legacy.

``check_request`` runs the checks a modern request must pass, first failure
wins (the SDK's order): ``params._meta`` with ``protocolVersion`` and
``clientCapabilities`` (-32602); over HTTP the headers: ``MCP-Protocol-Version``
equal to the ``_meta`` version, ``Mcp-Method`` equal to the method, ``Mcp-Name``
equal to ``params.name`` (``tools/call``, ``prompts/get``) or ``params.uri``
(``resources/read``), and for ``tools/call`` each ``Mcp-Param-<Name>`` of the
tool's ``x-mcp-header`` properties equal to the argument (a value in the body
with no header, a header with no value, a mismatch or invalid Base64: -32020
HeaderMismatch); header values are compared after dropping surrounding
whitespace and decoding ``=?base64?...?=`` (``http_headers.decode_header_value``),
header names case-insensitively, values case-sensitively; then the version must
be one this server speaks (-32022, ``data: {"supported", "requested"}``).

``REMOVED_METHODS`` (``initialize``, ``ping``, ``logging/setLevel``,
``resources/subscribe``, ``resources/unsubscribe``) do not exist in the modern
era: -32601. ``http_status`` maps a modern reply to its HTTP status (as the SDK's
table): -32700, -32600, -32602, -32020, -32021, -32022 -> 400; -32601 -> 404;
anything else 200. ``finish_result`` completes a modern result: ``resultType``
(``"complete"`` unless set), ``_meta["io.modelcontextprotocol/serverInfo"]``,
and on ``server/discover``, ``tools/list``, ``prompts/list``,
``resources/list``, ``resources/templates/list`` and ``resources/read`` the
caching hints ``ttlMs`` and ``cacheScope``.

Spec: MCP 2026-07-28, "Versioning and Compatibility", "Discovery", "Base
Protocol" (``_meta``, ``resultType``, error codes), "Transports" (Streamable
HTTP: Request Metadata, Server Validation, Value Encoding, status codes),
"Caching" (SEP-2549).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..era import (
    LEGACY_PROTOCOL_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MODERN_PROTOCOL_VERSIONS,
)
from ..http_headers import decode_header_value, header_paths, param_headers
from ..jsonrpc import HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION
from .calls import LOG_LEVELS, ModernRequest
from .wire import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, Refusal, named

__all__ = ["CACHEABLE_METHODS", "META_LOG_LEVEL", "REMOVED_METHODS", "check_request", "finish_result", "http_status",
           "request_era"]

META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
REMOVED_METHODS = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})
"""Methods of the handshake era that the modern era removed."""
CACHEABLE_METHODS = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list",
                               "resources/templates/list", "resources/read"})
"""Results that carry ``ttlMs`` and ``cacheScope``."""
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_STATUS = {PARSE_ERROR: 400, INVALID_REQUEST: 400, INVALID_PARAMS: 400, HEADER_MISMATCH: 400,
           MISSING_REQUIRED_CLIENT_CAPABILITY: 400, UNSUPPORTED_PROTOCOL_VERSION: 400, METHOD_NOT_FOUND: 404}


def request_era(message: Any, headers: Mapping[str, str] | None) -> str:
    """``"modern"`` or ``"legacy"`` for one decoded message (see the module docstring)."""
    version = headers.get("mcp-protocol-version") if headers is not None else None
    if version is not None:
        return "legacy" if version.strip() in LEGACY_PROTOCOL_VERSIONS else "modern"
    if not isinstance(message, dict):
        return "legacy"
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict) and META_PROTOCOL_VERSION in meta:
        return "modern"
    return "modern" if message.get("method") == "server/discover" else "legacy"


def http_status(reply: dict[str, Any] | None) -> int:
    """The HTTP status of a modern reply (200 for a result)."""
    error = reply.get("error") if reply is not None else None
    code = error.get("code") if isinstance(error, dict) else None
    return _STATUS.get(code, 200) if isinstance(code, int) else 200


def _mismatch(text: str) -> Refusal:
    return Refusal(HEADER_MISMATCH, f"Header mismatch: {text}")


def _check_headers(method: str, params: dict[str, Any], version: Any, headers: Mapping[str, str],
                   input_schema_of: Callable[[str], dict[str, Any] | None]) -> None:
    header_version = headers.get("mcp-protocol-version")
    if header_version is None or header_version.strip() != version:
        raise _mismatch("MCP-Protocol-Version does not match params._meta's io.modelcontextprotocol/protocolVersion")
    if (headers.get("mcp-method") or "").strip(" \t") != method:
        raise _mismatch("Mcp-Method is missing or does not match the method")
    field = _NAMED.get(method)
    if field is not None and field in params:
        given = headers.get("mcp-name")
        try:
            name = decode_header_value(given) if given is not None else None
        except ValueError:
            name = None
        if name is None or name != params[field]:
            raise _mismatch(f"Mcp-Name is missing or does not match params.{field}")
    if method != "tools/call" or not isinstance(params.get("name"), str):
        return
    schema = input_schema_of(params["name"])
    if schema is None:
        return
    paths = header_paths(schema)
    expected = param_headers(paths, params.get("arguments") or {})
    for _path, name in paths:
        header = f"mcp-param-{name.lower()}"
        given = headers.get(header)
        want = expected.get(f"Mcp-Param-{name}")
        if given is None and want is None:
            continue
        if given is None or want is None:
            raise _mismatch(f"Mcp-Param-{name} must be sent exactly when the argument has a value")
        try:
            same = decode_header_value(given) == decode_header_value(want)
        except ValueError:
            raise _mismatch(f"Mcp-Param-{name} is not valid Base64") from None
        if not same:
            raise _mismatch(f"Mcp-Param-{name} does not match the argument")


def check_request(message: dict[str, Any], headers: Mapping[str, str] | None,
                  input_schema_of: Callable[[str], dict[str, Any] | None]) -> ModernRequest:
    """Check a modern request (see the module docstring); return what its ``_meta`` says of the client.

    Args:
        message: the request (a dict with a string ``method``).
        headers: lower-case header names -> values, or None off HTTP (no header checks).
        input_schema_of: a tool's ``inputSchema`` by name, or None (for the ``Mcp-Param-*`` checks).

    Raises:
        Refusal: -32602, -32020 or -32022 as the module docstring says.
    """
    method = str(message.get("method"))
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise Refusal(INVALID_PARAMS, f"params._meta must be an object with {META_PROTOCOL_VERSION} and "
                                      f"{META_CLIENT_CAPABILITIES}")
    missing = [key for key in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if key not in meta]
    if missing:
        raise Refusal(INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}")
    version, capabilities = meta[META_PROTOCOL_VERSION], meta[META_CLIENT_CAPABILITIES]
    if not isinstance(capabilities, dict):
        raise Refusal(INVALID_PARAMS, f"params._meta {META_CLIENT_CAPABILITIES} must be an object")
    assert isinstance(params, dict)
    if headers is not None:
        _check_headers(method, params, version, headers, input_schema_of)
    if not isinstance(version, str):
        raise Refusal(INVALID_PARAMS, f"params._meta {META_PROTOCOL_VERSION} must be a string")
    if version not in MODERN_PROTOCOL_VERSIONS:
        raise Refusal(UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version: {version!r:.60}",
                      {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": version[:200]})
    info, level = meta.get(META_CLIENT_INFO), meta.get(META_LOG_LEVEL)
    if level is not None:  # given: one of the levels, else refused with the nearest (fail closed)
        level = named(level, f"params._meta {META_LOG_LEVEL}", tuple(LOG_LEVELS))
    return ModernRequest(version, capabilities, info if isinstance(info, dict) else {}, level)


def finish_result(method: str, result: dict[str, Any], server_info: dict[str, str], ttl_ms: int,
                  cache_scope: str) -> dict[str, Any]:
    """``result`` completed for the modern era (see the module docstring); a new dict."""
    done = dict(result)
    done.setdefault("resultType", "complete")
    meta = done.get("_meta")
    done["_meta"] = {**(meta if isinstance(meta, dict) else {}), META_SERVER_INFO: dict(server_info)}
    if method in CACHEABLE_METHODS and done["resultType"] == "complete":
        done.setdefault("ttlMs", ttl_ms)
        done.setdefault("cacheScope", cache_scope)
    return done
