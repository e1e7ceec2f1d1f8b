"""Reading the rows of ``SQLStoreBase`` back: JSON and integer columns, inbox entries.

A row that is not what ``yiemagent.store.sql`` wrote (non-JSON, wrong shape,
an integer column holding text or more than 64 bits) never raises
``json.JSONDecodeError``: a column read raises ``CorruptRowError`` (a
``StoreError``) naming the conversation; an inbox row whose message cannot be
read comes back as an ``InboxEntry`` with ``error`` set (the conversation
answers it with that error and goes on); an unreadable stored answer reads as
an error answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._internal.jsonload import loads_bounded
from ..exceptions import FormatError
from .base import CorruptRowError, InboxEntry, normalize_input

__all__ = ["INBOX_COLUMNS", "inbox_entry", "int_column", "json_column"]

INBOX_COLUMNS = "conversation_id, seq, input_id, message, reply_to, enqueued_at, served_at, answer, run_key"
"""The inbox columns ``inbox_entry`` reads, in its order."""


def inbox_entry(row: Sequence[Any]) -> InboxEntry:
    """An inbox row (``INBOX_COLUMNS``) as an ``InboxEntry``; a row it cannot read gets ``error`` (never raises)."""
    cid, seq, input_id, message, reply_to, enqueued_at, served_at, answer, run = row
    seq = int_column(seq, "seq", cid)
    error = None
    try:
        data = json_column(message, f"message of input {seq}", cid)
        normalize_input(data)
    except (CorruptRowError, FormatError) as exc:
        data, error = {}, str(exc)
    decoded = None
    if answer is not None:
        try:
            decoded = json_column(answer, f"answer of input {seq}", cid)
            if not isinstance(decoded, dict):
                raise CorruptRowError(f"the stored answer of input {seq} of {cid!r} is not an object")
        except CorruptRowError as exc:
            decoded = {"role": "assistant", "content": f"Error: {exc}", "status": "error", "error": str(exc),
                       "input_ids": [input_id], "seq": [seq]}
    return InboxEntry(cid, seq, str(input_id), data, str(reply_to), _float(enqueued_at, 0.0),
                      _float(served_at, None) if served_at is not None else None, decoded, run, error=error)


def json_column(text: Any, what: str, conversation_id: str) -> Any:
    """JSON of a row; ``CorruptRowError`` when it is not JSON (a tampered or corrupt row)."""
    try:
        return loads_bounded(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise CorruptRowError(f"the {what} of conversation {conversation_id!r} is corrupt: {exc}"[:300],
                              conversation_id=conversation_id) from exc


def int_column(value: Any, what: str, conversation_id: str) -> int:
    """An integer column; ``CorruptRowError`` when it holds anything else (or more than SQL's 64 bits)."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CorruptRowError(f"the {what} of conversation {conversation_id!r} is corrupt: {value!r:.40}",
                              conversation_id=conversation_id) from exc
    if not -(2**63) <= number < 2**63 - 1:  # the next one would not fit the column: corrupt, not an OverflowError
        raise CorruptRowError(f"the {what} of conversation {conversation_id!r} is corrupt: {value!r:.40}",
                              conversation_id=conversation_id)
    return number


def _float(value: Any, default: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default
