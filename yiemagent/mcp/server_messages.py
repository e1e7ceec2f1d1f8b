"""What ``MCPClient`` does with a message the server sends on its own (not the response a request waits for).

Server requests (``{"jsonrpc", "id", "method", "params"?}``):
``elicitation/create``, ``sampling/createMessage``, ``roots/list`` go to the
client's ``request_handlers`` (``handler(params) -> result``) through
``answer_server_request``, the one dispatcher both eras use (the 2026-07-28
``inputRequests`` of a multi round-trip request go there too, see ``mrtr``);
the reply is ``{"jsonrpc", "id", "result"}``; a handler that raises
``RequestRefused`` answers its ``code``/``message``/``data`` (e.g. -1 "User
rejected sampling request"); any other exception becomes ``MCPCallbackError``
(``__cause__`` = the exception), answered -32603 with the method and the
exception's TYPE only: its text (URLs, keys) never reaches the server, it is
logged locally at ERROR (scrubbed of the transport's secrets). ``ping``
without a handler is answered ``{}``; any other method gets -32601.

Abort: a handler runs on a thread of its own (``yiemagent-mcp-callback``)
while the thread that received the request waits for it, polling every
``CALLBACK_POLL_SECONDS`` the client's abort event, which
``cancel_in_flight()``, ``close()`` and ``Agent.abort()`` set. Then the wait
ends at once with ``CallbackAborted`` (an ``MCPTransportError``): the
request waiting on the callback fails, a server request is answered -32603
"aborted". The handler's thread cannot be killed: a handler (and through
``ClientCallbacks``, a callback) that takes an ``abort_event`` keyword gets
that event to stop early; its late answer is dropped. A handler that never
returns holds only its own thread.

While a handler runs, the clock of the transport's request deadlines
(``transport.clock``, a ``yiemagent._internal.deadlines.PausableClock``) stands still:
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

import contextvars
import logging
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

from .._internal.numbers import count_value, peer_number
from .._internal.secrets import scrub_exception
from ..exceptions import MCPCallbackError, MCPError, MCPTransportError
from ..formats.llm import accepts_keyword
from . import jsonrpc

__all__ = ["CALLBACK_POLL_SECONDS", "CallbackAborted", "ProgressCallback", "RequestRefused", "UnansweredRequest",
           "answer_server_request", "call_with_abort", "cut_while_answering", "handle_server_message",
           "take_callback_failure"]

logger = logging.getLogger("yiemagent.mcp")

CALLBACK_POLL_SECONDS = 0.05
"""How often a thread waiting for a callback looks at the client's abort event."""

_failures = threading.local()
"""``exc``: the last callback exception dispatched on this thread (``take_callback_failure``)."""

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


class CallbackAborted(MCPTransportError):
    """The client cut the request (``cancel_in_flight``, ``close``, ``Agent.abort``) while a callback ran.

    Attributes:
        method: the server request the callback was answering, e.g. ``"elicitation/create"``.
    """

    def __init__(self, method: str, *, server: str = "") -> None:
        super().__init__(f"the client's {method} callback was still running when the request was cut "
                         f"(cancel_in_flight, close or Agent.abort); its answer is dropped", server=server)
        self.method = method


def call_with_abort(func: Callable[..., Any], *args: Any, abort_event: threading.Event | None) -> Any:
    """``func(*args, abort_event=abort_event)`` if ``func`` takes that keyword (or ``**kwargs``), else ``func(*args)``.

    The signature check is ``yiemagent.formats.llm.accepts_keyword``, the one used for ``llm_call``'s optional keywords.
    """
    if abort_event is not None and accepts_keyword(func, "abort_event"):
        return func(*args, abort_event=abort_event)
    return func(*args)


def cut_while_answering(server: str, method: str, input_method: str) -> MCPTransportError:
    """The error of a request cut while the client's callback answered the server's request tied to it."""
    effect = " (the tool may have run)" if method == "tools/call" else ""
    return MCPTransportError(
        f"{method} to {server}: cut (cancel_in_flight, close or Agent.abort) while the client's {input_method} "
        f"callback was answering the server; the request had been sent, so its effect is unknown{effect}",
        server=server)


def take_callback_failure() -> BaseException | None:
    """The exception of the last callback that failed (or ``CallbackAborted``) on this thread since the last call.

    Then forgotten. The handshake era over HTTP answers server requests on the
    calling thread, so the request's error can name its callback's failure.
    """
    failure: BaseException | None = getattr(_failures, "exc", None)
    _failures.exc = None
    return failure


