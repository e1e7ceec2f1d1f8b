"""Is the HTTP client of a request still there? One probe for every WSGI server the guide names.

``ClientPresence(environ).gone()`` answers, without blocking, whether the client
that sent the request has closed its connection (or reset it):

- waitress: ``environ["waitress.client_disconnected"]`` (waitress notices a close
  while a request runs only with ``channel_request_lookahead`` of 1 or more:
  ``waitress-serve --channel-request-lookahead=1``; the guide's command sets it);
- gunicorn (``environ["gunicorn.socket"]``) and werkzeug's server
  (``environ["werkzeug.socket"]``): the request's socket, looked at with a
  zero-timeout ``poll`` and, when readable, ``recv(1, MSG_PEEK)``: end of
  stream (``b""``) or a socket error means gone; data (a next request) means
  there. A client that half-closes (``shutdown(SHUT_WR)``) after its request
  counts as gone: MCP clients do not. TLS sockets are peeked at below TLS;
- any other server: unknown (``gone()`` is False); a failed write of the
  SSE stream still ends the call (the server closes the body).

The app's waits (``yiemagent.mcp.server.wsgi``) wake every ``PROBE_SECONDS`` to
ask, so a call whose client left is cancelled (its abort event set) within about
that long, whatever it is doing: running, waiting for the client's answer, or
streaming.

Spec: PEP 3333 (``environ`` extensions keyed by server name); MCP 2025-11-25
"Transports" (a disconnection is not a cancellation unless the server treats
it so; yiemagent does: nobody is left to get the result); MCP 2026-07-28
"Transports" (closing the connection cancels the request).
"""

from __future__ import annotations

import select
import socket
from collections.abc import Callable
from typing import Any

__all__ = ["PROBE_SECONDS", "ClientPresence"]

PROBE_SECONDS = 0.5
"""How often a waiting request asks whether its client is still there."""

_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)


class ClientPresence:
    """Whether the client of one WSGI request is still connected (see the module docstring)."""

    def __init__(self, environ: dict[str, Any]) -> None:
        check = environ.get("waitress.client_disconnected")
        self._check: Callable[[], Any] | None = check if callable(check) else None
        sock = environ.get("gunicorn.socket") or environ.get("werkzeug.socket")
        self._socket = sock if hasattr(sock, "fileno") else None
        self._gone = False

    @property
    def known(self) -> bool:
        """True when this server lets the app see a client leave (waitress, gunicorn, werkzeug)."""
        return self._check is not None or self._socket is not None

    def gone(self) -> bool:
        """True once the client has closed or reset its connection; never blocks; stays True."""
        if self._gone:
            return True
        if self._check is not None:
            try:
                self._gone = bool(self._check())
            except Exception:  # a server's probe that fails: assume the connection is unusable
                self._gone = True
        elif self._socket is not None:
            self._gone = _socket_gone(self._socket)
        return self._gone

    def mark_gone(self) -> None:
        """Record that the client is gone (a write to it failed)."""
        self._gone = True


def _ready(fd: int) -> bool:
    """True when ``fd`` has something to read, or an error, now.

    ``poll`` takes any descriptor number; ``select`` (no ``poll``: Windows) only those below ``FD_SETSIZE``, and
    for a higher one the probe says nothing (False) rather than call every client gone.
    """
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLPRI)
        try:
            return bool(poller.poll(0))
        except OSError:
            return True
    try:
        readable, _, broken = select.select([fd], [], [fd], 0)
    except ValueError:
        return False
    except OSError:
        return True
    return bool(readable or broken)


def _socket_gone(sock: Any) -> bool:
    try:
        fd = sock.fileno()
    except (OSError, ValueError):
        return True
    if fd < 0:
        return True  # closed by the server already
    if not _ready(fd):
        return False
    raw = socket.socket(fileno=fd)  # the plain socket under a TLS one: MSG_PEEK sees its end of stream too
    try:
        return raw.recv(1, socket.MSG_PEEK | _DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:  # reset, or the like: nobody is there
        return True
    finally:
        raw.detach()  # the server owns the descriptor
