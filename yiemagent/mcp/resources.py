"""Resources of an MCP server: list (paged), templates, read, subscribe; a mixin of ``MCPClient``.

::

    client.list_resources()            # [{"uri", "name", "title"?, "mimeType"?, ...}, ...]
    client.list_resource_templates()   # [{"uriTemplate", "name", ...}, ...]
    client.read_resource("file:///notes.txt")
    # [{"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "..."}]
    client.subscribe_resource("file:///notes.txt", lambda params: print(params["uri"]))

Listings use the paging guards of ``tool_listing`` (one mechanism for every
list); ``resources/read`` goes through the client's ``_request`` like
``tools/call`` (so whatever the client's protocol era adds applies). Updates
of a subscribed resource (``notifications/resources/updated``) arrive on the
client's listen stream (2025: the ``GET`` stream after ``resources/subscribe``;
2026-07-28: ``subscriptions/listen`` with ``resourceSubscriptions``) and go
to the callback given to ``subscribe_resource`` (``server_messages``
dispatches them here); subscribing opens that stream if needed.

Spec: MCP 2025-11-25, "Server Features" / "Resources" (``resources/list``,
``resources/templates/list``, ``resources/read``, ``resources/subscribe``,
``resources/unsubscribe``, ``notifications/resources/updated``), "Pagination".
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from .._internal.checks import check_callable, check_str, check_timeout
from ..exceptions import MCPProtocolError
from .tool_listing import Listing, list_all

__all__ = ["ResourceUpdatedCallback", "ResourcesMixin"]

logger = logging.getLogger("yiemagent.mcp")

ResourceUpdatedCallback = Callable[[dict[str, Any]], None]
"""Receives the params of each ``notifications/resources/updated`` (``{"uri": str, ...}``)."""

MODERN_VERSIONS = frozenset({"2026-07-28"})
"""Protocol versions without ``resources/subscribe`` (their subscriptions go through ``subscriptions/listen``)."""


class ResourcesMixin:
    """``list_resources``, ``list_resource_templates``, ``read_resource``, ``subscribe_resource`` of ``MCPClient``.

    Uses the client's ``_request(method, params, safe=..., timeout_seconds=...)``,
    ``timeout_seconds``, ``max_pages``, ``list_deadline_seconds``, ``name``,
    ``listen``, ``protocol_version``, ``era``, ``connect``, ``listen_for`` and
    its subscription filter.
    """

    # Provided by MCPClient (declared for type checkers).
    _request: Callable[..., dict[str, Any]]
    timeout_seconds: float
    max_pages: int
    list_deadline_seconds: float
    listen: bool | None
    name: str
    connect: Callable[[], dict[str, Any]]
    listen_for: Callable[..., None]
    _listen_for: Callable[..., str | None]
    _check_open: Callable[[], None]
    _lock: Any
    _listen_filter: dict[str, Any]

    @property
    def protocol_version(self) -> str | None:  # pragma: no cover - MCPClient's own property is used
        """The negotiated protocol version (``MCPClient.protocol_version``)."""
        raise NotImplementedError

    def _list(self, method: str, timeout_seconds: float | None) -> Listing:
        per_page = self.timeout_seconds if timeout_seconds is None else timeout_seconds

        def fetch_page(cursor: Any, timeout: float) -> dict[str, Any]:
            params = {"cursor": cursor} if cursor is not None else None
            return self._request(method, params, safe=True, timeout_seconds=timeout)

        return list_all(self, method, fetch_page, per_page, stacklevel=4)

    def list_resources(self, *, timeout_seconds: float | None = None) -> Listing:
        """Every resource of the server, following ``nextCursor`` with the guards of ``list_tools``.

        Args:
            timeout_seconds: seconds each page request may take; None uses the client's default.

        Returns:
            A ``Listing`` (a list) of resource objects in server order,
            ``{"uri": str, "name": str, "title"?, "description"?, "mimeType"?,
            "size"?, "annotations"?, "icons"?, "_meta"?}``, de-duplicated by
            ``uri``; ``.skipped`` names the items without a string ``uri`` or
            ``name`` (each logged at WARNING, the others kept).

        Raises:
            MCPRPCError: a JSON-RPC error (e.g. -32601 from a server without resources).
            MCPTimeoutError: the first page did not come in time.
            MCPError: the server could not be reached or its reply is unusable.

        Spec: MCP 2025-11-25, "Resources" (Listing Resources), "Pagination".
        """
        return self._list("resources/list", timeout_seconds)

    def list_resource_templates(self, *, timeout_seconds: float | None = None) -> Listing:
        """Every resource template (``{"uriTemplate": str, "name": str, ...}``, RFC 6570), paged as ``list_resources``.

        Raises: as ``list_resources``.

        Spec: MCP 2025-11-25, "Resources" (Resource Templates).
        """
        return self._list("resources/templates/list", timeout_seconds)

    def read_resource(self, uri: str, *, timeout_seconds: float | None = None) -> list[dict[str, Any]]:
        """Read one resource (``resources/read``); safe to repeat, so retried like ``tools/list``.

        Args:
            uri: the resource's URI (from ``list_resources``, a template, or a ``resource_link``).
            timeout_seconds: seconds the request may take; None uses the client's default.

        Returns:
            The ``contents``: ``[{"uri": str, "mimeType"?: str, "text": str}``
            or ``{"uri", "mimeType"?, "blob": <base64 str>}, ...]`` (several
            for a directory-like resource). Items that are neither are
            dropped with a WARNING; ``yiemagent.mcp.resource_part`` turns one
            into a part the model can read.

        Raises:
            ConfigError: ``uri`` is not a non-empty str (nothing is sent).
            MCPRPCError: e.g. ``code`` -32602 (or -32002 on older servers) for an unknown URI
                (also when a 2026-07-28 server sends it in the body of an HTTP 400).
            MCPProtocolError: the result has no ``contents`` list.
            MCPTimeoutError, MCPTransportError: as for every request.

        Spec: MCP 2025-11-25, "Resources" (Reading Resources, Resource Contents).
        """
        check_str("uri", uri, empty=False)
        result = self._request("resources/read", {"uri": uri}, safe=True, timeout_seconds=timeout_seconds)
        contents = result.get("contents")
        if not isinstance(contents, list):
            raise MCPProtocolError(f"{self.name}: resources/read of {uri!r} answered no 'contents' list",
                                   server=self.name, body=repr(result)[:200])
        kept = []
        for item in contents:
            if isinstance(item, dict) and (isinstance(item.get("text"), str) or isinstance(item.get("blob"), str)):
                kept.append(item)
            else:
                logger.warning("%s: resources/read of %r: contents item without text or blob dropped: %.200r",
                               self.name, uri, item)
        return kept

    # ------------------------------------------------------------------ subscriptions

    def _subscriptions(self) -> dict[str, ResourceUpdatedCallback]:
        """``{uri: callback}`` of this client (made on first use; the mixin has no ``__init__``)."""
        found: dict[str, ResourceUpdatedCallback] | None = self.__dict__.get("_resource_callbacks")
        if found is None:
            with _state_lock:
                found = self.__dict__.setdefault("_resource_callbacks", {})
        assert found is not None
        return found

    def subscribe_resource(self, uri: str, on_updated: ResourceUpdatedCallback, *,
                           timeout_seconds: float | None = None) -> None:
        """Ask to be told when ``uri`` changes; ``on_updated(params)`` receives each update.

        The same call in both protocol eras; the server must announce
        ``capabilities.resources.subscribe`` (2026-07-28: in ``server/discover``).
        2025 servers: ``resources/subscribe``
        is sent and the client's listen stream (HTTP: the ``GET`` stream) is
        opened if it is not open. 2026-07-28 servers: the URI is added to the
        ``resourceSubscriptions`` of the client's ``subscriptions/listen``
        stream (``MCPClient.listen_for``), which is (re)opened. Updates
        (``{"uri": str}``, possibly a sub-resource of ``uri``) are delivered on
        the reading thread. A callback that raises is logged, never raised.
        Subscribing again to the same ``uri`` replaces the callback.

        Raises:
            ConfigError: ``uri`` is not a non-empty str, ``on_updated`` not
                callable, ``timeout_seconds`` not a number > 0.
            MCPProtocolError: the server (either era) does not announce
                ``capabilities.resources.subscribe``; or (2026-07-28) it refused
                the ``subscriptions/listen`` stream (HTTP error status, or not
                SSE): the callback is dropped again.
            MCPRPCError, MCPTimeoutError, MCPTransportError: the request failed
                (``MCPTransportError`` also once the client is closed).

        Spec: MCP 2025-11-25, "Resources" (Subscriptions); MCP 2026-07-28, "Subscriptions"
        (``subscriptions/listen``, ``resourceSubscriptions``), "Discovery" (``capabilities``).
        """
        check_str("uri", uri, empty=False)
        check_callable("on_updated", on_updated, optional=False)
        check_timeout(timeout_seconds)
        result = self.connect()
        capabilities = result.get("capabilities") if isinstance(result, dict) else None
        resources = capabilities.get("resources") if isinstance(capabilities, dict) else None
        if not (isinstance(resources, dict) and resources.get("subscribe") is True):
            raise MCPProtocolError(f"{self.name} does not announce resource subscriptions "
                                   "(capabilities.resources.subscribe)", server=self.name)
        if self._modern():
            self._subscriptions()[uri] = on_updated
            refusal = self._listen_for(tools_list_changed=False, resource_uris=[uri])
            if refusal is not None:
                self._subscriptions().pop(uri, None)
                with self._lock:
                    kept = [u for u in self._listen_filter.get("resourceSubscriptions", []) if u != uri]
                    if kept:
                        self._listen_filter["resourceSubscriptions"] = kept
                    else:
                        self._listen_filter.pop("resourceSubscriptions", None)
                raise MCPProtocolError(f"{self.name}: subscribing to {uri!r:.200} failed: {refusal}",
                                       server=self.name)
            return
        self._subscriptions()[uri] = on_updated
        try:
            self._request("resources/subscribe", {"uri": uri}, safe=True, timeout_seconds=timeout_seconds)
        except BaseException:
            self._subscriptions().pop(uri, None)
            raise
        self.listen = True  # the stream is reopened after a new handshake too
        self.listen_for(tools_list_changed=False)  # opens the GET stream if it is not open

    def unsubscribe_resource(self, uri: str, *, timeout_seconds: float | None = None) -> None:
        """Stop the updates of ``uri``; its callback is dropped first.

        2025 servers: ``resources/unsubscribe``. 2026-07-28 servers: the URI
        leaves the ``resourceSubscriptions`` filter and the listen stream is
        reopened with the rest.

        Raises:
            ConfigError: ``uri`` is not a str, ``timeout_seconds`` not a number > 0.
            MCPRPCError, MCPTimeoutError, MCPTransportError: the request failed
            (the callback is dropped all the same; ``MCPTransportError`` once the client is closed).

        Spec: MCP 2025-11-25, "Resources" (Subscriptions); MCP 2026-07-28, "Subscriptions".
        """
        check_str("uri", uri)
        check_timeout(timeout_seconds)
        self._check_open()
        self._subscriptions().pop(uri, None)
        if not self._modern():
            self._request("resources/unsubscribe", {"uri": uri}, safe=True, timeout_seconds=timeout_seconds)
            return
        with self._lock:
            wanted = self._listen_filter
            kept = [u for u in wanted.get("resourceSubscriptions", []) if u != uri]
            if kept:
                wanted["resourceSubscriptions"] = kept
            else:
                wanted.pop("resourceSubscriptions", None)
        self.listen_for(tools_list_changed=False)  # reopens the stream with the smaller filter

    def _modern(self) -> bool:
        """True when the session speaks a revision whose subscriptions go through ``subscriptions/listen``."""
        return getattr(self, "era", None) == "modern" or self.protocol_version in MODERN_VERSIONS

    def _on_resource_updated(self, params: dict[str, Any]) -> None:
        """Deliver one ``notifications/resources/updated`` to the callbacks whose URI it names or lies under."""
        uri = params.get("uri")
        if not isinstance(uri, str):
            return
        for subscribed, callback in list(self._subscriptions().items()):
            if uri == subscribed or uri.startswith(subscribed.rstrip("/") + "/"):
                try:
                    callback(params)
                except Exception:
                    logger.exception("%s: the callback of resource %r raised; ignored", self.name, subscribed)


_state_lock = threading.Lock()
