"""StoreJournal: the loop's journal (``yiemagent.journal.Journal``) kept in a ``ConversationStore``.

Step keys under a run (``run_key(first seq)``): ``model/<turn>`` (the reply of
that turn), ``started/<tool_call_id>`` (written right before the tool runs),
``tool/<tool_call_id>`` (its result, with ``terminate``), ``steer/<n>`` (the
inbox seqs a steering poll took). The first write of a key wins
(``ConversationStore.put_step``); the loop goes on with the winner.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..messages import AssistantMessage, ToolCall, ToolResultMessage, message_from_dict, message_to_dict
from ..tools import AgentTool, AgentToolResult
from .base import ConversationStore, idempotency_key

__all__ = ["StoreJournal", "result_from_dict", "result_to_dict"]

logger = logging.getLogger("yiemagent.store.journal")


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
