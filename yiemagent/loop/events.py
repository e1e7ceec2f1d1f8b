"""Events: typed lifecycle records sent to the agent's ``event_sink``.

Every event is a dataclass with a ``type`` string, a ``timestamp`` (seconds
since the epoch, ``time.time()``) and the ``run_id`` of the run it belongs to.
End events carry ``duration_seconds``. The sequence of one run with two tool
calls::

    agent_start
      message_start/message_end (user)
      turn_start
        message_start/message_end (assistant, 2 tool_calls)
        tool_execution_start (call 1)    tool_execution_start (call 2)
        tool_execution_end   (call 1)    tool_execution_end   (call 2)
        message_start/message_end (tool result 1, tool result 2)
      turn_end
      turn_start
        message_start/message_end (assistant, final answer)
      turn_end
    agent_end (status "completed")

With a streaming ``llm_call`` (one that takes ``on_delta``, as ``openai_chat(...,
stream=True)`` does), ``message_update`` events (text, reasoning and tool-call
argument deltas, in arrival order) come between the assistant's
``message_start`` and ``message_end``.

``request_repaired`` (the request guard changed what is sent) comes right
before the model call it concerns; ``error`` may appear anywhere (the run
goes on or ends with status "error");
``aborted`` precedes ``agent_end`` with status "aborted"; ``guardrail_tripped``
(``yiemagent.tools.guardrails``) comes when a guardrail did not pass: with
``outcome="ended"`` it precedes ``agent_end`` with status "guardrail_tripped".
``fallback`` (``yiemagent.models.fallback``: a model was down, the next one
is asked) comes during the model call, before the reply's ``message_end``;
``sub_agent_event`` wraps an event of an agent used as a tool
(``Agent.as_tool``), between that call's ``tool_execution_start`` and
``tool_execution_end``.

Events from worker threads: code the loop runs on a worker thread (an
``llm_call``, a tool's ``execute``) may send an event to the run's sink with
``report(event)`` (or take ``reporter()`` to call from another thread); the
loop emits it on its own thread, in order, with the run's ``run_id``.

Contract of a sink: ``sink(event) -> None``, called on the agent thread, in
order. It should return quickly. If it raises, the error is logged and ignored.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Union

from .._internal.checks import one_of
from ..exceptions import SimulatedCrash

if TYPE_CHECKING:  # annotations only: the events (and tracing, which MCP requests use) load without the messages
    from ..messages import Message, ToolCall

__all__ = [
    "EVENT_TYPES", "AbortedEvent", "AgentEndEvent", "AgentStartEvent", "ApprovalRequestedEvent", "CompactionEvent",
    "ErrorEvent", "Event", "EventSink", "FallbackEvent", "GuardrailTrippedEvent", "MessageEndEvent",
    "MessageStartEvent", "MessageUpdateEvent", "RequestRepairedEvent", "SubAgentEvent", "ToolCallRepairedEvent",
    "ToolExecutionEndEvent", "ToolExecutionStartEvent", "ToolExecutionUpdateEvent", "ToolsChangedEvent",
    "TurnEndEvent", "TurnStartEvent", "add_observer", "emit", "observe", "observed", "observed_types",
    "remove_observer", "report", "reporter", "reporting"
]

logger = logging.getLogger("yiemagent.loop.events")


@dataclass(kw_only=True)
class _Base:
    run_id: str = ""
    """Id of the run (one input, or several when steering) this event belongs to."""
    timestamp: float = field(default_factory=time.time)
    """Seconds since the epoch when the event was made."""


@dataclass(kw_only=True)
class AgentStartEvent(_Base):
    """A run starts: it answers ``input_ids``."""

    input_ids: list[str] = field(default_factory=list)
    type: Literal["agent_start"] = field(default="agent_start", init=False)


@dataclass(kw_only=True)
class AgentEndEvent(_Base):
    """A run ended with ``status`` (``yiemagent.loop``).

    completed, truncated, terminated, max_turns, repeated_call, usage_limit, output_invalid, aborted, error,
    awaiting_approval or guardrail_tripped.
    """

    status: str = "completed"
    turns: int = 0
    duration_seconds: float = 0.0
    usage: dict[str, Any] = field(default_factory=dict)
    """Token counts summed over the run's model replies that reported ``usage``."""
    type: Literal["agent_end"] = field(default="agent_end", init=False)


@dataclass(kw_only=True)
class TurnStartEvent(_Base):
    """A turn (one model call and its tool batch) starts; ``turn`` counts from 1."""

    turn: int = 0
    tools_enabled: bool = True
    model: str | None = None
    """The model the ``llm_call`` asks for (its ``model`` attribute), when it has one."""
    type: Literal["turn_start"] = field(default="turn_start", init=False)


