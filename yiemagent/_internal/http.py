"""A ``requests.Session`` that can be cut from another thread, keeps deadlines and keeps credentials home.

``requests`` has no way to interrupt a blocked read. ``CancellableSession``
keeps track of the sockets of its connections (through urllib3's
``ConnectionCls``); ``cancel()`` shuts them down, which makes every blocked
request fail at once, then starts a fresh connection pool so later requests
never meet a dead keep-alive connection; a pooled connection whose socket
was shut (by ``cancel()`` or a deadline) is never reused, whatever cut it. Used by ``OpenAIChat`` and the MCP
HTTP transport so that ``Agent.abort()`` cuts model and MCP requests.

Deadlines: ``with session.deadline(at):`` arms the process-wide watchdog for
every request the calling thread sends inside the block; at monotonic time
``at`` the request's socket is shut down, so a peer that drips a byte every
0.5 s (in the status line, headers or body, whatever the framing) cannot
keep it alive past ``at``.

Redirects (yiemagent-defined; RFC 9110 section 15.4, RFC 6454 origins): the
session follows at most ``max_redirects`` hops itself, never reading a
redirect's body. A redirect to the same origin (scheme, host, port) is
followed with every header. A redirect to another origin is refused with
``CrossOriginRedirect`` (naming both origins) unless the session was made
with ``follow_cross_origin_redirects=True``; then it is followed with none of
the caller's headers (no ``Authorization``, API keys, ``Mcp-Session-Id``,
cookies), only ``Accept``, ``Content-Type`` and ``User-Agent``. A request
sent with ``cross_origin=False`` refuses other origins even then (the MCP
transport sends ``tools/call`` so: a call never runs on a server the caller
did not name). 301/302 turn a ``POST`` into a body-less ``GET``, 303 turns
anything but ``HEAD`` into one, 307/308 re-send the method and body.
"""

from __future__ import annotations

import http.client
import logging
import socket
import threading
import urllib.parse
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests
import requests.adapters
import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions

from .deadlines import WATCHDOG, PausableClock
from .fork import on_fork_in_child

__all__ = ["CancellableSession", "CrossOriginRedirect", "body_chunks", "connection_problem", "origin_of"]

logger = logging.getLogger("yiemagent.http")

MAX_REDIRECTS = 5
"""Redirect hops a ``CancellableSession`` follows by default before ``requests.TooManyRedirects``."""

