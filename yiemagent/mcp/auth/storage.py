"""Where OAuth tokens and registered clients live: the ``TokenStorage`` protocol and the in-memory one.

Tokens are keyed by the MCP server's resource URL (its canonical URI, RFC 8707),
registered clients by the authorization server's ``issuer`` (a client
registered at one authorization server is never sent to another). Storages
must be safe to call from several threads; file and database storages (other
modules) share one login between processes.

A storage shared between processes may also offer ``refresh_lock(key)`` (a
context manager): ``OAuth`` holds it around "read again, refresh if still
needed, store", so that one process refreshes at a time (authorization
servers that rotate refresh tokens revoke the family when one is used twice).

Token dicts: ``{"access_token": str, "token_type": str, "expires_at": float
(epoch seconds) | None, "refresh_token"?: str, "scope"?: str, "issuer"?: str}`` (``issuer``: the
authorization server that issued them). Client dicts:
the RFC 7591 registration response (``client_id``, ``client_secret``?,
``token_endpoint_auth_method``?, ...).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

__all__ = ["MemoryTokenStorage", "RedirectHandler", "TokenStorage"]

RedirectHandler = Callable[[str], "tuple[str, str | None] | tuple[str, str | None, str | None]"]
"""``handler(authorization_url) -> (code, state)`` or ``(code, state, iss)``: lets the user (or a test) log in
and returns the ``code``, ``state`` and ``iss`` (RFC 9207; None if absent) query parameters the authorization
server sent to the redirect URI. Return ``iss`` whenever the redirect had one: the client must check it (MCP
2026-07-28). May raise (the flow fails with ``MCPAuthorizationError``, naming the exception's type only)."""


@runtime_checkable
class TokenStorage(Protocol):
    """A sync store of tokens (keyed by resource URL) and registered clients (keyed by issuer)."""

    def get_tokens(self, key: str) -> dict[str, Any] | None:
        """The tokens stored for the MCP server ``key`` (its resource URL), or None."""
        ...

    def set_tokens(self, key: str, tokens: dict[str, Any]) -> None:
        """Store ``tokens`` for ``key``, replacing any."""
        ...

    def get_client(self, issuer: str) -> dict[str, Any] | None:
        """The client registered at the authorization server ``issuer``, or None."""
        ...

    def set_client(self, issuer: str, client: dict[str, Any]) -> None:
        """Store the client registered at ``issuer``, replacing any."""
        ...

    def delete(self, key: str) -> None:
        """Forget the tokens of ``key`` (logout); no error if there are none."""
        ...


class MemoryTokenStorage:
    """Tokens and clients in this process's memory (the default); its ``repr`` names keys only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, dict[str, Any]] = {}
        self._clients: dict[str, dict[str, Any]] = {}

    def __repr__(self) -> str:
        with self._lock:
            return f"MemoryTokenStorage(tokens={sorted(self._tokens)!r}, clients={sorted(self._clients)!r})"

    def get_tokens(self, key: str) -> dict[str, Any] | None:
        """A copy of the tokens of ``key``, or None."""
        with self._lock:
            found = self._tokens.get(key)
            return copy.deepcopy(found) if found is not None else None

    def set_tokens(self, key: str, tokens: dict[str, Any]) -> None:
        """Store a copy of ``tokens`` for ``key``."""
        with self._lock:
            self._tokens[key] = copy.deepcopy(tokens)

    def get_client(self, issuer: str) -> dict[str, Any] | None:
        """A copy of the client registered at ``issuer``, or None."""
        with self._lock:
            found = self._clients.get(issuer)
            return copy.deepcopy(found) if found is not None else None

    def set_client(self, issuer: str, client: dict[str, Any]) -> None:
        """Store a copy of ``client`` for ``issuer``."""
        with self._lock:
            self._clients[issuer] = copy.deepcopy(client)

    def delete(self, key: str) -> None:
        """Forget the tokens of ``key``."""
        with self._lock:
            self._tokens.pop(key, None)
