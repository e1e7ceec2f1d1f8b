"""Compaction: a long conversation sent as a summary of its oldest part plus its recent messages.

``Agent(..., compaction=Compaction(context_window=8192))`` (or ``compaction=True``
with ``context_window=``) keeps every request under ``context_window -
reserve_tokens`` tokens. Before a model call whose request would pass that
budget, the oldest part of the conversation is summarised with an
``llm_call`` (the agent's own by default) and the request is made of the
summary and the recent messages instead. The rules are those of pi's coding
agent (``docs/compaction.md`` of ``@mariozechner/pi-coding-agent``):

* the cut: walk back from the newest message adding up tokens until
  ``keep_recent_tokens`` are kept verbatim; the cut is moved forward to the
  next message that starts a turn (a user message) or, when a single turn is
  longer than that, to an assistant message inside it ("split turn"); it is
  never at a tool result, so a call and its result are never separated;
* the summary: a structured text (goal, progress, decisions, next steps, the
  facts: names, numbers, dates, ids) written by the model from the messages
  before the cut, in chunks that fit the window; a later compaction updates
  the earlier summary with the messages since ("iterative summaries");
* the history keeps everything: the compaction is one more message in it, a
  ``UserMessage`` whose ``compaction`` field says where the kept part starts
  (``first_kept``, an index into the history) and whose text is the summary.
  It is marked ``excluded`` so that nothing else sends it; ``compacted_view``
  puts it where it belongs. It is saved with the history (``state_to_json``,
  the store), so a compaction survives a restart.

Each compaction is reported by a ``compaction`` event
(``yiemagent.loop.events.CompactionEvent``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._internal.checks import one_of
from ..exceptions import ConfigError, LLMError
from ..messages import AssistantMessage, Message, TextContent, ToolResultMessage, UserMessage
from ..messages.openai import to_openai
from .token_budget import TokenCounter, estimate_tokens

__all__ = [
    "Compacted",
    "Compaction",
    "compact",
    "compacted_view",
    "compaction_setting",
    "find_cut",
    "is_compaction",
    "latest_compaction",
    "request_tokens",
    "summarise",
    "summary_head",
    "summary_message",
    "summary_text",
]

logger = logging.getLogger("yiemagent.context.compaction")

SUMMARY_PREFIX = "The conversation so far, summarised (its older messages were compacted):\n<summary>\n"
SUMMARY_SUFFIX = "\n</summary>"
EXCLUDED_REASON = "compaction summary: sent in place of the messages before compaction.first_kept"

SUMMARY_INSTRUCTIONS = """You summarise a conversation between a user and an AI assistant so that the \
assistant can go on with only your summary and the most recent messages.
Write these sections, short and factual:
## Goal
## Progress (done, in progress)
## Decisions
## Next steps
## Facts (every name, number, date, id, place, amount, preference and answer the user gave or the \
assistant found, one per line, exactly as written)
Never invent anything. Keep every fact of the existing summary unless a newer message changed it."""


@dataclass
class Compaction:
    """When and how to compact (see the module docstring).

    Args:
        context_window: tokens the model takes in one request (its context length).
        reserve_tokens: kept free for the reply; the budget of a request is
            ``context_window - reserve_tokens``. None: pi's 16,384, at most a
            quarter of the window.
        keep_recent_tokens: tokens of the newest messages kept verbatim. None:
            pi's 20,000, at most a third of the window.
        llm_call: the model that writes summaries, ``llm_call(messages, tools)``;
            None: the agent's own.
        counter: counts the tokens of a request (``yiemagent.context.token_budget``);
            default the cheap estimate.
        max_summary_tokens: a longer summary is cut to this many tokens
            (estimated); None: a sixth of the window.
        instructions: what the summariser is told (default ``SUMMARY_INSTRUCTIONS``).
        auto: compact by itself when a request would pass the budget, and once
            more when the server answers that a request was too long; False:
            only measure requests (``request_tokens``) and compact when asked
            (``Agent.compact()``, ``/compact``).

    Raises:
        ConfigError: a size that is not a positive int, or that leaves no room.
    """

    context_window: int
    reserve_tokens: int | None = None
    keep_recent_tokens: int | None = None
    llm_call: Callable[..., Any] | None = field(default=None, repr=False)
    counter: TokenCounter = field(default=estimate_tokens, repr=False)
    max_summary_tokens: int | None = None
    instructions: str = SUMMARY_INSTRUCTIONS
    auto: bool = True

    def __post_init__(self) -> None:
        for name in ("context_window", "reserve_tokens", "keep_recent_tokens", "max_summary_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ConfigError(f"Compaction({name}={value!r}): a positive int of tokens, or None")
        window = self.context_window
        if self.reserve_tokens is None:
            self.reserve_tokens = min(16_384, window // 4)
        if self.keep_recent_tokens is None:
            self.keep_recent_tokens = min(20_000, window // 3)
        if self.max_summary_tokens is None:
            self.max_summary_tokens = max(64, window // 6)
        if self.reserve_tokens + self.keep_recent_tokens + self.max_summary_tokens >= window:
            raise ConfigError(
                f"Compaction: reserve_tokens ({self.reserve_tokens}) + keep_recent_tokens "
                f"({self.keep_recent_tokens}) + max_summary_tokens ({self.max_summary_tokens}) must be less "
                f"than context_window ({window})")
        if not callable(self.counter):
            raise ConfigError("Compaction(counter=...) must be callable: counter(messages, tools) -> int")

    @property
    def budget(self) -> int:
        """Tokens a request may have: ``context_window - reserve_tokens``."""
        assert self.reserve_tokens is not None
        return self.context_window - self.reserve_tokens

    def message_tokens(self, message: Message) -> int:
        """The tokens of one history message, as sent."""
        return self.counter([to_openai(message)], [])


def is_compaction(message: Message) -> bool:
    """Whether ``message`` is a compaction summary (a ``UserMessage`` with ``compaction`` set)."""
    return isinstance(message, UserMessage) and isinstance(message.compaction, dict)


def latest_compaction(history: Sequence[Message]) -> tuple[int, int] | None:
    """``(index of the latest compaction message, its first_kept)``, or None when there is none.

    A ``first_kept`` out of range (a history edited by hand) is clamped to the message's own index.
    """
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if is_compaction(message):
            assert isinstance(message, UserMessage) and message.compaction is not None
            first = message.compaction.get("first_kept")
            first = first if isinstance(first, int) and not isinstance(first, bool) and 0 <= first <= index \
                else index
            return index, first
    return None


def summary_message(summary: str, first_kept: int, **info: Any) -> UserMessage:
    """The history message of a compaction: the summary, ``first_kept`` and figures in ``compaction``."""
    message = UserMessage([TextContent(SUMMARY_PREFIX + summary + SUMMARY_SUFFIX)])
    message.excluded = EXCLUDED_REASON
    message.compaction = {"first_kept": first_kept, **info}
    return message


def compacted_view(history: Sequence[Message]) -> list[Message]:
    """What is sent of ``history``: the latest summary, then every message from its ``first_kept`` on.

    Messages marked ``excluded`` (failed runs, older compactions) are left out,
    as from every request; without a compaction, that is all. The summary goes
    first as a plain user message.
    """
    latest = latest_compaction(history)
    if latest is None:
        return [m for m in history if not getattr(m, "excluded", None)]
    index, first = latest
    marker = history[index]
    assert isinstance(marker, UserMessage)
    kept = [m for m in history[first:] if not getattr(m, "excluded", None)]
    head, joined = summary_head(marker, kept[0] if kept else None)
    return [head, *kept[1:]] if joined else [head, *kept]


def summary_head(marker: UserMessage, first: Message | None) -> tuple[UserMessage, bool]:
    """The summary ``marker`` as it is sent, and whether it took in ``first`` (the first message kept).

    The summary goes as a plain user message. When the kept part starts with
    a user message (a cut at a turn boundary), that message is joined to the
    summary (its text after a blank line, its images after the text), so the
    request never holds two user messages in a row: chat templates that
    require user/assistant alternation (Gemma, Mistral, Llama 2 in llama.cpp
    and vLLM: "Conversation roles must alternate") refuse them.
    """
    parts = list(marker.content)
    if not isinstance(first, UserMessage) or first.compaction is not None or first.name is not None:
        return UserMessage(parts), False
    joined = [*parts, *first.content]
    if all(isinstance(part, TextContent) for part in joined):
        return UserMessage("\n\n".join(part.text for part in joined if isinstance(part, TextContent))), True
    return UserMessage(joined), True


def find_cut(history: Sequence[Message], start: int, keep_recent_tokens: int,
             tokens: Callable[[Message], int]) -> int | None:
    """Where to cut ``history[start:]``: the index of the first message kept, or None when nothing can go.

    Walk back from the newest message adding up ``tokens(message)`` until
    ``keep_recent_tokens`` are reached; then move forward to the next user
    message (a turn boundary) or, when the reach is inside the last turn (one
    turn longer than ``keep_recent_tokens``), to the next assistant message of
    it: the turn is split, its start is summarised; when only tool results
    follow the reach, back to the assistant message that asked for them.
    Never at a tool result. Messages marked
    ``excluded`` and older compactions count nothing and never start the kept part.
    """
    kept = 0
    reach = None
    for index in range(len(history) - 1, start - 1, -1):
        message = history[index]
        if getattr(message, "excluded", None):
            continue
        kept += tokens(message)
        if kept >= keep_recent_tokens:
            reach = index
            break
    if reach is None:  # everything after start fits in keep_recent_tokens
        return None
    def usable(i: int) -> bool:
        return isinstance(history[i], (UserMessage, AssistantMessage)) and not getattr(history[i], "excluded", None)

    later = [i for i in range(max(reach, start + 1), len(history)) if usable(i)]
    users = [i for i in later if isinstance(history[i], UserMessage)]
    if users:
        return users[0]  # a turn boundary
    if later:
        return later[0]  # the reach is inside the last turn: split it at an assistant message
    # the reach is among the last tool results: keep the assistant message that asked for them
    return next((i for i in range(reach - 1, start, -1) if usable(i)), None)


def as_transcript(messages: Sequence[Message], max_result_chars: int = 2000) -> str:
    """Plain text of ``messages`` for the summariser: a line per message, results cut to ``max_result_chars``."""
    lines = []
    for message in messages:
        if getattr(message, "excluded", None):  # failed runs, compaction summaries
            continue
        if isinstance(message, UserMessage):
            lines.append(f"[User]: {message.text}")
        elif isinstance(message, AssistantMessage):
            if message.text:
                lines.append(f"[Assistant]: {message.text}")
            for call in message.tool_calls:
                lines.append(f"[Assistant called {call.name} with {call.arguments}]")
        elif isinstance(message, ToolResultMessage):
            text = message.text
            if len(text) > max_result_chars:
                text = text[:max_result_chars] + f" [... {len(text) - max_result_chars} more characters]"
            error = " (error)" if message.is_error else ""
            lines.append(f"[Result of {message.tool_name or 'the tool'}{error}]: {text}")
    return "\n".join(lines)


def summarise(config: Compaction, llm_call: Callable[..., Any], previous: str | None,
              messages: Sequence[Message]) -> str:
    """The summary of ``messages`` (updating ``previous``), asked of ``llm_call`` in chunks that fit the window.

    Raises:
        LLMError: the summariser failed or answered no text (the caller keeps the conversation as it was).
    """
    from ..messages.tool_calls import parse_response

    assert config.max_summary_tokens is not None
    room = config.budget - config.max_summary_tokens - config.counter(
        [{"role": "system", "content": config.instructions}], []) - 64
    chunks: list[list[Message]] = [[]]
    used = 0
    for message in messages:
        size = config.message_tokens(message)
        if chunks[-1] and used + size > room:
            chunks.append([])
            used = 0
        chunks[-1].append(message)
        used += size
    summary = previous
    for chunk in chunks:
        text = as_transcript(chunk, max_result_chars=max(200, room))
        if not text:
            continue
        ask = (f"The existing summary:\n<summary>\n{summary}\n</summary>\n\nUpdate it with these newer messages:\n"
               if summary else "Summarise these messages:\n")
        request = [{"role": "system", "content": config.instructions},
                   {"role": "user", "content": ask + text[: room * 4]}]
        try:
            reply = parse_response(llm_call(request, []))
        except LLMError:
            raise
        except Exception as exc:
            raise LLMError(f"the summariser failed: {type(exc).__name__}: {exc}") from exc
        if not reply.text.strip():
            raise LLMError("the summariser answered no text")
        summary = reply.text.strip()[: config.max_summary_tokens * 4]
    return summary or ""


@dataclass
class Compacted:
    """One compaction made by ``compact``: the history message to append and what the event reports."""

    message: UserMessage
    first_kept: int
    summarised_messages: int
    summary: str


def summary_text(message: Message) -> str:
    """The summary a compaction message holds (its text without the framing)."""
    text = message.text if isinstance(message, UserMessage) else ""
    return text.removeprefix(SUMMARY_PREFIX).removesuffix(SUMMARY_SUFFIX)


def compact(history: Sequence[Message], config: Compaction, llm_call: Callable[..., Any], *, force: bool = False,
            focus: str | None = None, run: Callable[[Callable[[], str]], str] | None = None,
            on_failure: Literal["raise", "leave_out"] = "raise") -> Compacted | None:
    """Summarise what ``history`` can lose; return the compaction to append, or None when nothing can go.

    Args:
        history: the whole history (compactions included).
        config: the settings (``keep_recent_tokens``, the summariser's budget).
        llm_call: the summariser (``config.llm_call``, else the agent's).
        force: keep as little as a turn allows (after the server answered that
            the request was too long): everything before the newest message
            that may start the kept part is summarised.
        focus: what the summary should keep above all (``/compact <focus>``).
        run: runs the summariser (the loop passes one that an abort cuts); None: here.
        on_failure: when the summariser fails, ``"raise"`` (nothing is appended) or
            ``"leave_out"``: the window is kept anyway, the messages before the cut
            left out without a summary (the earlier summary kept, with a note saying
            how many messages were left out and why), so the requests still fit.

    Raises:
        LLMError: the summariser failed (``on_failure="raise"``); nothing is appended.
    """
    one_of("on_failure", on_failure, ("raise", "leave_out"))
    latest = latest_compaction(history)
    start, previous = (latest[1], summary_text(history[latest[0]])) if latest is not None else (0, None)
    assert config.keep_recent_tokens is not None
    cut = find_cut(history, start, 1 if force else config.keep_recent_tokens, config.message_tokens)
    if cut is None:
        return None
    lost = [m for m in history[start:cut] if not getattr(m, "excluded", None)]
    if not lost:
        return None
    settings = config if focus is None else dataclasses.replace(
        config, instructions=f"{config.instructions}\nAbove all, keep: {focus}")

    def write() -> str:
        return summarise(settings, config.llm_call or llm_call, previous, lost)

    try:
        summary = run(write) if run is not None else write()
    except LLMError as exc:
        if on_failure == "raise":
            raise
        note = (f"[{len(lost)} earlier messages were left out without a summary: the summariser failed "
                f"({type(exc).__name__}).]")
        summary = f"{previous}\n{note}" if previous else note
        logger.warning("compaction: the summariser failed (%s); %d messages before history[%d] left out without a "
                       "summary, so that the request fits", exc, len(lost), cut)
    logger.info("compacted %d messages before history[%d] into a %d-character summary", len(lost), cut, len(summary))
    return Compacted(summary_message(summary, cut, summarised_messages=len(lost)), cut, len(lost), summary)


def request_tokens(history: Sequence[Message], messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]],
                   counter: TokenCounter, *, calibrate: bool = True) -> int:
    """The size of a request (``messages``, ``tools``) made from ``history``, in tokens.

    When the newest reply in the history reported ``usage.prompt_tokens`` and
    came after the latest compaction, the size is that reply's
    ``prompt_tokens + completion_tokens`` plus the count of what was added
    since (pi's rule: the server's own count, so the estimate's error does
    not pile up); else ``counter(messages, tools)``. ``calibrate=False``
    (a ``prepare_context`` changed what is sent): always the counter.
    """
    if calibrate:
        latest = latest_compaction(history)
        floor = latest[0] if latest is not None else -1
        for index in range(len(history) - 1, floor, -1):
            message = history[index]
            if not isinstance(message, AssistantMessage) or getattr(message, "excluded", None):
                continue
            usage = message.usage or {}
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens", 0)
            if isinstance(prompt, int) and isinstance(completion, int) and prompt > 0:
                later = [to_openai(m) for m in history[index + 1:]
                         if not getattr(m, "excluded", None)]
                return prompt + completion + counter(later, [])
            break
    return counter(list(messages), list(tools))


def compaction_setting(compaction: Compaction | bool | None, context_window: int | None,
                       reserve_tokens: int | None) -> Compaction | None:
    """``Agent(compaction=, context_window=, reserve_tokens=)`` as one ``Compaction`` (or None).

    ``compaction=True`` needs ``context_window``; a ``Compaction`` object is
    used as given; with only ``context_window``, requests are measured and
    compacted only when asked (``auto=False``).

    Raises:
        ConfigError: ``compaction=True`` without ``context_window``, or a value of the wrong type.
    """
    if isinstance(compaction, Compaction):
        return compaction
    if compaction not in (None, True, False):
        raise ConfigError(f"compaction must be True, False, None or a Compaction, not {compaction!r}")
    if context_window is None:
        if compaction:
            raise ConfigError("compaction=True needs context_window= (the model's context length in tokens)")
        if reserve_tokens is not None:
            raise ConfigError("reserve_tokens= needs context_window=")
        return None
    return Compaction(context_window, reserve_tokens=reserve_tokens, auto=bool(compaction))