_KEPT_ACROSS_ORIGINS = frozenset({"accept", "content-type", "user-agent"})
"""The only caller headers a followed cross-origin redirect carries."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


def connection_problem(exc: BaseException, url: str) -> str | None:
    """One line saying why no connection to ``url`` could be made, or None if ``exc`` is not that.

    For people, not programs: "cannot connect to http://127.0.0.1:9: connection refused (is the
    server running?)" instead of urllib3's ``Max retries exceeded ... NewConnectionError(...)``.
    Covers a refused or reset connection, a host name that does not resolve, an unreachable
    network and a TLS handshake that failed; everything else (timeouts included) is None.
    """
    if not isinstance(exc, requests.exceptions.ConnectionError) or isinstance(exc, requests.exceptions.Timeout):
        return None
    where = origin_of(url)
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 12:
        chain.append(seen)
        nested = [a for a in getattr(seen, "args", ()) if isinstance(a, BaseException)]
        seen = seen.__cause__ or seen.__context__ or getattr(seen, "reason", None) or (nested[0] if nested else None)
    text = " ".join(str(e) for e in chain)
    if isinstance(exc, requests.exceptions.SSLError) or any(isinstance(e, urllib3.exceptions.SSLError) for e in chain):
        return f"cannot connect to {where}: the TLS handshake failed (is it an https server with a valid certificate?)"
    if any(isinstance(e, urllib3.exceptions.NameResolutionError) for e in chain) or "Name or service not known" in text:
        return f"cannot connect to {where}: the host name does not resolve (is it spelled right?)"
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "Connection refused" in text:
        return f"cannot connect to {where}: connection refused (is the server running?)"
    if "Network is unreachable" in text or "No route to host" in text:
        return f"cannot connect to {where}: the network is unreachable (is the address right?)"
    if any(isinstance(e, urllib3.exceptions.NewConnectionError) for e in chain):
        own = [e for e in chain if not type(e).__module__.startswith(("urllib3", "requests"))]
        reason = f": {str(own[-1])[:160]}" if own and str(own[-1]) else ""
        return f"cannot connect to {where}{reason} (is the server running?)"
    return None


def origin_of(url: str) -> str:
    """The origin of ``url`` as ``scheme://host:port`` (default port spelled out; no user, path or query).

    Example:
        >>> origin_of("https://user:pw@Example.com/mcp?token=x")
        'https://example.com:443'
    """
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return "<invalid url>"
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port if port is not None else _DEFAULT_PORTS.get(scheme, '')}"


class CrossOriginRedirect(requests.exceptions.RequestException):
    """A redirect to another origin was refused; ``.from_origin``, ``.to_origin``, ``.status_code``."""

    def __init__(self, from_origin: str, to_origin: str, status_code: int, *, opt_in: bool = True) -> None:
        hint = (" (HTTP clients made with follow_cross_origin_redirects=True follow it without any header the "
                "caller set)" if opt_in else " (never followed for this request)")
        super().__init__(
            f"refused a redirect (HTTP {status_code}) from {from_origin} to another origin, {to_origin}: "
            f"credentials, session ids and the request are not sent to a server the caller did not name{hint}"
        )
        self.from_origin = from_origin
        self.to_origin = to_origin
        self.status_code = status_code


class _Tracker:
    """The live connections of one adapter, and the thread-local deadline their requests get."""

    def __init__(self, local: threading.local) -> None:
        self.connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self.lock = threading.Lock()
        self.local = local
        self.cut_done = False
        """Set by ``cut()``: a connection this adapter opens later (a request that raced the cut) dies at once."""

    def cut(self) -> int:
        with self.lock:
            self.cut_done = True
            connections = list(self.connections)
        return sum(_shut(connection) for connection in connections)

    def add(self, connection: Any) -> None:
        with self.lock:
            self.connections.add(connection)
            late = self.cut_done
        if late:
            _shut(connection)

    def on_request(self, connection: Any) -> None:
        """Arm the watchdog for ``connection`` if the sending thread is inside ``deadline()``."""
        at = getattr(self.local, "deadline", None)
        if at is not None:
            handle = WATCHDOG.arm(at, lambda: _shut(connection), getattr(self.local, "clock", None))
            self.local.armed.append(handle)


def _shut(connection: Any) -> int:
    sock = getattr(connection, "sock", None)
    if sock is None:
        return 0
    cut = 0
    try:
        sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv at once
        cut = 1
    except OSError:
        pass
    try:
        sock.close()  # the peer sees the connection gone (a streaming server stops generating)
    except OSError:
        pass
    return cut


def _tracked(base: type, tracker: _Tracker) -> type:
    class Tracked(base):  # type: ignore[misc]
        def connect(self) -> None:
            super().connect()
            tracker.add(self)

        @property
        def is_connected(self) -> bool:
            # A socket shut by cancel() or a deadline while the connection sat in the pool (the watchdog of a
            # request that ended, a retry's wait) has fileno -1: urllib3 would select() on it (ValueError) and
            # a next request would fail. Reported dropped, the pool closes it and connects afresh.
            sock = self.sock
            if sock is not None and sock.fileno() < 0:
                return False
            return bool(super().is_connected)

        def request(self, *args: Any, **kwargs: Any) -> None:
            if tracker.cut_done:  # the request got this adapter just before cancel() replaced it
                raise urllib3.exceptions.ProtocolError("the session was cancelled")
            tracker.on_request(self)
            super().request(*args, **kwargs)

    return Tracked


class _Adapter(requests.adapters.HTTPAdapter):
    def __init__(self, tracker: _Tracker, **kwargs: Any) -> None:
        self._tracker = tracker
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        tracker = self._tracker

        class HTTPPool(urllib3.connectionpool.HTTPConnectionPool):
            ConnectionCls = _tracked(urllib3.connection.HTTPConnection, tracker)

        class HTTPSPool(urllib3.connectionpool.HTTPSConnectionPool):
            ConnectionCls = _tracked(urllib3.connection.HTTPSConnection, tracker)

        self.poolmanager.pool_classes_by_scheme = {"http": HTTPPool, "https": HTTPSPool}


class CancellableSession(requests.Session):
    """A ``requests.Session`` with ``cancel()``, ``deadline()`` and a cross-origin redirect rule.

    Args:
        follow_cross_origin_redirects: follow redirects to another origin
            (without any header the caller set); False refuses them with
            ``CrossOriginRedirect``.
        max_redirects: redirect hops followed at most.

    Thread safety: like ``requests.Session``; ``cancel()`` may be called from
    any thread.
    """

    def __init__(self, *, follow_cross_origin_redirects: bool = False, max_redirects: int = MAX_REDIRECTS) -> None:
        super().__init__()
        self.follow_cross_origin_redirects = follow_cross_origin_redirects
        self.max_redirects = max_redirects
        self._local = threading.local()
        self._mount_fresh()
        on_fork_in_child(self._mount_fresh)  # in a forked child the pooled sockets are the parent's

    def _mount_fresh(self) -> None:
        self._tracker = _Tracker(self._local)
        adapter = _Adapter(self._tracker)
        self.mount("http://", adapter)
        self.mount("https://", adapter)

    def cancel(self) -> int:
        """Cut every connection of this session; return how many sockets were shut down.

        Requests in flight fail with ``requests.ConnectionError``; the next
        request opens a new connection.
        """
        old = self._tracker
        old_adapters = list(self.adapters.values())
        self._mount_fresh()
        cut = old.cut()
        for adapter in old_adapters:
            adapter.close()
        if cut:
            logger.debug("cancelled %d connection(s)", cut)
        return cut

    @contextmanager
    def deadline(self, at: float | None, clock: PausableClock | None = None) -> Iterator[None]:
        """Cut the socket of every request this thread sends in the block once ``time.monotonic()`` reaches ``at``.

        ``at`` None sets no deadline. With a ``clock``, ``at`` is
        ``clock.now()`` seconds and a pause of the clock delays the cut. The
        cut shows as a broken connection (``requests.ConnectionError``) or an
        early end of the body; callers compare the clock with ``at`` to report
        it as a timeout.
        """
        local = self._local
        previous = (getattr(local, "deadline", None), getattr(local, "armed", None), getattr(local, "clock", None))
        local.deadline, local.armed, local.clock = at, [], clock
        try:
            yield
        finally:
            for handle in local.armed:
                WATCHDOG.disarm(handle)
            local.deadline, local.armed, local.clock = previous

    def request(  # type: ignore[override]
        self, method: str | bytes, url: str | bytes, *, cross_origin: bool | None = None, **kwargs: Any
    ) -> requests.Response:
        """``requests.Session.request``, following redirects by the session's rule (see the module).

        Args:
            method: the HTTP method.
            url: the URL.
            cross_origin: False refuses any redirect to another origin for
                this request, whatever the session allows; None uses the
                session's ``follow_cross_origin_redirects``.
            **kwargs: passed to ``requests.Session.request``
                (``allow_redirects=False`` follows none).
        """
        follow = kwargs.pop("allow_redirects", True)
        response = super().request(method, url, allow_redirects=False, **kwargs)
        if not follow or not response.is_redirect:
            return response
        method = method.decode() if isinstance(method, bytes) else str(method)
        first_url = url.decode() if isinstance(url, bytes) else str(url)
        origin = origin_of(first_url)
        allow_other = self.follow_cross_origin_redirects if cross_origin is None else cross_origin
        history: list[requests.Response] = []
        while response.is_redirect:
            if len(history) >= self.max_redirects:
                response.close()
                raise requests.exceptions.TooManyRedirects(
                    f"more than {self.max_redirects} redirects from {origin}", response=response)
            target = self.get_redirect_target(response) or ""
            next_url = urllib.parse.urljoin(response.url, target)
            scheme = urllib.parse.urlsplit(next_url).scheme.lower()
            status = response.status_code
            response.close()  # the redirect's body is never read
            if scheme not in _DEFAULT_PORTS:
                raise requests.exceptions.InvalidURL(f"refused a redirect (HTTP {status}) from {origin} to a "
                                                     f"{scheme or 'relative'} URL", response=response)
            to_origin = origin_of(next_url)
            if to_origin != origin and not allow_other:
                raise CrossOriginRedirect(origin, to_origin, status, opt_in=cross_origin is None)
            if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
                method = "GET"
                kwargs = {k: v for k, v in kwargs.items() if k not in ("data", "json", "files")}
                kwargs["headers"] = {k: v for k, v in (kwargs.get("headers") or {}).items()
                                     if k.lower() not in ("content-type", "content-length")}
            logger.debug("following a redirect (HTTP %d) from %s to %s", status, origin, to_origin)
            history.append(response)
            if to_origin == origin:
                response = super().request(method, next_url, allow_redirects=False, **kwargs)
            else:
                response = self._send_bare(method, next_url, kwargs)
        response.history = history
        return response

    def _send_bare(self, method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        """Send to another origin with none of the caller's or the session's headers, auth or cookies."""
        headers = {k: v for k, v in (kwargs.get("headers") or {}).items() if k.lower() in _KEPT_ACROSS_ORIGINS}
        prepared = requests.Request(method.upper(), url, headers=headers, data=kwargs.get("data"),
                                    json=kwargs.get("json")).prepare()
        settings = self.merge_environment_settings(prepared.url, kwargs.get("proxies") or {}, kwargs.get("stream"),
                                                   kwargs.get("verify"), kwargs.get("cert"))
        return self.send(prepared, timeout=kwargs.get("timeout"), allow_redirects=False, **settings)


READ_BYTES = 64 * 1024
"""Bytes asked of the socket per read by ``body_chunks``."""


def body_chunks(response: requests.Response, size: int = READ_BYTES) -> Iterator[bytes]:
    """The (decoded) body of a ``stream=True`` response as it arrives, at most ``size`` bytes at a time.

    Each chunk is what one read of the socket gave (``read1``): an SSE event
    is seen as soon as its bytes arrive, whatever the framing (chunked,
    ``Content-Length`` or close-delimited), and nothing is read ahead of the
    caller, so a size limit stops reading at the limit.

    Raises:
        requests.ConnectionError: the connection broke, timed out, or the body is not the framing it claims
            (the urllib3 error is its ``args[0]``).
    """
    raw = response.raw
    read = getattr(raw, "read1", None) or raw.read
    while True:
        try:
            chunk = read(size)
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException, ValueError) as exc:
            raise requests.exceptions.ConnectionError(exc, response=response) from exc
        if not chunk:
            return
        yield chunk
