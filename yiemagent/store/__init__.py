"""Conversation stores: where a conversation, its inbox and its run journals live across processes.

::

    base.py       ConversationStore protocol, records, StoreBase (shared checks)
    sql.py        SQLStoreBase: the SQL both backends share (inbox, lease, journal, commit)
    sqlite.py     SQLiteStore (stdlib sqlite3)
    postgres.py   PostgresStore (psycopg 3: the ``postgres`` extra)
    journal.py    StoreJournal: the loop's journal kept in a store (fenced by the lease)
    durable.py    DurableConversation: a conversation served through a store
    tokens.py     StoreTokenStorage: OAuth tokens of MCP servers in the store's database
    faults.py     FaultyStore: the fault-injection seam (tests and scripts/explore_schedules.py only)

The contract of a store is in ``base.py``; ``yiemagent.loop.conversation`` gives
the contract of a conversation, which ``DurableConversation`` implements.
"""

from typing import TYPE_CHECKING

from .._internal.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from ..exceptions import StaleStateError, StoreError
    from .base import (
        MAX_LEASE_SECONDS,
        ConversationRecord,
        ConversationStore,
        CorruptRowError,
        InboxEntry,
        Lease,
        ReplyTo,
        ServedInput,
        StoreBase,
        idempotency_key,
        normalize_input,
        run_key,
    )
    from .postgres import PostgresStore
    from .sqlite import SQLiteStore
    from .tokens import StoreTokenStorage

_EXPORTS = {
    "StaleStateError": "..exceptions",
    "StoreError": "..exceptions",
    "MAX_LEASE_SECONDS": ".base",
    "ConversationRecord": ".base",
    "ConversationStore": ".base",
    "CorruptRowError": ".base",
    "InboxEntry": ".base",
    "Lease": ".base",
    "ReplyTo": ".base",
    "ServedInput": ".base",
    "StoreBase": ".base",
    "idempotency_key": ".base",
    "normalize_input": ".base",
    "run_key": ".base",
    "PostgresStore": ".postgres",
    "SQLiteStore": ".sqlite",
    "StoreTokenStorage": ".tokens",
}

__all__ = [
    "MAX_LEASE_SECONDS",
    "ConversationRecord",
    "ConversationStore",
    "CorruptRowError",
    "InboxEntry",
    "Lease",
    "PostgresStore",
    "ReplyTo",
    "SQLiteStore",
    "ServedInput",
    "StaleStateError",
    "StoreBase",
    "StoreError",
    "StoreTokenStorage",
    "idempotency_key",
    "normalize_input",
    "run_key",
]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)  # each name on first use (PEP 562)
