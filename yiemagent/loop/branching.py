"""Branching a conversation: where ``fork``, ``rewind``, ``edit`` and ``regenerate`` cut, and the cut itself.

Messages are addressed by their **index** in ``history`` (``Agent.history``: every message, those
of failed runs (``excluded``) and compaction summaries included; 0-based, negative from the end as
in Python). Messages carry no id of their own; an index is stable because the history only grows
at its end between two branching operations, and every operation names the version it was planned
on (``Branch.base``): an index read at version *v* means the same message as long as the
conversation is at *v*, and an operation served at another version is refused
(``BranchConflictError``), never applied to a history its caller did not see.

The rules (each has a test in ``tests/test_branching.py`` or ``tests/store/test_branching.py``):

* a cut keeps ``history[:keep]``; it may not leave tool calls without their results (the point a
  LangGraph fork replays tool calls from, langgraph #7361, langchain-academy #40): ``fork(at=i)``
  and ``rewind(to=i)`` keep up to and including ``history[i]``, refused (``BranchError``) when
  ``history[i]`` asks for tool calls or is one result of a batch whose other results follow it;
* ``edit(i, text)``: ``history[i]`` must be a user message (not a compaction summary); the
  history is cut before it and the new text is the input of a **fresh run**: the model is called
  again and the old branch's tool calls and results are gone from what is sent, never replayed;
  a tool the new run calls runs under the new run's key (a new idempotency key);
* ``regenerate()``: the last user message is sent again in a fresh run after everything after it
  (the last answer, with its tool calls and results) is cut. ``keep_tool_results=True`` (what the
  user asks when a tool must not run again: a payment) keeps the last turn's tool calls and
  results and asks the model only for a new final answer from them (no new input);
* ``rewind(to=i)`` cuts and calls no model; its answer has ``content: ""`` and ``status:
  "completed"``;
* each operation is an input of the conversation (an ``Input`` whose ``branch`` is set), served
  in order with the others: in memory on the agent's thread, in a store through the inbox (the
  inbox row is its record, its run is journaled under its own run key, and the commit writes the
  cut history and its answer at once, fenced by the lease and the version);
* while a run waits for a person's decision (``pending_approvals``), every operation is refused with
  ``BranchError`` before anything is changed (``refuse_while_waiting``): the waiting calls stay
  waiting, neither approved nor rejected (decide first, or send a new message, which rejects them);
* the answer of every operation carries ``branch``: ``{"op", "keep", "base", "resume"}``; one
  refused because the conversation moved has ``status: "conflict"`` and ``error`` (``Agent``
  raises ``BranchConflictError`` for it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .._internal.checks import one_of
from ..exceptions import BranchError, FormatError
from ..messages import AssistantMessage, Message, ToolResultMessage, UserMessage

__all__ = ["BRANCH_KEY", "BRANCH_OPS", "Branch", "BranchOp", "apply_branch", "check_op", "cut_point",
           "history_token", "plan_edit", "plan_regenerate", "plan_rewind", "refuse_while_waiting"]

BRANCH_KEY = "yiemagent_branch"
"""The key of an inbox message holding its ``Branch`` (``Branch.to_dict``)."""

BranchOp = Literal["edit", "regenerate", "rewind"]
BRANCH_OPS: tuple[BranchOp, ...] = ("edit", "regenerate", "rewind")
_OPS = BRANCH_OPS


def check_op(op: Any) -> BranchOp:
    """``op`` when it is one of ``BRANCH_OPS``; else ``ConfigError`` naming the nearest (``"edti"``: ``"edit"``)."""
    one_of("op", op, BRANCH_OPS)
    return op  # type: ignore[no-any-return]


def refuse_while_waiting(operation: str, waiting: list[dict[str, Any]]) -> None:
    """Raise ``BranchError`` when ``waiting`` (the calls of ``pending_approvals``) is not empty.

    A branching operation never decides a waiting call: the approval stays as it was.
    """
    if waiting:
        names = ", ".join(sorted({str(c.get("name")) for c in waiting}))
        raise BranchError(f"{operation}: a run waits for a decision about {len(waiting)} tool call(s) ({names}): "
                          "approve or reject them first (decide), or send a new message (which rejects them); "
                          "nothing was changed")


@dataclass
class Branch:
    """One branching operation, as planned on a history: what to keep, and on which version."""

    op: BranchOp
    keep: int
    """The number of leading messages kept: ``history[:keep]``."""
    base: int | None = None
    """With a store: the conversation's version the operation was planned on; None in memory."""
    resume: bool = False
    """No new input: the model continues from the kept history (``regenerate(keep_tool_results=True)``)."""
    expect: Any = field(default=None, repr=False, compare=False)
    """In memory: ``history_token`` of the history it was planned on (never stored)."""

    def to_dict(self) -> dict[str, Any]:
        """``{"op", "keep", "base", "resume"}``: what the inbox row and the answer carry."""
        return {"op": self.op, "keep": self.keep, "base": self.base, "resume": self.resume}

    @classmethod
    def from_inbox(cls, message: Any) -> Branch | None:
        """The ``Branch`` an inbox message carries under ``BRANCH_KEY``, or None when it carries none.

        Raises:
            FormatError: the value is not what ``to_dict`` wrote (a tampered row).
        """
        data = message.get(BRANCH_KEY) if isinstance(message, dict) else None
        if data is None:
            return None
        if not isinstance(data, dict) or data.get("op") not in _OPS or not _count(data.get("keep")) or not (
                data.get("base") is None or _count(data.get("base"))) or not isinstance(data.get("resume"), bool):
            raise FormatError(f"not a branching operation: {data!r:.100}", raw=data)
        return cls(data["op"], data["keep"], data["base"], data["resume"])


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def history_token(history: list[Message]) -> tuple[int, Message | None]:
    """What a history in memory is, for a conflict check: ``(length, the last message object)``."""
    return len(history), history[-1] if history else None


