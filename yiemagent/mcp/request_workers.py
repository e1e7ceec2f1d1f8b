"""A small bounded pool of threads that answer the requests a server sends (``ping``, ``elicitation/create``).

A server may send thousands of requests at once; each must not cost a
thread, and the reader that receives them must never block on answering
(writing to a server that does not read its stdin would stop the reader, and
with it every response). So requests go to a bounded queue served by at most
``max_workers`` threads, started when needed and gone after
``IDLE_SECONDS`` without work; a request that finds the queue full (by count
or by bytes) is dropped and logged (the server gets no answer: it flooded us).

A worker takes every request waiting (up to ``BATCH``), answers each, and
writes the replies in one write: while the reader is busy, a worker only gets
the interpreter now and then, so one reply per wake-up could not keep up with
a burst of 3,000 pings.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["IDLE_SECONDS", "RequestWorkers"]

logger = logging.getLogger("yiemagent.mcp.stdio")

IDLE_SECONDS = 2.0
"""Seconds a worker waits for more work before it ends."""

BATCH = 256
"""Requests a worker answers before writing their replies together."""

_STOP = object()


class RequestWorkers:
    """Answer submitted requests on at most ``max_workers`` threads: ``write(answer(r) + answer(r2) ...)``.

    Args:
        answer: called on a worker thread with each request; returns the
            encoded reply (or None for none); its exceptions are logged.
        write: writes the replies of a batch (bytes); its exceptions are logged.
        max_workers: threads at most.
        max_pending: requests waiting at most (beyond the ones being answered).
        max_pending_bytes: their sizes (as given to ``submit``) in all, at
            most; one request is always accepted into an empty queue.
        name: prefix of the thread names (``<name>-<n>``).

    Attributes:
        dropped: requests refused because the queue was full.

    Thread safety: ``submit`` and ``close`` may be called from any thread.
    """

    def __init__(self, answer: Callable[[dict[str, Any]], bytes | None], write: Callable[[bytes], None], *,
                 max_workers: int, max_pending: int, max_pending_bytes: int, name: str) -> None:
        self._answer = answer
        self._write = write
        self.max_workers = max(1, max_workers)
        self._queue: queue.Queue[Any] = queue.Queue(max(1, max_pending))
        self._name = name
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._idle = 0
        self._count = 0
        self._closed = False
        self.max_pending_bytes = max_pending_bytes
        self._pending_bytes = 0
        self.dropped = 0

    @property
    def threads(self) -> int:
        """Worker threads alive now."""
        with self._lock:
            return len(self._threads)

    def submit(self, request: dict[str, Any], size: int = 0) -> bool:
        """Queue ``request`` of ``size`` bytes; False (``dropped`` + 1) if the queue is full or closed. Never blocks."""
        with self._lock:
            if self._closed:
                return False
            full = self._pending_bytes and self._pending_bytes + size > self.max_pending_bytes
            if not full:
                try:
                    self._queue.put_nowait((request, size))
                except queue.Full:
                    full = True
            if full:
                self.dropped += 1
                return False
            self._pending_bytes += size
            if self._idle == 0 and len(self._threads) < self.max_workers and not self._closed:
                self._count += 1
                thread = threading.Thread(target=self._run, name=f"{self._name}-{self._count}", daemon=True)
                self._threads.add(thread)
                thread.start()
        return True

    def _run(self) -> None:
        me = threading.current_thread()
        while True:
            with self._lock:
                self._idle += 1
            try:
                item = self._queue.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                item = None
            with self._lock:
                self._idle -= 1
                if item is _STOP or (item is None and (self._queue.empty() or self._closed)):
                    self._threads.discard(me)
                    return
            if item is None:
                continue
            batch = [item]
            while len(batch) < BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is _STOP:
                    self._queue.put(_STOP)  # for this worker's next turn (or another's)
                    break
                batch.append(more)
            with self._lock:
                self._pending_bytes -= sum(size for _, size in batch)
            replies = []
            for request, _ in batch:
                try:
                    reply = self._answer(request)
                except Exception:  # an answer that fails must not end the worker
                    logger.exception("%s: answering a server request failed", self._name)
                    continue
                if reply:
                    replies.append(reply)
            if replies:
                try:
                    self._write(b"".join(replies))
                except Exception:
                    logger.exception("%s: writing replies to server requests failed", self._name)

    def close(self, timeout_seconds: float = 2.0) -> None:
        """Drop what waits, stop the workers, and wait up to ``timeout_seconds`` for each."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        with self._lock:
            self._pending_bytes = 0
        for _ in threads:
            try:
                self._queue.put_nowait(_STOP)
            except queue.Full:
                break
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(timeout_seconds)
