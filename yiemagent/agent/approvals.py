"""Approvals, a part of ``Agent``: ``pending_approvals`` and ``decide`` (``approve``/``reject`` are ``decide``).

``Agent`` delegates these four methods to ``Approvals``. The rules are in
``yiemagent.tools.approvals``; the pending calls and decisions live in the
conversation (in memory without a store, in the store's journal with one),
never in the client's hands.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol, cast

from .._internal.checks import check_number
from ..exceptions import AgentClosedError, AgentError, ApprovalError
from ..loop.conversation import Conversation, Input
from ..output.answers import Answer
from .lifecycle import Lifecycle
from .runs import Runs

__all__ = ["AgentLike", "Approvals"]

logger = logging.getLogger("yiemagent.agent")

_POLL_SECONDS = 0.1


class AgentLike(Protocol):
    """What the parts ``Approvals`` and ``AgentAsTool`` use of an ``Agent``: public members only."""

    name: str
    conversation: Conversation

    def ask(self, text: Any, timeout_seconds: float | None = None) -> Answer:  # noqa: D102
        ...

    def submit(self, message: Any, *, timeout_seconds: float | None = None  # noqa: D102
               ) -> concurrent.futures.Future[Answer]: ...


class Approvals:
    """Deciding about tool calls that wait for a person (a part of ``Agent``).

    Args:
        agent: the agent, used through its public methods only (``conversation``, ``ask``, ``submit``);
            a weak proxy, so that this part does not keep it alive.
        lifecycle: its thread and stop state (``yiemagent.agent.lifecycle``).
        runs: its run in progress (``inside()``: a decision from inside its own run would wait for itself).
    """

    def __init__(self, agent: AgentLike, lifecycle: Lifecycle, runs: Runs) -> None:
        self._agent = agent
        self._lifecycle = lifecycle
        self._runs = runs

    @property
    def conversation(self) -> Conversation:
        """The agent's conversation, where the waiting calls and decisions live."""
        return self._agent.conversation

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
        if self._lifecycle.closed:
            raise AgentClosedError(self._lifecycle.closed_reason)
        if self._runs.inside():
            raise AgentError("decide() from inside this agent's own run would wait for itself")
        if not isinstance(decisions, Mapping):
            raise ApprovalError(f"decisions must be a mapping {{tool_call_id: True | False | 'reason'}}, not "
                                f"{type(decisions).__name__} {decisions!r:.60}; to approve one call: "
                                "approve(tool_call_id)")
        left, resume = self.conversation.decide(dict(decisions))
        if resume is None:
            names = ", ".join(str(c.get("name")) for c in left)
            return cast(Answer, {"role": "assistant", "content": f"Waiting for approval of: {names}.",
                                 "status": "awaiting_approval", "pending_approvals": left,
                                 "input_ids": sorted({str(c.get("input_id")) for c in left})})
        entry = Input(message=resume.message, id=resume.id)
        logger.info("every waiting call of input %s is decided; resuming its run", entry.id)
        if self._lifecycle.thread is None:
            return self._agent.ask(entry, timeout_seconds=timeout_seconds)
        deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
        future = self._agent.submit(entry, timeout_seconds=timeout_seconds)
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError(f"the resumed run gave no answer within {timeout_seconds}s (it goes on)")
            try:
                return future.result(timeout=_POLL_SECONDS if remaining is None else min(_POLL_SECONDS, remaining))
            except concurrent.futures.TimeoutError:
                continue
