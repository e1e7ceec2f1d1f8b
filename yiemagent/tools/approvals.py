"""Approvals: tool calls that run only once a person said yes, later, in this process or in any other.

A call needs approval when its tool says so (``@tool(needs_approval=True)``,
``AgentTool.needs_approval``) or when the agent's ``approval_policy(tool)``
returns True (``Agent(approval_policy=unless_read_only)``: an MCP tool needs
approval unless its server marks it ``readOnlyHint: true``). The rules (each has a test):

* a reply asking for such a call, with no decision recorded for it, ends the
  run with status ``awaiting_approval``: nothing of that reply runs (the other
  calls of the reply neither: they run when the run resumes, so nothing runs
  twice and the batch runs together), the reply is not added to the history,
  and the answer dict (``pending_approvals``) and an ``approval_requested``
  event carry the pending calls ``[{"tool_call_id", "name", "arguments"}]``.
  The history never holds a call without its result, so every later request is valid;
* the pending calls and each decision are steps of the run's journal
  (``approval/<turn>``, ``decision/<tool_call_id>``; first write wins): in
  memory (``MemoryJournal``) without a store, in the store (``StoreJournal``)
  with one, so a decision can be made by any process after any delay;
* a decision is accepted only for a call recorded pending in that journal and
  not decided yet: anything else (an id the client made up, a call already
  decided, here or by a concurrent request, a state restored with
  ``from_state``, which never holds pending calls) raises ``ApprovalError``.
  Ids, names and arguments come from the journal, never from the client;
* once every pending call of the run is decided, the run's input is served
  again under the same journal: earlier model replies and tool results are
  replayed (not asked or run again), then the batch runs: approved calls and
  calls needing no approval run, rejected calls get an error result with the
  reason; the model continues. A crash after an approved call ran replays its
  recorded result or reports it "interrupted" (``yiemagent.loop.journal``): a
  recorded call never runs twice;
* a new input while a run awaits approval: the undecided calls are rejected
  with ``SUPERSEDED_REASON``, the waiting run resumes and ends (its answer is in
  the history and the events; with a store it is committed as its input's
  answer), then the new input runs as its own run;
* a call whose tool raises ``AwaitingApproval`` (an agent behind ``as_tool``
  whose run waits) makes the run wait for the calls it carries
  (``yiemagent.tools.nested_approvals``), decided as the run's own.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from ..exceptions import ApprovalError, ToolError
from ..messages import AssistantMessage, TextContent, ToolCall
from . import AgentTool, AgentToolResult, ToolRegistry

__all__ = [
    "SUPERSEDED_REASON",
    "ApprovalPolicy",
    "MemoryJournal",
    "ParkedRun",
    "Parking",
    "Steps",
    "calls_to_approve",
    "needs_approval",
    "record_decisions",
    "rejection",
    "requested",
    "undecided",
    "unless_read_only",
    "waiting_answer",
]

logger = logging.getLogger("yiemagent.tools.approvals")

ApprovalPolicy = Callable[[AgentTool], bool]
"""``policy(tool) -> bool``: True when a call of ``tool`` waits for a person's approval."""

SUPERSEDED_REASON = "the user sent a new message instead of deciding"
"""The reason given to the model for calls left undecided when a new input arrived."""

DEFAULT_REJECT_REASON = "the user rejected this call"
"""The reason given to the model for a rejection without one."""


def unless_read_only(tool: AgentTool) -> bool:
    """Policy: an MCP tool needs approval unless it is marked ``readOnlyHint: true``.

    MCP ``ToolAnnotations`` are hints of the server (spec 2025-11-25,
    ``schema.ts``): without ``readOnlyHint`` a tool is taken to change things.
    A local tool (``annotations`` None) is not covered: it declares
    ``needs_approval`` itself.
    """
    return tool.annotations is not None and tool.annotations.get("readOnlyHint") is not True


def needs_approval(tool: AgentTool, policy: ApprovalPolicy | None) -> bool:
    """True when a call of ``tool`` must be approved first: its own flag, or ``policy(tool)``.

    A policy that raises counts as True (an approval asked too often is safer than a call run unasked).
    """
    if getattr(tool, "needs_approval", False):
        return True
    if policy is None:
        return False
    try:
        return bool(policy(tool))
    except Exception:
        logger.exception("approval_policy raised for tool %r; the call waits for approval", tool.name)
        return True


