"""The SQL both store backends share: tables, statements, transactions, fencing.

``SQLStoreBase`` implements every ``ConversationStore`` method on a DB-API
connection; ``SQLiteStore`` and ``PostgresStore`` supply the connection, how a
write transaction starts (``BEGIN IMMEDIATE`` / ``BEGIN`` + ``FOR UPDATE``),
the clock used for leases and the driver's error types.

Fencing: ``commit`` and every journal write given a ``lease`` (``put_step(...,
lease=)``, as ``StoreJournal`` writes) check in the same transaction that the
lease's token is still the current one: a holder whose lease was taken (a
paused or partitioned "zombie") writes nothing (``StaleStateError``).

Lease clock: expiries are stored and compared on ONE clock per database, never
on each process's ``time.time()``: ``PostgresStore`` uses the database's
``clock_timestamp()``; ``SQLiteStore`` (one host) the host's boot clock (see
``yiemagent.store.sqlite``), tagged with the boot id in ``lease_clock`` so a
lease written before a reboot counts as expired. A lease expiring more than
``MAX_LEASE_SECONDS`` ahead of that clock (a tampered or corrupt row: NaN,
the year 10^300) counts as expired, with a warning.

Decoding (``yiemagent.store.rows``): a row that is not what this module
wrote (non-JSON, wrong shape) never raises ``json.JSONDecodeError``: journal
reads raise ``CorruptRowError`` (a ``StoreError``); an inbox row whose message
cannot be read comes back as an ``InboxEntry`` with ``error`` set (the
conversation answers it with that error and goes on); an unreadable stored
answer reads as an error answer.

Statements are written with ``?`` placeholders; the Postgres backend turns them
into ``%s``. Every statement touching a conversation names its id first, so
the primary keys serve them all.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .._internal.checks import check_int, one_of
from ..exceptions import ConfigError, StaleStateError, StoreError
from .base import (
    MAX_LEASE_SECONDS,
    ConversationRecord,
    CorruptRowError,
    InboxEntry,
    Lease,
    ReplyTo,
    ServedInput,
    StoreBase,
    normalize_input,
    run_key,
)
from .rows import INBOX_COLUMNS, inbox_entry, int_column, json_column
from .statements import JournalStatements, schema

__all__ = ["SQLStoreBase"]

logger = logging.getLogger("yiemagent.store")

_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,40}$")


class SQLStoreBase(StoreBase):
    """``ConversationStore`` over SQL; subclasses give the connection and dialect."""

    _for_update = ""
    """Suffix that locks the selected conversation row inside a write transaction."""
    _async_steps = False
    _share_lock = ""
    """Suffix that share-locks the lease row read by a fenced journal insert (blocks a concurrent ``acquire``)."""
    """True when journal steps other than ``started/`` markers are committed without waiting for the disk."""

    def __init__(self, table_prefix: str) -> None:
        if not _PREFIX.match(table_prefix):
            raise ConfigError(f"table_prefix must match {_PREFIX.pattern}, not {table_prefix!r}")
        p = table_prefix
        self.conversations_table = f"{p}conversations"
        self.inbox_table = f"{p}inbox"
        self.journal_table = f"{p}journal"
        self._lock = threading.RLock()
        self._conn: Any = None
        self._pid = os.getpid()
        self._forked: list[Any] = []  # connections inherited over fork: never used or closed here
        self._journal_sql = JournalStatements(self.journal_table, self.conversations_table, self._sql,
                                              self._share_lock)

    # ------------------------------------------------------------------ dialect (subclasses)

    _errors: tuple[type[BaseException], ...] = ()

    def _connect(self) -> Any:
        raise NotImplementedError

    @contextmanager
    def _transaction(self, conn: Any, *, sync: bool = True) -> Iterator[Any]:
        """A write transaction; yields a cursor. Rolls back on any exception.

        ``sync=False``: the backend may commit it without waiting for the disk (``_async_steps``).
        """
        raise NotImplementedError
        yield  # pragma: no cover

    _clock_id = "db"
    """Names the clock of ``lease_expires_at``; a lease row on another clock (a previous boot) is expired."""

    def _now(self, cur: Any) -> float:
        """Seconds by the one clock leases are measured with (backends: the database's, the host's)."""
        raise NotImplementedError

    def _expired(self, holder: Any, clock: Any, expires_at: Any, now: float) -> bool:
        """True when a lease row (holder, clock id, expiry) no longer holds at ``now`` (on ``_clock_id``)."""
        if holder is None or expires_at is None or clock != self._clock_id:
            return True
        try:
            expiry = float(expires_at)
        except (TypeError, ValueError):
            expiry = float("nan")
        if not expiry <= now + MAX_LEASE_SECONDS:  # NaN, infinity, the year 10^300: a corrupt row
            logger.warning("a lease row expiring at %.40r (now %.0f on its clock) is corrupt; treated as expired",
                           expires_at, now)
            return True
        return expiry <= now

    def _sql(self, statement: str) -> str:
        return statement

    def _schema(self) -> list[str]:
        return schema(self.conversations_table, self.inbox_table, self.journal_table)

    # ------------------------------------------------------------------ connection

    @contextmanager
    def _use(self) -> Iterator[Any]:
        """The connection, under the lock; driver errors become ``StoreError``."""
        with self._lock:
            if self._pid != os.getpid():  # forked: the parent's connection is not ours to use
                self._forked.append(self._conn)
                self._conn, self._pid = None, os.getpid()
            if self._conn is None or self._broken(self._conn):
                try:
                    self._conn = self._connect()
                except self._errors as exc:
                    raise StoreError(f"cannot open the conversation store: {exc}") from exc
            try:
                yield self._conn
            except self._errors as exc:
                raise StoreError(f"conversation store failed: {type(exc).__name__}: {exc}") from exc

    def _broken(self, conn: Any) -> bool:
        return False

    def close(self) -> None:
        """Close the connection; the store reconnects if used again."""
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None and self._pid == os.getpid():
                try:
                    conn.close()
                except self._errors:
                    logger.debug("closing the store connection failed", exc_info=True)

    def __enter__(self) -> SQLStoreBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _cursor(self, conn: Any) -> Iterator[Any]:
        """A cursor for one autocommit statement."""
        cur = conn.cursor()
        try:
            yield cur
        finally:
            cur.close()

    def _read(self, statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._use() as conn:
            cur = conn.cursor()
            try:
                cur.execute(self._sql(statement), tuple(params))
                return list(cur.fetchall())
            finally:
                cur.close()

    def _ensure_row(self, cur: Any, conversation_id: str) -> tuple[Any, ...]:
        """Create the conversation row if missing, lock it, return it."""
        c = self.conversations_table
        cur.execute(self._sql(f"INSERT INTO {c} (conversation_id) VALUES (?) ON CONFLICT (conversation_id) "
                              "DO NOTHING"), (conversation_id,))
        cur.execute(self._sql(f"SELECT version, next_seq, lease_owner, lease_token, lease_expires_at, lease_clock "
                              f"FROM {c} WHERE conversation_id = ?{self._for_update}"), (conversation_id,))
        row = cur.fetchone()
        if row is None:  # deleted between the two statements (by hand): nothing sane to go on with
            raise CorruptRowError(f"the row of conversation {conversation_id!r} vanished inside a transaction")
        return tuple(row)

    # ------------------------------------------------------------------ state

    def load(self, conversation_id: str) -> ConversationRecord:
        """The committed state (version 0, state None when unknown)."""
        rows = self._read(f"SELECT version, state, updated_at FROM {self.conversations_table} "
                          "WHERE conversation_id = ?", (conversation_id,))
        if not rows:
            return ConversationRecord(conversation_id, 0, None, None)
        version, state, updated_at = rows[0]
        return ConversationRecord(conversation_id, int_column(version, "version", conversation_id), state, updated_at)

    # ------------------------------------------------------------------ inbox

    def enqueue(
        self, conversation_id: str, message: Any, *, input_id: str | None = None, reply_to: ReplyTo = "store"
    ) -> int:
        """Append an input; return its seq (see ``ConversationStore.enqueue``)."""
        data = normalize_input(message)
        one_of("reply_to", reply_to, ("store", "output_queue"))
        text = self._dumps(data)
        with self._use() as conn, self._transaction(conn) as cur:
            row = self._ensure_row(cur, conversation_id)
            if input_id is not None:
                cur.execute(self._sql(f"SELECT seq FROM {self.inbox_table} WHERE conversation_id = ? AND "
                                      "input_id = ?"), (conversation_id, input_id))
                found = cur.fetchone()
                if found is not None:
                    return int(found[0])
            seq = int_column(row[1], "next_seq", conversation_id)
            cur.execute(self._sql(f"INSERT INTO {self.inbox_table} (conversation_id, seq, input_id, message, "
                                  "reply_to, enqueued_at) VALUES (?, ?, ?, ?, ?, ?)"),
                        (conversation_id, seq, input_id or self._new_input_id(), text, reply_to, time.time()))
            cur.execute(self._sql(f"UPDATE {self.conversations_table} SET next_seq = ? WHERE conversation_id = ?"),
                        (seq + 1, conversation_id))
            return seq

    def pending(self, conversation_id: str, *, limit: int | None = None) -> list[InboxEntry]:
        """Inputs not served yet, seq ascending."""
        statement = (f"SELECT {INBOX_COLUMNS} FROM {self.inbox_table} WHERE conversation_id = ? AND "
                     "served_at IS NULL ORDER BY seq")
        params: list[Any] = [conversation_id]
        check_int("limit", limit, minimum=1, optional=True)  # SQLite reads LIMIT -1 as no limit at all
        if limit is not None:
            statement += " LIMIT ?"
            params.append(int(limit))
        return [inbox_entry(r) for r in self._read(statement, params)]

    def get_input(self, conversation_id: str, seq: int) -> InboxEntry | None:
        """One inbox entry, or None."""
        rows = self._read(f"SELECT {INBOX_COLUMNS} FROM {self.inbox_table} WHERE conversation_id = ? AND seq = ?",
                          (conversation_id, int(seq)))
        return inbox_entry(rows[0]) if rows else None

    def find_input(self, conversation_id: str, input_id: str) -> InboxEntry | None:
        """The inbox entry whose ``input_id`` is this one (with its answer once served), or None.

        What a web client whose stream was cut asks for: it knows the ``input_id`` (it chose it,
        or read it in the stream's first event), not necessarily the seq.
        """
        rows = self._read(f"SELECT {INBOX_COLUMNS} FROM {self.inbox_table} WHERE conversation_id = ? AND "
                          "input_id = ?", (conversation_id, str(input_id)))
        return inbox_entry(rows[0]) if rows else None

    def pending_conversations(self, *, limit: int = 100) -> list[str]:
        """Ids with pending inputs, oldest pending input first."""
        check_int("limit", limit, minimum=1)
        rows = self._read(f"SELECT conversation_id FROM {self.inbox_table} WHERE served_at IS NULL "
                          "GROUP BY conversation_id ORDER BY MIN(enqueued_at), conversation_id LIMIT ?", (int(limit),))
        return [r[0] for r in rows]

    # ------------------------------------------------------------------ journal

    def put_step(self, conversation_id: str, run: str, step: str, value: Any, *, lease: Lease | None = None) -> Any:
        """Record a step unless present; return the stored value (first write wins); fenced by ``lease``.

        The usual case (the lease holds, the key is new) is ONE statement: an ``INSERT ... SELECT
        ... WHERE`` the lease row still names ``lease`` (``JournalStatements.put_fenced``). On SQLite an
        autocommit write statement takes the write lock before it reads, so the check and the
        insert are one atomic transaction, as ``BEGIN IMMEDIATE`` + check + insert + ``COMMIT``
        were; PostgreSQL share-locks the lease row (``FOR SHARE``), so a concurrent ``acquire``
        waits for it and a stale lease inserts nothing. When nothing was inserted (lease lost, key
        present, run committed) the full transaction below tells which.
        """
        text = self._dumps(value)
        # a "started" marker must be on disk before the tool runs: it is what keeps a call from running twice
        sync = not self._async_steps or step.startswith("started/")
        now = time.time()
        with self._use() as conn:
            if lease is not None and not (sync and self._async_steps):
                cur = conn.cursor()
                try:
                    cur.execute(self._journal_sql.put_fenced, (conversation_id, run, step, text, now,
                                                               lease.conversation_id, lease.owner, lease.token))
                    if cur.rowcount == 1:
                        return value  # ours was the first write, under our lease
                finally:
                    cur.close()
            elif lease is not None:  # a synchronous write on an asynchronous session: one transaction
                with self._transaction(conn, sync=True) as cur:
                    cur.execute(self._journal_sql.put_fenced, (conversation_id, run, step, text, now,
                                                               lease.conversation_id, lease.owner, lease.token))
                    if cur.rowcount == 1:
                        return value
            return self._put_slow(conn, conversation_id, run, step, value, text, now, lease, sync)

    def _put_slow(self, conn: Any, conversation_id: str, run: str, step: str, value: Any, text: str, now: float,
                  lease: Lease | None, sync: bool) -> Any:
        """``put_step`` as one transaction: lease check, insert, read back the winner when present."""
        fenced = lease is not None
        with self._transaction(conn, sync=sync) if fenced or (sync and self._async_steps) else \
                self._cursor(conn) as cur:
            if lease is not None:
                self._check_lease(cur, lease)
            cur.execute(self._journal_sql.put, (conversation_id, run, step, text, now))
            if cur.rowcount != 1:
                cur.execute(self._journal_sql.get_step, (conversation_id, run, step))
                row = cur.fetchone()
                if row is None:  # deleted by a commit in between: the run is over
                    raise StaleStateError(
                        f"run {run!r} of {conversation_id!r} was committed meanwhile",
                        conversation_id=conversation_id, reason="version")
                return json_column(row[0], f"journal step {run}/{step}", conversation_id)
        return value  # ours was the first write

    def put_steps(self, conversation_id: str, run: str, steps: Sequence[tuple[str, Any]], *,
                  lease: Lease | None = None) -> list[Any]:
        """``put_step`` for several steps in ONE transaction, fenced by ``lease``; the stored values, in order.

        Each key keeps its first write (a key present keeps its value, returned). What
        ``StoreJournal`` writes a model reply with, together with the "started" marker of its
        first call: one commit instead of two, both before the tool runs. Synchronous when a
        ``started/`` step is among them (as ``put_step``); a lost lease writes none of them.

        Raises:
            StaleStateError: ``lease`` is no longer current (nothing written), or the run was committed meanwhile.
            CorruptRowError: a stored value is not JSON.
        """
        rows = [(step, value, self._dumps(value)) for step, value in steps]
        sync = not self._async_steps or any(step.startswith("started/") for step, _, _ in rows)
        now = time.time()
        with self._use() as conn:
            if lease is not None and rows:  # the usual case in one statement: all new, under our lease
                params: list[Any] = []
                for step, _, text in rows:
                    params += (conversation_id, run, step, text, now)
                params += (lease.conversation_id, lease.owner, lease.token)
                with self._transaction(conn, sync=True) if sync and self._async_steps else \
                        self._cursor(conn) as cur:
                    cur.execute(self._journal_sql.put_many(len(rows)), params)
                    if cur.rowcount == len(rows):
                        return [value for _, value, _ in rows]
            return self._put_steps_slow(conn, conversation_id, run, rows, now, lease, sync)

    def _put_steps_slow(self, conn: Any, conversation_id: str, run: str, rows: list[tuple[str, Any, str]],
                        now: float, lease: Lease | None, sync: bool) -> list[Any]:
        """``put_steps`` as one transaction: lease check, then each insert, reading back a winner present."""
        stored: list[Any] = []
        with self._transaction(conn, sync=sync) as cur:
            if lease is not None:
                self._check_lease(cur, lease)
            for step, value, text in rows:
                cur.execute(self._journal_sql.put, (conversation_id, run, step, text, now))
                if cur.rowcount == 1:
                    stored.append(value)
                    continue
                cur.execute(self._journal_sql.get_step, (conversation_id, run, step))
                row = cur.fetchone()
                if row is None:  # deleted by a commit in between: the run is over
                    raise StaleStateError(f"run {run!r} of {conversation_id!r} was committed meanwhile",
                                          conversation_id=conversation_id, reason="version")
                stored.append(json_column(row[0], f"journal step {run}/{step}", conversation_id))
        return stored

    def steps(self, conversation_id: str, run: str) -> dict[str, Any]:
        """Every step of ``run``: ``{step key: value}``."""
        rows = self._read(f"SELECT step_key, value FROM {self.journal_table} WHERE conversation_id = ? AND "
                          "run_key = ?", (conversation_id, run))
        try:
            return {key: json_column(value, f"journal step {run}/{key}", conversation_id) for key, value in rows}
        except CorruptRowError as exc:  # say which steps exist: a quarantine names the calls that had started
            raise CorruptRowError(str(exc), conversation_id=conversation_id,
                                  step_keys=[str(key) for key, _ in rows]) from exc

    # ------------------------------------------------------------------ lease

    def acquire(self, conversation_id: str, owner: str, *, ttl_seconds: float = 30.0) -> Lease | None:
        """Take the lease if free, expired or ``owner``'s; else None (non-blocking)."""
        ttl_seconds = _ttl(ttl_seconds)
        # a read first, so that processes waiting for a busy conversation do not queue for the write lock
        with self._use() as conn, self._cursor(conn) as cur:
            cur.execute(self._sql(f"SELECT lease_owner, lease_expires_at, lease_clock FROM "
                                  f"{self.conversations_table} WHERE conversation_id = ?"), (conversation_id,))
            row = cur.fetchone()
            if row is not None and row[0] not in (None, owner) and not self._expired(row[0], row[2], row[1],
                                                                                     self._now(cur)):
                return None
        with self._use() as conn, self._transaction(conn) as cur:
            _, _, holder, token, expires_at, clock = self._ensure_row(cur, conversation_id)
            now = self._now(cur)
            token = int_column(token, "lease_token", conversation_id)
            if holder != owner:
                if not self._expired(holder, clock, expires_at, now):
                    return None
                token += 1
            cur.execute(self._sql(f"UPDATE {self.conversations_table} SET lease_owner = ?, lease_token = ?, "
                                  "lease_expires_at = ?, lease_clock = ? WHERE conversation_id = ?"),
                        (owner, token, now + ttl_seconds, self._clock_id, conversation_id))
            return Lease(conversation_id, owner, token, time.time() + ttl_seconds)

    def _check_lease(self, cur: Any, lease: Lease) -> tuple[Any, ...]:
        c = self.conversations_table
        cur.execute(self._sql(f"SELECT version, lease_owner, lease_token FROM {c} WHERE conversation_id = ?"
                              f"{self._for_update}"), (lease.conversation_id,))
        row = cur.fetchone()
        if (row is None or row[1] != lease.owner
                or int_column(row[2], "lease_token", lease.conversation_id) != lease.token):
            holder = "nobody" if row is None or row[1] is None else f"{row[1]!r} (token {row[2]})"
            raise StaleStateError(
                f"lease of {lease.conversation_id!r} lost by {lease.owner!r} (token {lease.token}); "
                f"now held by {holder}", conversation_id=lease.conversation_id, reason="lease",
                actual_version=None if row is None else int(row[0]))
        return tuple(row)

    def renew(self, lease: Lease, *, ttl_seconds: float = 30.0) -> Lease:
        """Extend ``lease``; ``StaleStateError`` if someone else holds it now."""
        with self._use() as conn, self._transaction(conn) as cur:
            ttl_seconds = _ttl(ttl_seconds)
            self._check_lease(cur, lease)
            cur.execute(self._sql(f"UPDATE {self.conversations_table} SET lease_expires_at = ?, lease_clock = ? "
                                  "WHERE conversation_id = ?"),
                        (self._now(cur) + ttl_seconds, self._clock_id, lease.conversation_id))
            return Lease(lease.conversation_id, lease.owner, lease.token, time.time() + ttl_seconds)

    def release(self, lease: Lease) -> None:
        """Give the lease up (no-op if it is no longer ours)."""
        with self._use() as conn, self._transaction(conn) as cur:
            cur.execute(self._sql(f"UPDATE {self.conversations_table} SET lease_owner = NULL, "
                                  "lease_expires_at = NULL WHERE conversation_id = ? AND lease_owner = ? "
                                  "AND lease_token = ?"), (lease.conversation_id, lease.owner, lease.token))

    # ------------------------------------------------------------------ commit

    def commit(
        self,
        lease: Lease,
        *,
        expected_version: int,
        state: str,
        served: Sequence[ServedInput] = (),
        run: str | None = None,
    ) -> int:
        """Write the state, answer ``served``, drop the journal of ``run``: atomically, fenced."""
        cid = lease.conversation_id
        answers = [(s.seq, self._dumps(s.answer)) for s in served]
        with self._use() as conn, self._transaction(conn) as cur:
            version = int_column(self._check_lease(cur, lease)[0], "version", cid)
            if version != expected_version:
                raise StaleStateError(
                    f"conversation {cid!r} is at version {version}, not {expected_version}: reload it",
                    conversation_id=cid, expected_version=expected_version, actual_version=version,
                    reason="version")
            now = time.time()
            for seq, answer in answers:
                cur.execute(self._sql(f"UPDATE {self.inbox_table} SET served_at = ?, answer = ?, run_key = ? "
                                      "WHERE conversation_id = ? AND seq = ? AND served_at IS NULL"),
                            (now, answer, run, cid, seq))
                if cur.rowcount != 1:
                    raise StaleStateError(
                        f"input {seq} of {cid!r} is unknown or already served", conversation_id=cid,
                        expected_version=expected_version, actual_version=version, reason="served")
            cur.execute(self._sql(f"UPDATE {self.conversations_table} SET version = ?, state = ?, updated_at = ? "
                                  "WHERE conversation_id = ?"), (version + 1, state, now, cid))
            # the run's journal, and any row left under the run key of an input answered now (zombie rows)
            for key in dict.fromkeys([*([run] if run is not None else []), *(run_key(q) for q, _ in answers)]):
                cur.execute(self._sql(f"DELETE FROM {self.journal_table} WHERE conversation_id = ? AND "
                                      "run_key = ?"), (cid, key))
            return version + 1


def _ttl(ttl_seconds: Any) -> float:
    if (isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, (int, float))
            or not 0 < ttl_seconds <= MAX_LEASE_SECONDS):
        raise ConfigError(f"ttl_seconds must be a number in (0, {MAX_LEASE_SECONDS}], not {ttl_seconds!r:.40}")
    return float(ttl_seconds)
