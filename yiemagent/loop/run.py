"""The agent loop: one run, from new user input to the final answer.

``run_turns(history, inputs, config, abort_event, emit)`` is a plain function:
no queues, no thread of its own (model calls and tools run on worker threads
only so that ``abort_event`` can cut them short). ``Conversation``
(``yiemagent.loop.conversation``) calls it once per input; ``Agent`` drives the
conversation from its thread.

The run's state is one object made of two halves, each in its own module:
``model_turn.ModelTurn`` (one model call) and ``tool_batch.ToolBatch`` (the
tool calls of one reply); ``loop_config`` holds ``LoopConfig`` and
``RunResult``. This module drives the turns and keeps the rules below.

Per turn: ``prepare_context(history)`` -> ``format_messages`` -> request
guard (``yiemagent.messages.guard``: the request is made valid or refused) -> ``llm_call``
-> extract tool calls -> per call: check (parse error, unknown tool, schema)
-> ``before_tool_call`` -> execute -> ``after_tool_call`` -> append the
assistant message and one tool result per call -> next turn.

Rules (each has a test):

* the run ends when a reply has no tool calls (status ``completed``, or
  ``truncated`` when its ``finish_reason`` is ``"length"`` or ``"incomplete"``:
  the answer was cut by the token limit or the stream ended early), when
  every result of a batch sets ``terminate`` (``terminated``), at
  ``max_turns`` (``max_turns``), when the model repeats one call
  ``max_repeated_calls`` times in a row (``repeated_call``), when a usage
  limit is reached (``usage_limit``, see ``yiemagent.context.usage_limits``), when a
  typed answer (``LoopConfig.output``) stays invalid after its retries
  (``output_invalid``; a typed run's invalid answer is sent back first, see
  ``yiemagent.output.typed_run``), when a call waits for a person's approval
  (``awaiting_approval``, the reply not added: see ``yiemagent.tools.approvals``), when a
  guardrail's tripwire fires (``guardrail_tripped``: ``yiemagent.loop.guarding``), on abort
  (``aborted``) or when ``llm_call`` fails or the request cannot be made
  valid (``error``);
* a failed run (status ``error``, or ``guardrail_tripped``) leaves its messages in the history, each
  marked ``excluded`` with the reason, and later requests leave them out, so
  one input too long for the model's context, or a reply that cannot be used,
  never makes the next input fail too;
* at most ``max_tool_calls_per_turn`` calls of one reply run; the others get an
  error result telling the model to send them again in a later turn;
* abort is seen within ``0.05`` s, during a model call or a tool: calls not
  finished get "cancelled" results and an ``aborted`` event is sent; Ctrl-C
  (``KeyboardInterrupt``) in the main thread running the loop is an abort too
  (the history keeps the run and its calls), and ``RunResult.error`` holds it
  so that the caller can raise it again;
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
* with a ``journal`` (``yiemagent.loop.journal``), each model reply and each tool
  result is recorded the moment it exists, and a run re-run under the same
  journal replays them: recorded replies are not requested again, recorded
  results are not run again, and a call that started without a recorded result
  gets an "interrupted" error result unless its tool is ``idempotent``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from ..context.history_index import HistoryIndex
from ..context.usage_limits import LimitReached, UsageGuard, UsageLimits
from ..exceptions import InvalidRequestError, LLMError, MaxTurnsExceeded, SimulatedCrash
from ..messages import AssistantMessage, Message, TextContent, ToolResultMessage, UserMessage
from ..output.typed_run import TypedRun
from ..tools import AgentToolResult, approvals, nested_approvals
from ..tools.guardrails import GuardrailTripped
from . import events as ev
from .config import LLMCall, LoopConfig, RunResult, Status, Steering, add_usage
from .guarding import tripped_text
from .handoff import Aborted, Handed, Lane
from .journal import Journal
from .model_turn import ModelTurn
from .tool_batch import ToolBatch

__all__ = ["LLMCall", "LoopConfig", "RunResult", "Status", "Steering", "UsageLimits", "add_usage", "run_turns"]

logger = logging.getLogger("yiemagent.loop")

_CUT = ("length", "incomplete")
"""``finish_reason`` values of a reply cut short (token limit; a stream that ended without one)."""


def _closing_answer(reply: AssistantMessage, results: list[AgentToolResult], fallback: str) -> AssistantMessage:
    """The answer of a run that ended on a tool batch.

    The model's text, else the results' text, else ``fallback``; without tool
    calls (those are answered in the history).
    """
    text = reply.text or "\n".join(r.text for r in results if r.text) or fallback
    return AssistantMessage([TextContent(text)] if text else [], usage=reply.usage, finish_reason=reply.finish_reason,
                            model=reply.model)


def _own(message: UserMessage) -> UserMessage:
    """The run's own copy of an input.

    Marking it ``excluded`` when the run fails leaves the caller's object (an
    inbox entry a retry serves again) as it was, so the retry sends its input.
    """
    return dataclasses.replace(message, excluded=None)


class _Run(ModelTurn, ToolBatch):
    """State of one run; ``run_turns`` is its only user."""

    def __init__(
        self,
        history: list[Message],
        config: LoopConfig,
        abort_event: threading.Event,
        sink: ev.EventSink | None,
        run_id: str,
        journal: Journal | None = None,
        index: HistoryIndex | None = None,
        listening: Callable[[], bool] | None = None,
    ) -> None:
        self.history = history
        self.listening = listening
        self.journal = journal
        self.config = config
        self.abort_event = abort_event
        self.sink = sink
        self.hearing = True
        self.only: frozenset[str] | None = None
        self.listen()
        self.run_id = run_id
        self.usage: dict[str, Any] = {}
        self.start_len = len(history)
        self.turns = 0
        self.input_ids: list[str] = []
        self.executor = config.executor
        self.own_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self.lane: Lane | None = None
        """The worker the loop hands its calls to one at a time (``yiemagent.loop.handoff``), once one is."""
        self.loop_thread = threading.get_ident()
        """The thread running the loop (``run_turns``' caller): inline calls run here."""
        self.updates: queue.SimpleQueue[Any] = queue.SimpleQueue()
        """Events from worker threads (tool progress, model deltas) and finished calls (``Handed``)."""
        self.back: list[Handed] = []
        self.streak: tuple[str, str] | None = None
        self.streak_count = 0
        self.repeated = False
        self.interrupted: KeyboardInterrupt | None = None
        """Ctrl-C in the thread running the loop (``ask()`` before ``start()``): the run ends as aborted."""
        self.index = index if index is not None else HistoryIndex()
        """What the run needs of the history, read once per message (``yiemagent.context.history_index``)."""
        self.index.sync(history)
        self.index.checkpoint()
        self.taken_ids = self.index.tool_call_ids  # grows with the ids of new replies
        self.request_tokens: int | None = None
        """With ``LoopConfig.compaction``: the size of the last request, in tokens."""
        self.system = self.index.system_message(config.system_prompt)
        self.reached: LimitReached | None = None
        self.typed: TypedRun | None = None
        self.waiting: list[dict[str, Any]] | None = None  # calls waiting for approval (yiemagent.tools.approvals)
        self.tripwire: GuardrailTripped | None = None
        self.output_retries = 0
        self.cut: tuple[Any, bool] | None = None
        self.parallel_check: threading.Thread | None = None

    def heard(self, type: str | None = None) -> bool:
        """Whether an event (of ``type``) made now reaches anyone, as ``listen`` last found (else it is not made)."""
        return self.hearing and (self.only is None or type is None or type in self.only)

    def listen(self) -> None:
        """Ask the sink whether it listens (run and turn starts, steering: when a stream can join)."""
        sink = self.sink is not None and (self.listening is None or self.listening())
        types = ev.observed_types()  # a process-wide observer (tracing) reads these types only
        self.hearing = sink or types is None or bool(types)
        self.only = None if sink else types  # None: every type is heard (while hearing)

    def emit(self, event: ev.Event) -> None:
        event.run_id = self.run_id
        ev.emit(self.sink, event)
        ev.observe(event)

    def add(self, message: Message) -> None:
        if self.heard("message_start"):
            self.emit(ev.MessageStartEvent(role=message.role))
        self.history.append(message)
        if self.heard("message_end"):
            self.emit(ev.MessageEndEvent(message=message))

    def error(self, where: str, exc: BaseException) -> None:
        logger.warning("%s failed in run %s: %s", where, self.run_id, exc)
        self.emit(ev.ErrorEvent(where=where, error=exc, message=str(exc)))

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
        steered = self.config.poll_steering()
        if steered:
            self.listen()  # a steered input may bring a stream
        added = []
        for message, input_id in steered:
            self.input_ids.append(input_id)
            logger.debug("run %s: steering input %s added", self.run_id, input_id)
            added.append(_own(message))
            self.add(added[-1])
        self.check_inputs(added, first=False)

    # ------------------------------------------------------------------ run

    def run(self, inputs: list[UserMessage], input_ids: list[str]) -> RunResult:
        started = time.monotonic()
        self.input_ids = list(input_ids)
        self.emit(ev.AgentStartEvent(input_ids=list(input_ids)))
        for message in inputs:
            self.add(_own(message))
        answer = AssistantMessage()
        status: Status = "completed"
        error: BaseException | None = None
        tripped: GuardrailTripped | None = None
        # Ctrl-C reaches only the main thread: there (``ask()`` before ``start()``) a KeyboardInterrupt
        # is the user's abort; elsewhere it was raised by a callback, an error like any other.
        aborts: tuple[type[BaseException], ...] = (
            (Aborted, KeyboardInterrupt) if threading.current_thread() is threading.main_thread() else (Aborted,))
        try:
            if self.config.output is not None:  # a typed answer: its mode may add the final_answer tool
                self.typed = TypedRun(self.config.output, self.config.llm_call, self.config.tools,
                                      runner=self.here if self.config.inline else
                                      self.call)  # an abort cuts a validator
                self.config = dataclasses.replace(self.config, tools=self.typed.tools)
            self.limits = UsageGuard(self.config.usage_limits, self.config.conversation_usage_limits,
                                     self.history[:self.start_len] if self.config.conversation_usage_limits
                                     else [], getattr(self.config.llm_call, "model", None))
            if self.config.spend is not None:  # sampling by the run's MCP servers counts here as it happens
                self.config.spend.open(self.usage, self.limits)
            self.check_inputs(self.history[self.start_len:], first=True)  # may start parallel ones
            while True:
                if self.abort_event.is_set():
                    raise Aborted()
                self.reached = self.limits.before_request(self.usage) if self.limits.active else None
                if self.reached is not None:
                    status, answer = "usage_limit", AssistantMessage([TextContent(self.reached.message())])
                    break
                self.turns += 1
                last = self.turns >= self.config.max_turns
                tools_enabled = not (last and self.config.final_turn_without_tools and self.turns > 1)
                if not tools_enabled:
                    error = MaxTurnsExceeded(self.config.max_turns)
                    self.error("max_turns", error)
                turn_started = time.monotonic()
                self.listen()
                model = getattr(self.config.llm_call, "model", None)
                if self.heard("turn_start"):  # events are made only when someone gets them
                    self.emit(ev.TurnStartEvent(turn=self.turns, tools_enabled=tools_enabled,
                                                model=model if isinstance(model, str) else None))
                if self.heard("message_start"):
                    self.emit(ev.MessageStartEvent(role="assistant"))
                reply = self.call_model(tools_enabled)
                self.input_cleared()  # parallel input guardrails passed before the reply is acted on
                answer = reply
                self.limits.count_reply(self.usage, reply.usage, reply.model)
                if self.abort_event.is_set():
                    raise Aborted()
                if self.heard("message_end"):
                    self.emit(ev.MessageEndEvent(message=reply, duration_seconds=time.monotonic() - turn_started,
                                                 request_tokens=self.request_tokens))
                if not reply.tool_calls:
                    self.history.append(reply)
                    self.emit(ev.TurnEndEvent(turn=self.turns, duration_seconds=time.monotonic() - turn_started))
                    retry = None if self.typed is None else self.typed.on_text(
                        reply.text, can_retry=not last, cut=reply.finish_reason in _CUT)
                    if retry is None:  # output guardrails (yiemagent.loop.guarding): accept, send back or trip
                        retry = self.check_output(reply.text, last=last)
                    if retry is not None:  # the answer does not validate: sent back, the model answers again
                        self.add(UserMessage(retry))
                        continue
                    status = "completed" if tools_enabled else "max_turns"
                    if reply.finish_reason in _CUT:
                        status = "truncated"
                    if self.typed is not None and self.typed.outcome.exhausted:
                        status = "output_invalid"
                    break
                if self.limits.active:
                    self.reached = self.limits.after_reply(self.usage) or self.limits.before_tools(self.usage, len(
                        reply.tool_calls))
                waiting: list[dict[str, Any]] = []
                if self.reached is not None:
                    results = [AgentToolResult.error(f"Tool {c.name!r} was not run: {self.reached.message()}")
                               for c in reply.tool_calls]
                    aborted = False
                elif last:
                    limit = self.config.max_turns
                    results, aborted = [AgentToolResult.error(f"Tool {c.name!r} was not run: the turn limit ({limit}) "
                                                              "was reached.") for c in reply.tool_calls], False
                elif not (waiting := approvals.calls_to_approve(  # only calls that can run are asked about
                        reply.tool_calls[:self.config.max_tool_calls_per_turn], self.config.tools,
                        self.config.approval_policy, self.journal, self.turns)):
                    results, aborted = self.run_capped(reply.tool_calls)
                    self.limits.count_tools(self.usage, len(results))
                    for spent in self.limits.tool_usage(results):  # agents used as tools (Agent.as_tool)
                        add_usage(self.usage, spent)
                    waiting = [] if aborted else nested_approvals.record_waits(reply.tool_calls, results, self.journal,
                                                                         self.turns)  # a sub-agent waits
                    self.reached = None if waiting else self.limits.nested(results)  # a sub-agent's limit ends it
                    if self.tripwire is not None:  # a tool guardrail's tripwire: the run ends after this batch
                        waiting = []
                if waiting:  # a person decides first: the reply is not added, the run resumes by its journal
                    status, answer = "awaiting_approval", self.pause(reply, waiting, turn_started)
                    break
                self.answer_calls(reply, results)
                if self.heard("turn_end"):
                    self.emit(ev.TurnEndEvent(turn=self.turns, duration_seconds=time.monotonic() - turn_started,
                                              tool_calls=len(reply.tool_calls)))
                if aborted:
                    raise Aborted()
                if self.tripwire is not None:
                    raise self.tripwire
                if self.typed is not None and self.typed.after_batch(
                        reply.tool_calls, results, ran=self.reached is None and not last, can_retry=not last):
                    status = "completed" if self.typed.outcome.valid else "output_invalid"
                    answer = _closing_answer(reply, [], self.typed.closing_text())
                    break
                if self.reached is not None:
                    status = "usage_limit"
                    answer = _closing_answer(reply, [], self.reached.message())
                    break
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
        except GuardrailTripped as exc:
            status, tripped = "guardrail_tripped", exc
        except aborts as exc:
            status = "aborted"
            if isinstance(exc, KeyboardInterrupt):  # Ctrl-C here: an abort; the caller raises it again
                self.abort_event.set()
                self.interrupted = exc
            error = self.interrupted
            self.flush_updates()
            if self.cut is not None and self.interrupted is None:  # a parallel input guardrail cut the call
                status, tripped = "guardrail_tripped", self.trip("input", *self.cut)
            else:
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
            if self.config.spend is not None:
                self.config.spend.close()
            if self.lane is not None:
                self.lane.close()
            if self.own_executor is not None:
                self.own_executor.shutdown(wait=False, cancel_futures=True)
        if tripped is not None:
            answer = AssistantMessage([TextContent(tripped_text(tripped.stage, tripped.verdict))])
        if status in ("error", "guardrail_tripped"):  # left out of later requests (a tripwire's input or answer too)
            reason = (f"run {self.run_id} failed: {type(error).__name__}: {error}" if tripped is None else
                      f"run {self.run_id}: guardrail_tripped: {tripped}")[:500]
            for added in self.history[self.start_len:]:
                if hasattr(added, "excluded"):
                    added.excluded = reason
            self.index.rollback(self.history)  # the run's messages are read again, now excluded
        self.emit(
            ev.AgentEndEvent(status=status, turns=self.turns, duration_seconds=time.monotonic() - started,
                             usage=dict(self.usage))
        )
        logger.debug("run %s ended: %s after %d turns", self.run_id, status, self.turns)
        return RunResult(
            answer=answer, status=status, run_id=self.run_id, turns=self.turns,
            new_messages=self.history[self.start_len:], error=error, usage=self.usage,
            input_ids=self.input_ids, usage_limit=self.reached.as_dict() if self.reached is not None else None,
            output=self.typed.outcome if self.typed is not None else None,
            pending_approvals=self.waiting, request_tokens=self.request_tokens,
            guardrail=None if tripped is None else {"stage": tripped.stage, **tripped.verdict.as_dict()},
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
    index: HistoryIndex | None = None,
    listening: Callable[[], bool] | None = None,
) -> RunResult:
    """Run the agent on ``inputs`` until it answers; append everything to ``history``.

    Args:
        history: the conversation so far; new messages are appended in place.
        inputs: the new user messages this run answers (may be empty to
            continue from the history).
        config: model, tools, hooks and limits.
        abort_event: set it (from any thread) to end the run within 0.05 s;
            pending tool calls get "cancelled" results. None: a private event.
        emit: event sink (see ``yiemagent.loop.events``); None: no events.
        run_id: id put on every event; None: a new random id.
        input_ids: ids of the inputs, reported in ``agent_start`` and the result.
        journal: records model replies and tool results and replays those
            recorded by an interrupted run (``yiemagent.store.journal.StoreJournal``);
            None: nothing is recorded.
        index: what is known of ``history`` from earlier runs
            (``yiemagent.context.history_index``; ``Conversation`` keeps one);
            with a ``History`` (``yiemagent.messages.history``) each run reads
            only the messages added since. None: the history is read in full.
        listening: whether ``emit`` hands events to anyone now; while it
            answers False (and no observer is added) the loop's frequent
            events are not made at all. None: ``emit`` always listens.

    Returns:
        ``RunResult`` with the final ``answer``, the ``status`` and the new messages.
        It never raises for failures of the model, tools, hooks or sink.
    """
    run = _Run(history, config, abort_event or threading.Event(), emit, run_id or uuid.uuid4().hex[:12], journal,
               index, listening)
    return run.run(inputs, list(input_ids or []))
