"""How an ``Agent`` serves its inputs: the agent thread, one input's run, and the conversation's host.

Mixed into ``Agent`` (``yiemagent.agent``), as ``Lifecycle`` is. The thread
takes from ``input_queue`` before ``follow_up_queue``; each input is wrapped
as an ``Input`` (``yiemagent.loop.conversation``) and handed to the conversation's
``serve``, which runs it through ``run_turns`` and gives the answer back
through the ``RunHost`` here (``_Host``): futures are resolved, answers of
queued inputs go to ``output_queue``. The per-run state kept here (the run's
id and inputs, its owner thread) lets ``abort`` of one input, ``stream``
listeners and ``emit_intermediate`` find the run in progress.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import logging
import queue
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from typing import Any, TypeVar, cast

from ..exceptions import AgentClosedError, ConfigError, FormatError, SimulatedCrash
from ..loop import events as ev
from ..loop.conversation import Conversation, Input, RunScope, StopMode, user_message
from ..loop.tracing import note_input
from ..mcp.bridge import MCPToolset
from ..mcp.client import MCPClient
from ..messages import AssistantMessage, ToolResultMessage, to_openai
from .inbox import EMPTY, SHUTDOWN
from .lifecycle import Lifecycle, resolve

__all__ = ["Serving"]

logger = logging.getLogger("yiemagent.agent")

_S = TypeVar("_S", bound="Serving")


class Serving(Lifecycle):
    """The serving side of an ``Agent`` (mixed into it; uses its attributes)."""

    name: str
    conversation: Conversation
    abort_event: threading.Event
    event_sink: ev.EventSink | None
    emit_intermediate: bool
    mcp: MCPToolset
    _host: _Host
    _scopes: threading.local
    _run_lock: threading.Lock
    _state_lock: threading.Lock
    _run_owner: int | None
    _current_run_id: str | None
    _current_entry: Input | None
    _steered: list[Input]
    _run_input_ids: list[str]
    _deliver_current: bool
    _stop_after_run: bool
    _worker_idents: set[int]

    def _start_pool(self, max_workers: int) -> None:
        """The worker threads of model calls and tools (``yiemagent-<name>-worker_<n>``)."""
        self._worker_idents: set[int] = set()
        idents = self._worker_idents  # the initializer must not hold the agent (see the finalizer)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix=f"yiemagent-{self.name}-worker",
            initializer=lambda: idents.add(threading.get_ident()),
        )
        # an agent used through ask() and dropped without shutdown() must not keep its pool threads
        self._finalizer = weakref.finalize(self, self._executor.shutdown, wait=False, cancel_futures=True)

    def _reset_after_fork(self) -> None:
        """In a forked child: new locks and a new worker pool (the parent's pool threads are gone)."""
        self._run_lock, self._state_lock = threading.Lock(), threading.Lock()
        self._run_owner = None
        if self._thread is None and not self._closed:
            self._finalizer.detach()
            self._start_pool(self._executor._max_workers)
            self.conversation.config = dataclasses.replace(self.conversation.config, executor=self._executor)

    def _init_serving(self) -> None:
        """The per-run state, before the first run."""
        self._thread: threading.Thread | None = None
        self._stop_after_run = False
        self._run_lock = threading.Lock()
        self._current_run_id: str | None = None
        self._current_entry: Input | None = None
        self._state_lock = threading.Lock()  # current run id/inputs vs. abort of one input's run
        self._run_owner: int | None = None
        self._steered: list[Input] = []
        self._run_input_ids: list[str] = []
        self._deliver_current = False
        self._tools_news: tuple[list[str], list[str]] | None = None  # listed outside a run, told in the next
        self._scopes = threading.local()  # .last: the scope of the last run opened on this thread
        self._host = _Host(self)

    def _tools_changed(self, added: list[str], removed: list[str]) -> None:
        """``MCPToolset.on_change``: a ``tools_changed`` event in the run.

        A listing outside any run (``start()``'s, a UI's ``mcp.refresh()``) is told at the next run's
        first model call, so streams see it as they did when the first listing happened in the run.
        """
        with self._state_lock:
            if self._current_run_id is None:
                old_added, old_removed = self._tools_news or ([], [])
                self._tools_news = (sorted(set(old_added) - set(removed) | set(added)),
                                    sorted(set(old_removed) - set(added) | set(removed)))
                return
        self._emit(ev.ToolsChangedEvent(added=added, removed=removed))

    def _refresh_tools(self) -> object:
        """``before_model_call``: list the MCP servers where needed, and tell the run what changed meanwhile."""
        result = self.mcp.refresh()
        with self._state_lock:
            news, self._tools_news = self._tools_news, None
        if news is not None and (news[0] or news[1]):
            self._emit(ev.ToolsChangedEvent(added=news[0], removed=news[1]))
        return result

    def _mcp_error(self, client: MCPClient, exc: Exception) -> None:
        self._emit(ev.ErrorEvent(where="mcp", error=exc, message=f"{client.name}: {exc}"))

    # ------------------------------------------------------------------ thread

    @property
    def is_running(self) -> bool:
        """True while the agent thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self: _S) -> _S:
        """Start the background thread (once). Returns the agent, for chaining.

        The MCP servers are listed at once, on a thread of their own (``mcp_status()`` says
        ``connecting``, then ``connected`` or ``unavailable``); the first run waits for that listing.

        Raises:
            AgentClosedError: the agent was shut down.
        """
        if self._closed:
            raise AgentClosedError(f"{self._closed_reason}; make a new one")
        if self._thread is None:
            self._thread = threading.Thread(target=self._main, name=f"yiemagent-{self.name}-agent", daemon=True)
            self._thread.start()
            if self.mcp.clients:
                self.mcp.list_in_background(f"yiemagent-{self.name}-mcp")
        return self

    def __enter__(self: _S) -> _S:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        # Leaving the block normally serves what is queued ("drain"); leaving it because of an
        # exception (Ctrl-C's KeyboardInterrupt among them) aborts the run in flight ("now").
        self.shutdown(mode="drain" if exc_type is None else "now")

    # ------------------------------------------------------------------ events

    def _emit(self, event: ev.Event) -> None:
        if self._current_run_id:
            event.run_id = self._current_run_id
        ev.emit(self.event_sink, event)
        if self._current_run_id:
            self._to_listeners(event)

    def _to_listeners(self, event: ev.Event) -> None:
        """Hand ``event`` to the streams (``Agent.stream``) of the inputs the current run serves."""
        for entry in (self._current_entry, *self._steered):
            if entry is not None and entry.listener is not None:
                try:
                    entry.listener(event)
                except BaseException:
                    logger.exception("stream listener raised on %s; ignored", event.type)

    def _sink(self, event: ev.Event) -> None:
        """The sink handed to the loop: intermediate output, then the user's sink."""
        if self.emit_intermediate and self._deliver_current and isinstance(event, ev.MessageEndEvent):
            message = event.message
            if (isinstance(message, AssistantMessage) and message.tool_calls) or isinstance(
                message, ToolResultMessage
            ):
                item = to_openai(message)
                item.update(intermediate=True, input_ids=list(self._run_input_ids))
                self._deliver(item)
        ev.emit(self.event_sink, event)
        self._to_listeners(event)

    def _take_steering(self) -> list[Input]:
        """Take what waits on ``input_queue`` now (the conversation asks after a tool batch)."""
        taken: list[Input] = []
        while True:
            try:
                item = self.input_queue.get_nowait()
            except queue.Empty:
                break
            if item is SHUTDOWN:
                self._stop_after_run = True
                break
            try:
                entry = self._wrap(item)
            except FormatError as exc:
                self._emit(ev.ErrorEvent(where="agent", error=exc, message=str(exc)))
                self._deliver_error(None, exc)
                continue
            self._steered.append(entry)
            self._run_input_ids.append(entry.id)
            taken.append(entry)
        return taken

    def _take(self) -> Any:
        for q in (self.input_queue, self.follow_up_queue):
            try:
                return q.get_nowait()
            except queue.Empty:
                continue
        return EMPTY

    def _main(self) -> None:
        logger.debug("agent thread started")
        if self.conversation.durable:
            try:
                self.conversation.recover(self._host)  # interrupted runs and inputs left pending, before new ones
            except BaseException:
                logger.exception("agent thread: serving the inputs pending in the store failed")
        try:
            while True:
                self._wakeup.clear()
                if self._stop_mode in ("after_turn", "now"):
                    break
                item = self._take()
                if item is EMPTY:
                    if self._stop_mode == "drain":
                        break
                    self._wakeup.wait()
                    continue
                if item is SHUTDOWN:
                    if self._stop_mode == "drain":
                        continue
                    break
                try:
                    self._serve(item, deliver=True)
                except SimulatedCrash:
                    raise
                except BaseException:  # never let the thread die, whatever user code raised
                    logger.exception("agent thread: unexpected error serving an input")
                if self._stop_after_run:
                    break
        except SimulatedCrash:
            logger.debug("agent thread: simulated crash")
        except BaseException:
            logger.exception("agent thread: unexpected error; the thread stops")
        finally:
            # no one serves the queues any more: later puts are refused, not silently kept
            self.input_queue.close()
            self.follow_up_queue.close()
            if self._closed:  # shutdown() was called from inside a run and could not release
                self._release(time.monotonic() + 1.0)
            logger.debug("agent thread stopped")

    # ------------------------------------------------------------------ runs

    def _wrap(self, item: Any, input_id: str | None = None) -> Input:
        if isinstance(item, Input):
            return item
        if input_id is not None and (not isinstance(input_id, str) or not input_id):
            raise ConfigError(f"input_id must be a non-empty str, not {input_id!r:.60}")
        try:
            message = user_message(item)
        except FormatError:
            raise
        except Exception as exc:  # a malformed dict the converter chokes on
            raise FormatError(f"an agent input could not be read: {type(exc).__name__}: {exc}", raw=item) from exc
        entry = Input(message=message, id=input_id or uuid.uuid4().hex[:12], original=item)
        note_input(entry.id)  # tracing: the run serving it is a child of the caller's span
        return entry

    def _inbox_seq(self, entry: Input) -> int | None:
        """With a store: put ``entry`` in the inbox now (idempotent by its id) and return its seq; else None."""
        if not self.conversation.durable:
            return None
        return self.conversation.accept(entry)

    def _accept(self, item: Any) -> Any:
        """A durable conversation's queue hook: an input put on a queue goes to its inbox at once.

        Items that are not inputs (the shutdown sentinel, bad inputs answered
        later with an error) pass through unchanged.
        """
        try:
            entry = self._wrap(item)
        except FormatError:
            return item
        self.conversation.accept(entry)
        return entry

    def _deliver_error(self, entry: Input | None, exc: BaseException) -> dict[str, Any]:
        answer = self.conversation.error_answer([entry.id] if entry else [], exc)
        if entry is not None and entry.future is not None:
            resolve(entry.future, answer)
        else:
            self._deliver(answer)
        return answer

    def _deliver_answer(self, answer: dict[str, Any], entries: list[Input], to_output: bool) -> None:
        """``RunHost.deliver``: resolve the entries' futures; the output queue once for those without."""
        no_future = not entries
        for each in entries:
            if each.future is not None:
                resolve(each.future, answer)
            else:
                no_future = True
        if to_output and no_future:
            self._deliver(answer)

    def _serve(self, item: Any, *, deliver: bool, caller: bool = False) -> dict[str, Any]:
        """Run one input through the conversation; answer its future(s) or the output queue (``deliver``).

        ``caller``: the run happens in the thread of ``ask()`` (before
        ``start()``): a ``KeyboardInterrupt`` (Ctrl-C) there aborts the run's
        model call and tools, then is raised again.
        """
        try:
            entry = self._wrap(item)
        except FormatError as exc:
            self._emit(ev.ErrorEvent(where="agent", error=exc, message=str(exc)))
            return self._deliver_error(None, exc) if deliver else self.conversation.error_answer([], exc)
        if deliver and self._stop_mode == "now" and not self.conversation.durable:
            self.unserved.append(entry)  # taken just as shutdown("now") began: not served
            return self.conversation.error_answer([entry.id], AgentClosedError("the agent shut down"))
        self._scopes.last = None  # per thread: a stream() run on another thread has its own
        try:
            answer = self.conversation.serve(entry, self._host, deliver=deliver)
        except SimulatedCrash:
            raise
        except Exception as exc:  # a store that kept failing: a queued input's future must not wait forever
            if not deliver:
                raise
            logger.warning("input %s could not be served: %s", entry.id, exc)
            self._emit(ev.ErrorEvent(where="agent", error=exc, message=str(exc)))
            return self._deliver_error(entry, exc)
        scope: RunScope | None = self._scopes.last
        if caller and scope is not None and scope.entry is entry:
            error = scope.error if scope.error is not None else (scope.result.error if scope.result else None)
            if isinstance(error, KeyboardInterrupt):
                self.abort()  # tools still running see abort_event; the model request is cut
                raise error
        return answer

    @contextlib.contextmanager
    def _running(self, run_id: str, entry: Input, deliver: bool) -> Iterator[RunScope]:
        """``RunHost.running``: one run at a time; the run's id and inputs known for abort and streams."""
        with self._run_lock:
            self._run_owner = threading.get_ident()
            self.abort_event.clear()
            with self._state_lock:
                self._current_run_id = run_id
                self._current_entry = entry
                self._run_input_ids = [entry.id]
                self._steered = []
            self._deliver_current = deliver and entry.future is None
            scope = self._scopes.last = RunScope(run_id, entry)
            try:
                yield scope
            finally:
                with self._state_lock:
                    self._current_run_id = None
                    self._current_entry = None
                self._deliver_current = False
                self._run_owner = None

    def _serve_quietly(self, entry: Input) -> None:
        """Serve ``entry`` on this thread (``stream`` before ``start``); the answer goes to its future."""
        try:
            self._serve(entry, deliver=False)
        except BaseException as exc:  # _serve does not raise; never leave the future unresolved
            logger.exception("stream run failed")
            if entry.future is not None and not entry.future.done():
                entry.future.set_exception(exc)

    def _abort_input(self, input_id: str) -> bool:
        """Abort the current run if it serves ``input_id``; return whether it did."""
        with self._state_lock:
            if self._current_run_id is None or input_id not in self._run_input_ids:
                return False
            self.abort()
            return True

    def _inside(self) -> bool:
        """True on this agent's own thread or worker threads (tools, model calls)."""
        ident = threading.get_ident()
        thread = self._thread
        return ident in self._worker_idents or (thread is not None and thread.ident == ident) or (
            self._thread is None and self._run_owner == ident)



class _Host:
    """The agent as its conversation's ``RunHost`` (``yiemagent.loop.conversation``); forwards to the agent."""

    def __init__(self, agent: Serving) -> None:
        self._agent = cast(Serving, weakref.proxy(agent))  # the host does not keep the agent alive
        self.abort_event = agent.abort_event

    @property
    def stop_mode(self) -> StopMode | None:
        return self._agent._stop_mode

    def abort(self) -> None:
        self._agent.abort()

    def running(self, run_id: str, entry: Input, deliver: bool) -> contextlib.AbstractContextManager[RunScope]:
        return self._agent._running(run_id, entry, deliver)

    def emit(self, event: ev.Event) -> None:
        self._agent._sink(event)

    def take_steering(self) -> list[Input]:
        return self._agent._take_steering()

    def deliver(self, answer: dict[str, Any], entries: list[Input], to_output: bool) -> None:
        self._agent._deliver_answer(answer, entries, to_output)
