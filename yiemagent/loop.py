"""The agent loop: one run, from new user input to the final answer.

``run_turns(history, inputs, config, abort_event, emit)`` is a plain function:
no queues, no thread of its own (model calls and tools run on worker threads
only so that ``abort_event`` can cut them short). ``Agent`` wraps it.

Per turn: ``prepare_context(history)`` -> ``format_messages`` -> request
guard (``yiemagent.guard``: the request is made valid or refused) -> ``llm_call``
-> extract tool calls -> per call: check (parse error, unknown tool, schema)
-> ``before_tool_call`` -> execute -> ``after_tool_call`` -> append the
assistant message and one tool result per call -> next turn.

Rules (each has a test):

* the run ends when a reply has no tool calls (status ``completed``, or
  ``truncated`` when its ``finish_reason`` is ``"length"`` or ``"incomplete"``:
  the answer was cut by the token limit or the stream ended early), when
  every result of a batch sets ``terminate`` (``terminated``), at
  ``max_turns`` (``max_turns``), when the model repeats one call
  ``max_repeated_calls`` times in a row (``repeated_call``), on abort
  (``aborted``) or when ``llm_call`` fails or the request cannot be made
  valid (``error``);
* a failed run (status ``error``) leaves its messages in the history, each
  marked ``excluded`` with the reason, and later requests leave them out, so
  one input too long for the model's context, or a reply that cannot be used,
  never makes the next input fail too;
* at most ``max_tool_calls_per_turn`` calls of one reply run; the others get an
  error result telling the model to send them again in a later turn;
* abort is seen within ``0.05`` s, during a model call or a tool: calls not
  finished get "cancelled" results and an ``aborted`` event is sent;
* with ``poll_steering``, inputs that arrived during the run are added after
  the current tool batch (no call skipped) and the run goes on to answer them;
* the turn numbered ``max_turns`` is sent without tools (when
  ``final_turn_without_tools``), so the user still gets an answer; calls in
  that reply are answered "not run" and the run ends;
* every tool call in the history has exactly one tool result, right after its
  assistant message, in the order the model asked; the assistant message and
  its results are added together, so an abort or a failure never leaves a call
  unanswered;
* ``finish_reason`` is advisory: only the presence of calls decides;
* nothing raises out of ``run_turns``: failures become error results, error
  answers and ``error`` events;
* with a ``journal`` (``yiemagent.journal``), each model reply and each tool
  result is recorded the moment it exists, and a run re-run under the same
  journal replays them: recorded replies are not requested again, recorded
  results are not run again, and a call that started without a recorded result
  gets an "interrupted" error result unless its tool is ``idempotent``.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from . import events as ev
from .exceptions import InvalidRequestError, LLMError, MaxTurnsExceeded, SimulatedCrash, ToolError, YiemagentError
from .formatting import OpenAIFormatter
from .guard import RequestGuard
from .hooks import AfterToolCall, BeforeToolCall, ToolCallContext, run_after_hook, run_before_hook
from .journal import Journal, idempotency_context
from .llm import accepts_on_delta
from .messages import AssistantMessage, Message, TextContent, ToolCall, ToolResultMessage, UserMessage
from .tool_calls import parse_response
from .tools import AgentToolResult, ToolRegistry, _progress_reporter, cap_result, to_result

__all__ = ["LoopConfig", "RunResult", "run_turns"]

logger = logging.getLogger("yiemagent.loop")

LLMCall = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]
Status = Literal["completed", "truncated", "terminated", "max_turns", "repeated_call", "aborted", "error"]
Steering = Callable[[], "list[tuple[UserMessage, str]]"]

_POLL_SECONDS = 0.05  # how often a wait re-checks the abort event
_WAKE = object()  # put on a run's update queue when a future it waits for is done
_CUT = ("length", "incomplete")
"""``finish_reason`` values of a reply cut short (token limit; a stream that ended without one)."""


@dataclass
class LoopConfig:
    """Everything a run needs besides the history."""

    llm_call: LLMCall
    """``llm_call(messages, tools) -> reply``: OpenAI chat messages and function tools in, a reply out."""
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    system_prompt: str | None = None
    max_turns: int = 10
    """Model calls per run, at most."""
    final_turn_without_tools: bool = True
    """Send the last allowed turn without tools so the model must answer in text."""
    max_repeated_calls: int | None = 3
    """The same tool with the same arguments this many times in a row is refused and ends the run; None: no limit."""
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    prepare_context: Callable[[list[Message]], list[Message]] | None = None
    """``prepare_context(history) -> history`` (e.g. trim); default: identity."""
    format_messages: Callable[[list[Message]], list[dict[str, Any]]] = field(default_factory=OpenAIFormatter)
    """``format_messages(history) -> [OpenAI message dict]``; the system prompt is put first by the loop."""
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    """Parallel: a batch runs at once (a batch holding a ``sequential`` tool runs one by one)."""
    max_parallel_tools: int = 8
    max_result_chars: int | None = 100_000
    """Characters of one tool result the model sees; longer ones are cut with a note (``cap_result``)."""
    before_model_call: Callable[[], object] | None = None
    """Called before each model call (MCP tool refresh); may raise, reported as an error event."""
    poll_steering: Steering | None = None
    """Returns ``[(message, input_id)]`` that arrived during the run; called after each tool batch."""
    executor: concurrent.futures.Executor | None = None
    """Worker threads for model calls and tools; None makes a pool per run."""
    _streaming: tuple[Any, bool] | None = field(default=None, init=False, repr=False, compare=False)
    """Cache: (llm_call, whether it takes ``on_delta``), so the signature is read once per callable."""

    def streams(self) -> bool:
        """True if ``llm_call`` takes ``on_delta`` (see ``yiemagent.llm``); read once per callable."""
        cached = self._streaming
        if cached is None or cached[0] is not self.llm_call:
            cached = (self.llm_call, accepts_on_delta(self.llm_call))
            self._streaming = cached
        return cached[1]
    max_tool_calls_per_turn: int | None = 16
    """Calls of one reply that run, at most; the rest get an error result. None: no limit."""
    request_guard: Callable[[list[dict[str, Any]], list[dict[str, Any]]],
                            tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]] = field(
        default_factory=RequestGuard)
    """``guard(messages, tools) -> (messages, tools, repairs)`` run on every request before ``llm_call``."""


@dataclass
class RunResult:
    """How a run ended."""

    answer: AssistantMessage
    """The final assistant message (an error answer when ``status == "error"``)."""
    status: Status
    run_id: str
    turns: int = 0
    new_messages: list[Message] = field(default_factory=list)
    """Messages the run added to the history, inputs included."""
    error: BaseException | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    input_ids: list[str] = field(default_factory=list)
    """Ids of every input this run answers (steered inputs included)."""


def add_usage(total: dict[str, Any], usage: dict[str, Any] | None, *, _depth: int = 0) -> None:
    """Add the token counts of ``usage`` into ``total``, in place.

    Numbers are summed key by key; nested objects (OpenAI's
    ``prompt_tokens_details.cached_tokens``,
    ``completion_tokens_details.reasoning_tokens``) are summed key by key
    inside the same nested key of ``total``, up to 4 levels. Other values
    (strings, lists, booleans) are skipped.
    """
    if not isinstance(usage, dict) or _depth > 4:
        return
    for key, value in usage.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            current = total.get(key, 0)
            if isinstance(current, (int, float)) and not isinstance(current, bool):
                total[key] = current + value
        elif isinstance(value, dict):
            nested = total.get(key)
            if not isinstance(nested, dict):
                nested = total[key] = {}
            add_usage(nested, value, _depth=_depth + 1)


def _closing_answer(reply: AssistantMessage, results: list[AgentToolResult], fallback: str) -> AssistantMessage:
    """The answer of a run that ended on a tool batch.

    The model's text, else the results' text, else ``fallback``; without tool
    calls (those are answered in the history).
    """
    text = reply.text or "\n".join(r.text for r in results if r.text) or fallback
    return AssistantMessage([TextContent(text)] if text else [], usage=reply.usage, finish_reason=reply.finish_reason)


def _contained(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn`` on a worker; a ``BaseException`` that is not an ``Exception`` comes back as ``LLMError``.

    So the loop thread meets only ``Exception`` from a model call, and a
    ``KeyboardInterrupt`` it meets is its own (Ctrl-C), not the model's.
    """
    try:
        return fn(*args)
    except (Exception, SimulatedCrash):
        raise
    except BaseException as exc:
        raise LLMError(f"llm_call raised {type(exc).__name__}: {exc}") from exc


