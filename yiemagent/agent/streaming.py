"""Streaming to the caller: ``AgentStream`` (what ``Agent.stream`` returns) and server-sent events.

::

    for item in agent.stream("What is the weather in Paris?"):
        if isinstance(item, dict):                    # the last item: the answer
            print("\\n", item["status"])
        elif item.type == "message_update" and item.delta_type == "text":
            print(item.delta, end="", flush=True)     # the answer as it is written

    # Flask: one line turns it into a text/event-stream response
    return flask.Response(sse_events(agent.stream(text)), headers=SSE_HEADERS)

An ``AgentStream`` yields the events of the run that serves its input
(``yiemagent.loop.events``: ``agent_start`` ... ``message_update`` ... ``agent_end``)
and then, always last, the answer: the same dict ``Agent.ask`` returns (OpenAI
assistant message with ``status`` and ``input_ids``). ``sse_events`` sends,
before everything else, ``event: input`` with ``{"input_id", "seq"}``: a client
whose connection is cut later knows which input to ask the server about
(``docs/guides/web_apps.rst``). Deltas
(``message_update``) come only from a streaming ``llm_call`` (one taking
``on_delta``, e.g. ``openai_chat(..., stream=True)``); others give the same
sequence without them.

Spec: server-sent events as in the WHATWG HTML standard (``event:`` and
``data:`` lines, a blank line after each event).
"""

from __future__ import annotations

import dataclasses
import math
import queue
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any, Literal, cast, get_args

from ..loop import events as ev
from ..messages import ToolCall, to_openai
from ..output.answers import Answer
from ..textpolicy import boundary, json_text
from ..tools import AgentToolResult

__all__ = ["SSE_HEADERS", "AgentStream", "event_to_dict", "sse_events"]

SSE_HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # nginx: do not buffer the stream
}
"""HTTP headers for a server-sent-events response (pass them with ``sse_events``)."""

_END = object()


