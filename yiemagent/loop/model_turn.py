"""The model half of a run: one model call, from the history to the assistant's reply.

``ModelTurn`` is mixed into the loop's run state (``yiemagent.loop``). Per
turn: ``before_model_call`` (MCP tool refresh) -> a reply recorded in the
journal is replayed (the model is not asked again) -> ``prepare_context`` ->
``format_messages`` -> system prompt first -> request guard
(``yiemagent.messages.guard``: the request is made valid or refused) -> ``llm_call``
on a worker thread (``on_delta`` handed in when it streams; the abort event
cuts the wait) -> ``parse_response`` -> the reply recorded in the journal.
A failure becomes ``LLMError``; the loop turns it into an error answer.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any, Literal

from ..context.compaction import compact, is_compaction, request_tokens
from ..context.history_index import HistoryIndex
from ..context.overflow import is_context_overflow
from ..exceptions import FormatError, LLMError, SimulatedCrash, YiemagentError
from ..messages import AssistantMessage, UserMessage
from ..messages.dicts import message_from_dict, message_to_dict
from ..messages.formatting import OpenAIFormatter
from ..messages.guard import RequestGuard
from ..messages.tool_calls import parse_response
from ..output.typed_run import TypedRun
from . import events as ev
from . import tracing
from .config import add_usage
from .handoff import Aborted
from .tool_batch import ToolBatch

__all__ = ["ModelTurn"]

logger = logging.getLogger("yiemagent.loop")

_Request = tuple[list[dict[str, Any]], list[dict[str, Any]], "dict[str, Any] | None", int]
"""``(messages, tools, response_format, size in tokens)`` of one request."""


HAND_OVER = sys.implementation.name == "cpython" and getattr(sys, "_is_gil_enabled", lambda: True)()
"""Lend the guard's own request list to ``llm_call`` (no copy of a long request): CPython with the GIL,
where ``sys.getrefcount`` tells whether ``llm_call`` kept it (then the guard never touches it again)."""


def _unboxed(llm_call: Callable[..., Any], box: list[Any], tools: list[dict[str, Any]]) -> Any:
    """``llm_call(messages, tools)`` with the messages taken out of ``box``: no one else holds them for the call."""
    return llm_call(box.pop(), tools)


def _contained(put: Callable[[Any], object], fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn`` on a worker; a ``BaseException`` that is not an ``Exception`` comes back as ``LLMError``.

    So the loop thread meets only ``Exception`` from a model call, and a
    ``KeyboardInterrupt`` it meets is its own (Ctrl-C), not the model's.
    Events the call ``report``s (``fallback_llm``'s ``fallback``) go to ``put``.
    """
    try:
        with ev.reporting(put):
            return fn(*args)
    except (Exception, SimulatedCrash):
        raise
    except KeyboardInterrupt:
        if threading.current_thread() is threading.main_thread():
            raise  # Ctrl-C during an inline call on the main thread: the user's abort (``here``)
        raise LLMError("llm_call raised KeyboardInterrupt") from None
    except BaseException as exc:
        raise LLMError(f"llm_call raised {type(exc).__name__}: {exc}") from exc


