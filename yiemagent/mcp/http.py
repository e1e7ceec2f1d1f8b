"""Streamable HTTP transport on a ``requests.Session`` (keep-alive).

Every JSON-RPC message is one ``POST`` to the endpoint with
``Accept: application/json, text/event-stream``. The server answers a request
with a JSON body or an SSE stream that may carry notifications and server
requests before the response; a notification is answered ``202 Accepted``
(or an empty ``200``). The ``Mcp-Session-Id`` the server gives at
``initialize`` is sent on every later request, the negotiated
``MCP-Protocol-Version`` once known; ``close()`` sends ``DELETE``.

Spec: MCP 2025-11-25 (also 2025-06-18, 2025-03-26), "Transports",
"Streamable HTTP".
"""

from __future__ import annotations

import codecs
import json
import logging
import time
from typing import Any

import requests
import urllib3.exceptions

from ..__version__ import __version__
from .._http import CancellableSession
from ..exceptions import MCPProtocolError, MCPSessionExpiredError, MCPTimeoutError, MCPTransportError
from . import jsonrpc
from .sse import SSEParser
from .transport import MessageHandler, Transport

__all__ = ["HTTPTransport"]

logger = logging.getLogger("yiemagent.mcp.http")

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


class HTTPTransport(Transport):
    """Streamable HTTP transport.

    Args:
        url: the MCP endpoint, e.g. ``"http://127.0.0.1:3001/mcp"``.
        headers: static headers sent on every request (e.g. ``Authorization``);
            never logged and never shown in ``repr``.
        timeout_seconds: default seconds to wait for a complete response
            (connect, each read, and the whole SSE stream).
        connect_timeout_seconds: seconds to wait for the TCP connection.
        session: a ``requests.Session`` to use; None makes one.
        name: label of the server in errors.

    Thread safety: ``send`` may be called from several threads at once.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        timeout_seconds: float = 30.0,
        connect_timeout_seconds: float = 10.0,
        session: requests.Session | None = None,
        name: str = "",
    ) -> None:
        self.url = url
        self.name = name or url
        self.timeout_seconds = timeout_seconds
        self.connect_timeout_seconds = connect_timeout_seconds
        self._static_headers = dict(headers or {})
        self._session = session or CancellableSession()
        self.session_id: str | None = None
        """The ``Mcp-Session-Id`` the server gave, or None (stateless server)."""
        self.protocol_version: str | None = None

    def __repr__(self) -> str:
        return f"HTTPTransport(url={self.url!r})"

    # ------------------------------------------------------------------ state

    def reset_session(self) -> None:
        """Forget ``Mcp-Session-Id`` and the protocol version (before a new ``initialize``)."""
        self.session_id = None
        self.protocol_version = None

    def set_protocol_version(self, version: str | None) -> None:
        """Send ``MCP-Protocol-Version: <version>`` on every later request."""
        self.protocol_version = version

    def _headers(self) -> dict[str, str]:
        headers = {
            **self._static_headers,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "User-Agent": f"yiemagent/{__version__}",
        }
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version:
            headers[VERSION_HEADER] = self.protocol_version
        return headers

    # ------------------------------------------------------------------ send

    def send(
        self,
        message: dict[str, Any],
        *,
        timeout_seconds: float | None = None,
        on_message: MessageHandler | None = None,
    ) -> dict[str, Any] | None:
        """POST one message; see ``Transport.send``. SSE and JSON replies are read alike."""
        timeout = self.timeout_seconds if timeout_seconds is None else timeout_seconds
        deadline = time.monotonic() + timeout
        method = message.get("method", "")
        sent_session = self.session_id
        try:
            response = self._session.post(
                self.url,
                data=json.dumps(message, ensure_ascii=False).encode("utf-8"),
                headers=self._headers(),
                timeout=(min(self.connect_timeout_seconds, timeout), timeout),
                stream=True,
            )
        except requests.exceptions.Timeout as exc:
            raise MCPTimeoutError(f"{method} to {self.name}: no answer within {timeout:g}s", server=self.name) from exc
        except requests.RequestException as exc:
            raise MCPTransportError(f"{method} to {self.name} failed: {exc}", server=self.name) from exc
        with response:
            if response.status_code >= 400:
                self._raise_for_status(response, method, sent_session)
            new_session = response.headers.get(SESSION_HEADER)
            if new_session and method == "initialize":
                self.session_id = new_session
            if not jsonrpc.is_request(message) or response.status_code == 202:
                return None  # a notification, or our reply to a server request: nothing to wait for
            content_type = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
            if content_type == "text/event-stream":
                return self._read_sse(response, message["id"], method, deadline, timeout, on_message)
            if content_type == "application/json":
                return self._read_json(response, message["id"], method, on_message)
            if response.status_code == 202:
                raise MCPProtocolError(f"{method} to {self.name}: 202 Accepted for a request", server=self.name)
            body = response.text[:500]
            raise MCPProtocolError(
                f"{method} to {self.name}: unexpected Content-Type {content_type!r} (HTTP {response.status_code})",
                server=self.name,
                body=body,
            )

    def _raise_for_status(self, response: requests.Response, method: str, sent_session: str | None) -> None:
        body = response.text[:2000]
        status = response.status_code
        if sent_session and (status == 404 or (status == 400 and "session" in body.lower())):
            # Python SDK: 404 for an unknown session; Node SDK: 400 "No valid session ID"
            raise MCPSessionExpiredError(
                -32001, f"session {sent_session!r} is not known to the server (HTTP {status}): {body[:200]}",
                server=self.name,
            )
        error = MCPTransportError(
            f"{method} to {self.name} answered HTTP {status}: {body}", server=self.name, status_code=status, body=body
        )
        error.retry_after = _retry_after(response)  # type: ignore[attr-defined]
        raise error

    def _deliver(
        self, item: Any, request_id: Any, on_message: MessageHandler | None
    ) -> dict[str, Any] | None:
        """Return ``item`` if it answers ``request_id``; hand anything else to ``on_message``."""
        if jsonrpc.is_response(item) and item.get("id") == request_id:
            return item  # type: ignore[no-any-return]
        if jsonrpc.is_request(item):
            reply = on_message(item) if on_message else None
            if reply is None and item.get("method") == "ping":
                reply = jsonrpc.make_response(item["id"], {})
            if reply is not None:
                self.send(reply)
        elif jsonrpc.is_notification(item):
            if on_message:
                on_message(item)
        else:
            logger.debug("%s: ignoring a message that answers nothing we wait for: %.200r", self.name, item)
        return None

    def _read_json(
        self, response: requests.Response, request_id: Any, method: str, on_message: MessageHandler | None
    ) -> dict[str, Any]:
        try:
            payload = json.loads(response.content.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise MCPProtocolError(
                f"{method} to {self.name}: the JSON reply does not parse: {exc}", server=self.name,
                body=response.text[:500],
            ) from exc
        items = payload if isinstance(payload, list) else [payload]
        for item in items:
            found = self._deliver(item, request_id, on_message)
            if found is not None:
                return found
        raise MCPProtocolError(f"{method} to {self.name}: the reply has no response with id {request_id!r}",
                               server=self.name, body=response.text[:500])

    def _read_sse(
        self,
        response: requests.Response,
        request_id: Any,
        method: str,
        deadline: float,
        timeout: float,
        on_message: MessageHandler | None,
    ) -> dict[str, Any]:
        parser = SSEParser()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            for chunk in response.iter_content(chunk_size=None):
                for event in parser.feed(decoder.decode(chunk)):
                    found = self._sse_event(event.data, event.event, request_id, method, on_message)
                    if found is not None:
                        return found
                if time.monotonic() > deadline:
                    raise MCPTimeoutError(
                        f"{method} to {self.name}: no response within {timeout:g}s", server=self.name
                    )
        except requests.exceptions.ConnectionError as exc:
            if exc.args and isinstance(exc.args[0], urllib3.exceptions.ReadTimeoutError):
                raise MCPTimeoutError(
                    f"{method} to {self.name}: no response within {timeout:g}s", server=self.name
                ) from exc
            raise MCPTransportError(f"{method} to {self.name}: the stream broke: {exc}", server=self.name) from exc
        except requests.RequestException as exc:
            raise MCPTransportError(f"{method} to {self.name}: the stream broke: {exc}", server=self.name) from exc
        for event in parser.close():
            found = self._sse_event(event.data, event.event, request_id, method, on_message)
            if found is not None:
                return found
        raise MCPTransportError(
            f"{method} to {self.name}: the SSE stream ended without the response", server=self.name
        )

    def _sse_event(
        self, data: str, event: str, request_id: Any, method: str, on_message: MessageHandler | None
    ) -> dict[str, Any] | None:
        if event != "message" or not data.strip():
            return None  # priming events, other event types
        try:
            item = json.loads(data)
        except ValueError as exc:
            raise MCPProtocolError(
                f"{method} to {self.name}: an SSE event is not JSON: {exc}", server=self.name, body=data[:500]
            ) from exc
        for each in item if isinstance(item, list) else [item]:
            found = self._deliver(each, request_id, on_message)
            if found is not None:
                return found
        return None

    def cancel(self) -> None:
        """Cut every request in flight (each fails with ``MCPTransportError``)."""
        cancel = getattr(self._session, "cancel", None)
        if cancel is not None:
            cancel()

    # ------------------------------------------------------------------ close

    def close(self) -> None:
        """End the session with ``DELETE`` (best effort) and close the connections."""
        if self.session_id:
            try:
                self._session.delete(self.url, headers=self._headers(), timeout=(2, 2))
            except requests.RequestException as exc:
                logger.debug("DELETE %s failed: %s", self.url, exc)
        self.reset_session()
        self._session.close()
