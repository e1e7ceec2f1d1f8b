"""What a chat frontend shows of a run, protocol-free: the parts ``ui_streams`` writes as AG-UI or Vercel AI.

``ui_parts(items)`` reads what ``Agent.stream`` yields (events, then the answer
dict) and yields ``UIPart`` records in the order a frontend renders them::

    step_start                            (turn_start)
      reasoning_start / _delta / _end     (reasoning deltas, or the whole reasoning at message_end)
      text_start / text_delta / text_end  (text deltas, or the whole text at message_end)
      tool_start / tool_args / tool_end   (tool-call deltas, or the whole call at message_end)
      tool_result                         (tool_execution_end, else the tool message's message_end)
    step_end                              (turn_end, or before the answer)
    notice                                (an ``error`` event: the run may go on; the answer says)
    answer                                (last: the answer dict)

Every opened text, reasoning, tool call and step is closed before the next
kind opens and before ``answer``, so each protocol's pairing rules hold even
when the model's deltas stop short. Without a streaming ``llm_call`` (no
``message_update``) the text, reasoning and calls come whole from the
assistant's ``message_end``. ``replay_items(messages, answer)`` turns messages
already in the history into the ``message_end`` events ``ui_parts`` reads: a
run nobody streamed (``Agent.decide``'s resumed run) reaches a client the same way.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .._internal.jsonload import loads_bounded
from ..loop import events as ev
from ..messages import AssistantMessage, Message, ToolResultMessage

__all__ = ["Deciding", "PartKind", "UIPart", "UIParts", "decided_items", "replay_items", "ui_parts"]

PartKind = Literal[
    "step_start", "step_end", "reasoning_start", "reasoning_delta", "reasoning_end", "text_start",
    "text_delta", "text_end", "tool_start", "tool_args", "tool_end", "tool_result", "notice", "answer",
]


@dataclass
class UIPart:
    """One thing to show: ``kind`` and the fields that kind uses (the others keep their defaults).

    ``id``: the text's or reasoning's id (one per assistant message), the tool
    call's id, or the step's name; ``message_id``: the assistant message a tool
    call belongs to; ``name``: the tool's name; ``delta``: new characters;
    ``data``: ``tool_end`` the parsed arguments, ``tool_result`` ``{"text",
    "is_error", "rejected"}``, ``notice`` ``{"where", "message"}``, ``answer``
    the answer dict.
    """

    kind: PartKind
    id: str = ""
    message_id: str = ""
    name: str = ""
    delta: str = ""
    data: Any = None


@dataclass
class _Call:
    name: str
    message_id: str
    args: list[str] = field(default_factory=list)


class _Parts:
    """The state of one run's translation (open text, reasoning, calls, step)."""

    def __init__(self) -> None:
        self.message_id = ""
        self.open: str | None = None  # "text" | "reasoning" | None
        self.shown: set[str] = set()  # kinds streamed in this assistant message ("text", "reasoning")
        self.calls: dict[str, _Call] = {}  # started and not yet ended, by tool call id
        self.at_index: dict[int | None, str] = {}  # the call a delta without an id continues
        self.waiting: dict[int | None, list[str]] = {}  # argument pieces before the call's id arrived
        self.resulted: set[str] = set()
        self.step: str | None = None
        self.assistant_seen = False

    # ------------------------------------------------------------- helpers

    def close_open(self) -> Iterator[UIPart]:
        if self.open is not None:
            yield UIPart(f"{self.open}_end", self._content_id(self.open))  # type: ignore[arg-type]
            self.open = None

    def _content_id(self, kind: str) -> str:
        return self.message_id if kind == "text" else f"{self.message_id}-reasoning"

    def content(self, kind: Literal["text", "reasoning"], delta: str) -> Iterator[UIPart]:
        if self.open != kind:
            yield from self.close_open()
            yield UIPart(f"{kind}_start", self._content_id(kind))  # type: ignore[arg-type]
            self.open = kind
        self.shown.add(kind)
        if delta:
            yield UIPart(f"{kind}_delta", self._content_id(kind), delta=delta)  # type: ignore[arg-type]

    def start_call(self, call_id: str, name: str) -> Iterator[UIPart]:
        yield from self.close_open()
        self.calls[call_id] = _Call(name, self.message_id)
        yield UIPart("tool_start", call_id, self.message_id, name)

    def call_args(self, call_id: str, delta: str) -> Iterator[UIPart]:
        if delta:
            self.calls[call_id].args.append(delta)
            yield UIPart("tool_args", call_id, self.calls[call_id].message_id, delta=delta)

    def end_call(self, call_id: str, arguments: Any) -> Iterator[UIPart]:
        call = self.calls.pop(call_id)
        yield UIPart("tool_end", call_id, call.message_id, call.name, data=arguments)

    def end_step(self) -> Iterator[UIPart]:
        yield from self.close_open()
        for call_id, call in list(self.calls.items()):  # streamed calls the message never confirmed
            yield from self.end_call(call_id, _parsed("".join(call.args)))
        if self.step is not None:
            yield UIPart("step_end", self.step)
            self.step = None

    # ------------------------------------------------------------- events

    def delta(self, event: ev.MessageUpdateEvent) -> Iterator[UIPart]:
        self.assistant_seen = True
        if not self.message_id:
            self.message_id = uuid.uuid4().hex
        if event.delta_type in ("text", "reasoning"):
            yield from self.content(event.delta_type, event.delta)
            return
        index, call_id = event.tool_call_index, event.tool_call_id
        if call_id and call_id not in self.calls and call_id not in self.resulted:
            yield from self.start_call(call_id, event.tool_name or "")
            self.at_index[index] = call_id
            for piece in self.waiting.pop(index, []):
                yield from self.call_args(call_id, piece)
        target = call_id or self.at_index.get(index)
        if target is None or target not in self.calls:
            self.waiting.setdefault(index, []).append(event.delta)
            return
        yield from self.call_args(target, event.delta)

    def assistant_end(self, message: AssistantMessage) -> Iterator[UIPart]:
        self.assistant_seen = True
        if not self.message_id:
            self.message_id = uuid.uuid4().hex
        reasoning, text = message.reasoning, message.text
        if reasoning and "reasoning" not in self.shown:
            yield from self.content("reasoning", reasoning)
        if text and "text" not in self.shown:
            yield from self.content("text", text)
        yield from self.close_open()
        for call in message.tool_calls:
            if call.id not in self.calls:
                yield from self.start_call(call.id, call.name)
                yield from self.call_args(call.id, call.raw_arguments if call.error and call.raw_arguments
                                          else json.dumps(call.arguments, ensure_ascii=False))
            yield from self.end_call(call.id, call.arguments)
        for call_id, streamed in list(self.calls.items()):  # streamed, then dropped from the message
            yield from self.end_call(call_id, _parsed("".join(streamed.args)))
        self.message_id, self.shown, self.at_index, self.waiting = "", set(), {}, {}

    def result(self, call_id: str, text: str, is_error: bool, details: Any) -> Iterator[UIPart]:
        if call_id in self.resulted:
            return
        if call_id in self.calls:  # a result before its call was closed (a replay): close it first
            yield from self.end_call(call_id, _parsed("".join(self.calls[call_id].args)))
        self.resulted.add(call_id)
        rejected = isinstance(details, Mapping) and details.get("rejected") is True
        yield UIPart("tool_result", call_id, name="", data={"text": text, "is_error": is_error,
                                                              "rejected": rejected})

    def event(self, item: ev.Event) -> Iterator[UIPart]:
        if isinstance(item, ev.TurnStartEvent):
            yield from self.end_step()
            self.step = f"turn {item.turn}"
            yield UIPart("step_start", self.step)
        elif isinstance(item, ev.TurnEndEvent):
            yield from self.end_step()
        elif isinstance(item, ev.MessageStartEvent) and item.role == "assistant":
            yield from self.close_open()
            self.message_id, self.shown, self.assistant_seen = uuid.uuid4().hex, set(), True
        elif isinstance(item, ev.MessageUpdateEvent):
            yield from self.delta(item)
        elif isinstance(item, ev.MessageEndEvent) and isinstance(item.message, AssistantMessage):
            yield from self.assistant_end(item.message)
        elif isinstance(item, ev.MessageEndEvent) and isinstance(item.message, ToolResultMessage):
            message = item.message
            yield from self.result(message.tool_call_id, message.text, message.is_error, message.details)
        elif isinstance(item, ev.ToolExecutionEndEvent) and item.tool_call is not None:
            result = item.result
            yield from self.result(item.tool_call.id, str(getattr(result, "text", "") or ""),
                                   bool(getattr(result, "is_error", item.is_error)), getattr(result, "details", None))
        elif isinstance(item, ev.ErrorEvent):
            yield UIPart("notice", data={"where": item.where, "message": item.message or _error_text(item.error)})

    def answer(self, answer: Mapping[str, Any]) -> Iterator[UIPart]:
        yield from self.end_step()
        content = answer.get("content")
        if not self.assistant_seen and isinstance(content, str) and content and answer.get("status") != "error":
            self.message_id = uuid.uuid4().hex  # an answer alone (nothing streamed): its text is the message
            yield from self.content("text", content)
            yield from self.close_open()
        yield UIPart("answer", data=dict(answer))


