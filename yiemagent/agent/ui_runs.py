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
- one record per key (a new run of a conversation replaces its last), at most ``max_records`` (least
  recently started first out), ``max_items`` items and about ``max_bytes`` (the items' ``repr``) a run (past
  either the record stops: ``replayable()`` is False and the client takes the answer from the
  conversation's history);
- per owner: ``start(..., owner=...)`` (the verified user, else the client's address) keeps at most
  ``max_records_per_owner`` records of that owner: its next run drops its own least recently started
  record, never another owner's, so one client making up thread ids cannot push out others' runs.

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

from ..loop import events as ev
from .streaming import check_heartbeat

__all__ = ["RunRecord", "RunRecords"]

Item = ev.Event | Mapping[str, Any]


class RunRecord:
    """One run's items, read to the end by a thread of its own (see the module docstring). Thread-safe."""

    def __init__(self, items: Iterable[Item], *, message_id: str | None = None, user_message_id: str | None = None,
                 max_items: int = 100_000, heartbeat_seconds: float | None = 15.0,
                 max_bytes: int = 16 * 1024 * 1024) -> None:
        check_heartbeat(heartbeat_seconds)
        if not isinstance(max_items, int) or isinstance(max_items, bool) or min(max_items, max_bytes) < 1:
            raise ValueError("max_items and max_bytes must be ints >= 1")
        self.message_id = message_id
        """The assistant message's id the streams of this run announce (Vercel ``start.messageId``), or None."""
        self.user_message_id = user_message_id
        """The id of the client's message that began the run (AG-UI ``Message.id``), or None."""
        self.delivered = False
        """True once a stream of this run was written to its client to the last line."""
        self.truncated = False
        """True when the run passed ``max_items`` items or ``max_bytes``: the record stopped."""
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
    """The last run of each key (a conversation), at most ``max_records`` kept. Thread-safe."""

    def __init__(self, max_records: int = 1000, *, max_items: int = 100_000, max_bytes: int = 16 * 1024 * 1024,
                 max_records_per_owner: int = 100) -> None:
        for name, value in (("max_records", max_records), ("max_items", max_items), ("max_bytes", max_bytes),
                            ("max_records_per_owner", max_records_per_owner)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, not {value!r}")
        self.max_records, self.max_items, self.max_bytes = max_records, max_items, max_bytes
        self.max_records_per_owner = max_records_per_owner
        self._records: OrderedDict[str, RunRecord] = OrderedDict()
        self._owners: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def start(self, key: str, items: Iterable[Item], *, message_id: str | None = None,
              user_message_id: str | None = None, owner: str | None = None) -> RunRecord:
        """Record ``items`` (read from now on, to the end) as the last run of ``key``; returns its record.

        ``owner``: who started it (a user id, else the client's address); None: no owner's share applies.
        """
        with self._lock:
            self._records.pop(key, None)
            self._owners.pop(key, None)
            if owner is not None:
                mine = [k for k, o in self._owners.items() if o == owner]
                for old in mine[:max(0, len(mine) - self.max_records_per_owner + 1)]:  # its own oldest go
                    self._records.pop(old, None)
                    self._owners.pop(old, None)
        record = RunRecord(items, message_id=message_id, user_message_id=user_message_id, max_items=self.max_items,
                           max_bytes=self.max_bytes)
        with self._lock:
            self._records.pop(key, None)
            self._records[key] = record
            self._owners[key] = owner
            while len(self._records) > self.max_records:
                dropped, _ = self._records.popitem(last=False)
                self._owners.pop(dropped, None)
        return record

    def get(self, key: str) -> RunRecord | None:
        """The last run recorded for ``key``, or None."""
        with self._lock:
            return self._records.get(key)
