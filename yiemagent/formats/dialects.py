"""Provider dialects: what providers attach to an assistant message or a tool call and need back.

An OpenAI-compatible provider may put fields of its own on the assistant
message or on each tool call, and refuse the next request when they do not
come back unchanged. yiemagent keeps every unknown field of a reply
(``AssistantMessage.extra``, ``ToolCall.extra``), streamed or not, and sends
back the ones in ``PROVIDER_FIELDS`` (the request guard lets exactly these
through; ``OpenAIFormatter(send_provider_fields=False)`` leaves them out, for
a history continued with another provider). Other unknown fields stay in the
history and the saved state but are sent only with ``send_extra=True``.

``PROVIDER_FIELDS`` (docs/guides/models.rst "Provider dialects" is the same table)::

    provider                     where       field                                    sent back
    Gemini 3 (OpenAI-compatible) tool call   extra_content.google.thought_signature   yes (400 without it)
    Vertex AI (OpenAI-compatible) tool call  extra_content.vertex.thought_signature   yes
    Gemini gateways              tool call   thought_signature                        yes
    OpenRouter                   message     reasoning_details (list)                 yes, unmodified
    LiteLLM (Anthropic thinking) message     thinking_blocks (with signatures)        yes
    DeepSeek thinking mode       message     reasoning_content (also "")              yes (400 without it)
    LiteLLM (Gemini 3)           tool call   id "call_x__thought__<signature>"         yes, never shortened

Streams: ``yiemagent.formats.llm.StreamMerger`` merges these fields across chunks
(``merge_field``): text pieces (``text``, ``thinking``, ``summary``,
``refusal``, ``arguments``) are joined, a piece repeating the whole text so far is not added
twice, lists of blocks are merged by ``index`` (OpenRouter) or, without one,
consecutive blocks of a thinking ``type`` are joined (LiteLLM), and other
values are replaced by the later one (a signature that arrives last).

Sources: Gemini "Thought signatures" (ai.google.dev/gemini-api/docs/thought-signatures);
OpenRouter "Preserving reasoning blocks"; LiteLLM "thinking_blocks"; DeepSeek
"Thinking Mode: tool calls" (api-docs.deepseek.com/guides/thinking_mode).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "MESSAGE_FIELDS",
    "PROVIDER_FIELDS",
    "SIGNED_ID_MARKERS",
    "TOOL_CALL_FIELDS",
    "ProviderField",
    "merge_field",
]


@dataclass(frozen=True)
class ProviderField:
    """One row of the dialect table: a field a provider attaches and needs back."""

    provider: str
    where: Literal["message", "tool_call"]
    field: str
    note: str


PROVIDER_FIELDS: tuple[ProviderField, ...] = (
    ProviderField("Gemini 3 (OpenAI-compatible)", "tool_call", "extra_content",
                  "extra_content.google.thought_signature on each call; Gemini answers 400 without it"),
    ProviderField("Vertex AI (OpenAI-compatible)", "tool_call", "extra_content",
                  "extra_content.vertex.thought_signature on each call"),
    ProviderField("Gemini gateways", "tool_call", "thought_signature", "a bare thought_signature on the call"),
    ProviderField("OpenRouter", "message", "reasoning_details",
                  "structured reasoning (text, summary, encrypted) to send back unmodified"),
    ProviderField("LiteLLM (Anthropic thinking)", "message", "thinking_blocks",
                  "thinking and redacted_thinking blocks with their signatures"),
    ProviderField("DeepSeek thinking mode", "message", "reasoning_content",
                  "must come back after a turn with tool calls; an empty one too"),
    ProviderField("LiteLLM (Gemini 3)", "tool_call", "id",
                  "the signature appended to the call id (call_x__thought__<signature>): never shortened"),
)
"""The dialect table (see the module docstring)."""

MESSAGE_FIELDS = frozenset(f.field for f in PROVIDER_FIELDS if f.where == "message") | {"reasoning"}
"""Assistant-message fields sent back (``reasoning`` / ``reasoning_content`` are also read as reasoning)."""
TOOL_CALL_FIELDS = frozenset(f.field for f in PROVIDER_FIELDS if f.where == "tool_call") - {"id"}
"""Tool-call fields sent back (besides ``id``, which always is)."""
SIGNED_ID_MARKERS = ("__thought__",)
"""A tool-call id holding one of these carries a provider's signature (LiteLLM PRs #16895, #18374):
the request guard sends it unchanged, never shortened to OpenAI's 40 characters."""

_TEXT_KEYS = frozenset({"text", "thinking", "summary", "refusal", "arguments"})
_JOINED_TYPES = frozenset({"thinking", "reasoning.text", "reasoning.summary"})


def merge_field(old: Any, new: Any, key: str = "") -> Any:
    """``new`` (one stream chunk's value of a field) merged into ``old`` (the chunks so far).

    ``key`` is the field's name. Strings are joined under a text key
    (``text``, ``thinking``, ``summary``, ``refusal``, ``arguments``) unless ``new`` repeats
    all of ``old``, else the later non-empty one wins; dicts are merged key by
    key; lists of blocks as the module docstring says; anything else: ``new``
    wins unless it is None. Never raises; ``old`` and ``new`` are not changed.
    """
    if old is None:
        return copy.deepcopy(new)
    if new is None:
        return old
    if isinstance(old, str) and isinstance(new, str):
        if key in _TEXT_KEYS:
            return old if new == old and new else old + new
        return new or old
    if isinstance(old, dict) and isinstance(new, dict):
        merged = dict(old)
        for name, value in new.items():
            merged[name] = merge_field(old.get(name), value, name)
        return merged
    if isinstance(old, list) and isinstance(new, list):
        merged_list = list(old)
        for item in new:
            at = _block_of(merged_list, item)
            if at is None:
                merged_list.append(copy.deepcopy(item))
            else:
                merged_list[at] = merge_field(merged_list[at], item, "_")
        return merged_list
    return copy.deepcopy(new)


def _block_of(blocks: list[Any], item: Any) -> int | None:
    """Where ``item`` continues a block of ``blocks`` (None: a new block).

    The block with its ``index`` (and type), or the last block when both are
    of one thinking ``type`` and carry no index.
    """
    if not isinstance(item, dict):
        return None
    if "index" in item:
        for at in range(len(blocks) - 1, -1, -1):
            block = blocks[at]
            if isinstance(block, dict) and block.get("index") == item["index"] \
                    and item.get("type", block.get("type")) == block.get("type"):
                return at
        return None
    last = blocks[-1] if blocks else None
    if isinstance(last, dict) and "index" not in last and item.get("type") in _JOINED_TYPES \
            and item.get("type") == last.get("type"):
        return len(blocks) - 1
    return None