def _parsed(text: str) -> Any:
    try:
        return loads_bounded(text) if text else {}
    except ValueError:
        return text


def _error_text(error: BaseException | None) -> str:
    return f"{type(error).__name__}: {error}" if error is not None else "error"


class UIParts:
    """The translation of one run, fed item by item: ``feed(item)`` gives the parts of that item.

    ``done`` is True once the answer was fed (later items give nothing);
    ``close()`` gives the parts that end what is still open when the items end without an answer.
    """

    def __init__(self) -> None:
        self._state = _Parts()
        self.done = False

    def feed(self, item: ev.Event | Mapping[str, Any]) -> Iterator[UIPart]:
        """The parts of ``item`` (an event, or the answer dict: then ``answer`` is the last part)."""
        if self.done:
            return
        if isinstance(item, Mapping):
            self.done = True
            yield from self._state.answer(item)
        else:
            yield from self._state.event(item)

    def close(self) -> Iterator[UIPart]:
        """End what is open (nothing after the answer)."""
        if not self.done:
            self.done = True
            yield from self._state.end_step()


def ui_parts(items: Iterable[ev.Event | Mapping[str, Any]]) -> Iterator[UIPart]:
    """The ``UIPart`` records of ``items`` (what ``Agent.stream`` yields), ``answer`` last.

    Items after the answer are ignored. Events a chat shows nothing of
    (``agent_start``, user and system messages, ``tool_execution_start``,
    ``sub_agent_event``...) give no part. Without an answer in ``items`` the
    parts end after the last event (the open ones closed).

    Example:
        >>> from yiemagent.loop.events import MessageUpdateEvent
        >>> [(p.kind, p.delta) for p in ui_parts([MessageUpdateEvent(delta="Hi"), {"content": "Hi"}])]
        [('text_start', ''), ('text_delta', 'Hi'), ('text_end', ''), ('answer', '')]
    """
    parts = UIParts()
    for item in items:
        yield from parts.feed(item)
        if parts.done:
            return
    yield from parts.close()


