"""The state a served request runs in: the session, the call in flight, and what a tool may send back.

- ``ServerSession``: what one client negotiated (``protocolVersion``, capabilities,
  ``clientInfo``), its logging level, and the ``tools/call`` requests in flight
  (request id -> abort ``threading.Event``, set by ``notifications/cancelled``).
- ``MemorySessions`` (``yiemagent.mcp.server.sessions``): the sessions of one process,
  bounded per owner and in all, expiring after ``idle_seconds``. Sessions are
  per process: under gunicorn with several workers, serve statelessly
  (``MCPServer.wsgi_app(stateless=True)``) or pin a client to one worker.
- ``RequestContext``: what ``MCPServer.handle`` needs besides the message: the
  session, where notifications about this request go (an SSE stream, stdout), and
  the verified identity of its client (``identity``: ``BearerAuth``'s ``AccessToken``).
- ``ServedCall`` / ``current_call()``: the ``tools/call`` (or ``prompts/get``,
  ``resources/read``) running on this thread; a tool sends
  ``notifications/progress`` (``yiemagent.tools.report_progress`` or
  ``current_call().progress``) and ``notifications/message``
  (``current_call().log``) through it, and asks the client for input:
  ``elicit``, ``sample``, ``list_roots``, ``ask`` (see ``ServedCall.ask``).

Asking, by era:

- 2026-07-28: the first ask that is not answered yet ends the request
  ``input_required`` (``inputRequests`` and a signed ``requestState``,
  ``yiemagent.mcp.server.rounds``); the client retries with ``inputResponses``
  and the tool **runs again from the start**, this time getting the answers (and
  every earlier round's, kept in the ``requestState``). A tool that asks must be
  safe to re-run up to the point where it asks, or keep what it must not redo in
  ``ServedCall.saved`` (carried in the ``requestState``: signed, not encrypted).
- 2025-11-25: a JSON-RPC request to the client on the call's own stream (the
  POST's SSE stream, stdout); the client POSTs its answer back in the session
  (``ServerSession.resolve``); the ask waits for it (at most
  ``InputLimits.deadline_seconds``; the call's abort event ends the wait).

Spec: MCP 2025-11-25, "Lifecycle", "Transports" (Session Management),
"Utilities" (Cancellation, Progress, Logging), "Elicitation", "Sampling",
"Roots"; MCP 2026-07-28, "Multi Round-Trip Requests".
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..._internal.numbers import peer_number
from .inputs import (
    CAPABILITY_OF,
    InputLimits,
    InputRequired,
    InputUnavailable,
    MissingClientCapability,
    check_answer,
    elicitation_request,
    roots_request,
    sampling_request,
)
from .sessions import MemorySessions

if TYPE_CHECKING:
    from .auth import AccessToken

__all__ = ["LOG_LEVELS", "MAX_PENDING_QUESTIONS", "MemorySessions", "MessageHandler", "ModernRequest",
           "RequestContext", "ServedCall", "ServerSession", "current_call"]

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""The syslog severities of MCP logging, least severe first (RFC 5424)."""

Notify = Callable[[dict[str, Any]], None]

MAX_PENDING_QUESTIONS = 32
"""Requests one session may have waiting for the client's answer (2025-11-25); one more raises ``InputUnavailable``."""


def _no_notify(message: dict[str, Any]) -> None:
    """Drop a notification (a request with nowhere to send one)."""


