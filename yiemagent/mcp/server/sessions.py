"""The 2025-11-25 sessions of one process, bounded per owner: one client can exhaust only its own share.

``MemorySessions`` keeps each session with its *owner*: the verified token's principal
(``AccessToken.principal``, ``"principal sub:alice"``) when ``BearerAuth`` is in front, else the client's
address (``"address 203.0.113.7"``, ``REMOTE_ADDR``). ``session_owner(identity, remote_address)`` makes
the key. Rules:

- a session owned by a principal is that principal's: ``get`` / ``remove`` with another owner find nothing
  (the request is answered 404, as an unknown session; MCP security best practices, session hijacking);
  a session owned by an address is not checked on use (addresses change; its 192-bit id is the secret);
- one owner holds at most ``max_sessions_per_owner`` live sessions: another ``add`` raises
  ``SessionRefused`` (HTTP 429): the owner ends one (``DELETE``) or waits for one to expire. It never
  evicts anyone's session, its own included;
- past ``max_sessions`` in all, an expired session is dropped, else an idle one (no call in flight, no open
  ``GET`` stream) of the owner holding the most sessions (a flood from many addresses recycles its own), else
  the least recently used idle one (its calls, none, are not touched); when every session is busy, ``add``
  raises ``SessionRefused`` (HTTP 503). A session with a call running is never dropped for room;
- a session idle for ``idle_seconds`` expires (its calls in flight are aborted);
- one owner holds at most ``max_streams_per_owner`` standalone ``GET`` streams open over all its sessions
  (``listen``: another is 429): each holds a server thread.

Behind a proxy every unauthenticated client has the proxy's address: set ``REMOTE_ADDR`` from the
forwarded header (werkzeug's ``ProxyFix``) or raise ``max_sessions_per_owner``.

Spec: MCP 2025-11-25 "Transports" (Session Management), "Security Best Practices" (Session Hijacking).
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict
from typing import Any, Generic, Protocol, TypeVar

from ..._internal.checks import check_int, check_number

__all__ = ["MemorySessions", "SessionRefused", "session_owner"]

_ANY = object()
_SCAN_FOR_ROOM = 1000
"""Least recently used sessions looked at for an idle one to drop when the process is full."""


def session_owner(identity: Any, remote_address: str | None) -> str:
    """The owner key of a session begun with ``identity`` (an ``AccessToken`` or None) from ``remote_address``.

    The token's principal; else (no token, or a token naming no subject and no client) the address, an IPv6
    one's /64 network (a host gets a whole /64: counted per address, the per-owner bound would bind nobody).
    """
    principal = getattr(identity, "principal", None) if identity is not None else None
    if principal:
        return f"principal {principal}"
    try:  # an IPv6 client holds a whole /64 (2**64 addresses): one owner, as one IPv4 address is
        address = ipaddress.ip_address(remote_address or "")
    except ValueError:
        return f"address {remote_address or ''}"
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is None:
        return f"address {ipaddress.ip_network(f'{address}/64', strict=False)}"
    return f"address {address}"  # a token naming nobody shares no principal's share or sessions


class ServerSession(Protocol):
    """What the store uses of a ``calls.ServerSession`` (no import: ``calls`` imports this module)."""

    id: str
    last_seen: float
    lock: threading.Lock
    calls: dict[Any, threading.Event]
    listener: Any

    def cancel_all(self) -> None:
        """Abort the session's calls in flight."""


S = TypeVar("S", bound=ServerSession)


