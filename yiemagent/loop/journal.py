"""Journal: the seam through which the loop records and replays the steps of a run.

The loop (``run_turns(..., journal=...)``) calls, in this order:

* ``replay_model(turn)`` before a model call: a recorded reply is used and the
  model is not asked again; else, after the call, ``record_model(turn,
  reply)``, whose return value the loop goes on with (first write wins: a
  reply recorded meanwhile by another process is the one used). A journal
  may hold a reply asking for tools back and write it with its next write
  (``StoreJournal``: with the first call's ``started/<id>``, one transaction);
  it is then written before any tool of it runs, and a write finding another
  reply recorded for that turn fails (the call does not run);
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
key (see ``yiemagent.store.base`` for the step keys). Inside a running tool,
``current_idempotency_key()`` gives the call's stable key; hooks find it in
``ToolCallContext.idempotency_key``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from ..messages import AssistantMessage, ToolCall
from ..tools import AgentTool, AgentToolResult

__all__ = ["Journal", "current_idempotency_key", "idempotency_context"]

logger = logging.getLogger("yiemagent.loop.journal")

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
