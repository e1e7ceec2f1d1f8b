"""Journal: the seam through which the loop records and replays the steps of a run.

The loop (``run_turns(..., journal=...)``) calls, in this order:

* ``replay_model(turn)`` before a model call: a recorded reply is used and the
  model is not asked again; else, after the call, ``record_model(turn,
  reply)``, whose return value the loop goes on with (first write wins: a
  reply recorded meanwhile by another process is the one used);
* per tool call: ``recorded_result(call)`` (a result recorded before: the tool
  is not run again), then ``interrupted_result(call, tool)`` (the call was
  started but its result never recorded: an error result "interrupted, effect
  unknown", or None when the tool is safe to repeat and runs again), then,
  right before the tool runs, ``tool_started(call)``, and on the worker thread
  the moment the result exists, ``tool_result(call, result)``.

Order guarantees (crash tests rely on them): ``model/<turn>`` is recorded
before any tool of that reply starts; ``started/<id>`` before the tool runs;
``tool/<id>`` on the tool's worker thread as soon as it returns, before
``after_tool_call`` runs and before the run commits. A crash anywhere after a
``tool/<id>`` write therefore never runs that call again.

``StoreJournal`` keeps these steps in a ``ConversationStore`` under the run's
key (see ``yiemagent.store`` for the step keys). Inside a running tool,
``current_idempotency_key()`` gives the call's stable key; hooks find it in
``ToolCallContext.idempotency_key``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from .messages import AssistantMessage, ToolCall, ToolResultMessage, message_from_dict, message_to_dict
from .store import ConversationStore, idempotency_key
from .tools import AgentTool, AgentToolResult

__all__ = ["Journal", "StoreJournal", "current_idempotency_key", "idempotency_context"]

logger = logging.getLogger("yiemagent.journal")

_local = threading.local()


def current_idempotency_key() -> str | None:
    """The stable idempotency key of the tool call running on this thread, or None.

    ``"<conversation_id>:<run key>:<tool_call_id>"``: the same after a crash
    and replay in any process, so an external API given it (an
    ``Idempotency-Key`` header, a unique request id) performs the effect once.
    None outside a tool, or when the agent has no store.
    """
    return getattr(_local, "key", None)


@contextmanager
def idempotency_context(key: str | None) -> Iterator[None]:
    """While the block runs on this thread, ``current_idempotency_key()`` returns ``key``."""
    previous = getattr(_local, "key", None)
    _local.key = key
    try:
        yield
    finally:
        _local.key = previous


class Journal(Protocol):
    """What the loop asks of a journal (see the module docstring for the order)."""

    def idempotency_key(self, call: ToolCall) -> str | None:
        """The call's stable key (``current_idempotency_key`` while it runs)."""
        ...

    def replay_model(self, turn: int) -> AssistantMessage | None:
        """The reply recorded for ``turn`` (1-based), or None."""
        ...

    def record_model(self, turn: int, reply: AssistantMessage) -> AssistantMessage:
        """Record ``reply`` unless one is recorded; return the recorded one."""
        ...

    def recorded_result(self, call: ToolCall) -> AgentToolResult | None:
        """The result recorded for ``call``, or None."""
        ...

    def interrupted_result(self, call: ToolCall, tool: AgentTool | None) -> AgentToolResult | None:
        """An error result if ``call`` started without a recorded result and must not run again; else None."""
        ...

    def tool_started(self, call: ToolCall) -> None:
        """Record that ``call`` is about to run (before it runs)."""
        ...

    def tool_result(self, call: ToolCall, result: AgentToolResult) -> AgentToolResult:
        """Record ``result`` unless one is recorded; return the recorded one."""
        ...


def result_to_dict(call: ToolCall, result: AgentToolResult) -> dict[str, Any]:
    """A tool result as journal JSON: the ``ToolResultMessage`` dict plus ``terminate``."""
    message = ToolResultMessage(call.id, list(result.content), tool_name=call.name, is_error=result.is_error,
                                details=result.details)
    data = message_to_dict(message)
    data["terminate"] = result.terminate
    return data


def result_from_dict(data: dict[str, Any]) -> AgentToolResult:
    """Inverse of ``result_to_dict``."""
    message = message_from_dict(data)
    assert isinstance(message, ToolResultMessage)
    return AgentToolResult(list(message.content), is_error=message.is_error, terminate=bool(data.get("terminate")),
                           details=message.details)


