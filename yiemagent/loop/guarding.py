"""The guardrails of a run: when each stage is checked, what a verdict does, and its journal step.

``Guarding`` is mixed into the loop's run state (``yiemagent.loop``), under
``ToolBatch``; the guardrails themselves and their verdicts are
``yiemagent.tools.guardrails``. Stages and where the loop checks them:

* ``input``: the run's inputs, right after they are added (steered inputs when
  they join); ``Guardrail(parallel=True)`` ones on a thread of their own while
  the first model call runs: that reply is acted on (tools run, the answer is
  given) only once they passed, and a tripwire cuts the call (the run's abort
  event is set; the run ends ``guardrail_tripped``, not ``aborted``);
* ``output``: a reply without tool calls, after a typed answer was accepted;
* ``tool_input`` / ``tool_output``: in ``ToolBatch.check`` (before
  ``before_tool_call``) and ``ToolBatch.finish`` (after ``after_tool_call``).

Journal: each verdict of a stage with guardrails is written (``put``) as step
``guardrail/input/<turn>``, ``guardrail/input/<turn>.parallel``,
``guardrail/output/<turn>``, ``guardrail/tool_input/<call id>`` or
``guardrail/tool_output/<call id>`` (first write wins) before it acts; a run
replayed after a crash takes the recorded verdict and does not run the
guardrail again, so it ends the same way without asking the model again.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

from ..exceptions import SimulatedCrash
from ..messages import Message, ToolCall
from ..tools import AgentToolResult
from ..tools.guardrails import (
    Guardrail,
    GuardrailContext,
    GuardrailTripped,
    GuardrailVerdict,
    Stage,
    call_text,
    run_guardrails,
)
from . import events as ev
from .config import LoopConfig
from .handoff import POLL_SECONDS, Aborted, Handoffs, cut_in_flight
from .journal import Journal

__all__ = ["Guarding", "tripped_text"]

logger = logging.getLogger("yiemagent.loop")

_OUTCOME = {"tripwire": "ended", "retry": "rejected"}


def tripped_text(stage: Stage, verdict: GuardrailVerdict) -> str:
    """The answer of a run a tripwire ended: ``verdict.answer``, else a sentence naming the guardrail."""
    if verdict.answer:
        return verdict.answer
    what = {"input": "message", "output": "answer", "tool_input": "tool call", "tool_output": "tool result"}[stage]
    return f"Stopped: the {what} did not pass the guardrail {verdict.guardrail!r}: {verdict.reason}"


class Guarding(Handoffs):
    """Checking a run's guardrails (mixed into the loop's run state, which sets the attributes)."""

    config: LoopConfig
    journal: Journal | None
    history: list[Message]
    turns: int
    run_id: str
    tripwire: GuardrailTripped | None
    """A tool guardrail's tripwire of this batch: the run ends after it (``yiemagent.loop``)."""
    output_retries: int
    cut: tuple[GuardrailVerdict, bool] | None
    """A parallel input guardrail's tripwire (verdict, replayed) that cut the first model call."""
    parallel_check: threading.Thread | None

    # ------------------------------------------------------------------ verdicts

    def judge(self, stage: Stage, where: str, guardrails: Sequence[Guardrail],
              ctx: GuardrailContext, *, loop: bool = True) -> tuple[GuardrailVerdict, bool]:
        """``(verdict, replayed)`` of ``guardrails`` on ``ctx``: the journaled one, or run and journaled.

        ``loop``: called on the loop's thread, where the run's abort (and deadline) cuts the wait for a
        guardrail that hangs (``Handoffs.cuttable``: ``Aborted``); False on the parallel check's thread.
        """
        key = f"guardrail/{stage}/{where}"
        recorded = getattr(self.journal, "recorded", None)
        if isinstance(recorded, dict) and key in recorded:
            replayed = GuardrailVerdict.from_dict(recorded[key])
            if replayed is not None:
                return replayed, True
        verdict = self.cuttable(run_guardrails, guardrails, ctx) if loop else run_guardrails(guardrails, ctx)
        put = getattr(self.journal, "put", None)
        if put is not None:
            value = json.loads(json.dumps(verdict.as_dict(), ensure_ascii=False, default=str))
            stored = GuardrailVerdict.from_dict(put(key, value))  # first write wins
            if stored is not None:
                verdict = stored
        return verdict, False

    def report(self, stage: Stage, verdict: GuardrailVerdict, outcome: str, replayed: bool,
               call: ToolCall | None = None) -> None:
        """Emit ``guardrail_tripped`` for a verdict that did not pass."""
        logger.info("run %s: %s guardrail %s: %s (%s)", self.run_id, stage, verdict.guardrail, verdict.kind,
                    verdict.reason)
        self.emit(ev.GuardrailTrippedEvent(stage=stage, guardrail=verdict.guardrail, reason=verdict.reason,
                                           info=verdict.info, outcome=outcome,  # type: ignore[arg-type]
                                           tool_call_id=call.id if call is not None else None, replayed=replayed))

    def trip(self, stage: Stage, verdict: GuardrailVerdict, replayed: bool) -> GuardrailTripped:
        """Report a tripwire that ends the run; the exception the loop raises for it."""
        if verdict.kind != "tripwire":  # a retry where nobody can be told: the run ends all the same
            verdict.kind = "tripwire"
        self.report(stage, verdict, "ended", replayed)
        return GuardrailTripped(stage, verdict)

    # ------------------------------------------------------------------ input

    def check_inputs(self, messages: Sequence[Message], *, first: bool) -> None:
        """Input guardrails on ``messages`` (the run's inputs, or steered ones); raise on a tripwire.

        ``first``: the run's own inputs, whose parallel guardrails start here and run while the first
        model call runs (steered inputs are checked by all of them, here).
        """
        guardrails = self.config.input_guardrails
        if not guardrails or not messages:
            return
        text = "\n".join(str(getattr(m, "text", "") or "") for m in messages)
        ctx = GuardrailContext("input", text, self.history)
        blocking = [g for g in guardrails if not g.parallel or not first]
        parallel = [g for g in guardrails if g.parallel and first]
        if blocking:
            verdict, replayed = self.judge("input", str(self.turns), blocking, ctx)
            if verdict.kind != "pass":
                raise self.trip("input", verdict, replayed)
        if not parallel:
            return
        recorded = getattr(self.journal, "recorded", None)
        if isinstance(recorded, dict) and f"guardrail/input/{self.turns}.parallel" in recorded:
            verdict, replayed = self.judge("input", f"{self.turns}.parallel", parallel, ctx)  # replayed
            if verdict.kind != "pass":
                raise self.trip("input", verdict, replayed)
            return

        def check() -> None:
            try:
                verdict, replayed = self.judge("input", f"{self.turns}.parallel", parallel, ctx, loop=False)
            except SimulatedCrash:
                raise
            except BaseException as exc:  # the journal failed: the check could not be kept, so it did not pass
                verdict, replayed = GuardrailVerdict.tripwire(f"the guardrail's verdict could not be recorded: "
                                                              f"{exc}"), False
                verdict.guardrail = parallel[0].name or "guardrail"
            if verdict.kind != "pass":
                self.cut = (verdict, replayed)
                self.abort_event.set()
                cut_in_flight(self.config.llm_call)  # cuts the model call in flight, as abort() does

        self.parallel_check = threading.Thread(target=check, name=f"yiemagent-guardrail-{self.run_id}", daemon=True)
        self.parallel_check.start()

    def input_cleared(self) -> None:
        """Wait for the parallel input guardrails (the model's reply is not acted on before); raise on a tripwire.

        Raises:
            GuardrailTripped: one tripped.
            Aborted: the run was aborted meanwhile.
        """
        check, self.parallel_check = self.parallel_check, None
        while check is not None and check.is_alive():
            check.join(POLL_SECONDS)
            if self.abort_event.is_set() and self.cut is None and check.is_alive():
                raise Aborted()
        if self.cut is not None:
            raise self.trip("input", *self.cut)

    # ------------------------------------------------------------------ output

    def check_output(self, text: str, *, last: bool) -> str | None:
        """Output guardrails on an answer: None (accepted), or the message that sends it back (a retry).

        Raises:
            GuardrailTripped: a tripwire, or a retry on the run's last turn.
        """
        guardrails = self.config.output_guardrails
        if not guardrails:
            return None
        ctx = GuardrailContext("output", text, self.history, attempt=self.output_retries, last_turn=last)
        verdict, replayed = self.judge("output", str(self.turns), guardrails, ctx)
        if verdict.kind == "pass":
            return None
        if verdict.kind == "tripwire" or last:
            raise self.trip("output", verdict, replayed)
        self.output_retries += 1
        self.report("output", verdict, "retried", replayed)
        return verdict.reason or f"Your answer did not pass the guardrail {verdict.guardrail!r}. Answer again."

    # ------------------------------------------------------------------ tools

    def _tool_guardrails(self, stage: Stage) -> list[Guardrail]:
        return [g for g in self.config.tool_guardrails if stage in g.stages]

    def check_tool_input(self, call: ToolCall) -> AgentToolResult | None:
        """Tool input guardrails on ``call``: None (it may run) or the error result that stands instead."""
        if self.tripwire is not None:
            return AgentToolResult.error(f"Tool {call.name!r} was not run: a guardrail ended the run.",
                                         details={"guardrail": self.tripwire.verdict.as_dict()})
        guardrails = self._tool_guardrails("tool_input")
        if not guardrails:
            return None
        ctx = GuardrailContext("tool_input", call_text(call), self.history, tool_call=call)
        verdict, replayed = self.judge("tool_input", call.id, guardrails, ctx)
        if verdict.kind == "pass":
            return None
        self.report("tool_input", verdict, _OUTCOME[verdict.kind], replayed, call)
        if verdict.kind == "tripwire":
            self.tripwire = GuardrailTripped("tool_input", verdict)
        return AgentToolResult.error(f"Tool {call.name!r} was not run: {verdict.reason}",
                                     details={"guardrail": verdict.as_dict()})

    def check_tool_output(self, call: ToolCall, result: AgentToolResult) -> AgentToolResult:
        """Tool output guardrails on a result of a call that ran: the result, or an error result instead."""
        guardrails = self._tool_guardrails("tool_output")
        if not guardrails:
            return result
        ctx = GuardrailContext("tool_output", result.text, self.history, tool_call=call, result=result)
        verdict, replayed = self.judge("tool_output", call.id, guardrails, ctx)
        if verdict.kind == "pass":
            return result
        self.report("tool_output", verdict, _OUTCOME[verdict.kind], replayed, call)
        if verdict.kind == "tripwire" and self.tripwire is None:
            self.tripwire = GuardrailTripped("tool_output", verdict)
        details: dict[str, Any] = {"guardrail": verdict.as_dict()}  # the result itself is not kept
        return AgentToolResult.error(f"Tool {call.name!r} ran, but its result was withheld: {verdict.reason}",
                                     details=details)
