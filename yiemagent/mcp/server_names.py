"""Short names for MCP servers (errors, events, tool prefixes), as ``[a-zA-Z0-9_-]``, at most 40 characters.

``default_server_name(url)`` names a Streamable HTTP server by its URL (host,
port, path); ``server_info_name(info)`` names a server by the ``serverInfo``
of its ``initialize`` result (what ``MCPClient`` uses for a stdio server).

Spec: MCP 2025-11-25, "Lifecycle" (``serverInfo``); the names are yiemagent-defined.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

__all__ = ["default_server_name", "server_info_name"]


def default_server_name(url: str) -> str:
    """A short, stable name for the server at ``url``: host, port and path, as ``[a-zA-Z0-9_-]``.

    A last path segment ``mcp`` (or ``sse``) is left out, as are the scheme,
    user, password, query and fragment; at most 40 characters.

    Example::

        default_server_name("http://127.0.0.1:3001/mcp")                   # '127_0_0_1_3001'
        default_server_name("https://tools.example.com/weather/mcp?k=1")   # 'tools_example_com_weather'
    """
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: leave it out
        port = None
    segments = [segment for segment in parts.path.split("/") if segment]
    if segments and segments[-1].lower() in ("mcp", "sse"):
        segments.pop()
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address: "::1" would become "1"
        host = "ipv6_" + host.replace(":", "_")
    pieces = [host, str(port) if port is not None else "", *segments]
    name = re.sub(r"[^a-zA-Z0-9-]+", "_", "_".join(p for p in pieces if p)).strip("_")
    return name[:40].rstrip("_") or "mcp"


def server_info_name(info: Any) -> str | None:
    """A short name from ``serverInfo.name`` as ``[a-zA-Z0-9_-]``, at most 40 characters; None if unusable.

    Example: ``"mcp-servers/everything"`` -> ``"mcp-servers_everything"``.
    """
    raw = info.get("name") if isinstance(info, dict) else None
    if not isinstance(raw, str):
        return None
    return re.sub(r"[^a-zA-Z0-9-]+", "_", raw[:200]).strip("_")[:40].rstrip("_") or None
