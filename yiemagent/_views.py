"""The conversation as ``Agent`` shows it: ``history``, ``usage``, ``config``, its OpenAI form and saved state.

A mixin of ``Agent``: each member reads or sets ``self.conversation``
(``yiemagent.conversation.Conversation``), so the agent drives the
conversation through its contract only.
"""

from __future__ import annotations

from typing import Any

from .conversation import Conversation
from .loop import LoopConfig
from .messages import Message

__all__ = ["ConversationViews"]


class ConversationViews:
    """``Agent``'s views of its conversation (see ``yiemagent.agent``)."""

    conversation: Conversation

    @property
    def history(self) -> list[Message]:
        """The conversation (yiemagent messages; no system prompt): ``conversation.history``."""
        return self.conversation.history

    @history.setter
    def history(self, messages: list[Message]) -> None:
        self.conversation.history = messages

    @property
    def usage(self) -> dict[str, Any]:
        """Token counts summed over every run (from replies that report ``usage``)."""
        return self.conversation.usage

    @usage.setter
    def usage(self, usage: dict[str, Any]) -> None:
        self.conversation.usage = usage

    @property
    def config(self) -> LoopConfig:
        """Model, tools, hooks and limits of every run (``yiemagent.loop.LoopConfig``)."""
        return self.conversation.config

    @config.setter
    def config(self, config: LoopConfig) -> None:
        self.conversation.config = config

    @property
    def mcp_required(self) -> bool:
        """Answer an error while an MCP server cannot be reached (``conversation.mcp_required``)."""
        return self.conversation.mcp_required

    @mcp_required.setter
    def mcp_required(self, required: bool) -> None:
        self.conversation.mcp_required = required

    def openai_messages(self) -> list[dict[str, Any]]:
        """The conversation in OpenAI chat format, system prompt first; fresh dicts.

        Made valid by the request guard (``yiemagent.guard``), as every request
        is; messages of failed runs (``excluded``) are left out, as they are
        from every request (they stay in ``agent.history``).
        """
        return self.conversation.openai_messages()

    def state_to_json(self) -> str:
        """The conversation and usage as JSON text (yiemagent's own lossless form).

        Shape: ``{"version": 1, "history": [<message dict>, ...], "usage": {...},
        "system_prompt": str | null}``; tool-result ``details`` keep JSON values
        (anything else becomes ``{"repr": "..."}``). Call it between runs.
        """
        return self.conversation.state_to_json()
