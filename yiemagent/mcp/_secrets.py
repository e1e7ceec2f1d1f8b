"""Keeping static header values (tokens) and URL secrets out of reprs, logs and messages.

``Secret`` is a ``str`` (requests sends it as is) whose ``repr`` is ``'***'``;
``scrub`` replaces known secret texts in any message; ``display_url`` is a URL
fit to show (no password, no query values).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping

__all__ = ["Secret", "display_url", "scrub", "secrets_of"]


class Secret(str):
    """A header value: a plain ``str`` for requests, ``'***'`` in any ``repr``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "'***'"


def display_url(url: str) -> str:
    """``url`` without a password in its userinfo and without query values (for names and logs).

    Example:
        >>> display_url("https://bob:pw@host/mcp?key=abc&x=1")
        'https://bob:***@host/mcp?key=***&x=***'
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<invalid url>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{host}" if ":" in userinfo else f"{user}@{host}"
    query = "&".join(f"{k}=***" for k, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def secrets_of(headers: Mapping[str, str], url: str) -> list[Secret]:
    """The texts to hide, longest first.

    Args:
        headers: static headers; each value (4+ characters) and each of its
            words of 8+ characters (the token of ``"Bearer <token>"``) is hidden.
        url: its password and query values (4+ characters) are hidden.
    """
    found = {v.strip() for v in headers.values() if len(v.strip()) >= 4}
    found |= {word for v in headers.values() for word in v.split() if len(word) >= 8}
    try:
        parts = urllib.parse.urlsplit(url)
        found |= {v for _, v in urllib.parse.parse_qsl(parts.query) if len(v) >= 4}
        if parts.password and len(parts.password) >= 4:
            found.add(parts.password)
    except ValueError:
        pass
    return [Secret(text) for text in sorted(found, key=len, reverse=True)]


def scrub(text: str, secrets: list[Secret]) -> str:
    """``text`` with every one of ``secrets`` replaced by ``***``."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
