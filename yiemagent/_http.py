"""A ``requests.Session`` whose requests in flight can be cut from another thread.

``requests`` has no way to interrupt a blocked read. ``CancellableSession``
keeps track of the sockets of its connections (through urllib3's
``ConnectionCls``); ``cancel()`` shuts them down, which makes every blocked
request fail at once, then starts a fresh connection pool so later requests
never meet a dead keep-alive connection. Used by ``OpenAIChat`` and the MCP
HTTP transport so that ``Agent.abort()`` cuts model and MCP requests.
"""

from __future__ import annotations

import logging
import socket
import threading
import weakref
from typing import Any

import requests
import requests.adapters
import urllib3.connection
import urllib3.connectionpool

__all__ = ["CancellableSession"]

logger = logging.getLogger("yiemagent.http")


class _Tracker:
    """The live connections of one adapter."""

    def __init__(self) -> None:
        self.connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self.lock = threading.Lock()

    def cut(self) -> int:
        with self.lock:
            connections = list(self.connections)
        cut = 0
        for connection in connections:
            sock = getattr(connection, "sock", None)
            if sock is None:
                continue
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv at once
                cut += 1
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
            with tracker.lock:
                tracker.connections.add(self)

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
    """A ``requests.Session`` with ``cancel()``.

    Thread safety: like ``requests.Session``; ``cancel()`` may be called from
    any thread.
    """

    def __init__(self) -> None:
        super().__init__()
        self._mount_fresh()

    def _mount_fresh(self) -> None:
        self._tracker = _Tracker()
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
