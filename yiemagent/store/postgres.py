"""PostgresStore: a conversation store in PostgreSQL, for processes on several hosts.

Needs the extra ``postgres`` (``pip install -e ".[postgres]"`` (``psycopg[binary]>=3.1``, the sync
API). Each store object holds one connection (autocommit, reconnected when
broken or after ``fork``); every write that must be atomic is one transaction
that locks the conversation's row (``SELECT ... FOR UPDATE``). Lease expiry is
measured by the database clock (``clock_timestamp()``), so the hosts' clocks
do not matter. Tables are created on first use under an advisory lock, so
several processes may start at once.

A process paused in the middle of a write (SIGSTOP, a VM pause) holds the
conversation's row at most ``lock_timeout_seconds``: the server then ends
its session (``idle_in_transaction_session_timeout``), and others waiting
for the row give up after as long (``lock_timeout``) and try again.

Durability (``sync_journal``): commits, inbox writes, leases and the
"started" marker written before each tool runs always wait for the disk
(``synchronous_commit = on``). With ``"markers"`` (default) the journal's
model replies and tool results do not (``synchronous_commit = off``): they
survive the death of any agent process at once and reach the disk within
~0.2 s; only a crash of the database server itself within that window can
lose them, and then the call is reported "interrupted" (its marker is on disk,
written before it), never run twice. ``"all"`` waits for the disk on every
step (one fsync per step).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from .._internal.checks import check_number, install_hint, one_of
from ..exceptions import ConfigError
from .sql import SQLStoreBase

__all__ = ["PostgresStore"]


class PostgresStore(SQLStoreBase):
    """A ``ConversationStore`` in PostgreSQL (psycopg 3).

    Args:
        dsn: a libpq connection string or URL, e.g.
            ``"host=127.0.0.1 port=5432 dbname=app user=app"`` or
            ``"postgresql://app@127.0.0.1/app"``.
        table_prefix: prefix of the three table names.
        connect_timeout_seconds: seconds to wait for a connection.
        sync_journal: ``"markers"`` or ``"all"`` (see the module docstring).
        lock_timeout_seconds: the longest a statement waits for a row lock (then
            ``StoreError``, and the caller tries again), and the longest a session may sit
            idle inside a transaction before the server ends it: a process paused
            (SIGSTOP, a VM pause) in the middle of a write never holds a conversation's
            row for longer (PostgreSQL's ``lock_timeout`` and
            ``idle_in_transaction_session_timeout``).

    Raises:
        ConfigError: psycopg is not installed (``pip install -e ".[postgres]"``),
            or a bad ``table_prefix``.
        StoreError: the database cannot be reached (on first use).
    """

    _for_update = " FOR UPDATE"
    _share_lock = " FOR SHARE"

    def __init__(
        self,
        dsn: str,
        *,
        table_prefix: str = "yiemagent_",
        connect_timeout_seconds: float = 10.0,
        sync_journal: Literal["markers", "all"] = "markers",
        lock_timeout_seconds: float = 30.0,
    ) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise ConfigError(f"PostgresStore needs psycopg 3: {install_hint('postgres')}") from exc
        one_of("sync_journal", sync_journal, ("markers", "all"))
        check_number("connect_timeout_seconds", connect_timeout_seconds)
        check_number("lock_timeout_seconds", lock_timeout_seconds)
        if not isinstance(lock_timeout_seconds, (int, float)) or not 0 < lock_timeout_seconds <= 86400:
            raise ConfigError(f"lock_timeout_seconds must be a number in (0, 86400], not {lock_timeout_seconds!r:.40}")
        super().__init__(table_prefix)
        self._async_steps = sync_journal == "markers"
        self.sync_journal = sync_journal
        self._psycopg = psycopg
        self._errors = (psycopg.Error,)
        self.dsn = dsn
        self.connect_timeout_seconds = connect_timeout_seconds
        self.lock_timeout_seconds = lock_timeout_seconds

    def __repr__(self) -> str:
        return f"PostgresStore(tables {self.conversations_table!r}, ...)"

    def _sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    def _connect(self) -> Any:
        conn = self._psycopg.connect(self.dsn, autocommit=True,
                                     connect_timeout=max(1, int(self.connect_timeout_seconds)))
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.conversations_table,))
                for statement in self._schema():
                    cur.execute(statement)
                cur.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND "
                            "table_name = %s AND column_name = 'lease_clock'", (self.conversations_table.lower(),))
                if cur.fetchone() is None:  # a table made by 0.x (ALTER takes an exclusive lock: only if needed)
                    cur.execute(f"ALTER TABLE {self.conversations_table} ADD COLUMN lease_clock TEXT")
            if self._async_steps:  # the default for single statements: journal replies and results
                conn.execute("SET synchronous_commit = off")
            milliseconds = max(1, int(self.lock_timeout_seconds * 1000))
            conn.execute(f"SET lock_timeout = {milliseconds}")
            conn.execute(f"SET idle_in_transaction_session_timeout = {milliseconds}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _broken(self, conn: Any) -> bool:
        return bool(conn.closed or conn.broken)

    @contextmanager
    def _transaction(self, conn: Any, *, sync: bool = True) -> Iterator[Any]:
        with conn.transaction(), conn.cursor() as cur:
            if self._async_steps and sync:
                cur.execute("SET LOCAL synchronous_commit = on")
            yield cur

    def _now(self, cur: Any) -> float:
        cur.execute("SELECT extract(epoch FROM clock_timestamp())::float8")
        row = cur.fetchone()
        return float(row[0])
