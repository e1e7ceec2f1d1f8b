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

from ..exceptions import MCPProtocolError, MCPRPCError

__all__ = [
    "IdCounter",
    "is_notification",
    "is_request",
    "is_response",
    "make_notification",
    "make_request",
    "make_response",
    "result_of",
]


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
