"""OpenTelemetry tracing of every agent run, with the GenAI semantic conventions.

::

    from yiemagent import tracing

    tracing.instrument()                       # the global tracer provider
    tracing.instrument(tracer_provider=tp)     # or one of your own
    tracing.instrument(capture_content=True)   # also messages, arguments and results
    tracing.uninstrument()

Like an OpenTelemetry instrumentor, ``instrument()`` turns tracing on for every
agent of the process (and every ``run_turns``). The spans are built from the
event stream (``yiemagent.loop.events.add_observer``), not from code in the loop:

* one span per run, ``invoke_agent`` (``INTERNAL``), parent of the others;
  its parent is the span current where its input was queued (``submit``,
  ``stream``, ``ask``, a queue ``put``: a web request's span, for example), or
  where the run started;
* one per model call, ``chat {model}`` (``CLIENT``), from ``turn_start`` to the
  assistant's ``message_end`` (or the ``error`` that ended it);
* one per tool call, ``execute_tool {name}`` (``INTERNAL``), from
  ``tool_execution_start`` to ``tool_execution_end``. The tool runs with its
  span current (``tool_scope``), so instrumented code inside it (``requests``,
  an MCP request) is its child, and every MCP request carries the W3C
  ``traceparent`` (and ``tracestate``, ``baggage``) in ``params._meta``.

Attributes (OpenTelemetry semantic conventions for generative AI, "gen-ai-spans"
and "gen-ai-agent-spans"): ``gen_ai.operation.name`` (``invoke_agent``,
``chat``, ``execute_tool``), ``gen_ai.request.model`` (the ``llm_call``'s
``model``), ``gen_ai.response.model``, ``gen_ai.response.finish_reasons``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``,
``error.type``; and ``yiemagent.run.status``, ``yiemagent.run.turns``. With
``capture_content=True`` (off by default: contents may be personal data):
``gen_ai.input.messages`` (the request as ``llm_call`` gets it, system
prompt included), ``gen_ai.output.messages``, ``gen_ai.tool.call.arguments``,
``gen_ai.tool.call.result`` (JSON text, through the text policy).

Needs ``opentelemetry-api`` (``pip install -e ".[otel]"``); without
``instrument()`` the cost per event is one read of an empty tuple.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..__version__ import __version__
from .._internal.checks import install_hint
from ..exceptions import ConfigError
from ..textpolicy import boundary, display_text, json_text

if TYPE_CHECKING:  # the events load with instrument(): an MCP request reads trace_meta without them
    from . import events as ev

__all__ = ["TRACE_KEY", "inbox_fields", "instrument", "is_instrumented", "note_input", "note_request", "tool_scope",
           "trace_meta", "uninstrument"]

logger = logging.getLogger("yiemagent.loop.tracing")


@dataclass
class _RunSpans:
    span: Any
    chat: Any = None
    tools: dict[str, Any] = field(default_factory=dict)
    context: Any = None  # the context whose current span is ``span`` (made once, the parent of every child)
    valid: bool = True  # False: ``span`` is the API's invalid span (no SDK), and so is every child


def _ns(timestamp: float) -> int:
    return int(timestamp * 1e9)


class _Tracer:
    """Turns one process's events into spans; thread-safe (runs of many agents at once)."""

    def __init__(self, tracer_provider: Any, capture_content: bool) -> None:
        from opentelemetry import trace

        from ..messages.types import AssistantMessage  # here, once: an MCP client reads trace_meta without them

        self.assistant_type = AssistantMessage

        self.trace = trace
        self.tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer("yiemagent", __version__)
        self.capture_content = capture_content
        self.runs: dict[str, _RunSpans] = {}
        self.tool_spans: dict[str, Any] = {}
        """``tool_call_id -> span`` of the calls running now (for ``tool_scope``)."""
        self.inputs: collections.OrderedDict[str, dict[str, str]] = collections.OrderedDict()
        """``input_id -> trace context`` where each input was queued (``note_input``); the oldest go first."""
        self.lock = threading.Lock()
        self.handlers: dict[str, Callable[[Any], None]] = {
            name[3:]: getattr(self, name) for name in dir(self) if name.startswith("on_")}
        """``event.type -> on_<type>``: events without a handler cost one lookup."""

    def __call__(self, event: ev.Event) -> None:
        handler = self.handlers.get(event.type)
        if handler is not None:
            with self.lock:
                handler(event)

    def on_agent_start(self, event: ev.AgentStartEvent) -> None:
        parent = None
        for input_id in event.input_ids:
            carrier = self.inputs.pop(input_id, None)
            if carrier is not None and parent is None:
                from opentelemetry import propagate

                parent = propagate.extract(carrier)
        span = self.tracer.start_span(
            "invoke_agent", context=parent, kind=self.trace.SpanKind.INTERNAL, start_time=_ns(event.timestamp),
            attributes={"gen_ai.operation.name": "invoke_agent", "yiemagent.run.id": event.run_id,
                        "yiemagent.input_ids": list(event.input_ids)})
        self.runs[event.run_id] = _RunSpans(span, valid=span.get_span_context().is_valid)

    def _child(self, run: _RunSpans, name: str, kind: Any, timestamp: float, attributes: dict[str, Any]) -> Any:
        if not run.valid:  # no SDK behind the API (its no-op tracer): each child would be the invalid span too
            return self.trace.INVALID_SPAN
        parent = run.context
        if parent is None:
            parent = run.context = self.trace.set_span_in_context(run.span)
        return self.tracer.start_span(name, context=parent, kind=kind, start_time=_ns(timestamp),
                                      attributes=attributes)

    def on_turn_start(self, event: ev.TurnStartEvent) -> None:
        run = self.runs.get(event.run_id)
        if run is None:
            return
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "yiemagent.turn": event.turn}
        if event.model:
            attributes["gen_ai.request.model"] = event.model
        run.chat = self._child(run, f"chat {event.model}" if event.model else "chat", self.trace.SpanKind.CLIENT,
                               event.timestamp, attributes)

    def on_message_end(self, event: ev.MessageEndEvent) -> None:
        run = self.runs.get(event.run_id)
        message = event.message
        if run is None or run.chat is None or not isinstance(message, self.assistant_type):
            return
        span, run.chat = run.chat, None
        if span.is_recording():  # the attributes are made only for a span that keeps them (one call to set)
            attributes: dict[str, Any] = {}
            if message.model:
                attributes["gen_ai.response.model"] = _attribute(message.model)
            if message.finish_reason:
                attributes["gen_ai.response.finish_reasons"] = [message.finish_reason]
            usage = message.usage
            if usage:
                for key, name in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
                    if isinstance(usage.get(key), int):
                        attributes[f"gen_ai.usage.{name}"] = usage[key]
            if self.capture_content:
                from ..messages.openai import to_openai

                attributes["gen_ai.output.messages"] = _attribute([to_openai(message)])
            if attributes:
                span.set_attributes(attributes)
        span.end(end_time=_ns(event.timestamp))

    def on_error(self, event: ev.ErrorEvent) -> None:
        run = self.runs.get(event.run_id)
        if run is None:
            return
        if event.where == "llm_call" and run.chat is not None:
            span, run.chat = run.chat, None
            # an error's text may quote what the model or the server wrote: only with content capture
            text = _attribute(event.message) if self.capture_content else type(event.error).__qualname__
            _failed(self.trace, span, event.error, text)
            span.end(end_time=_ns(event.timestamp))

    def on_tool_execution_start(self, event: ev.ToolExecutionStartEvent) -> None:
        run = self.runs.get(event.run_id)
        call = event.tool_call
        if run is None or call is None:
            return
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": _attribute(call.name),
            "gen_ai.tool.call.id": _attribute(call.id), "gen_ai.tool.type": "function"}
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = _attribute(call.arguments)
        span = self._child(run, f"execute_tool {_attribute(call.name)}", self.trace.SpanKind.INTERNAL, event.timestamp,
                           attributes)
        run.tools[call.id] = span
        self.tool_spans[call.id] = span

    def on_tool_execution_end(self, event: ev.ToolExecutionEndEvent) -> None:
        run = self.runs.get(event.run_id)
        call = event.tool_call
        if run is None or call is None:
            return
        span = run.tools.pop(call.id, None)
        self.tool_spans.pop(call.id, None)
        if span is None:
            return
        if not span.is_recording():  # nothing reads the result's text or the error's words
            span.end(end_time=_ns(event.timestamp))
            return
        if self.capture_content:
            text = getattr(event.result, "text", None)
            span.set_attribute("gen_ai.tool.call.result", _attribute(text if isinstance(text, str) else event.result))
        if event.is_error:  # the result's text is the tool's (or a server's) words: only with content capture
            text = _attribute(getattr(event.result, "text", "") or "tool error") if self.capture_content \
                else "tool error"
            _failed(self.trace, span, None, text, "tool_error")
        span.end(end_time=_ns(event.timestamp))

    def on_agent_end(self, event: ev.AgentEndEvent) -> None:
        run = self.runs.pop(event.run_id, None)
        if run is None:
            return
        end = _ns(event.timestamp)
        for span in [run.chat, *run.tools.values()]:  # cut by an abort or an error: ended with the run
            if span is not None:
                span.set_attribute("error.type", event.status)
                span.end(end_time=end)
        for call_id in run.tools:
            self.tool_spans.pop(call_id, None)
        span = run.span
        span.set_attribute("yiemagent.run.status", event.status)
        span.set_attribute("yiemagent.run.turns", event.turns)
        for key, name in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
            if isinstance(event.usage.get(key), int):
                span.set_attribute(f"gen_ai.usage.{name}", event.usage[key])
        if event.status == "error":
            _failed(self.trace, span, None, "the run failed", "error")
        span.end(end_time=end)

    def current_tool_span(self, tool_call_id: str) -> Any:
        with self.lock:
            return self.tool_spans.get(tool_call_id)


