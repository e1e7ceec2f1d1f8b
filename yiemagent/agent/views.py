"""The conversation as ``Agent`` shows it: ``history``, ``usage``, ``config``, its OpenAI form and saved state.

A mixin of ``Agent``: each member reads or sets ``self.conversation``
(``yiemagent.loop.conversation.Conversation``), so the agent drives the
conversation through its contract only.
"""

from __future__ import annotations

from typing import Any

from ..context.compaction import compact, compacted_view, request_tokens
from ..exceptions import AgentError
from ..loop import LoopConfig
from ..loop import events as ev
from ..loop.conversation import Conversation
from ..messages import Message

__all__ = ["ConversationViews"]


class ConversationViews:
    """``Agent``'s views of its conversation (see ``yiemagent.agent``)."""

    conversation: Conversation
    event_sink: ev.EventSink | None
    _current_run_id: str | None

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

        Made valid by the request guard (``yiemagent.messages.guard``), as every request
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

    def compact(self, focus: str | None = None) -> dict[str, Any] | None:
        """Compact the conversation now, between runs (``/compact`` in ``yiemagent chat``).

        The oldest messages are summarised as the automatic compaction does
        (``yiemagent.context.compaction``), keeping ``keep_recent_tokens`` verbatim; a
        ``compaction`` event (``reason="manual"``) goes to the event sink.

        Args:
            focus: what the summary should keep above all (e.g. "the order numbers").

        Returns:
            ``{"first_kept", "summarised_messages", "tokens_before", "tokens_after", "summary"}``,
            or None when the conversation is too short to lose anything.

        Raises:
            AgentError: no ``context_window``/``compaction`` was given, a run is in
                progress, or the conversation is in a store (it compacts inside runs).
            LLMError: the summariser failed; the conversation is unchanged.
        """
        config = self.config.compaction
        if config is None:
            raise AgentError("compact() needs Agent(..., context_window=N) or compaction=Compaction(...)")
        if self._current_run_id is not None:
            raise AgentError("compact() runs between runs; a run is in progress")
        if self.conversation.durable:
            raise AgentError("a conversation in a store is compacted inside its runs (compaction=True)")
        history = self.conversation.history
        before = self._request_tokens()
        done = compact(history, config, self.config.llm_call, force=True, focus=focus)
        if done is None:
            return None
        history.append(done.message)
        after = self._request_tokens()
        assert done.message.compaction is not None
        done.message.compaction.update(reason="manual", tokens_before=before, tokens_after=after)
        event = ev.CompactionEvent(reason="manual", tokens_before=before, tokens_after=after,
                                   first_kept=done.first_kept, summarised_messages=done.summarised_messages,
                                   summary=done.summary)
        ev.emit(self.event_sink, event)
        ev.observe(event)
        return {"first_kept": done.first_kept, "summarised_messages": done.summarised_messages,
                "tokens_before": before, "tokens_after": after, "summary": done.summary}

    def _request_tokens(self) -> int:
        """The size of the next request (no new input), in tokens."""
        config = self.config
        assert config.compaction is not None
        messages = config.format_messages(compacted_view(self.conversation.history))
        if config.system_prompt:
            messages = [{"role": "system", "content": config.system_prompt}, *messages]
        return request_tokens(self.conversation.history, messages, config.tools.to_openai(),
                              config.compaction.counter, calibrate=False)
