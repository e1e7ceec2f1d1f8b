"""A token endpoint that rotates refresh tokens with reuse detection (RFC 9700 4.14.2), shared by processes.

A raw simulation, not a real authorization server: its state is one SQLite row so that forked workers
see one server. ``refresh(rt)`` returns a new refresh token, or records a reuse (the whole family would
be revoked, as Auth0, Ory and Keycloak do: anthropics/claude-code#84440, anomalyco/opencode#49439) when
``rt`` is not the current one.
"""

from __future__ import annotations

import sqlite3
import uuid


class RotatingTokenEndpoint:
    def __init__(self, path: str) -> None:
        self.path = path

    def _conn(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        conn.execute("CREATE TABLE IF NOT EXISTS rt (current TEXT, reuses INTEGER, refreshes INTEGER)")
        return conn

    def issue(self) -> str:
        conn = self._conn()
        token = uuid.uuid4().hex
        conn.execute("DELETE FROM rt")
        conn.execute("INSERT INTO rt VALUES (?, 0, 0)", (token,))
        conn.close()
        return token

    def refresh(self, refresh_token: str) -> str | None:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            (current,) = conn.execute("SELECT current FROM rt").fetchone()
            if refresh_token != current:
                conn.execute("UPDATE rt SET reuses = reuses + 1")
                conn.execute("COMMIT")
                return None
            new = uuid.uuid4().hex
            conn.execute("UPDATE rt SET current = ?, refreshes = refreshes + 1", (new,))
            conn.execute("COMMIT")
            return new
        finally:
            conn.close()

    def counts(self) -> tuple[int, int]:
        """(refreshes, reuses)."""
        conn = self._conn()
        row = conn.execute("SELECT refreshes, reuses FROM rt").fetchone()
        conn.close()
        return int(row[0]), int(row[1])


def refresh_rounds(storage: object, endpoint: RotatingTokenEndpoint, key: str, rounds: int, *,
                   use_lock: bool) -> None:
    """A worker: ``rounds`` times its token "expires"; it refreshes unless another worker already did.

    With ``use_lock`` the read-refresh-store is inside ``storage.refresh_lock(key)``.
    """
    import contextlib

    seen = None
    for _ in range(rounds):
        lock = storage.refresh_lock(key) if use_lock else contextlib.nullcontext(True)  # type: ignore[attr-defined]
        with lock:
            tokens = storage.get_tokens(key)  # type: ignore[attr-defined]
            assert tokens is not None
            if tokens["refresh_token"] != seen:  # another worker refreshed since: use its tokens
                seen = tokens["refresh_token"]
                continue
            new = endpoint.refresh(tokens["refresh_token"])
            if new is not None:
                storage.set_tokens(key, {"access_token": "a-" + new, "refresh_token": new})  # type: ignore[attr-defined]
                seen = new
