"""StoreJournal: the loop's journal (``yiemagent.loop.journal.Journal``) kept in a ``ConversationStore``.

Step keys under a run (``run_key(first seq)``): ``model/<turn>`` (the reply of
that turn), ``started/<tool_call_id>`` (written right before the tool runs),
``tool/<tool_call_id>`` (its result, with ``terminate``), ``steer/<n>`` (the
inbox seqs a steering poll took), ``approval/<turn>`` (the calls of that turn waiting for a person)
and ``decision/<tool_call_id>`` (a person's decision; ``yiemagent.tools.approvals``). The first write of a key wins
(``ConversationStore.put_step``); the loop goes on with the winner.

Writes per tool call: a model reply asking for tools is held back and
written with the ``started/<id>`` marker of its first call, in one
transaction (``store.put_steps``), before that call runs (a crash before it
only means the model is asked that turn again; any other write, and
``flush()`` at the end of the run, writes a held reply first); then
``tool/<id>`` the moment the result exists. Two commits per call, not three.
Stores without ``put_steps``, and unfenced journals, write each step at once.

Given the run's ``lease``, every write is fenced by it (as ``commit`` is): a
holder whose lease was taken writes nothing. A ``started/<id>`` marker that is
not the one this journal wrote means the call was started elsewhere: it is
never run again (``tool_started`` raises ``StaleStateError``, the run ends
without a commit, and the next run of the key reports the call "interrupted,
effect unknown"). Any ``StoreError`` of a write is kept in ``failed``: the
run's answer must not be committed (the input stays pending; the call that
ran is found in the journal, or reported "interrupted", by the next run).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import MutableMapping
from typing import Any

from ..exceptions import FormatError, StaleStateError, StoreError
from ..messages import AssistantMessage, ToolCall, ToolResultMessage, message_from_dict, message_to_dict
from ..tools import AgentTool, AgentToolResult
from .base import ConversationStore, CorruptRowError, Lease, idempotency_key

__all__ = ["StoreJournal", "result_from_dict", "result_to_dict"]

logger = logging.getLogger("yiemagent.store.journal")


def result_to_dict(call: ToolCall, result: AgentToolResult) -> dict[str, Any]:
    """A tool result as journal JSON: the ``ToolResultMessage`` dict plus ``terminate`` and ``usage`` (when set)."""
    message = ToolResultMessage(call.id, list(result.content), tool_name=call.name, is_error=result.is_error,
                                details=result.details)
    data = message_to_dict(message)
    data["terminate"] = result.terminate
    if result.usage is not None:
        data["usage"] = result.usage
    return data


def result_from_dict(data: dict[str, Any]) -> AgentToolResult:
    """Inverse of ``result_to_dict``."""
    try:
        message = message_from_dict(data)
    except FormatError as exc:
        raise CorruptRowError(f"a journaled tool result is not a tool result: {exc}"[:300]) from exc
    if not isinstance(message, ToolResultMessage) or not isinstance(data, dict):
        raise CorruptRowError(f"a journaled tool result is not a tool result: {data!r:.100}")
    usage = data.get("usage")
    return AgentToolResult(list(message.content), is_error=message.is_error, terminate=bool(data.get("terminate")),
                           details=message.details, usage=usage if isinstance(usage, dict) else None)


def _same(value: Any, stored: Any) -> bool:
    """True when ``stored`` is what we wrote (JSON values compare equal); else another writer was first."""
    return stored is value or bool(value == stored)


class StoreJournal:
    """The journal of one run, kept in a ``ConversationStore``.

    Args:
        store: the store.
        conversation_id: the conversation.
        run: the run key (``yiemagent.store.run_key(first seq)``).
        lease: the lease the run is served under; every write is fenced by it. None: unfenced.
        unrecorded: results of calls this process ran whose ``tool/`` write failed, by
            ``(run, tool_call_id)``; a later run of the key in this process records them
            instead of reporting the call interrupted (shared by the conversation's runs).

    The steps recorded before (by an interrupted run of the same key) are read
    once, here. Writes go to the store at once; a ``StoreError`` from one ends
    the run with status ``error`` and is kept in ``failed``.

    Raises:
        StoreError: the journal could not be read (``CorruptRowError``: a corrupt row).
    """

    def __init__(self, store: ConversationStore, conversation_id: str, run: str, *, lease: Lease | None = None,
                 unrecorded: MutableMapping[tuple[str, str], dict[str, Any]] | None = None) -> None:
        self.store = store
        self.conversation_id = conversation_id
        self.run = run
        self.lease = lease
        self.unrecorded: MutableMapping[tuple[str, str], dict[str, Any]] = {} if unrecorded is None else unrecorded
        self.recorded = store.steps(conversation_id, run)
        """Steps found at the start: ``{step key: value}``."""
        self.replayed_models = 0
        self.replayed_results = 0
        self.interrupted = 0
        self.failed: StoreError | None = None
        """The first store failure of a write: the run's answer must not be committed."""
        self._rerun: set[str] = set()  # interrupted idempotent calls allowed to run again
        # a model reply with tool calls, held back to be written in one transaction with the next
        # write (its first call's "started" marker): written before any tool of it starts
        self._held: list[tuple[str, Any]] = []
        self._held_lock = threading.Lock()  # held while the held reply is written: no write overtakes it
        self._put_steps = getattr(store, "put_steps", None) if lease is not None else None

    def put(self, step: str, value: Any) -> Any:
        """``store.put_step`` fenced by the lease; return the stored value.

        A model reply held back (``record_model``) is written first, in the same transaction.

        Raises:
            StoreError: the write failed or was refused (``StaleStateError``: the lease was
                lost; or the held reply's turn was recorded with another reply: ``"started"``);
                kept in ``failed`` too.
        """
        if self._held:
            with self._held_lock:
                if self._held:
                    return self._put_with_held(step, value)
        try:
            if self.lease is None:
                return self.store.put_step(self.conversation_id, self.run, step, value)
            return self.store.put_step(self.conversation_id, self.run, step, value, lease=self.lease)
        except StoreError as exc:
            if self.failed is None:
                self.failed = exc
            raise

    def _put_with_held(self, step: str | None, value: Any) -> Any:
        """Write the held replies and (unless None) ``step`` in one transaction; ``step``'s stored value."""
        assert self._put_steps is not None
        held = list(self._held)
        steps = held if step is None else [*held, (step, value)]
        try:
            stored = self._put_steps(self.conversation_id, self.run, steps, lease=self.lease)
            self._held.clear()
            for (key, mine), theirs in zip(held, stored[:len(held)], strict=True):
                if not _same(mine, theirs):  # only a writer holding this run's lease could: it is not ours
                    raise StaleStateError(f"journal step {self.run}/{key} of {self.conversation_id!r} was recorded "
                                          "by another writer; the calls of this reply are not run",
                                          conversation_id=self.conversation_id, reason="started")
        except StoreError as exc:
            self._held.clear()  # not written (or not ours): no tool of that reply runs; a replay asks again
            if self.failed is None:
                self.failed = exc
            raise
        return None if step is None else stored[-1]

    def flush(self) -> None:
        """Write a model reply still held back (its calls never started: the run ended first).

        Raises:
            StoreError: the write failed (kept in ``failed``).
        """
        if self._held:
            with self._held_lock:
                if self._held:
                    self._put_with_held(None, None)

    def __repr__(self) -> str:
        return f"StoreJournal({self.conversation_id!r}, {self.run!r}, {len(self.recorded)} steps recorded)"

    def idempotency_key(self, call: ToolCall) -> str:
        """``"<conversation_id>:<run key>:<tool_call_id>"``."""
        return idempotency_key(self.conversation_id, self.run, call.id)

    def replay_model(self, turn: int) -> AssistantMessage | None:
        """The reply recorded for ``turn``, or None.

        Raises:
            CorruptRowError: the recorded reply is not an assistant message (kept in ``failed``).
        """
        data = self.recorded.get(f"model/{turn}")
        if data is None:
            return None
        reply = self._recorded_reply(turn, data)
        self.replayed_models += 1
        logger.info("%s: turn %d replayed from the journal (the model is not asked again)", self, turn)
        return reply

    def record_model(self, turn: int, reply: AssistantMessage) -> AssistantMessage:
        """Record ``reply``; return the recorded one (another writer's, if first).

        Raises:
            StoreError: the write failed (``StaleStateError``: the lease was lost), or the
                recorded reply is corrupt (``CorruptRowError``).
        """
        value = message_to_dict(reply)
        if reply.tool_calls and self._put_steps is not None:
            # held back until the next write, the first call's "started" marker: one transaction for both,
            # still before any tool of this reply runs (a crash before it only means asking the model again)
            with self._held_lock:
                self._held.append((f"model/{turn}", value))
            return reply
        stored = self.put(f"model/{turn}", value)
        if _same(value, stored):
            return reply
        return self._recorded_reply(turn, stored)

    def _recorded_reply(self, turn: int, data: Any) -> AssistantMessage:
        """The reply recorded for ``turn``; ``CorruptRowError`` if it is not an assistant message."""
        try:
            reply = message_from_dict(data)
        except FormatError as exc:
            raise self._corrupt(f"model/{turn}", exc) from exc
        if not isinstance(reply, AssistantMessage):
            raise self._corrupt(f"model/{turn}", data)
        return reply

    def _corrupt(self, step: str, what: Any) -> CorruptRowError:
        exc = CorruptRowError(f"journal step {self.run}/{step} of {self.conversation_id!r} is corrupt: {what!s:.200}",
                              conversation_id=self.conversation_id)
        if self.failed is None:
            self.failed = exc
        return exc

    def recorded_result(self, call: ToolCall) -> AgentToolResult | None:
        """The result recorded for ``call``, or None."""
        data = self.recorded.get(f"tool/{call.id}")
        if data is None:
            return None
        self.replayed_results += 1
        logger.info("%s: result of %s (%s) replayed from the journal (not run again)", self, call.id, call.name)
        try:
            return result_from_dict(data)
        except CorruptRowError as exc:  # the call ran; what it returned is unreadable: its effect is unknown
            logger.warning("%s: %s", self, exc)
            return AgentToolResult.error(
                f"Tool {call.name!r} ran, but its recorded result is unreadable ({exc}); it was not run again.",
                details={"interrupted": True, "idempotency_key": self.idempotency_key(call)})

    def interrupted_result(self, call: ToolCall, tool: AgentTool | None) -> AgentToolResult | None:
        """Error result for a call that started but left no result, unless the tool is idempotent."""
        if f"started/{call.id}" not in self.recorded or f"tool/{call.id}" in self.recorded:
            return None
        known = self.unrecorded.get((self.run, call.id))
        if known is not None:  # this process ran it and holds its result: record it now
            logger.info("%s: result of %s (%s) recorded late (its first write failed); not run again", self,
                        call.id, call.name)
            result = self.tool_result(call, result_from_dict(known))
            self.unrecorded.pop((self.run, call.id), None)
            return result
        if tool is not None and getattr(tool, "idempotent", False):
            self._rerun.add(call.id)
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
        """Record ``started/<id>`` before the tool runs.

        Raises:
            StaleStateError: the marker found is not ours (started elsewhere: the call must not run;
                reason ``"started"``), or the lease was lost (``"lease"``).
            StoreError: the store failed (the call must not run).
        """
        value = {"name": call.name, "at": time.time(), "owner": None if self.lease is None else self.lease.owner,
                 "attempt": uuid.uuid4().hex}
        stored = self.put(f"started/{call.id}", value)
        if not _same(value, stored) and call.id not in self._rerun:
            owner = stored.get("owner") if isinstance(stored, dict) else None
            exc = StaleStateError(f"{call.id} ({call.name}) of {self.conversation_id!r} was started elsewhere "
                                  f"(by {owner!r}); it is not run again", conversation_id=self.conversation_id,
                                  reason="started")
            if self.failed is None:
                self.failed = exc
            logger.warning("%s: %s", self, exc)
            raise exc

    def tool_result(self, call: ToolCall, result: AgentToolResult) -> AgentToolResult:
        """Record the result; return the recorded one (another writer's, if first).

        Raises:
            StoreError: the write failed (kept in ``unrecorded`` unless the lease was lost).
        """
        value = result_to_dict(call, result)
        try:
            stored = self.put(f"tool/{call.id}", value)
        except StaleStateError:
            raise
        except StoreError:
            self.unrecorded[(self.run, call.id)] = value
            raise
        return result if _same(value, stored) else result_from_dict(stored)
