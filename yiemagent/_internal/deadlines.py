"""One watchdog thread that runs an action when a deadline passes (to cut a socket).

A socket timeout bounds each ``recv``, not a whole response: a peer that
sends a byte every 0.5 s keeps a 30 s request alive for hours, in the status
line, the headers or the body alike. ``WATCHDOG.arm(at, action)`` runs
``action()`` (shut the connection's socket down) once ``time.monotonic()``
reaches ``at``, unless ``disarm`` came first. The thread starts on the first
``arm`` and ends as soon as nothing is armed, so an idle process has no
watchdog thread.

A deadline may be kept on a ``PausableClock`` (``arm(at, action, clock=c)``):
time spent inside ``c.pause()`` does not count towards it. The MCP client
pauses its transport's clock while a callback (elicitation, sampling) answers
a server request, so that the time a person takes is not charged to the tool
call that is waiting.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .fork import on_fork_in_child

__all__ = ["PAUSED_POLL_SECONDS", "WATCHDOG", "PausableClock", "Watchdog", "wait_until"]

logger = logging.getLogger("yiemagent.http")


PAUSED_POLL_SECONDS = 0.25
"""While a clock is paused, waiters and the watchdog look again this often (at least)."""


class PausableClock:
    """``time.monotonic()`` that stands still while any thread is inside ``pause()``.

    ``now()`` is monotonic seconds minus the time during which at least one
    ``pause()`` block was open (pauses of several threads that overlap count
    once). A deadline ``clock.now() + timeout`` compared with ``clock.now()``
    is thus pushed back by every pause.

    Thread safety: every method may be called from any thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = 0
        self._since = 0.0
        self._paused_seconds = 0.0

    def now(self) -> float:
        """Monotonic seconds minus the seconds spent paused (so far, including an open pause)."""
        with self._lock:
            now = time.monotonic()
            return now - self._paused_seconds - (now - self._since if self._open else 0.0)

    @property
    def paused(self) -> bool:
        """True while a ``pause()`` block is open on some thread."""
        with self._lock:
            return self._open > 0

    @property
    def paused_seconds(self) -> float:
        """Seconds this clock has stood still so far (for logs and tests)."""
        with self._lock:
            return self._paused_seconds + (time.monotonic() - self._since if self._open else 0.0)

    @contextmanager
    def pause(self) -> Iterator[None]:
        """Stop the clock for the block (nested and concurrent blocks allowed)."""
        with self._lock:
            if self._open == 0:
                self._since = time.monotonic()
            self._open += 1
        try:
            yield
        finally:
            with self._lock:
                self._open -= 1
                if self._open == 0:
                    self._paused_seconds += time.monotonic() - self._since


def wait_until(event: threading.Event, deadline: float, clock: PausableClock) -> bool:
    """Wait for ``event`` until ``clock.now()`` reaches ``deadline``; True if it was set.

    While the clock is paused the wait goes on (checking every
    ``PAUSED_POLL_SECONDS`` at least), however long the pause lasts.
    """
    while True:
        remaining = deadline - clock.now()
        if remaining <= 0:
            return event.is_set()
        if clock.paused:
            remaining = max(remaining, PAUSED_POLL_SECONDS)
        if event.wait(remaining):
            return True


class _Handle:
    __slots__ = ("action", "at", "clock", "done")

    def __init__(self, at: float, action: Callable[[], object], clock: PausableClock | None) -> None:
        self.at = at
        self.action = action
        self.clock = clock
        self.done = False

    def due_in(self) -> float:
        """Seconds until the action is due by its clock (<= 0: due); a paused clock waits at least a poll."""
        if self.clock is None:
            return self.at - time.monotonic()
        remaining = self.at - self.clock.now()
        return max(remaining, PAUSED_POLL_SECONDS) if remaining > 0 and self.clock.paused else remaining


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

    def arm(self, at: float, action: Callable[[], object], clock: PausableClock | None = None) -> _Handle:
        """Run ``action()`` on the watchdog thread at time ``at``; returns the handle for ``disarm``.

        ``at`` is ``time.monotonic()`` seconds, or ``clock.now()`` seconds
        with a ``clock`` (then a pause of the clock delays the action).
        """
        handle = _Handle(at, action, clock)
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + handle.due_in(), next(self._seq), handle))
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
                later = handle.due_in()
                if later > 0:  # its clock was paused meanwhile: due later
                    heapq.heappush(self._heap, (time.monotonic() + later, next(self._seq), handle))
                    continue
                handle.done = True
            try:
                handle.action()
            except Exception:  # an action must not end the watchdog
                logger.exception("a deadline action raised")


WATCHDOG = Watchdog()
"""The process-wide watchdog used by ``CancellableSession.deadline``."""
