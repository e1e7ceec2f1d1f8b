"""An incremental ``text/event-stream`` parser (pure, no I/O).

Feed it text in chunks of any size; it returns each event when its blank
line arrives. Lines end with LF, CRLF or CR, even when a CRLF is split across
two chunks. ``data`` lines are joined with LF; comments (``:``) and unknown
fields are ignored; an event whose data is empty (a priming event) is not
dispatched; ``event:`` defaults to ``message``.

Spec: WHATWG HTML "Server-sent events", section "Event stream interpretation".

Example:
    >>> parser = SSEParser()
    >>> parser.feed("event: message\\r\\ndata: {\\"a\\":")
    []
    >>> parser.feed(" 1}\\r\\n\\r\\n")
    [SSEEvent(event='message', data='{"a": 1}', id=None, retry=None)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._internal.checks import check_int
from ..exceptions import FormatError

__all__ = ["MAX_RETRY_MS", "SSEEvent", "SSEParser"]

MAX_RETRY_MS = 60_000
"""Longest reconnection time a stream's ``retry:`` field may set (ms); a larger value reads as this (a server's
``retry: 999999999`` was an 11-day wait before the MCP client reconnected its standalone stream)."""

_LINE_BREAK = re.compile("[\r\n]")


@dataclass
class SSEEvent:
    """One dispatched event."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    """The last event id seen so far in the stream (``id:`` field)."""
    retry: int | None = None
    """Reconnection time in milliseconds, if the stream set one (at most ``MAX_RETRY_MS``)."""


class SSEParser:
    """Incremental parser; one instance per stream. Not thread-safe.

    Time and memory are linear in the input however it is chunked: each
    chunk is scanned once, and a line split across many chunks is joined
    once, when its end arrives.

    Args:
        max_event_chars: characters one event may hold (its ``data`` lines
            plus the line being read); past it ``feed`` raises
            ``FormatError`` without keeping the rest. None: no limit.
    """

    def __init__(self, *, max_event_chars: int | None = None) -> None:
        check_int("max_event_chars", max_event_chars, minimum=1, optional=True)
        self.max_event_chars = max_event_chars
        self._pieces: list[str] = []
        """The line being read, in pieces (no line break seen yet)."""
        self._pending = 0
        """Characters in ``_pieces`` plus ``_data``: what the current event holds."""
        self._after_cr = False
        """The last chunk ended with CR: a LF starting the next one belongs to it."""
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None
        self._started = False
        self._error: FormatError | None = None

    @property
    def last_event_id(self) -> str | None:
        """The last ``id:`` seen, also on events not dispatched (a priming event); None if none."""
        return self._last_id

    @property
    def retry_ms(self) -> int | None:
        """The last ``retry:`` value seen (milliseconds before reconnecting), or None."""
        return self._retry

    def feed(self, chunk: str) -> list[SSEEvent]:
        """Add text; return the events completed by it, in order.

        Raises:
            FormatError: the current event grew past ``max_event_chars``.
                The events completed before the overflow are returned first;
                this call (or the next ``feed``/``close``) raises, so the
                outcome never depends on where chunks split.
        """
        if self._error is not None:
            raise self._error
        if not chunk:
            return []
        events: list[SSEEvent] = []
        try:
            self._feed(chunk, events)
        except FormatError as exc:
            self._error = exc  # every later call raises it too: the stream cannot be trusted past it
            if not events:
                raise
            # raised by the next call, after the caller took the events completed before the overflow
        return events

    def _feed(self, chunk: str, events: list[SSEEvent]) -> None:
        if not self._started:
            self._started = True
            if chunk.startswith("\ufeff"):  # a byte order mark is ignored once, at the start
                chunk = chunk[1:]
        start = 0
        length = len(chunk)
        if self._after_cr and length:
            self._after_cr = False
            if chunk[0] == "\n":
                start = 1
        while start < length:
            match = _LINE_BREAK.search(chunk, start)
            if match is None:
                self._grow(length - start)
                self._pieces.append(chunk[start:])
                break
            end = match.start()
            self._grow(end - start)
            if self._pieces:
                self._pieces.append(chunk[start:end])
                line = "".join(self._pieces)
                self._pieces = []
            else:
                line = chunk[start:end]
            if chunk[end] == "\r":
                if end + 1 == length:
                    self._after_cr = True
                    start = length
                else:
                    start = end + 2 if chunk[end + 1] == "\n" else end + 1
            else:
                start = end + 1
            event = self._line(line)
            if event is not None:
                events.append(event)

    def close(self) -> list[SSEEvent]:
        """End of stream: dispatch a last event that lacked its blank line (lenient).

        Raises:
            FormatError: an overflow seen by the last ``feed`` is still pending.
        """
        if self._error is not None:
            raise self._error
        events: list[SSEEvent] = []
        if self._pieces:
            line, self._pieces = "".join(self._pieces), []
            event = self._line(line)
            if event is not None:
                events.append(event)
        if self._data:
            final = self._line("")
            if final is not None:
                events.append(final)
        return events

    def _grow(self, chars: int) -> None:
        self._pending += chars
        if self.max_event_chars is not None and self._pending > self.max_event_chars:
            self._pieces, self._data, self._pending = [], [], 0
            raise FormatError(f"an SSE event is over {self.max_event_chars} characters; the rest is not kept")

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            self._pending -= len(line)
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._pending += 1 - (len(line) - len(value))  # the LF joining data lines counts; the field name not
        else:
            self._pending -= len(line)
            if name == "event":
                self._event = value
            elif name == "id":
                if "\0" not in value:
                    self._last_id = value
            elif name == "retry" and value.isascii() and value.isdigit():  # ASCII digits only, as the spec's
                self._retry = min(int(value[:9]), MAX_RETRY_MS) if len(value) <= 9 else MAX_RETRY_MS
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, self._data = "\n".join(self._data), []
        event, self._event = self._event, ""
        self._pending = 0
        if not data:  # nothing, or a priming event (``id: 7`` + ``data:``): the id is kept, nothing dispatched
            return None
        return SSEEvent(event=event or "message", data=data, id=self._last_id, retry=self._retry)
