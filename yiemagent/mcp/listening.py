"""Server messages tied to no request: ``MCPClient``'s handler of them and its listening streams.

``_on_message`` answers a server request or acts on a notification
(``server_messages``), records the ``subscriptions/listen`` acknowledgment and
hands every notification to ``on_notification``. ``listen_for`` opens the
stream that carries them: ``subscriptions/listen`` (2026-07-28, HTTP), or the
standalone ``GET`` stream (handshake era, HTTP); ``start_listening`` is what
``listen=True`` runs after connecting.

``Listening`` is a base class of ``MCPClient``, which sets the attributes it declares.

Spec: MCP 2026-07-28, "Subscriptions"; MCP 2025-11-25, "Streamable HTTP"
("Listening for Messages from the Server").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._internal.checks import check_items
from . import jsonrpc
from .server_messages import ProgressCallback, handle_server_message
from .transport import Transport

__all__ = ["Listening"]

logger = logging.getLogger("yiemagent.mcp")


class Listening:
    """``_on_message``, ``listen_for`` and ``start_listening`` of ``MCPClient`` (see the module docstring)."""

    transport: Transport
    era: str | None
    request_handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]]
    tools_changed: threading.Event
    subscription_acknowledged: dict[str, Any] | None
    listen: bool | None
    initialize_result: dict[str, Any] | None
    _tools_followed_in: str | None
    _progress: dict[str, ProgressCallback]
    _listen_filter: dict[str, Any]
    _on_notification: Callable[[dict[str, Any]], None] | None
    _lock: threading.RLock
    _cancel_generation: int
    _ids: jsonrpc.IdCounter

    if TYPE_CHECKING:  # defined by MCPClient and its base Eras

        @property
        def name(self) -> str:
            """The server's short name (``MCPClient.name``)."""

        def _connect(self, generation: int) -> dict[str, Any]: ...

        def _with_meta(self, params: dict[str, Any] | None) -> dict[str, Any] | None: ...

    def _on_message(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Answer a server request or act on a notification (see ``server_messages``)."""
        reply = handle_server_message(self, self._progress, message)
        if "id" not in message:
            given = message.get("params")
            params: dict[str, Any] = given if isinstance(given, dict) else {}
            if message.get("method") == "notifications/subscriptions/acknowledged":
                self.subscription_acknowledged = dict(params.get("notifications") or {})
            callback = self._on_notification
            if callback is not None:
                try:
                    callback(message)
                except Exception:
                    logger.exception("%s: on_notification raised; ignored", self.name)
        return reply

    def listen_for(
        self,
        *,
        tools_list_changed: bool = True,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_uris: list[str] | tuple[str, ...] = (),
        on_notification: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """Receive the server's change notifications from now on (connecting first if needed).

        The filter grows with each call (what was asked before stays asked).
        2026-07-28 era over HTTP: (re)opens the ``subscriptions/listen``
        stream with the filter (``{"toolsListChanged", "promptsListChanged",
        "resourcesListChanged", "resourceSubscriptions": [uri, ...]}``) on a
        daemon thread; what the server agreed to is ``subscription_acknowledged``
        once its acknowledgment came. Handshake era: opens the standalone
        ``GET`` stream, if not open (resource updates there need
        ``resources/subscribe``); stdio: notifications arrive on the
        process's output anyway, nothing is opened. Returns within about 5 s;
        ``close()`` ends the stream.

        Args:
            tools_list_changed: ``notifications/tools/list_changed`` (sets ``tools_changed``).
            prompts_list_changed: ``notifications/prompts/list_changed``.
            resources_list_changed: ``notifications/resources/list_changed``.
            resource_uris: ``notifications/resources/updated`` for these URIs.
            on_notification: receives every notification the client gets
                (``{"jsonrpc", "method", "params"?}``), on the reading thread;
                replaces an earlier one; one that raises is logged.

        stdio in the 2026-07-28 era: a ``subscriptions/listen`` request whose
        answer is the stream (the notifications come on the process's output).

        A ``subscriptions/listen`` the server refuses (an HTTP error status, or
        an answer that is not SSE) is logged at WARNING naming ``POST
        subscriptions/listen`` and its status (``subscribe_resource`` raises
        ``MCPProtocolError`` for it).

        Raises:
            ConfigError: ``resource_uris`` is one string, not a list of URIs.
            MCPError: connecting failed, or the client is closed (``MCPTransportError``).

        Spec: MCP 2026-07-28, "Subscriptions"; MCP 2025-11-25, "Streamable HTTP" (GET stream).
        """
        uris = tuple(check_items("resource_uris", resource_uris, what="URIs"))
        self._listen_for(tools_list_changed=tools_list_changed, prompts_list_changed=prompts_list_changed,
                         resources_list_changed=resources_list_changed, resource_uris=uris,
                         on_notification=on_notification)

    def _listen_for(
        self, *, tools_list_changed: bool, prompts_list_changed: bool = False,
        resources_list_changed: bool = False, resource_uris: list[str] | tuple[str, ...] = (),
        on_notification: Callable[[dict[str, Any]], None] | None = None,
    ) -> str | None:
        """``listen_for``; returns why the server refused the ``subscriptions/listen`` stream, or None."""
        self._connect(self._cancel_generation)
        if on_notification is not None:
            self._on_notification = on_notification
        with self._lock:
            wanted = dict(self._listen_filter)  # replaced whole (copy on write): _listen_request reads it unlocked
            for key, flag in (("toolsListChanged", tools_list_changed), ("promptsListChanged", prompts_list_changed),
                              ("resourcesListChanged", resources_list_changed)):
                if flag:
                    wanted[key] = True
            uris = [*wanted.get("resourceSubscriptions", []), *(u for u in resource_uris
                                                                if u not in wanted.get("resourceSubscriptions", []))]
            if uris:
                wanted["resourceSubscriptions"] = uris
            self._listen_filter = wanted
        if self.era == "modern":
            subscribe = getattr(self.transport, "subscribe", None)
            if callable(subscribe):
                refusal = subscribe(self._on_message, self._listen_request)
                return refusal if isinstance(refusal, str) else None
            return None
        start = getattr(self.transport, "listen", None)
        listening = getattr(self.transport, "listening", None)
        if callable(start) and not (listening is not None and listening.is_set()):
            start(self._on_message)
        return None

    def _listen_request(self) -> dict[str, Any]:
        """A new ``subscriptions/listen`` request with the current filter (a new id each time).

        Runs on the listener thread, so it takes no lock of the client: the client lock may be held by the
        thread that connects (``listen=True``) while it waits for this stream to open.
        """
        params = {"notifications": dict(self._listen_filter)}  # listen_for replaces the dict, never changes it
        return jsonrpc.make_request("subscriptions/listen", self._with_meta(params), self._ids.next())

    def follow_tool_changes(self) -> bool:
        """Receive ``notifications/tools/list_changed`` from now on, when the server says it sends them.

        ``MCPToolset`` calls it after each listing (an agent depends on its
        tool list). When the server advertised ``capabilities.tools.listChanged``
        and ``listen`` is not False, it opens what carries the notification
        in this era, once per era: 2026-07-28 (HTTP and stdio): a
        ``subscriptions/listen`` stream with ``toolsListChanged`` (``listen_for``;
        the server sends change notifications nowhere else); handshake era
        over HTTP: the standalone ``GET`` stream, unless open; handshake era
        over stdio: nothing (they come on the process's output). Returns
        within about 5 s (an HTTP stream's opening).

        Returns:
            True if the notification is followed (now or already), False when
            the server did not advertise it or ``listen=False``.

        Raises:
            MCPError: connecting failed, or the client is closed (``MCPTransportError``).
        """
        given = (self.initialize_result or {}).get("capabilities")
        tools = given.get("tools") if isinstance(given, dict) else None
        if self.listen is False or not (isinstance(tools, dict) and tools.get("listChanged") is True):
            return False
        with self._lock:
            if self._tools_followed_in == self.era:
                return True
            self._tools_followed_in = self.era
        if self.era == "modern":
            self._listen_for(tools_list_changed=True)
            return True
        start = getattr(self.transport, "listen", None)
        listening = getattr(self.transport, "listening", None)
        if callable(start) and not (listening is not None and listening.is_set()):
            start(self._on_message)
        return True

    def start_listening(self) -> None:
        """Open the transport's stream of server messages tied to no request (``listen=True`` does it).

        Legacy era: the standalone ``GET`` stream (HTTP). Modern era:
        ``subscriptions/listen`` opting in to ``toolsListChanged``
        (``listen_for``). A transport without such a stream: nothing.
        """
        if self.era == "modern":
            self.listen_for(tools_list_changed=True)
            return
        start = getattr(self.transport, "listen", None)
        if callable(start):
            start(self._on_message)