class Steps(Protocol):
    """A run's journal steps as approvals read and write them (``MemoryJournal``, ``StoreJournal``)."""

    recorded: Any
    """``{step key: value}``: what the journal holds (for a ``StoreJournal``: as read at its start)."""

    def put(self, step: str, value: Any) -> Any:
        """Record ``step`` unless it exists; return the stored value (the first writer's)."""
        ...


def _call_dict(call: ToolCall) -> dict[str, Any]:
    return {"tool_call_id": call.id, "name": call.name, "arguments": call.arguments}


def requested(steps: Steps) -> list[dict[str, Any]]:
    """Every call recorded as waiting for approval in this run (``approval/<turn>`` steps), decided or not."""
    calls: list[dict[str, Any]] = []
    for key in sorted(k for k in steps.recorded if k.startswith("approval/")):
        value = steps.recorded[key]
        if isinstance(value, list):
            calls += [c for c in value if isinstance(c, dict) and isinstance(c.get("tool_call_id"), str)]
    return calls


def undecided(steps: Steps) -> list[dict[str, Any]]:
    """The calls of ``requested(steps)`` without a ``decision/<tool_call_id>`` step."""
    return [c for c in requested(steps) if f"decision/{c['tool_call_id']}" not in steps.recorded]


def calls_to_approve(calls: Sequence[ToolCall], tools: ToolRegistry, policy: ApprovalPolicy | None,
                     journal: object, turn: int) -> list[dict[str, Any]]:
    """The calls of one reply that wait for a decision; records them as ``approval/<turn>``.

    Calls that will be refused anyway (a parse error, an unknown tool, invalid
    arguments) do not wait. ``journal``: the run's journal (``Steps``) or None (nothing recorded:
    the run cannot resume). Once recorded (a replay), the recorded list holds:
    a decision made for it is found even if the tools changed meanwhile.
    """
    steps = cast(Steps, journal) if isinstance(getattr(journal, "recorded", None), dict) else None
    key = f"approval/{turn}"
    if steps is not None and key in steps.recorded:
        asked = steps.recorded[key]
    else:
        asked = []
        for call in calls:
            tool = tools.get(call.name)
            if call.error or tool is None or not needs_approval(tool, policy):
                continue
            try:
                tool.validate(call.arguments, call.id)
            except ToolError:
                continue
            asked.append(_call_dict(call))
        if asked and steps is not None:
            asked = steps.put(key, asked)
    recorded = {} if steps is None else steps.recorded
    asked = (asked if isinstance(asked, list) else []) + [  # calls a tool of this turn waited on (AwaitingApproval)
        c for k in sorted(recorded) if k.startswith(f"{key}/") and isinstance(recorded[k], list) for c in recorded[k]]
    return [c for c in asked if isinstance(c, dict) and f"decision/{c.get('tool_call_id')}" not in recorded]


def rejection(call: ToolCall, steps: Any) -> AgentToolResult | None:
    """The error result of a call a person rejected (with the reason), else None."""
    recorded = getattr(steps, "recorded", None)
    decision = recorded.get(f"decision/{call.id}") if isinstance(recorded, Mapping) else None
    if not isinstance(decision, dict) or decision.get("approved") is True:
        return None
    reason = decision.get("reason") or DEFAULT_REJECT_REASON
    return AgentToolResult.error(f"Tool {call.name!r} was not run: the user rejected this call: {reason}",
                                 details={"rejected": True, "reason": reason})


def waiting_answer(reply: AssistantMessage, pending: list[dict[str, Any]]) -> AssistantMessage:
    """The answer of a run that waits: the reply's text, else a line naming the calls; no tool calls."""
    names = ", ".join(str(c.get("name")) for c in pending)
    text = reply.text or f"Waiting for approval of: {names}."
    return AssistantMessage([TextContent(text)], usage=reply.usage, finish_reason=reply.finish_reason,
                            model=reply.model)