def _failed(trace: Any, span: Any, error: BaseException | None, message: str, error_type: str | None = None) -> None:
    span.set_attribute("error.type", error_type or (type(error).__qualname__ if error is not None else "error"))
    span.set_status(trace.Status(trace.StatusCode.ERROR, message[:500]))


@boundary("span", "display")
def _attribute(value: Any) -> str:
    """Text of a span attribute (leaves the process for a tracing backend): text policy ``display``, JSON else."""
    return display_text(value) if isinstance(value, str) else json_text(value)


_active: _Tracer | None = None
_active_lock = threading.Lock()


def instrument(tracer_provider: Any = None, *, capture_content: bool = False) -> None:
    """Trace every run of this process with OpenTelemetry spans (see the module docstring).

    Args:
        tracer_provider: an OpenTelemetry ``TracerProvider``; None: the global one
            (``opentelemetry.trace.get_tracer_provider()``), as instrumentors do.
        capture_content: also record the model's messages, tool arguments and
            results on the spans (off by default: they may hold personal data).

    Calling it again replaces the previous settings.

    Raises:
        ConfigError: ``opentelemetry-api`` is not installed (``pip install -e ".[otel]"``).
    """
    from . import events as ev

    global _active
    try:
        tracer = _Tracer(tracer_provider, bool(capture_content))
    except ImportError as exc:
        raise ConfigError(f"tracing needs opentelemetry-api: {install_hint('otel')} "
                          "(or pip install opentelemetry-api)") from exc
    with _active_lock:
        if _active is not None:
            ev.remove_observer(_active)
        _active = tracer
        ev.add_observer(tracer, types=tracer.handlers)  # no other event is made for it
    logger.info("tracing on (capture_content=%s)", tracer.capture_content)