class SessionRefused(Exception):
    """A new session is refused: ``status`` 429 (its owner holds its share) or 503 (every session is busy)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class MemorySessions(Generic[S]):
    """The sessions of this process, bounded per owner and in all, expiring (see the module docstring).

    Args:
        max_sessions: sessions kept in all (>= 1).
        idle_seconds: a session unused this long expires (> 0).
        max_sessions_per_owner: live sessions one owner may hold (>= 1).
        max_streams_per_owner: standalone ``GET`` streams one owner may hold open at once, over all its sessions
            (>= 1; each holds a server thread: 8 from one user stopped the guide's 8-thread deployment).

    Raises:
        ConfigError: a bound that is not an int (a bool, NaN, a float) or out of its range (a ``ValueError``).

    Thread-safe.
    """

    def __init__(self, max_sessions: int = 10_000, idle_seconds: float = 3600.0,
                 max_sessions_per_owner: int = 100, *, max_streams_per_owner: int = 4) -> None:
        check_int("max_sessions", max_sessions, minimum=1)  # NaN, a float, a bool: refused, never unbounded
        check_number("idle_seconds", idle_seconds)
        check_int("max_sessions_per_owner", max_sessions_per_owner, minimum=1)
        check_int("max_streams_per_owner", max_streams_per_owner, minimum=1)
        self.max_streams_per_owner = max_streams_per_owner
        self.max_sessions, self.idle_seconds = max_sessions, idle_seconds
        self.max_sessions_per_owner = max_sessions_per_owner
        self._sessions: OrderedDict[str, S] = OrderedDict()
        self._owner: dict[str, str | None] = {}
        self._owned: dict[str | None, set[str]] = {}
        self._lock = threading.Lock()

    def add(self, session: S, owner: str | None = None) -> None:
        """Keep ``session``, owned by ``owner`` (``session_owner``; None: no owner, no share).

        Raises:
            SessionRefused: ``owner`` holds ``max_sessions_per_owner`` live sessions (429), or the process
                holds ``max_sessions`` and none of them is idle (503).
        """
        now = time.monotonic()
        dropped: list[S] = []
        try:
            with self._lock:
                if owner is not None:
                    mine = self._owned.get(owner, set())
                    for session_id in [i for i in mine if now - self._sessions[i].last_seen > self.idle_seconds]:
                        dropped.append(self._pop(session_id))
                    if len(self._owned.get(owner, ())) >= self.max_sessions_per_owner:
                        raise SessionRefused(f"Too many sessions: this client holds {self.max_sessions_per_owner}; "
                                             "end one (DELETE) or let one expire", 429)
                while len(self._sessions) >= self.max_sessions:
                    victim = self._idle_victim(now)
                    if victim is None:
                        raise SessionRefused("Too many sessions on this server, all of them busy; try again later",
                                             503)
                    dropped.append(self._pop(victim))
                self._sessions[session.id] = session
                self._owner[session.id] = owner
                self._owned.setdefault(owner, set()).add(session.id)
        finally:
            for each in dropped:
                each.cancel_all()

    def _idle_victim(self, now: float) -> str | None:
        """The session to drop for room (None: every one looked at is busy).

        An expired one; else an idle one of the owner holding the most (a client flooding from many addresses
        recycles its own sessions first); else the least recently used idle one.
        """
        oldest = next(iter(self._sessions.values()), None)
        if oldest is not None and now - oldest.last_seen > self.idle_seconds:
            return oldest.id
        crowded = len(self._sessions) >= 2 * len(self._owned)  # some owner holds several: worth finding
        largest = max((ids for owner, ids in self._owned.items() if owner is not None), key=len, default=set()) \
            if crowded else set()
        if len(largest) > 1:
            idle = [s for s in map(self._sessions.__getitem__, largest) if not self._busy(s)]
            if idle:
                return min(idle, key=lambda s: s.last_seen).id
        for number, (session_id, session) in enumerate(self._sessions.items()):
            if number >= _SCAN_FOR_ROOM:
                return None
            if now - session.last_seen > self.idle_seconds or not self._busy(session):
                return session_id
        return None

    @staticmethod
    def _busy(session: S) -> bool:
        with session.lock:
            return bool(session.calls) or session.listener is not None

    def _pop(self, session_id: str) -> S:
        session = self._sessions.pop(session_id)
        owner = self._owner.pop(session_id, None)
        owned = self._owned.get(owner)
        if owned is not None:
            owned.discard(session_id)
            if not owned:
                del self._owned[owner]
        return session

    def _mine(self, session_id: str, owner: Any) -> bool:
        recorded = self._owner.get(session_id)
        return owner is _ANY or not (recorded or "").startswith("principal ") or recorded == owner

    def get(self, session_id: str, owner: Any = _ANY) -> S | None:
        """The live session ``session_id`` (its ``last_seen`` updated), or None.

        None: unknown, expired, or (``owner`` given) owned by another principal.
        """
        now = time.monotonic()
        expired = None
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or not self._mine(session_id, owner):
                return None
            if now - session.last_seen > self.idle_seconds:
                expired = self._pop(session_id)
            else:
                session.last_seen = now
                self._sessions.move_to_end(session_id)
        if expired is not None:
            expired.cancel_all()
            return None
        return session

    def remove(self, session_id: str, owner: Any = _ANY) -> bool:
        """End the session (its calls in flight are aborted); False when it was not there (or is another's)."""
        with self._lock:
            session = self._pop(session_id) if session_id in self._sessions and self._mine(session_id, owner) \
                else None
        if session is None:
            return False
        session.cancel_all()
        return True

    def listen(self, session: S, listener: Any) -> int:
        """Make ``listener`` the session's ``GET`` stream; 0, else the HTTP status refusing it.

        409: the session has one; 429: its owner holds ``max_streams_per_owner`` open streams (an unowned
        session has no share).
        """
        with self._lock:
            owner = self._owner.get(session.id)
            mine = [self._sessions[i] for i in self._owned.get(owner, ())] if owner is not None else []
            open_streams = 0
            for each in mine:
                with each.lock:
                    open_streams += each.listener is not None
            with session.lock:
                if session.listener is not None:
                    return 409
                if open_streams >= self.max_streams_per_owner:
                    return 429
                session.listener = listener
        return 0

    def count(self, owner: str | None) -> int:
        """Sessions ``owner`` holds now (expired ones not yet dropped included)."""
        with self._lock:
            return len(self._owned.get(owner, ()))

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)