def _callback_error(client: _Client, method: str, exc: Exception) -> MCPCallbackError:
    """Log ``exc`` in full (scrubbed of the transport's secrets); the error that names only its type."""
    scrub_exception(exc, list(getattr(getattr(client, "transport", None), "_secrets", None) or []))
    logger.error("%s: the client's %s callback raised", client.name, method, exc_info=exc)
    _failures.exc = exc
    return MCPCallbackError(-32603, f"the client's {method} callback failed ({type(exc).__name__})",
                            server=client.name)


def _run_abortable(client: _Client, method: str, handler: Callable[..., Any], params: dict[str, Any],
                   abort: threading.Event) -> Any:
    """``handler(params)`` on its own thread; ``CallbackAborted`` as soon as ``abort`` is set."""
    if abort.is_set():
        raise CallbackAborted(method, server=client.name)
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["result"] = call_with_abort(handler, params, abort_event=abort)
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    context = contextvars.copy_context()  # the call it serves (``call_scope``) is known on the handler's thread
    threading.Thread(target=context.run, args=(run,), name=f"yiemagent-mcp-callback-{method}", daemon=True).start()
    while not done.wait(CALLBACK_POLL_SECONDS):
        if abort.is_set():
            logger.info("%s: the %s callback is still running after the request was cut; not waiting for it",
                        client.name, method)
            _failures.exc = aborted = CallbackAborted(method, server=client.name)
            raise aborted
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


class UnansweredRequest(Exception):
    """``answer_server_request`` has no handler for the method (JSON-RPC -32601 in the old era)."""

    def __init__(self, method: str) -> None:
        super().__init__(f"method not supported by yiemagent: {method}")
        self.method = method


def answer_server_request(client: _Client, method: str, params: dict[str, Any],
                          abort_event: threading.Event | None = None) -> dict[str, Any]:
    """The result of the server request ``method``, from ``client.request_handlers`` (``ping``: ``{}``).

    The one dispatcher of server-to-client requests: old-era requests on a
    stream (``handle_server_message``) and 2026-07-28 ``inputRequests``
    (``mrtr``) both come here.

    Args:
        client: its ``request_handlers`` (``{method: handler(params) -> result}``).
        method: e.g. ``"elicitation/create"``, ``"sampling/createMessage"``, ``"roots/list"``.
        params: the request's params (``{}`` when it had none).
        abort_event: the event that cuts the wait (and is given to a handler
            that takes ``abort_event``); None: the client's current one
            (``_callback_abort``, replaced at each ``cancel_in_flight``).

    Returns:
        The handler's result (a JSON object).

    The transport's deadline clock (``transport.clock``) is paused while the
    handler runs, on a thread of its own (see the module).

    Raises:
        UnansweredRequest: no handler for ``method`` (and it is not ``ping``).
        RequestRefused: the handler refused (its JSON-RPC error; in
            2026-07-28 it ends the request that asked).
        CallbackAborted: the abort event was set while the handler ran.
        MCPCallbackError: the handler raised anything else (``__cause__``).
    """
    handler = client.request_handlers.get(method)
    if handler is None:
        if method == "ping":
            return {}
        raise UnansweredRequest(method)
    abort = abort_event if abort_event is not None else getattr(client, "_callback_abort", None)
    try:
        with _paused(client):  # a callback's time does not count against the request's timeout
            if not isinstance(abort, threading.Event):
                result: dict[str, Any] = handler(params)
                return result
            return dict(_run_abortable(client, method, handler, params, abort))
    except (RequestRefused, CallbackAborted):
        raise
    except Exception as exc:
        raise _callback_error(client, method, exc) from exc


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
        except MCPCallbackError as exc:  # the type only: the text stays in the local log
            return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": exc.code, "message": exc.message}}
        except CallbackAborted:
            return {"jsonrpc": "2.0", "id": message["id"],
                    "error": {"code": -32603, "message": "the client aborted this request (its user cancelled)"}}
    if method == "notifications/tools/list_changed":
        logger.info("%s: tools changed", client.name)
        client.tools_changed.set()
    elif method == "notifications/progress":
        callback = progress.get(str(params.get("progressToken")))
        if callback is not None:
            for key in ("progress", "total"):  # a peer's numbers: "2" is 2; nonsense and -1 are left out
                if key in params:
                    number = count_value(peer_number(params[key]), f"progress {key}")
                    params = {**params, key: number} if number is not None \
                        else {k: v for k, v in params.items() if k != key}
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