def uninstrument() -> None:
    """Stop tracing (spans of runs in flight end with them, unrecorded); safe when not instrumented."""
    from . import events as ev

    global _active
    with _active_lock:
        if _active is not None:
            ev.remove_observer(_active)
        _active = None


def is_instrumented() -> bool:
    """Whether ``instrument()`` is in effect."""
    return _active is not None


def instrumented() -> bool:
    """True while ``instrument()`` is in force (spans are made)."""
    return _active is not None


@contextlib.contextmanager
def tool_scope(tool_call_id: str) -> Iterator[None]:
    """Make the span of tool call ``tool_call_id`` current in this thread (no-op when not instrumented).

    The loop runs each tool inside it, so spans the tool makes are children of
    ``execute_tool`` and ``trace_meta()`` gives its trace context.
    """
    tracer = _active
    span = tracer.current_tool_span(tool_call_id) if tracer is not None else None
    if span is None:
        yield
        return
    from opentelemetry import context

    token = context.attach(tracer.trace.set_span_in_context(span))  # type: ignore[union-attr]
    try:
        yield
    finally:
        context.detach(token)


_MAX_NOTED_INPUTS = 4096


TRACE_KEY = "yiemagent_trace"
"""Key of the trace context in an inbox message dict (the store keeps it with the input)."""


