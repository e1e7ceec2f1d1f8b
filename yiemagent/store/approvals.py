"""Approvals kept in a ``ConversationStore``: the calls a durable run waits on, and the decisions about them.

The rules are ``yiemagent.tools.approvals``'s. Here: only the first pending input
of a conversation's inbox can wait (inputs are served in order); its run's
journal (run key ``seq-<n>``) holds the calls waiting (``approval/<turn>``)
and the decisions (``decision/<tool_call_id>``), written first-write-wins by
``put_step``, so any process can decide, and of two processes deciding one
call at once exactly one decision is recorded. The run resumes when its input
is served again (``DurableConversation.serve`` / ``drain``, under the lease):
its journal replays what ran, so a recorded call never runs twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from ..exceptions import ApprovalError, StoreError
from ..loop.conversation import Input
from ..messages import UserMessage, from_openai
from ..tools.approvals import SUPERSEDED_REASON, Steps, record_decisions, requested, undecided
from .base import ConversationStore, InboxEntry, run_key

__all__ = ["decide", "pending_approvals", "still_waiting", "supersede", "waiting_answer"]


class _StoreSteps:
    """The journal steps of one run as ``yiemagent.tools.approvals.Steps`` (unfenced: decisions need no lease)."""

    def __init__(self, store: ConversationStore, conversation_id: str, run: str) -> None:
        self.store, self.conversation_id, self.run = store, conversation_id, run
        self.recorded: dict[str, Any] = store.steps(conversation_id, run)

    def put(self, step: str, value: Any) -> Any:
        try:
            stored = self.store.put_step(self.conversation_id, self.run, step, value)
        except StoreError as exc:
            if getattr(exc, "reason", "") == "version":  # the run was committed meanwhile: nothing waits
                raise ApprovalError(f"the run waiting on {step[len('decision/'):]!r} ended meanwhile; nothing "
                                    "was decided", tool_call_id=step[len("decision/"):]) from exc
            raise
        self.recorded[step] = stored
        return stored


def _waiting(store: ConversationStore, conversation_id: str) -> tuple[InboxEntry, _StoreSteps] | None:
    pending = store.pending(conversation_id, limit=1)
    if not pending:
        return None
    return pending[0], _StoreSteps(store, conversation_id, run_key(pending[0].seq))


def pending_approvals(store: ConversationStore, conversation_id: str) -> list[dict[str, Any]]:
    """The undecided calls of the conversation's waiting run, each with ``input_id`` and ``seq``; [] if none.

    Raises:
        StoreError: the store failed.
    """
    found = _waiting(store, conversation_id)
    if found is None:
        return []
    entry, steps = found
    return [dict(c, input_id=entry.input_id, seq=entry.seq) for c in undecided(steps)]


def decide(store: ConversationStore, conversation_id: str,
           decisions: Mapping[str, bool | str]) -> tuple[list[dict[str, Any]], Input | None]:
    """Record ``decisions`` in the store; return the calls still waiting and, once none is, the input to serve.

    Raises:
        ApprovalError: a call that is not waiting in this conversation's store, already decided (by any
            process), or a malformed decision; nothing of the batch is written when a check fails.
        StoreError: the store failed.
    """
    found = _waiting(store, conversation_id)
    if found is None or not requested(found[1]):
        call_id = next(iter(decisions), "") if isinstance(decisions, Mapping) else ""
        raise ApprovalError(f"{call_id!r} is not a tool call waiting for approval in conversation "
                            f"{conversation_id!r}; nothing was decided", tool_call_id=str(call_id))
    entry, steps = found
    record_decisions(steps, decisions)
    left = undecided(_StoreSteps(store, conversation_id, steps.run))  # read again: decisions of other processes
    if left:
        return [dict(c, input_id=entry.input_id, seq=entry.seq) for c in left], None
    message = from_openai(entry.message)
    if not isinstance(message, UserMessage):  # pragma: no cover - the inbox holds user messages only
        raise ApprovalError(f"inbox entry {entry.seq} is not a user message")
    return [], Input(message=message, id=entry.input_id)


def still_waiting(journal: Steps, inbox: InboxEntry) -> dict[str, Any] | None:
    """The ``awaiting_approval`` answer of input ``inbox`` while its run has undecided calls, else None.

    Built from the journal without running anything (no replay, no model, no MCP listing), so a
    worker polling a conversation that waits for a person costs two reads. ``seq``: the input's seq
    and those steered into its run.
    """
    left = undecided(journal)
    if not left:
        return None
    steered = [q for k, v in sorted(journal.recorded.items()) if k.startswith("steer/") and isinstance(v, list)
               for q in v if isinstance(q, int)]
    names = ", ".join(str(c.get("name")) for c in left)
    return {"role": "assistant", "content": f"Waiting for approval of: {names}.", "status": "awaiting_approval",
            "finish_reason": None, "pending_approvals": [dict(c, input_id=inbox.input_id, seq=inbox.seq) for c in left],
            "input_ids": [inbox.input_id], "seq": [inbox.seq, *steered]}


def waiting_answer(store: ConversationStore, conversation_id: str, seq: int) -> dict[str, Any] | None:
    """The answer dict of input ``seq`` while its run waits for approval, else None.

    ``{"role": "assistant", "content": "Waiting for approval of: ...", "status": "awaiting_approval",
    "pending_approvals": [...], "input_ids": [...], "seq": [seq]}``: what ``Agent.ask`` answered
    when the run stopped, rebuilt from the store for a process that did not serve it.

    Raises:
        StoreError: the store failed.
    """
    found = _waiting(store, conversation_id)
    if found is None or found[0].seq != seq:
        return None
    return still_waiting(found[1], found[0])


def supersede(store: ConversationStore, conversation_id: str, seq: int, journal: Steps) -> None:
    """Reject the undecided calls of run ``seq`` when a new input waits after it (not one steered into it).

    Written through ``journal`` (fenced by the serving lease); a decision recorded meanwhile by
    another process stands.

    Raises:
        StoreError: the store failed.
    """
    left = undecided(journal)
    if not left:
        return
    steered = {q for k, v in journal.recorded.items() if k.startswith("steer/") and isinstance(v, list) for q in v}
    if any(e.seq > seq and e.seq not in steered for e in store.pending(conversation_id)):
        with contextlib.suppress(ApprovalError):
            record_decisions(journal, {c["tool_call_id"]: SUPERSEDED_REASON for c in left})
