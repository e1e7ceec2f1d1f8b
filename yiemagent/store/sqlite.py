"""SQLiteStore: the default conversation store, one file shared by the processes of one host.

Stdlib ``sqlite3`` only. The database runs in WAL mode (readers never wait for
the writer), every write is one ``BEGIN IMMEDIATE`` transaction (SQLite's
write lock: writers queue for up to ``timeout_seconds``), and the lease is a
row with an expiry fenced by a token (see ``yiemagent.store.base``). Safe across
processes and threads on one host; not on a network file system (SQLite's
locks do not hold there): use ``PostgresStore`` across hosts.

Durability: ``synchronous="NORMAL"`` (default) keeps every commit through a
crash or ``kill -9`` of the process; only a power loss may lose the last
commits. ``"FULL"`` syncs each commit to disk (slower).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from ..exceptions import ConfigError
from .sql import SQLStoreBase

__all__ = ["SQLiteStore"]


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
        ConfigError: a bad ``synchronous`` or ``table_prefix``.
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
        if synchronous not in ("NORMAL", "FULL"):
            raise ConfigError(f"synchronous must be 'NORMAL' or 'FULL', not {synchronous!r}")
        self.path = os.fspath(path)
        self.timeout_seconds = timeout_seconds
        self.synchronous = synchronous

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self.timeout_seconds, isolation_level=None,
                               check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout_seconds * 1000)}")
            if self.path != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            with self._transaction(conn) as cur:
                for statement in self._schema():
                    cur.execute(statement)
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _transaction(self, conn: Any) -> Iterator[Any]:
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
