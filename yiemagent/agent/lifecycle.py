"""The agent's thread, queues and worker pool, and how it stops: ``Lifecycle``, a part of ``Agent``.

``Lifecycle`` owns the input, follow-up and output queues, the worker pool, the agent thread and the
stop state; ``Agent`` delegates ``start``/``shutdown``/``is_running`` to it, and ``Runs``
(``yiemagent.agent.runs``) hands it answers to deliver and inputs it could not serve. Rules
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
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from .._internal.checks import check_bool, check_callable, check_choice, check_int, check_number, check_str
from .._internal.fork import fork_note, fresh_queue_locks, on_fork_in_child
from ..context.usage_limits import UsageLimits
from ..exceptions import AgentClosedError, ConfigError, SimulatedCrash
from ..loop.conversation import Input, StopMode
from ..output.typed_output import OUTPUT_MODES
from ..store.base import ConversationStore
from ..tools import AgentTool
from .inbox import EMPTY, SHUTDOWN, ClosableQueue, deliver

if TYPE_CHECKING:  # annotations only: the client (and requests) load with the first MCP server
    from ..mcp.client import MCPClient

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
    if "output_mode" in args:
        check_choice("output_mode", args["output_mode"], OUTPUT_MODES)
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
    for flag in ("builtin_list_tools", "steering", "emit_intermediate", "final_turn_without_tools", "inline",
                 "mcp_required", "close_mcp_clients"):
        if flag in args:
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
    """The thread, the queues, the worker pool and the stop state of one ``Agent``.

    Args:
        name: the agent's name, for thread names (``yiemagent-<name>-agent``, ``-worker_<n>``).
        max_workers: threads of the pool that runs model calls and tools.
        own_clients: MCP clients to close at shutdown (those the agent made or was handed).
        abort: aborts the current run (``Agent.abort``); called by ``shutdown`` past its deadline.
        abort_event: the agent's ``abort_event``: an intermediate answer of an aborted run never waits for room.
        owner: the agent; when it is dropped without ``shutdown()`` the pool threads end (a finalizer).

    Every attribute below is read by the agent's other parts and written only here.
    """

    def __init__(self, name: str, max_workers: int, own_clients: list[MCPClient],
                 abort: Callable[[], None], abort_event: threading.Event, owner: object) -> None:
        self.name = name
        self.abort_event = abort_event
        self.wakeup = threading.Event()
        """Set by every put on an input queue and by ``shutdown``: the agent thread looks again."""
        self.input_queue = ClosableQueue(16, self.wakeup)
        self.follow_up_queue = ClosableQueue(32, self.wakeup)
        self.output_queue: queue.Queue[dict[str, Any]] = queue.Queue(16)
        self.unserved: list[Any] = []
        """Inputs taken off the queues but never served (after shutdown)."""
        self.undelivered: list[dict[str, Any]] = []
        """Answers that found ``output_queue`` full at ``shutdown(mode="now")``."""
        self.stop_mode: StopMode | None = None
        self.closed = False
        self.closed_reason = "the agent was shut down"
        self.thread: threading.Thread | None = None
        self.own_clients = own_clients
        self._abort = abort
        self._abort_generation = 0
        self._deliver_deadline: float | None = None
        self._stop_after_run = False
        self._released = False
        self._release_lock = threading.Lock()
        self._owner = weakref.ref(owner)
        self._start_pool(max_workers)
        on_fork_in_child(self._after_fork)

    # ------------------------------------------------------------------ pool

    def _start_pool(self, max_workers: int) -> None:
        """The worker threads of model calls and tools (``yiemagent-<name>-worker_<n>``)."""
        self.worker_idents: set[int] = set()
        idents = self.worker_idents  # the initializer must not hold the agent (see the finalizer)
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix=f"yiemagent-{self.name}-worker",
            initializer=lambda: idents.add(threading.get_ident()),
        )
        owner = self._owner()
        # an agent used through ask() and dropped without shutdown() must not keep its pool threads
        self._finalizer = weakref.finalize(owner if owner is not None else self, self.executor.shutdown,
                                           wait=False, cancel_futures=True)

    def _after_fork(self) -> None:
        """In a forked child (``yiemagent._internal.fork``): a started agent refuses at once.

        One not started gets new locks and a new pool (the parent's pool threads are gone).
        """
        self._release_lock = threading.Lock()
        fresh_queue_locks(self.output_queue)
        if self.thread is None and not self.closed:
            self._finalizer.detach()
            self._start_pool(self.executor._max_workers)
        elif not self.closed:  # its thread stayed in the parent
            self.closed_reason = fork_note("this Agent's thread")
            self.closed = True
            self.input_queue.close(self.closed_reason)
            self.follow_up_queue.close(self.closed_reason)

    def owns(self, ident: int) -> bool:
        """True when thread ``ident`` is the agent thread or a worker of the pool."""
        thread = self.thread
        return ident in self.worker_idents or (thread is not None and thread.ident == ident)

    # ------------------------------------------------------------------ inputs and answers

    def check_open(self) -> None:
        """Raise ``AgentClosedError`` (with the reason) once the agent is shut down or shutting down."""
        if self.closed or self.stop_mode is not None:
            raise AgentClosedError(self.closed_reason)

    def take(self) -> Any:
        """The next input: ``input_queue`` first, then ``follow_up_queue``; ``EMPTY`` when both are empty."""
        for q in (self.input_queue, self.follow_up_queue):
            try:
                return q.get_nowait()
            except queue.Empty:
                continue
        return EMPTY

    def take_steering(self) -> list[Any]:
        """What waits on ``input_queue`` now (steering); a ``SHUTDOWN`` seen there stops after the run."""
        taken: list[Any] = []
        while True:
            try:
                item = self.input_queue.get_nowait()
            except queue.Empty:
                return taken
            if item is SHUTDOWN:
                self._stop_after_run = True
                return taken
            taken.append(item)

    def keep_unserved(self, item: Any) -> None:
        """``item`` was taken just as ``shutdown("now")`` began: returned by ``shutdown``, not served."""
        self.unserved.append(item)

    def interrupt(self) -> None:
        """``abort()``: a thread blocked putting an answer on a full output queue gives up (``undelivered``)."""
        self._abort_generation += 1

    def deliver(self, answer: dict[str, Any]) -> None:
        """Put ``answer`` on ``output_queue``; never blocks for ever (see ``undelivered``).

        What an aborted run puts (its intermediate messages, its answer) never waits for room:
        with nobody reading, it goes to ``undelivered`` and the agent serves the next input.
        """
        generation = self._abort_generation
        aborted = answer.get("status") == "aborted"

        def give_up() -> bool:
            deadline = self._deliver_deadline
            return (aborted or self.stop_mode == "now" or self._abort_generation != generation
                    or (answer.get("intermediate") is True and self.abort_event.is_set())
                    or (deadline is not None and time.monotonic() >= deadline))

        if not deliver(self.output_queue, answer, give_up):
            self.undelivered.append(answer)
            logger.warning("output queue full and not read (shutdown or abort); answer kept in agent.undelivered")

    # ------------------------------------------------------------------ thread

    @property
    def is_running(self) -> bool:
        """True while the agent thread is alive."""
        return self.thread is not None and self.thread.is_alive()

    def start(self, serve: Callable[[Any], object], recover: Callable[[], object] | None, keep: object) -> bool:
        """Start the agent thread (once): ``recover()`` first, then ``serve(item)`` for each input taken.

        ``keep``: held by the thread while it runs (the agent: a started agent nobody references goes on
        serving its queues, and its pool is not finalized under it).

        Returns:
            True when this call started it.

        Raises:
            AgentClosedError: the agent was shut down.
        """
        if self.closed:
            raise AgentClosedError(f"{self.closed_reason}; make a new one")
        if self.thread is not None:
            return False
        self.thread = threading.Thread(target=self._main, args=(serve, recover, keep),
                                       name=f"yiemagent-{self.name}-agent", daemon=True)
        self.thread.start()
        return True

    def _main(self, serve: Callable[[Any], object], recover: Callable[[], object] | None, keep: object) -> None:
        logger.debug("agent thread started")
        if recover is not None:
            try:
                recover()  # interrupted runs and inputs left pending, before new ones
            except BaseException:
                logger.exception("agent thread: serving the inputs pending in the store failed")
        try:
            while True:
                self.wakeup.clear()
                if self.stop_mode in ("after_turn", "now"):
                    break
                item = self.take()
                if item is EMPTY:
                    if self.stop_mode == "drain":
                        break
                    self.wakeup.wait()
                    continue
                if item is SHUTDOWN:
                    if self.stop_mode == "drain":
                        continue
                    break
                try:
                    serve(item)
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
            if self.closed:  # shutdown() was called from inside a run and could not release
                self._release(time.monotonic() + 1.0)
            logger.debug("agent thread stopped")

    def shutdown(self, timeout_seconds: float, mode: Literal["drain", "after_turn", "now"], inside: bool) -> list[Any]:
        """``Agent.shutdown`` (see there): close the queues, join the thread, release; the inputs not served.

        ``inside``: called from the agent's own thread or workers (the thread cannot be joined from there).

        Raises:
            ConfigError: ``mode`` or ``timeout_seconds`` is not valid.
        """
        check_choice("mode", mode, ("drain", "after_turn", "now"))
        check_number("timeout_seconds", timeout_seconds, positive=False)  # finite: NaN would never end
        begun = time.monotonic()
        deadline = begun + timeout_seconds
        if self.stop_mode is None or mode == "now":
            self.stop_mode = mode
        if self._deliver_deadline is None:
            self._deliver_deadline = begun + timeout_seconds / 2
        self.input_queue.close()
        self.follow_up_queue.close()
        if mode == "now":
            self._abort()
        self.wakeup.set()
        thread = self.thread
        if thread is not None and thread.is_alive():
            if inside:
                logger.warning("shutdown() called from inside the agent; the thread stops after this run")
            else:
                self._join(thread, deadline)
        self.closed = True
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
        if thread.is_alive() and self.stop_mode != "now":
            logger.warning("agent thread did not stop in time; aborting the current run")
            self.stop_mode = "now"
            deadline = time.monotonic() + _ESCALATE_SECONDS
        while thread.is_alive() and time.monotonic() < deadline:
            self._abort()
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
        self.executor.shutdown(wait=False, cancel_futures=True)
        deadline = min(deadline, time.monotonic() + _WORKER_GRACE_SECONDS)
        for worker in list(getattr(self.executor, "_threads", ())):
            if worker is not threading.current_thread():
                worker.join(max(0.0, deadline - time.monotonic()))
                if worker.is_alive():
                    logger.warning("%s still running after shutdown (a tool ignores abort_event)", worker.name)
        for client in self.own_clients:
            try:
                client.close()
            except BaseException:
                logger.exception("closing %s raised; ignored", client.name)
