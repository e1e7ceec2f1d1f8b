"""Keeping static header values (tokens) and URL secrets out of reprs, logs and messages.

``Secret`` is a ``str`` (requests sends it as is) whose ``repr`` is ``'***'``;
``scrub`` replaces known secret texts in any message; ``scrub_exception`` does
so in an exception, its ``args`` and every exception chained to it
(``__cause__``, ``__context__``, exceptions in ``args``: a traceback prints
them all); ``display_url`` is a URL fit to show (no password, no query
values). ``register_log_secrets`` hides URL secrets from the log lines of
urllib3 (its DEBUG line ``"GET /mcp?token=... HTTP/1.1" 200`` names the URL).
"""

from __future__ import annotations

import logging
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from ..textpolicy import register_secrets

__all__ = ["Secret", "display_url", "register_log_secrets", "scrub", "scrub_exception", "secrets_of"]


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


def scrub_exception(exc: BaseException, secrets: list[Secret]) -> None:
    """Replace ``secrets`` by ``***`` in place in ``exc`` and every exception reachable from it.

    Covers string ``args``, exceptions inside ``args`` (requests wraps
    urllib3's that way), string attributes (urllib3's ``url``), and the
    ``__cause__``/``__context__`` chain, each exception once.
    """
    if not secrets:
        return
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        args = []
        for arg in current.args:
            if isinstance(arg, str):
                arg = scrub(arg, secrets)
            elif isinstance(arg, BaseException):
                stack.append(arg)
            args.append(arg)
        try:
            current.args = tuple(args)
        except (AttributeError, TypeError):
            pass
        for name, value in list(getattr(current, "__dict__", {}).items()):
            if isinstance(value, str) and not isinstance(value, Secret):
                cleaned = scrub(value, secrets)
                if cleaned != value:
                    try:
                        setattr(current, name, cleaned)
                    except (AttributeError, TypeError):
                        pass
            elif isinstance(value, BaseException):
                stack.append(value)
        for chained in (current.__cause__, current.__context__):
            if chained is not None:
                stack.append(chained)


_LOG_SECRETS: set[str] = set()
_LOG_LOCK = threading.Lock()
_LOGGERS = ("urllib3.connectionpool", "urllib3.connection", "urllib3.util.retry", "urllib3.response")


class _ScrubFilter(logging.Filter):
    """Rewrites a record's message with the registered secrets replaced by ``***``."""

    def filter(self, record: logging.LogRecord) -> bool:
        with _LOG_LOCK:
            secrets = [Secret(s) for s in sorted(_LOG_SECRETS, key=len, reverse=True)]
        if secrets:
            try:
                message = record.getMessage()
            except Exception:  # a broken record is the logging module's business
                return True
            cleaned = scrub(message, secrets)
            if cleaned != message:
                record.msg, record.args = cleaned, ()
        return True


_FILTER = _ScrubFilter()


def register_log_secrets(secrets: Iterable[str]) -> None:
    """Hide ``secrets`` (URL query values, passwords) from urllib3's log lines, for the life of the process."""
    added: Any = [s for s in secrets if s]
    if not added:
        return
    register_secrets(added)  # hidden at every boundary of the outbound text policy too
    with _LOG_LOCK:
        _LOG_SECRETS.update(added)
    for name in _LOGGERS:
        log = logging.getLogger(name)
        if _FILTER not in log.filters:
            log.addFilter(_FILTER)
