"""Retry policies (tenacity) shared by the LLM adapter and the MCP client.

The one rule that matters: a request that may have reached the server is
retried only if repeating it is safe. ``never_sent`` tells a failure that
happened before any byte of the request left (connection refused, DNS, connect
timeout) from one that happened after; ``tools/call`` is retried only on the
former.
"""

from __future__ import annotations

import email.utils
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import requests
import urllib3.exceptions

from .numbers import peer_number

if TYPE_CHECKING:
    import tenacity

__all__ = ["MAX_RETRY_AFTER_SECONDS", "RETRY_STATUS", "RetryPause", "make_retrying", "model_retry_status", "never_sent",
           "retry_after_seconds"]

RETRY_STATUS = frozenset({429, 502, 503})
"""HTTP statuses that say "try again later" without having done the work (MCP: a ``tools/call`` that got
any other status may have run, and is never sent twice)."""

MAX_RETRY_AFTER_SECONDS = 10.0
"""A ``Retry-After`` longer than this is not waited: the error is raised at once (a fallback model is asked)."""


def model_retry_status(status: int) -> bool:
    """Whether a model request that got HTTP ``status`` is sent again: 408, 409, 429 and 5xx.

    A chat completion has no effect but its cost, so a 500 or a 504 is retried
    (the OpenAI and Anthropic SDKs retry the same statuses); 4xx client errors
    are not. Source: openai-python ``_should_retry``.
    """
    return status in (408, 409, 429) or 500 <= status <= 599


def never_sent(exc: BaseException) -> bool:
    """True when ``exc`` proves the request never reached the server."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    cause: Any = exc
    for _ in range(6):
        if cause is None:
            return False
        if isinstance(cause, urllib3.exceptions.NewConnectionError):
            return True
        if isinstance(cause, urllib3.exceptions.MaxRetryError):
            cause = cause.reason
            continue
        if isinstance(cause, requests.exceptions.ConnectionError) and cause.args:
            cause = cause.args[0]
            continue
        cause = cause.__cause__ or cause.__context__
    return False


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header value, or None if absent or unreadable.

    Args:
        value: delta-seconds (``"7"``) or an HTTP-date
            (``"Wed, 21 Oct 2026 07:28:00 GMT"``).
        now: the current time as a Unix timestamp (seconds), for tests;
            None uses ``time.time()``.

    Returns:
        Seconds, never negative (a date in the past gives 0.0).

    Spec: RFC 9110, section 10.2.3 "Retry-After".
    """
    if not value or not value.strip():
        return None
    number = peer_number(value)
    if number is not None:
        return max(0.0, float(number))
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def make_retrying(
    retry_if: Callable[[BaseException], bool],
    *,
    attempts: int = 3,
    max_wait_seconds: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
) -> tenacity.Retrying:
    """A ``tenacity.Retrying`` that retries exceptions for which ``retry_if`` is true.

    Waits 0.1, 0.2, 0.4 ... seconds (capped at 2), or the ``retry_after``
    attribute (seconds) of the exception when it has one, capped at
    ``max_wait_seconds``. The last exception is re-raised as it was.
    """
    import tenacity  # here: ``import yiemagent`` and an MCP client that never retries do without it

    backoff = tenacity.wait_exponential(multiplier=0.1, max=2)

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after", None)
        if isinstance(after, (int, float)):
            return min(float(after), max_wait_seconds)
        return backoff(state)

    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(retry_if),
        stop=tenacity.stop_after_attempt(attempts),
        wait=wait,
        sleep=sleep,
        reraise=True,
    )


class RetryPause:
    """The wait between two attempts, ended early by ``cut()`` (a client's ``cancel()``) or an abort event.

    A retry wait is part of the request: whatever ends the request (its
    deadline, ``cancel()``, ``Agent.abort()``) must end the wait too, never
    leave the caller sleeping out a ``Retry-After``.

    Thread safety: ``cut()`` may be called from any thread; each ``sleeper``
    belongs to one request.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._cuts = 0

    def cut(self) -> None:
        """End every wait in progress (each raises its ``error``)."""
        with self._cond:
            self._cuts += 1
            self._cond.notify_all()

    def sleeper(self, *, until: float | None, abort_event: threading.Event | None,
                error: Callable[[str], BaseException]) -> Callable[[float], None]:
        """A ``sleep(seconds)`` for ``make_retrying`` that ends early and raises ``error(why)``.

        Args:
            until: ``time.monotonic()`` deadline of the request: the wait never
                passes it (it raises ``error("deadline")`` there instead of sleeping on).
            abort_event: set (``Agent.abort()``): ``error("aborted")`` within 0.05 s.
            error: makes the exception raised, from ``"deadline"``, ``"aborted"`` or ``"cancelled"``.
        """
        cuts = self._cuts

        def sleep(seconds: float) -> None:
            end = time.monotonic() + seconds
            if until is not None and end >= until:
                raise error("deadline")
            with self._cond:
                while True:
                    if self._cuts != cuts:
                        raise error("cancelled")
                    if abort_event is not None and abort_event.is_set():
                        raise error("aborted")
                    left = end - time.monotonic()
                    if left <= 0:
                        return
                    self._cond.wait(min(left, 0.05))

        return sleep
