"""Handing one call to a worker thread, cheaply: the run's lane (``Lane``) and what it hands back (``Handed``).

A model call or a tool runs on a worker thread so that the loop can stop
waiting for it the moment ``abort()`` is called (``yiemagent.loop``'s
rules). A ``concurrent.futures`` hand-off per call (``executor.submit``, a
``Future`` with its ``Condition``, a done callback, the pool's bookkeeping
after the call) costs several times what a thread hand-off needs, and the
worker keeps the GIL for that bookkeeping just after it woke the loop, so
the loop's thread is woken twice. A ``Lane`` is one worker kept for a run
while the loop hands it calls one at a time: the call goes over a
``SimpleQueue`` and comes back as a ``Handed`` put on the run's update
queue (behind the call's own updates: they are emitted in order), the
worker's last act before it blocks for the next call.

The lane serves on a thread of the run's executor (an ``Agent``'s pool: its
threads are known as the agent's), taken at the first call and given back
when the run ends (``close``), when it waited ``LINGER_SECONDS`` for a call,
after a call once it held it ``LEASE_SECONDS`` (runs sharing a small pool
take turns),
or before the loop starts several calls at once (a parallel batch: the
pool's threads are theirs), so the lane never keeps from the pool a thread
that other calls of the run wait for. The calls of a parallel batch are
submitted to the pool one ``Handed`` each (``launch``) and come back on the
same update queue (``collect``): their updates are emitted as they come.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import logging
import queue
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from . import events as ev
from .config import LoopConfig

__all__ = ["LEASE_SECONDS", "LINGER_SECONDS", "POLL_SECONDS", "Aborted", "Handed", "Handoffs", "Lane",
           "cut_in_flight"]

logger = logging.getLogger("yiemagent.loop")

POLL_SECONDS = 0.05
"""How often a wait re-checks the abort event."""

LINGER_SECONDS = 0.5
"""How long an idle lane keeps its pool thread waiting for the run's next call."""

LEASE_SECONDS = 0.05
"""How long a lane keeps its pool thread, call after call, before it gives it back at the end of a call.

The next call takes a thread again, queued behind what else waits for the pool: runs sharing one small
executor (``LoopConfig.executor``) take turns as they did when each call was submitted on its own."""


class Aborted(Exception):
    """Internal: the abort event was set while waiting."""


def cut_in_flight(llm_call: Any) -> None:
    """Cut the model requests in flight: ``llm_call.cancel()`` when it has one (``openai_chat`` has).

    The one way a cut reaches a model call: ``Agent.abort()``, and a parallel input guardrail's tripwire
    (``yiemagent.loop.guarding``). A ``cancel()`` that raises is logged, never raised.
    """
    cancel = getattr(llm_call, "cancel", None)
    if callable(cancel):
        try:
            cancel()
        except BaseException:
            logger.exception("llm_call.cancel() raised; ignored")


class Handed:
    """One call handed to a lane: its outcome once the lane put it on the update queue."""

    __slots__ = ("args", "cancelled", "error", "finished", "fn", "value")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args
        self.value: Any = None
        self.error: BaseException | None = None
        self.finished = False
        self.cancelled = False
        """Set by the loop when it stopped waiting (abort): a call not yet started is not run."""

    def run(self) -> None:
        """Run the call on this thread (the lane's); keep what it returns or raises."""
        try:
            self.value = self.fn(*self.args)
        except BaseException as exc:  # given back to the loop's thread, as Future.result() would
            self.error = exc
        finally:
            self.finished = True

    def run_then(self, done: Callable[[Handed], object]) -> None:
        """Run the call unless it was cancelled first, then hand it to ``done`` (the worker's last act)."""
        if not self.cancelled:
            self.run()
        else:
            self.finished = True
        done(self)

    def result(self) -> Any:
        """What the call returned; what it raised is raised here."""
        if self.error is not None:
            raise self.error
        return self.value


