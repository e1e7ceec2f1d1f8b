"""The ``TokenStorage`` methods shared by the storages that keep versioned rows (a file, a database table).

A storage subclasses ``VersionedTokenStorage`` and gives ``_get(kind, key)``,
``_set(kind, key, value, compare=)`` and ``delete_if_unchanged(key)``: this
class turns them into the ``TokenStorage`` protocol of
``yiemagent.mcp.auth.storage`` (tokens keyed by MCP server, clients keyed by
issuer), with compare-and-set for tokens so a slow refresh never overwrites
newer ones. It lives in the core because the storages sit in sibling layers
(``yiemagent.mcp.auth`` and ``yiemagent.store``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["VersionedTokenStorage"]


class VersionedTokenStorage:
    """``get_tokens``/``set_tokens``/``set_tokens_if_unchanged``/``get_client``/``set_client``/``delete``."""

    _tokens_kind = "tokens"
    """The kind under which tokens are stored."""
    _clients_kind = "clients"
    """The kind under which registered clients are stored (each storage keeps its own spelling)."""

    def _get(self, kind: str, key: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def _set(self, kind: str, key: str, value: dict[str, Any], *, compare: bool) -> bool:
        raise NotImplementedError

    def delete_if_unchanged(self, key: str) -> bool:
        """Forget the tokens of ``key`` unless newer ones were written since this object read them."""
        raise NotImplementedError

    def get_tokens(self, key: str) -> dict[str, Any] | None:
        """The tokens stored for the MCP server ``key`` (its resource URL), or ``None``."""
        return self._get(self._tokens_kind, key)

    def set_tokens(self, key: str, tokens: dict[str, Any]) -> None:
        """Store ``tokens`` for ``key`` unless another process wrote newer ones since this object read them."""
        self.set_tokens_if_unchanged(key, tokens)

    def set_tokens_if_unchanged(self, key: str, tokens: dict[str, Any]) -> bool:
        """Store ``tokens`` for ``key`` unless another process wrote newer ones since this object read them.

        Returns:
            ``True`` when written; ``False`` when the entry changed since this
            object's last ``get_tokens``/``set_tokens`` of ``key`` (the newer one is kept).
        """
        return self._set(self._tokens_kind, key, tokens, compare=True)

    def get_client(self, issuer: str) -> dict[str, Any] | None:
        """The client registered at the authorization server ``issuer``, or ``None``."""
        return self._get(self._clients_kind, issuer)

    def set_client(self, issuer: str, client: dict[str, Any]) -> None:
        """Store the client registered at ``issuer`` (replaces any)."""
        self._set(self._clients_kind, issuer, client, compare=False)

    def delete(self, key: str) -> None:
        """Forget the tokens of ``key`` (logout) unless newer ones were written since this object read them."""
        self.delete_if_unchanged(key)
