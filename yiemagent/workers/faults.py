"""Backoff, quarantine and rate-limited logging for the worker loops (one mechanism for all of them).

A worker loop (``PollingWorker``, the DBOS sweep, ...) reports each failure of a
key (a conversation id, or ``"<poll>"`` for the loop's own store reads) to a
``FaultTracker`` and asks it when the key may be tried again:

* backoff: ``base_seconds * 2**(failures - 1)`` with jitter, at most
  ``max_seconds`` (bounded);
* quarantine: after ``quarantine_after`` failures in a row the key waits
  ``quarantine_seconds`` between tries (it is listed in ``quarantined``
  with its last error) until a try succeeds;
* logging: one line per fault (no traceback; the traceback is logged at DEBUG),
  and the same fault of the same key again is logged at most once per
  ``log_every_seconds``, with the number of repeats left out.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass

__all__ = ["FaultTracker"]


@dataclass
class _Faults:
    failures: int = 0
    not_before: float = 0.0
    last_logged: float = float("-inf")
    last_text: str = ""
    silenced: int = 0


class FaultTracker:
    """Per-key failure counts, bounded exponential backoff, quarantine and rate-limited logs.

    Args:
        logger: where the lines go.
        base_seconds: the wait after a first failure.
        max_seconds: the longest backoff before quarantine.
        quarantine_after: failures in a row that quarantine a key.
        quarantine_seconds: the wait between tries of a quarantined key.
        log_every_seconds: the same fault of a key is logged at most once per this.

    Thread-safe.
    """

    def __init__(self, logger: logging.Logger, *, base_seconds: float = 0.1, max_seconds: float = 30.0,
                 quarantine_after: int = 8, quarantine_seconds: float = 300.0,
                 log_every_seconds: float = 60.0) -> None:
        self.logger = logger
        self.base_seconds = base_seconds
        self.max_seconds = max_seconds
        self.quarantine_after = max(1, quarantine_after)
        self.quarantine_seconds = quarantine_seconds
        self.log_every_seconds = log_every_seconds
        self.quarantined: dict[str, str] = {}
        """Keys that failed ``quarantine_after`` times in a row -> their last error."""
        self._keys: dict[str, _Faults] = {}
        self._lock = threading.Lock()

    def ready(self, key: str, now: float | None = None) -> bool:
        """True when ``key`` may be tried now (monotonic seconds)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            faults = self._keys.get(key)
            return faults is None or faults.not_before <= now

    def wait_seconds(self, key: str) -> float:
        """Seconds until ``key`` may be tried (0 when it may now)."""
        with self._lock:
            faults = self._keys.get(key)
            return 0.0 if faults is None else max(0.0, faults.not_before - time.monotonic())

    def failed(self, key: str, exc: BaseException, what: str = "draining") -> float:
        """Record a failure of ``key``; log it (rate-limited); return the seconds to wait."""
        now = time.monotonic()
        text = f"{type(exc).__name__}: {exc}"[:300]
        with self._lock:
            faults = self._keys.setdefault(key, _Faults())
            faults.failures += 1
            if faults.failures >= self.quarantine_after:
                wait = self.quarantine_seconds
                newly = key not in self.quarantined
                self.quarantined[key] = text
            else:
                wait = min(self.max_seconds, self.base_seconds * 2 ** (faults.failures - 1))
                wait *= 0.5 + random.random() / 2
                newly = False
            faults.not_before = now + wait
            log = newly or text != faults.last_text or now - faults.last_logged >= self.log_every_seconds
            silenced = faults.silenced
            if log:
                faults.last_logged, faults.last_text, faults.silenced = now, text, 0
            else:
                faults.silenced += 1
            failures = faults.failures
        if log:
            repeats = f" ({silenced} more failures not logged)" if silenced else ""
            if newly:
                self.logger.error("%s %s failed %d times in a row (%s); quarantined: tried again every %.0fs%s",
                                  what, key, failures, text, wait, repeats)
            else:
                self.logger.warning("%s %s failed (%s); try %d again in %.2fs%s", what, key, text, failures + 1,
                                    wait, repeats)
            self.logger.debug("%s %s failed", what, key, exc_info=exc)
        return wait

    def succeeded(self, key: str) -> None:
        """A try of ``key`` worked: its count, backoff and quarantine end."""
        with self._lock:
            faults = self._keys.pop(key, None)
            released = self.quarantined.pop(key, None)
        if released is not None and faults is not None:
            self.logger.warning("%s works again after %d failures", key, faults.failures)
