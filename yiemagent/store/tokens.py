"""StoreTokenStorage: OAuth tokens and registered clients in a conversation store's database.

Implements the ``TokenStorage`` protocol of ``yiemagent.mcp.auth`` (structurally:
``store`` sits beside ``mcp`` and imports nothing of it) on an ``SQLiteStore`` or
a ``PostgresStore``, so every process using one database (gunicorn workers, one
host or several) shares one login.

Table ``<table_prefix>oauth`` (created on first use; the store's other tables
never hold a token)::

    kind TEXT        "tokens" (keyed by the MCP server's resource URL) or "client" (keyed by issuer)
    key TEXT         PRIMARY KEY (kind, key)
    value TEXT       the JSON object given to set_tokens / set_client
    version TEXT     a fresh random id on every write (never reused: no ABA)
    updated_at DOUBLE PRECISION   time.time() of the write (for people reading the table)

Concurrent refreshes (compare-and-set): the storage object remembers, per key,
the ``version`` it last read (``get_tokens``) or wrote. ``set_tokens`` writes in
one transaction that locks the row (``SELECT ... FOR UPDATE`` on PostgreSQL,
SQLite's write lock) only when the row is still that version; when another
process wrote the row since (it refreshed meanwhile), the row is kept
(``set_tokens_if_unchanged`` says so with ``False``) and the next ``get_tokens``
returns the other process's tokens. So a slow refresh never overwrites a newer token (with rotating refresh
tokens, the stored refresh token is always the newest). ``delete`` is
compare-and-set the same way: a process whose refresh lost the race never
wipes the tokens the winner just stored (anthropics/claude-code#84440). A key
this object never read is written or deleted unconditionally; ``set_client`` is
unconditional. After ``False``, call ``get_tokens`` to adopt the newer tokens.

One refresher at a time (``refresh_lock``): against an authorization server that
rotates refresh tokens and revokes the whole family when an old one is used
again (RFC 9700 4.14.2), two workers refreshing with the same refresh token
lose the login even with compare-and-set. ``with storage.refresh_lock(key):``
around "read the tokens again, refresh only if still needed, store" lets one
worker refresh while the others wait and then read its tokens. The lock is a
row (``kind = "lock"``) with an expiry on the store's lease clock, so a worker
that dies holding it blocks the others ``ttl_seconds`` at most.

Values are JSON text in the database, readable by whoever can read the
database: protect it as you protect the conversations.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from .._internal.jsonload import loads_bounded
from .._internal.versioned_tokens import VersionedTokenStorage
from ..exceptions import ConfigError
from .postgres import PostgresStore
from .sql import SQLStoreBase

__all__ = ["StoreTokenStorage"]

logger = logging.getLogger("yiemagent.store")

_TOKENS = "tokens"
_CLIENT = "client"
_LOCK = "lock"


class StoreTokenStorage(VersionedTokenStorage):
    """OAuth token storage (``yiemagent.mcp.auth.TokenStorage``) in a conversation store's database.

    Args:
        store: an ``SQLiteStore`` or ``PostgresStore`` (its connection, lock and
            ``table_prefix`` are used; close the store to close this storage).

    Raises:
        ConfigError: ``store`` is not an SQL store of yiemagent.

    Methods raise ``StoreError`` when the database fails.

    Example:
        >>> import os, tempfile
        >>> from yiemagent.store import SQLiteStore
        >>> storage = StoreTokenStorage(SQLiteStore(os.path.join(tempfile.mkdtemp(), "app.db")))
        >>> storage.get_tokens("https://mcp.example.com/mcp") is None
        True
        >>> storage.set_tokens("https://mcp.example.com/mcp", {"access_token": "a", "token_type": "Bearer"})
        >>> storage.get_tokens("https://mcp.example.com/mcp")["token_type"]
        'Bearer'
    """

    _tokens_kind = _TOKENS
    _clients_kind = _CLIENT

    def __init__(self, store: SQLStoreBase) -> None:
        if not isinstance(store, SQLStoreBase):
            raise ConfigError(f"StoreTokenStorage needs an SQLiteStore or PostgresStore, not {type(store).__name__}")
        self.store = store
        prefix = store.conversations_table[: -len("conversations")]
        self.table = f"{prefix}oauth"
        self._seen: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()
        self._ready_conn: Any = None

    def __repr__(self) -> str:
        return f"StoreTokenStorage({self.store!r}, table {self.table!r})"

    # ------------------------------------------------------------------ TokenStorage protocol (VersionedTokenStorage)

    def delete_if_unchanged(self, key: str) -> bool:
        """Forget the tokens of ``key`` (logout); registered clients stay.

        Compare-and-set as ``set_tokens``: tokens another process wrote since
        this object last read ``key`` are kept (a refresh that lost a race
        never wipes the winner's tokens). An object that never read ``key``
        deletes whatever is there.

        Returns:
            ``False`` when newer tokens were kept, else ``True``.
        """
        sql = self.store._sql
        with self.store._use() as conn:
            with self._lock:
                known = (_TOKENS, key) in self._seen
                expected = self._seen.get((_TOKENS, key))
            self._ensure(conn)
            with self.store._transaction(conn) as cur:
                if known and expected is not None:
                    cur.execute(sql(f"DELETE FROM {self.table} WHERE kind = ? AND key = ? AND version = ?"),
                                (_TOKENS, key, expected))
                    if cur.rowcount == 0 and self._exists(cur, key):
                        logger.info("kept the tokens for %r another process wrote meanwhile", key)
                        return False
                elif known:  # we saw no row: keep one written since
                    if self._exists(cur, key):
                        logger.info("kept the tokens for %r another process wrote meanwhile", key)
                        return False
                else:
                    cur.execute(sql(f"DELETE FROM {self.table} WHERE kind = ? AND key = ?"), (_TOKENS, key))
            with self._lock:
                self._seen[(_TOKENS, key)] = None
        return True

    def _exists(self, cur: Any, key: str) -> bool:
        cur.execute(self.store._sql(f"SELECT 1 FROM {self.table} WHERE kind = ? AND key = ?"), (_TOKENS, key))
        return cur.fetchone() is not None

    @contextlib.contextmanager
    def refresh_lock(self, key: str, *, ttl_seconds: float = 30.0, timeout_seconds: float = 30.0) -> Iterator[bool]:
        """Hold the refresh lock of ``key`` across processes (see the module); yields whether it was taken.

        Waits at most ``timeout_seconds`` for another holder; then yields ``False``
        (the caller may go on: ``set_tokens`` is still compare-and-set). A holder
        that dies frees it after ``ttl_seconds``.
        """
        owner = uuid.uuid4().hex
        deadline = time.monotonic() + timeout_seconds
        pause = 0.01
        while not self._try_lock(key, owner, ttl_seconds):
            if time.monotonic() >= deadline:
                logger.warning("the refresh lock for %r stayed taken for %.0f s; going on without it", key,
                               timeout_seconds)
                yield False
                return
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
        try:
            yield True
        finally:
            with self.store._use() as conn, self.store._transaction(conn) as cur:
                cur.execute(self.store._sql(f"DELETE FROM {self.table} WHERE kind = ? AND key = ? AND version = ?"),
                            (_LOCK, key, owner))

    def _try_lock(self, key: str, owner: str, ttl_seconds: float) -> bool:
        sql = self.store._sql
        with self.store._use() as conn:
            self._ensure(conn)
            with self.store._transaction(conn) as cur:
                cur.execute(sql(f"SELECT value FROM {self.table} WHERE kind = ? AND key = ?" + self.store._for_update),
                            (_LOCK, key))
                row = cur.fetchone()
                now = self.store._now(cur)
                value = json.dumps({"expires_at": now + ttl_seconds, "clock": self.store._clock_id})
                if row is None:
                    cur.execute(sql(f"INSERT INTO {self.table} (kind, key, value, version, updated_at) "
                                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, key) DO NOTHING"),
                                (_LOCK, key, value, owner, time.time()))
                    return bool(cur.rowcount == 1)
                try:
                    held = loads_bounded(row[0])
                    live = held["clock"] == self.store._clock_id and now < float(held["expires_at"]) <= now + 86400
                except (TypeError, ValueError, KeyError):
                    live = False  # a corrupt lock row holds nothing
                if live:
                    return False
                cur.execute(sql(f"UPDATE {self.table} SET value = ?, version = ?, updated_at = ? "
                                "WHERE kind = ? AND key = ?"), (value, owner, time.time(), _LOCK, key))
                return True

    # ------------------------------------------------------------------ internals

    def _ensure(self, conn: Any) -> None:
        """Create the table once per connection, in its own transaction (advisory lock on PostgreSQL)."""
        if self._ready_conn is conn:
            return
        with self.store._transaction(conn) as cur:
            if isinstance(self.store, PostgresStore):  # concurrent CREATE TABLE IF NOT EXISTS can collide there
                cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.table,))
            cur.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (kind TEXT NOT NULL, key TEXT NOT NULL, "
                        "value TEXT NOT NULL, version TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL, "
                        "PRIMARY KEY (kind, key))")
        self._ready_conn = conn

    def _get(self, kind: str, key: str) -> dict[str, Any] | None:
        statement = self.store._sql(f"SELECT value, version FROM {self.table} WHERE kind = ? AND key = ?")
        with self.store._use() as conn:
            self._ensure(conn)
            with self.store._cursor(conn) as cur:  # a plain read (autocommit): no write lock per request
                cur.execute(statement, (kind, key))
                row = cur.fetchone()
            with self._lock:
                self._seen[(kind, key)] = None if row is None else str(row[1])
        if row is None:
            return None
        try:
            value = loads_bounded(row[0])
        except (TypeError, ValueError):
            value = None
        if not isinstance(value, dict):
            logger.warning("the %s row for %r in %s is not a JSON object; ignored", kind, key, self.table)
            return None
        return value

    def _set(self, kind: str, key: str, value: dict[str, Any], *, compare: bool) -> bool:
        if not isinstance(value, dict):
            raise ConfigError(f"{kind} must be a dict, not {type(value).__name__}")
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        version = uuid.uuid4().hex
        sql = self.store._sql
        with self.store._use() as conn:
            with self._lock:
                known = (kind, key) in self._seen
                expected = self._seen.get((kind, key))
            self._ensure(conn)
            with self.store._transaction(conn) as cur:
                cur.execute(sql(f"SELECT version FROM {self.table} WHERE kind = ? AND key = ?"
                                + self.store._for_update), (kind, key))
                row = cur.fetchone()
                current = None if row is None else str(row[0])
                if compare and known and current != expected:
                    logger.info("kept the %s for %r another process wrote meanwhile (newer than ours)", kind, key)
                    return False
                inserted = False
                if row is None:  # FOR UPDATE locks no missing row: another process may insert it now
                    cur.execute(sql(f"INSERT INTO {self.table} (kind, key, value, version, updated_at) "
                                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, key) DO NOTHING"),
                                (kind, key, text, version, time.time()))
                    inserted = cur.rowcount == 1
                    if not inserted and compare and known:
                        logger.info("kept the %s for %r another process wrote meanwhile (newer than ours)",
                                    kind, key)
                        return False
                if not inserted:
                    cur.execute(sql(f"UPDATE {self.table} SET value = ?, version = ?, updated_at = ? "
                                    "WHERE kind = ? AND key = ?"), (text, version, time.time(), kind, key))
            with self._lock:
                self._seen[(kind, key)] = version
        return True
