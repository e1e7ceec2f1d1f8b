"""Reading a client's message and writing the server's: the bytes on stdio lines and HTTP bodies.

``read_message(raw)`` decodes one message with the client's reader
(``yiemagent.mcp.lines.parse_line``: UTF-8, strict JSON, bounded nesting) and
returns ``(message, None)``, or ``(None, error response)``: -32700 for what is
not JSON (or too deep), -32600 for JSON that is not one message object (a batch:
JSON-RPC batching was removed in 2025-06-18).

``reply_bytes(message)`` writes every message the server sends (the
``mcp_server_reply`` boundary of ``yiemagent.textpolicy``: the ``json`` rule, so
NaN -> null, a lone surrogate -> U+FFFD, known secrets -> ``***``; no raw control
character or newline; never raises).

Spec: JSON-RPC 2.0 ("Error object"); MCP 2025-11-25 "Transports"; RFC 8259.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from ...textpolicy import boundary, json_text, scrub_secrets
from ..limits import DEFAULT_MAX_JSON_DEPTH
from ..lines import parse_line

__all__ = ["INTERNAL_ERROR", "INVALID_PARAMS", "INVALID_REQUEST", "MAX_CURSOR_CHARS", "MAX_PROGRESS_TOKEN_CHARS",
           "MAX_URI_CHARS", "METHOD_NOT_FOUND", "PARSE_ERROR", "RESOURCE_NOT_FOUND", "Refusal", "bounded_text",
           "error_response", "named", "read_message", "reply_bytes"]

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
"""The JSON-RPC 2.0 error codes."""
RESOURCE_NOT_FOUND = -32002
"""MCP 2025-11-25 "Resources", Error Handling."""
MAX_URI_CHARS = 8192
"""Longest resource URI a client may name (``resources/read``, ``resources/subscribe``, ``unsubscribe``)."""
MAX_CURSOR_CHARS = 64
"""Longest pagination cursor accepted (the server's own are decimal offsets)."""
MAX_PROGRESS_TOKEN_CHARS = 1024
"""Longest string ``params._meta.progressToken``: it is echoed in every progress notification of the call."""


class Refusal(Exception):
    """A request answered with a JSON-RPC error: ``code``, ``message`` (shown to the client) and ``data`` or None."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def response(self, request_id: Any) -> dict[str, Any]:
        """The error response to the request ``request_id``."""
        return error_response(request_id, self.code, self.message, self.data)


def error_response(request_id: Any, code: int, message: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"jsonrpc": "2.0", "id": request_id, "error": {"code", "message", "data"?}}``.

    The message with known secrets ``***``.
    """
    error: dict[str, Any] = {"code": code, "message": scrub_secrets(message)}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def bounded_text(value: Any, field: str, max_chars: int) -> str:
    """``value`` when it is a string of at most ``max_chars`` characters; else ``Refusal`` -32602 naming ``field``."""
    if not isinstance(value, str):
        raise Refusal(INVALID_PARAMS, f"{field} must be a string")
    if len(value) > max_chars:
        raise Refusal(INVALID_PARAMS, f"{field} is longer than {max_chars} characters")
    return value


def named(value: Any, field: str, choices: tuple[str, ...]) -> str:
    """``value`` when it is one of ``choices``; else ``Refusal`` -32602 listing them, with the nearest one."""
    if isinstance(value, str) and value in choices:
        return value
    near = difflib.get_close_matches(value[:100], choices, n=1) if isinstance(value, str) else []
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise Refusal(INVALID_PARAMS, f"{field} must be one of {', '.join(choices)}{hint}")


def read_message(raw: bytes, *, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> tuple[Any, dict[str, Any] | None]:
    """``(message, None)`` for one JSON-RPC message object in ``raw``, else ``(None, error response)``."""
    if raw.lstrip().startswith(b"["):
        return None, error_response(None, INVALID_REQUEST, "batches are not accepted (removed in 2025-06-18)")
    try:
        messages = parse_line(raw, max_depth=max_depth)
    except ValueError as exc:
        if "nested" in str(exc):
            return None, error_response(None, PARSE_ERROR, f"parse error: nested deeper than {max_depth} levels")
        try:
            json.loads(raw)
        except (ValueError, RecursionError):
            return None, error_response(None, PARSE_ERROR, "parse error: not JSON")
        return None, error_response(None, INVALID_REQUEST, "not a JSON-RPC message object")
    if len(messages) != 1:
        return None, error_response(None, INVALID_REQUEST, "empty message")
    return messages[0], None


@boundary("mcp_server_reply", "json")
def reply_bytes(message: Any) -> bytes:
    """``message`` (a JSON-RPC response or notification) as UTF-8 JSON text, by the ``json`` rule."""
    return json_text(message).encode("utf-8")
