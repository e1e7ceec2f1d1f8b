"""FaultyStore: a fault-injection seam around a ``ConversationStore`` (for tests and fault exploration only).

Never use it in production: it exists so that tests
(``tests/store/test_schedules.py``) and ``scripts/explore_schedules.py`` can
put a fault at every write of a durable run and check the promises of
``yiemagent.store.durable`` under each schedule.

``FaultyStore(store, fault=Fault(at=5, kind="fail"))`` forwards every call to
``store`` and counts the *writes* (``enqueue``, ``acquire``, ``put_step``,
``put_steps``, ``commit``, ``release``; ``renew`` is not counted, as heartbeats come at times
that vary from run to run). At the write numbered ``at`` (1-based) it injects:

* ``"fail"``: ``StoreError`` before the write (nothing written: disk full, a
  refused connection);
* ``"fail_after"``: the write happens, then ``StoreError`` (the connection cut
  after the database committed: the caller cannot know it was written);
* ``"cut"``: the store's real connection is cut first (PostgreSQL: the
  backend is terminated with ``pg_terminate_backend`` from another
  connection; SQLite: the connection is closed), then the write is made on it
  (it fails, or reconnects, as the backend does);
* ``"pause"``: ``on_pause(write)`` is called before the write (a test sends
  its own process SIGSTOP there, and a parent SIGCONT later).

``writes`` lists every counted write as ``(number, method, detail)`` (detail:
the step key for ``put_step``, the keys for ``put_steps``), so a first run without a fault tells a test
how many schedules there are.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .._internal.checks import all_of, check_int, one_of
from ..exceptions import StoreError

__all__ = ["Fault", "FaultKind", "FaultyStore"]

logger = logging.getLogger("yiemagent.store.faults")

FaultKind = Literal["fail", "fail_after", "cut", "pause"]

_WRITES = ("enqueue", "acquire", "put_step", "put_steps", "commit", "release")


@dataclass(frozen=True)
class Fault:
    """One fault: at write number ``at`` (1-based; see ``FaultyStore.writes``), of kind ``kind``."""

    at: int
    kind: FaultKind = "fail"
    only: tuple[str, ...] = _WRITES
    """The methods counted (default: every write but ``renew``)."""
    repeat: bool = False
    """True: every counted write from ``at`` on gets the fault (a store that keeps failing)."""

    def __post_init__(self) -> None:
        check_int("Fault at", self.at, minimum=1)
        one_of("Fault kind", self.kind, ("fail", "fail_after", "cut", "pause"))
        all_of("Fault only", self.only, _WRITES, empty=False)


class FaultyStore:
    """A ``ConversationStore`` that forwards to ``store`` and injects ``fault`` (see the module docstring).

    Args:
        store: the real store (``SQLiteStore``, ``PostgresStore``, ...).
        fault: the fault to inject, or None (count only).
        on_pause: called with the write number for a ``"pause"`` fault.
    """

    def __init__(self, store: Any, fault: Fault | None = None, *,
                 on_pause: Callable[[int], None] | None = None) -> None:
        self.store = store
        self.fault = fault
        self.on_pause = on_pause
        self.writes: list[tuple[int, str, str]] = []
        """``(number, method, detail)`` of every counted write so far."""
        self.injected: list[tuple[int, str, str]] = []
        """The writes a fault was injected at."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FaultyStore({self.store!r}, {self.fault!r})"

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if name not in _WRITES and name != "renew":
            return attr
        if name == "renew" or (self.fault is not None and name not in self.fault.only):
            return attr

        def write(*args: Any, **kwargs: Any) -> Any:
            detail = str(args[2]) if name == "put_step" and len(args) > 2 else ""
            if name == "put_steps" and len(args) > 2:
                detail = " ".join(str(step) for step, _ in args[2])
            with self._lock:
                number = len(self.writes) + 1
                self.writes.append((number, name, detail))
            fault = self.fault
            if fault is None or number < fault.at or (number > fault.at and not fault.repeat):
                return attr(*args, **kwargs)
            self.injected.append((number, name, detail))
            logger.info("injecting %s at write %d (%s %s)", fault.kind, number, name, detail)
            if fault.kind == "fail":
                raise StoreError(f"injected fault at write {number} ({name}): database or disk is full") \
                    from sqlite3.OperationalError("database or disk is full")
            if fault.kind == "pause":
                if self.on_pause is not None:
                    self.on_pause(number)
                return attr(*args, **kwargs)
            if fault.kind == "cut":
                self._cut()
                return attr(*args, **kwargs)
            attr(*args, **kwargs)  # fail_after: written, then the caller hears of a failure
            raise StoreError(f"injected fault after write {number} ({name}): connection lost")

        return write

    def _cut(self) -> None:
        """Cut the inner store's connection as the network or the server would."""
        conn = getattr(self.store, "_conn", None)
        if conn is None:
            return
        info = getattr(conn, "info", None)
        pid = getattr(info, "backend_pid", None)
        dsn = getattr(self.store, "dsn", None)
        if pid is not None and dsn is not None:
            import psycopg

            with psycopg.connect(dsn, autocommit=True) as side:
                side.execute("SELECT pg_terminate_backend(%s)", (pid,))
            return
        self.store.close()  # SQLite: the connection is gone; the next use reopens the file
