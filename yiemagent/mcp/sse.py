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

from dataclasses import dataclass

__all__ = ["SSEEvent", "SSEParser"]


@dataclass
class SSEEvent:
    """One dispatched event."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    """The last event id seen so far in the stream (``id:`` field)."""
    retry: int | None = None
    """Reconnection time in milliseconds, if the stream set one."""


class SSEParser:
    """Incremental parser; one instance per stream. Not thread-safe."""

    def __init__(self) -> None:
        self._buffer = ""
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None
        self._started = False

    @property
    def last_event_id(self) -> str | None:
        """The last ``id:`` seen, also on events not dispatched (a priming event); None if none."""
        return self._last_id

    @property
    def retry_ms(self) -> int | None:
        """The last ``retry:`` value seen (milliseconds before reconnecting), or None."""
        return self._retry

    def feed(self, chunk: str) -> list[SSEEvent]:
        """Add text; return the events completed by it, in order."""
        if not chunk:
            return []
        buffer = self._buffer + chunk
        if not self._started:
            self._started = True
            if buffer.startswith("\ufeff"):  # a byte order mark is ignored once, at the start
                buffer = buffer[1:]
        events: list[SSEEvent] = []
        start = 0
        length = len(buffer)
        while True:
            lf = buffer.find("\n", start)
            cr = buffer.find("\r", start)
            if lf == -1 and cr == -1:
                break
            if cr != -1 and (lf == -1 or cr < lf):
                if cr + 1 == length:  # a CR at the end: wait to see whether LF follows
                    break
                end, next_start = cr, cr + 2 if buffer[cr + 1] == "\n" else cr + 1
            else:
                end, next_start = lf, lf + 1
            event = self._line(buffer[start:end])
            if event is not None:
                events.append(event)
            start = next_start
        self._buffer = buffer[start:]
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: dispatch a last event that lacked its blank line (lenient)."""
        events = self.feed("\n") if self._buffer else []
        if self._data:
            final = self._line("")
            if final is not None:
                events.append(final)
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, self._data = "\n".join(self._data), []
        event, self._event = self._event, ""
        if not data:  # nothing, or a priming event (``id: 7`` + ``data:``): the id is kept, nothing dispatched
            return None
        return SSEEvent(event=event or "message", data=data, id=self._last_id, retry=self._retry)
