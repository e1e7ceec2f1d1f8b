"""What ``yiemagent chat`` prints: ``ChatView`` turns a run's events into terminal lines.

Every write goes through ``shown`` (the outbound text policy's ``terminal``
rule, ``yiemagent.textpolicy``): nothing a model or an MCP server sends can
drive the terminal.
"""

from __future__ import annotations

import json
from typing import TextIO

from ..loop import events as ev
from ..messages import AssistantMessage
from ..textpolicy import boundary, terminal_text

__all__ = ["RESULT_CHARS", "ChatView", "duration_text", "one_line", "shown"]

RESULT_CHARS = 200
"""Characters of a tool result shown on its line."""

def one_line(text: str, limit: int = RESULT_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with "..."."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rstrip() + "..."


def duration_text(seconds: float) -> str:
    """``"12 ms"`` under a second, else ``"3.4 s"``."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


@boundary("terminal", "terminal")
def shown(text: str) -> str:
    """What the chat terminal prints for ``text`` (every write of ``ChatView`` goes through it).

    The outbound text policy's ``terminal`` rule (``yiemagent.textpolicy``): escape
    sequences from a model or an MCP server (window title, OSC 52 clipboard
    writes, screen clears, cursor moves) and other control characters are
    removed, known secrets are ``***``.
    """
    return terminal_text(text)


class ChatView:
    """Prints a run's events to a terminal: streamed text, tool calls and results, errors, a status line.

    Call ``show(event)`` from one thread, in order (``ChatSession`` does, from
    the main thread).
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._streaming = False  # inside an assistant line being streamed
        self._streamed_text = False  # the current assistant message had text deltas
        self._thinking = False
        self._announced: set[int] = set()

    def write(self, text: str) -> None:
        """Write ``text`` by the terminal rule of the outbound text policy (``shown``) and flush."""
        text = shown(text)
        try:
            self.out.write(text)
        except UnicodeEncodeError:  # a terminal that cannot show it
            self.out.write(text.encode("ascii", "replace").decode("ascii"))
        self.out.flush()

    def line(self, text: str) -> None:
        """End a streamed line if one is open, then write ``text`` on its own line."""
        self.end_stream()
        self.write(text + "\n")

    def end_stream(self) -> None:
        """Close the line being streamed, if any."""
        if self._streaming:
            self.write("\n")
            self._streaming = False
            self._thinking = False

    def show(self, event: ev.Event) -> None:
        """Print one event (events not shown: the lifecycle ones)."""
        if isinstance(event, ev.MessageStartEvent) and event.role == "assistant":
            self._streamed_text = False
            self._announced = set()
        elif isinstance(event, ev.MessageUpdateEvent):
            self._update(event)
        elif isinstance(event, ev.MessageEndEvent) and isinstance(event.message, AssistantMessage):
            text = event.message.text.strip()
            if text and not self._streamed_text:
                self.line(f"assistant> {text}")
            self.end_stream()
        elif isinstance(event, ev.ToolExecutionStartEvent) and event.tool_call is not None:
            arguments = json.dumps(event.tool_call.arguments, ensure_ascii=False)
            self.line(f"  -> {event.tool_call.name} {one_line(arguments)}")
        elif isinstance(event, ev.ToolExecutionEndEvent) and event.tool_call is not None:
            text = getattr(event.result, "text", "") if event.result is not None else ""
            mark = " failed" if event.is_error else ""
            took = duration_text(event.duration_seconds)
            self.line(f"  <- {event.tool_call.name}{mark} {took}: {one_line(str(text))}")
        elif isinstance(event, ev.ErrorEvent) and event.where != "max_turns":
            self.line(f"  [error in {event.where}] {one_line(event.message, 300)}")
        elif isinstance(event, ev.CompactionEvent):
            self.line(f"  [compacted ({event.reason}): {event.summarised_messages} messages summarised, "
                      f"{event.tokens_before} -> {event.tokens_after} tokens]")
        elif isinstance(event, ev.ToolsChangedEvent):
            self.line(f"  [tools changed: +{', '.join(event.added) or '-'} / -{', '.join(event.removed) or '-'}]")
        elif isinstance(event, ev.AgentEndEvent):
            tokens = event.usage.get("total_tokens")
            usage = f", {tokens} tokens" if tokens else ""
            self.line(f"  [{event.status}, {event.turns} model call{'s' if event.turns != 1 else ''}, "
                      f"{duration_text(event.duration_seconds)}{usage}]")

    def _update(self, event: ev.MessageUpdateEvent) -> None:
        if event.delta_type == "text" and event.delta:
            if not self._streaming or self._thinking:
                self.end_stream()
                self.write("assistant> ")
                self._streaming = True
            self._streamed_text = True
            self.write(event.delta)
        elif event.delta_type == "reasoning" and event.delta:
            if not self._streaming:
                self.write("thinking> ")
                self._streaming = self._thinking = True
            if self._thinking:
                self.write(event.delta)
        elif event.delta_type == "tool_call" and event.tool_name and event.tool_call_index is not None:
            if event.tool_call_index not in self._announced:
                self._announced.add(event.tool_call_index)
                self.line(f"  .. calling {event.tool_name}")
