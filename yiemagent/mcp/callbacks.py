"""``ClientCallbacks``: sampling, elicitation and roots for ``MCPClient`` as plain sync callbacks.

::

    callbacks = ClientCallbacks(
        sampling=LLMSampler(llm_call),             # sampling/createMessage by your model
        elicitation=ask_form,                      # (server_name, request) -> {"action", "content"?}
        url_elicitation=ask_url,                   # the same, for mode "url"
        roots=["/home/me/project"],                # roots/list -> file:// URIs
    )
    client = MCPClient(url, callbacks=callbacks)

``install(client)`` (``MCPClient`` calls it) adds to the client's
``capabilities`` what exists (``sampling``, with ``tools`` when the sampler
takes tools; ``elicitation`` with ``form`` and/or ``url``; ``roots``) and to
its ``request_handlers`` the matching methods, each a
``handler(params) -> result`` bound to the client's name: the same handlers
answer server requests (2025-11-25 and older) and ``inputRequests``
(2026-07-28). A handler already in ``request_handlers`` is kept (it wins).
Time spent in a callback never counts against a request's timeout
(``server_messages.answer_server_request``).

Abort: ``cancel_in_flight()``, ``close()`` and ``Agent.abort()`` end a
request whose callback is still running at once (``MCPTransportError``);
the callback's own thread cannot be stopped, so a callback that takes an
``abort_event`` keyword (``callback(server_name, params, *,
abort_event)``, or ``**kwargs``) gets a ``threading.Event`` that is set then,
and should return soon after; its late answer is dropped. A callback that
never returns holds only its own thread, never the client or the agent.
A callback that raises: the server (handshake era) is told only the
exception's type; ``MCPCallbackError`` (``__cause__`` = the exception) in
2026-07-28 (``server_messages.answer_server_request``).

Roots: a list of paths (a bare ``str``/``PathLike``/dict is refused with
``ConfigError``: it would be read one character at a time); each path
(``str`` or ``os.PathLike``) is made absolute and written
with ``pathlib.Path.as_uri()`` (percent-encoded: spaces, ``#``, non-ASCII;
``file:///C:/...`` on Windows), named after its last part; a dict
``{"uri", "name"?}`` is sent as it is; a callable returning such a list is
asked on every ``roots/list``. ``set_roots(new)`` replaces them and tells
every connected server of the handshake era
(``notifications/roots/list_changed``; the capability says
``{"listChanged": true}``); 2026-07-28 has no such notification (servers
ask ``roots/list`` each time).

Spec: MCP 2025-11-25 "Client Features" (Roots, Sampling, Elicitation),
"Lifecycle" (capabilities); 2026-07-28 the same in ``inputRequests``.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Union

from .._internal.checks import check_items
from ..exceptions import ConfigError, MCPError
from . import jsonrpc
from .elicitation import ElicitationHandler, answer_elicitation
from .sampling import LLMSampler
from .server_messages import call_with_abort

__all__ = ["ClientCallbacks", "Root", "SamplingHandler", "roots_result"]

logger = logging.getLogger("yiemagent.mcp")

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Protocol versions with ``notifications/roots/list_changed`` (the handshake era)."""

SamplingHandler = Callable[[str, dict[str, Any]], dict[str, Any]]
"""``sampler(server_name, params) -> CreateMessageResult``; ``LLMSampler`` is one."""

Root = Union[str, "os.PathLike[str]", dict[str, Any]]
"""A path, or ``{"uri": "file:///...", "name"?: str}``."""


class _Client(Protocol):
    capabilities: dict[str, Any]
    request_handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]]
    transport: Any

    @property
    def name(self) -> str: ...

    @property
    def protocol_version(self) -> str | None: ...


