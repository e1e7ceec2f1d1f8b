"""The agent's inputs and answers, and how it stops: ``Input``, delivery, ``shutdown()``.

Split out of ``agent.py`` (the ``Agent`` class mixes ``Lifecycle`` in). Rules
(tests in tests/test_agent_races.py and tests/property/test_agent_state.py):

* ``shutdown()`` closes the input queues first (puts, blocked ones too, raise
  ``AgentClosedError``), joins the agent thread by its deadline (a drain or
  after_turn shutdown past it aborts the run, as ``"now"``; ``"now"`` aborts
  again every 0.1 s so requests started meanwhile are cut too), then ends the
  pool threads (bounded wait) and closes the MCP clients the agent made;
* an answer never blocks the agent thread for ever on a full ``output_queue``:
  at shutdown "now", after ``abort()``, or past half the shutdown timeout it
  is kept in ``undelivered`` instead.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from .._internal.checks import check_bool, check_callable, check_choice, check_int, check_number, check_str
from .._internal.fork import fork_note, fresh_queue_locks, on_fork_in_child
from ..context.usage_limits import UsageLimits
from ..exceptions import AgentClosedError, ConfigError
from ..loop.conversation import Input, StopMode
from ..mcp.client import MCPClient
from ..store.base import ConversationStore
from ..tools import AgentTool
from .inbox import SHUTDOWN, ClosableQueue, deliver

__all__ = ["Lifecycle", "check_agent_arguments", "resolve"]

logger = logging.getLogger("yiemagent.agent")

_ESCALATE_SECONDS = 2.0  # after a drain/after_turn shutdown timed out: how long "now" may take
_WORKER_GRACE_SECONDS = 0.5  # how long shutdown waits for a pool thread (idle ones end in milliseconds)


def resolve(future: concurrent.futures.Future[dict[str, Any]], answer: dict[str, Any]) -> None:
    """Set ``future``'s result unless it is already done (cancelled by its owner, or failed at shutdown)."""
    try:
        future.set_result(answer)
    except concurrent.futures.InvalidStateError:
        logger.debug("answer for a future already done; dropped from the future only")


def check_agent_arguments(args: dict[str, Any]) -> list[Any]:
    """Check ``Agent()``'s arguments (``ConfigError`` naming the first bad one); return the tools as a list."""
    check_str("system_prompt", args["system_prompt"], optional=True)
    check_str("name", args["name"], optional=True, empty=False)
    for hook in ("before_tool_call", "after_tool_call", "event_sink", "prepare_context", "format_messages",
                 "approval_policy"):
        check_callable(hook, args[hook])
    check_int("max_turns", args["max_turns"], minimum=1)
    check_int("max_repeated_calls", args["max_repeated_calls"], minimum=1, optional=True)
    check_int("max_parallel_tools", args["max_parallel_tools"], minimum=1)
    check_int("max_result_chars", args["max_result_chars"], minimum=1, optional=True)
    check_choice("tool_execution", args["tool_execution"], ("parallel", "sequential"))
    for name in ("usage_limits", "conversation_usage_limits"):
        if args.get(name) is not None and not isinstance(args[name], UsageLimits):
            raise ConfigError(f"{name} must be a yiemagent.context.usage_limits.UsageLimits, not {args[name]!r:.60}")
    if "lease_seconds" in args:
        check_number("lease_seconds", args["lease_seconds"])
    store = args.get("store")
    if store is not None and not isinstance(store, ConversationStore):
        raise ConfigError(f"store must be a ConversationStore such as yiemagent.store.SQLiteStore({store!r:.60}), "
                          f"not {type(store).__name__} {store!r:.60}")
    check_str("conversation_id", args.get("conversation_id"), optional=True, empty=False)
    for flag in ("builtin_list_tools", "steering", "emit_intermediate", "final_turn_without_tools"):
        check_bool(flag, args[flag])
    tools = args["tools"]
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
        raise ConfigError(f"tools must be a list of AgentTool objects or functions, not {type(tools).__name__}"
                          f" {tools!r:.50}")
    tools = list(tools)
    for each in tools:
        if not isinstance(each, AgentTool) and not callable(each):
            raise ConfigError(f"each of tools must be an AgentTool or a function, not {type(each).__name__}"
                              f" {each!r:.50}")
    return tools


