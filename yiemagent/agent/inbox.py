"""The agent's queue machinery: closable input queues, the shutdown sentinel, bounded delivery.

Rules (each has a test in tests/test_agent_races.py):

* an input queue is closed by ``Agent.shutdown()``; from then on ``put`` raises
  ``AgentClosedError`` at once, and a ``put`` already blocked on a full queue
  wakes up and raises it too, so no input is kept that nobody will serve;
* every ``put`` sets a shared wake-up event, so one thread can wait on two
  queues;
* ``deliver`` never blocks for ever on a full output queue: it gives up when
  its ``give_up()`` says so (shutdown "now", ``abort()``, the shutdown deadline)
  and the caller keeps the item.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from .._internal.fork import fresh_queue_locks, on_fork_in_child
from ..exceptions import AgentClosedError

__all__ = ["EMPTY", "SHUTDOWN", "ClosableQueue", "deliver"]

_POLL_SECONDS = 0.05


class _Shutdown:
    """The shutdown sentinel: put it on ``input_queue`` to stop the agent thread."""

    def __repr__(self) -> str:
        return "SHUTDOWN"


SHUTDOWN = _Shutdown()
"""Put on ``agent.input_queue`` to stop the thread after the inputs before it."""


class _Empty:
    def __repr__(self) -> str:
        return "EMPTY"


EMPTY = _Empty()
"""Internal: "both queues were empty" (``None`` is an input like any other and gets an answer)."""


class ClosableQueue(queue.Queue):  # type: ignore[type-arg]
    """A ``queue.Queue`` that can be closed to producers and wakes a shared event on every put.

    Args:
        maxsize: as for ``queue.Queue``.
        wakeup: set after every successful put.
    """

    def __init__(self, maxsize: int, wakeup: threading.Event) -> None:
        super().__init__(maxsize)
        self._wakeup = wakeup
        self.closed = False
        self.accept: Callable[[Any], Any] | None = None
        """With a store: adds each input to the conversation's inbox as it is put (returns what to queue)."""
        self.closed_reason = "the agent was shut down; this input was not accepted"
        on_fork_in_child(self._after_fork)

    def _after_fork(self) -> None:
        """In a forked child: locks a parent thread held stay held; the child gets new ones."""
        fresh_queue_locks(self)

    def close(self, reason: str | None = None) -> None:
        """Refuse every later put (``AgentClosedError`` with ``reason``) and wake the puts blocked on a full queue."""
        with self.mutex:
            self.closed = True
            if reason is not None:
                self.closed_reason = reason
            self.not_full.notify_all()

    def _put(self, item: Any) -> None:
        if self.accept is not None:
            item = self.accept(item)
        super()._put(item)

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        """Put ``item``, like ``queue.Queue.put``.

        Raises:
            AgentClosedError: the agent was shut down (also while this put waited).
            queue.Full: the queue stayed full (``block=False`` or ``timeout`` seconds).
            ValueError: ``timeout`` is negative.
        """
        with self.not_full:
            if self.closed:
                raise AgentClosedError(self.closed_reason)
            if self.maxsize > 0:
                if not block:
                    if self._qsize() >= self.maxsize:
                        raise queue.Full
                elif timeout is None:
                    while self._qsize() >= self.maxsize and not self.closed:
                        self.not_full.wait()
                elif timeout < 0:
                    raise ValueError("'timeout' must be a non-negative number")
                else:
                    end = time.monotonic() + timeout
                    while self._qsize() >= self.maxsize and not self.closed:
                        remaining = end - time.monotonic()
                        if remaining <= 0.0:
                            raise queue.Full
                        self.not_full.wait(remaining)
                if self.closed:
                    raise AgentClosedError("the agent shut down while this input waited for room; not accepted")
            self._put(item)
            self.unfinished_tasks += 1
            self.not_empty.notify()
        self._wakeup.set()

    def take_all(self) -> list[Any]:
        """Remove and return every queued item, in order."""
        items = []
        while True:
            try:
                items.append(self.get_nowait())
            except queue.Empty:
                return items


def deliver(target: queue.Queue[Any], item: Any, give_up: Callable[[], bool]) -> bool:
    """Put ``item`` on ``target``, waiting for room until ``give_up()`` is true.

    ``give_up`` is asked every 0.05 s while the queue is full. Returns True when
    delivered, False when the caller must keep ``item`` itself.
    """
    while True:
        try:
            target.put(item, timeout=_POLL_SECONDS)
            return True
        except queue.Full:
            if give_up():
                return False
