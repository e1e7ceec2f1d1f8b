"""The run in progress: one input's run at a time, its id and inputs, and where its events and answer go.

``Runs`` is a part of ``Agent`` and the conversation's ``RunHost`` (``yiemagent.loop.conversation``):
the conversation runs an input through ``run_turns`` and gives the answer back through it. Futures are
resolved, answers of queued inputs go to the output queue (``Lifecycle.deliver``). The per-run state kept
here (the run's id and inputs, its owner thread) lets ``abort`` of one input, ``stream`` listeners and
``emit_intermediate`` find the run in progress.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._internal.cuts import cut_by
from .._internal.fork import on_fork_in_child
from ..exceptions import AgentClosedError, ConfigError, FormatError, SimulatedCrash
from ..loop import events as ev
from ..loop.conversation import Conversation, Input, RunScope, StopMode, user_message
from ..loop.tracing import note_input
from ..mcp.bridge import MCPToolset
from ..messages import AssistantMessage, ToolResultMessage, to_openai
from .lifecycle import Lifecycle, resolve

if TYPE_CHECKING:  # annotations only: the client (and requests) load with the first MCP server
    from ..mcp.client import MCPClient

__all__ = ["Runs"]

logger = logging.getLogger("yiemagent.agent")


class Runs:
    """One run at a time, and the bookkeeping of the run in progress (a part of ``Agent``).

    Args:
        lifecycle: the agent's queues and stop state: answers are delivered there, steering inputs taken
            from there, inputs taken at a ``shutdown("now")`` kept there.
        abort: aborts the current run (``Agent.abort``).
        event_sink: the user's sink (``yiemagent.loop.events``); ``emit_intermediate``: also deliver
            each assistant message with tool calls and each tool result (see ``Agent``).

    ``conversation`` and ``mcp`` are set once by ``Agent`` after it made them (they are made with this
    object's callbacks).
    """

    conversation: Conversation
    mcp: MCPToolset

    def __init__(self, lifecycle: Lifecycle, abort: Callable[[], None], event_sink: ev.EventSink | None,
                 emit_intermediate: bool) -> None:
        self.lifecycle = lifecycle
        self.abort_event = lifecycle.abort_event  # RunHost.abort_event: the agent's, owned by Lifecycle
        self._abort = abort
        self.event_sink = event_sink
        self.emit_intermediate = emit_intermediate
        self._run_lock = threading.Lock()
        self._state_lock = threading.Lock()  # current run id/inputs vs. abort of one input's run
        self._run_owner: int | None = None
        self._current_run_id: str | None = None
        self._current_entry: Input | None = None
        self._steered: list[Input] = []
        self._run_input_ids: list[str] = []
        self._deliver_current = False
        self._tools_news: tuple[list[str], list[str]] | None = None  # listed outside a run, told in the next
        self._scopes = threading.local()  # .last: the scope of the last run opened on this thread
        on_fork_in_child(self._after_fork)  # after Lifecycle's: its new pool exists

    def _after_fork(self) -> None:
        """In a forked child: new locks; an agent not started runs on the new pool ``Lifecycle`` made."""
        self._run_lock, self._state_lock = threading.Lock(), threading.Lock()
        self._run_owner = None
        conversation = getattr(self, "conversation", None)
        if conversation is not None and not self.lifecycle.closed:
            conversation.config = dataclasses.replace(conversation.config, executor=self.lifecycle.executor)

    # ------------------------------------------------------------------ what others read

    @property
    def current_run_id(self) -> str | None:
        """The id of the run in progress; None between runs."""
        return self._current_run_id

    @property
    def owner(self) -> int | None:
        """The ident of the thread running the current run (the caller of ``ask`` before ``start``)."""
        return self._run_owner

    def works_for(self, ident: int) -> bool:
        """True when thread ``ident`` works for this agent: its thread, a worker, or the current run's thread."""
        return self.lifecycle.owns(ident) or self._run_owner == ident

    def inside(self) -> bool:
        """True on this agent's own thread or worker threads, or in the run of ``ask`` before ``start``."""
        ident = threading.get_ident()
        return self.lifecycle.owns(ident) or (self.lifecycle.thread is None and self._run_owner == ident)

    @property
    def stop_mode(self) -> StopMode | None:
        """``RunHost.stop_mode``: how the agent is stopping, if it is."""
        return self.lifecycle.stop_mode

    def abort(self) -> None:
        """``RunHost.abort``: abort the current run (``Agent.abort``)."""
        self._abort()

    # ------------------------------------------------------------------ MCP callbacks

    def tools_changed(self, added: list[str], removed: list[str]) -> None:
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
        self.event(ev.ToolsChangedEvent(added=added, removed=removed))

    def refresh_tools(self) -> object:
        """``before_model_call``: list the MCP servers where needed, and tell the run what changed meanwhile."""
        result = self.mcp.refresh()
        with self._state_lock:
            news, self._tools_news = self._tools_news, None
        if news is not None and (news[0] or news[1]):
            self.event(ev.ToolsChangedEvent(added=news[0], removed=news[1]))
        return result

    def mcp_error(self, client: MCPClient, exc: Exception) -> None:
        """``MCPToolset.on_error``: an ``error`` event naming the server."""
        self.event(ev.ErrorEvent(where="mcp", error=exc, message=f"{client.name}: {exc}"))

    # ------------------------------------------------------------------ events

    def event(self, event: ev.Event) -> None:
        """An event of the agent (not of the loop): to the sink, and to the run's streams during a run."""
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

    def listening(self) -> bool:
        """``RunHost.listening``: whether ``emit`` hands events to anyone (a sink, a stream, intermediate output)."""
        if self.event_sink is not None or (self.emit_intermediate and self._deliver_current):
            return True
        return any(entry is not None and entry.listener is not None for entry in (self._current_entry, *self._steered))

    def emit(self, event: ev.Event) -> None:
        """``RunHost.emit``, the sink handed to the loop: intermediate output, then the user's sink."""
        if self.emit_intermediate and self._deliver_current and isinstance(event, ev.MessageEndEvent):
            message = event.message
            if (isinstance(message, AssistantMessage) and message.tool_calls) or isinstance(
                message, ToolResultMessage
            ):
                item = to_openai(message)
                item.update(intermediate=True, input_ids=list(self._run_input_ids))
                self.lifecycle.deliver(item)
        ev.emit(self.event_sink, event)
        self._to_listeners(event)

    def take_steering(self) -> list[Input]:
        """``RunHost.take_steering``: what waits on ``input_queue`` now joins the run."""
        taken: list[Input] = []
        for item in self.lifecycle.take_steering():
            try:
                entry = self.wrap(item)
            except FormatError as exc:
                self.event(ev.ErrorEvent(where="agent", error=exc, message=str(exc)))
                self._deliver_error(None, exc)
                continue
            self._steered.append(entry)
            self._run_input_ids.append(entry.id)
            taken.append(entry)
        return taken

    # ------------------------------------------------------------------ inputs

    def wrap(self, item: Any, input_id: str | None = None) -> Input:
        """``item`` (a str, ``UserMessage``, user dict or ``Input``) as an ``Input`` with an id.

        Raises:
            ConfigError: ``input_id`` is not a non-empty str.
            FormatError: ``item`` is not an input.
        """
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

    def inbox_seq(self, entry: Input) -> int | None:
        """With a store: put ``entry`` in the inbox now (idempotent by its id) and return its seq; else None."""
        if not self.conversation.durable:
            return None
        return self.conversation.accept(entry)

    def accept(self, item: Any) -> Any:
        """A durable conversation's queue hook: an input put on a queue goes to its inbox at once.

        Items that are not inputs (the shutdown sentinel, bad inputs answered
        later with an error) pass through unchanged.
        """
        try:
            entry = self.wrap(item)
        except FormatError:
            return item
        self.conversation.accept(entry)
        return entry

    # ------------------------------------------------------------------ answers

    def _deliver_error(self, entry: Input | None, exc: BaseException) -> dict[str, Any]:
        answer = self.conversation.error_answer([entry.id] if entry else [], exc)
        if entry is not None and entry.future is not None:
            resolve(entry.future, answer)
        else:
            self.lifecycle.deliver(answer)
        return answer

    def deliver(self, answer: dict[str, Any], entries: list[Input], to_output: bool) -> None:
        """``RunHost.deliver``: resolve the entries' futures; the output queue once for those without."""
        no_future = not entries
        for each in entries:
            if each.future is not None:
                resolve(each.future, answer)
            else:
                no_future = True
        if to_output and no_future:
            self.lifecycle.deliver(answer)

    # ------------------------------------------------------------------ runs

    def serve(self, item: Any, *, deliver: bool, caller: bool = False) -> dict[str, Any]:
        """Run one input through the conversation; answer its future(s) or the output queue (``deliver``).

        ``caller``: the run happens in the thread of ``ask()`` (before
        ``start()``): a ``KeyboardInterrupt`` (Ctrl-C) there aborts the run's
        model call and tools, then is raised again.
        """
        try:
            entry = self.wrap(item)
        except FormatError as exc:
            self.event(ev.ErrorEvent(where="agent", error=exc, message=str(exc)))
            return self._deliver_error(None, exc) if deliver else self.conversation.error_answer([], exc)
        if deliver and self.lifecycle.stop_mode == "now" and not self.conversation.durable:
            self.lifecycle.keep_unserved(entry)  # taken just as shutdown("now") began: not served
            return self.conversation.error_answer([entry.id], AgentClosedError("the agent shut down"))
        self._scopes.last = None  # per thread: a stream() run on another thread has its own
        try:
            answer = self.conversation.serve(entry, self, deliver=deliver)
        except SimulatedCrash:
            raise
        except Exception as exc:  # a store that kept failing: a queued input's future must not wait forever
            if not deliver:
                raise
            logger.warning("input %s could not be served: %s", entry.id, exc)
            self.event(ev.ErrorEvent(where="agent", error=exc, message=str(exc)))
            return self._deliver_error(entry, exc)
        scope: RunScope | None = self._scopes.last
        if caller and scope is not None and scope.entry is entry:
            error = scope.error if scope.error is not None else (scope.result.error if scope.result else None)
            if isinstance(error, KeyboardInterrupt):
                self._abort()  # tools still running see abort_event; the model request is cut
                raise error
        return answer

    def serve_queued(self, item: Any) -> None:
        """Serve an input taken off a queue (on the agent thread): its answer to its future or the output queue."""
        self.serve(item, deliver=True)

    def recover(self) -> None:
        """With a store, on the agent thread before new inputs: finish interrupted runs and pending inputs."""
        self.conversation.recover(self)

    @contextlib.contextmanager
    def running(self, run_id: str, entry: Input, deliver: bool) -> Iterator[RunScope]:
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
                with cut_by(self.abort_event):  # an MCP request begun on this thread after an abort is not sent
                    yield scope
            finally:
                with self._state_lock:
                    self._current_run_id = None
                    self._current_entry = None
                self._deliver_current = False
                self._run_owner = None

    def serve_quietly(self, entry: Input, keep: object = None) -> None:
        """Serve ``entry`` on this thread (``stream`` before ``start``); the answer goes to its future.

        ``keep``: held while the run lasts (the agent: dropped by its caller, it must not be finalized mid-run).
        """
        try:
            self.serve(entry, deliver=False)
        except BaseException as exc:  # serve does not raise; never leave the future unresolved
            logger.exception("stream run failed")
            if entry.future is not None and not entry.future.done():
                entry.future.set_exception(exc)

    def abort_input(self, input_id: str) -> bool:
        """Abort the current run if it serves ``input_id``; return whether it did."""
        with self._state_lock:
            if self._current_run_id is None or input_id not in self._run_input_ids:
                return False
            self._abort()
            return True
