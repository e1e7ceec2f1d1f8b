"""Ready-made ``prepare_context`` strategies: what of a long history each request sends.

::

    Agent(llm, prepare_context=keep_last_turns(20))
    Agent(llm, prepare_context=drop_old_tool_results(keep_last=5))
    Agent(llm, prepare_context=chain(drop_old_tool_results(5), keep_last_turns(50)))

``prepare_context(history) -> history`` runs before each model call on the
history (yiemagent messages, no system prompt); the history itself is never
changed. Both strategies keep the pairs the request guard needs whole: a
turn starts at a user message, so cutting at turns never separates a tool
call from its result, and a dropped result body keeps its message (same
``tool_call_id``) with a short note in place of the text.

For summaries instead of cuts, see ``yiemagent.context.compaction``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..exceptions import ConfigError
from ..messages import Message, TextContent, ToolResultMessage, UserMessage

__all__ = ["PrepareContext", "chain", "drop_old_tool_results", "keep_last_turns"]

PrepareContext = Callable[[list[Message]], list[Message]]

DROPPED_NOTE = "[result of {name} left out to save room: it was {chars} characters]"


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be an int >= 1, not {value!r}")
    return value


def keep_last_turns(turns: int) -> PrepareContext:
    """Send only the last ``turns`` turns (a turn: a user message and everything up to the next one).

    Raises:
        ConfigError: ``turns`` is not an int >= 1.
    """
    _count("turns", turns)

    def prepare(history: list[Message]) -> list[Message]:
        starts = [i for i, m in enumerate(history) if isinstance(m, UserMessage)]
        if len(starts) <= turns:
            return list(history)
        return list(history[starts[-turns]:])

    return prepare


def drop_old_tool_results(keep_last: int, *, min_chars: int = 200) -> PrepareContext:
    """Replace the text of tool results older than the last ``keep_last`` with a one-line note.

    Results shorter than ``min_chars`` are kept as they are (the note would not
    be shorter). The messages stay, so every call keeps its result.

    Raises:
        ConfigError: ``keep_last`` is not an int >= 1 or ``min_chars`` not an int >= 1.
    """
    _count("keep_last", keep_last)
    _count("min_chars", min_chars)

    def prepare(history: list[Message]) -> list[Message]:
        results = [i for i, m in enumerate(history) if isinstance(m, ToolResultMessage)]
        old = set(results[:-keep_last])
        out: list[Message] = []
        for i, message in enumerate(history):
            if i in old and isinstance(message, ToolResultMessage) and len(message.text) >= min_chars:
                note = DROPPED_NOTE.format(name=message.tool_name or "a tool", chars=len(message.text))
                out.append(ToolResultMessage(message.tool_call_id, [TextContent(note)], tool_name=message.tool_name,
                                             is_error=message.is_error))
            else:
                out.append(message)
        return out

    return prepare


def chain(*strategies: PrepareContext) -> PrepareContext:
    """Apply ``strategies`` in order (each gets what the previous returned).

    Raises:
        ConfigError: a strategy is not callable.
    """
    for strategy in strategies:
        if not callable(strategy):
            raise ConfigError(f"chain() takes prepare_context callables, not {strategy!r}")
    steps: Sequence[PrepareContext] = strategies

    def prepare(history: list[Message]) -> list[Message]:
        for step in steps:
            history = step(history)
        return history

    return prepare
