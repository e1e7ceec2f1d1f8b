"""Model calls made on a run's behalf outside its own turns (MCP sampling): counted as they happen, limited first.

A server that samples (``sampling/createMessage``, in either MCP era) makes
the agent's own model answer while a tool call waits. Those answers cost
what the run's own replies cost, so they count the same way:

* ``RunSpend.open(usage, guard)`` is called by the loop when a run starts
  (``LoopConfig.spend``), ``close()`` when it ends; one run at a time.
* ``reserve(max_calls)`` before each such call: the refusal text when the
  run's usage limits (``UsageGuard.before_request``: ``requests``, tokens,
  cost, run and conversation) forbid one more model request, or when
  ``max_calls`` calls were already made in this run; else None (the call is
  counted).
* ``record(reply_usage, model)`` after it: the reply's tokens are added to
  the run's ``usage`` (so to ``agent.usage``), and with limits set one
  ``requests`` (and its ``cost`` with ``prices``), as the loop counts its own.

The loop thread waits for the tool batch meanwhile, and its next
``before_request`` sees these counts: a run whose sampling reached
``UsageLimits(requests=N)`` ends with status ``usage_limit``. Outside a run
(a server sampling between inputs) nothing is added to a run, and the calls
count against the next run's ``max_calls`` no more than once (the counter
starts at 0 with each run).
"""

from __future__ import annotations

import threading
from typing import Any

from ..context.usage_limits import UsageGuard
from .config import add_usage

__all__ = ["RunSpend"]


class RunSpend:
    """The live usage of the agent's run in progress, for calls its tools cause (see the module).

    Thread safety: every method may be called from any thread (a lock).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage: dict[str, Any] | None = None
        self._guard: UsageGuard | None = None
        self.calls = 0
        """Calls reserved since the run in progress (or the last one) started."""

    def open(self, usage: dict[str, Any], guard: UsageGuard) -> None:
        """A run starts: its ``usage`` dict (changed in place) and its limits."""
        with self._lock:
            self._usage, self._guard, self.calls = usage, guard, 0

    def close(self) -> None:
        """The run ended: later calls add to no run."""
        with self._lock:
            self._usage = self._guard = None

    def reserve(self, max_calls: int | None = None) -> str | None:
        """Count one more call, or say why not (a text for the peer; nothing counted then).

        Args:
            max_calls: calls allowed per run; None: no such bound.
        """
        with self._lock:
            if max_calls is not None and self.calls >= max_calls:
                return f"this run's bound on sampling requests ({max_calls}) was reached"
            if self._usage is not None and self._guard is not None and self._guard.active:
                reached = self._guard.before_request(self._usage)
                if reached is not None:
                    return reached.message()
            self.calls += 1
            return None

    def record(self, reply_usage: dict[str, Any] | None, model: str | None = None) -> None:
        """Add a reply's tokens (and, with limits, one request and its cost) to the run's usage."""
        with self._lock:
            if self._usage is None or self._guard is None:
                return
            self._guard.count_reply(self._usage, reply_usage, model)
            add_usage(self._usage, reply_usage)
