"""``HistoryIndex``: what the loop needs to know of a history, read once per message.

Each run needs the tool-call ids already used (a reply reusing one gets a new
id), whether any message is ``excluded`` (failed runs, compaction summaries),
what is sent (``compacted_view``: the latest summary, then the kept messages
that are not excluded) and, with compaction, the size of that in tokens. Read
from the whole history at every run and every model call, that cost grew with
the conversation (issue 26: an input at 40,000 messages cost 22x one at 100).

The index reads each message once. ``sync(history)`` reads only what was
added since the last sync when ``history`` is the same ``History``
(``yiemagent.messages.history``) with no edit since; any other list, or an
edited one, is read again in full (correct, at the old cost). What a run adds
may still be marked ``excluded`` when the run fails: ``checkpoint()`` at the
start of a run and ``rollback()`` after such a marking read the run's
messages again, and only those.

Counted work: ``reads`` (messages read) and ``tokens_counted`` (messages whose
tokens were counted) only grow by what is new; the complexity test of the
loop asserts it (tests/test_history_cost.py).

The contract it relies on: a message is not changed in place once it is in
the history (except by the run that added it, before its end).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..messages import AssistantMessage, Message, UserMessage
from ..messages.history import History, Mark, grew_from, mark
from .compaction import summary_head

__all__ = ["HistoryIndex"]


class HistoryIndex:
    """Tool-call ids, ``excluded`` flags, the latest compaction and the sent view of one history.

    Attributes:
        tool_call_ids: every tool-call id in the history.
        has_excluded: some message is ``excluded`` (requests go through the view).
        latest: ``(index, first_kept)`` of the latest compaction summary, or None
            (as ``compaction.latest_compaction`` returns it).
        reads: messages read so far (for complexity tests).
        tokens_counted: messages whose tokens were counted so far.
    """

    def __init__(self) -> None:
        self._system: dict[str, Any] | None = None
        self._framing: tuple[tuple[Any, ...], int, int] | None = None
        self.reads = 0
        self.tokens_counted = 0
        self._reset()

    def _reset(self) -> None:
        self.tool_call_ids: set[str] = set()
        self.has_excluded = False
        self.latest: tuple[int, int] | None = None
        self._seen: Mark | None = None  # of the history as last read (a History)
        self._list: list[Message] | None = None  # the list last read, and its last message
        self._last: Message | None = None
        self._done = 0  # messages of the history read
        self._view: History[Message] | None = None  # what is sent, once something is excluded
        self._after_summary = 0  # view position of the first message after the latest summary
        self._reply: tuple[int, int] | None = None  # view position and prompt+completion of the newest reply
        self._counter: Callable[[Message], int] | None = None
        self._cumulative: list[int] = [0]  # tokens of the first k view messages (with a counter)
        self._checkpoint: tuple[int, int, tuple[int, int] | None] | None = None

    # ------------------------------------------------------------------ reading

    def sync(self, history: list[Message], *, owned: bool = False) -> None:
        """Bring the index up to date with ``history`` (reading only what was added, when it can tell).

        ``owned``: only the caller changed ``history`` since the last sync, and
        only by adding at its end (a run between two of its model calls), so a
        plain list is not read again either.
        """
        start = grew_from(history, self._seen)
        if start is None and owned and history is self._list and len(history) >= self._done \
                and (not self._done or history[self._done - 1] is self._last):
            start = self._done
        if start is None or start != self._done:
            counter = self._counter
            self._reset()
            self._counter = counter
        for index in range(self._done, len(history)):
            self._read(history, index)
        self._done = len(history)
        self._seen = mark(history)
        self._list, self._last = history, history[-1] if history else None

    def _read(self, history: list[Message], index: int) -> None:
        message = history[index]
        self.reads += 1
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                self.tool_call_ids.add(call.id)
        if isinstance(message, UserMessage) and isinstance(message.compaction, dict):
            first = message.compaction.get("first_kept")
            first = first if isinstance(first, int) and not isinstance(first, bool) and 0 <= first <= index \
                else index
            self.latest = (index, first)
            self.has_excluded = True
            self._rebuild(history, index + 1)
            return
        if getattr(message, "excluded", None):
            if not self.has_excluded:
                self.has_excluded = True
                self._rebuild(history, index + 1)
            return
        if self._view is not None:
            self._add(message)

    def _rebuild(self, history: list[Message], end: int) -> None:
        """The view of ``history[:end]`` made afresh (after a compaction, or the first excluded message)."""
        view: History[Message] = History()
        self._view, self._cumulative, self._reply, self._after_summary = view, [0], None, 0
        start = 0
        kept = (history[i] for i in range(start, end) if not getattr(history[i], "excluded", None))
        if self.latest is not None:
            index, start = self.latest
            marker = history[index]
            assert isinstance(marker, UserMessage)
            kept = (history[i] for i in range(start, end) if not getattr(history[i], "excluded", None))
            first = next(kept, None)
            head, joined = summary_head(marker, first)  # sent first, as a plain user message
            self._add(head)
            if first is not None and not joined:
                self._add(first)
        for message in kept:
            self._add(message)
        # pi's rule counts from a reply after the latest summary only; without a summary, from the newest one
        self._after_summary = len(view)
        if self.latest is not None:
            self._reply = None

    def _add(self, message: Message) -> None:
        assert self._view is not None
        self._view.append(message)
        if self._counter is not None:
            self._count(message)

    def _count(self, message: Message) -> None:
        assert self._counter is not None
        position = len(self._cumulative) - 1
        self.tokens_counted += 1
        self._cumulative.append(self._cumulative[-1] + self._counter(message))
        if isinstance(message, AssistantMessage) and position >= self._after_summary_or_zero():
            usage = message.usage or {}
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens", 0)
            if isinstance(prompt, int) and isinstance(completion, int) and prompt > 0 \
                    and not isinstance(prompt, bool):
                self._reply = (position, prompt + completion)
            else:
                self._reply = None  # the newest reply has no count: the estimate of everything

    def _after_summary_or_zero(self) -> int:
        return self._after_summary if self.latest is not None else 0

    # ------------------------------------------------------------------ runs

    def checkpoint(self) -> None:
        """A run starts here: what it adds may be marked ``excluded`` at its end (see ``rollback``)."""
        view = self._view
        self._checkpoint = (self._done, len(view) if view is not None else -1, self._reply)

    def rollback(self, history: list[Message]) -> None:
        """The messages added since ``checkpoint()`` changed (a failed run marked them): read them again."""
        point = self._checkpoint
        if point is None or (self._view is None) != (point[1] < 0) or (self.latest is not None \
                and self.latest[0] >= point[0]):
            self._seen = None  # a compaction in the run, or no checkpoint: read everything again
            return
        done, view_length, reply = point
        if self._view is not None:
            del self._view[view_length:]
            del self._cumulative[view_length + 1:]
        else:
            del self._cumulative[done + 1:]
        self._done, self._reply = done, reply
        self._seen, self._last = None, history[done - 1] if 0 < done <= len(history) else None
        if type(history) is History and len(history) >= done:  # known unchanged up to ``done``
            self._seen = (history, history.edits, done, history[done - 1] if done else None)

    # ------------------------------------------------------------------ what is sent

    def framing_tokens(self, counter: Callable[[Any, Any], int], system: dict[str, Any] | None,
                       tools: list[dict[str, Any]]) -> int:
        """``counter([system], tools)``: counted again only when the counter, the prompt or the tools list change."""
        key = (counter, system, tools)
        cached = self._framing
        if cached is None or cached[1] != len(tools) or any(a is not b for a, b in zip(cached[0], key, strict=True)):
            cached = (key, len(tools), counter([system] if system is not None else [], tools))
            self._framing = cached
        return cached[2]

    def system_message(self, prompt: str | None) -> dict[str, Any] | None:
        """``{"role": "system", "content": prompt}``: the same dict while the prompt is the same.

        So the request guard and the formatter see an unchanged start of the
        request from one run to the next (and check only what was added).
        """
        if not prompt:
            return None
        if self._system is None or self._system["content"] != prompt:
            self._system = {"role": "system", "content": prompt}
        return self._system

    def view(self, history: list[Message]) -> list[Message]:
        """What is sent of ``history`` (``compaction.compacted_view``): the same list object while it only grows."""
        return history if self._view is None else self._view

    def count_with(self, counter: Callable[[Message], int] | None) -> None:
        """Count the tokens of each view message with ``counter`` (one message at a time) from now on."""
        if counter == self._counter:
            return
        self._counter, self._cumulative, self._reply = counter, [0], None
        if self._view is not None:
            for message in self._view:
                self._count(message)

    def tokens(self, history: list[Message]) -> tuple[int, int | None]:
        """``(tokens of the view, tokens of the newest counted reply and all after it or None)``.

        With a counter (``count_with``). The second figure is pi's rule: the
        server's ``prompt_tokens + completion_tokens`` of the newest reply (when
        it came after the latest summary) plus the count of what followed.
        """
        if self._view is None:  # nothing excluded: the view is the history, counted as it is read
            self._ensure_counted(history)
        total = self._cumulative[-1]
        if self._reply is None:
            return total, None
        position, reported = self._reply
        return total, reported + total - self._cumulative[position + 1]

    def _ensure_counted(self, history: list[Message]) -> None:
        """Without a separate view, the history itself is counted (positions are history indices)."""
        while len(self._cumulative) - 1 < len(history):
            self._count(history[len(self._cumulative) - 1])