def _normalize(decisions: Mapping[str, bool | str]) -> dict[str, tuple[bool, str | None]]:
    if not isinstance(decisions, Mapping) or not decisions:
        raise ApprovalError("decisions must be a non-empty mapping {tool_call_id: True | False | 'reason'}")
    out: dict[str, tuple[bool, str | None]] = {}
    for call_id, value in decisions.items():
        if not isinstance(call_id, str):
            raise ApprovalError(f"a tool_call_id must be a str, not {call_id!r:.60}")
        if value is True:
            out[call_id] = (True, None)
        elif value is False:
            out[call_id] = (False, DEFAULT_REJECT_REASON)
        elif isinstance(value, str):
            out[call_id] = (False, value.strip()[:2000] or DEFAULT_REJECT_REASON)
        else:
            raise ApprovalError(f"the decision for {call_id!r} must be True, False or a reason (str), "
                                f"not {value!r:.60}")
    return out


def record_decisions(steps: Steps, decisions: Mapping[str, bool | str]) -> None:
    """Record ``decisions`` ``{tool_call_id: True (approve) | False | "reason" (reject)}`` in ``steps``.

    Every id must be pending in ``steps`` (checked before anything is
    written). Each decision is a first-write-wins step, so of two concurrent
    decisions about one call exactly one is recorded.

    Raises:
        ApprovalError: an id that is not a pending call of this run (never
            requested, or forged), a call already decided, a decision recorded
            meanwhile by someone else, or a malformed decision.
    """
    wanted = _normalize(decisions)
    asked = {c["tool_call_id"] for c in requested(steps)}
    for call_id in wanted:
        if call_id not in asked:
            raise ApprovalError(f"{call_id!r} is not a tool call waiting for approval here; nothing was decided",
                                tool_call_id=call_id)
        if f"decision/{call_id}" in steps.recorded:
            raise ApprovalError(f"{call_id!r} was already decided; nothing was changed", tool_call_id=call_id)
    lost = []
    for call_id, (approved, reason) in wanted.items():
        value = {"approved": approved, "reason": reason, "decision_id": uuid.uuid4().hex, "at": time.time()}
        stored = steps.put(f"decision/{call_id}", value)
        steps.recorded[f"decision/{call_id}"] = stored  # a journal read at its start sees it too
        if stored != value:
            lost.append(call_id)
        logger.info("tool call %s %s%s", call_id, "approved" if approved else "rejected",
                    "" if stored == value else " (refused: decided meanwhile by another request)")
    if lost:
        raise ApprovalError(f"{', '.join(lost)} was decided meanwhile by another request; that decision stands",
                            tool_call_id=lost[0])


class MemoryJournal:
    """The loop's journal (``yiemagent.loop.journal.Journal``) kept in memory: what a run without a store replays.

    Used for every run of a ``Conversation`` without a store, so that a run that
    stops to wait for approval can be resumed: steps as in ``StoreJournal``
    (``model/<turn>``, ``started/<id>``, ``tool/<id>``, ``approval/<turn>``,
    ``decision/<id>``), first write wins, safe from any thread.
    """

    def __init__(self) -> None:
        self.recorded: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryJournal({len(self.recorded)} steps)"

    def put(self, step: str, value: Any) -> Any:
        """Record ``step`` unless it exists; return the stored value."""
        with self._lock:
            return self.recorded.setdefault(step, value)

    def idempotency_key(self, call: ToolCall) -> str | None:
        """None: without a store there is no stable key."""
        return None

    def replay_model(self, turn: int) -> AssistantMessage | None:
        """The reply recorded for ``turn``, or None."""
        reply = self.recorded.get(f"model/{turn}")
        return reply if isinstance(reply, AssistantMessage) else None

    def record_model(self, turn: int, reply: AssistantMessage) -> AssistantMessage:
        """Record ``reply`` unless one is recorded; return the recorded one."""
        stored = self.put(f"model/{turn}", reply)
        return stored if isinstance(stored, AssistantMessage) else reply

    def recorded_result(self, call: ToolCall) -> AgentToolResult | None:
        """The result recorded for ``call``, or None."""
        result = self.recorded.get(f"tool/{call.id}")
        return result if isinstance(result, AgentToolResult) else None

    def interrupted_result(self, call: ToolCall, tool: AgentTool | None) -> AgentToolResult | None:
        """An error result for a call started without a recorded result (never run again); else None."""
        if f"started/{call.id}" not in self.recorded or f"tool/{call.id}" in self.recorded:
            return None
        return self.tool_result(call, AgentToolResult.error(
            f"Tool {call.name!r} was interrupted before its result existed; it was not run again.",
            details={"interrupted": True}))

    def tool_started(self, call: ToolCall) -> None:
        """Record that ``call`` is about to run."""
        self.put(f"started/{call.id}", True)

    def tool_result(self, call: ToolCall, result: AgentToolResult) -> AgentToolResult:
        """Record ``result`` unless one is recorded; return the recorded one."""
        stored = self.put(f"tool/{call.id}", result)
        return stored if isinstance(stored, AgentToolResult) else result


