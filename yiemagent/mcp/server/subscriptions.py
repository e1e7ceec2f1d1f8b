"""Resource subscriptions (MCP 2025-11-25 "Resources", Subscriptions): who watches which URI, and telling them.

``resources/subscribe`` ``{"uri"}`` and ``resources/unsubscribe`` ``{"uri"}`` (answered ``{}``) record a
session's interest; ``MCPServer.resource_updated(uri)`` sends ``notifications/resources/updated``
``{"uri"}`` to every session subscribed to ``uri`` that has a listener: the standalone ``GET`` SSE stream of
its HTTP session (``WSGIApp``), or stdout over stdio. A session without an open stream misses the
notification (the spec gives the server no other way to reach it); a client reads the resource again when it
reconnects. At most ``MAX_SUBSCRIPTIONS`` URIs per session. Sessions are held weakly: an ended or expired
session is forgotten. The 2026-07-28 era has no ``resources/subscribe`` (``subscriptions/listen`` instead,
not served yet).
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .calls import ServerSession

__all__ = ["MAX_SUBSCRIPTIONS", "Subscriptions"]

logger = logging.getLogger("yiemagent.mcp.server.subscriptions")

MAX_SUBSCRIPTIONS = 1000
"""URIs one session may watch at once; one more is refused (-32602)."""


class Subscriptions:
    """The subscribed sessions of each URI (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watchers: dict[str, weakref.WeakSet[ServerSession]] = {}

    def subscribe(self, session: ServerSession, uri: str) -> bool:
        """Record that ``session`` watches ``uri``; False when it watches ``MAX_SUBSCRIPTIONS`` URIs already."""
        with self._lock:
            if uri not in session.subscriptions and len(session.subscriptions) >= MAX_SUBSCRIPTIONS:
                return False
            session.subscriptions.add(uri)
            self._watchers.setdefault(uri, weakref.WeakSet()).add(session)
            return True

    def unsubscribe(self, session: ServerSession, uri: str) -> None:
        """Forget that ``session`` watches ``uri`` (nothing happens when it did not)."""
        with self._lock:
            session.subscriptions.discard(uri)
            watchers = self._watchers.get(uri)
            if watchers is not None:
                watchers.discard(session)
                if not watchers:
                    del self._watchers[uri]

    def updated(self, uri: str) -> int:
        """Send ``notifications/resources/updated`` for ``uri`` to its watchers; the number reached."""
        with self._lock:
            sessions = list(self._watchers.get(uri, ()))
        note = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
        reached = 0
        for session in sessions:
            listener = session.listener
            if listener is None or uri not in session.subscriptions:
                continue
            try:
                listener(note)
                reached += 1
            except Exception:  # a stream that broke: the session's own business, never the caller's
                logger.warning("a resource update could not be sent to session %s", session.id[:6], exc_info=True)
        return reached