def _root(item: Root) -> dict[str, Any]:
    if isinstance(item, dict):
        if not isinstance(item.get("uri"), str) or not item["uri"].startswith("file://"):
            raise ConfigError(f"a root needs a file:// uri, not {item.get('uri')!r:.80}")
        return dict(item)
    text = os.fspath(item) if isinstance(item, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise ConfigError(f"a root must be a path (str or os.PathLike of str) or a {{'uri': 'file://...'}} dict, "
                          f"not {type(item).__name__} {item!r:.60}")
    path = Path(text).expanduser().absolute()
    return {"uri": path.as_uri(), "name": path.name or str(path)}


def roots_result(roots: Iterable[Root] | Callable[[], Iterable[Root]]) -> dict[str, Any]:
    """``ListRootsResult``: ``{"roots": [{"uri": "file:///...", "name": str}, ...]}`` (see the module).

    Raises:
        ConfigError: (a ``ValueError``) ``roots`` (or what the callable gave)
            is a single ``str``/``bytes``/``PathLike``/dict instead of a list,
            an item is neither a path nor a dict, a dict root has no
            ``file://`` uri.
    """
    items = roots() if callable(roots) else roots
    return {"roots": [_root(item) for item in check_items("roots", items, what="paths")]}


@dataclass
class ClientCallbacks:
    """What a client answers when a server asks (see the module).

    Attributes:
        sampling: ``sampler(server_name, params) -> CreateMessageResult``, e.g.
            ``LLMSampler(llm_call, approve=...)``; None: no ``sampling``
            capability (the server cannot sample).
        elicitation: the form-mode handler, ``(server_name, request) ->
            {"action", "content"?}`` (``yiemagent.mcp.elicitation``).
        url_elicitation: the URL-mode handler (same shape; it must show the
            URL and ask, never open it by itself).
        roots: paths, ``{"uri", "name"?}`` dicts, or a callable giving them.
        sampling_tools: declare ``sampling.tools``; None follows the sampler
            (an ``LLMSampler``'s ``tools``; False for other callables).
    """

    sampling: SamplingHandler | None = None
    elicitation: ElicitationHandler | None = None
    url_elicitation: ElicitationHandler | None = None
    roots: Iterable[Root] | Callable[[], Iterable[Root]] | None = None
    sampling_tools: bool | None = None
    _clients: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet, init=False, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("sampling", "elicitation", "url_elicitation"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise TypeError(f"{name} must be callable: {name}(server_name, params) -> result")
        if self.roots is not None and not callable(self.roots):
            self.roots = check_items("roots", self.roots, what="paths")  # roots="/tmp/p" would be 6 roots
            roots_result(self.roots)  # a bad root fails here, not at the server's first roots/list

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities these callbacks declare, e.g. ``{"sampling": {"tools": {}}, "roots": {}}``."""
        capabilities: dict[str, Any] = {}
        if self.sampling is not None:
            tools = self.sampling_tools
            if tools is None:
                tools = bool(self.sampling.tools) if isinstance(self.sampling, LLMSampler) else False
            capabilities["sampling"] = {"tools": {}} if tools else {}
        pairs = (("form", self.elicitation), ("url", self.url_elicitation))
        modes: dict[str, Any] = {mode: {} for mode, handler in pairs if handler is not None}
        if modes:
            capabilities["elicitation"] = modes
        if self.roots is not None:
            capabilities["roots"] = {"listChanged": True}
        return capabilities

    def request_handlers(self, server_name: Callable[[], str]) -> dict[str, Callable[[dict[str, Any]], Any]]:
        """``{method: handler(params) -> result}`` for the callbacks set; ``server_name()`` names the server."""
        handlers: dict[str, Callable[..., Any]] = {}
        sampler = self.sampling
        if sampler is not None:
            def sample(params: dict[str, Any], abort_event: threading.Event | None = None) -> Any:
                return call_with_abort(sampler, server_name(), params, abort_event=abort_event)

            handlers["sampling/createMessage"] = sample
        modes = {mode: handler for mode, handler in (("form", self.elicitation), ("url", self.url_elicitation))
                 if handler is not None}
        if modes:
            def elicit(params: dict[str, Any], abort_event: threading.Event | None = None) -> Any:
                return answer_elicitation(modes, server_name(), params, abort_event=abort_event)

            handlers["elicitation/create"] = elicit
        if self.roots is not None:
            handlers["roots/list"] = lambda params: roots_result(self.roots or [])
        return handlers

    def install(self, client: _Client) -> None:
        """Add the capabilities and handlers to ``client`` (handlers it already has win)."""
        for key, value in self.capabilities().items():
            client.capabilities.setdefault(key, value)
        for method, handler in self.request_handlers(lambda: client.name).items():
            client.request_handlers.setdefault(method, handler)
        with self._lock:
            self._clients.add(client)

    def set_roots(self, roots: Iterable[Root] | Callable[[], Iterable[Root]]) -> int:
        """Replace the roots and send ``notifications/roots/list_changed`` to every connected client.

        Only clients connected in the handshake era get it (2026-07-28 has
        none); a client not connected yet declares the new roots when it
        connects. A failed send is logged, never raised.

        Returns:
            How many servers were told.

        Raises:
            ConfigError: (a ``ValueError``) a single ``str``/``PathLike``/dict
                instead of a list (``set_roots(["/tmp/b"])``), an item that is
                not a path, a dict root without a ``file://`` uri (nothing changed).
        """
        new = roots if callable(roots) else check_items("set_roots(roots)", roots, what="paths")
        if not callable(new):
            roots_result(new)
        self.roots = new
        with self._lock:
            clients = list(self._clients)
        told = 0
        for client in clients:
            if client.protocol_version not in HANDSHAKE_VERSIONS:
                continue
            try:
                client.transport.send(jsonrpc.make_notification("notifications/roots/list_changed"))
                told += 1
            except MCPError as exc:
                logger.warning("%s: could not send notifications/roots/list_changed: %s", client.name, exc)
        return told
