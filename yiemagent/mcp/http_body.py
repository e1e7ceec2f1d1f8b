"""Reading an HTTP response body under a deadline, and turning an error status into an ``MCPError``.

``timed_chunks`` yields the body as it arrives (``_http.body_chunks``) and
ends the read at the request's deadline: each socket read is bounded by the
time left, and a body that ends at or after the deadline (the session's
watchdog cut its socket) is a timeout, not a short answer; its ``check``
raises ``Cancelled`` to end the read when the transport's ``cancel()`` was
called. ``status_error`` reads a little of an error body (5 s at most) for
the message.

Spec: MCP 2025-11-25, "Streamable HTTP" (status codes, session expiry).
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import requests
import urllib3.exceptions

from .._internal.http import body_chunks, origin_of
from .._internal.jsonload import loads_bounded
from .._internal.retry import retry_after_seconds
from ..exceptions import (
    MCPError,
    MCPProtocolError,
    MCPRPCError,
    MCPSessionExpiredError,
    MCPTimeoutError,
    MCPTransportError,
)
from ..textpolicy import boundary, display_text, strict_json_text
from . import jsonrpc

__all__ = [
    "ERROR_BODY_CHARS",
    "SESSION_HEADER",
    "Cancelled",
    "body_text",
    "check_accepted",
    "encode_http_body",
    "http_transport_repr",
    "is_read_timeout",
    "redirect_error",
    "session_id_of",
    "set_read_timeout",
    "timed_chunks",
]

logger = logging.getLogger("yiemagent.mcp.http")

ERROR_BODY_CHARS = 2000
"""Characters of an error body kept in messages and ``.body``."""
SESSION_HEADER = "Mcp-Session-Id"


class Cancelled(Exception):
    """Internal: ``cancel()`` was called while the request was in flight (never leaves ``HTTPTransport``)."""


def is_read_timeout(exc: BaseException) -> bool:
    """True when ``exc`` (or what it wraps or chains) is a read timeout."""
    cause: BaseException | None = exc
    for _ in range(6):
        if cause is None:
            return False
        if isinstance(cause, (urllib3.exceptions.ReadTimeoutError, socket.timeout, requests.exceptions.Timeout)):
            return True
        if isinstance(cause, requests.exceptions.ConnectionError) and cause.args and isinstance(
            cause.args[0], BaseException
        ):
            cause = cause.args[0]
            continue
        cause = cause.__cause__ or cause.__context__
    return False


def set_read_timeout(response: requests.Response, seconds: float) -> None:
    """Bound the next socket read to ``seconds`` (the watchdog bounds the whole request)."""
    connection = getattr(response.raw, "connection", None) or getattr(response.raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        try:
            sock.settimeout(max(seconds, 0.001))
        except OSError:
            pass


def timed_chunks(
    response: requests.Response, *, deadline: float, what: str, timeout: float, server: str,
    check: Callable[[], None] | None = None, now: Callable[[], float] = time.monotonic,
) -> Iterator[bytes]:
    """The body's chunks as they arrive; the whole read ends at ``deadline`` (``now()`` seconds).

    Args:
        response: a ``stream=True`` response.
        deadline: ``now()`` value when the request must be done.
        what: ``"tools/call to <server>"``, the start of error messages.
        timeout: the request's timeout in seconds (for the message).
        server: the server name carried by errors.
        check: called before each read and at the end; it raises to stop
            (the transport's cancel check).
        now: the clock of ``deadline``: ``time.monotonic``, or a transport's
            ``PausableClock.now`` (time spent in a client callback between
            two chunks then does not count).

    Raises:
        MCPTimeoutError: the deadline passed (also when the body ended at it).
        requests.ConnectionError: the connection broke before the deadline.
    """
    chunks = body_chunks(response)
    while True:
        if check is not None:
            check()
        remaining = deadline - now()
        if remaining <= 0:
            raise MCPTimeoutError(f"{what}: no complete answer within {timeout:g}s", server=server)
        set_read_timeout(response, remaining)
        try:
            chunk = next(chunks)
        except StopIteration:
            if check is not None:
                check()
            if now() >= deadline:
                raise MCPTimeoutError(f"{what}: no complete answer within {timeout:g}s", server=server) from None
            return
        except requests.exceptions.ConnectionError as exc:
            if check is not None:
                check()
            if is_read_timeout(exc) or now() >= deadline:
                raise MCPTimeoutError(f"{what}: no complete answer within {timeout:g}s", server=server) from exc
            raise
        yield chunk


def body_text(
    response: requests.Response, *, deadline: float, what: str, timeout: float, server: str,
    scrub: Callable[[str], str], limit: int = ERROR_BODY_CHARS, now: Callable[[], float] = time.monotonic,
) -> str:
    """Up to ``limit`` characters of the body (scrubbed, invalid UTF-8 replaced); never waits past ``deadline``."""
    data = b""
    try:
        for chunk in timed_chunks(response, deadline=deadline, what=what, timeout=timeout, server=server, now=now):
            data += chunk
            if len(data) >= limit * 4:
                break
    except (MCPTimeoutError, requests.RequestException) as exc:
        logger.debug("%s: reading the body failed: %s", server, scrub(str(exc)))
    return scrub(data.decode("utf-8", errors="replace")[:limit])


def status_error(
    response: requests.Response, *, what: str, sent_session: str | None, deadline: float, server: str,
    scrub: Callable[[str], str], now: Callable[[], float] = time.monotonic, request_id: Any = None,
) -> MCPError:
    """The error for an HTTP status >= 400.

    Args:
        response: the HTTP response (its body is read, at most to ``deadline``).
        what: the request, as errors name it (e.g. ``"tools/call echo"``).
        sent_session: the ``Mcp-Session-Id`` the request carried, or None.
        deadline: ``now()`` value by which reading the body must end.
        server: the server's short name (errors).
        scrub: removes secrets from text put into errors.
        now: the clock ``deadline`` is measured on (seconds).
        request_id: the JSON-RPC ``id`` of the request answered (None: a
            notification, a response, or a ``GET``).

    Returns:
        ``MCPSessionExpiredError`` for a 404 (or a 400 naming the session) to
        a request that carried ``Mcp-Session-Id`` (handshake era); else
        ``MCPRPCError`` (``.code``, ``.message``, ``.data``) for any 4xx whose
        body is a JSON-RPC error response to ``request_id`` (both eras: e.g.
        a 2026-07-28 server's HTTP 400 with -32602 for an unknown resource),
        or a 400/404 whose body is a JSON-RPC error with a code only modern
        (2026-07-28) servers send (-32020, -32021, -32022), or a 404 with
        -32601 (method not found); else ``MCPTransportError`` with
        ``status_code``, ``body`` and ``retry_after`` (seconds, from
        ``Retry-After``). A JSON-RPC error with another id (``null``,
        ``"server-error"``: a handshake-era server refusing a request it
        cannot place) stays ``MCPTransportError``, which the era
        negotiation reads as "a legacy server".

    Spec: JSON-RPC 2.0 ("Response object": ``id`` of the request); MCP
    2026-07-28, "Streamable HTTP" (errors as HTTP 4xx with a JSON-RPC body).
    """
    status = response.status_code
    body = body_text(response, deadline=min(deadline, now() + 5.0), what=what, timeout=5.0, server=server,
                     scrub=scrub, now=now)
    if sent_session and (status == 404 or (status == 400 and "session" in body.lower())):
        # Python SDK: 404 for an unknown session; Node SDK: 400 "No valid session ID provided"
        return MCPSessionExpiredError(
            -32001, f"session {sent_session!r} is not known to the server (HTTP {status}): {body[:200]}",
            {"session_id": sent_session, "status_code": status}, server=server,
        )
    error = jsonrpc.error_in_body(body) if 400 <= status < 500 else None
    if error is not None and (_answers(body, request_id) or (status in (400, 404) and (
            error["code"] in jsonrpc.MODERN_ERROR_CODES or (status == 404 and error["code"] == -32601)))):
        # the JSON-RPC error is the answer to our request, whatever the HTTP status (MCP 2026-07-28 servers
        # reject with 400, or 404 for an unknown method; e.g. -32022 UnsupportedProtocolVersion with data.supported)
        return MCPRPCError.from_error(error, server=server)
    reason = f" {response.reason}" if response.reason else ""
    return MCPTransportError(
        f"{what} answered HTTP {status}{reason}: {body[:500]}", server=server, status_code=status, body=body,
        retry_after=retry_after_seconds(response.headers.get("Retry-After")),
    )


def _answers(body: str, request_id: Any) -> bool:
    """True when ``body`` is a JSON-RPC response whose ``id`` is ``request_id`` (never for a None id)."""
    if request_id is None or isinstance(request_id, bool):
        return False
    try:
        payload = loads_bounded(body)
    except ValueError:
        return False
    found = payload.get("id") if isinstance(payload, dict) else None
    return type(found) is type(request_id) and found == request_id


def check_accepted(text: str, *, what: str, server: str) -> None:
    """The body of the answer to a notification or a response: it must carry no JSON-RPC response.

    MCP: 202 with no body (an empty 200 is accepted too). Other text is ignored (logged at DEBUG).

    Raises:
        MCPProtocolError: the body holds a JSON-RPC response (a result for a notification).
    """
    if not text.strip():
        return
    try:
        payload = loads_bounded(text)
    except ValueError:
        logger.debug("%s: ignoring the body of the answer to a notification: %.200r", server, text)
        return
    items = payload if isinstance(payload, list) else [payload]
    if any(jsonrpc.is_response(item) for item in items):
        raise MCPProtocolError(f"{what}: the server answered a notification (no id) with a JSON-RPC response",
                               server=server, body=text[:500])


def redirect_error(response: requests.Response, *, what: str, server: str) -> MCPTransportError:
    """The error for a 3xx a plain ``requests.Session`` did not follow."""
    location = response.headers.get("Location", "")
    return MCPTransportError(
        f"{what} answered HTTP {response.status_code} (a redirect to {origin_of(location) if location else '?'}),"
        " which this session does not follow (only a CancellableSession follows same-origin redirects)",
        server=server, status_code=response.status_code,
    )


def session_id_of(response: requests.Response, *, what: str, server: str, url: str) -> str | None:
    """The ``Mcp-Session-Id`` an ``initialize`` answer gives, or None.

    The same value sent twice (a proxy's duplicate) is one id, never
    ``"a, a"``; an id given by another origin (a followed redirect's target)
    is ignored.

    Raises:
        MCPProtocolError: two different values, or an id that is not visible ASCII.
    """
    getlist = getattr(getattr(response.raw, "headers", None), "getlist", None)
    values = [v.strip() for v in getlist(SESSION_HEADER)] if callable(getlist) else (
        [response.headers[SESSION_HEADER]] if SESSION_HEADER in response.headers else [])
    if not values:
        return None
    if len(set(values)) > 1:
        raise MCPProtocolError(f"{what}: the server sent two different Mcp-Session-Id headers: "
                               f"{sorted(set(values))!r:.120}", server=server)
    session_id = str(values[0])
    if origin_of(response.url) != origin_of(url):
        logger.warning("%s: ignoring the Mcp-Session-Id given by %s (a redirect's target, another origin)",
                       server, origin_of(response.url))
        return None
    if not session_id or not all(0x21 <= ord(c) <= 0x7E for c in session_id):
        raise MCPProtocolError(f"{what}: the Mcp-Session-Id is not visible ASCII: {session_id!r:.80}", server=server)
    return session_id


@boundary("mcp_request_http", "mcp")
def encode_http_body(message: dict[str, Any], *, what: str = "a message", server: str = "") -> bytes:
    """The UTF-8 JSON body of a POST to a Streamable HTTP server (the ``mcp_request_http`` boundary).

    The outbound text policy's ``mcp`` rule (``yiemagent.textpolicy``).

    Raises:
        MCPProtocolError: a lone surrogate, NaN/Infinity or a value that is not JSON; nothing was sent.
    """
    try:
        return strict_json_text(message).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MCPProtocolError(f"{what}: cannot be sent: a string is not valid Unicode ({exc.reason}: "
                               f"{exc.object[exc.start:exc.end]!r}); nothing was sent", server=server) from None
    except (ValueError, TypeError) as exc:
        raise MCPProtocolError(f"{what}: cannot be sent as JSON ({type(exc).__name__}: {exc}); nothing was sent",
                               server=server) from None


@boundary("repr_http_transport", "display")
def http_transport_repr(url: str, header_names: list[str] | None = None) -> str:
    """``HTTPTransport(url=..., headers=[names])``: no password, query value or known secret (a path token)."""
    headers = f", headers={header_names!r}" if header_names else ""
    return display_text(f"HTTPTransport(url={url!r}{headers})")