class _Aborted(Exception):
    """Internal: the abort event was set while waiting."""


class _Run:
    """State of one run; ``run_turns`` is its only user."""

    def __init__(
        self,
        history: list[Message],
        config: LoopConfig,
        abort_event: threading.Event,
        sink: ev.EventSink | None,
        run_id: str,
        journal: Journal | None = None,
    ) -> None:
        self.history = history
        self.journal = journal
        self.config = config
        self.abort_event = abort_event
        self.sink = sink
        self.run_id = run_id
        self.usage: dict[str, Any] = {}
        self.start_len = len(history)
        self.turns = 0
        self.input_ids: list[str] = []
        self.executor = config.executor
        self.own_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self.updates: queue.SimpleQueue[Any] = queue.SimpleQueue()
        """Events from worker threads (tool progress, model deltas) and ``_WAKE``; emitted by the loop."""
        self.streak: tuple[str, str] | None = None
        self.streak_count = 0
        self.repeated = False
        self.taken_ids = {
            call.id for m in history if isinstance(m, AssistantMessage) for call in m.tool_calls
        }
        self.has_excluded = any(getattr(m, "excluded", None) for m in history)
        self.system = {"role": "system", "content": config.system_prompt} if config.system_prompt else None

    def emit(self, event: ev.Event) -> None:
        event.run_id = self.run_id
        ev.emit(self.sink, event)

    def flush_updates(self) -> None:
        """Emit progress reported by tools on worker threads, here on the loop's thread."""
        while True:
            try:
                item = self.updates.get_nowait()
            except queue.Empty:
                return
            if item is not _WAKE:
                self.emit(item)

    def on_delta(
        self, delta_type: Literal["text", "reasoning", "tool_call"], delta: str, *,
        tool_call_index: int | None = None, tool_call_id: str | None = None, tool_name: str | None = None,
    ) -> None:
        """The ``on_delta`` handed to a streaming ``llm_call``: queue a ``message_update`` (any thread)."""
        if self.abort_event.is_set():
            return  # the run is ending: late pieces of a cut reply are not news
        self.updates.put(ev.MessageUpdateEvent(
            delta_type=delta_type, delta=delta, tool_call_index=tool_call_index,
            tool_call_id=tool_call_id, tool_name=tool_name,
        ))

    def wait(self, future: concurrent.futures.Future[Any]) -> Any:
        """Wait for ``future``; raise ``_Aborted`` as soon as the abort event is set.

        Updates (tool progress, model deltas) put by worker threads are emitted
        here as they arrive, in order; the future's end wakes the wait at once.
        """
        future.add_done_callback(lambda _: self.updates.put(_WAKE))
        while True:
            try:
                item = self.updates.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                item = _WAKE
            if item is not _WAKE:
                self.emit(item)
            if future.done():
                self.flush_updates()
                return future.result()
            if self.abort_event.is_set():
                future.cancel()
                raise _Aborted()

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        if self.executor is None:
            self.own_executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=self.config.max_parallel_tools + 1, thread_name_prefix="yiemagent-run"
            )
            self.executor = self.own_executor
        return self.executor.submit(fn, *args)

    def add(self, message: Message) -> None:
        self.emit(ev.MessageStartEvent(role=message.role))
        self.history.append(message)
        self.emit(ev.MessageEndEvent(message=message))

    def error(self, where: str, exc: BaseException) -> None:
        logger.warning("%s failed in run %s: %s", where, self.run_id, exc)
        self.emit(ev.ErrorEvent(where=where, error=exc, message=str(exc)))

    # ------------------------------------------------------------------ model

    def call_model(self, tools_enabled: bool) -> AssistantMessage:
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
            self.taken_ids.update(call.id for call in reply.tool_calls)
            add_usage(self.usage, reply.usage)
            return reply
        return self.journal.record_model(self.turns, self.request_model(tools_enabled))

    def request_model(self, tools_enabled: bool) -> AssistantMessage:
        config = self.config
        history = [m for m in self.history if not getattr(m, "excluded", None)] if self.has_excluded \
            else self.history
        context = history if config.prepare_context is None else config.prepare_context(history)
        messages = config.format_messages(context)
        if self.system is not None:
            messages = [self.system, *messages]
        tools = config.tools.to_openai() if tools_enabled else []
        messages, tools, repairs = config.request_guard(messages, tools)
        if repairs:
            self.emit(ev.RequestRepairedEvent(turn=self.turns, repairs=repairs))
        logger.debug("run %s turn %d: llm_call with %d messages, %d tools", self.run_id, self.turns,
                     len(messages), len(tools))
        llm_call: Callable[..., Any] = config.llm_call
        if self.sink is not None and config.streams():
            llm_call = functools.partial(llm_call, on_delta=self.on_delta)
        future = self.submit(_contained, llm_call, messages, tools)
        try:
            response = self.wait(future)
        except _Aborted:
            raise
        except Exception as exc:
            if self.abort_event.is_set():  # abort cut the request: not a model failure
                raise _Aborted() from exc
            if isinstance(exc, LLMError):
                raise
            raise LLMError(f"llm_call raised {type(exc).__name__}: {exc}") from exc
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

    # ------------------------------------------------------------------ tools

    def repeated_call(self, call: ToolCall) -> AgentToolResult | None:
        """Count identical calls in a row; refuse the one that reaches the limit."""
        limit = self.config.max_repeated_calls
        key = (call.name, json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str))
        self.streak_count = self.streak_count + 1 if key == self.streak else 1
        self.streak = key
        if limit is None or self.streak_count < limit:
            return None
        self.repeated = True
        return AgentToolResult.error(
            f"Tool {call.name!r} was not run: it was called {self.streak_count} times in a row with the same "
            "arguments. The run stops here; try something different."
        )

    def check(self, call: ToolCall) -> AgentToolResult | None:
        """Return an error result if ``call`` must not run, else None."""
        if call.error:
            return AgentToolResult.error(f"Tool {call.name!r} was not run: {call.error}")
        found = self.config.tools.get(call.name)
        if found is None:
            names = ", ".join(self.config.tools.names()) or "none"
            return AgentToolResult.error(f"Unknown tool {call.name!r}. Available tools: {names}.")
        try:
            found.validate(call.arguments, call.id)
        except ToolError as exc:
            return AgentToolResult.error(f"Tool {call.name!r} was not run: {exc}")
        repeated = self.repeated_call(call)
        if repeated is not None:
            return repeated
        ctx = ToolCallContext(call, found, self.history, idempotency_key=self.key(call))
        return run_before_hook(self.config.before_tool_call, ctx, self.abort_event)

    def execute(self, call: ToolCall) -> tuple[AgentToolResult, bool]:
        """Run one checked call on a worker thread (never raises).

        Returns the result and whether the abort event was already set when the
        tool returned: such a result may exist only because abort cut the tool
        short, so the loop records the call as cancelled instead.
        """
        found = self.config.tools.get(call.name)
        assert found is not None
        report = _progress_reporter(
            lambda progress: self.updates.put(ev.ToolExecutionUpdateEvent(tool_call_id=call.id, progress=progress))
        )
        try:
            with report, idempotency_context(self.key(call)):
                result = cap_result(to_result(found.execute(call.id, call.arguments, self.abort_event)),
                                    self.config.max_result_chars)
        except SimulatedCrash:
            raise
        except BaseException as exc:  # SystemExit (argparse), KeyboardInterrupt...: a result, not a dead thread
            logger.info("tool %s raised: %r", call.name, exc)
            self.updates.put(ev.ErrorEvent(where="tool", error=exc, message=f"{call.name}: {exc}"))
            result = AgentToolResult.error(
                f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}", details={"exception": exc}
            )
        if self.journal is not None:  # recorded the moment it exists, before the loop sees it
            result = self.journal.tool_result(call, result)
        return result, self.abort_event.is_set()

    def finish(self, call: ToolCall, result: AgentToolResult, started: float, *, ran: bool) -> AgentToolResult:
        """Apply ``after_tool_call`` (only to calls that ran) and report the end."""
        self.flush_updates()
        if ran:
            ctx = ToolCallContext(call, self.config.tools.get(call.name), self.history, result,
                                  idempotency_key=self.key(call))
            result = run_after_hook(self.config.after_tool_call, ctx)
        hook_error = result.details.get("hook_error") if isinstance(result.details, dict) else None
        if isinstance(hook_error, BaseException):
            self.emit(ev.ErrorEvent(where="hook", error=hook_error, message=f"{call.name}: {hook_error}"))
        self.emit(
            ev.ToolExecutionEndEvent(
                tool_call=call, result=result, is_error=result.is_error,
                duration_seconds=time.monotonic() - started,
            )
        )
        return result

    def key(self, call: ToolCall) -> str | None:
        """The call's idempotency key (None without a journal)."""
        return None if self.journal is None else self.journal.idempotency_key(call)

    def start(self, call: ToolCall) -> tuple[float, AgentToolResult | None, bool]:
        """Emit the start event, replay or check ``call``.

        Returns (start time, the result that stands instead of running it or
        None, whether that result comes from a run of the tool).
        """
        started = time.monotonic()
        self.emit(ev.ToolExecutionStartEvent(tool_call=call))
        if self.journal is not None:
            recorded = self.journal.recorded_result(call)
            if recorded is not None:  # ran before an interruption: not run again
                self.repeated_call(call)  # count it as the first run did
                details = recorded.details
                return started, recorded, not (isinstance(details, dict) and details.get("interrupted"))
            lost = self.journal.interrupted_result(call, self.config.tools.get(call.name))
            if lost is not None:
                return started, lost, False
        refusal = self.check(call)
        if refusal is None and self.journal is not None:
            self.journal.tool_started(call)
        return started, refusal, False

    def run_batch(self, calls: list[ToolCall]) -> tuple[list[AgentToolResult], bool]:
        """Return one result per call, in order, and whether the batch was aborted.

        Sequential: check and run each call in turn. Parallel: check every call
        in order (``before_tool_call`` runs on this thread), then run the
        allowed ones at once; ``after_tool_call`` runs here as each finishes.
        """
        results: list[AgentToolResult | None] = [None] * len(calls)
        pending: dict[concurrent.futures.Future[tuple[AgentToolResult, bool]], tuple[int, float]] = {}
        sequential = self.config.tool_execution == "sequential" or any(
            getattr(self.config.tools.get(call.name), "sequential", False) for call in calls
        )
        aborted = False
        try:
            for i, call in enumerate(calls):
                if self.abort_event.is_set():
                    raise _Aborted()
                started, refusal, ran = self.start(call)
                if refusal is not None:
                    results[i] = self.finish(call, refusal, started, ran=ran)
                    continue
                future = self.submit(self.execute, call)
                pending[future] = (i, started)
                if sequential:
                    result, late = self.wait(future)
                    del pending[future]
                    if late:
                        raise _Aborted()
                    results[i] = self.finish(call, result, started, ran=True)
            while pending:
                done, _ = concurrent.futures.wait(
                    pending, timeout=_POLL_SECONDS, return_when=concurrent.futures.FIRST_COMPLETED
                )
                self.flush_updates()
                for future in done:
                    i, started = pending.pop(future)
                    result, late = future.result()
                    if not late:  # finished before the abort: a real result
                        results[i] = self.finish(calls[i], result, started, ran=True)
                if self.abort_event.is_set():
                    raise _Aborted()
        except _Aborted:
            aborted = True
        finally:
            for future in pending:
                future.cancel()
            for i, call in enumerate(calls):
                if results[i] is None:
                    reason = "aborted by the user" if aborted else "internal error"
                    results[i] = AgentToolResult.error(
                        f"Tool {call.name!r} was cancelled: {reason}; it may not have finished.",
                        details={"aborted": True},
                    )
                    self.emit(ev.ToolExecutionEndEvent(tool_call=call, result=results[i], is_error=True))
        return [r for r in results if r is not None], aborted

    def run_capped(self, calls: list[ToolCall]) -> tuple[list[AgentToolResult], bool]:
        """``run_batch`` on the first ``max_tool_calls_per_turn`` calls; the rest are answered "not run"."""
        cap = self.config.max_tool_calls_per_turn
        if cap is None or len(calls) <= cap:
            return self.run_batch(calls)
        results, aborted = self.run_batch(calls[:cap])
        logger.warning("run %s: reply has %d tool calls; only the first %d run", self.run_id, len(calls), cap)
        for call in calls[cap:]:
            result = AgentToolResult.error(
                f"Tool {call.name!r} was not run: at most {cap} tool calls run per turn and this reply had "
                f"{len(calls)}. Send the calls still needed in your next reply."
            )
            self.emit(ev.ToolExecutionStartEvent(tool_call=call))
            self.emit(ev.ToolExecutionEndEvent(tool_call=call, result=result, is_error=True))
            results.append(result)
        return results, aborted

    def answer_calls(self, reply: AssistantMessage, results: list[AgentToolResult]) -> None:
        """Append the assistant message (its events were sent when it arrived) and one result per call."""
        self.history.append(reply)
        for call, result in zip(reply.tool_calls, results, strict=True):
            self.add(
                ToolResultMessage(
                    call.id, list(result.content), tool_name=call.name, is_error=result.is_error,
                    details=result.details,
                )
            )

    def steer(self) -> None:
        """Add inputs that arrived during the run (steering) after the tool batch."""
        if self.config.poll_steering is None:
            return
        for message, input_id in self.config.poll_steering():
            self.input_ids.append(input_id)
            logger.debug("run %s: steering input %s added", self.run_id, input_id)
            self.add(message)

    # ------------------------------------------------------------------ run

    def run(self, inputs: list[UserMessage], input_ids: list[str]) -> RunResult:
        started = time.monotonic()
        self.input_ids = list(input_ids)
        self.emit(ev.AgentStartEvent(input_ids=list(input_ids)))
        for message in inputs:
            self.add(message)
        answer = AssistantMessage()
        status: Status = "completed"
        error: BaseException | None = None
        try:
            while True:
                if self.abort_event.is_set():
                    raise _Aborted()
                self.turns += 1
                last = self.turns >= self.config.max_turns
                tools_enabled = not (last and self.config.final_turn_without_tools and self.turns > 1)
                if not tools_enabled:
                    error = MaxTurnsExceeded(self.config.max_turns)
                    self.error("max_turns", error)
                turn_started = time.monotonic()
                self.emit(ev.TurnStartEvent(turn=self.turns, tools_enabled=tools_enabled))
                self.emit(ev.MessageStartEvent(role="assistant"))
                reply = self.call_model(tools_enabled)
                answer = reply
                if self.abort_event.is_set():
                    raise _Aborted()
                self.emit(ev.MessageEndEvent(message=reply, duration_seconds=time.monotonic() - turn_started))
                if not reply.tool_calls:
                    self.history.append(reply)
                    self.emit(ev.TurnEndEvent(turn=self.turns, duration_seconds=time.monotonic() - turn_started))
                    status = "completed" if tools_enabled else "max_turns"
                    if reply.finish_reason in _CUT:
                        status = "truncated"
                    break
                if last:
                    results = [
                        AgentToolResult.error(
                            f"Tool {c.name!r} was not run: the turn limit ({self.config.max_turns}) was reached."
                        )
                        for c in reply.tool_calls
                    ]
                    aborted = False
                else:
                    results, aborted = self.run_capped(reply.tool_calls)
                self.answer_calls(reply, results)
                self.emit(ev.TurnEndEvent(turn=self.turns, duration_seconds=time.monotonic() - turn_started,
                                          tool_calls=len(reply.tool_calls)))
                if aborted:
                    raise _Aborted()
                if last:
                    status = "max_turns"
                    answer = _closing_answer(reply, [], "The turn limit was reached before a final answer.")
                    if error is None:
                        error = MaxTurnsExceeded(self.config.max_turns)
                        self.error("max_turns", error)
                    break
                if self.repeated:
                    status = "repeated_call"
                    answer = AssistantMessage([TextContent(
                        "Stopped: the model repeated the same tool call "
                        f"{self.config.max_repeated_calls} times in a row.")])
                    break
                if results and all(r.terminate for r in results):
                    status = "terminated"
                    answer = _closing_answer(reply, results, "")
                    break
                self.steer()
        except _Aborted:
            status = "aborted"
            self.flush_updates()
            self.emit(ev.AbortedEvent())
            answer = AssistantMessage([TextContent("The run was aborted.")])
        except LLMError as exc:
            status, error = "error", exc
            self.error("llm_call", exc)
            answer = AssistantMessage([TextContent(f"Error: {exc}")])
        except InvalidRequestError as exc:
            status, error = "error", exc
            self.error("request", exc)
            answer = AssistantMessage([TextContent(f"Error: the request could not be made valid: {exc}")])
        except SimulatedCrash:
            raise
        except BaseException as exc:  # a bug of ours or of a callback (even SystemExit): report, never raise
            status, error = "error", exc
            self.error("agent", exc)
            answer = AssistantMessage([TextContent(f"Error: {type(exc).__name__}: {exc}")])
        finally:
            if self.own_executor is not None:
                self.own_executor.shutdown(wait=False, cancel_futures=True)
        if status == "error":
            reason = f"run {self.run_id} failed: {type(error).__name__}: {error}"[:500]
            for added in self.history[self.start_len:]:
                if hasattr(added, "excluded"):
                    added.excluded = reason
        self.emit(
            ev.AgentEndEvent(status=status, turns=self.turns, duration_seconds=time.monotonic() - started,
                             usage=dict(self.usage))
        )
        logger.debug("run %s ended: %s after %d turns", self.run_id, status, self.turns)
        return RunResult(
            answer=answer, status=status, run_id=self.run_id, turns=self.turns,
            new_messages=self.history[self.start_len:], error=error, usage=self.usage,
            input_ids=self.input_ids,
        )


