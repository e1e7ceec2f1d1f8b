"""The transport base: how JSON-RPC messages reach an MCP server.

A transport has two methods, like requests' adapters: ``send`` and ``close``.
``MCPClient`` owns the protocol (handshake, ids, retries); a transport only
moves messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["MessageHandler", "Transport"]

MessageHandler = Callable[[dict[str, Any]], "dict[str, Any] | None"]
"""Receives a server message that is not the awaited response (a notification,
or a server request such as ``ping``); returns the reply to a request, or None."""


class Transport:
    """Base class of MCP transports (Streamable HTTP, stdio)."""

    name: str = ""
    """Label of the server in errors and logs."""

    def send(
        self,
        message: dict[str, Any],
        *,
        timeout_seconds: float | None = None,
        on_message: MessageHandler | None = None,
    ) -> dict[str, Any] | None:
        """Send one JSON-RPC message.

        Args:
            message: a request (has ``id``) or a notification.
            timeout_seconds: seconds to wait for the complete response; None
                uses the transport's default.
            on_message: receives server messages that arrive before the
                response (progress, logging, ``list_changed``, ``ping``).

        Returns:
            The response message for a request (``{"id", "result"|"error"}``);
            None for a notification.

        Raises:
            MCPTransportError: the server is unreachable or answered HTTP non-2xx.
            MCPTimeoutError: no complete response within the timeout.
            MCPProtocolError: the reply cannot be read.
            MCPSessionExpiredError: the server no longer knows the session.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release the connection (end the session, stop the process)."""

    def cancel(self) -> None:
        """Cut the requests in flight, if the transport can (they fail with ``MCPTransportError``)."""

    def reset_session(self) -> None:
        """Forget session state so the next ``initialize`` starts afresh."""

    def set_protocol_version(self, version: str | None) -> None:
        """Record the negotiated protocol version (HTTP sends it as a header)."""
