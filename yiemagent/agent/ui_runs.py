"""Runs a frontend can finish after a cut: each run read to its end on the server, replayable to a new connection.

A web route that answers ``ag_ui_events(agent.stream(text))`` or ``vercel_ai_events(...)`` reads the run while
its client reads: a connection cut mid-answer closes the stream, and although the run finishes on the server
(``on_close="continue"``), what it said after the cut reaches nobody. ``RunRecords`` fixes that:

::

    records = RunRecords()

    record = records.start(f"vercel:{chat_id}", agent.stream(text), message_id=f"msg-{uuid4().hex}")
    return Response(record.stream(vercel_ai_events(record.follow(), message_id=record.message_id)), ...)

    # GET /api/chat/<chat_id>/stream (the AI SDK's resumeStream / useChat({resume: true}))
    record = records.get(f"vercel:{chat_id}")
    if record is None or not record.replayable():
        return "", 204
    return Response(record.stream(vercel_ai_events(record.follow(), message_id=record.message_id)), ...)

- ``start`` reads ``items`` (events, then the answer dict) on a thread of its own to the end and keeps them:
  the run is recorded whole whether or not anyone reads it, and the client's connection no longer holds it;
- ``follow()`` yields the recorded items from the first, then the new ones as they come, until the answer
  (None after ``heartbeat_seconds`` of quiet: the protocol writers send a keep-alive comment). Any number of
  followers, at any time: a replay after a cut, or a second tab;
- ``stream(lines)`` passes a response's lines through and notes when the last one was written
  (``delivered``): a run whose stream reached a client whole is not replayed by ``replayable()`` (the AI SDK
  asks on every page load; nothing to resume is 204);
- one record per key (a new run of a conversation replaces its last), at most ``max_records_per_owner`` per
  owner (``start(owner=)``: the user, else the client's address; its own oldest makes room), ``max_records``
  in all (least recently started first out), ``max_items`` items and about ``max_bytes`` (the items'
  ``repr``) a run (past either the record stops:
  ``replayable()`` is False and the client takes the answer from the conversation's history);
- a record is found by its key alone: whoever knows the key replays the run. Behind authentication, put the
  verified user in the key (``flask_ui_protocols``' ``user=``), as the conversation itself is keyed.

Records live in this process's memory: with several workers, send a conversation's requests to one worker
(or keep the conversation in a store and read the answer from it, ``docs/guides/web_apps.rst``).

Spec: Vercel AI SDK "Chatbot Resume Streams" (``GET {api}/{chatId}/stream``, 204 when nothing is active;
``DefaultChatTransport`` ``resumeStreamIsReplay``); AG-UI 1.0 ``MESSAGES_SNAPSHOT``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .._internal.checks import check_int, check_number
from ..loop import events as ev

__all__ = ["RunRecord", "RunRecords"]

Item = ev.Event | Mapping[str, Any]


class RunRecord:
    """One run's items, read to the end by a thread of its own (see the module docstring). Thread-safe."""

    def __init__(self, items: Iterable[Item], *, message_id: str | None = None, user_message_id: str | None = None,
                 max_items: int = 100_000, heartbeat_seconds: float | None = 15.0,
                 max_bytes: int = 16 * 1024 * 1024) -> None:
        self.message_id = message_id
        """The assistant message's id the streams of this run announce (Vercel ``start.messageId``), or None."""
        self.user_message_id = user_message_id
        """The id of the client's message that began the run (AG-UI ``Message.id``), or None."""
        self.delivered = False
        """True once a stream of this run was written to its client to the last line."""
        self.truncated = False
        """True when the run passed ``max_items`` items or ``max_bytes``: the record stopped."""
        check_int("max_items", max_items, minimum=1)
        check_int("max_bytes", max_bytes, minimum=1)
        check_number("heartbeat_seconds", heartbeat_seconds, optional=True)  # below 0: a busy loop of keep-alives
        self.max_items, self.heartbeat_seconds, self.max_bytes = max_items, heartbeat_seconds, max_bytes
        self._bytes = 0
        self._items: list[Item] = []
        self._done = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(items,), name="yiemagent-ui-run", daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        """True once the run's answer (or its failure) is recorded."""
        with self._changed:
            return self._done

    def _read(self, items: Iterable[Item]) -> None:
        try:
            for item in items:
                size = 0 if self.truncated else len(repr(item))  # an estimate of what the record holds
                with self._changed:
                    if self.truncated or len(self._items) >= self.max_items or self._bytes + size > self.max_bytes:
                        self.truncated = True
                    else:
                        self._bytes += size
                        self._items.append(item)
                    self._changed.notify_all()
        except Exception as exc:  # the run's own failure: its error answer, as the stream would have said it
            with self._changed:
                self._items.append({"role": "assistant", "content": f"Error: {exc}", "status": "error",
                                    "error": str(exc)})
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()
            close = getattr(items, "close", None)
            if callable(close):
                close()

    def follow(self) -> Iterator[Item | None]:
        """The run's items from the first, then each new one, until the last; None after a quiet heartbeat."""
        index = 0
        while True:
            with self._changed:
                if index >= len(self._items) and not self._done:
                    self._changed.wait(self.heartbeat_seconds)
                batch, finished = self._items[index:], self._done
                index += len(batch)
                finished = finished and index >= len(self._items)
            if not batch and not finished:
                yield None  # quiet: a keep-alive
            yield from batch
            if finished:
                return

    def stream(self, lines: Iterable[str]) -> Iterator[str]:
        """``lines`` (a response body), noting ``delivered`` once the last was written (a cut stream: never)."""
        yield from lines
        self.delivered = True

    def replayable(self) -> bool:
        """True when a client may still lack this run: not delivered whole, and not truncated."""
        return not self.delivered and not self.truncated


