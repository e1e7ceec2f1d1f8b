"""Token accounting: how big a request is, before it is sent.

Three ways to count, best first (``TokenCounter``):

* ``llamacpp_counter(base_url)``: the llama.cpp server's own tokenizer
  (``POST /tokenize``; ``yiemagent.models.local.LocalModel`` serves one);
* ``tiktoken_counter(encoding)``: OpenAI's tokenizers (optional extra
  ``tiktoken``: ``pip install -e ".[tiktoken]"``);
* ``estimate_tokens`` (the default): the documented cheap estimate below.

The estimate (what pi's coding agent does, and most peers): one token per 4
characters of the text the model reads (message text, reasoning, tool-call
names and argument JSON, tool definitions' JSON), rounded up, plus 4 tokens of
framing per message; an image counts ``IMAGE_TOKENS``. It overestimates
English prose a little and underestimates dense code and non-Latin scripts;
``reserve_tokens`` covers the error.

``RequestSize`` keeps the real count once the server reported one: after a
reply whose ``usage.prompt_tokens`` is known, the size of the next request is
that count plus the estimate of what was added since (pi's rule), so the
estimate's error never piles up over a long conversation.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["IMAGE_TOKENS", "MESSAGE_TOKENS", "TokenCounter", "estimate_tokens", "llamacpp_counter",
           "tiktoken_counter"]

logger = logging.getLogger("yiemagent.context.token_budget")

IMAGE_TOKENS = 1200
"""What one image part counts in the estimate (a 1024x1024 image at OpenAI's high detail is ~765-1105)."""

MESSAGE_TOKENS = 4
"""Framing per message in the estimate (role markers of a chat template)."""

TokenCounter = Callable[[Sequence[dict[str, Any]], Sequence[dict[str, Any]]], int]
"""``counter(messages, tools) -> tokens`` over OpenAI chat messages and tool definitions."""


def _texts(message: dict[str, Any]) -> tuple[list[str], int]:
    """The texts the model reads in one OpenAI message, and its number of images."""
    texts: list[str] = []
    images = 0
    content = message.get("content")
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") in ("image_url", "image", "input_image"):
                images += 1
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
    for key in ("reasoning_content", "reasoning", "name", "tool_call_id"):
        if isinstance(message.get(key), str):
            texts.append(message[key])
    for call in message.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        for key in ("name", "arguments"):
            if isinstance(function.get(key), str):
                texts.append(function[key])
    return texts, images


def estimate_tokens(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] = ()) -> int:
    """The cheap estimate of the module docstring: ceil(characters / 4) + 4 per message + images.

    Args:
        messages: OpenAI chat messages (as sent: ``content`` a str or a list of parts).
        tools: OpenAI tool definitions (their JSON text is counted).

    Returns:
        An estimate in tokens (>= 0). Never raises for malformed items (they count as their JSON text).
    """
    chars = 0
    extra = 0
    for message in messages:
        if not isinstance(message, dict):
            chars += len(str(message))
            continue
        texts, images = _texts(message)
        chars += sum(len(t) for t in texts)
        extra += MESSAGE_TOKENS + images * IMAGE_TOKENS
    if tools:
        chars += len(json.dumps(list(tools), ensure_ascii=False, default=str))
    return math.ceil(chars / 4) + extra


def tiktoken_counter(encoding: str = "o200k_base") -> TokenCounter:
    """A counter on OpenAI's tokenizer ``encoding`` (``o200k_base``: gpt-4o and later; ``cl100k_base``: gpt-4).

    Counts the same texts as ``estimate_tokens`` with the real tokenizer (the
    framing and image figures stay those of the estimate).

    Raises:
        ConfigError: ``tiktoken`` is not installed, or ``encoding`` is unknown or could not be fetched.
    """
    from .._internal.checks import install_hint
    from ..exceptions import ConfigError

    try:
        import tiktoken
    except ImportError as exc:
        raise ConfigError(f"tiktoken_counter needs tiktoken: {install_hint('tiktoken')}") from exc
    try:
        enc = tiktoken.get_encoding(encoding)
    except Exception as exc:  # an unknown name (ValueError), or its file could not be fetched (offline)
        raise ConfigError(f"tiktoken encoding {encoding!r} could not be loaded ({type(exc).__name__}: {exc}); "
                          "tiktoken fetches it once from the network, or from $TIKTOKEN_CACHE_DIR") from exc

    def count(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] = ()) -> int:
        total = 0
        for message in messages:
            texts, images = _texts(message) if isinstance(message, dict) else ([str(message)], 0)
            total += sum(len(enc.encode(t, disallowed_special=())) for t in texts)
            total += MESSAGE_TOKENS + images * IMAGE_TOKENS
        if tools:
            total += len(enc.encode(json.dumps(list(tools), ensure_ascii=False, default=str), disallowed_special=()))
        return total

    return count


def llamacpp_counter(base_url: str, *, timeout_seconds: float = 10) -> TokenCounter:
    """A counter on a llama.cpp server's tokenizer (``POST {base_url}/tokenize``, ``{"content": text}``).

    ``base_url`` is the server's root (``http://127.0.0.1:8080``; a trailing
    ``/v1`` is removed). One request per call, with every text joined. When the
    server cannot be reached, the count falls back to ``estimate_tokens``
    (logged at WARNING once), so a request is never refused for it.
    """
    import requests

    from .._internal.jsonload import loads_bounded

    root = base_url.rstrip("/").removesuffix("/v1")
    warned = [False]

    def count(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] = ()) -> int:
        texts: list[str] = []
        extra = 0
        for message in messages:
            found, images = _texts(message) if isinstance(message, dict) else ([str(message)], 0)
            texts += found
            extra += MESSAGE_TOKENS + images * IMAGE_TOKENS
        if tools:
            texts.append(json.dumps(list(tools), ensure_ascii=False, default=str))
        try:
            reply = requests.post(f"{root}/tokenize", json={"content": "\n".join(texts)}, timeout=timeout_seconds)
            reply.raise_for_status()
            return len(loads_bounded(reply.content)["tokens"]) + extra
        except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
            if not warned[0]:
                warned[0] = True
                logger.warning("llama.cpp /tokenize at %s failed (%s); using the estimate", root, exc)
            return estimate_tokens(messages, tools)

    return count
