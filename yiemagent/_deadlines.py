"""One watchdog thread that runs an action when a deadline passes (to cut a socket).

A socket timeout bounds each ``recv``, not a whole response: a peer that
sends a byte every 0.5 s keeps a 30 s request alive for hours, in the status
line, the headers or the body alike. ``WATCHDOG.arm(at, action)`` runs
``action()`` (shut the connection's socket down) once ``time.monotonic()``
reaches ``at``, unless ``disarm`` came first. The thread starts on the first
``arm`` and ends as soon as nothing is armed, so an idle process has no
watchdog thread.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

from ._fork import on_fork_in_child

__all__ = ["WATCHDOG", "Watchdog"]

logger = logging.getLogger("yiemagent.http")


class _Handle:
    __slots__ = ("action", "at", "done")

    def __init__(self, at: float, action: Callable[[], object]) -> None:
        self.at = at
        self.action = action
        self.done = False


class Watchdog:
    """Deadlines in ``time.monotonic()`` seconds, served by one daemon thread.

    Thread safety: ``arm`` and ``disarm`` may be called from any thread. An
    action must be quick and must not raise (a raise is logged).
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Handle]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        on_fork_in_child(self._after_fork)

    def _after_fork(self) -> None:
        """In a forked child: the parent's thread is gone and its deadlines are not ours."""
        self._heap, self._cond, self._thread = [], threading.Condition(), None

    def arm(self, at: float, action: Callable[[], object]) -> _Handle:
        """Run ``action()`` on the watchdog thread at monotonic time ``at``; returns the handle for ``disarm``."""
        handle = _Handle(at, action)
        with self._cond:
            heapq.heappush(self._heap, (at, next(self._seq), handle))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="yiemagent-http-deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()
        return handle

    def disarm(self, handle: _Handle) -> None:
        """Forget ``handle`` (its action will not run); a no-op if it already ran."""
        with self._cond:
            handle.done = True
            while self._heap and self._heap[0][2].done:
                heapq.heappop(self._heap)
            self._cond.notify()

    @property
    def armed(self) -> int:
        """How many deadlines are waiting (for tests)."""
        with self._cond:
            return sum(1 for _, _, handle in self._heap if not handle.done)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._thread = None  # nothing armed: the thread ends (a later arm starts a new one)
                    return
                at, _, handle = self._heap[0]
                wait = at - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                handle.done = True
            try:
                handle.action()
            except Exception:  # an action must not end the watchdog
                logger.exception("a deadline action raised")


WATCHDOG = Watchdog()
"""The process-wide watchdog used by ``CancellableSession.deadline``."""
