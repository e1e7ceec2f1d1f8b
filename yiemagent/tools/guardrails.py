"""Guardrails: checks on what goes into and comes out of a run, with a verdict each.

A guardrail is a function ``check(ctx: GuardrailContext) -> GuardrailVerdict | None``
(None means pass). ``Agent(input_guardrails=[...], output_guardrails=[...],
tool_guardrails=[...])`` runs them at four stages (``GuardrailContext.stage``):

* ``input``: the run's user text, before the first model call (``Guardrail(check,
  parallel=True)``: while that call runs; its reply is acted on only once the
  guardrail passed, and a tripwire cuts the call);
* ``output``: the text of an answer (a reply without tool calls), before it is accepted;
* ``tool_input``: a call's arguments as JSON text, after validation and before
  ``before_tool_call``;
* ``tool_output``: a call's result text, after ``after_tool_call``.

Verdicts (``GuardrailVerdict.kind``):

* ``pass``: go on (``None`` says the same);
* ``tripwire``: the run ends with status ``guardrail_tripped`` and a
  ``guardrail_tripped`` event (``outcome="ended"``); its answer is
  ``verdict.answer`` or a sentence naming the guardrail and ``reason``;
  a ``tool_input`` tripwire runs no tool of the batch that was not started, a
  ``tool_output`` tripwire withholds that result from the model;
* ``retry``: tell the model ``reason`` and let it go on: an ``output`` retry sends
  the answer back with ``reason`` as a user message and the model answers again
  (``outcome="retried"``; on the run's last turn a retry ends the run as a
  tripwire); a ``tool_input``/``tool_output`` retry gives the model an error
  result carrying ``reason`` (``outcome="rejected"``); at ``input`` there is no
  model to tell: a retry counts as a tripwire.

The first guardrail of a stage that does not pass decides; the rest of that
stage is not run. A guardrail that raises counts as a tripwire whose reason
names the exception (a check that cannot run does not let the text through).
Every verdict but a plain pass of a stage is journaled with the run (step
``guardrail/<stage>/<where>``), so a durable run replayed after a crash meets
the same verdicts without running the guardrails again (``yiemagent.loop``).

Ready ones: ``yiemagent.tools.guardrail_kinds`` (PII, moderation endpoint) and
``yiemagent.tools.grounding`` (numbers and names an answer may state).
Peers: openai-agents ``InputGuardrail``/``OutputGuardrail`` (``tripwire_triggered``)
and ``ToolInputGuardrail``/``ToolOutputGuardrail`` (``reject_content``, ``raise_exception``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._internal.checks import all_of, check_bool, one_of
from ..exceptions import ConfigError, SimulatedCrash
from ..messages import Message, ToolCall
from .results import AgentToolResult

__all__ = [
    "Guardrail",
    "GuardrailCheck",
    "GuardrailContext",
    "GuardrailTripped",
    "GuardrailVerdict",
    "Stage",
    "call_text",
    "guardrails_of",
    "run_guardrails",
]

logger = logging.getLogger("yiemagent.tools.guardrails")

Stage = Literal["input", "output", "tool_input", "tool_output"]
VerdictKind = Literal["pass", "tripwire", "retry"]
STAGES: tuple[Stage, ...] = ("input", "output", "tool_input", "tool_output")
TOOL_STAGES: tuple[Stage, ...] = ("tool_input", "tool_output")
"""The stages a ``Guardrail(stages=...)`` may name (a tool guardrail's)."""
VERDICT_KINDS: tuple[VerdictKind, ...] = ("pass", "tripwire", "retry")


@dataclass
class GuardrailVerdict:
    """What a guardrail decided (see the module docstring for each ``kind``)."""

    kind: VerdictKind = "pass"
    reason: str = ""
    """Why, in one sentence: the model reads it on a retry, the app in the event and the answer's ``guardrail``."""
    info: Any = None
    """Anything JSON-ready the guardrail wants the app to have (what it found, scores); journaled as is."""
    answer: str | None = None
    """A tripwire's answer text instead of the default sentence (e.g. ``"I do not know."``)."""
    guardrail: str = ""
    """The guardrail's name (set by ``run_guardrails``)."""

    def __post_init__(self) -> None:
        one_of("GuardrailVerdict kind", self.kind, VERDICT_KINDS)

    @classmethod
    def passed(cls) -> GuardrailVerdict:
        """Go on."""
        return cls()

    @classmethod
    def tripwire(cls, reason: str, info: Any = None, *, answer: str | None = None) -> GuardrailVerdict:
        """End the run (status ``guardrail_tripped``)."""
        return cls("tripwire", reason, info, answer)

    @classmethod
    def retry(cls, reason: str, info: Any = None) -> GuardrailVerdict:
        """Tell the model ``reason`` and let it go on (answer again; or an error result for a tool call)."""
        return cls("retry", reason, info)

    def as_dict(self) -> dict[str, Any]:
        """``{"kind", "reason", "info", "answer", "guardrail"}``: the journaled and reported form."""
        return {"kind": self.kind, "reason": self.reason, "info": self.info, "answer": self.answer,
                "guardrail": self.guardrail}

    @classmethod
    def from_dict(cls, value: Any) -> GuardrailVerdict | None:
        """The verdict ``as_dict`` wrote, or None when ``value`` is not one."""
        if not isinstance(value, dict) or value.get("kind") not in ("pass", "tripwire", "retry"):
            return None
        answer = value.get("answer")
        return cls(value["kind"], str(value.get("reason") or ""), value.get("info"),
                   answer if isinstance(answer, str) else None, str(value.get("guardrail") or ""))


@dataclass
class GuardrailContext:
    """What a guardrail is shown."""

    stage: Stage
    text: str
    """The text to check: the user's text (``input``), the answer (``output``), the call's arguments as
    JSON (``tool_input``) or the result's text (``tool_output``)."""
    history: list[Message] = field(repr=False, default_factory=list)
    """The conversation so far, this run's messages included (read it, do not change it)."""
    tool_call: ToolCall | None = None
    """The call (``tool_input``, ``tool_output``)."""
    result: AgentToolResult | None = None
    """The call's result (``tool_output``)."""
    attempt: int = 0
    """``output``: answers of this run already sent back by an output guardrail's retry (0 on the first)."""
    last_turn: bool = False
    """``output``: the run cannot ask the model again (a retry would end it as a tripwire)."""

    def __post_init__(self) -> None:
        one_of("stage", self.stage, STAGES)


GuardrailCheck = Callable[[GuardrailContext], "GuardrailVerdict | None"]


@dataclass
class Guardrail:
    """A guardrail function with its options.

    Args:
        check: ``check(ctx) -> GuardrailVerdict | None``.
        name: names it in events, answers and the journal; None: the function's ``__name__``.
        parallel: input guardrails only: run while the first model call runs instead of before it
            (its reply is not acted on until the guardrail passed; a tripwire cuts the call).
        stages: tool guardrails only: which of ``tool_input``, ``tool_output`` it checks (default both).
    """

    check: GuardrailCheck
    name: str | None = None
    parallel: bool = False
    stages: tuple[Stage, ...] = ("tool_input", "tool_output")

    def __post_init__(self) -> None:
        if not callable(self.check):
            raise ConfigError(f"a guardrail must be callable: check(ctx) -> GuardrailVerdict | None, "
                              f"not {self.check!r:.60}")
        self.stages = all_of("Guardrail stages", self.stages, TOOL_STAGES, empty=False)
        check_bool("Guardrail parallel", self.parallel)
        if self.name is None:
            self.name = str(getattr(self.check, "name", None) or getattr(self.check, "__name__", None)
                            or type(self.check).__name__)


def guardrails_of(argument: str, given: Iterable[Guardrail | GuardrailCheck] | None) -> tuple[Guardrail, ...]:
    """``given`` as ``Guardrail`` objects (functions wrapped); ``ConfigError`` naming ``argument`` if one is not."""
    if given is None:
        return ()
    if isinstance(given, (str, bytes)) or callable(given) or not isinstance(given, Iterable):
        raise ConfigError(f"{argument} must be a list of guardrails (functions or Guardrail), not {given!r:.60}")
    made = []
    for each in given:
        if isinstance(each, Guardrail):
            made.append(each)
        elif callable(each):
            made.append(Guardrail(each))
        else:
            raise ConfigError(f"{argument}: {each!r:.60} is not a guardrail (a function or a Guardrail)")
    return tuple(made)


class GuardrailTripped(Exception):
    """Raised inside the loop when a tripwire ends the run (never out of ``run_turns``)."""

    def __init__(self, stage: Stage, verdict: GuardrailVerdict) -> None:
        super().__init__(f"{stage} guardrail {verdict.guardrail!r} tripped: {verdict.reason}")
        self.stage = stage
        self.verdict = verdict


def run_guardrails(guardrails: Sequence[Guardrail], ctx: GuardrailContext) -> GuardrailVerdict:
    """Run ``guardrails`` on ``ctx`` in order; the first verdict that is not a pass (or a pass).

    A guardrail that raises (any ``Exception``) gives a tripwire naming the error; one that
    returns something else than a verdict or None gives a tripwire saying so.
    """
    for guardrail in guardrails:
        name = guardrail.name or "guardrail"
        try:
            verdict = guardrail.check(ctx)
        except SimulatedCrash:
            raise
        except Exception as exc:
            logger.warning("%s guardrail %s raised: %r", ctx.stage, name, exc)
            verdict = GuardrailVerdict.tripwire(f"the guardrail failed ({type(exc).__name__}: {exc})")
        if verdict is None:
            continue
        if not isinstance(verdict, GuardrailVerdict):
            verdict = GuardrailVerdict.tripwire(
                f"the guardrail returned {type(verdict).__name__}, expected GuardrailVerdict or None")
        if verdict.kind == "pass":
            continue
        verdict.guardrail = name
        return verdict
    return GuardrailVerdict.passed()


def call_text(call: ToolCall) -> str:
    """A call's arguments as the ``tool_input`` text: JSON (keys sorted, non-ASCII kept)."""
    return json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)
