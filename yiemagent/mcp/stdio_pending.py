"""The requests a stdio transport waits on: one slot per request ``id``, filled by the stdout reader.

``send`` registers a ``Slot`` under the request's ``id`` and waits on its
event; the reader hands it the response (``_dispatch_response``), or an error
fails it: ``MCPProtocolError`` when the response is unreadable or malformed
(both or neither of ``result`` and ``error``), or a ``Failure`` (raised as
``MCPTransportError`` with ``exit_code`` and ``stderr_tail``) when the
process exits, on ``cancel()`` and on ``close()``. Only an int (not a bool)
or a str can be an id we sent (``usable_id``). The ids of timed-out or
cancelled requests are remembered (the last 1024), so that a late response is
discarded quietly (logged at INFO) and the id is never used again.

``PendingRequests`` is a base class of ``StdioTransport``, whose ``__init__``
sets the state it uses (``_pending``, ``_abandoned``, ``_failure``,
``_closed``, all guarded by ``_lock``).

Spec: JSON-RPC 2.0 (ids, response objects); MCP 2025-11-25, "Base Protocol"
(ids unique within a session), "Transports", stdio.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Any

from ..exceptions import MCPError, MCPProtocolError, MCPTransportError

__all__ = ["STDERR_MESSAGE_CHARS", "Failure", "PendingRequests", "Slot", "one_line_tail", "raise_for", "usable_id"]

logger = logging.getLogger("yiemagent.mcp.stdio")

STDERR_MESSAGE_CHARS = 1000
"""The end of the stderr tail quoted in an error message (the whole ~4 KB tail is its ``stderr_tail``)."""

_ABANDONED_IDS = 1024  # ids of timed-out or cancelled requests remembered, to discard late answers


class Slot:
    """Where the reader thread leaves the answer for one waiting request."""

    __slots__ = ("error", "event", "response")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.response: dict[str, Any] | None = None
        self.error: Failure | MCPError | None = None


class Failure:
    """Why requests cannot be answered (the process exited, cancel, close)."""

    __slots__ = ("exit_code", "message", "stderr_tail")

    def __init__(self, message: str, exit_code: int | None = None, stderr_tail: str = "") -> None:
        self.message = message
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail

    def error(self, server: str) -> MCPTransportError:
        """A fresh exception (each waiting thread raises its own)."""
        text = self.message
        if self.stderr_tail.strip():
            text += "; stderr ends with: " + one_line_tail(self.stderr_tail)
        exc = MCPTransportError(text, server=server, stderr_tail=self.stderr_tail)
        exc.exit_code = self.exit_code
        return exc


def one_line_tail(tail: str, max_chars: int = STDERR_MESSAGE_CHARS) -> str:
    """The end of a server's stderr ``tail`` as one line: its lines joined by `` | ``, the last ``max_chars``.

    Example:
        >>> one_line_tail("Traceback:\\n  boom\\nValueError: x\\n")
        'Traceback: |   boom | ValueError: x'
    """
    lines = [line.rstrip() for line in tail.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    text = " | ".join(line for line in lines if line.strip())
    return text if len(text) <= max_chars else "..." + text[-max_chars:]


def raise_for(error: Failure | MCPError, server: str) -> None:
    """Raise the error of a slot (a fresh exception per waiting thread for a ``Failure``)."""
    if isinstance(error, Failure):
        raise error.error(server)
    raise error


def usable_id(value: Any) -> bool:
    """True for an id we could have sent: an int (not a bool) or a str (JSON-RPC 2.0; 1.0 and true are not 1)."""
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


class PendingRequests:
    """The table of waiting requests of a ``StdioTransport`` (a base class of it; see above)."""

    name: str
    _lock: threading.Lock
    """Guards the fields below."""
    _pending: dict[Any, Slot]
    _abandoned: collections.OrderedDict[Any, None]
    _failure: Failure | None
    """Set once the connection is gone for good."""
    _closed: bool

    def _dispatch_response(self, message: dict[str, Any]) -> None:
        """Hand a response to the request waiting for its ``id``; a malformed one fails that request."""
        request_id = message["id"]
        problem = None
        if "result" in message and "error" in message:
            problem = "a response with both result and error"
        elif "result" not in message and "error" not in message:
            problem = "a response with neither result nor error"
        if problem is not None:
            if not self._fail_one(request_id, MCPProtocolError(
                    f"{self.name} answered request {request_id!r} with {problem}", server=self.name,
                    body=repr(message)[:200])):
                logger.warning("%s: discarded %s for unknown request %.50r", self.name, problem, request_id)
            return
        if request_id is None and "error" in message:
            # JSON-RPC: the server could not read some request's id. Over stdio we cannot tell which (an
            # earlier, already answered request is as likely as the one waiting now), so nothing is failed.
            logger.warning("%s: the server reported an error for a request it could not read (id null): %.200r",
                           self.name, message.get("error"))
            return
        slot = None
        late = False
        if usable_id(request_id):
            with self._lock:
                slot = self._pending.pop(request_id, None)
                late = slot is None and request_id in self._abandoned
        if slot is not None:
            slot.response = message
            slot.event.set()
        elif late:
            logger.info("%s: discarded a late response to request %r (timed out or cancelled)",
                        self.name, request_id)
        else:
            logger.warning("%s: discarded a response to unknown request %.50r", self.name, request_id)

    def _fail_one(self, request_id: Any, error: MCPError) -> bool:
        """Fail the waiting request ``request_id`` with ``error``; False if none waits under that id."""
        if not usable_id(request_id):
            return False
        with self._lock:
            slot = self._pending.pop(request_id, None)
            if slot is not None:
                self._abandon(request_id)
        if slot is None:
            return False
        slot.error = error
        slot.event.set()
        return True

    def _raise_if_gone(self) -> None:
        """Raise the stored failure (call with ``_lock`` held)."""
        if self._closed:
            raise MCPTransportError(f"the stdio transport of {self.name} is closed", server=self.name)
        if self._failure is not None:
            raise self._failure.error(self.name)

    def _abandon(self, request_id: Any) -> None:
        """Remember an id whose response is no longer awaited (call with ``_lock`` held)."""
        self._abandoned[request_id] = None
        while len(self._abandoned) > _ABANDONED_IDS:
            self._abandoned.popitem(last=False)

    def _fail_pending(self, failure: Failure, *, final: bool) -> int:
        """Fail every waiting send with ``failure``; ``final`` also fails every later send."""
        with self._lock:
            if final and self._failure is None:
                self._failure = failure
            slots = list(self._pending.items())
            self._pending.clear()
            for request_id, _ in slots:
                self._abandon(request_id)
        for _, slot in slots:
            slot.error = failure
            slot.event.set()
        return len(slots)
