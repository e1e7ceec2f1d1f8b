"""Test helpers shipped for users: a scripted model and an event recorder.

::

    llm = ScriptedLLM([
        tool_call_reply("get_time", {}),          # first model call asks for a tool
        text_reply("It is noon."),                # second answers
    ])
    agent = Agent(llm, tools=[get_time])
    assert agent.ask("time?")["content"] == "It is noon."
    assert llm.calls[1]["messages"][-1]["role"] == "tool"
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from ._internal.checks import one_of
from .exceptions import LLMError, SimulatedCrash
from .formats.llm import OnDelta
from .loop.events import EVENT_TYPES, Event

__all__ = ["EventRecorder", "ScriptedLLM", "SimulatedCrash", "text_reply", "tool_call_reply"]


def text_reply(text: str, *, finish_reason: str = "stop") -> dict[str, Any]:
    """A chat-completions reply with only text."""
    return {"choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": text}}]}


def tool_call_reply(
    name: str, arguments: dict[str, Any] | str | None = None, *, call_id: str = "call_1", text: str | None = None
) -> dict[str, Any]:
    """A chat-completions reply asking for one tool call (``arguments`` dict or raw JSON text)."""
    import json

    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": text,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}]}}]}


class ScriptedLLM:
    """An ``llm_call`` that returns the given replies in order.

    Each item of ``responses`` is a reply dict, an exception (raised), or a
    callable ``f(messages, tools) -> reply``. Every call is recorded in
    ``calls`` as ``{"messages": [...], "tools": [...]}`` (deep copies, as they
    were at call time).

    With ``delta_chars`` set it also streams: before returning a reply dict it
    reports the reply's reasoning, text and tool-call arguments to ``on_delta``
    in pieces of ``delta_chars`` characters, ``delta_delay_seconds`` apart
    (as a streaming server would; see ``yiemagent.formats.llm``).

    Raises (from a call):
        LLMError: the script is exhausted (unless ``repeat_last=True``).
    """

    def __init__(
        self, responses: Iterable[Any], *, repeat_last: bool = False, delta_chars: int | None = None,
        delta_delay_seconds: float = 0.0,
    ) -> None:
        self.responses = list(responses)
        self.repeat_last = repeat_last
        self.delta_chars = delta_chars
        self.delta_delay_seconds = delta_delay_seconds
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def _stream(self, reply: dict[str, Any], on_delta: OnDelta) -> None:
        size = self.delta_chars or 1
        choices = reply.get("choices") or [{}]
        message = choices[0].get("message") or {}

        def pieces(text: str) -> list[str]:
            return [text[i:i + size] for i in range(0, len(text), size)]

        for key, kind in (("reasoning_content", "reasoning"), ("content", "text")):
            if isinstance(message.get(key), str):
                for piece in pieces(message[key]):
                    on_delta(kind, piece)  # type: ignore[arg-type]
                    time.sleep(self.delta_delay_seconds)
        for index, call in enumerate(message.get("tool_calls") or []):
            fn: dict[str, Any] = call.get("function") or {}
            arguments: str = fn["arguments"] if isinstance(fn.get("arguments"), str) else ""
            for piece in pieces(arguments) or [""]:
                on_delta("tool_call", piece, tool_call_index=index, tool_call_id=call.get("id"),
                         tool_name=fn.get("name"))
                time.sleep(self.delta_delay_seconds)

    def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, on_delta: OnDelta | None = None
    ) -> dict[str, Any]:
        """Record the call and return the next scripted reply (streamed to ``on_delta`` with ``delta_chars``)."""
        with self._lock:
            index = len(self.calls)
            self.calls.append({"messages": copy.deepcopy(messages), "tools": copy.deepcopy(tools)})
            if index >= len(self.responses):
                if not (self.repeat_last and self.responses):
                    raise LLMError(f"ScriptedLLM has no reply number {index + 1} (it has {len(self.responses)})")
                index = len(self.responses) - 1
            item = self.responses[index]
        if isinstance(item, BaseException):
            raise item
        reply: dict[str, Any] = item(messages, tools) if callable(item) else copy.deepcopy(item)
        if self.delta_chars and on_delta is not None and isinstance(reply, dict):
            self._stream(reply, on_delta)
        return reply


class EventRecorder:
    """An event sink that keeps every event (thread-safe); ``types()`` lists their ``type``."""

    def __init__(self, predicate: Callable[[Event], bool] | None = None) -> None:
        self.events: list[Event] = []
        self.predicate = predicate
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        """Keep ``event`` (if it passes the predicate)."""
        if self.predicate is None or self.predicate(event):
            with self._lock:
                self.events.append(event)

    def types(self) -> list[str]:
        """The ``type`` of each event, in order."""
        with self._lock:
            return [e.type for e in self.events]

    def of_type(self, kind: str) -> list[Event]:
        """The events whose ``type`` is ``kind`` (one of ``EVENT_TYPES``: a typo is a ``ConfigError``, not ``[]``)."""
        one_of("kind", kind, EVENT_TYPES)
        with self._lock:
            return [e for e in self.events if e.type == kind]