class ModelTurn(ToolBatch):
    """Asking the model for one reply (mixed into the loop's run state, which sets the attributes)."""

    sink: ev.EventSink | None
    turns: int
    usage: dict[str, Any]
    taken_ids: set[str]
    index: HistoryIndex
    start_len: int
    request_tokens: int | None
    system: dict[str, Any] | None
    typed: TypedRun | None

    def error(self, where: str, exc: BaseException) -> None:
        """Log and emit an ``error`` event."""
        raise NotImplementedError  # pragma: no cover - the run defines it

    def on_delta(
        self, delta_type: Literal["text", "reasoning", "tool_call"], delta: str, *,
        tool_call_index: int | None = None, tool_call_id: str | None = None, tool_name: str | None = None,
    ) -> None:
        """The ``on_delta`` handed to a streaming ``llm_call``: queue a ``message_update`` (any thread)."""
        if self.abort_event.is_set():
            return  # the run is ending: late pieces of a cut reply are not news
        self.update(ev.MessageUpdateEvent(
            delta_type=delta_type, delta=delta, tool_call_index=tool_call_index,
            tool_call_id=tool_call_id, tool_name=tool_name,
        ))

    def call_model(self, tools_enabled: bool) -> AssistantMessage:
        """The reply of this turn: replayed from the journal, or asked of the model and recorded."""
        if self.config.before_model_call is not None:
            try:
                self.config.before_model_call()
            except SimulatedCrash:
                raise
            except BaseException as exc:
                self.error("before_model_call", exc)
        if self.journal is None:
            return self.request_model(tools_enabled)
        reply = self.journal.replay_model(self.turns)
        if reply is not None:  # recorded by an interrupted run: the model is not asked again
            self.replay_compactions()
            self.taken_ids.update(call.id for call in reply.tool_calls)
            add_usage(self.usage, reply.usage)
            return reply
        return self.journal.record_model(self.turns, self.request_model(tools_enabled))

    def request_model(self, tools_enabled: bool) -> AssistantMessage:
        """Ask the model (guarded request, on a worker, abortable); raise ``LLMError`` on failure.

        With ``LoopConfig.compaction``: the request is measured; over the budget,
        the history is compacted first; answered "too long" by the server, it is
        compacted once and the request sent once more (``yiemagent.context.compaction``).
        """
        compaction = self.config.compaction
        request = self.build_request(tools_enabled)
        if compaction is not None:
            if compaction.auto and request[3] > compaction.budget:
                request = self.compacted("budget", request, tools_enabled)
            self.request_tokens = request[3]
        try:
            return self.send(*request[:3])
        except LLMError as exc:
            if compaction is None or not compaction.auto or not is_context_overflow(exc):
                raise
            logger.info("run %s turn %d: the model answered that the request is too long; compacting once",
                        self.run_id, self.turns)
            retry = self.compacted("overflow", request, tools_enabled)
            if retry is request:
                raise
            self.request_tokens = retry[3]
            return self.send(*retry[:3])

    def build_request(self, tools_enabled: bool) -> _Request:
        """``(messages, tools, response_format, size in tokens)`` of this turn's request, guarded.

        The size is measured only with ``LoopConfig.compaction`` (else 0).
        """
        config = self.config
        index = self.index
        index.sync(self.history, owned=True)
        # what is sent: the latest summary and the messages after it, without failed runs' messages
        history = index.view(self.history)
        # the caller's hooks are waited for where the run's abort (its deadline) cuts the wait
        context = history if config.prepare_context is None else self.cuttable(config.prepare_context, history)
        formatter = config.format_messages
        # the default formatter's own list (no copy): extended in place while the view only grows
        messages = formatter.formatted(context) if isinstance(formatter, OpenAIFormatter) else \
            self.cuttable(formatter, context)
        tools = config.tools.to_openai() if tools_enabled else []
        offered = tools  # the registry's own list: the same object while the tools are the same
        response_format = None
        guard = config.request_guard
        if self.typed is not None:  # a typed answer: instruction, tools and response_format (typed_run)
            if self.system is not None:
                messages = [self.system, *messages]
            messages, tools, response_format = self.typed.shape_request(messages, tools)
            messages, tools, repairs = guard(messages, tools)
        elif isinstance(guard, RequestGuard):  # the system prompt joined to what it checked before
            messages, tools, repairs = guard.check(messages, tools, head=self.system, lend=HAND_OVER)
        else:
            messages, tools, repairs = guard([self.system, *messages] if self.system is not None else list(messages),
                                             tools)
        if repairs:
            self.emit(ev.RequestRepairedEvent(turn=self.turns, repairs=repairs))
        size = 0
        compaction = config.compaction
        if compaction is not None:
            if config.prepare_context is None and self.typed is None:  # counted one message at a time, once
                index.count_with(compaction.message_tokens)
                whole, calibrated = index.tokens(self.history)
                size = calibrated if calibrated is not None else whole + index.framing_tokens(
                    compaction.counter, self.system, offered)
            else:
                size = request_tokens(self.history, messages, tools, compaction.counter,
                                      calibrate=config.prepare_context is None)
        return messages, tools, response_format, size

    def compacted(self, reason: Literal["budget", "overflow"], request: _Request, tools_enabled: bool) -> _Request:
        """Compact the history (a summary appended, a ``compaction`` event); the request built again.

        Returns ``request`` itself when nothing could be compacted. When the
        summariser fails (an ``error`` event, ``where="compaction"``) the window is
        kept anyway: the oldest messages are left out without a summary, with a
        note (``compaction.compact``'s ``leave_out``), so requests never outgrow it.
        """
        config = self.config.compaction
        assert config is not None

        def write(summarise: Callable[[], str]) -> str:
            try:
                return str(self.call(summarise))
            except LLMError as exc:  # reported; the window is kept without a summary (compaction's leave_out)
                self.error("compaction", exc)
                raise

        done = compact(self.history, config, self.config.llm_call, force=reason == "overflow", run=write,
                       on_failure="leave_out")
        if done is None:
            logger.info("run %s turn %d: the request has %d tokens but nothing can be compacted",
                        self.run_id, self.turns, request[3])
            return request
        assert done.message.compaction is not None
        self.history.append(done.message)  # the index reads it: requests go through the view from now on
        rebuilt = self.build_request(tools_enabled)
        done.message.compaction.update(reason=reason, tokens_before=request[3], tokens_after=rebuilt[3])
        recorded = self.record_compaction(done.message)
        if recorded is not done.message:  # another process journaled this turn's compaction first: that one
            self.history[-1] = recorded
            rebuilt = self.build_request(tools_enabled)
        self.emit(ev.CompactionEvent(reason=reason, tokens_before=request[3], tokens_after=rebuilt[3],
                                     first_kept=done.first_kept, summarised_messages=done.summarised_messages,
                                     summary=done.summary))
        return rebuilt

    def record_compaction(self, message: UserMessage) -> UserMessage:
        """Journal a compaction of this turn (step ``compaction/<turn>.<n>``); the recorded one (first writer wins).

        A run replayed after a crash puts the same summary back without asking
        the summariser again (``replay_compactions``).
        """
        put = getattr(self.journal, "put", None)
        if put is None:
            return message
        done = sum(1 for m in self.history[self.start_len:-1] if is_compaction(m))  # before this one
        stored = put(f"compaction/{self.turns}.{done}", message_to_dict(message))
        if stored == message_to_dict(message):
            return message
        try:
            recorded = message_from_dict(stored)
        except FormatError:
            return message
        return recorded if isinstance(recorded, UserMessage) and is_compaction(recorded) else message

    def replay_compactions(self) -> None:
        """Put back the compactions journaled before this turn's recorded reply (in their order)."""
        recorded = getattr(self.journal, "recorded", None)
        if not isinstance(recorded, dict):
            return
        prefix = f"compaction/{self.turns}."
        for key in sorted((k for k in recorded if isinstance(k, str) and k.startswith(prefix)),
                          key=lambda k: int(k[len(prefix):]) if k[len(prefix):].isdigit() else 0):
            try:
                message = message_from_dict(recorded[key])
            except FormatError:
                continue
            if isinstance(message, UserMessage) and is_compaction(message):
                self.history.append(message)  # the index reads it: requests go through the view

    def send(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
             response_format: dict[str, Any] | None) -> AssistantMessage:
        """Send one guarded request to ``llm_call`` on a worker; the parsed reply."""
        config = self.config
        logger.debug("run %s turn %d: llm_call with %d messages, %d tools", self.run_id, self.turns,
                     len(messages), len(tools))
        llm_call: Callable[..., Any] = config.llm_call
        if self.sink is not None and config.streams():
            llm_call = functools.partial(llm_call, on_delta=self.on_delta)
        if config.takes_abort_event():  # a request sent just after an abort is dropped, not left generating
            llm_call = functools.partial(llm_call, abort_event=self.abort_event)
        if response_format is not None:
            llm_call = functools.partial(llm_call, response_format=response_format)
        tracing.note_request(self.run_id, messages)  # gen_ai.input.messages, with content capture only
        guard = config.request_guard
        lent = isinstance(guard, RequestGuard) and guard.lent(messages)  # the guard's own list, not a copy
        before = sys.getrefcount(messages)
        box = [messages]  # emptied by the call: only llm_call itself can keep the list
        try:
            if config.inline or callable(getattr(config.llm_call, "cancel", None)):
                # on this thread, no hand-off: LoopConfig.inline, or a model whose calls abort() cuts
                # another way (its ``cancel()``: the request fails at once, and the loop sees the abort)
                response = self.here(_contained, self.update, _unboxed, llm_call, box, tools)
            else:
                response = self.call(_contained, self.updates.put, _unboxed, llm_call, box, tools)
        except Aborted:
            raise
        except Exception as exc:
            if self.abort_event.is_set():  # abort cut the request: not a model failure
                raise Aborted() from exc
            if isinstance(exc, LLMError):
                raise
            raise LLMError(f"llm_call raised {type(exc).__name__}: {exc}") from exc
        finally:
            if lent:  # kept by llm_call (or a call still running): the guard makes itself a new list
                assert isinstance(guard, RequestGuard)
                kept = box != [] or sys.getrefcount(messages) > before  # before the call below adds its own
                guard.returned(messages, kept=kept)
        try:
            reply = parse_response(response, taken_ids=self.taken_ids, tool_names=config.tools.names())
        except YiemagentError as exc:
            raise LLMError(f"llm_call returned an unusable reply: {exc}", response=response) from exc
        add_usage(self.usage, reply.usage)
        logger.debug("run %s turn %d: reply with %d tool calls (finish_reason %s)", self.run_id, self.turns,
                     len(reply.tool_calls), reply.finish_reason)
        for call in reply.tool_calls:
            if call.note:
                self.emit(ev.ToolCallRepairedEvent(tool_call=call, note=call.note))
        return reply

