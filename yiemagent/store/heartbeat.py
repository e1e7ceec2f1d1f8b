"""The lease heartbeat of a durable conversation: renews a ``Lease`` on its own thread while a run is served.

``DurableConversation`` (``yiemagent.store.durable``) starts one per drain of
the inbox: every third of the lease's time-to-live it calls ``store.renew``.
When the lease was taken (``StaleStateError``) it marks itself ``lost`` and
calls ``on_lost`` (which aborts the run: its commit would be refused anyway);
a failing store (``StoreError``) is logged and tried again at the next beat.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..exceptions import StaleStateError, StoreError
from .base import ConversationStore, Lease

__all__: list[str] = []

logger = logging.getLogger("yiemagent.store.durable")  # what it logs is the durable conversation's


class _Heartbeat:
    """Renews a lease every ``interval`` seconds on its own thread; calls ``on_lost`` if it is taken."""

    def __init__(self, store: ConversationStore, lease: Lease, ttl_seconds: float,
                 on_lost: Callable[[], None]) -> None:
        self.store, self.lease, self.ttl_seconds, self.on_lost = store, lease, ttl_seconds, on_lost
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="yiemagent-lease", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl_seconds / 3):
            try:
                self.lease = self.store.renew(self.lease, ttl_seconds=self.ttl_seconds)
            except StaleStateError:
                logger.warning("lease of %r lost; aborting the current run", self.lease.conversation_id)
                self.lost = True
                self.on_lost()
                return
            except StoreError as exc:  # the database hiccupped: try again next beat
                logger.warning("renewing the lease of %r failed: %s", self.lease.conversation_id, exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