def note_request(run_id: str, messages: list[dict[str, Any]]) -> None:
    """Record ``messages`` (one request, OpenAI chat dicts) as the open ``chat`` span's ``gen_ai.input.messages``.

    Only with ``instrument(capture_content=True)``; otherwise (and without
    ``instrument()``) one read of a module global. The loop calls it just
    before ``llm_call``, so the attribute holds what the model got (the
    compacted view, the system prompt first), through the text policy.
    """
    tracer = _active
    if tracer is None or not tracer.capture_content:
        return
    with tracer.lock:
        run = tracer.runs.get(run_id)
        if run is not None and run.chat is not None and run.chat.is_recording():  # the JSON only for a reader
            run.chat.set_attribute("gen_ai.input.messages", _attribute(messages))


def note_input(input_id: str, carrier: Any = None) -> None:
    """Remember the trace context of input ``input_id`` (no-op when not instrumented).

    ``carrier`` (W3C ``traceparent``/``tracestate`` as ``trace_meta`` gives
    them) is the context of the input as stored; None: the context current
    here. ``Agent`` calls it where an input is queued (``submit``, ``stream``, a
    queue ``put``), and a durable conversation with the carrier stored in its
    inbox (``TRACE_KEY``) before serving it, in whatever process: the run that
    serves the input is a child of the caller's span (a web request's, for
    example). At most 4,096 inputs waiting are remembered (the oldest are forgotten).
    """
    tracer = _active
    if tracer is None:
        return
    if carrier is None:
        carrier = trace_meta()
    if not isinstance(carrier, dict) or not isinstance(carrier.get("traceparent"), str):
        return
    clean = {k: v for k, v in carrier.items() if k in ("traceparent", "tracestate", "baggage") and isinstance(v, str)}
    with tracer.lock:
        tracer.inputs[input_id] = clean
        while len(tracer.inputs) > _MAX_NOTED_INPUTS:
            tracer.inputs.popitem(last=False)


def inbox_fields() -> dict[str, Any]:
    """``{TRACE_KEY: carrier}`` of the context current here, for an inbox message; ``{}`` when there is none."""
    carrier = trace_meta()
    return {TRACE_KEY: carrier} if carrier else {}


def trace_meta() -> dict[str, str]:
    """The current trace context as MCP ``_meta`` entries (``traceparent``, ``tracestate``, ``baggage``).

    MCP 2026-07-28 "Base Protocol" ``_meta``: these keys follow W3C Trace
    Context and W3C Baggage. Empty when not instrumented or no span is current.
    """
    if _active is None:
        return {}
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return {k: v for k, v in carrier.items() if k in ("traceparent", "tracestate", "baggage")}
