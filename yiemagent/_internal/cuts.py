"""Which abort events cut the waits begun on this thread (a run's, a tool call's).

An abort cuts what is in flight (``MCPClient.cancel_in_flight``, a model
request's ``cancel()``); a request *begun after* the abort, in the same run,
must not start a new wait of its own (a re-listing of the MCP servers after
the cut listing failed, a retry, the next step of a handshake).
``with cut_by(event):`` names the event that ends the work of the block;
``cut_requested()`` is True once one of the events named by the enclosing
blocks is set. Blocks nest (every event named counts) and are per thread and
per ``contextvars`` context: a worker thread names its own event (the tool
call's ``abort_event``).

The MCP client checks ``cut_requested()`` before each message it sends, after
registering the message as in flight: so either the check sees the abort, or
``cancel_in_flight()`` (which an abort calls after setting its event) sees the
message and cuts it. There is no window in which a wait escapes both.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["cut_by", "cut_requested"]

_EVENTS: contextvars.ContextVar[tuple[threading.Event, ...]] = contextvars.ContextVar(
    "yiemagent_cut_by", default=())


@contextmanager
def cut_by(event: threading.Event | None) -> Iterator[None]:
    """Within the block, ``cut_requested()`` is True once ``event`` is set (None: no change)."""
    if event is None:
        yield
        return
    token = _EVENTS.set((*_EVENTS.get(), event))
    try:
        yield
    finally:
        _EVENTS.reset(token)


def cut_requested() -> bool:
    """True when an event named by an enclosing ``cut_by`` block (of this context) is set."""
    return any(event.is_set() for event in _EVENTS.get())
