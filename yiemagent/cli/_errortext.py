"""Error text for a terminal: one short line, an HTML error page reduced to its words (CLI and chat)."""

from __future__ import annotations

import html
import re

from ..textpolicy import terminal_text

__all__ = ["ERROR_BODY_CHARS", "error_text", "short_body"]

ERROR_BODY_CHARS = 300
"""Characters of a server's answer body quoted in a CLI error message."""

_HTML = re.compile(r"<\s*(!doctype|html|head|body|title|pre|p|h1|div)\b", re.IGNORECASE)


def short_body(body: str, limit: int = ERROR_BODY_CHARS) -> str:
    """``body`` as one short line: HTML tags dropped, whitespace collapsed, at most ``limit`` characters."""
    text = body
    if _HTML.search(text):
        text = re.sub(r"<(script|style)\b.*?</\1\s*>", " ", text, flags=re.IGNORECASE | re.DOTALL)
        text = html.unescape(re.sub(r"<[^>]*>", " ", text))
    text = " ".join(text.split())
    if len(text) > limit:
        text = f"{text[:limit].rstrip()}... [cut from {len(body):,} characters]"
    return text


def error_text(exc: BaseException) -> str:
    """The message of ``exc`` for the terminal: a quoted answer body (``exc.body``) is shortened."""
    message = str(exc)
    body = getattr(exc, "body", "") or ""
    if isinstance(body, str) and body.strip():
        # errors quote the start of the body at the end of their message: find where that quote begins
        probe = body[:40]
        start = message.find(probe)
        while start != -1 and not body.startswith(message[start:]):
            start = message.find(probe, start + 1)
        if start != -1:
            message = message[:start] + short_body(body)
    if len(message) > 4 * ERROR_BODY_CHARS and "\n" not in message:
        message = short_body(message, 4 * ERROR_BODY_CHARS)
    return terminal_text(message)