def _same(value: Any, stored: Any) -> bool:
    """True when ``stored`` is what we wrote (JSON values compare equal); else another writer was first."""
    return bool(value == stored)


class StoreJournal:
    """The journal of one run, kept in a ``ConversationStore``.

    Args:
        store: the store.
        conversation_id: the conversation.
        run: the run key (``yiemagent.store.run_key(first seq)``).

    The steps recorded before (by an interrupted run of the same key) are read
    once, here. Writes go to the store at once; a ``StoreError`` from it ends
    the run with status ``error`` (the input stays in the inbox).
    """

    def __init__(self, store: ConversationStore, conversation_id: str, run: str) -> None:
        self.store = store
        self.conversation_id = conversation_id
        self.run = run
        self.recorded = store.steps(conversation_id, run)
        """Steps found at the start: ``{step key: value}``."""
        self.replayed_models = 0
        self.replayed_results = 0
        self.interrupted = 0

    def __repr__(self) -> str:
        return f"StoreJournal({self.conversation_id!r}, {self.run!r}, {len(self.recorded)} steps recorded)"

    def idempotency_key(self, call: ToolCall) -> str:
        """``"<conversation_id>:<run key>:<tool_call_id>"``."""
        return idempotency_key(self.conversation_id, self.run, call.id)

    def replay_model(self, turn: int) -> AssistantMessage | None:
        """The reply recorded for ``turn``, or None."""
        data = self.recorded.get(f"model/{turn}")
        if data is None:
            return None
        reply = message_from_dict(data)
        if not isinstance(reply, AssistantMessage):
            return None
        self.replayed_models += 1
        logger.info("%s: turn %d replayed from the journal (the model is not asked again)", self, turn)
        return reply

    def record_model(self, turn: int, reply: AssistantMessage) -> AssistantMessage:
        """Record ``reply``; return the recorded one (another writer's, if first)."""
        value = message_to_dict(reply)
        stored = self.store.put_step(self.conversation_id, self.run, f"model/{turn}", value)
        if _same(value, stored):
            return reply
        winner = message_from_dict(stored)
        return winner if isinstance(winner, AssistantMessage) else reply

    def recorded_result(self, call: ToolCall) -> AgentToolResult | None:
        """The result recorded for ``call``, or None."""
        data = self.recorded.get(f"tool/{call.id}")
        if data is None:
            return None
        self.replayed_results += 1
        logger.info("%s: result of %s (%s) replayed from the journal (not run again)", self, call.id, call.name)
        return result_from_dict(data)

    def interrupted_result(self, call: ToolCall, tool: AgentTool | None) -> AgentToolResult | None:
        """Error result for a call that started but left no result, unless the tool is idempotent."""
        if f"started/{call.id}" not in self.recorded or f"tool/{call.id}" in self.recorded:
            return None
        if tool is not None and getattr(tool, "idempotent", False):
            logger.info("%s: %s (%s) was interrupted; its tool is idempotent, so it runs again", self, call.id,
                        call.name)
            return None
        self.interrupted += 1
        key = self.idempotency_key(call)
        result = AgentToolResult.error(
            f"Tool {call.name!r} was interrupted: the process running it stopped before its result was "
            "recorded, so its effect is unknown (it may or may not have happened). It was not run again; "
            "check before repeating it.",
            details={"interrupted": True, "idempotency_key": key},
        )
        logger.warning("%s: %s (%s) was interrupted; reported to the model, not run again", self, call.id, call.name)
        return self.tool_result(call, result)

    def tool_started(self, call: ToolCall) -> None:
        """Record ``started/<id>`` before the tool runs."""
        self.store.put_step(self.conversation_id, self.run, f"started/{call.id}",
                            {"name": call.name, "at": time.time()})

    def tool_result(self, call: ToolCall, result: AgentToolResult) -> AgentToolResult:
        """Record the result; return the recorded one (another writer's, if first)."""
        value = result_to_dict(call, result)
        stored = self.store.put_step(self.conversation_id, self.run, f"tool/{call.id}", value)
        return result if _same(value, stored) else result_from_dict(stored)