class RunRecords:
    """The last run of each key (a conversation), bounded per owner and in all. Thread-safe.

    Args:
        max_records: records kept in all (the least recently started first out).
        max_items: items one run may record (``RunRecord``). max_bytes: about how many bytes (the items'
            ``repr``) one run may record.
        max_records_per_owner: records one owner (``start(owner=)``: the verified user, else the client's
            address) keeps: its own least recently started record makes room for its next one, so one client
            starting runs in many conversations pushes out only its own records, never another's (until
            ``max_records`` owners' worth are kept).

    Raises:
        ConfigError: a bound that is not an int >= 1.
    """

    def __init__(self, max_records: int = 1000, *, max_items: int = 100_000, max_bytes: int = 16 * 1024 * 1024,
                 max_records_per_owner: int = 100) -> None:
        check_int("max_records", max_records, minimum=1)  # NaN, a float, a bool: refused, never unbounded
        check_int("max_items", max_items, minimum=1)
        check_int("max_bytes", max_bytes, minimum=1)
        check_int("max_records_per_owner", max_records_per_owner, minimum=1)
        self.max_records, self.max_items, self.max_records_per_owner = max_records, max_items, max_records_per_owner
        self.max_bytes = max_bytes
        self._records: OrderedDict[str, RunRecord] = OrderedDict()
        self._owner: dict[str, str | None] = {}
        self._owned: dict[str | None, OrderedDict[str, None]] = {}
        self._lock = threading.Lock()

    def start(self, key: str, items: Iterable[Item], *, message_id: str | None = None,
              user_message_id: str | None = None, owner: str | None = None) -> RunRecord:
        """Record ``items`` (read from now on, to the end) as the last run of ``key``; returns its record.

        ``owner``: whose run it is, for the per-owner bound (None: no owner's share). Bind ``key`` itself to the
        verified user when there is one (``flask_ui_protocols`` does): ``get`` finds a record by its key alone.
        """
        record = RunRecord(items, message_id=message_id, user_message_id=user_message_id, max_items=self.max_items,
                           max_bytes=self.max_bytes)
        with self._lock:
            self._drop(key)
            self._records[key] = record
            self._owner[key] = owner
            mine = self._owned.setdefault(owner, OrderedDict())
            mine[key] = None
            while owner is not None and len(mine) > self.max_records_per_owner:
                self._drop(next(iter(mine)))
            while len(self._records) > self.max_records:
                self._drop(next(iter(self._records)))
        return record

    def _drop(self, key: str) -> None:
        if self._records.pop(key, None) is None:
            return
        owner = self._owner.pop(key, None)
        mine = self._owned.get(owner)
        if mine is not None:
            mine.pop(key, None)
            if not mine:
                del self._owned[owner]

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def get(self, key: str) -> RunRecord | None:
        """The last run recorded for ``key``, or None."""
        with self._lock:
            return self._records.get(key)
