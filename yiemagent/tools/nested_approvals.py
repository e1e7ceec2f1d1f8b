"""Approvals a tool's call waits on: a pause anywhere in a nested run reaches the top run.

A tool whose call cannot finish before a person decides (an agent behind
``Agent.as_tool`` whose run stopped ``awaiting_approval``) raises
``AwaitingApproval(calls)``. The rules (each has a test, ``tests/test_as_tool_approvals.py``):

* the run stops with status ``awaiting_approval``, as when its model asks for a
  call that needs approval (``yiemagent.tools.approvals``): the carried calls are
  its pending approvals, recorded as ``approval/<turn>/<call id>/<n>`` (the n-th
  time that call waited), each id ``"<call id>/<its id>"`` (unique in the run,
  at any depth) and ``via`` the tool names it was asked through, outermost first;
  the reply is not added to the history;
* the other calls of the batch ran: their results are recorded and replayed
  when the run resumes, never run again;
* once every pending call is decided (by ``approve``/``reject``/``decide`` of
  the agent whose run waits, or a new input: ``SUPERSEDED_REASON``), the run
  resumes and calls the tool again with the same call id and arguments (a call
  that waited is not "interrupted"); inside it ``nested_calls()`` and
  ``nested_decisions()`` give what it raised and the decisions, in its own
  ids. Its result is the call's result; it may raise again (another wait).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

from ..messages import ToolCall
from . import AgentToolResult
from .approvals import DEFAULT_REJECT_REASON, Steps

__all__ = [
    "AwaitingApproval",
    "deciding",
    "decisions_for",
    "is_waiting",
    "nested_calls",
    "nested_decisions",
    "record_waits",
    "waited",
    "waiting_result",
]


class AwaitingApproval(Exception):
    """Raised by a tool's ``execute``: this call waits for a person's decisions about ``calls``.

    ``calls``: ``[{"tool_call_id", "name", "arguments", ...}]`` in the tool's own ids (an agent behind
    ``Agent.as_tool`` raises its run's ``pending_approvals``, each with ``"agent"``, the agent that
    asks). The run that called the tool stops with status ``awaiting_approval`` as if its model had
    asked for these calls (``record_waits``): they are its pending approvals, each id prefixed
    ``"<this call's id>/"`` and ``"via"`` (the tool names it was asked through, outermost first)
    prepended with this tool's name. Once a person decided them, the run resumes and calls the tool
    again, with the same call id and arguments, where ``nested_decisions()`` gives the decisions in
    the tool's own ids; the result of that call is the call's result. Nothing else of the run runs twice.
    """

    def __init__(self, calls: Sequence[Mapping[str, Any]]) -> None:
        self.calls = [dict(c) for c in calls if isinstance(c, Mapping) and isinstance(c.get("tool_call_id"), str)]
        super().__init__("waiting for approval of: " + ", ".join(str(c.get("name")) for c in self.calls))


_deciding = threading.local()


def nested_decisions() -> dict[str, bool | str]:
    """Inside a tool's ``execute``: the decisions about the calls this call waited on, else ``{}``.

    ``{tool_call_id: True (approved) | "reason" (rejected)}`` in the ids the tool raised in
    ``AwaitingApproval``, for the last time it raised; ``{}`` for a call that never waited.
    """
    return {str(c["tool_call_id"]): c["decision"] for c in nested_calls() if "decision" in c}


def nested_calls() -> list[dict[str, Any]]:
    """Inside a tool's ``execute``: the calls it raised in ``AwaitingApproval`` the last time, else ``[]``.

    As raised (its own ids and keys), each decided one with ``"decision"`` (True or the reason).
    """
    return [dict(c) for c in getattr(_deciding, "calls", None) or []]


@contextmanager
def deciding(calls: Sequence[Mapping[str, Any]]) -> Iterator[None]:
    """While the block runs on this thread, ``nested_calls()`` returns ``calls`` (see ``decisions_for``)."""
    previous = getattr(_deciding, "calls", None)
    _deciding.calls = [dict(c) for c in calls]
    try:
        yield
    finally:
        _deciding.calls = previous


def _steps(journal: object) -> Steps | None:
    return cast(Steps, journal) if isinstance(getattr(journal, "recorded", None), dict) else None


def _rounds(journal: object, turn: int, call_id: str) -> list[Any]:
    """The steps ``approval/<turn>/<call_id>/<n>`` (n = 1, 2, ...): what the call waited on each time."""
    steps = _steps(journal)
    found: list[Any] = []
    while steps is not None and (key := f"approval/{turn}/{call_id}/{len(found) + 1}") in steps.recorded:
        found.append(steps.recorded[key])
    return found


def waited(journal: object, turn: int, call_id: str) -> bool:
    """True when call ``call_id`` of ``turn`` waited for a person before: it runs again (not "interrupted")."""
    return bool(_rounds(journal, turn, call_id))


def decisions_for(journal: object, turn: int, call_id: str) -> list[dict[str, Any]]:
    """What call ``call_id`` of ``turn`` last waited on, as its tool raised it, with each ``"decision"``; [] if none.

    The ids are the tool's own again (``"<call_id>/"`` taken off, ``via`` as raised); a decision is
    True (approved) or the rejection's reason.
    """
    steps, rounds = _steps(journal), _rounds(journal, turn, call_id)
    if steps is None or not rounds or not isinstance(rounds[-1], list):
        return []
    calls: list[dict[str, Any]] = []
    for asked in rounds[-1]:
        full = asked.get("tool_call_id") if isinstance(asked, dict) else None
        if not (isinstance(full, str) and full.startswith(f"{call_id}/")):
            continue
        own = dict(asked, tool_call_id=full[len(call_id) + 1:], via=list(asked.get("via") or [])[1:])
        decision = steps.recorded.get(f"decision/{full}")
        if isinstance(decision, dict):
            own["decision"] = (True if decision.get("approved") is True
                               else str(decision.get("reason") or DEFAULT_REJECT_REASON))
        calls.append(own)
    return calls


def waiting_result(call: ToolCall, waiting: AwaitingApproval) -> AgentToolResult:
    """What stands for a call that raised ``AwaitingApproval`` until the run stops (never recorded as its result)."""
    return AgentToolResult.error(f"Tool {call.name!r} waits for a person's approval of: {waiting}; it did not finish.",
                                 details={"awaiting_approval": waiting})


def is_waiting(result: AgentToolResult) -> bool:
    """True for a ``waiting_result``: the call waits for a person and has not finished."""
    return isinstance(result.details, dict) and isinstance(result.details.get("awaiting_approval"), AwaitingApproval)


def record_waits(calls: Sequence[ToolCall], results: Sequence[AgentToolResult], journal: object,
                 turn: int) -> list[dict[str, Any]]:
    """The calls a batch's tools wait on (``AwaitingApproval``), recorded as ``approval/<turn>/<call id>/<n>``.

    Each as a pending approval of this run: ``tool_call_id`` ``"<call id>/<its id>"``, ``via``
    ``[call name, *its via]``, its own ``input_id``/``seq`` left out. ``[]`` when no result waits, or
    without a journal (``journal`` None: the run could not resume; the results stand as error results).
    """
    steps = _steps(journal)
    waiting: list[dict[str, Any]] = []
    for call, result in zip(calls, results, strict=False):
        asked = result.details.get("awaiting_approval") if is_waiting(result) else None
        if steps is None or not isinstance(asked, AwaitingApproval):
            continue
        mine = [dict({k: v for k, v in c.items() if k not in ("input_id", "seq")},
                     tool_call_id=f"{call.id}/{c['tool_call_id']}", via=[call.name, *(c.get("via") or [])])
                for c in asked.calls]
        stored = steps.put(f"approval/{turn}/{call.id}/{len(_rounds(steps, turn, call.id)) + 1}", mine)
        waiting += [c for c in stored if f"decision/{c.get('tool_call_id')}" not in steps.recorded]
    return waiting
