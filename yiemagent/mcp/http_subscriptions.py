"""The ``subscriptions/listen`` stream of the 2026-07-28 era over Streamable HTTP, read on a daemon thread.

It replaces the old era's standalone ``GET`` stream (``http_listen``): the
client POSTs a ``subscriptions/listen`` request whose ``notifications``
filter names what it wants (``toolsListChanged``, ``promptsListChanged``,
``resourcesListChanged``, ``resourceSubscriptions: [uri, ...]``), and the
server answers with an SSE stream that stays open: first
``notifications/subscriptions/acknowledged`` (the filter it agreed to), then
the change notifications. Each message goes to ``on_message``. The reading,
skipping of bad events and reopening are ``http_listen.Listener``'s, except
that a stream is never resumed (no ``Last-Event-ID`` in this era): a broken
stream is reopened as a new ``subscriptions/listen`` request with a new id,
at most 5 times in a row without an event; an HTTP error status (e.g. 404:
the server has no subscriptions), or an answer that is not SSE, stops it
with a WARNING naming ``POST subscriptions/listen`` (``refusal``). ``stop()`` ends it within 2 s.

Spec: MCP 2026-07-28, "Subscriptions"; "Streamable HTTP" ("Receiving Messages").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

import requests

from .http_listen import Listener
from .http_listen import _Owner as _ListenerOwner
from .transport import MessageHandler

__all__ = ["SubscriptionListener"]


class _Owner(_ListenerOwner, Protocol):
    """What the subscription needs of its ``HTTPTransport`` (besides what ``Listener`` needs)."""

    url: str
    name: str
    connect_timeout_seconds: float
    max_event_bytes: int
    follow_cross_origin_redirects: bool

    def post_headers(self, message: dict[str, Any]) -> dict[str, str]: ...

    def encode(self, message: dict[str, Any]) -> bytes: ...

    def stream_headers(self, last_event_id: str | None) -> dict[str, str]: ...

    def answer(self, message: dict[str, Any], on_message: MessageHandler | None) -> None: ...

    def scrub(self, text: str) -> str: ...


class SubscriptionListener(Listener):
    """A ``subscriptions/listen`` stream on a daemon thread.

    Args:
        owner: the transport (headers, encoding, answering, scrubbing).
        on_message: ``on_message(message) -> reply | None``, called on the listener thread.
        listening: set while the server keeps the stream open (HTTP 200).
        request: ``request() -> message``: a new ``subscriptions/listen``
            request (new id, ``_meta``, ``notifications`` filter) for each (re)opening.
    """

    kind = "subscriptions/listen stream"
    request_line = "POST subscriptions/listen"
    refused_level = logging.WARNING

    def __init__(self, owner: _Owner, on_message: MessageHandler, listening: threading.Event,
                 request: Callable[[], dict[str, Any]]) -> None:
        super().__init__(owner, on_message, listening)
        self._owner = owner
        self._request = request

    def _open(self, last_id: str | None) -> requests.Response:
        message = self._request()  # a new request each time: streams are not resumed in this era
        return self._session.post(self._owner.url, data=self._owner.encode(message),
                                  headers=self._owner.post_headers(message), stream=True,
                                  timeout=(self._owner.connect_timeout_seconds, None))