class AgentStream(Iterator["ev.Event | Answer"]):
    """The events of one input's run, as they happen, then its answer dict (``Agent.stream``).

    Iterate it once, from any one thread. Items: ``Event`` objects in the
    order the sink got them, then the answer dict (always last, even when the
    run failed: then ``status`` is ``"error"``). The answer is also in
    ``answer`` after the end, and in the agent's history like any answer.

    Stopping early (``break``, ``close()``, a web client that went away and
    made the server close the response): with ``on_close="continue"`` (the
    default) the run goes on to its end and its answer lands in the history
    and in ``future``; with ``on_close="abort"`` the run serving this input is
    aborted (status ``aborted``, the history stays valid). Events after
    ``close()`` are dropped.

    A reader that stops reading does not make the stream grow without bound:
    once ``max_buffered`` items wait, ``message_update`` deltas (a preview: the
    ``message_end`` message is what goes into the history) are dropped and
    counted in ``dropped``; every other event, and the answer, is kept (they
    are bounded by the run's turns and calls).

    Thread safety: the agent's threads feed it; one consumer reads it.
    """

    max_buffered = 10_000
    """Items waiting unread past which deltas are dropped (a class default; set it on an instance too)."""

    def __init__(self, input_id: str, abort: Callable[[], bool],
                 on_close: Literal["continue", "abort"] = "continue") -> None:
        if on_close not in ("continue", "abort"):
            raise ValueError("on_close must be 'continue' or 'abort'")
        self.input_id = input_id
        """The id of the input (the answer's ``input_ids`` holds it)."""
        self.seq: int | None = None
        """With a store: the input's sequence number in the conversation's inbox (set before
        ``Agent.stream`` returns); None without a store."""
        self.on_close = on_close
        self.answer: Answer | None = None
        """The answer dict once the iteration reached it."""
        self.future: Future[Answer] | None = None
        """Resolved with the answer when the run ends, whether or not anyone iterates."""
        self._abort = abort
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._done = False
        self._abort_sent = False
        self.dropped = 0
        """``message_update`` deltas dropped because ``max_buffered`` items were waiting unread."""

    def __repr__(self) -> str:
        state = "done" if self._done else ("closed" if self._closed else "open")
        return f"<AgentStream {self.input_id} {state}>"

    # fed by the agent ---------------------------------------------------

    def attach(self, future: Future[Answer] | Future[dict[str, Any]]) -> None:
        """The future of this stream's answer (set by the agent): the stream ends when it is done."""
        self.future = cast("Future[Answer]", future)
        future.add_done_callback(lambda _: self._queue.put(_END))

    def put(self, event: ev.Event) -> None:
        """The agent's listener: called on the run's thread for each of its events."""
        if not self._closed:
            if isinstance(event, ev.MessageUpdateEvent) and self._queue.qsize() >= self.max_buffered:
                # the reader fell behind: every kind of delta (text, tool_call, reasoning) is a preview that
                # message_end repeats whole, so any of them may go
                self.dropped += 1
                return
            self._queue.put(event)
        elif self.on_close == "abort" and not self._abort_sent and event.type != "agent_end":
            self._abort_sent = self._abort()  # closed before its run started: abort it now that it runs

    # read by the consumer -----------------------------------------------

    def __iter__(self) -> AgentStream:
        return self

    def input_event(self) -> dict[str, Any]:
        """``{"input_id": str, "seq": int | None}``: what ``sse_events`` sends first (``event: input``)."""
        return {"input_id": self.input_id, "seq": self.seq}

    def __next__(self) -> ev.Event | Answer:
        return self.next(None)

    def next(self, timeout_seconds: float | None = None) -> ev.Event | Answer:
        """The next item, waiting at most ``timeout_seconds`` (None: no limit).

        Raises:
            StopIteration: the answer was already returned, or the stream is closed.
            TimeoutError: nothing arrived in time (the stream goes on; call again).
        """
        if self._done or self._closed:
            raise StopIteration
        try:
            item = self._queue.get(timeout=timeout_seconds)
        except queue.Empty:
            raise TimeoutError(f"no event within {timeout_seconds}s") from None
        if item is not _END:
            return item  # type: ignore[no-any-return]
        self._done = True
        self.answer = self._final_answer()
        return self.answer

    def _final_answer(self) -> Answer:
        assert self.future is not None
        exc = self.future.exception()
        if exc is None:
            return self.future.result()
        return {"role": "assistant", "content": f"Error: {exc}", "status": "error", "error": str(exc),
                "input_ids": [self.input_id]}

    def text(self) -> str:
        """Iterate to the end and return the answer's text (``""`` when it has none)."""
        for _ in self:
            pass
        return str(self.answer.get("content") or "") if self.answer is not None else ""

    def close(self) -> None:
        """Stop reading (see the class docstring for what happens to the run). Safe to call twice."""
        if self._closed or self._done:
            return
        self._closed = True
        if self.on_close == "abort" and not self._abort_sent:
            self._abort_sent = self._abort()  # False when its run has not started yet: _put aborts it then

    def __enter__(self) -> AgentStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, ToolCall):
        return {"id": value.id, "name": value.name, "arguments": value.arguments, "error": value.error}
    if isinstance(value, AgentToolResult):
        return {"text": value.text, "is_error": value.is_error, "terminate": value.terminate}
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, get_args(ev.Event)):  # a nested event (``SubAgentEvent.event``): its own dict
        return event_to_dict(value)
    try:
        return to_openai(value)
    except Exception:  # not a message
        return repr(value)


def event_to_dict(event: ev.Event) -> dict[str, Any]:
    """A JSON-ready dict of ``event``: its fields, with messages in OpenAI form.

    Shape: ``{"type": ..., "run_id": ..., "timestamp": ..., <fields>}``;
    ``message`` is an OpenAI message dict, ``tool_call`` is ``{"id", "name",
    "arguments", "error"}``, ``result`` is ``{"text", "is_error",
    "terminate"}``, ``error`` is ``"ExceptionType: message"``; a
    ``sub_agent_event``'s ``event`` is the nested event's own dict.
    """
    return {f.name: _jsonable(getattr(event, f.name)) for f in dataclasses.fields(event)}


