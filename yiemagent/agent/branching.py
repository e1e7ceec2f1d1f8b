"""Branches, a part of ``Agent``: ``fork``, ``rewind``, ``edit`` and ``regenerate`` (issue 29).

``Agent`` delegates these four methods here. Where each cuts, and why a recorded tool call is never
run again by them, is in ``yiemagent.loop.branching``; with a store, ``yiemagent.store.branching``.

``rewind``, ``edit`` and ``regenerate`` are inputs of the conversation: each is planned on the
history as it is now (with a store: as committed, at its version), then served in order with the
other inputs (``ask``: before ``start()`` in the calling thread, after it on the agent's thread),
and answered like one. With a store it goes through the inbox and the commit, fenced by the
version it was planned on: of two workers editing the same conversation one wins, the other gets
``BranchConflictError`` (its input stays in the inbox, answered ``status: "conflict"``).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from ..exceptions import BranchConflictError, ConfigError
from ..loop.branching import (
    Branch,
    cut_point,
    history_token,
    plan_edit,
    plan_regenerate,
    plan_rewind,
    refuse_while_waiting,
)
from ..loop.conversation import Input
from ..mcp.bridge import MCPToolExecutor
from ..messages import Message, UserMessage
from ..output.answers import Answer
from .approvals import AgentLike

if TYPE_CHECKING:  # the store's modules load with the first store given
    from ..store.durable import DurableConversation

__all__ = ["Branches"]


def _durable(conversation: Any) -> DurableConversation | None:
    """``conversation`` when it is kept in a store (``DurableConversation``), else None."""
    if not getattr(conversation, "durable", False):
        return None
    from ..store.durable import DurableConversation

    return conversation if isinstance(conversation, DurableConversation) else None


class Branches:
    """Branching the agent's conversation (a part of ``Agent``).

    Args:
        agent: the agent, used through its public members only (``conversation``, ``ask``); a weak
            proxy, so that this part does not keep it alive.
    """

    def __init__(self, agent: AgentLike) -> None:
        self._agent = agent

    def _history(self, expected_version: int | None) -> tuple[list[Message], int | None]:
        """The history to plan on and its version (None in memory)."""
        conversation = self._agent.conversation
        durable = _durable(conversation)
        if durable is not None:
            from ..store.branching import committed_history

            history, _, version = committed_history(durable.store, durable.conversation_id,
                                                    expected_version=expected_version)
            return history, version
        if expected_version is not None:
            raise ConfigError("expected_version names a store's version: this agent has no store")
        return conversation.history, None

    def _not_waiting(self, operation: str) -> None:
        """Refuse ``operation`` while a run waits for a person's decision (nothing is changed)."""
        pending = getattr(self._agent, "pending_approvals", None)
        refuse_while_waiting(operation, pending() if callable(pending) else [])

    def _serve(self, branch: Branch, message: UserMessage, version: int | None,
               timeout_seconds: float | None) -> Answer:
        """Serve the operation as an input; raise ``BranchConflictError`` when it was refused."""
        branch.base = version
        if version is None:
            branch.expect = history_token(self._agent.conversation.history)
        entry = Input(message=message, id=uuid.uuid4().hex[:12], branch=branch)
        answer = self._agent.ask(entry, timeout_seconds)
        if answer.get("status") == "conflict":
            conversation = self._agent.conversation
            raise BranchConflictError(str(answer.get("error")), expected_version=version, reason="version",
                                      conversation_id=getattr(conversation, "conversation_id", ""),
                                      actual_version=getattr(conversation, "version", None))
        return answer

    def rewind(self, to: int, *, expected_version: int | None = None, timeout_seconds: float | None = None) -> Answer:
        """Cut the history back to ``history[to]`` (kept); no model call.

        Args:
            to: index in ``agent.history`` of the last message kept (negative: from the end).
            expected_version: with a store, the version the caller read ``to`` on; None: the current one.
            timeout_seconds: as ``ask``.

        Returns:
            The answer dict: ``content: ""``, ``status: "completed"``, ``branch: {"op", "keep", "base", "resume"}``.

        Raises:
            BranchError: ``to`` is out of range, the cut would leave tool calls without results, or a run
                waits for a person's decision (``pending_approvals``: decide first).
            BranchConflictError: the conversation moved since it was planned (another writer won).
            ConfigError: ``expected_version`` without a store. And what ``ask`` raises.
        """
        self._not_waiting("rewind")
        history, version = self._history(expected_version)
        return self._serve(plan_rewind(history, to), UserMessage(""), version, timeout_seconds)

    def edit(self, index: int, text: Any, *, expected_version: int | None = None,
             timeout_seconds: float | None = None) -> Answer:
        """Replace the user message ``history[index]`` with ``text`` and run the model again from there.

        Everything from ``history[index]`` on is cut; ``text`` is the input of a fresh run (tool calls
        of the cut branch are not replayed: the model decides again, and a tool it calls runs under
        the new run's idempotency key).

        Args:
            index: index in ``agent.history`` of a user message.
            text: the new text (``str``) or a ``UserMessage``.
            expected_version: as ``rewind``.
            timeout_seconds: as ``ask``.

        Returns:
            The new run's answer dict (as ``ask``), with ``branch``.

        Raises:
            BranchError: ``index`` is out of range or not a user message, or a run waits for a person's
                decision (``pending_approvals``: nothing is changed; decide first). FormatError: a bad ``text``.
            BranchConflictError, ConfigError: as ``rewind``. And what ``ask`` raises.
        """
        self._not_waiting("edit")
        history, version = self._history(expected_version)
        branch, message = plan_edit(history, index, text)
        return self._serve(branch, message, version, timeout_seconds)

    def regenerate(self, *, keep_tool_results: bool = False, expected_version: int | None = None,
                   timeout_seconds: float | None = None) -> Answer:
        """Answer the last user message again: its answer (tool calls and results too) is cut, the model asked anew.

        Args:
            keep_tool_results: keep the last turn's tool calls and results and ask only for a new final
                answer from them (no tool of that turn runs again).
            expected_version: as ``rewind``.
            timeout_seconds: as ``ask``.

        Returns:
            The new run's answer dict, with ``branch``.

        Raises:
            BranchError: no user message in the history, or a run waits for a person's decision.
            BranchConflictError, ConfigError: as ``rewind``.
        """
        self._not_waiting("regenerate")
        history, version = self._history(expected_version)
        branch, message = plan_regenerate(history, keep_tool_results=keep_tool_results)
        return self._serve(branch, message, version, timeout_seconds)

    def fork(self, at: int, agent_class: type[Any], kwargs: dict[str, Any]) -> Any:
        """A new agent whose conversation is a copy of this one's up to and including ``history[at]``.

        In memory: a new ``Agent`` (not started) whose history holds the same message objects (messages
        are never changed in place, so sharing them is copy-on-write); with a store: a new
        conversation written to the same store (``yiemagent.store.branching.fork_conversation``) and an
        ``Agent`` on it. ``kwargs`` are ``Agent()``'s; ``llm_call``, ``system_prompt`` and the local
        tools default to this agent's (hooks, MCP servers, limits are not copied: pass them);
        ``conversation_id`` names the new conversation (store only; None: ``"<id>~<8 hex>"``);
        ``expected_version``: the version ``at`` was read on.

        Raises:
            BranchError: ``at`` is out of range or the cut would leave tool calls without results.
            BranchConflictError: the source moved from ``expected_version``, or the new id exists.
            ConfigError: ``conversation_id`` or ``expected_version`` without a store.
        """
        conversation = self._agent.conversation
        kwargs = dict(kwargs)
        expected_version = kwargs.pop("expected_version", None)
        llm_call = kwargs.pop("llm_call", conversation.config.llm_call)
        kwargs.setdefault("system_prompt", conversation.config.system_prompt)
        kwargs.setdefault("tools", [t for t in conversation.config.tools
                                    if not isinstance(t.execute, MCPToolExecutor) and t.name != "list_tools"])
        durable = _durable(conversation)
        if durable is not None:
            from ..store.branching import fork_conversation

            new_id, _ = fork_conversation(durable.store, durable.conversation_id, at,
                                          new_id=kwargs.pop("conversation_id", None),
                                          expected_version=expected_version)
            kwargs.setdefault("store", durable.store)
            return agent_class(llm_call, conversation_id=new_id, **kwargs)
        if "conversation_id" in kwargs or expected_version is not None:
            raise ConfigError("conversation_id and expected_version name a store's conversation: this agent has none")
        keep = cut_point(conversation.history, at)
        forked = agent_class(llm_call, **kwargs)
        forked.history = list(conversation.history[:keep])
        return forked
