"""Formatting: the history as OpenAI chat messages, converted once per message.

``OpenAIFormatter`` is the default ``format_messages`` of the agent loop
(``format_messages(history) -> [OpenAI message dict]``); the loop puts the
system prompt first.

Spec: OpenAI Chat Completions ``messages``.
"""

from __future__ import annotations

from typing import Any, Literal

from .._internal.checks import one_of
from ..formats.dialects import MESSAGE_FIELDS, TOOL_CALL_FIELDS
from . import AssistantMessage, ImageContent, Message, ReasoningContent, ToolResultMessage, to_openai
from .history import History, Mark, grew_from, mark

__all__ = ["OpenAIFormatter"]

_OWN_KEYS = frozenset({"role", "content", "tool_calls", "reasoning_content", "reasoning"})


class OpenAIFormatter:
    """Default ``format_messages``: OpenAI chat dicts, converted once per message.

    A message is converted the first time it is seen and the dict is reused on
    later turns, so a turn costs what is new, not the whole history. The cache
    is keyed by message identity: a ``prepare_context`` that returns new message
    objects (trimmed or redacted copies) always has them converted and sent.
    Messages must not be changed in place after they were added to the
    history, and ``llm_call`` must not change the dicts it receives.

    Unknown keys of a model reply (``AssistantMessage.extra``: ``refusal``,
    ``audio``...; ``ToolCall.extra``) are not sent back unless
    ``send_extra=True``: strict endpoints reject unknown keys, and one value
    JSON cannot carry would make every later request fail. The fields a
    provider attached and needs back (``yiemagent.formats.dialects``: Gemini's
    ``extra_content`` on each call, OpenRouter's ``reasoning_details``,
    LiteLLM's ``thinking_blocks``) are sent back unchanged;
    ``send_provider_fields=False`` leaves them out too (a history continued
    with another provider that rejects them).

    Reasoning (``reasoning_content`` / ``reasoning``, also what was read from
    ``<think>`` tags) is sent back under its key, as vLLM, llama.cpp and
    DeepSeek's tool loops want; ``send_reasoning=False`` leaves it out, for
    servers that reject the key in input messages.

    OpenAI tool messages carry text only: an image in a tool result is a short
    placeholder in the tool message and, with ``tool_images="user_message"``,
    the images of a batch follow its tool messages in one user message
    (``"placeholder"`` sends the placeholders only).
    """

    def __init__(
        self, *, tool_images: Literal["user_message", "placeholder"] = "user_message", send_reasoning: bool = True,
        send_extra: bool = False, send_provider_fields: bool = True,
    ) -> None:
        self.tool_images = one_of("tool_images", tool_images, ("user_message", "placeholder"))
        self.send_reasoning = send_reasoning
        self.send_extra = send_extra
        self.send_provider_fields = send_provider_fields
        self._cache: dict[int, tuple[Message, dict[str, Any], bool]] = {}
        self._prev: tuple[list[Message], list[dict[str, Any]]] | None = None  # a plain list read last
        self._seen: tuple[Mark, History[dict[str, Any]]] | None = None  # a History read last, and its dicts
        self.visited = 0
        """Messages looked at so far (each call: those after the reused prefix), for complexity tests."""

    def _images_message(self, results: list[ToolResultMessage]) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        for result in results:
            images = [c for c in result.content if isinstance(c, ImageContent)]
            parts.append({"type": "text", "text": f"Images from tool {result.tool_name or 'result'} "
                                                  f"(call {result.tool_call_id}):"})
            for image in images:
                part: dict[str, Any] = {"url": image.url}
                if image.detail is not None:
                    part["detail"] = image.detail
                parts.append({"type": "image_url", "image_url": part})
        return {"role": "user", "content": parts}

    def __call__(self, history: list[Message]) -> list[dict[str, Any]]:
        """Return ``history`` as OpenAI chat dicts (cached per message).

        When ``history`` only grew since the last call (every message of the
        previous call is the same object, or an equal one, at the same place),
        the formatted prefix is reused and only the new messages are looked at.
        For a ``History`` (``yiemagent.messages.history``) that check is O(1).
        """
        return list(self.formatted(history))

    def formatted(self, history: list[Message]) -> list[dict[str, Any]]:
        """``__call__`` without the copy: the formatter's own list, which later calls may extend.

        For the loop (``yiemagent.loop.model_turn``): the caller must not change
        it. While ``history`` is a ``History`` that only grows, the same list
        object comes back, grown; so a reader of it can also tell in O(1).
        """
        seen = self._seen
        grown = grew_from(history, seen[0]) if seen is not None else None
        out: list[dict[str, Any]]
        if seen is not None and grown is not None:  # kept: the dicts of the messages no edit touched
            start, out = grown, seen[1]
            if len(out) > grown:
                del out[grown:]
        else:
            prev = self._prev
            # list == compares by identity first (C speed); a message that is a new but equal object converts
            # to the same dicts, so reusing them is right as well
            if prev is not None and len(prev[0]) <= len(history) and prev[0] == history[:len(prev[0])]:
                start, out = len(prev[0]), History(prev[1])
            else:
                start, out = 0, History()
        self._seen = self._prev = None
        cache = self._cache
        keep = type(history) is not History  # a History's dicts are kept in ``out``: no cache entry per message
        self.visited += len(history) - start
        with_images: list[ToolResultMessage] = []
        for message in history[start:] if start else history:
            if with_images and not isinstance(message, ToolResultMessage):
                out.append(self._images_message(with_images))
                with_images = []
            hit = cache.get(id(message))
            if hit is None or hit[0] is not message:
                has_images = isinstance(message, ToolResultMessage) and any(
                    isinstance(c, ImageContent) for c in message.content
                )
                converted = to_openai(message)
                if isinstance(message, AssistantMessage):
                    if not self.send_extra:
                        kept = MESSAGE_FIELDS if self.send_provider_fields else frozenset()
                        for key, value in message.extra.items():
                            if key not in _OWN_KEYS and (key not in kept or value in ([], {}, None)):
                                converted.pop(key, None)  # an empty provider field is not worth a 400
                        call_kept = TOOL_CALL_FIELDS if self.send_provider_fields else frozenset()
                        for call, sent in zip(message.tool_calls, converted.get("tool_calls") or [], strict=False):
                            for key in call.extra:
                                if key not in call_kept and key not in ("id", "type", "function"):
                                    sent.pop(key, None)
                    if not self.send_reasoning:
                        for part in message.content:
                            if isinstance(part, ReasoningContent):
                                converted.pop(part.field, None)
                hit = (message, converted, has_images)
                if keep:
                    cache[id(message)] = hit
            out.append(hit[1])
            if hit[2] and self.tool_images == "user_message":
                with_images.append(message)  # type: ignore[arg-type]
        if with_images:  # the images message ends the list: do not reuse this prefix next time
            out.append(self._images_message(with_images))
        elif history:
            history_mark = mark(history)
            if history_mark is not None:
                assert isinstance(out, History)
                self._seen = (history_mark, out)
            else:
                self._prev = (list(history), out)
        if len(cache) > 2 * len(history) + 64:  # history was replaced or trimmed
            live = {id(m) for m in history}
            self._cache = {k: v for k, v in cache.items() if k in live}
        return out
