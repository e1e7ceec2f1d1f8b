"""Context overflow: telling "the request is longer than the model's context" from other model errors.

``is_context_overflow(exc)`` reads an ``llm_call`` failure (the exception, its
causes, and the error body a server sent) and says whether the server refused
the request because it was too long. With compaction on, the loop then
compacts once and asks again instead of failing the input
(``yiemagent.context.compaction``).

Shapes recognised (each from a public report; ``tests/test_context_overflow.py``):

* OpenAI: HTTP 400, ``error.code: "context_length_exceeded"``, "This model's
  maximum context length is N tokens. However, your messages resulted in M";
* vLLM: HTTP 400 ``BadRequestError`` "This model's maximum context length is N
  tokens. However, you requested M tokens (...)", and "... is longer than the
  model's maximum context length";
* llama.cpp server: ``error.type: "exceed_context_size_error"`` (HTTP 400, or
  500 in some versions), "the request exceeds the available context size",
  "request (N tokens) exceeds the available context size (M tokens)", and
  "Context size has been exceeded."; llama-cpp-python: "Requested tokens (N)
  exceed context window of M";
* Ollama: "input exceeds context length", "prompt is too long";
* LiteLLM: ``ContextWindowExceededError``; Anthropic through adapters:
  "prompt is too long: N tokens > M maximum".
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["is_context_overflow"]

_PATTERNS = re.compile(
    "|".join([
        r"context_length_exceeded",
        r"exceed_context_size_error",
        r"ContextWindowExceeded",
        r"maximum context length (is|of) \d+",
        r"longer than the model'?s (maximum )?context length",
        r"exceeds? (the )?(available |maximum )?context (size|length|window)",
        r"context (size|length|window) (has been |was |is )?exceeded",
        r"requested tokens \(\d+\) exceed context window",
        r"input exceeds context length",
        r"prompt is too long",
        r"too many tokens.{0,40}context",
        r"reduce the length of the messages",
    ]),
    re.IGNORECASE,
)


def _texts(exc: BaseException) -> list[str]:
    """The text of ``exc`` and of what it carries: its message, class name, response body, causes."""
    out: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 8:
        seen.add(id(current))
        out.append(f"{type(current).__name__}: {current}")
        for attribute in ("response", "body", "message"):
            value: Any = getattr(current, attribute, None)
            if value is None or isinstance(value, (int, float)):
                continue
            text = getattr(value, "text", None)  # a requests / httpx response
            if isinstance(text, str):
                out.append(text[:4000])
            elif isinstance(value, (dict, list)):
                out.append(json.dumps(value, default=str)[:4000])
            elif isinstance(value, str):
                out.append(value[:4000])
        current = current.__cause__ or current.__context__
    return out


def is_context_overflow(exc: BaseException) -> bool:
    """Whether the server refused the request because it is longer than the model's context.

    Never raises. A failure with an HTTP status of 401, 403, 404, 429 or 5xx
    other than 500 is never an overflow (a status of 500 is accepted: some
    llama.cpp versions send it with ``exceed_context_size_error``).
    """
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status not in (400, 413, 422, 500):
        return False
    try:
        return any(_PATTERNS.search(text) for text in _texts(exc))
    except Exception:  # a hostile __str__: not an overflow we can tell
        return False
