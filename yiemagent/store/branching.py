"""Branching a conversation kept in a ``ConversationStore``: fork to a new conversation, and operations as inputs.

``fork_conversation`` writes a **new conversation** whose committed state is the source's history up
to a message: a copy of that prefix in the new row's ``state`` (the state is one JSON text per
conversation, so a copy is what "copy-on-write" costs here: the source is never written, and the
two conversations share nothing after the fork). Written with the ordinary protocol (``acquire``
the new id's lease, ``commit`` at expected version 0, ``release``), so it works on any store that
passes the contract; an id already taken (version > 0) is refused, never overwritten. The fork
starts with an empty inbox and journal and ``usage`` ``{}``; its state carries no link to the source
(the caller keeps that if it wants it: the returned id and the source's version).

``branch_input`` builds the inbox message of a ``rewind``, ``edit`` or ``regenerate`` planned on
the committed state (``yiemagent.loop.branching``): put it in the inbox with ``store.enqueue`` and
serve it like any input (``Agent.drain``, ``yiemagent.workers.serve_input``); what web apps do
(``yiemagent.examples.flask_durable``), and what ``Agent.edit`` does through its own inbox.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from ..exceptions import BranchConflictError, StaleStateError
from ..loop.branching import (
    BRANCH_KEY,
    check_op,
    cut_point,
    plan_edit,
    plan_regenerate,
    plan_rewind,
    refuse_while_waiting,
)
from ..loop.state import parse_state, saved_state_text
from ..messages import Message, message_to_dict, to_openai
from . import approvals as store_approvals
from .base import ConversationStore

__all__ = ["branch_input", "committed_history", "fork_conversation"]


def committed_history(store: ConversationStore, conversation_id: str, *,
                      expected_version: int | None = None) -> tuple[list[Message], str | None, int]:
    """``(history, system_prompt, version)`` of the committed state (``[]``, None, 0 when never committed).

    Raises:
        BranchConflictError: ``expected_version`` is given and the conversation is at another version.
        FormatError: the stored state is not a saved state. StoreError: the store failed.
    """
    record = store.load(conversation_id)
    if expected_version is not None and record.version != expected_version:
        raise BranchConflictError(
            f"conversation {conversation_id!r} is at version {record.version}, not {expected_version}: reload it",
            conversation_id=conversation_id, expected_version=expected_version, actual_version=record.version,
            reason="version")
    if record.state is None:
        return [], None, record.version
    history, _, system_prompt = parse_state(record.state)
    return history, system_prompt, record.version


def fork_conversation(store: ConversationStore, conversation_id: str, at: int, *, new_id: str | None = None,
                      expected_version: int | None = None, owner: str | None = None) -> tuple[str, int]:
    """Copy ``conversation_id``'s committed history up to and including message ``at`` to a new conversation.

    Args:
        store: the store holding both.
        conversation_id: the source (never written).
        at: index of the last message kept (``yiemagent.loop.branching.cut_point``).
        new_id: the new conversation's id; None: ``"<source>~<8 hex>"``.
        expected_version: the source's version the caller read ``at`` on; None: the current one.
        owner: lease owner name used for the one commit; None: a random one.

    Returns:
        ``(new conversation id, the source's version it was copied from)``; the new one is at version 1.

    Raises:
        BranchError: ``at`` is out of range or would leave tool calls without results.
        BranchConflictError: the source moved from ``expected_version``, or ``new_id`` exists
            (reason ``"exists"``; nothing written).
        StoreError: the store failed.
    """
    history, system_prompt, version = committed_history(store, conversation_id, expected_version=expected_version)
    keep = cut_point(history, at)
    new_id = new_id or f"{conversation_id}~{uuid.uuid4().hex[:8]}"
    state = saved_state_text({"version": 1, "history": [message_to_dict(m) for m in history[:keep]], "usage": {},
                              "system_prompt": system_prompt})
    lease = store.acquire(new_id, owner or f"fork:{uuid.uuid4().hex[:8]}", ttl_seconds=30.0)
    if lease is None:
        raise BranchConflictError(f"conversation {new_id!r} is being served: it exists", conversation_id=new_id,
                                  reason="exists")
    try:
        store.commit(lease, expected_version=0, state=state)
    except StaleStateError as exc:
        raise BranchConflictError(f"conversation {new_id!r} already exists (version {exc.actual_version}): a fork "
                                  "never overwrites one", conversation_id=new_id, expected_version=0,
                                  actual_version=exc.actual_version, reason="exists") from exc
    finally:
        store.release(lease)
    return new_id, version


def branch_input(store: ConversationStore, conversation_id: str, op: Literal["edit", "regenerate", "rewind"], *,
                 index: int | None = None, text: Any = None, keep_tool_results: bool = False,
                 expected_version: int | None = None) -> dict[str, Any]:
    """The inbox message of a branching operation planned on the committed state (``store.enqueue`` it).

    Args:
        store: the store.
        conversation_id: the conversation.
        op: ``"edit"``, ``"regenerate"`` or ``"rewind"``.
        index: ``edit``: index of a user message; ``rewind``: of the last message kept (None: -1).
        text: ``edit``: the new text (``str`` or ``UserMessage``).
        keep_tool_results: ``regenerate``: keep the last turn's tool results (``Agent.regenerate``).
        expected_version: the version the caller read ``index`` on; None: the current one.

    Returns:
        An OpenAI user-message dict (the new text, the text sent again, or an empty text for a
        rewind) with the ``Branch`` under ``yiemagent.loop.branching.BRANCH_KEY``.

    Raises:
        ConfigError: ``op`` is not one of them (the nearest is named: ``"edti"``, did you mean ``"edit"``).
        BranchError: ``index`` addresses no valid point (see ``yiemagent.loop.branching``), or a run of the
            conversation waits for a person's decision (``pending_approvals``; nothing is changed).
        BranchConflictError: the conversation is not at ``expected_version``.
        FormatError: ``text`` is not a str or ``UserMessage``. StoreError: the store failed.
    """
    check_op(op)
    refuse_while_waiting(op, store_approvals.pending_approvals(store, conversation_id))
    history, _, version = committed_history(store, conversation_id, expected_version=expected_version)
    if op == "edit":
        branch, message = plan_edit(history, index if index is not None else -1, text)
        data = to_openai(message)
    elif op == "regenerate":
        branch, sent = plan_regenerate(history, keep_tool_results=keep_tool_results)
        data = to_openai(sent)
    else:
        branch, data = plan_rewind(history, index if index is not None else -1), {"role": "user", "content": ""}
    branch.base = version
    return {**data, BRANCH_KEY: branch.to_dict()}
