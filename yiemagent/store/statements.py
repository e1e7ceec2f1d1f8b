"""The fixed SQL texts of ``SQLStoreBase``: its tables, and the journal writes it repeats on every step.

``schema`` creates the three tables (conversations, inbox, journal) and the
index of pending inputs. ``JournalStatements`` holds the journal's write
statements, each built once per store in its dialect: the plain insert, the
insert fenced by a lease (``INSERT ... SELECT ... WHERE`` the lease row still
names it, share-locked on PostgreSQL), the fenced insert of ``n`` rows in one
statement (built once per ``n``), and the read-back of a step already present.
Every insert keeps a key's first write (``ON CONFLICT ... DO NOTHING``).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["JournalStatements", "schema"]


def schema(conversations: str, inbox: str, journal: str) -> list[str]:
    """The ``CREATE ... IF NOT EXISTS`` statements of the store's tables, in order."""
    c, i, j = conversations, inbox, journal
    return [
        f"CREATE TABLE IF NOT EXISTS {c} (conversation_id TEXT PRIMARY KEY, "
        "version BIGINT NOT NULL DEFAULT 0, state TEXT, next_seq BIGINT NOT NULL DEFAULT 1, "
        "lease_owner TEXT, lease_token BIGINT NOT NULL DEFAULT 0, lease_expires_at DOUBLE PRECISION, "
        "updated_at DOUBLE PRECISION, lease_clock TEXT)",
        f"CREATE TABLE IF NOT EXISTS {i} (conversation_id TEXT NOT NULL, seq BIGINT NOT NULL, "
        "input_id TEXT NOT NULL, message TEXT NOT NULL, reply_to TEXT NOT NULL, "
        "enqueued_at DOUBLE PRECISION NOT NULL, served_at DOUBLE PRECISION, answer TEXT, run_key TEXT, "
        "PRIMARY KEY (conversation_id, seq), UNIQUE (conversation_id, input_id))",
        f"CREATE INDEX IF NOT EXISTS {i}_pending ON {i} (enqueued_at) WHERE served_at IS NULL",
        f"CREATE TABLE IF NOT EXISTS {j} (conversation_id TEXT NOT NULL, run_key TEXT NOT NULL, "
        "step_key TEXT NOT NULL, value TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, "
        "PRIMARY KEY (conversation_id, run_key, step_key))",
    ]


class JournalStatements:
    """The journal's write statements for one store.

    Args:
        journal, conversations: the two tables' names.
        sql: the store's dialect (``?`` placeholders to the driver's).
        share_lock: suffix that share-locks the lease row a fenced insert reads ("" on SQLite).
    """

    def __init__(self, journal: str, conversations: str, sql: Callable[[str], str], share_lock: str) -> None:
        self.journal, self.conversations, self.sql, self.share_lock = journal, conversations, sql, share_lock
        j, c = journal, conversations
        self.put = sql(f"INSERT INTO {j} (conversation_id, run_key, step_key, value, created_at) "
                       "VALUES (?, ?, ?, ?, ?) ON CONFLICT (conversation_id, run_key, step_key) DO NOTHING")
        """Insert one step unless present: conversation id, run, step, value, created_at."""
        self.put_fenced = sql(
            f"INSERT INTO {j} (conversation_id, run_key, step_key, value, created_at) SELECT ?, ?, ?, ?, ? "
            f"WHERE EXISTS (SELECT 1 FROM {c} WHERE conversation_id = ? AND lease_owner = ? AND lease_token = ?"
            f"{share_lock}) ON CONFLICT (conversation_id, run_key, step_key) DO NOTHING")
        """``put``, then the lease's conversation id, owner and token: nothing inserted when it is not current."""
        self.get_step = sql(f"SELECT value FROM {j} WHERE conversation_id = ? AND run_key = ? AND step_key = ?")
        """The stored value of one step: conversation id, run, step."""
        self._many: dict[int, str] = {}

    def put_many(self, n: int) -> str:
        """The fenced insert of ``n`` journal rows in one statement (``put`` n times, then the lease's three)."""
        statement = self._many.get(n)
        if statement is None:
            values = ", ".join(["(?, ?, ?, ?, ?)"] * n)
            statement = self._many[n] = self.sql(
                f"INSERT INTO {self.journal} (conversation_id, run_key, step_key, value, created_at) SELECT * FROM "
                f"(VALUES {values}) AS v WHERE EXISTS (SELECT 1 FROM {self.conversations} WHERE conversation_id = ? "
                f"AND lease_owner = ? AND lease_token = ?{self.share_lock}) "
                "ON CONFLICT (conversation_id, run_key, step_key) DO NOTHING")
        return statement