def check_heartbeat(heartbeat_seconds: Any) -> None:
    """Refuse a ``heartbeat_seconds`` that is not None nor a finite number > 0 (``ValueError``).

    0, a negative number or NaN sent keep-alive comments without end, as fast as the client read them.
    """
    if heartbeat_seconds is not None and (isinstance(heartbeat_seconds, bool) or not isinstance(
            heartbeat_seconds, (int, float)) or not 0 < heartbeat_seconds < math.inf):
        raise ValueError(f"heartbeat_seconds must be None or a finite number > 0, not {heartbeat_seconds!r}")


def _with_heartbeats(
    items: Iterable[ev.Event | Mapping[str, Any] | None], heartbeat_seconds: float | None
) -> Iterator[ev.Event | Mapping[str, Any] | None]:
    """``items``, with None after each ``heartbeat_seconds`` of quiet (only an ``AgentStream`` can wait so)."""
    check_heartbeat(heartbeat_seconds)
    if heartbeat_seconds is None or not isinstance(items, AgentStream):
        yield from items
        return
    while True:
        try:
            yield items.next(heartbeat_seconds)
        except TimeoutError:
            yield None
        except StopIteration:
            return


def sse_events(
    items: Iterable[ev.Event | Mapping[str, Any]],
    *,
    types: Iterable[str] | None = None,
    heartbeat_seconds: float | None = 15.0,
) -> Iterator[str]:
    """Server-sent events text for ``items`` (e.g. ``agent.stream(text)``), one string per event.

    Each event is ``event: <type>\\ndata: <JSON of event_to_dict>\\n\\n``; the
    answer dict comes last as ``event: answer``. For an ``AgentStream`` the
    first event is ``event: input`` with ``{"input_id": str, "seq": int | null}``
    (``AgentStream.input_event``; ``seq`` is the store's inbox number when the
    agent has a store), sent before the run starts: a client whose connection
    is cut afterwards fetches the answer by that id (``docs/guides/web_apps.rst``).
    ``types`` keeps only those event types (the input and the answer are always sent). Closing this generator (a WSGI
    server does when the client goes away) closes the ``AgentStream``.

    For an ``AgentStream``, a comment line ``: keep-alive`` is sent after
    ``heartbeat_seconds`` without an event (None: never), so that proxies do
    not drop a quiet connection during a long tool call, and a browser that
    went away is noticed (the write fails) without waiting for the next event.

    Example:
        >>> from yiemagent.loop.events import MessageUpdateEvent
        >>> print(list(sse_events([MessageUpdateEvent(delta="Hi", run_id="r1", timestamp=0.0)]))[0], end="")
        event: message_update
        data: {"run_id": "r1", "timestamp": 0.0, "delta_type": "text", "delta": "Hi", "tool_call_index": null, \
"tool_call_id": null, "tool_name": null, "type": "message_update"}
        <BLANKLINE>
    """
    wanted = set(types) if types is not None else None
    try:
        if isinstance(items, AgentStream):
            yield sse_text("input", items.input_event())
        for item in _with_heartbeats(items, heartbeat_seconds):
            if item is None:
                yield ": keep-alive\n\n"
                continue
            if isinstance(item, Mapping):
                yield sse_text("answer", _jsonable(dict(item)))
                continue
            if wanted is not None and item.type not in wanted:
                continue
            yield sse_text(item.type, event_to_dict(item))
    finally:
        close = getattr(items, "close", None)
        if callable(close):
            close()


@boundary("sse", "json")
def sse_text(event_type: str, data: Any) -> str:
    """One server-sent event: ``event: <type>\\ndata: <JSON>\\n\\n`` (the ``sse`` boundary).

    ``data`` is written by the outbound text policy's ``json`` rule
    (``yiemagent.textpolicy``): one line of RFC 8259 JSON, no lone surrogate,
    no raw control character, known secrets ``***``.
    """
    kind = "".join(ch for ch in str(event_type) if ch.isalnum() or ch in "_-.") or "message"
    return f"event: {kind}\ndata: {json_text(data)}\n\n"

