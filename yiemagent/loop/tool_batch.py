"""The tool half of a run: one batch of tool calls, from the model's reply to one result per call.

``ToolBatch`` is mixed into the loop's run state (``yiemagent.loop``); the
rules it keeps are written in ``yiemagent.loop``'s docstring. Per call:
replay from the journal (a recorded result is not run again; a call started
without a recorded result is "interrupted") -> check (parse error, unknown
tool, schema, repeated call) -> tool input guardrails -> ``before_tool_call`` -> ``started`` journaled
-> execute on a worker thread (``abort_event`` handed in, the result recorded
the moment it exists) -> ``after_tool_call`` -> tool output guardrails -> ``tool_execution_end``
(``yiemagent.loop.guarding``).
Results come back in the order the model asked; calls the abort left
unfinished get "cancelled" results.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from ..exceptions import SimulatedCrash, ToolError
from ..messages import AssistantMessage, Message, ToolCall
from ..tools import AgentToolResult, approvals, cap_result, nested_approvals, to_result
from ..tools.hooks import ToolCallContext, run_after_hook, run_before_hook
from ..tools.registry import progress_reporter
from . import events as ev
from .config import LoopConfig
from .guarding import Guarding
from .handoff import POLL_SECONDS, Aborted, Handed
from .journal import Journal, current_idempotency_key, idempotency_context
from .tracing import instrumented, tool_scope

__all__ = ["POLL_SECONDS", "Aborted", "ToolBatch"]

logger = logging.getLogger("yiemagent.loop")


class ToolBatch(Guarding):
    """Running the tool calls of one reply (mixed into the loop's run state, which sets these attributes)."""

    config: LoopConfig
    journal: Journal | None
    history: list[Message]
    run_id: str
    turns: int
    streak: tuple[str, str] | None
    streak_count: int
    repeated: bool
    waiting: list[dict[str, Any]] | None

    def emit(self, event: ev.Event) -> None:
        """Send ``event`` to the run's sink (with the run id)."""
        raise NotImplementedError  # pragma: no cover - the run defines it

    def heard(self, type: str | None = None) -> bool:
        """Whether an event (of ``type``) made now reaches anyone."""
        raise NotImplementedError  # pragma: no cover - the run defines it

    def repeated_call(self, call: ToolCall) -> AgentToolResult | None:
        """Count identical calls in a row; refuse the one that reaches the limit."""
        limit = self.config.max_repeated_calls
        if limit is None:  # nothing to count
            return None
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
        rejected = approvals.rejection(call, self.journal)  # a person said no (yiemagent.tools.approvals)
        if rejected is not None:
            return rejected
        repeated = self.repeated_call(call)
        if repeated is not None:
            return repeated
        guarded = self.check_tool_input(call)
        if guarded is not None:
            return guarded
        ctx = ToolCallContext(call, found, self.history, idempotency_key=self.key(call))
        if self.config.before_tool_call is None:
            return run_before_hook(None, ctx, self.abort_event)
        hook = self.config.before_tool_call
        cut: AgentToolResult | None = self.cuttable(run_before_hook, hook, ctx, self.abort_event)
        return cut  # waited for where a deadline cuts the wait

    def execute(self, call: ToolCall) -> tuple[AgentToolResult, bool]:
        """Run one checked call on a worker thread (never raises).

        Returns the result and whether the abort event was already set when the
        tool returned: such a result may exist only because abort cut the tool
        short, so the loop records the call as cancelled instead.
        """
        found = self.config.tools.get(call.name)
        assert found is not None
        report = progress_reporter(
            lambda progress: self.update(ev.ToolExecutionUpdateEvent(tool_call_id=call.id, progress=progress))
        )
        key = self.key(call)
        decided = nested_approvals.decisions_for(self.journal, self.turns, call.id)  # []: the call never waited
        try:
            with report, ev.reporting(self.update):
                if key is None and not decided and current_idempotency_key() is None and not instrumented():
                    outcome = found.execute(call.id, call.arguments, self.abort_event)  # nothing else to set
                else:
                    with idempotency_context(key), tool_scope(call.id), nested_approvals.deciding(decided):
                        outcome = found.execute(call.id, call.arguments, self.abort_event)
                result = cap_result(to_result(outcome), self.config.max_result_chars)
        except SimulatedCrash:
            raise
        except nested_approvals.AwaitingApproval as waiting:  # the run stops for a person; not this call's result
            logger.info("tool %s waits for approval of: %s", call.name, waiting)
            return nested_approvals.waiting_result(call, waiting), self.abort_event.is_set()
        except BaseException as exc:  # SystemExit (argparse), KeyboardInterrupt...: a result, not a dead thread
            logger.info("tool %s raised: %r", call.name, exc)
            self.update(ev.ErrorEvent(where="tool", error=exc, message=f"{call.name}: {exc}"))
            result = AgentToolResult.error(
                f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}", details={"exception": exc}
            )
        if self.journal is not None:  # recorded the moment it exists, before the loop sees it
            result = self.journal.tool_result(call, result)
        return result, self.abort_event.is_set()

    def finish(self, call: ToolCall, result: AgentToolResult, started: float, *, ran: bool) -> AgentToolResult:
        """Apply ``after_tool_call`` (only to calls that ran) and report the end."""
        self.flush_updates()
        if ran and not nested_approvals.is_waiting(result):  # a call waiting for a person has not finished
            ctx = ToolCallContext(call, self.config.tools.get(call.name), self.history, result,
                                  idempotency_key=self.key(call))
            after = self.config.after_tool_call
            result = self.check_tool_output(call, run_after_hook(after, ctx) if after is None
                                            else self.cuttable(run_after_hook, after, ctx))
        hook_error = result.details.get("hook_error") if isinstance(result.details, dict) else None
        if isinstance(hook_error, BaseException):
            self.emit(ev.ErrorEvent(where="hook", error=hook_error, message=f"{call.name}: {hook_error}"))
        if self.heard("tool_execution_end"):
            self.emit(ev.ToolExecutionEndEvent(tool_call=call, result=result, is_error=result.is_error,
                                               duration_seconds=time.monotonic() - started,
                                               annotations=self.annotations(call)))
        return result

    def annotations(self, call: ToolCall) -> dict[str, Any] | None:
        """The called tool's ``annotations`` for the events (None: none declared, or no such tool)."""
        found = self.config.tools.get(call.name)
        return None if found is None or found.annotations is None else dict(found.annotations)

    def key(self, call: ToolCall) -> str | None:
        """The call's idempotency key (None without a journal)."""
        return None if self.journal is None else self.journal.idempotency_key(call)

    def start(self, call: ToolCall) -> tuple[float, AgentToolResult | None, bool]:
        """Emit the start event, replay or check ``call``.

        Returns (start time, the result that stands instead of running it or
        None, whether that result comes from a run of the tool).
        """
        started = time.monotonic()
        if self.heard("tool_execution_start"):
            self.emit(ev.ToolExecutionStartEvent(tool_call=call, annotations=self.annotations(call)))
        if self.journal is not None:
            recorded = self.journal.recorded_result(call)
            if recorded is not None:  # ran before an interruption: not run again
                self.repeated_call(call)  # count it as the first run did
                details = recorded.details
                return started, recorded, not (isinstance(details, dict) and details.get("interrupted"))
        waited = nested_approvals.waited(self.journal, self.turns, call.id)  # it waited for a person: it runs again
        if self.journal is not None and not waited:
            lost = self.journal.interrupted_result(call, self.config.tools.get(call.name))
            if lost is not None:
                return started, lost, False
        refusal = self.check(call)
        if refusal is None and self.journal is not None and not waited:  # a waited call's marker is recorded
            self.journal.tool_started(call)
        return started, refusal, False

    def run_batch(self, calls: list[ToolCall]) -> tuple[list[AgentToolResult], bool]:
        """Return one result per call, in order, and whether the batch was aborted.

        Sequential: check and run each call in turn. Parallel: check every call
        in order (``before_tool_call`` runs on this thread), then run the
        allowed ones at once; ``after_tool_call`` runs here as each finishes.
        """
        results: list[AgentToolResult | None] = [None] * len(calls)
        pending: dict[Handed, tuple[int, float]] = {}  # calls running at once, by their hand-off
        sequential = self.config.tool_execution == "sequential" or any(
            getattr(self.config.tools.get(call.name), "sequential", False) for call in calls
        )
        aborted = False
        try:
            for i, call in enumerate(calls):
                if self.abort_event.is_set():
                    raise Aborted()
                started, refusal, ran = self.start(call)
                if refusal is not None:
                    results[i] = self.finish(call, refusal, started, ran=ran)
                    continue
                if self.config.inline or getattr(self.config.tools.get(call.name), "inline", False):
                    result, late = self.here(self.execute, call)  # on this thread: no hand-off
                    if late:
                        raise Aborted()
                    results[i] = self.finish(call, result, started, ran=True)
                    continue
                if sequential or (not pending and i == len(calls) - 1):  # nothing else runs meanwhile
                    result, late = self.call(self.execute, call)
                    if late:
                        raise Aborted()
                    results[i] = self.finish(call, result, started, ran=True)
                    continue
                pending[self.launch(self.execute, call)] = (i, started)
            while pending:  # each as it finishes, its updates emitted first
                handed = self.collect(pending)
                i, started = pending.pop(handed)
                result, late = handed.result()
                if not late:  # finished before the abort: a real result
                    results[i] = self.finish(calls[i], result, started, ran=True)
                if self.abort_event.is_set():
                    raise Aborted()
        except Aborted:
            aborted = True
        except KeyboardInterrupt as exc:  # Ctrl-C in the thread running the loop: abort, keep the records
            self.interrupted = exc
            self.abort_event.set()
            aborted = True
        finally:
            for handed in pending:
                handed.cancelled = True  # not run if not started
            for i, call in enumerate(calls):
                if results[i] is None:
                    reason = "aborted by the user" if aborted else "internal error"
                    results[i] = AgentToolResult.error(
                        f"Tool {call.name!r} was cancelled: {reason}; it may not have finished.",
                        details={"aborted": True},
                    )
                    self.emit(ev.ToolExecutionEndEvent(tool_call=call, result=results[i], is_error=True,
                                                             annotations=self.annotations(call)))
        return [r for r in results if r is not None], aborted

    def pause(self, reply: AssistantMessage, waiting: list[dict[str, Any]], turn_started: float) -> AssistantMessage:
        """Stop the run for a person's decisions about ``waiting`` (``yiemagent.tools.approvals``); its answer.

        Sends ``approval_requested`` and ``turn_end``; the reply is not added to the history (the
        resumed run replays it and the results recorded in the journal).
        """
        self.waiting = waiting
        self.emit(ev.ApprovalRequestedEvent(turn=self.turns, pending=waiting))
        self.emit(ev.TurnEndEvent(turn=self.turns, duration_seconds=time.monotonic() - turn_started))
        return approvals.waiting_answer(reply, waiting)

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
            self.emit(ev.ToolExecutionStartEvent(tool_call=call, annotations=self.annotations(call)))
            self.emit(ev.ToolExecutionEndEvent(tool_call=call, result=result, is_error=True,
                                                     annotations=self.annotations(call)))
            results.append(result)
        return results, aborted

