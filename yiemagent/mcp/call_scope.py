"""Which client request a server's request serves: a count per call of what the server asked while it ran.

``serving()`` is opened by ``MCPClient`` around each ``tools/call``,
``prompts/get`` and ``resources/read`` (all rounds of a 2026-07-28 multi
round-trip request); the server's requests answered meanwhile on that thread,
or on the callback thread it starts (``server_messages`` copies the context),
see it: the 2026-07-28 ``inputRequests`` and the 2025-11-25 requests that come
on the call's own HTTP stream. ``take(kind, limit)`` counts one ``kind``
(e.g. ``"sampling"``) against ``limit`` for the call in progress. Over stdio
in the 2025-11-25 era a server's request names no call: no scope, nothing
counted here (per-run bounds hold there).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["serving", "take"]

_counts: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar("yiemagent_mcp_call", default=None)


@contextmanager
def serving() -> Iterator[None]:
    """A call of the client in progress on this thread (nested: the outer call's counts go on)."""
    if _counts.get() is not None:
        yield
        return
    token = _counts.set({})
    try:
        yield
    finally:
        _counts.reset(token)


def take(kind: str, limit: int) -> int | None:
    """Count one ``kind`` for the call in progress; how many it made before, when that reached ``limit``, else None.

    With no call in progress (no ``serving()`` scope) nothing is counted and None is returned.
    """
    counts = _counts.get()
    if counts is None:
        return None
    done = counts.get(kind, 0)
    if done >= limit:
        return done
    counts[kind] = done + 1
    return None
