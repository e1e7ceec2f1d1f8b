"""Listing a server's tools page by page (``tools/list`` with ``cursor``/``nextCursor``), with guards.

A page is ``{"tools": [{"name": str, "description"?: str, "inputSchema"?:
{...}, ...}], "nextCursor"?: str}``; paging ends at a page without
``nextCursor`` (or with ``""``). Servers that page forever are cut: paging
stops with a ``YiemagentWarning``, keeping the tools listed so far, on a
repeated cursor, after ``max_pages`` pages, or when ``list_deadline_seconds``
(seconds, for all pages) have passed. Items without a string ``name`` are
skipped and a name listed twice keeps its first tool (both logged at WARNING).

Spec: MCP 2025-11-25, "Tools" (Listing Tools), "Pagination".
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from typing import Any, Protocol

from ..exceptions import MCPTimeoutError, YiemagentWarning

__all__ = ["list_all_tools"]

logger = logging.getLogger("yiemagent.mcp")


class _Client(Protocol):
    """What listing reads of its ``MCPClient`` (the name may change with the first page's handshake)."""

    max_pages: int
    list_deadline_seconds: float

    @property
    def name(self) -> str: ...


def list_all_tools(
    client: _Client, fetch_page: Callable[[Any, float], dict[str, Any]], per_page_seconds: float
) -> list[dict[str, Any]]:
    """Every tool of the server in server order, following ``nextCursor`` through all pages.

    Args:
        client: gives ``max_pages`` (pages followed at most),
            ``list_deadline_seconds`` (seconds all pages may take) and ``name``
            (the server's short name, for logs and the warning).
        fetch_page: ``fetch_page(cursor, timeout_seconds) -> result`` sends one
            ``tools/list`` (``cursor`` None for the first page).
        per_page_seconds: seconds each page request may take; a later page's
            request is cut at the listing deadline, the first page always gets
            all of it.

    Returns:
        The MCP tool objects, de-duplicated by name (the first wins).

    Raises:
        MCPTimeoutError: the first page (or a page asked with time to spare) did not come in time.
        MCPError: whatever ``fetch_page`` raises.

    The warning is attributed to the caller of the caller (``MCPClient.list_tools``'s caller).
    """
    tools: dict[str, dict[str, Any]] = {}
    cursor: Any = None
    seen: set[str] = set()
    deadline = time.monotonic() + client.list_deadline_seconds
    stop_reason = f"has over {client.max_pages} pages"
    for page in range(client.max_pages):
        remaining = deadline - time.monotonic()
        if page and remaining <= 0:
            stop_reason = f"took over {client.list_deadline_seconds:g}s"
            break
        try:
            result = fetch_page(cursor, per_page_seconds if page == 0 else max(min(per_page_seconds, remaining), 0.001))
        except MCPTimeoutError:
            if page == 0 or remaining >= per_page_seconds:
                raise
            stop_reason = f"took over {client.list_deadline_seconds:g}s"
            break
        items = result.get("tools")
        for item in items if isinstance(items, list) else []:
            if not (isinstance(item, dict) and isinstance(item.get("name"), str)):
                logger.warning("%s: tools/list item without a name ignored: %.200r", client.name, item)
            elif item["name"] in tools:
                logger.warning("%s: tools/list lists %r twice; the first is kept", client.name, item["name"])
            else:
                tools[item["name"]] = item
        cursor = result.get("nextCursor")
        if cursor is None or cursor == "":
            break
        key = repr(cursor)
        if key in seen:
            stop_reason = f"repeated cursor {cursor!r}"
            break
        seen.add(key)
    if cursor is not None and cursor != "":
        warnings.warn(f"{client.name}: tools/list {stop_reason}; stopped paging with {len(tools)} tools",
                      YiemagentWarning, stacklevel=3)
    return list(tools.values())