@dataclass(eq=False)  # a session is itself: compared and hashed by identity (kept in weak sets)
class ServerSession:
    """One client's session (2025-11-25 era; one per stdio connection, or per ``Mcp-Session-Id``)."""

    id: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    """Visible ASCII (0x21-0x7E) only, as ``Mcp-Session-Id`` must be; unguessable (192 random bits)."""
    protocol_version: str | None = None
    """What ``initialize`` negotiated; None before it."""
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] = field(default_factory=dict)
    initialized: bool = False
    """True once ``notifications/initialized`` came."""
    log_level: str | None = "info"
    """Least severe ``notifications/message`` level sent (``logging/setLevel``); None: none sent."""
    last_seen: float = field(default_factory=time.monotonic)
    calls: dict[Any, threading.Event] = field(default_factory=dict, repr=False)
    """Request id -> abort event of each ``tools/call`` in flight."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    asked: dict[str, _Asked] = field(default_factory=dict, repr=False, compare=False)
    """Id -> slot of each request this server sent the client and awaits the answer of (2025-11-25)."""
    asked_count: int = field(default=0, repr=False, compare=False)
    subscriptions: set[str] = field(default_factory=set, repr=False, compare=False)
    """URIs this session watches (``resources/subscribe``; ``yiemagent.mcp.server.subscriptions``)."""
    listener: Notify | None = field(default=None, repr=False, compare=False)
    """Where messages tied to no request go: the open ``GET`` stream (HTTP) or stdout (stdio); None: nowhere."""

    def ask(self, request: dict[str, Any], send: Notify, timeout: float,
            abort_event: threading.Event) -> dict[str, Any]:
        """Send ``request`` (``{"method", "params"}``) to the client with ``send`` and wait for its answer.

        Returns:
            The response message (``{"result": ...}`` or ``{"error": ...}``).

        Raises:
            InputUnavailable: no answer within ``timeout`` seconds, ``abort_event`` was set (the client cancelled
                or left, the session ended), or ``MAX_PENDING_QUESTIONS`` wait already.
        """
        slot = _Asked()
        with self.lock:
            if len(self.asked) >= MAX_PENDING_QUESTIONS:
                raise InputUnavailable(f"{request['method']}: this session has {len(self.asked)} questions "
                                       "waiting for the client already")
            self.asked_count += 1
            request_id = f"yiemagent-{self.asked_count}"
            self.asked[request_id] = slot
        try:
            send({"jsonrpc": "2.0", "id": request_id, "method": request["method"], "params": request["params"]})
            deadline = time.monotonic() + timeout
            while not slot.event.wait(0.05):
                if abort_event.is_set():
                    raise InputUnavailable(f"{request['method']}: the call ended while waiting for the answer")
                if time.monotonic() > deadline:
                    raise InputUnavailable(f"{request['method']}: no answer from the client in {timeout:g} s")
            return slot.reply
        finally:
            with self.lock:
                self.asked.pop(request_id, None)

    def resolve(self, message: dict[str, Any]) -> bool:
        """Hand the client's response ``message`` to the ask waiting for it; False when none waits for its id."""
        with self.lock:
            request_id = message.get("id")
            slot = self.asked.get(request_id) if isinstance(request_id, str) else None
        if slot is None:
            return False
        slot.reply = message
        slot.event.set()
        return True

    def cancel(self, request_id: Any) -> bool:
        """Set the abort event of the call ``request_id``; False when no such call is in flight."""
        with self.lock:
            event = self.calls.get(request_id) if isinstance(request_id, (str, int)) else None
        if event is None:
            return False
        event.set()
        return True

    def cancel_all(self) -> None:
        """Set every in-flight call's abort event (the session ends)."""
        with self.lock:
            events = list(self.calls.values())
        for event in events:
            event.set()


@dataclass
class _Asked:
    event: threading.Event = field(default_factory=threading.Event)
    reply: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModernRequest:
    """What a 2026-07-28 request says of its client in ``params._meta`` (there is no session)."""

    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any]
    log_level: str | None
    """``io.modelcontextprotocol/logLevel``; None: the request gets no log messages."""


@dataclass
class RequestContext:
    """What ``MCPServer.handle`` needs besides the message."""

    session: ServerSession = field(default_factory=ServerSession)
    notify: Notify = _no_notify
    """Where messages about this request go (progress, log messages, and in 2025-11-25 requests to the client)."""
    back_channel: bool = False
    """True when the client can answer a request sent with ``notify`` (a session's SSE stream, stdio)."""
    headers: dict[str, str] | None = None
    """The HTTP request's headers (lower-case names), for the 2026-07-28 header checks; None off HTTP."""
    modern_request: ModernRequest | None = None
    """Set by ``MCPServer.handle`` for a 2026-07-28 request."""
    identity: AccessToken | None = None
    """The request's verified bearer token (``BearerAuth``: ``subject``, ``client_id``, ``scopes``,
    ``principal``); None when nothing verified one (stdio, an app without ``BearerAuth`` in front)."""

    def client_capabilities(self) -> dict[str, Any]:
        """The client's capabilities: the request's (2026-07-28) or the session's (``initialize``)."""
        request = self.modern_request
        return request.client_capabilities if request is not None else self.session.client_capabilities

    def log_level(self) -> str | None:
        """The least severe level sent, or None for no log messages."""
        return self.modern_request.log_level if self.modern_request is not None else self.session.log_level