class Lane:
    """A worker thread of ``executor`` kept for one run's calls, handed over one at a time."""

    def __init__(self, executor: concurrent.futures.Executor, done: Callable[[Handed], object]) -> None:
        self.executor = executor
        self.done = done
        """Where a finished call is put (the run's update queue)."""
        self.calls: queue.SimpleQueue[Handed | None] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.serving = False
        """A thread serves ``calls`` (or is taken to): set and cleared under ``lock``, with what is put."""
        self.busy = False
        """A call was handed and has not come back (an abandoned call keeps the lane busy)."""

    def hand(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Handed:
        """Start ``fn(*args)`` on the lane's thread; its ``Handed`` comes back through ``done``."""
        handed = Handed(fn, args)
        self.busy = True
        with self.lock:
            self.calls.put(handed)
            start, self.serving = not self.serving, True
        if start:  # no thread waits on ``calls``: take one from the pool
            try:
                self.executor.submit(self.serve)
            except BaseException:
                self.serving = self.busy = False
                raise
        return handed

    def serve(self) -> None:
        """The lane's thread: run each handed call, hand it back, until closed or idle too long."""
        get = self.calls.get
        until = time.monotonic() + LEASE_SECONDS
        while True:
            try:
                handed = get(timeout=LINGER_SECONDS)
            except queue.Empty:
                handed = None
                until = 0.0
            else:
                if handed is None:  # closed (``close`` cleared ``serving``)
                    return
                handed.run_then(self.came_back)  # the last thing before blocking again: the loop wakes to a free GIL
            if time.monotonic() >= until:  # idle too long, or held long enough: give the thread back
                with self.lock:  # a call put after this finds ``serving`` False and takes a new thread
                    if self.calls.empty():
                        self.serving = False
                        return

    def came_back(self, handed: Handed) -> None:
        """A handed call is done (or skipped): the lane is free, the call goes to ``done``."""
        self.busy = False
        self.done(handed)

    def close(self) -> None:
        """Give the thread back to the pool (at once when idle; after its call when one runs)."""
        with self.lock:
            if self.serving:
                self.serving = False
                self.calls.put(None)


class Handoffs:
    """How the loop runs a call: on a worker (``call``; ``launch`` and ``collect``) or here (``here``).

    Mixed into the loop's run state (``yiemagent.loop``), which sets the attributes.
    """

    config: LoopConfig
    abort_event: threading.Event
    interrupted: KeyboardInterrupt | None
    executor: concurrent.futures.Executor | None
    own_executor: concurrent.futures.ThreadPoolExecutor | None
    lane: Lane | None
    loop_thread: int
    updates: queue.SimpleQueue[Any]
    back: list[Handed]
    """Calls that came back while ``flush_updates`` emitted updates: ``collect`` takes them first."""

    def emit(self, event: ev.Event) -> None:
        """Send ``event`` to the run's sink (with the run id)."""
        raise NotImplementedError  # pragma: no cover - the run defines it

    def update(self, event: ev.Event) -> None:
        """An update from a call: emitted at once on the loop's thread (inline), else queued for the loop."""
        if threading.get_ident() == self.loop_thread:
            self.flush_updates()
            self.emit(event)
        else:
            self.updates.put(event)

    def flush_updates(self) -> None:
        """Emit progress reported by tools on worker threads, here on the loop's thread."""
        while True:
            try:
                item = self.updates.get_nowait()
            except queue.Empty:
                return
            if item.__class__ is not Handed:
                self.emit(item)
            else:  # a call of a parallel batch: kept for ``collect`` (or one abandoned by an abort)
                self.back.append(item)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` on a worker thread (the run's ``Lane``) and wait; ``Aborted`` once the abort event is set.

        Updates (tool progress, model deltas) put by the worker are emitted
        here as they arrive, in order; the call's end wakes the wait at once.
        """
        lane = self.lane
        if lane is None or lane.busy:  # busy: a call abandoned by an abort still holds it
            if lane is not None:
                lane.close()
            lane = self.lane = Lane(self.pool(), self.updates.put)
        return self.collect((lane.hand(fn, args),)).result()

    def launch(self, fn: Callable[..., Any], *args: Any) -> Handed:
        """Start ``fn(*args)`` on a pool thread (one call of a parallel batch); ``collect`` gets it back."""
        if self.lane is not None:  # calls run at once: the lane's thread is theirs
            self.lane.close()
        handed = Handed(fn, args)
        self.pool().submit(handed.run_then, self.updates.put)
        return handed

    def collect(self, pending: Collection[Handed]) -> Handed:
        """Wait until one of ``pending`` comes back and return it; emit the updates that come before it, in order.

        Raises ``Aborted`` once the abort event is set (those not finished are
        marked cancelled: not run if not started); Ctrl-C here is an abort.
        """
        for handed in self.back:  # came back while ``flush_updates`` emitted what was before it
            if handed in pending:
                self.back.remove(handed)
                return handed
        get = self.updates.get
        while True:
            try:
                item = get(timeout=POLL_SECONDS)
            except queue.Empty:
                item = None
            except KeyboardInterrupt as exc:  # Ctrl-C in the thread running the loop: an abort
                self.interrupted = exc
                self.abort_event.set()
                item = None
            if item is not None:
                if item.__class__ is not Handed:
                    self.emit(item)
                elif item in pending:
                    return item
                else:  # another wait's (a parallel batch's while one call is waited for): kept for it
                    self.back.append(item)
            if self.abort_event.is_set() and not any(handed.finished for handed in pending):  # finished: next
                for handed in pending:
                    handed.cancelled = True
                raise Aborted()

    def cuttable(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` (a guardrail, a hook) so that the run's abort, and so its deadline, cuts the wait.

        On a thread of its own, in a copy of this context (``current_call``, the tool's scope), while
        this thread waits: ``Aborted`` once the abort event is set (``ask(timeout_seconds=...)`` sets it at
        the deadline), the function left to finish alone, its outcome dropped. ``LoopConfig.inline``: here,
        as ``here``. What ``fn`` raises is raised here.
        """
        if self.config.inline:
            return self.here(fn, *args)
        if self.abort_event.is_set():
            raise Aborted()
        handed = Handed(fn, args)
        done = threading.Event()

        def run() -> None:
            try:
                handed.run()
            finally:
                done.set()

        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(run,), name=f"{threading.current_thread().name}-check",
                         daemon=True).start()
        try:
            while not done.wait(POLL_SECONDS):
                if self.abort_event.is_set():
                    handed.cancelled = True
                    raise Aborted()
        except KeyboardInterrupt as exc:  # Ctrl-C in the thread running the loop: an abort, as in ``collect``
            self.interrupted = exc
            self.abort_event.set()
            raise Aborted() from exc
        return handed.result()

    def here(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` on this thread (``LoopConfig.inline``, ``AgentTool.inline``); its updates emitted after.

        Raises ``Aborted`` when the abort event is set before it starts; what
        ``fn`` raises goes up as ``call`` would raise it.
        """
        if self.abort_event.is_set():
            raise Aborted()
        try:
            return fn(*args)
        except KeyboardInterrupt as exc:  # Ctrl-C in the thread running the loop: an abort
            self.interrupted = exc
            self.abort_event.set()
            raise Aborted() from exc
        finally:
            self.flush_updates()

    def pool(self) -> concurrent.futures.Executor:
        """The executor of the run's worker threads (``LoopConfig.executor``, else one made for the run)."""
        if self.executor is None:
            self.own_executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=self.config.max_parallel_tools + 1, thread_name_prefix="yiemagent-run"
            )
            self.executor = self.own_executor
        return self.executor
