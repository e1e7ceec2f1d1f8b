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

import json
from typing import Any

from ...textpolicy import boundary, json_text
from ..limits import DEFAULT_MAX_JSON_DEPTH
from ..lines import parse_line
from .server import INVALID_REQUEST, PARSE_ERROR, error_response

__all__ = ["read_message", "reply_bytes"]


def read_message(raw: bytes, *, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> tuple[Any, dict[str, Any] | None]:
    """``(message, None)`` for one JSON-RPC message object in ``raw``, else ``(None, error response)``."""
    if raw.lstrip().startswith(b"["):
        return None, error_response(None, INVALID_REQUEST, "batches are not accepted (removed in 2025-06-18)")
    try:
        messages = parse_line(raw, max_depth=max_depth)
    except ValueError as exc:
        try:
            json.loads(raw)
        except (ValueError, RecursionError):
            return None, error_response(None, PARSE_ERROR, "parse error: not JSON")
        deep = "nested" in str(exc)
        return None, error_response(None, PARSE_ERROR if deep else INVALID_REQUEST,
                                    "parse error: nested too deeply" if deep else "not a JSON-RPC message object")
    if len(messages) != 1:
        return None, error_response(None, INVALID_REQUEST, "empty message")
    return messages[0], None


@boundary("mcp_server_reply", "json")
def reply_bytes(message: Any) -> bytes:
    """``message`` (a JSON-RPC response or notification) as UTF-8 JSON text, by the ``json`` rule."""
    return json_text(message).encode("utf-8")
