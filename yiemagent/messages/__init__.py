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