def run_turns(
    history: list[Message],
    inputs: list[UserMessage],
    config: LoopConfig,
    abort_event: threading.Event | None = None,
    emit: ev.EventSink | None = None,
    *,
    run_id: str | None = None,
    input_ids: list[str] | None = None,
    journal: Journal | None = None,
) -> RunResult:
    """Run the agent on ``inputs`` until it answers; append everything to ``history``.

    Args:
        history: the conversation so far; new messages are appended in place.
        inputs: the new user messages this run answers (may be empty to
            continue from the history).
        config: model, tools, hooks and limits.
        abort_event: set it (from any thread) to end the run within 0.05 s;
            pending tool calls get "cancelled" results. None: a private event.
        emit: event sink (see ``yiemagent.events``); None: no events.
        run_id: id put on every event; None: a new random id.
        input_ids: ids of the inputs, reported in ``agent_start`` and the result.
        journal: records model replies and tool results and replays those
            recorded by an interrupted run (``yiemagent.store.journal.StoreJournal``);
            None: nothing is recorded.

    Returns:
        ``RunResult`` with the final ``answer``, the ``status`` and the new messages.
        It never raises for failures of the model, tools, hooks or sink.
    """
    run = _Run(history, config, abort_event or threading.Event(), emit, run_id or uuid.uuid4().hex[:12], journal)
    return run.run(inputs, list(input_ids or []))