@dataclass(kw_only=True)
class TurnEndEvent(_Base):
    """A turn ended after ``duration_seconds``."""

    turn: int = 0
    duration_seconds: float = 0.0
    tool_calls: int = 0
    type: Literal["turn_end"] = field(default="turn_end", init=False)


@dataclass(kw_only=True)
class MessageStartEvent(_Base):
    """A message is about to be added to the history (the model call starts for the assistant)."""

    role: str = ""
    type: Literal["message_start"] = field(default="message_start", init=False)


@dataclass(kw_only=True)
class MessageUpdateEvent(_Base):
    """A piece of the assistant message as the model writes it (a streaming ``llm_call``).

    Sent between the assistant's ``message_start`` and ``message_end``, in the
    order the pieces arrived. Deltas are a preview: the ``message_end``
    message is what goes into the history (tool calls parsed and checked).
    """

    delta_type: Literal["text", "reasoning", "tool_call"] = "text"
    """``text``: answer text; ``reasoning``: thinking text; ``tool_call``: a piece of a call's arguments."""
    delta: str = ""
    """The new characters (for ``tool_call``, a piece of the JSON ``arguments``; may be ``""`` when
    only the call's name or id arrived)."""
    tool_call_index: int | None = None
    """For ``tool_call``: the call's ``index`` in the streamed reply (OpenAI ``delta.tool_calls[].index``)."""
    tool_call_id: str | None = None
    """For ``tool_call``: the call's id, once the model has sent it. Servers that stream parallel calls
    all at one ``index`` tell them apart by id only: key a call by ``(tool_call_index, tool_call_id)``."""
    tool_name: str | None = None
    """For ``tool_call``: the tool's name, once the model has sent it."""
    type: Literal["message_update"] = field(default="message_update", init=False)


@dataclass(kw_only=True)
class MessageEndEvent(_Base):
    """A message was added to the history."""

    message: Message | None = None
    duration_seconds: float = 0.0
    request_tokens: int | None = None
    """For an assistant message with ``compaction``/``context_window`` set: the size of the request, in tokens."""
    type: Literal["message_end"] = field(default="message_end", init=False)


@dataclass(kw_only=True)
class ToolExecutionStartEvent(_Base):
    """A tool call is about to run (after hooks and validation decided it may)."""

    tool_call: ToolCall | None = None
    annotations: dict[str, Any] | None = None
    """The tool's ``AgentTool.annotations`` (MCP ``ToolAnnotations``), or None (a local tool, an unknown name)."""
    type: Literal["tool_execution_start"] = field(default="tool_execution_start", init=False)


@dataclass(kw_only=True)
class ToolExecutionUpdateEvent(_Base):
    """Progress of a running tool (e.g. MCP ``notifications/progress``)."""

    tool_call_id: str = ""
    progress: Any = None
    type: Literal["tool_execution_update"] = field(default="tool_execution_update", init=False)


@dataclass(kw_only=True)
class ToolExecutionEndEvent(_Base):
    """A tool call has its result (run, blocked, failed or aborted)."""

    tool_call: ToolCall | None = None
    annotations: dict[str, Any] | None = None
    """The tool's ``AgentTool.annotations`` (MCP ``ToolAnnotations``), or None (a local tool, an unknown name)."""
    result: Any = None
    """The ``AgentToolResult``."""
    is_error: bool = False
    duration_seconds: float = 0.0
    type: Literal["tool_execution_end"] = field(default="tool_execution_end", init=False)


@dataclass(kw_only=True)
class ToolCallRepairedEvent(_Base):
    """A tool call's arguments were repaired unambiguously before it ran (``note`` says how)."""

    tool_call: ToolCall | None = None
    note: str = ""
    type: Literal["tool_call_repaired"] = field(default="tool_call_repaired", init=False)


@dataclass(kw_only=True)
class RequestRepairedEvent(_Base):
    """The request guard repaired the request about to be sent (``yiemagent.messages.guard``).

    ``repairs`` has one line per repair, e.g. ``"messages[0]: tool message for
    'c1' has no call right before it; not sent"``. Sent before ``llm_call``;
    the history is not changed.
    """

    turn: int = 0
    repairs: list[str] = field(default_factory=list)
    type: Literal["request_repaired"] = field(default="request_repaired", init=False)


@dataclass(kw_only=True)
class ErrorEvent(_Base):
    """Something failed; ``where`` names the step (llm_call, tool, hook, mcp, agent)."""

    where: str = ""
    error: BaseException | None = None
    message: str = ""
    type: Literal["error"] = field(default="error", init=False)