class MessageHandler(Protocol):
    """What the transports need of a server: ``MCPServer.handle``."""

    def handle(self, message: Any, context: RequestContext | None = None) -> dict[str, Any] | None:
        """The reply to ``message``, or None (see ``MCPServer.handle``)."""
        ...


_current = threading.local()


class ServedCall:
    """The ``tools/call`` (``prompts/get``, ``resources/read``) running on this thread (``current_call()``)."""

    def __init__(self, request_id: Any, arguments: dict[str, Any], context: RequestContext,
                 progress_token: Any, abort_event: threading.Event, *, limits: InputLimits | None = None,
                 answers: dict[str, Any] | None = None, saved: dict[str, Any] | None = None) -> None:
        self.request_id = request_id
        self.arguments = arguments
        self.context = context
        self.progress_token = progress_token
        """``params._meta.progressToken`` of the request, or None (then ``progress`` sends nothing)."""
        self.abort_event = abort_event
        """Set when the client cancels the call or its session ends."""
        self.limits = limits or InputLimits()
        self.answers = answers if answers is not None else {}
        """2026-07-28: the client's answers this round can use (earlier rounds' and ``inputResponses``)."""
        self.used: dict[str, dict[str, Any]] = {}
        """2026-07-28: key -> checked answer of each input asked and answered in this run."""
        self.saved: dict[str, Any] = saved if saved is not None else {}
        """What the tool keeps across 2026-07-28 rounds (JSON values; carried in the signed ``requestState``,
        readable by the client: no secrets). In 2025-11-25 the tool runs once and this is a plain dict."""
        self._asks = 0

    @property
    def identity(self) -> AccessToken | None:
        """The verified token of the request that runs this call (``RequestContext.identity``), or None.

        ``identity.subject`` is the user (``sub``), ``identity.client_id`` the OAuth client, ``identity.scopes``
        what it may do, ``identity.principal`` the key a served tool should bind its state to.
        """
        return self.context.identity

    def client_supports(self, capability: str) -> bool:
        """True when the client declared ``capability`` (``"elicitation"``, ``"sampling"``, ``"roots"``...)."""
        return isinstance(self.context.client_capabilities().get(capability), dict)

    def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Ask the client for several inputs at once; return ``{key: result}``.

        Args:
            requests: key -> ``{"method", "params"}`` (``elicitation_request``, ``sampling_request``,
                ``roots_request`` of ``yiemagent.mcp.server.inputs``). Keys name the inputs across rounds:
                a re-run must ask with the same keys.

        Returns:
            Each key's result as the spec defines it (``ElicitResult``, ``CreateMessageResult``,
            ``ListRootsResult``), checked (``inputs.check_answer``).

        Raises:
            MissingClientCapability: the client did not declare what a request needs (-32021 if not caught).
            InvalidInputResponse: the client's answer is not such a result (-32602 in 2026-07-28).
            InputUnavailable: 2025-11-25 only: no back-channel, no answer in time, the call ended, or the
                client answered with a JSON-RPC error.
            ValueError: no request, more than ``InputLimits.max_inputs_per_round``, an unknown method.
            InputRequired: 2026-07-28, something is not answered yet: let it through (it is a
                ``BaseException``); the request ends ``input_required`` and the tool runs again.
        """
        if not requests or len(requests) > self.limits.max_inputs_per_round:
            raise ValueError(f"ask takes 1 to {self.limits.max_inputs_per_round} inputs, not {len(requests)}")
        for request in requests.values():
            capability = CAPABILITY_OF.get(request.get("method", ""))
            if capability is None:
                raise ValueError(f"cannot ask the client for {request.get('method')!r}")
            if not self.client_supports(capability):
                raise MissingClientCapability(capability, request["method"])
        if self.context.modern_request is not None:
            missing = {key: request for key, request in requests.items() if key not in self.answers}
            if missing:
                raise InputRequired(missing)
            for key, request in requests.items():
                self.used[key] = check_answer(key, request, self.answers[key])
            return {key: self.used[key] for key in requests}
        if not self.context.back_channel:
            raise InputUnavailable("this request cannot carry a request to the client (a stateless 2025-11-25 "
                                   "request, or a client that does not accept text/event-stream)")
        answers = {}
        for key, request in requests.items():
            reply = self.context.session.ask(request, self.context.notify, self.limits.deadline_seconds,
                                             self.abort_event)
            if "result" not in reply:
                error = reply.get("error")
                text = error.get("message") if isinstance(error, dict) else None
                raise InputUnavailable(f"{request['method']}: the client answered with an error: {text!r:.300}")
            answers[key] = check_answer(key, request, reply["result"])
        return answers

    def _key(self, given: str | None, kind: str) -> str:
        self._asks += 1
        return given if given is not None else f"{kind}-{self._asks}"

    def elicit(self, message: str, requested_schema: dict[str, Any], *, key: str | None = None) -> dict[str, Any]:
        """Ask the person at the client (``elicitation/create``, form mode); returns the ``ElicitResult``.

        The result: ``{"action": "accept" | "decline" | "cancel", "content"?: {...}}`` (content valid against
        ``requested_schema``). ``key``: the input's name across rounds (default ``elicitation-<n>``, n counting
        this run's asks).
        Raises what ``ask`` raises.
        """
        request = elicitation_request(message, requested_schema)
        name = self._key(key, "elicitation")
        return self.ask({name: request})[name]

    def sample(self, messages: list[dict[str, Any]] | str, *, max_tokens: int = 1000, key: str | None = None,
               **params: Any) -> dict[str, Any]:
        """Ask the client's model (``sampling/createMessage``); returns the ``CreateMessageResult``.

        The result: ``{"role", "content", "model", "stopReason"?}``. ``messages``, ``params``: as
        ``inputs.sampling_request``; ``key`` as in ``elicit``. Raises what ``ask`` raises.
        """
        request = sampling_request(messages, max_tokens, **params)
        name = self._key(key, "sampling")
        return self.ask({name: request})[name]

    def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """Ask the client for its roots (``roots/list``); returns them (``[{"uri", "name"?}]``).

        Raises what ``ask`` raises.
        """
        name = self._key(key, "roots")
        roots: list[dict[str, Any]] = self.ask({name: roots_request()})[name]["roots"]
        return roots

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` (only when the request gave a ``progressToken``).

        Read by ``_internal.numbers.peer_number``: a ``progress`` that is not a finite number (NaN, inf, a
        non-numeric string) is not sent; a ``total`` that is not a finite number >= 0 is left out.
        """
        value, of = peer_number(progress), peer_number(total)
        if self.progress_token is None or value is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": value}
        if of is not None and of >= 0:
            params["total"] = of
        if message is not None:
            params["message"] = message
        self.context.notify({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    def report(self, value: Any) -> None:
        """Send what ``yiemagent.tools.report_progress`` got inside a served tool as progress.

        A number, or ``{"progress", "total"?, "message"?}``; anything else is sent as the ``message``.
        """
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.progress(value)
        elif isinstance(value, dict) and isinstance(value.get("progress"), (int, float)):
            total = value.get("total")
            message = value.get("message")
            self.progress(value["progress"], total if isinstance(total, (int, float)) else None,
                          message if isinstance(message, str) else None)
        else:
            self.progress(0, None, str(value))

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` when ``level`` is at least the session's level.

        Raises:
            ValueError: ``level`` is not one of ``LOG_LEVELS``.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"log level {level!r} is not one of {', '.join(LOG_LEVELS)}")
        least = self.context.log_level()
        if least is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(least):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.context.notify({"jsonrpc": "2.0", "method": "notifications/message", "params": params})


def current_call() -> ServedCall | None:
    """The served ``tools/call`` running on this thread, or None (not inside a served tool)."""
    return getattr(_current, "call", None)


@contextmanager
def running(call: ServedCall) -> Iterator[None]:
    """Make ``call`` the current call of this thread while the tool runs."""
    previous = getattr(_current, "call", None)
    _current.call = call
    try:
        yield
    finally:
        _current.call = previous