def replay_items(messages: Sequence[Message], answer: Mapping[str, Any]) -> list[ev.Event | Mapping[str, Any]]:
    """``message_end`` events for ``messages`` (history already written), then ``answer``: input for ``ui_parts``.

    For a run that was not streamed, e.g. the one ``Agent.decide`` resumes and
    waits for: take ``agent.history`` before and after the call and replay
    the new messages. A client sees the tool results and the final text (whole, no deltas).
    """
    items: list[ev.Event | Mapping[str, Any]] = [ev.MessageEndEvent(message=m) for m in messages]
    items.append(answer)
    return items


class Deciding(Protocol):
    """What ``decided_items`` uses of an ``Agent``."""

    @property
    def history(self) -> list[Message]: ...  # noqa: D102

    def decide(self, decisions: Mapping[str, bool | str], *,  # noqa: D102
               timeout_seconds: float | None = None) -> Any: ...


def decided_items(agent: Deciding, decisions: Mapping[str, bool | str], *,
                  timeout_seconds: float | None = None) -> list[ev.Event | Mapping[str, Any]]:
    """``agent.decide(decisions)``, then what its resumed run added to the history, as ``replay_items``.

    The replay starts after the assistant message that asked for the decided
    calls (the client has shown it already): the calls' results, the next
    replies, and the answer (``awaiting_approval`` again when the model asks for
    another such call). ``decide``'s exceptions propagate (``ApprovalError``: a
    call not waiting; ``TimeoutError``; ...).
    """
    answer = agent.decide(decisions, timeout_seconds=timeout_seconds)
    history = list(agent.history)
    start = len(history)  # the asking message is not there (nothing ran): the answer alone
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if isinstance(message, AssistantMessage) and any(c.id in decisions for c in message.tool_calls):
            start = index + 1
            break
    return replay_items(history[start:], answer)