class Lifecycle:
    """Delivery and shutdown of an ``Agent`` (mixed into it; uses its attributes)."""

    input_queue: ClosableQueue
    follow_up_queue: ClosableQueue
    output_queue: Any
    unserved: list[Any]
    undelivered: list[dict[str, Any]]
    _thread: threading.Thread | None
    _stop_mode: StopMode | None
    _closed: bool
    _closed_reason: str
    _abort_generation: int
    _deliver_deadline: float | None
    _released: bool
    _release_lock: threading.Lock
    _finalizer: weakref.finalize  # type: ignore[type-arg]
    _executor: concurrent.futures.ThreadPoolExecutor
    _own_clients: list[MCPClient]
    _wakeup: threading.Event
    abort_event: threading.Event

    def _init_lifecycle(self) -> None:
        """The delivery and shutdown state of a new agent."""
        self.unserved: list[Any] = []
        """Inputs taken off the queues but never served (after shutdown)."""
        self.undelivered: list[dict[str, Any]] = []
        """Answers that found ``output_queue`` full at ``shutdown(mode="now")``."""
        self._stop_mode: StopMode | None = None
        self._closed = False
        self._abort_generation = 0
        self._deliver_deadline: float | None = None
        self._released = False
        self._release_lock = threading.Lock()
        self._closed_reason = "the agent was shut down"
        on_fork_in_child(self._after_fork)

    def _after_fork(self) -> None:
        """In a forked child (``yiemagent._internal.fork``): a started agent refuses at once; one not started works."""
        self._release_lock = threading.Lock()
        fresh_queue_locks(self.output_queue)
        self._reset_after_fork()
        if self._thread is not None and not self._closed:  # its thread stayed in the parent
            self._closed_reason = fork_note("this Agent's thread")
            self._closed = True
            self.input_queue.close(self._closed_reason)
            self.follow_up_queue.close(self._closed_reason)

    def _reset_after_fork(self) -> None:
        raise NotImplementedError  # pragma: no cover - Serving defines it

    def abort(self) -> None:
        raise NotImplementedError  # pragma: no cover - Agent defines it

    def _inside(self) -> bool:
        raise NotImplementedError  # pragma: no cover - Agent defines it

    def _deliver(self, answer: dict[str, Any]) -> None:
        """Put ``answer`` on ``output_queue``; never blocks for ever (see ``undelivered``).

        What an aborted run puts (its intermediate messages, its answer) never waits for room:
        with nobody reading, it goes to ``undelivered`` and the agent serves the next input.
        """
        generation = self._abort_generation
        aborted = answer.get("status") == "aborted"

        def give_up() -> bool:
            deadline = self._deliver_deadline
            return (aborted or self._stop_mode == "now" or self._abort_generation != generation
                    or (answer.get("intermediate") is True and self.abort_event.is_set())
                    or (deadline is not None and time.monotonic() >= deadline))

        if not deliver(self.output_queue, answer, give_up):
            self.undelivered.append(answer)
            logger.warning("output queue full and not read (shutdown or abort); answer kept in agent.undelivered")

    def shutdown(
        self, timeout_seconds: float = 10.0, mode: Literal["drain", "after_turn", "now"] = "drain"
    ) -> list[Any]:
        """Stop the agent thread; return the inputs it did not serve.

        From the call on, the input queues refuse puts (``AgentClosedError``,
        also for puts blocked on a full queue). Requests in flight are cut
        (model and MCP, as ``abort()``) when the run is aborted. The pool
        threads end, and clients made from URLs are closed.

        Args:
            timeout_seconds: seconds to wait in all. ``"drain"`` and
                ``"after_turn"`` that have not finished by then abort the
                current run (as ``"now"``) and wait up to 2 s more.
            mode: ``"drain"`` serves every queued input first; ``"after_turn"``
                stops after the current run; ``"now"`` aborts the current run.

        Returns:
            The inputs not served, as they were put (``submit`` futures of
            those get ``AgentClosedError``). Answers that found
            ``output_queue`` full with nobody reading (after half of
            ``timeout_seconds``) are in ``undelivered``. Safe to call twice.

        Raises:
            ConfigError: ``mode`` or ``timeout_seconds`` is not valid.
        """
        check_choice("mode", mode, ("drain", "after_turn", "now"))
        if not isinstance(timeout_seconds, (int, float)) or isinstance(timeout_seconds, bool) or timeout_seconds < 0:
            raise ConfigError(f"timeout_seconds must be a number >= 0, not {timeout_seconds!r:.50}")
        begun = time.monotonic()
        deadline = begun + timeout_seconds
        if self._stop_mode is None or mode == "now":
            self._stop_mode = mode
        if self._deliver_deadline is None:
            self._deliver_deadline = begun + timeout_seconds / 2
        self.input_queue.close()
        self.follow_up_queue.close()
        if mode == "now":
            self.abort()
        self._wakeup.set()
        thread = self._thread
        if thread is not None and thread.is_alive():
            if self._inside():  # from a tool or hook of this agent: the thread cannot be joined from here
                logger.warning("shutdown() called from inside the agent; the thread stops after this run")
            else:
                self._join(thread, deadline)
        self._closed = True
        leftovers = [*self.input_queue.take_all(), *self.follow_up_queue.take_all()]
        returned = []
        for item in [*self.unserved, *leftovers]:
            if item is SHUTDOWN:
                continue
            if isinstance(item, Input):
                if item.future is not None and not item.future.done():
                    try:
                        item.future.set_exception(AgentClosedError("the agent shut down before serving this input"))
                    except concurrent.futures.InvalidStateError:
                        pass
                returned.append(item.original)
            else:
                returned.append(item)
        self.unserved = []
        if thread is None or not thread.is_alive():
            self._release(max(deadline, time.monotonic() + 0.5))
        return returned

    def _join(self, thread: threading.Thread, deadline: float) -> None:
        """Join the agent thread by ``deadline``; past it abort (again and again: new requests get cut too)."""
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive() and self._stop_mode != "now":
            logger.warning("agent thread did not stop in time; aborting the current run")
            self._stop_mode = "now"
            deadline = time.monotonic() + _ESCALATE_SECONDS
        while thread.is_alive() and time.monotonic() < deadline:
            self.abort()
            thread.join(0.1)
        if thread.is_alive():
            logger.warning("agent thread still running at the shutdown deadline (a callback ignores abort)")

    def _release(self, deadline: float) -> None:
        """End the pool threads (bounded wait) and close the clients this agent made; once."""
        with self._release_lock:
            if self._released:
                return
            self._released = True
        self._finalizer.detach()
        self._executor.shutdown(wait=False, cancel_futures=True)
        deadline = min(deadline, time.monotonic() + _WORKER_GRACE_SECONDS)
        for worker in list(getattr(self._executor, "_threads", ())):
            if worker is not threading.current_thread():
                worker.join(max(0.0, deadline - time.monotonic()))
                if worker.is_alive():
                    logger.warning("%s still running after shutdown (a tool ignores abort_event)", worker.name)
        for client in self._own_clients:
            try:
                client.close()
            except BaseException:
                logger.exception("closing %s raised; ignored", client.name)
