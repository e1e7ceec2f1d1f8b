"""Messages: yiemagent's own message types and their OpenAI chat format.

The history of an agent holds only these dataclasses. ``to_openai`` and
``from_openai`` convert one message; ``messages_to_openai`` a whole history;
``message_to_dict`` and ``message_from_dict`` give the lossless saved form.

This module gathers the names; the code is in ``yiemagent.messages.types`` (the
dataclasses), ``yiemagent.messages.openai`` (the OpenAI chat format: shapes and
normalisation rules) and ``yiemagent.messages.dicts`` (the saved JSON form).

Spec: OpenAI Chat Completions ``messages``; ``reasoning_content`` as sent by
DeepSeek, vLLM and llama.cpp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._internal.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from .dicts import message_from_dict, message_to_dict, messages_from_dicts
    from .openai import from_openai, messages_from_openai, messages_to_openai, to_openai
    from .types import (
        AssistantMessage,
        Content,
        ImageContent,
        Message,
        ReasoningContent,
        SystemMessage,
        TextContent,
        ToolCall,
        ToolResultMessage,
        UserMessage,
    )

_EXPORTS = {
    "message_from_dict": ".dicts",
    "message_to_dict": ".dicts",
    "messages_from_dicts": ".dicts",
    "from_openai": ".openai",
    "messages_from_openai": ".openai",
    "messages_to_openai": ".openai",
    "to_openai": ".openai",
    "AssistantMessage": ".types",
    "Content": ".types",
    "ImageContent": ".types",
    "Message": ".types",
    "ReasoningContent": ".types",
    "SystemMessage": ".types",
    "TextContent": ".types",
    "ToolCall": ".types",
    "ToolResultMessage": ".types",
    "UserMessage": ".types",
}

__all__ = [
    "AssistantMessage",
    "Content",
    "ImageContent",
    "Message",
    "ReasoningContent",
    "SystemMessage",
    "TextContent",
    "ToolCall",
    "ToolResultMessage",
    "UserMessage",
    "from_openai",
    "message_from_dict",
    "message_to_dict",
    "messages_from_dicts",
    "messages_from_openai",
    "messages_to_openai",
    "to_openai",
]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)  # each name on first use (PEP 562)
