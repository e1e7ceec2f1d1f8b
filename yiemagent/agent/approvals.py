"""The ``Agent`` methods of approvals: ``pending_approvals``, ``approve``, ``reject``, ``decide``.

Mixed into ``Agent`` (``yiemagent.agent``). The rules are in
``yiemagent.tools.approvals``; the pending calls and decisions live in the
conversation (in memory without a store, in the store's journal with one),
never in the client's hands.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from .._internal.checks import check_number
from ..exceptions import AgentClosedError, AgentError
from ..loop.conversation import Conversation, Input
from ..output.answers import Answer

__all__ = ["Approvals"]

logger = logging.getLogger("yiemagent.agent")

_POLL_SECONDS = 0.1


class Approvals:
    """Deciding about tool calls that wait for a person (mixed into ``Agent``; uses its attributes)."""

    conversation: Conversation
    _thread: threading.Thread | None
    _closed: bool
    _closed_reason: str

    def pending_approvals(self) -> list[dict[str, Any]]:
        """The tool calls waiting for a decision, oldest first.

        Returns:
            ``[{"tool_call_id", "name", "arguments", "input_id"}]`` (with a store also
            ``"seq"``, the input's inbox seq), read from the conversation (the store with
            one: any process sees them). ``[]`` when no run waits.

        Raises:
            StoreError: the store failed.
        """
        return self.conversation.pending_approvals()

    def approve(self, tool_call_id: str, *, timeout_seconds: float | None = None) -> Answer:
        """Approve one waiting call; see ``decide``."""
        return self.decide({tool_call_id: True}, timeout_seconds=timeout_seconds)

    def reject(self, tool_call_id: str, reason: str = "", *, timeout_seconds: float | None = None) -> Answer:
        """Reject one waiting call; the model gets an error result with ``reason``; see ``decide``."""
        return self.decide({tool_call_id: reason or False}, timeout_seconds=timeout_seconds)

    def decide(self, decisions: Mapping[str, bool | str], *, timeout_seconds: float | None = None) -> Answer:
        """Record decisions about waiting calls; once the run has none left undecided, resume it.

        Args:
            decisions: ``{tool_call_id: True}`` approves, ``{tool_call_id: False}`` or
                ``{tool_call_id: "reason"}`` rejects (the reason goes to the model).
            timeout_seconds: how long to wait for the resumed run's answer; None: no limit.

        Returns:
            The answer dict of the resumed run (``status`` ``completed``, or
            ``awaiting_approval`` again when the model asks for another such call), or,
            while calls of the run are still undecided, ``{"role": "assistant",
            "content": ..., "status": "awaiting_approval", "pending_approvals": [...]}``
            without running anything. Safe from any thread and, with a store, any process:
            the run resumes in the caller (``ask`` before ``start``) or on the agent thread.

        Raises:
            ApprovalError: a ``tool_call_id`` not waiting for approval here (never asked, made up,
                from a restored state), already decided (also by a concurrent request or another
                process), or a malformed decision. Nothing was decided.
            TimeoutError: the resumed run gave no answer in ``timeout_seconds`` (it goes on).
            AgentClosedError: the agent was shut down. AgentError: called from inside its own run.
            StoreError: the store failed.
        """
        check_number("timeout_seconds", timeout_seconds, positive=False, optional=True)
        if self._closed:
            raise AgentClosedError(self._closed_reason)
        if self._inside():
            raise AgentError("decide() from inside this agent's own run would wait for itself")
        left, resume = self.conversation.decide(dict(decisions))
        if resume is None:
            names = ", ".join(str(c.get("name")) for c in left)
            return cast(Answer, {"role": "assistant", "content": f"Waiting for approval of: {names}.",
                                 "status": "awaiting_approval", "pending_approvals": left,
                                 "input_ids": sorted({str(c.get("input_id")) for c in left})})
        entry = Input(message=resume.message, id=resume.id)
        logger.info("every waiting call of input %s is decided; resuming its run", entry.id)
        if self._thread is None:
            return self.ask(entry, timeout_seconds=timeout_seconds)
        deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
        future = self.submit(entry, timeout_seconds=timeout_seconds)
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError(f"the resumed run gave no answer within {timeout_seconds}s (it goes on)")
            try:
                return future.result(timeout=_POLL_SECONDS if remaining is None else min(_POLL_SECONDS, remaining))
            except concurrent.futures.TimeoutError:
                continue

    if TYPE_CHECKING:  # provided by Agent
        def ask(self, text: Any, timeout_seconds: float | None = None) -> Answer: ...

        def submit(self, message: Any, *,
                   timeout_seconds: float | None = None) -> concurrent.futures.Future[Answer]: ...

        def _inside(self) -> bool: ...
