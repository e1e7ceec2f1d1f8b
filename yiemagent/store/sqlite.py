"""SQLiteStore: the default conversation store, one file shared by the processes of one host.

Stdlib ``sqlite3`` only. The database runs in WAL mode (readers never wait for
the writer), every write is one ``BEGIN IMMEDIATE`` transaction (SQLite's
write lock: writers queue for up to ``timeout_seconds``), and the lease is a
row with an expiry fenced by a token (see ``yiemagent.store.base``). Safe across
processes and threads on one host; not on a network file system (SQLite's
locks do not hold there): use ``PostgresStore`` across hosts.

Lease clock: leases are measured on the host's boot clock
(``CLOCK_BOOTTIME`` on Linux: one clock for every process of the host, never
set by anyone, so it cannot jump with NTP, ``date -s`` or a process whose
``time.time()`` is off), tagged with the kernel's boot id: a lease written
before a reboot counts as expired. Elsewhere ``time.monotonic()`` (system-wide
on macOS and Windows), tagged ``"monotonic"``. This is why SQLiteStore is for
one host: the clock is the host's. Containers in their own time namespace
share the host's boot id but not its boot clock: give them one namespace.

A process paused (SIGSTOP, a VM pause) while it holds SQLite's write lock
(inside one of the store's short transactions) blocks every writer of the file
until it resumes: they fail with ``StoreError`` after ``timeout_seconds`` and
try again. Where processes may be paused for long, use ``PostgresStore``
(its ``lock_timeout_seconds`` bounds that wait).

Opening: many processes and threads may open one fresh file at once. SQLite
can answer the switch to WAL with ``SQLITE_BUSY`` without calling its busy
handler; the setup is retried for up to ``timeout_seconds``.

Durability: ``synchronous="NORMAL"`` (default) keeps every commit through a
crash or ``kill -9`` of the process; only a power loss may lose the last
commits. ``"FULL"`` syncs each commit to disk (slower).
"""

from __future__ import annotations

import functools
import os
import random
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from .._internal.checks import check_number, one_of
from ..exceptions import ConfigError
from .sql import SQLStoreBase

__all__ = ["SQLiteStore"]

_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", None)


def _host_clock() -> float:
    """Seconds on the host's boot clock (the same in every process of the host; never set)."""
    return time.clock_gettime(_BOOTTIME) if _BOOTTIME is not None else time.monotonic()


@functools.lru_cache(maxsize=1)
def _host_clock_id() -> str:
    """The boot id naming this boot's clock (``"monotonic"`` where the kernel gives none)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return "boot:" + f.read().strip()
    except OSError:
        return "monotonic"


def _busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class SQLiteStore(SQLStoreBase):
    """A ``ConversationStore`` in an SQLite file.

    Args:
        path: the database file (created with its tables if missing);
            ``":memory:"`` is private to this object (tests).
        timeout_seconds: how long a write waits for another process's write
            lock before failing with ``StoreError``.
        synchronous: SQLite ``PRAGMA synchronous``: ``"NORMAL"`` or ``"FULL"``.
        table_prefix: prefix of the three table names.

    Raises:
        ConfigError: a bad ``synchronous`` or ``table_prefix``; ``path`` not a str or path, or in a folder
            that does not exist (named in the message).
        StoreError: the file cannot be opened (on first use).

    Example:
        >>> import tempfile, os
        >>> store = SQLiteStore(os.path.join(tempfile.mkdtemp(), "chats.db"))
        >>> store.enqueue("c-1", "Hello")
        1
        >>> [e.message["content"] for e in store.pending("c-1")]
        ['Hello']
        >>> store.close()
    """

    _errors = (sqlite3.Error,)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout_seconds: float = 30.0,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        table_prefix: str = "yiemagent_",
    ) -> None:
        super().__init__(table_prefix)
        one_of("synchronous", synchronous, ("NORMAL", "FULL"))
        check_number("timeout_seconds", timeout_seconds)
        if not isinstance(path, (str, os.PathLike)):
            raise ConfigError(f"SQLiteStore(path): a file path (str or pathlib.Path), not {type(path).__name__} "
                              f"{path!r:.60}")
        self.path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(self.path)) if self.path != ":memory:" else ""
        if folder and not os.path.isdir(folder):
            raise ConfigError(f"SQLiteStore({self.path!r}): the folder {folder!r} does not exist (create it first)")
        self._clock_id = _host_clock_id()
        self.timeout_seconds = timeout_seconds
        self.synchronous = synchronous

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def _connect(self) -> sqlite3.Connection:
        deadline = time.monotonic() + self.timeout_seconds
        pause = 0.005
        while True:
            try:
                return self._open()
            except sqlite3.Error as exc:  # BUSY from the WAL switch skips the busy handler: retry
                if not _busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(pause * (1 + random.random()))
            pause = min(pause * 2, 0.2)

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self.timeout_seconds, isolation_level=None,
                               check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout_seconds * 1000)}")
            if self.path != ":memory:" and conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            with self._transaction(conn) as cur:
                for statement in self._schema():
                    cur.execute(statement)
                cur.execute(f"PRAGMA table_info({self.conversations_table})")
                if "lease_clock" not in [row[1] for row in cur.fetchall()]:  # a table made by 0.x
                    cur.execute(f"ALTER TABLE {self.conversations_table} ADD COLUMN lease_clock TEXT")
        except BaseException:
            conn.close()
            raise
        return conn

    def _now(self, cur: Any) -> float:
        return _host_clock()

    @contextmanager
    def _transaction(self, conn: Any, *, sync: bool = True) -> Iterator[Any]:
        cur = conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
        except BaseException:
            if conn.in_transaction:
                cur.execute("ROLLBACK")
            raise
        else:
            cur.execute("COMMIT")
        finally:
            cur.close()