@dataclass
class ParkedRun:
    """A run without a store that waits for approval: its input and its journal."""

    entry: Any
    """The ``yiemagent.loop.conversation.Input`` the run serves (served again to resume)."""
    journal: MemoryJournal


class Parking:
    """The run of a ``Conversation`` (no store) waiting for approval, if any; safe from any thread."""

    def __init__(self) -> None:
        self.parked: ParkedRun | None = None
        self.serving = threading.Lock()
        """Held by ``Conversation.serve`` around its runs, so that a waiting run is finished once."""
        self._lock = threading.Lock()
        self._ended: dict[str, dict[str, Any]] = {}  # answers of waiting runs a new input finished, by input id

    def journal_for(self, entry_id: str) -> MemoryJournal:
        """The journal of the parked run when ``entry_id`` is its input (a resume), else a new one."""
        with self._lock:
            if self.parked is not None and self.parked.entry.id == entry_id:
                return self.parked.journal
        return MemoryJournal()

    def after_run(self, entry: Any, journal: MemoryJournal, waiting: bool) -> None:
        """Park the run of ``entry`` (``waiting``) or forget it once it ended."""
        with self._lock:
            if waiting:
                self.parked = ParkedRun(entry, journal)
            elif self.parked is not None and self.parked.journal is journal:
                self.parked = None

    def pending(self) -> list[dict[str, Any]]:
        """The undecided calls of the parked run, each with its run's ``input_id``."""
        with self._lock:
            parked = self.parked
        if parked is None:
            return []
        return [dict(c, input_id=parked.entry.id) for c in undecided(parked.journal)]

    def decide(self, decisions: Mapping[str, bool | str]) -> tuple[list[dict[str, Any]], Any]:
        """Record ``decisions``; return the calls still undecided and, once none is, the input to serve again.

        Raises:
            ApprovalError: see ``record_decisions``; also when no run waits.
        """
        with self._lock:  # two threads completing the set at once: exactly one resumes
            parked = self.parked
            if parked is None:
                call_id = next(iter(decisions), "") if isinstance(decisions, Mapping) else ""
                raise ApprovalError(f"{call_id!r} is not a tool call waiting for approval here (no run waits); "
                                    "nothing was decided", tool_call_id=str(call_id))
            before = bool(undecided(parked.journal))
            record_decisions(parked.journal, decisions)
            left = [dict(c, input_id=parked.entry.id) for c in undecided(parked.journal)]
            return left, (parked.entry if before and not left else None)

    def keep(self, entry_id: str, answer: dict[str, Any]) -> None:
        """The answer of the waiting run of ``entry_id`` that a new input finished (for its resume, if any)."""
        with self._lock:
            self._ended[entry_id] = answer
            while len(self._ended) > 16:
                del self._ended[next(iter(self._ended))]

    def answered(self, entry_id: str) -> dict[str, Any] | None:
        """The kept answer of ``entry_id`` when its waiting run already ended (a resume finds it done)."""
        with self._lock:
            if self.parked is not None and self.parked.entry.id == entry_id:
                return None
            return self._ended.pop(entry_id, None)

    def supersede(self, entry_id: str) -> Any:
        """A new input ``entry_id`` arrived: reject what is undecided; return the parked input to finish, or None."""
        with self._lock:
            parked = self.parked
            if parked is None or parked.entry.id == entry_id:
                return None
            left = undecided(parked.journal)
            if left:
                record_decisions(parked.journal, {c["tool_call_id"]: SUPERSEDED_REASON for c in left})
            return parked.entry
