"""The requests in flight of one ``MCPClient``: tracked sends, retries, and ``cancel_in_flight()``.

Every message the client sends goes through ``_send`` (a request; returns its
``result``) or ``_notify`` (a notification), and is tracked while it is in
flight (``_in_flight``: JSON-RPC id -> method; ``_sending``: sends of any
kind), so that ``cancel_in_flight()`` (``Agent.abort()``) can cut it. A cut is
a new cancel generation: a request remembers the generation it began in and,
once that changed, is not sent, retried, re-sent after a session expiry, or
resumed. A request that times out gets ``notifications/cancelled`` (not
``initialize``: the spec forbids it). Retries wait ``retry_sleep`` between
tries (seconds); a cut ends the wait at once. A message is not sent either,
and not retried, once the run or tool call it serves was aborted
(``yiemagent._internal.cuts``: ``Agent`` runs and MCP tool calls name their
``abort_event``), so an abort is never followed by a fresh wait in the same
run. ``safe_to_repeat`` is the retry
rule of requests that are safe to repeat (``initialize``, ``tools/list``,
``ping``).

``InFlightRequests`` is a base class of ``MCPClient``: its state lives on the
client, next to the ``transport``, ``name``, ``timeout_seconds``,
``retry_attempts``, ``retry_sleep`` and ``_on_message`` it uses.

Spec: MCP 2025-11-25, "Utilities" (Cancellation), "Lifecycle" (Timeouts).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .._internal.cuts import cut_requested
from .._internal.retry import RETRY_STATUS, make_retrying
from ..exceptions import MCPError, MCPTimeoutError, MCPTransportError
from . import jsonrpc
from .transport import MessageHandler, Transport

__all__ = ["InFlightRequests", "safe_to_repeat"]

logger = logging.getLogger("yiemagent.mcp")

_NEVER_NOTIFIED = frozenset({"initialize", "server/discover"})
"""Requests whose cut or timeout sends no ``notifications/cancelled`` (the handshake, the era probe)."""


def safe_to_repeat(exc: BaseException) -> bool:
    """Retry rule for idempotent methods: connection failures and 429/502/503.

    Not retried: timeouts, and a stdio server whose process has exited
    (``exit_code`` set: it will not come back by itself).
    """
    if isinstance(exc, MCPTimeoutError) or getattr(exc, "exit_code", None) is not None:
        return False
    if isinstance(exc, MCPTransportError):
        return exc.status_code is None or exc.status_code in RETRY_STATUS
    return False


class InFlightRequests:
    """Send over ``transport`` with every request tracked, so that ``cancel_in_flight()`` can cut it.

    A base class of ``MCPClient``, which sets the attributes declared here.
    """

    transport: Transport
    name: str
    timeout_seconds: float
    """Default seconds a request may take."""
    retry_attempts: int
    retry_sleep: Callable[[float], None]
    _on_message: MessageHandler
    """Receives the server messages that arrive while a request waits."""

    def __init__(self) -> None:
        self._ids = jsonrpc.IdCounter()
        self._in_flight: dict[int, str] = {}
        """JSON-RPC id -> method of every request in flight, the handshake's too."""
        self._sending = 0
        """Sends in flight of any kind (also ``notifications/initialized``)."""
        self._not_notified: set[int] = set()
        """Ids in flight whose cut sends no ``notifications/cancelled``: ``initialize`` and ``server/discover``
        (the handshake and the probe; the server's era is not settled), and every request sent while the
        transport cancels by closing its stream (2026-07-28 over HTTP). Decided when the request is sent, so
        a probe that fails (and resets the era) while being cut still sends nothing."""
        self._in_flight_lock = threading.Lock()
        self._cancel_generation = 0
        """Incremented by ``cancel_in_flight()``; a request that began in an older generation is cut."""
        self._cancelled = threading.Condition()
        """Notified by ``cancel_in_flight()``: ends a retry's wait at once."""
        self._callback_abort = threading.Event()
        """Set (and replaced by a new one) by ``cancel_in_flight()``: callbacks running then are aborted
        (``server_messages.answer_server_request``)."""

    def _cancel_state(self) -> tuple[int, threading.Event]:
        """The cancel generation and the callbacks' abort event, read together."""
        with self._cancelled:
            return self._cancel_generation, self._callback_abort

    # ------------------------------------------------------------------ sending

    def _send(
        self, method: str, params: dict[str, Any] | None, timeout_seconds: float | None,
        generation: int | None = None,
    ) -> dict[str, Any]:
        request = jsonrpc.make_request(method, params, self._ids.next())
        notified = method not in _NEVER_NOTIFIED and not getattr(self.transport, "cancels_by_closing", False)
        with self._in_flight_lock:  # the handshake too: abort() must cut a hanging initialize
            self._in_flight[request["id"]] = method
            if not notified:
                self._not_notified.add(request["id"])
            self._sending += 1
        try:
            self._check_not_cut(method, generation)  # after registering: a later abort sees it in flight
            response = self.transport.send(
                request, timeout_seconds=self.timeout_seconds if timeout_seconds is None else timeout_seconds,
                on_message=self._on_message,
            )
        except MCPTimeoutError:
            if notified:  # spec: initialize is never cancelled; 2026-07-28 HTTP: the closed stream is the cancel
                self._cancel(request["id"], "timeout")
            raise
        finally:
            with self._in_flight_lock:
                self._in_flight.pop(request["id"], None)
                self._not_notified.discard(request["id"])
                self._sending -= 1
        return jsonrpc.result_of(response, server=self.name)

    def _notify(self, method: str, generation: int) -> None:
        """Send a notification, tracked like a request so that ``cancel_in_flight()`` cuts it."""
        with self._in_flight_lock:
            self._sending += 1
        try:
            self._check_not_cut(method, generation)
            self.transport.send(jsonrpc.make_notification(method))
        finally:
            with self._in_flight_lock:
                self._sending -= 1

    def _check_not_cut(self, method: str, generation: int | None) -> None:
        """Raise ``MCPTransportError`` when the message must not be sent (it is not, and nothing waits).

        Either ``cancel_in_flight()`` ran since its request began (``generation`` is old), or the run or
        tool call it serves was aborted (``_internal.cuts``: an abort that came before this request began,
        so ``cancel_in_flight()`` could not see it).
        """
        if generation is not None and generation != self._cancel_generation:
            raise MCPTransportError(f"{method} to {self.name}: cancelled before it was sent", server=self.name)
        if cut_requested():
            raise MCPTransportError(f"{method} to {self.name}: cancelled before it was sent (aborted)",
                                    server=self.name)

    # ------------------------------------------------------------------ retries

    def _retrying(self, retry_if: Callable[[BaseException], bool]) -> Any:
        """Tries of one send: ``retry_if(exc)`` decides, never once the run it serves was aborted."""
        return make_retrying(lambda exc: not cut_requested() and retry_if(exc), attempts=self.retry_attempts,
                             sleep=self._retry_pause)

    def _retry_pause(self, seconds: float) -> None:
        """Wait before a retry; ``cancel_in_flight()`` ends the wait at once (unless ``retry_sleep`` was injected)."""
        if self.retry_sleep is not time.sleep:
            self.retry_sleep(seconds)
            return
        generation = self._cancel_generation
        with self._cancelled:
            self._cancelled.wait_for(lambda: self._cancel_generation != generation, timeout=seconds)

    # ------------------------------------------------------------------ cancelling

    def _cancel(self, request_id: int, reason: str, timeout_seconds: float = 2.0) -> None:
        if getattr(self.transport, "cancels_by_closing", False):
            return  # MCP 2026-07-28 over HTTP: the closed response stream is the cancellation
        try:
            self.transport.send(
                jsonrpc.make_notification("notifications/cancelled", {"requestId": request_id, "reason": reason}),
                timeout_seconds=timeout_seconds,
            )
        except MCPError as exc:
            logger.debug("%s: notifications/cancelled failed: %s", self.name, exc)

    def cancel_in_flight(self, reason: str = "aborted by the user") -> list[int]:
        """Cut every request in flight and send ``notifications/cancelled`` for each (best effort).

        Every request counts, the handshake's too (``initialize``,
        ``notifications/initialized``, ``tools/list``, ``ping``): the cut
        requests raise ``MCPTransportError`` in their threads at once (within
        milliseconds, whatever the server does); none is retried, re-sent
        after a session expiry, or resumed (an SSE stream with event ids is
        not reopened with ``Last-Event-ID``), and a request waiting to retry
        or waiting for another thread's handshake ends too. Requests sent
        afterwards are unaffected, and so is the ``listen=True`` stream (HTTP:
        it has its own connection; stdio: the process keeps running).
        ``notifications/cancelled`` goes out for each cut request except
        ``initialize`` (the spec forbids it), the era probe
        ``server/discover``, and the requests of the 2026-07-28 era over
        HTTP (closing the stream is the cancellation), within 1 s in all; so this
        returns within about 1 s. Returns the cut requests' JSON-RPC ids.
        Safe from any thread; ``Agent.abort()`` calls it.

        A callback (sampling, elicitation, roots) still answering the server
        is not waited for: the request it serves fails at once (2026-07-28:
        ``MCPTransportError`` saying the request was sent and its effect is
        unknown), a server request gets error -32603, and the callback's
        ``abort_event`` is set (it runs on a thread of its own, which cannot
        be killed; see ``server_messages``).
        """
        with self._cancelled:
            self._cancel_generation += 1
            aborted, self._callback_abort = self._callback_abort, threading.Event()
            self._cancelled.notify_all()
        with self._in_flight_lock:
            cut = dict(self._in_flight)
            silent = self._not_notified & set(cut)
            sending = self._sending
        if not cut and not sending:
            aborted.set()  # a 2026-07-28 call waiting on its callback between two rounds
            return []
        self.transport.cancel()
        aborted.set()  # after the cut: a request whose callback returns now does not read on
        self._cut_stragglers(cut)
        budget = time.monotonic() + 1.0
        for request_id in sorted(cut):
            remaining = budget - time.monotonic()
            if request_id in silent or remaining <= 0.01:
                continue
            self._cancel(request_id, reason, remaining)
        return sorted(cut)

    def _cut_stragglers(self, cut: dict[int, str]) -> None:
        """Cut again, for up to 50 ms, while a cut request is still in flight.

        A request that passed its cancel check just before ``cancel_in_flight``
        may reach the transport just after its ``cancel()``; cutting again
        while it is still in flight ends it too.
        """
        deadline = time.monotonic() + 0.05
        next_cut = time.monotonic() + 0.01
        while time.monotonic() < deadline:
            with self._in_flight_lock:
                if not any(request_id in self._in_flight for request_id in cut):
                    return
            if time.monotonic() >= next_cut:
                self.transport.cancel()
                next_cut = time.monotonic() + 0.01
            time.sleep(0.002)
