"""What ``MCPClient`` does with a message the server sends on its own (not the response a request waits for).

Server requests (``{"jsonrpc", "id", "method", "params"?}``):
``elicitation/create``, ``sampling/createMessage``, ``roots/list`` go to the
client's ``request_handlers`` (``handler(params) -> result``) through
``answer_server_request``, the one dispatcher both eras use (the 2026-07-28
``inputRequests`` of a multi round-trip request go there too, see ``mrtr``);
the reply is ``{"jsonrpc", "id", "result"}``; a handler that raises
``RequestRefused`` answers its ``code``/``message``/``data`` (e.g. -1 "User
rejected sampling request"), any other exception error -32603. ``ping``
without a handler is answered ``{}``; any other method gets -32601.

While a handler runs, the clock of the transport's request deadlines
(``transport.clock``, a ``yiemagent._deadlines.PausableClock``) stands still:
the time a person takes to answer an elicitation, or a sampling approval and
the model call, never counts against the timeout of the ``tools/call`` that
is waiting (nor of any other request of the client in flight meanwhile).

Notifications (no ``id``): ``notifications/tools/list_changed`` sets the
client's ``tools_changed`` event; ``notifications/progress`` goes to the
``progress_callback`` of the ``tools/call`` whose ``progressToken`` it names;
``notifications/resources/updated`` goes to the callback of the subscribed
resource (``resources.ResourcesMixin.subscribe_resource``);
``notifications/message`` (server logging) is logged at INFO, at most 500
characters; anything else is ignored.

Spec: MCP 2025-11-25, "Utilities" (Ping, Progress, Logging), "Tools" (List
Changed Notification), "Client Features" (Roots, Sampling, Elicitation).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

from ..exceptions import MCPError
from . import jsonrpc

__all__ = ["ProgressCallback", "RequestRefused", "UnansweredRequest", "answer_server_request",
           "handle_server_message"]

logger = logging.getLogger("yiemagent.mcp")

ProgressCallback = Callable[[dict[str, Any]], None]
"""Receives the params of each ``notifications/progress`` (``{"progressToken", "progress", "total"?, "message"?}``)."""


class RequestRefused(MCPError):
    """Raise it in a request handler to answer the server a JSON-RPC error instead of a result.

    An ``MCPError``: in the 2026-07-28 era, where an input request has no
    error answer, it ends the request that asked (``call_tool`` raises it).

    Args:
        code: the JSON-RPC error code, e.g. -1 (the spec's "User rejected
            sampling request") or -32602 (invalid params).
        message: a short text for the server.
        data: optional ``data`` member.
    """

    def __init__(self, code: int, message: str, data: Any = None, *, server: str = "") -> None:
        super().__init__(message, server=server)
        self.code = code
        self.message = message
        self.data = data

    def error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member: ``{"code", "message", "data"?}``."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class _Client(Protocol):
    """What handling reads of its ``MCPClient`` (when it needs it: the name may change with a handshake)."""

    request_handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]]
    tools_changed: threading.Event

    @property
    def name(self) -> str: ...


def _paused(client: _Client) -> AbstractContextManager[None]:
    """The transport's deadline clock paused, when it has one."""
    clock = getattr(getattr(client, "transport", None), "clock", None)
    pause = getattr(clock, "pause", None)
    return pause() if callable(pause) else nullcontext()


class UnansweredRequest(Exception):
    """``answer_server_request`` has no handler for the method (JSON-RPC -32601 in the old era)."""

    def __init__(self, method: str) -> None:
        super().__init__(f"method not supported by yiemagent: {method}")
        self.method = method


def answer_server_request(client: _Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The result of the server request ``method``, from ``client.request_handlers`` (``ping``: ``{}``).

    The one dispatcher of server-to-client requests: old-era requests on a
    stream (``handle_server_message``) and 2026-07-28 ``inputRequests``
    (``mrtr``) both come here.

    Args:
        client: its ``request_handlers`` (``{method: handler(params) -> result}``).
        method: e.g. ``"elicitation/create"``, ``"sampling/createMessage"``, ``"roots/list"``.
        params: the request's params (``{}`` when it had none).

    Returns:
        The handler's result (a JSON object).

    The transport's deadline clock (``transport.clock``) is paused while the
    handler runs (see the module).

    Raises:
        UnansweredRequest: no handler for ``method`` (and it is not ``ping``).
        RequestRefused: the handler refused (its JSON-RPC error; in
            2026-07-28 it ends the request that asked).
        Exception: whatever else the handler raises, unchanged.
    """
    handler = client.request_handlers.get(method)
    if handler is not None:
        with _paused(client):  # a callback's time does not count against the request's timeout
            return handler(params)
    if method == "ping":
        return {}
    raise UnansweredRequest(method)


def handle_server_message(
    client: _Client, progress: Mapping[str, ProgressCallback], message: dict[str, Any]
) -> dict[str, Any] | None:
    """Answer a server request, or act on a notification (see above).

    Args:
        client: its ``request_handlers`` (``{method: handler(params) -> result}``),
            ``tools_changed`` (set on ``notifications/tools/list_changed``) and
            ``name`` (the server's short name, for the log).
        progress: ``{progressToken: callback}`` of the calls in flight.
        message: the server's request or notification.

    Returns:
        The JSON-RPC reply to a request; None for a notification. A handler
        or progress callback that raises is logged, never raised.
    """
    method = message.get("method")
    params: dict[str, Any] = message["params"] if isinstance(message.get("params"), dict) else {}
    if jsonrpc.is_request(message):
        try:
            return jsonrpc.make_response(message["id"], answer_server_request(client, str(method), params))
        except UnansweredRequest as exc:
            return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": str(exc)}}
        except RequestRefused as exc:
            return {"jsonrpc": "2.0", "id": message["id"], "error": exc.error()}
        except Exception as exc:
            logger.exception("%s: the handler of %s raised", client.name, method)
            return {"jsonrpc": "2.0", "id": message["id"],
                    "error": {"code": -32603, "message": f"{type(exc).__name__}: {exc}"}}
    if method == "notifications/tools/list_changed":
        logger.info("%s: tools changed", client.name)
        client.tools_changed.set()
    elif method == "notifications/progress":
        callback = progress.get(str(params.get("progressToken")))
        if callback is not None:
            try:
                callback(params)
            except Exception:
                logger.exception("progress callback raised; ignored")
    elif method == "notifications/resources/updated":
        deliver = getattr(client, "_on_resource_updated", None)  # ResourcesMixin: the subscribed callbacks
        if callable(deliver):
            deliver(params)
    elif method == "notifications/message":
        logger.info("%s log [%s]: %.500s", client.name, params.get("level"), params.get("data"))
    return None
