"""Listing a server's tools, resources, resource templates or prompts page by page, with guards.

One mechanism for every paged list of MCP (``tools/list``, ``resources/list``,
``resources/templates/list``, ``prompts/list``): a page is ``{"<key>": [...],
"nextCursor"?: str}``; paging ends at a page without ``nextCursor`` (or with
``""``). Servers that page forever are cut: paging stops with a
``YiemagentWarning``, keeping the items listed so far, on a repeated cursor,
after ``max_pages`` pages, or when ``list_deadline_seconds`` (seconds, for all
pages) have passed. An item that is not well formed (no string ``name``; a
resource without ``uri``...) is skipped with a WARNING and kept in the
listing's ``skipped``; the others stay usable (one malformed item never hides
the rest). An identity listed twice keeps its first item (logged at WARNING).

Spec: MCP 2025-11-25, "Tools" (Listing Tools), "Resources", "Prompts", "Pagination".
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from typing import Any, Protocol

from ..exceptions import MCPTimeoutError, YiemagentWarning

__all__ = ["LISTINGS", "Listing", "list_all", "list_all_tools"]

logger = logging.getLogger("yiemagent.mcp")


class _Client(Protocol):
    """What listing reads of its ``MCPClient`` (the name may change with the first page's handshake)."""

    max_pages: int
    list_deadline_seconds: float

    @property
    def name(self) -> str: ...




class Listing(list[dict[str, Any]]):
    """The items of a paged listing (a ``list``), plus ``skipped``: ``[{"item": str, "reason": str}]``.

    ``item`` names the malformed item (its name, URI, or its first 100 characters of ``repr``).
    """

    skipped: list[dict[str, str]]

    def __init__(self, items: list[dict[str, Any]] = (), skipped: list[dict[str, str]] | None = None) -> None:  # type: ignore[assignment]
        super().__init__(items)
        self.skipped = list(skipped or [])


def _text(item: dict[str, Any], key: str) -> str | None:
    """Why ``item[key]`` is unusable (None: a non-empty string)."""
    value = item.get(key)
    return None if isinstance(value, str) and value else f"no string {key!r}"


def _prompt_problem(item: dict[str, Any]) -> str | None:
    arguments = item.get("arguments")
    if arguments is not None and not (isinstance(arguments, list) and all(
            isinstance(a, dict) and isinstance(a.get("name"), str) for a in arguments)):
        return "'arguments' is not a list of {name, ...} objects"
    return _text(item, "name")


LISTINGS: dict[str, tuple[str, str, Callable[[dict[str, Any]], str | None]]] = {
    "tools/list": ("tools", "name", lambda item: _text(item, "name")),
    "resources/list": ("resources", "uri", lambda item: _text(item, "uri") or _text(item, "name")),
    "resources/templates/list": ("resourceTemplates", "uriTemplate",
                                 lambda item: _text(item, "uriTemplate") or _text(item, "name")),
    "prompts/list": ("prompts", "name", _prompt_problem),
}
"""``{method: (result key, identity field, problem(item) -> reason or None)}`` (MCP 2025-11-25 schema)."""


def list_all(
    client: _Client, method: str, fetch_page: Callable[[Any, float], dict[str, Any]], per_page_seconds: float,
    *, stacklevel: int = 3,
) -> Listing:
    """Follow ``nextCursor`` through every page of ``method`` (one of ``LISTINGS``).

    Args:
        client: its ``max_pages``, ``list_deadline_seconds`` and ``name`` (for the log).
        method: ``"tools/list"``, ``"resources/list"``, ``"resources/templates/list"`` or ``"prompts/list"``.
        fetch_page: ``fetch_page(cursor, timeout_seconds) -> result`` sends one
            request (``cursor`` None for the first page).
        per_page_seconds: seconds each page request may take; a later page's
            request is cut at the listing deadline, the first page always gets
            all of it.
        stacklevel: ``warnings.warn`` stack level of the paging warning (3:
            the caller of the function that called ``list_all``).

    Returns:
        A ``Listing`` of the well-formed items, de-duplicated by identity
        (the first wins), with ``skipped`` naming the malformed ones.

    Raises:
        MCPTimeoutError: the first page (or a page asked with time to spare) did not come in time.
        MCPError: whatever ``fetch_page`` raises.

    """
    key, identity, problem = LISTINGS[method]
    items: dict[str, dict[str, Any]] = {}
    skipped: list[dict[str, str]] = []
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
        found = result.get(key)
        for item in found if isinstance(found, list) else []:
            reason = problem(item) if isinstance(item, dict) else "not an object"
            if reason is not None:
                label = item.get("name") or item.get(identity) if isinstance(item, dict) else None
                label = str(label)[:100] if isinstance(label, str) and label else repr(item)[:100]
                logger.warning("%s: %s item skipped (%s): %.200r", client.name, method, reason, item)
                skipped.append({"item": label, "reason": reason})
            elif item[identity] in items:
                logger.warning("%s: %s lists %r twice; the first is kept", client.name, method, item[identity])
            else:
                items[item[identity]] = item
        cursor = result.get("nextCursor")
        if cursor is None or cursor == "":
            break
        cursor_key = repr(cursor)
        if cursor_key in seen:
            stop_reason = f"repeated cursor {cursor!r}"
            break
        seen.add(cursor_key)
    if cursor is not None and cursor != "":
        warnings.warn(f"{client.name}: {method} {stop_reason}; stopped paging with {len(items)} {key}",
                      YiemagentWarning, stacklevel=stacklevel)
    return Listing(list(items.values()), skipped)


def list_all_tools(
    client: _Client, fetch_page: Callable[[Any, float], dict[str, Any]], per_page_seconds: float
) -> Listing:
    """``list_all(client, "tools/list", ...)``: every tool object, de-duplicated by name (the first wins)."""
    return list_all(client, "tools/list", fetch_page, per_page_seconds, stacklevel=4)