def _index(history: list[Message], index: Any) -> int:
    if not isinstance(index, int) or isinstance(index, bool):
        raise BranchError(f"a message is addressed by its index in the history (an int), not {index!r:.40}")
    if not -len(history) <= index < len(history):
        raise BranchError(f"no message {index} in a history of {len(history)} messages", index=index)
    return index % len(history)


def cut_point(history: list[Message], at: int) -> int:
    """The ``keep`` of a cut after ``history[at]`` (``at + 1``, ``at`` counted from the end when negative).

    Raises:
        BranchError: ``at`` is not an index of ``history``, or the cut would leave tool calls
            without results (``history[at]`` asks for tools, or results of its batch follow it).
    """
    i = _index(history, at)
    here, after = history[i], history[i + 1] if i + 1 < len(history) else None
    if isinstance(here, AssistantMessage) and here.tool_calls:
        raise BranchError(f"history[{at}] asks for tool calls: a cut there would leave them without results "
                          f"(and a run after it would not know whether they ran); cut before it, at {i - 1}, or "
                          "after its results", index=at)
    if isinstance(here, ToolResultMessage) and isinstance(after, ToolResultMessage):
        raise BranchError(f"history[{at}] is one result of a tool batch whose other results follow it; cut "
                          "after the last one", index=at)
    return i + 1


def plan_rewind(history: list[Message], to: int) -> Branch:
    """``rewind(to=...)``: keep ``history[:to + 1]`` (``BranchError`` as ``cut_point``)."""
    return Branch("rewind", cut_point(history, to))


def plan_edit(history: list[Message], index: int, text: Any) -> tuple[Branch, UserMessage]:
    """``edit(index, text)``: cut before the user message ``history[index]``; the new input.

    ``text``: a ``str`` or a ``UserMessage`` (images too).

    Raises:
        BranchError: ``index`` is out of range or not a user message (or is a compaction summary).
        FormatError: ``text`` is neither.
    """
    i = _index(history, index)
    target = history[i]
    if not isinstance(target, UserMessage) or target.compaction is not None:
        role = str(getattr(target, "role", "?"))
        raise BranchError(f"history[{index}] is {'an' if role[:1] in 'aeiou' else 'a'} {role} message"
                          f"{' (a compaction summary)' if isinstance(target, UserMessage) else ''}: only a "
                          "user message can be edited", index=index)
    if isinstance(text, str):
        message = UserMessage(text)
    elif isinstance(text, UserMessage):
        message = text
    else:
        raise FormatError(f"the new text must be a str or a UserMessage, not {text!r:.60}", raw=text)
    return Branch("edit", i), message


def plan_regenerate(history: list[Message], *, keep_tool_results: bool = False) -> tuple[Branch, UserMessage]:
    """``regenerate()``: cut after the last user message (or its last tool result); the input sent again.

    Raises:
        BranchError: the history has no user message to answer again.
    """
    last = next((i for i in range(len(history) - 1, -1, -1) if isinstance(history[i], UserMessage)
                 and history[i].compaction is None), None)  # type: ignore[union-attr]
    if last is None:
        raise BranchError("nothing to regenerate: the history has no user message")
    message = history[last]
    assert isinstance(message, UserMessage)
    if keep_tool_results:
        results = [i for i in range(last + 1, len(history)) if isinstance(history[i], ToolResultMessage)]
        if results:
            return Branch("regenerate", cut_point(history, results[-1]), resume=True), message
    return Branch("regenerate", last), message


def apply_branch(history: list[Message], branch: Branch, version: int | None) -> str | None:
    """Cut ``history`` as ``branch`` says; return why it was refused instead (nothing cut), or None.

    ``version``: the conversation's version now (a store), or None (in memory: ``branch.expect``
    is compared with ``history_token(history)``).
    """
    if branch.base is not None:
        if version != branch.base:
            return (f"the conversation is at version {version}, not {branch.base} where this {branch.op} was "
                    "planned: reload it and try again")
    elif branch.expect is not None:
        length, last = history_token(history)
        if length != branch.expect[0] or last is not branch.expect[1]:
            return (f"the history changed since this {branch.op} was planned ({branch.expect[0]} messages then, "
                    f"{length} now): read it again and try again")
    if branch.keep > len(history):
        return f"the history has {len(history)} messages, fewer than the {branch.keep} this {branch.op} keeps"
    del history[branch.keep:]
    branch.expect = None  # applied: a run resumed after approval cuts again at the same place
    return None