@dataclass(kw_only=True)
class AbortedEvent(_Base):
    """The run was aborted; ``pending_tool_call_ids`` got "aborted" results."""

    pending_tool_call_ids: list[str] = field(default_factory=list)
    type: Literal["aborted"] = field(default="aborted", init=False)


@dataclass(kw_only=True)
class ApprovalRequestedEvent(_Base):
    """The run stops until a person decides ``pending``: ``[{"tool_call_id", "name", "arguments"}]``.

    Sent before ``agent_end`` (status ``awaiting_approval``); see ``yiemagent.tools.approvals``.
    """

    turn: int = 0
    pending: list[dict[str, Any]] = field(default_factory=list)
    type: Literal["approval_requested"] = field(default="approval_requested", init=False)


@dataclass(kw_only=True)
class ToolsChangedEvent(_Base):
    """The set of tools changed (MCP ``notifications/tools/list_changed``, rediscovery)."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    type: Literal["tools_changed"] = field(default="tools_changed", init=False)


@dataclass(kw_only=True)
class FallbackEvent(_Base):
    """``fallback_llm`` moved on: ``model`` failed (its provider down or overloaded), ``next_model`` is asked.

    Sent while the model call runs, before the reply's ``message_end``. The
    model that answered is the reply's ``model`` (``AssistantMessage.model``,
    the answer dict's ``model``): the ``next_model`` of the last ``fallback``
    event of that call, unless an ``error`` event says it failed too.
    """

    model: str = ""
    """The model (its ``llm_call``'s ``model``, else its repr) that failed."""
    error: str = ""
    """Why: the error's type and message (e.g. ``"LLMError: HTTP 503 ..."``)."""
    status_code: int | None = None
    """The HTTP status of the failure (429, 500, 502, 503, 504, 529), or None (a connection failure, a timeout)."""
    next_model: str = ""
    """The model asked next."""
    type: Literal["fallback"] = field(default="fallback", init=False)


@dataclass(kw_only=True)
class CompactionEvent(_Base):
    """The conversation was compacted before a model call (``yiemagent.context.compaction``).

    Sent after the summary was written and added to the history, before the
    request that needed the room.
    """

    reason: Literal["budget", "overflow", "manual"] = "budget"
    """``budget``: the request would pass ``context_window - reserve_tokens``; ``overflow``: the server
    answered that the request was too long; ``manual``: ``Agent.compact()`` (``/compact``)."""
    tokens_before: int = 0
    """The request's size before, in tokens (``yiemagent.context.token_budget``)."""
    tokens_after: int = 0
    """Its size after (the summary and the kept messages)."""
    first_kept: int = 0
    """Index in the history of the first message sent verbatim."""
    summarised_messages: int = 0
    """Messages the summary stands for in this compaction (an earlier summary counts as none)."""
    summary: str = ""
    """The summary's text."""
    type: Literal["compaction"] = field(default="compaction", init=False)


@dataclass(kw_only=True)
class GuardrailTrippedEvent(_Base):
    """A guardrail did not pass (``yiemagent.tools.guardrails``).

    ``outcome``: ``ended`` (a tripwire: ``agent_end`` with status ``guardrail_tripped`` follows; at
    ``output`` the answer's text streamed so far is replaced by the run's answer, whose text the UI
    shows instead), ``retried`` (an ``output`` retry: the model answers again, and the rejected
    reply's streamed text is to be dropped) or ``rejected`` (a tool call's guardrail: the model gets
    an error result with ``reason``).
    """

    stage: Literal["input", "output", "tool_input", "tool_output"] = "input"
    guardrail: str = ""
    """The guardrail's name."""
    reason: str = ""
    info: Any = None
    """What the guardrail reported (JSON-ready)."""
    outcome: Literal["ended", "retried", "rejected"] = "ended"
    tool_call_id: str | None = None
    """The call checked (``tool_input``, ``tool_output``)."""
    replayed: bool = False
    """The verdict was journaled before a crash and is replayed: the guardrail did not run again."""
    type: Literal["guardrail_tripped"] = field(default="guardrail_tripped", init=False)


@dataclass(kw_only=True)
class SubAgentEvent(_Base):
    """An event of an agent used as a tool (``Agent.as_tool``), forwarded to the parent's sink.

    ``run_id`` is the parent's run; ``event`` is the sub-agent's event as it
    made it (its ``run_id`` is the sub-agent's run). A sub-agent's own
    sub-agents nest further (``event`` is then a ``SubAgentEvent`` too).
    """

    tool_call_id: str = ""
    """The parent's tool call that runs the sub-agent."""
    tool_name: str = ""
    """The tool's name (``as_tool(name, ...)``)."""
    agent_name: str = ""
    """The sub-agent's ``name``."""
    event: Any = None
    """The sub-agent's ``Event``."""
    type: Literal["sub_agent_event"] = field(default="sub_agent_event", init=False)


Event = Union[
    AgentStartEvent,
    AgentEndEvent,
    TurnStartEvent,
    TurnEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    MessageEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolExecutionEndEvent,
    ToolCallRepairedEvent,
    RequestRepairedEvent,
    ErrorEvent,
    AbortedEvent,
    ToolsChangedEvent,
    ApprovalRequestedEvent,
    FallbackEvent,
    SubAgentEvent,
    CompactionEvent,
    GuardrailTrippedEvent,
]
"""Any event of a run (a union of the event classes above); ``event.type`` tells which one it is."""

EVENT_TYPES: tuple[str, ...] = tuple(cls.__dataclass_fields__["type"].default
                                     for cls in Event.__args__)  # type: ignore[attr-defined]
"""Every event's ``type`` (``"agent_start"``, ``"message_update"``...): the names ``sse_events(types=...)`` takes."""

EventSink = Callable[[Event], Any]


def emit(sink: EventSink | None, event: Event) -> None:
    """Send ``event`` to ``sink``; a raising sink (any ``BaseException``) is logged and ignored."""
    if sink is None:
        return
    try:
        sink(event)
    except SimulatedCrash:
        raise
    except BaseException:  # SystemExit/KeyboardInterrupt too: a sink never ends a run or a thread
        logger.exception("event sink raised on %s; ignored", event.type)


_observers: tuple[EventSink, ...] = ()
"""Process-wide observers of every run's events (``yiemagent.loop.tracing``); empty unless instrumented."""
_wants: dict[int, frozenset[str] | None] = {}  # id(observer) -> the event types it reads (None: all)
_observers_lock = threading.Lock()


def add_observer(observer: EventSink, types: Iterable[str] | None = None) -> None:
    """See every event of every run in this process, after the run's own sink (e.g. ``tracing.instrument``).

    Called on the thread running the loop, in order, like a sink; a raising observer is logged and ignored.
    ``types``: the ``event.type`` names it reads (``EVENT_TYPES``; ``ConfigError`` else), None: all; the
    loop may then not make the others when no sink listens (it may still hand them over).
    """
    wanted = None if types is None else frozenset(one_of("event type", t, EVENT_TYPES) for t in types)
    global _observers
    with _observers_lock:
        _observers = (*(o for o in _observers if o is not observer), observer)
        _wants[id(observer)] = wanted


def remove_observer(observer: EventSink) -> None:
    """Stop ``observer`` (added by ``add_observer``); unknown observers are ignored."""
    global _observers
    with _observers_lock:
        _observers = tuple(o for o in _observers if o is not observer)
        _wants.pop(id(observer), None)


def observed_types() -> frozenset[str] | None:
    """The event types some process-wide observer reads (None: all; empty: no observer)."""
    wants = [_wants.get(id(o)) for o in _observers]
    return None if None in wants else frozenset().union(*wants)  # type: ignore[arg-type]


def observed() -> bool:
    """True when a process-wide observer is added (``add_observer``): events must be made even without a sink."""
    return bool(_observers)


def observe(event: Event) -> None:
    """Hand ``event`` to the process-wide observers (none: one tuple read, nothing else)."""
    for observer in _observers:
        emit(observer, event)


_reporting = threading.local()


class reporting:
    """While the block runs on this thread, ``report(event)`` calls ``put(event)`` (the loop sets it)."""

    __slots__ = ("previous", "put")

    def __init__(self, put: Callable[[Event], object]) -> None:
        self.put = put
        self.previous: Callable[[Event], object] | None = None

    def __enter__(self) -> None:
        self.previous = getattr(_reporting, "put", None)
        _reporting.put = self.put

    def __exit__(self, *exc: object) -> None:
        _reporting.put = self.previous


def reporter() -> Callable[[Event], object] | None:
    """The run's event channel of this thread (inside an ``llm_call`` or a tool the loop runs), or None.

    The callable it returns is safe from any thread, for as long as the run
    lasts (events put after the run ended are dropped).
    """
    put: Callable[[Event], object] | None = getattr(_reporting, "put", None)
    return put


def report(event: Event) -> bool:
    """Send ``event`` to the sink of the run this thread works for; False (nothing sent) outside a run."""
    put = reporter()
    if put is None:
        return False
    put(event)
    return True
