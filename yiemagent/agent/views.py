"""``Agent.compact()``: compacting a conversation now, between runs.

``Agent``'s other views of its conversation (``history``, ``usage``, ``config``, ``openai_messages``,
``state_to_json``) are one-line properties of ``Agent`` reading ``agent.conversation``
(``yiemagent.loop.conversation.Conversation``); the agent drives the conversation through its contract only.
"""

from __future__ import annotations

from typing import Any

from ..context.compaction import compact, compacted_view, request_tokens
from ..exceptions import AgentError
from ..loop import events as ev
from ..loop.conversation import Conversation

__all__ = ["compact_now"]


def compact_now(conversation: Conversation, event_sink: ev.EventSink | None, *, running: bool,
                focus: str | None = None) -> dict[str, Any] | None:
    """``Agent.compact`` (see there): summarise the oldest messages of ``conversation`` now.

    Raises:
        AgentError: no compaction settings, a run is in progress (``running``), or the conversation is in a store.
        LLMError: the summariser failed; the conversation is unchanged.
    """
    config = conversation.config.compaction
    if config is None:
        raise AgentError("compact() needs Agent(..., context_window=N) or compaction=Compaction(...)")
    if running:
        raise AgentError("compact() runs between runs; a run is in progress")
    if conversation.durable:
        raise AgentError("a conversation in a store is compacted inside its runs (compaction=True)")
    history = conversation.history
    before = _request_tokens(conversation)
    done = compact(history, config, conversation.config.llm_call, force=True, focus=focus)
    if done is None:
        return None
    history.append(done.message)
    after = _request_tokens(conversation)
    assert done.message.compaction is not None
    done.message.compaction.update(reason="manual", tokens_before=before, tokens_after=after)
    event = ev.CompactionEvent(reason="manual", tokens_before=before, tokens_after=after,
                               first_kept=done.first_kept, summarised_messages=done.summarised_messages,
                               summary=done.summary)
    ev.emit(event_sink, event)
    ev.observe(event)
    return {"first_kept": done.first_kept, "summarised_messages": done.summarised_messages,
            "tokens_before": before, "tokens_after": after, "summary": done.summary}


def _request_tokens(conversation: Conversation) -> int:
    """The size of the next request (no new input), in tokens."""
    config = conversation.config
    assert config.compaction is not None
    messages = config.format_messages(compacted_view(conversation.history))
    if config.system_prompt:
        messages = [{"role": "system", "content": config.system_prompt}, *messages]
    return request_tokens(conversation.history, messages, config.tools.to_openai(),
                          config.compaction.counter, calibrate=False)
