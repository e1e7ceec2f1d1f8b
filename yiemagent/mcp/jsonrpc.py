"""JSON-RPC 2.0 envelopes: building requests and notifications, reading responses.

Shapes::

    request       {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {...}}
    notification  {"jsonrpc": "2.0", "method": "notifications/initialized"}
    response      {"jsonrpc": "2.0", "id": 7, "result": {...}}
                  {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "...", "data": ...}}

Spec: JSON-RPC 2.0; MCP 2025-11-25 "Base Protocol".
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from .._internal.jsonload import loads_bounded
from ..exceptions import MCPProtocolError, MCPRPCError

__all__ = [
    "HEADER_MISMATCH",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "MODERN_ERROR_CODES",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "IdCounter",
    "error_in_body",
    "is_notification",
    "is_request",
    "is_response",
    "make_notification",
    "make_request",
    "make_response",
    "result_of",
]


HEADER_MISMATCH = -32020
"""MCP 2026-07-28: the HTTP headers do not match the body, or a required header is missing."""
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
"""MCP 2026-07-28: the request needs a client capability the client did not declare."""
UNSUPPORTED_PROTOCOL_VERSION = -32022
"""MCP 2026-07-28: the server does not speak the requested version; ``data`` is ``{"supported", "requested"}``."""
MODERN_ERROR_CODES = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})
"""The error codes only a 2026-07-28 (modern) server sends: one of them identifies a modern server."""


def error_in_body(text: str) -> dict[str, Any] | None:
    """The ``error`` object of an HTTP error body that is a JSON-RPC error response, or None."""
    try:
        payload = loads_bounded(text)
    except ValueError:
        return None
    error = payload.get("error") if isinstance(payload, dict) and payload.get("jsonrpc") == "2.0" else None
    if isinstance(error, dict) and isinstance(error.get("code"), int) and not isinstance(error.get("code"), bool):
        return error
    return None


def answered_in_body(text: str) -> bool:
    """True when an HTTP error body is a JSON-RPC error response with a non-null ``id``.

    The server read the request and answered it (e.g. the ``mcp`` SDK sends a tool's own JSON-RPC
    error -32602 with HTTP 400 in the 2026-07-28 era), so the request may have run. A server refusing a
    request before reading it (no session, a version it does not speak) answers ``id: null`` or no
    JSON-RPC at all.
    """
    if error_in_body(text) is None:
        return False
    request_id = loads_bounded(text).get("id")
    return isinstance(request_id, (str, int)) and not isinstance(request_id, bool)


class IdCounter:
    """Thread-safe increasing integer ids starting at 1."""

    def __init__(self) -> None:
        self._count = itertools.count(1)
        self._lock = threading.Lock()

    def next(self) -> int:
        """The next id."""
        with self._lock:
            return next(self._count)


def make_request(method: str, params: dict[str, Any] | None, request_id: int | str) -> dict[str, Any]:
    """A request envelope (``params`` left out when None)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def make_notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A notification envelope (no id; no answer expected)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def make_response(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    """A success response to a server's request (e.g. ``ping`` -> ``{}``)."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def is_response(message: Any) -> bool:
    """True for ``{"id", "result"}`` or ``{"id", "error"}``."""
    return isinstance(message, dict) and "id" in message and ("result" in message or "error" in message)


def is_request(message: Any) -> bool:
    """True for a message with ``method`` and ``id`` (the server asks us something)."""
    return isinstance(message, dict) and "method" in message and "id" in message


def is_notification(message: Any) -> bool:
    """True for a message with ``method`` and no ``id``."""
    return isinstance(message, dict) and "method" in message and "id" not in message


def result_of(message: Any, *, server: str = "") -> dict[str, Any]:
    """The ``result`` of a response.

    Raises:
        MCPRPCError: the response carries an ``error`` object (``.code``, ``.message``, ``.data``).
        MCPProtocolError: the message is not a response, or ``result`` is not an object.
    """
    if not is_response(message):
        raise MCPProtocolError(f"not a JSON-RPC response: {message!r:.200}", server=server)
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict):
            raise MCPProtocolError(f"JSON-RPC error member is not an object: {error!r:.200}", server=server)
        raise MCPRPCError.from_error(error, server=server)
    result = message["result"]
    if not isinstance(result, dict):
        raise MCPProtocolError(f"JSON-RPC result is not an object: {result!r:.200}", server=server)
    return result
