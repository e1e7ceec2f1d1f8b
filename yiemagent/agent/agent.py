"""Agent: the agent loop on a background thread, fed by bounded queues.

::

    agent = Agent(llm_call, tools=[add], mcp_servers=["http://127.0.0.1:3001/mcp"])
    agent.start()
    agent.input_queue.put("What is 2 + 3?")
    answer = agent.output_queue.get(timeout=60)   # {"role": "assistant", "content": "5", ...}
    agent.shutdown()

Queues (all ``queue.Queue``, safe from any thread):

* ``input_queue`` (maxsize 16) and ``follow_up_queue`` (maxsize 32) take a ``str``, a ``UserMessage`` or an
  OpenAI user-message dict. The thread always takes from ``input_queue`` first; each input is a run, in order.
* ``output_queue`` (maxsize 16) receives one OpenAI assistant message dict per input put on a queue: the
  final answer, or an error answer. Extra keys: ``input_ids`` (the ids of the inputs it answers), ``status``
  (``completed``, ``truncated`` (cut by the token limit or an interrupted stream), ``terminated``,
  ``max_turns``, ``repeated_call``, ``usage_limit``, ``aborted``, ``error``, ``output_invalid`` (a typed
  answer still invalid after ``output_retries``), ``awaiting_approval`` (with ``pending_approvals``: see
  ``decide``), ``conflict`` (a refused ``edit``/``rewind``/``regenerate``, with ``branch``),
  ``guardrail_tripped`` (with ``guardrail``)), ``finish_reason`` (the model's, or None), ``model`` (the model
  that answered, when its reply named it), on failure ``error`` (a message), with ``usage_limit`` the limit
  reached, with ``output_type`` the parsed answer as ``output`` (an instance of the type; see
  ``yiemagent.output.typed_output``). An answer ending a run on a tool batch (``terminated``, ``max_turns``)
  has text and no ``tool_calls``. Strip the extra keys before sending the dict to a model; use
  ``openai_messages()`` for the history.

``submit()`` and ``ask()`` answer through a ``Future`` instead of the output queue. ``abort()`` ends the
current run; ``shutdown()`` stops the thread and returns the inputs it did not serve.

Every input is answered or returned, whatever happens: nothing raised by a tool, hook, event sink,
``prepare_context``, ``format_messages`` or ``llm_call`` (``SystemExit`` and ``KeyboardInterrupt`` included)
ends the agent thread; it becomes an error result or an error answer. After ``shutdown()`` (or after the
``SHUTDOWN`` sentinel stopped the thread) the input queues refuse puts with ``AgentClosedError``, also puts
that were blocked on a full queue. Worker threads are named ``yiemagent-<name>-worker_<n>`` and the agent
thread ``yiemagent-<name>-agent``.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import queue
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from .._internal.checks import check_bool, check_callable, check_number
from ..context.compaction import Compaction, compaction_setting
from ..exceptions import AgentBusyError, AgentClosedError, AgentError, ConfigError
from ..loop import LLMCall, LoopConfig, UsageLimits
from ..loop import events as ev
from ..loop.conversation import Conversation, parse_state
from ..loop.handoff import cut_in_flight
from ..loop.spend import RunSpend
from ..mcp.bridge import MCPToolset
from ..mcp.config import mcp_clients
from ..mcp.limits import MCPLimits
from ..messages import Message
from ..messages.formatting import OpenAIFormatter
from ..output.answers import Answer
from ..output.typed_output import OutputMode
from ..store.base import ConversationStore
from ..tools import AgentTool, ToolRegistry
from ..tools.guardrails import Guardrail, GuardrailCheck, guardrails_of
from ..tools.hooks import AfterToolCall, BeforeToolCall
from .approvals import Approvals
from .as_tool import AgentAsTool
from .branching import Branches
from .inbox import SHUTDOWN, ClosableQueue
from .lifecycle import Lifecycle, check_agent_arguments
from .runs import Runs
from .streaming import AgentStream
from .typed_inputs import TypedInputs
from .views import compact_now

if TYPE_CHECKING:  # annotations: the MCP client (and requests) load with the first server given
    from ..mcp.client import MCPClient

__all__ = ["SHUTDOWN", "Agent"]

logger = logging.getLogger("yiemagent.agent")

_A = TypeVar("_A", bound="Agent")

_ASK_POLL_SECONDS = 0.1  # ask() waits in steps this long, so that Ctrl-C in the calling thread is seen at once

class Agent:
    """A chat agent: a model, tools (local and MCP) and a conversation, run on a thread.

    Args:
        llm_call: ``llm_call(messages, tools) -> reply`` (see ``yiemagent.formats.llm``).
        system_prompt: sent first on every model call; None sends none.
        tools: ``AgentTool`` objects or plain typed functions (wrapped with ``@tool``).
        mcp_servers: ``MCPClient`` objects or Streamable HTTP URLs, or a mapping ``{name: client or URL or
            entry}`` naming each server (the name prefixes its tool names when they clash with another server's),
            or servers as data: ``{"mcpServers": {name: {"command", "args", "env", "cwd"} | {"url", "headers"}}}``
            (Claude Desktop, Cursor; VS Code's ``{"servers": ...}`` too) or a ``pathlib.Path`` of such a file,
            ``${VAR}`` expanded; servers sample with ``llm_call`` (``yiemagent.mcp.config``). Every entry is
            checked here (``ConfigError`` naming it; a plain string is an error). Their tools are listed before
            the first model call and re-listed after ``notifications/tools/list_changed``. Clients made here are
            closed by ``shutdown()``.
        before_tool_call: hook, see ``yiemagent.tools.hooks`` (may block a call).
        after_tool_call: hook, see ``yiemagent.tools.hooks`` (may replace a result).
        event_sink: ``sink(event)``, see ``yiemagent.loop.events``.
        max_turns: model calls per input, at most; the last is made without tools.
        tool_execution: ``"parallel"`` (a thread pool) or ``"sequential"``.
        inline: call ``llm_call`` and every tool on the agent's own thread, with
            no hand-off to a worker (``LoopConfig.inline``): the fastest loop, for
            models and tools that return at once; an abort is seen only when a
            call returns. One tool alone: ``@tool(inline=True)``.
        prepare_context: ``prepare_context(history) -> history`` before each model call.
        format_messages: ``format_messages(history) -> [OpenAI dict]``; default OpenAI format.
        builtin_list_tools: add the ``list_tools`` tool when there are MCP servers.
        steering: inputs put on ``input_queue`` during a run join it after the
            current tool batch; the run's answer answers them all.
        emit_intermediate: also put each assistant message with tool calls and
            each tool result on ``output_queue`` (with ``"intermediate": True``),
            for inputs answered there.
        max_repeated_calls: the same call this many times in a row is refused
            and ends the run (status ``repeated_call``); None: no limit.
        final_turn_without_tools: the last allowed turn is sent without tools.
        max_parallel_tools: worker threads for one batch of tool calls.
        max_result_chars: characters of one tool result the model sees; longer
            results are cut with a visible note. None: no cap.
        usage_limits, conversation_usage_limits: ``UsageLimits`` of each run / of the
            conversation (status ``usage_limit``; see ``yiemagent.context.usage_limits``).
        store: a ``ConversationStore`` (``SQLiteStore``, ``PostgresStore``) keeping the conversation
            ``conversation_id``: its history is loaded from there, every input goes through its inbox, each model
            reply and tool result is journaled as it arrives and each run is committed; a run interrupted by a
            crash is finished from the journal by the next agent on the conversation, in any process (see
            ``yiemagent.store.durable``). None: the conversation lives here only.
        conversation_id: the conversation's id in ``store`` (required with it).
        lease_seconds: with a store, how long the conversation's lease lasts
            without renewal (renewed every third of it while serving): the time
            a crashed process blocks its conversation before another takes over.
        mcp_required: an MCP server that cannot be reached (refused, command
            not found, not an MCP server) makes the answer of each input an
            error (``status: "error"``, ``error`` naming the server, the model
            not called, the input not added to the history) until it can be
            reached; the servers are listed again at every input. False (the
            default): the run goes on with the tools that are there, and the
            answer says which servers are missing (``mcp_unavailable``).
        close_mcp_clients: ownership of the ``MCPClient`` objects given in
            ``mcp_servers``. False (the default): they stay the caller's, and
            ``shutdown()`` (or leaving ``with Agent(...)``) leaves them open
            (a stdio server keeps running) for the caller to close. True: the
            agent owns them and closes them at shutdown. Clients the agent makes
            (from URLs or config) are always its own and always closed.
        approval_policy: ``policy(tool) -> bool``: calls of tools it returns True for wait for a
            person (``yiemagent.tools.approvals``; ``unless_read_only`` for MCP tools); tools declared
            ``@tool(needs_approval=True)`` always wait. See ``approve``/``reject``/``decide``.
        mcp_limits: caps on the tools, results and sampling of MCP servers (``yiemagent.mcp.limits``; sampling
            by this agent's model counts in its runs' usage and limits); None: ``MCPLimits()``.
        name: names the agent's threads (``yiemagent-<name>-worker_0``); None:
            a random 8-character id.
        output_type, output_mode, output_retries, output_validators: typed answers
            (``yiemagent.output.typed_output``): a dataclass, TypedDict, JSON Schema dict or
            pydantic model; ``"auto"``, ``"response_format"``, ``"tool"`` or ``"prompted"``;
            invalid answers sent back at most this many times; ``fn(output)`` raising
            ``ModelRetry`` to reject. The answer dict carries ``output``.
        compaction, context_window, reserve_tokens: long conversations (``yiemagent.context.compaction``):
            ``compaction=True`` with ``context_window`` (tokens) summarises the oldest
            messages when a request would pass ``context_window - reserve_tokens``, and once
            when the server answers "too long"; a ``Compaction`` sets everything. With only
            ``context_window``, requests are measured (``request_tokens`` on answers and
            ``message_end`` events) and compacted only by ``compact()``.
        input_guardrails, output_guardrails, tool_guardrails: ``check(ctx) -> GuardrailVerdict | None``
            functions or ``Guardrail`` objects run on the user's text, each answer, and tool calls'
            arguments and results; a tripwire ends the run (status ``guardrail_tripped``); see
            ``yiemagent.tools.guardrails``.

    Raises:
        ConfigError: an argument of the wrong type or out of range (at once, naming it): e.g.
            ``max_turns="3"``, ``tools="add"``, ``max_repeated_calls=0``, ``event_sink="x"``.
        StoreError: with ``store=``, the store failed; ``CorruptRowError``: a damaged saved state
            (names the conversation, the store and the fix: see ``DurableConversation``).

    Answer dicts carry ``mcp_unavailable: [{"server": name, "error": message}]``
    while a server could not be reached at its last listing (the key is absent
    when every server is fine); ``mcp_status()`` gives the same for UIs.

    Thread safety: every public method is safe from any thread; runs happen one
    at a time (on the agent thread, or in the caller of ``ask`` before ``start``).
    """

    def __init__(
        self,
        llm_call: LLMCall,
        *,
        system_prompt: str | None = None,
        tools: Iterable[AgentTool | Callable[..., Any]] = (),
        mcp_servers: Iterable[MCPClient | str | Mapping[str, Any]] | Mapping[str, Any] | os.PathLike[str] | None = (),
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        event_sink: ev.EventSink | None = None,
        max_turns: int = 10,
        tool_execution: Literal["parallel", "sequential"] = "parallel",
        inline: bool = False,
        prepare_context: Callable[[list[Message]], list[Message]] | None = None,
        format_messages: Callable[[list[Message]], list[dict[str, Any]]] | None = None,
        builtin_list_tools: bool = True,
        steering: bool = False,
        emit_intermediate: bool = False,
        max_repeated_calls: int | None = 3,
        final_turn_without_tools: bool = True,
        max_parallel_tools: int = 8,
        max_result_chars: int | None = 100_000,
        store: ConversationStore | None = None,
        conversation_id: str | None = None,
        lease_seconds: float = 30.0,
        name: str | None = None,
        mcp_required: bool = False,
        close_mcp_clients: bool = False,
        mcp_limits: MCPLimits | None = None,
        usage_limits: UsageLimits | None = None, conversation_usage_limits: UsageLimits | None = None,
        output_type: Any = None, output_mode: OutputMode = "auto", output_retries: int = 2,
        output_validators: Iterable[Callable[[Any], object]] = (),
        approval_policy: Callable[[AgentTool], bool] | None = None,
        compaction: Compaction | bool | None = None, context_window: int | None = None,
        reserve_tokens: int | None = None, input_guardrails: Iterable[Guardrail | GuardrailCheck] = (),
        output_guardrails: Iterable[Guardrail | GuardrailCheck] = (),
        tool_guardrails: Iterable[Guardrail | GuardrailCheck] = (),
    ) -> None:
        if not callable(llm_call):
            raise ConfigError("llm_call must be callable: llm_call(messages, tools) -> reply")
        tools = check_agent_arguments(locals())
        if (store is None) != (conversation_id is None) or (conversation_id is not None and not conversation_id):
            raise ConfigError("store and conversation_id go together: Agent(..., store=s, conversation_id='c-42')")
        self.name = name or uuid.uuid4().hex[:8]
        """Names the threads: ``yiemagent-<name>-agent``, ``yiemagent-<name>-worker_<n>``."""
        self.abort_event = threading.Event()
        """Set by ``abort()``; handed to tools and hooks; cleared when a run starts."""
        self.tools = ToolRegistry(tools)
        spend = RunSpend()  # MCP sampling by the agent's model: bounded, and counted in the run that causes it
        clients, own_clients = mcp_clients(mcp_servers, sampling_llm_call=llm_call, sampling_limits=mcp_limits,
                                           sampling_meter=spend)
        if close_mcp_clients:  # the caller hands its clients over: the agent closes them all
            own_clients = list(clients)
        # The parts, each with its own state (docs/layout.rst): the thread, queues and pool; the run in
        # progress (the conversation's RunHost); typed answers; approvals; agents as tools.
        self._lifecycle = Lifecycle(self.name, max_workers=max_parallel_tools + 1, own_clients=own_clients,
                                    abort=_weak(self.abort), abort_event=self.abort_event, owner=self)
        self._runs = Runs(self._lifecycle, _weak(self.abort), event_sink, emit_intermediate)
        self._typed = TypedInputs(self._runs.wrap, output_type, output_mode, output_retries, output_validators)
        self.mcp = MCPToolset(clients, self.tools, on_change=self._runs.tools_changed, on_error=self._runs.mcp_error,
                              limits=mcp_limits)
        self._runs.mcp = self.mcp
        if clients and builtin_list_tools:
            self.tools.add(self.mcp.list_tools_tool())
        self.steering = steering
        config = LoopConfig(
            llm_call=llm_call,
            tools=self.tools,
            system_prompt=system_prompt,
            max_turns=max_turns,
            before_tool_call=before_tool_call, after_tool_call=after_tool_call,
            prepare_context=prepare_context, format_messages=format_messages or OpenAIFormatter(),
            tool_execution=tool_execution, inline=inline,
            before_model_call=self._runs.refresh_tools if clients else None,
            max_repeated_calls=max_repeated_calls,
            final_turn_without_tools=final_turn_without_tools,
            max_parallel_tools=max_parallel_tools, max_result_chars=max_result_chars,
            executor=self._lifecycle.executor,
            usage_limits=usage_limits, conversation_usage_limits=conversation_usage_limits,
            output=self._typed.spec,
            approval_policy=approval_policy,
            compaction=compaction_setting(compaction, context_window, reserve_tokens), spend=spend,
            input_guardrails=guardrails_of("input_guardrails", input_guardrails),
            output_guardrails=guardrails_of("output_guardrails", output_guardrails),
            tool_guardrails=guardrails_of("tool_guardrails", tool_guardrails),
        )
        servers = self.mcp if clients else None
        self.conversation: Conversation
        """The history, usage, tools and runs (``yiemagent.loop.conversation``); with a store, a
        ``DurableConversation``. The agent drives it through its contract only."""
        if store is not None and conversation_id is not None:
            from ..store.durable import DurableConversation  # the store's modules load with the first store
            self.conversation = DurableConversation(config, store, conversation_id, lease_seconds=lease_seconds,
                                                    servers=servers, mcp_required=mcp_required, steering=steering)
            for q in (self.input_queue, self.follow_up_queue):
                q.accept = self._runs.accept
        else:
            self.conversation = Conversation(config, servers=servers, mcp_required=mcp_required, steering=steering)
        self._runs.conversation = self.conversation
        self._approvals = Approvals(weakref.proxy(self), self._lifecycle, self._runs)
        self._as_tool: AgentAsTool | None = None  # made by the first as_tool(): it holds the agent
        self._branches = Branches(weakref.proxy(self))

    def __repr__(self) -> str:
        state = "closed" if self._lifecycle.closed else ("running" if self.is_running else "idle")
        return f"<Agent {state}, {len(self.tools)} tools, {len(self.history)} messages>"

    def mcp_status(self) -> list[dict[str, Any]]:
        """The MCP servers and whether they can be reached, for UIs (``yiemagent chat``, the demo).

        Returns:
            One dict per server in ``mcp_servers`` order (``MCPToolset.status``)::

                {"server": name, "state": "connected" | "unavailable" | "connecting" | "not_connected",
                 "error": str | None, "tools": [model-side names], "server_info": {...},
                 "skipped": [{"server", "tool", "reason"}]}

            ``connecting``: ``start()`` lists the servers at once, in the background; ``not_connected``:
            not started, not listed yet (an agent not started lists before its first model call).
            Safe from any thread; nothing is sent.
        """
        return self.mcp.status()

    # ------------------------------------------------------------------ public API

    def submit(
        self, message: Any, *, timeout_seconds: float | None = None, output_type: Any = None
    ) -> concurrent.futures.Future[Answer]:
        """Queue an input; return a ``Future`` resolved with its answer dict.

        The answer goes to the future, not to ``output_queue``. The future has
        an ``input_id`` attribute, the id in the answer's ``input_ids``.
        ``output_type``: a typed answer for this input (see ``ask``).

        Raises:
            ConfigError: ``output_type`` has no JSON Schema.
            AgentBusyError: ``input_queue`` stayed full for ``timeout_seconds``
                (also a ``queue.Full``); None waits without limit.
            AgentClosedError: the agent was shut down (also when ``shutdown()``
                ran while this call waited for room on a full queue).
            FormatError: ``message`` is not a str, ``UserMessage`` or user dict.
        """
        self._lifecycle.check_open()
        check_number("timeout_seconds", timeout_seconds, positive=False, optional=True)
        entry = self._runs.wrap(self._typed.typed(message, output_type))
        entry.future = concurrent.futures.Future()
        entry.future.input_id = entry.id  # type: ignore[attr-defined]
        try:
            self.input_queue.put(entry, timeout=timeout_seconds)  # AgentClosedError if shut down meanwhile
        except queue.Full:
            raise AgentBusyError(f"input_queue stayed full for {timeout_seconds}s") from None
        return cast("concurrent.futures.Future[Answer]", entry.future)

    def stream(self, text: Any, *, on_close: Literal["continue", "abort"] = "continue",
               output_type: Any = None, input_id: str | None = None) -> AgentStream:
        """Send one input; return an iterator of its run's events, ending with its answer dict.

        Works before and after ``start()``: started, the input is queued like
        ``submit`` (it waits its turn); not started, it runs on a thread of its
        own. Each item is an ``Event`` (``message_update`` deltas when the
        ``llm_call`` streams, see ``yiemagent.formats.llm``), in order, and the last is
        the answer dict ``ask`` would return, also in ``.future``.
        ``yiemagent.sse_events(agent.stream(text))`` is a Flask/Django
        streaming response body.

        Args:
            text: a ``str``, ``UserMessage`` or OpenAI user-message dict.
            on_close: when the consumer stops early (``close()``, ``break`` then
                ``close()``, a WSGI server closing the response): ``"continue"``
                lets the run finish (its answer goes into the history and
                ``.future``); ``"abort"`` aborts the run serving this input.
            output_type: a typed answer for this input (``answer["output"]``; see
                ``yiemagent.output.typed_output``) over the agent's ``output_type``; None: the agent's.
            input_id: the input's id (``stream.input_id``, the answer's ``input_ids``); None: a random
                one. With a store it is the inbox's idempotency key: the same id again is stored once and
                an input already answered gets its stored answer (``docs/guides/web_apps.rst``).

        Raises:
            ConfigError: ``output_type`` has no JSON Schema, or ``input_id`` is not a non-empty str.
            AgentClosedError: the agent was shut down.
            AgentError: called from inside this agent's own run.
            FormatError: ``text`` is not a str, ``UserMessage`` or user dict.
            StoreError: with a store, the input could not be put in the inbox.
        """
        self._lifecycle.check_open()
        if self._runs.inside():
            raise AgentError("stream() from inside this agent's own run would wait for itself; use submit()")
        entry = self._runs.wrap(self._typed.typed(text, output_type), input_id)
        runs = self._runs
        stream = AgentStream(entry.id, lambda: runs.abort_input(entry.id), on_close)
        entry.listener = stream.put
        if self._lifecycle.thread is None:
            entry.future = concurrent.futures.Future()
            stream.attach(entry.future)
            stream.seq = runs.inbox_seq(entry)  # with a store: in the inbox before the first event
            threading.Thread(target=runs.serve_quietly, args=(entry, self), name=f"yiemagent-{self.name}-stream",
                             daemon=True).start()
        else:
            stream.attach(self.submit(entry))
            stream.seq = runs.inbox_seq(entry)
        return stream

    def drain(self) -> list[Answer]:
        """Serve every input pending in the store's inbox of this conversation; return their answers.

        For workers (``yiemagent.store.base``: ``pending_conversations()``): runs in
        the calling thread with the lease held; interrupted runs are finished
        from the journal first. Returns ``[]`` at once when another process
        holds the lease (it will serve them).

        Raises:
            AgentError: the agent has no store.
            StoreError: the store failed (what was committed stays committed).
        """
        if not self.conversation.durable:
            raise AgentError("drain() needs Agent(..., store=..., conversation_id=...)")
        return cast("list[Answer]", self.conversation.drain(self._runs))

    def ask(self, text: Any, timeout_seconds: float | None = None, *, output_type: Any = None) -> Answer:
        """Send one input and wait for its answer (OpenAI assistant message dict).

        Without ``start()``, the run happens in the calling thread; started, it waits for *its own* answer.

        Args:
            text: a ``str``, ``UserMessage`` or OpenAI user-message dict.
            timeout_seconds: seconds to wait for the answer in all; None waits
                without limit. At the deadline the input's run is aborted (as
                ``abort()``: the model call, tools, guardrails, hooks and validators
                waited for are cut; the history stays valid, the answer's status
                ``aborted``), before and after ``start()``; started, an input still
                queued then stays queued (its answer goes to the history).
            output_type: a typed answer for this input (``answer["output"]``; see
                ``yiemagent.output.typed_output``) over the agent's ``output_type``; None: the agent's.

        Ctrl-C (``KeyboardInterrupt``) in the calling thread aborts this input's
        run (its model call is cut, its tools see ``abort_event``; with the
        thread started, only if that run is this input's, else the input is
        left queued) and is raised again at once; the run stays in the history, aborted.

        Raises:
            TimeoutError: no answer within ``timeout_seconds``.
            AgentClosedError: the agent was shut down.
            AgentError: called from inside this agent's own run (a tool or hook): it would wait forever.
            ConfigError: ``timeout_seconds`` is not a number >= 0 or None, or ``output_type`` has no JSON Schema.
            StoreError: with a store, before ``start()``: it kept failing for ``lease_seconds``.
        """
        check_number("timeout_seconds", timeout_seconds, positive=False, optional=True)
        if self._lifecycle.closed:
            raise AgentClosedError(self._lifecycle.closed_reason)
        if self._runs.inside():
            raise AgentError(
                "ask() from inside this agent's own run (a tool, hook or event sink) would wait for itself; "
                "use submit() or the follow-up queue instead"
            )
        text = self._typed.typed(text, output_type)  # ConfigError for a type without a JSON Schema
        if self._lifecycle.thread is None:
            if timeout_seconds is None:
                return cast(Answer, self._runs.serve(text, deliver=False, caller=True))
            timer = threading.Timer(timeout_seconds, self.abort)  # ends the run at the deadline
            timer.name = f"yiemagent-{self.name}-ask-timer"
            timer.daemon = True
            timer.start()
            try:
                answer = cast(Answer, self._runs.serve(text, deliver=False, caller=True))
            finally:
                timer.cancel()
            if answer.get("status") == "aborted" and timer.finished.is_set() and not timer.is_alive():
                raise TimeoutError(f"no answer within {timeout_seconds}s (the run was aborted)")
            return answer
        deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
        future = self.submit(text, timeout_seconds=timeout_seconds)
        try:
            while True:  # short waits, so that Ctrl-C reaches this thread at once (a lock wait defers it)
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:  # the deadline ends this input's run (if it runs)
                    aborted = self._runs.abort_input(future.input_id)  # type: ignore[attr-defined]
                    raise TimeoutError(f"no answer within {timeout_seconds}s ("
                                       f"{'the run was aborted' if aborted else 'the input stays queued'})")
                try:
                    return future.result(timeout=_ASK_POLL_SECONDS if remaining is None
                                         else min(_ASK_POLL_SECONDS, remaining))
                except concurrent.futures.TimeoutError:
                    continue
        except KeyboardInterrupt:
            self._runs.abort_input(future.input_id)  # type: ignore[attr-defined]
            raise

    def abort(self) -> None:
        """End the current run as soon as possible (tools see ``abort_event``).

        Pending tool calls get "cancelled" results; requests in flight to the
        model (if ``llm_call`` has a ``cancel()`` method, as ``openai_chat``
        has) and to the MCP servers are cut; the run's answer has status
        ``aborted``; the agent goes on with the next input. A thread blocked
        putting an answer on a full ``output_queue`` stops waiting; the answer
        is kept in ``undelivered``.
        """
        self.abort_event.set()
        self._lifecycle.interrupt()  # a thread blocked on a full output queue gives up (see undelivered)
        cut_in_flight(self.config.llm_call)  # the model request in flight (yiemagent.loop.handoff)
        for client in self.mcp.clients:
            try:
                client.cancel_in_flight()
            except BaseException:
                logger.exception("cancelling requests to %s raised; ignored", client.name)

    # ------------------------------------------------------------------ parts: queues and thread (Lifecycle)

    @property
    def input_queue(self) -> ClosableQueue:
        """Inputs (maxsize 16): a ``str``, ``UserMessage`` or user dict; taken before ``follow_up_queue``."""
        return self._lifecycle.input_queue

    @property
    def follow_up_queue(self) -> ClosableQueue:
        """Follow-up inputs (maxsize 32), taken when ``input_queue`` is empty."""
        return self._lifecycle.follow_up_queue

    @property
    def output_queue(self) -> queue.Queue[dict[str, Any]]:
        """Answer dicts (maxsize 16) of the inputs put on the queues (see the class docstring)."""
        return self._lifecycle.output_queue

    @property
    def unserved(self) -> list[Any]:
        """Inputs taken off the queues but never served (after shutdown)."""
        return self._lifecycle.unserved

    @property
    def undelivered(self) -> list[dict[str, Any]]:
        """Answers that found ``output_queue`` full with nobody reading (shutdown or abort)."""
        return self._lifecycle.undelivered

    @property
    def is_running(self) -> bool:
        """True while the agent thread is alive."""
        return self._lifecycle.is_running

    def start(self: _A) -> _A:
        """Start the background thread (once). Returns the agent, for chaining.

        The MCP servers are listed at once, on a thread of their own (``mcp_status()`` says
        ``connecting``, then ``connected`` or ``unavailable``); the first run waits for that listing.

        Raises:
            AgentClosedError: the agent was shut down.
        """
        recover = self._runs.recover if self.conversation.durable else None
        if self._lifecycle.start(self._runs.serve_queued, recover, keep=self) and self.mcp.clients:
            self.mcp.list_in_background(f"yiemagent-{self.name}-mcp")
        return self

    def __enter__(self: _A) -> _A:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        # Leaving the block normally serves what is queued ("drain"); leaving it because of an
        # exception (Ctrl-C's KeyboardInterrupt among them) aborts the run in flight ("now").
        self.shutdown(mode="drain" if exc_type is None else "now")

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
        return self._lifecycle.shutdown(timeout_seconds, mode, inside=self._runs.inside())

    # ------------------------------------------------------------------ parts: events, approvals, as_tool

    @property
    def event_sink(self) -> ev.EventSink | None:
        """``sink(event)``, see ``yiemagent.loop.events``; may be replaced between runs."""
        return self._runs.event_sink

    @event_sink.setter
    def event_sink(self, sink: ev.EventSink | None) -> None:
        check_callable("event_sink", sink)  # ConfigError, as in Agent(event_sink=...)
        self._runs.event_sink = sink

    @property
    def emit_intermediate(self) -> bool:
        """Also put tool-call messages and tool results on ``output_queue`` (see ``Agent``)."""
        return self._runs.emit_intermediate

    @emit_intermediate.setter
    def emit_intermediate(self, value: bool) -> None:
        check_bool("emit_intermediate", value)
        self._runs.emit_intermediate = value

    def pending_approvals(self) -> list[dict[str, Any]]:
        """The tool calls waiting for a decision, oldest first (``Approvals.pending_approvals``)."""
        return self._approvals.pending_approvals()

    def approve(self, tool_call_id: str, *, timeout_seconds: float | None = None) -> Answer:
        """Approve one waiting call; see ``decide``."""
        return self.decide({tool_call_id: True}, timeout_seconds=timeout_seconds)

    def reject(self, tool_call_id: str, reason: str = "", *, timeout_seconds: float | None = None) -> Answer:
        """Reject one waiting call; the model gets an error result with ``reason``; see ``decide``."""
        return self.decide({tool_call_id: reason or False}, timeout_seconds=timeout_seconds)

    def decide(self, decisions: Mapping[str, bool | str], *, timeout_seconds: float | None = None) -> Answer:
        """Record decisions about waiting calls; resume the run once none is left undecided.

        ``{tool_call_id: True}`` approves, ``False`` or ``"reason"`` rejects. Returns, raises and
        waits as ``yiemagent.agent.approvals.Approvals.decide`` documents (``ApprovalError``,
        ``TimeoutError``, ``AgentClosedError``, ``AgentError``, ``StoreError``).
        """
        return self._approvals.decide(decisions, timeout_seconds=timeout_seconds)

    def as_tool(self, name: str, description: str, *, timeout_seconds: float | None = None) -> AgentTool:
        """This agent as a tool another agent can call (``yiemagent.agent.as_tool`` has the rules).

        The tool takes ``{"input": str}``; its result is this agent's answer text (``details``:
        ``{"agent", "run_id", "status", "usage", "answer"}``). ``timeout_seconds``: a call with no
        answer by then aborts the run and returns an error result; None: no deadline.

        Raises:
            ConfigError: a bad ``name``, ``description`` or ``timeout_seconds``.
        """
        if self._as_tool is None:
            self._as_tool = AgentAsTool(self, self._lifecycle, self._runs)
        return self._as_tool.tool(name, description, timeout_seconds=timeout_seconds)

    # ------------------------------------------------------------------ the conversation

    @property
    def history(self) -> list[Message]:
        """The conversation (yiemagent messages; no system prompt): ``conversation.history``."""
        return self.conversation.history

    @history.setter
    def history(self, messages: list[Message]) -> None:
        self.conversation.history = messages

    @property
    def usage(self) -> dict[str, Any]:
        """Token counts summed over every run (from replies that report ``usage``)."""
        return self.conversation.usage

    @usage.setter
    def usage(self, usage: dict[str, Any]) -> None:
        self.conversation.usage = usage

    @property
    def config(self) -> LoopConfig:
        """Model, tools, hooks and limits of every run (``yiemagent.loop.LoopConfig``)."""
        return self.conversation.config

    @config.setter
    def config(self, config: LoopConfig) -> None:
        self.conversation.config = config

    @property
    def mcp_required(self) -> bool:
        """Answer an error while an MCP server cannot be reached (``conversation.mcp_required``)."""
        return self.conversation.mcp_required

    @mcp_required.setter
    def mcp_required(self, required: bool) -> None:
        self.conversation.mcp_required = required

    def openai_messages(self) -> list[dict[str, Any]]:
        """The conversation in OpenAI chat format, system prompt first; fresh dicts.

        Valid for any request (``yiemagent.messages.guard``); messages of failed runs (``excluded``) are left out.
        """
        return self.conversation.openai_messages()

    def state_to_json(self) -> str:
        """The conversation and usage as JSON text (yiemagent's own lossless form); call it between runs.

        Shape: ``{"version": 1, "history": [<message dict>, ...], "usage": {...}, "system_prompt": str | null}``.
        """
        return self.conversation.state_to_json()

    def compact(self, focus: str | None = None) -> dict[str, Any] | None:
        """Compact the conversation now, between runs (``/compact`` in ``yiemagent chat``).

        The oldest messages are summarised (``yiemagent.context.compaction``), ``keep_recent_tokens``
        kept verbatim, a ``compaction`` event (``reason="manual"``) sent; ``focus``: what the summary
        must keep above all.

        Returns:
            ``{"first_kept", "summarised_messages", "tokens_before", "tokens_after", "summary"}``,
            or None when the conversation is too short to lose anything.

        Raises:
            AgentError: no ``context_window``/``compaction``, a run in progress, or a store.
            LLMError: the summariser failed; the conversation is unchanged.
        """
        return compact_now(self.conversation, self.event_sink, running=self._runs.current_run_id is not None,
                           focus=focus)

    def fork(self, at: int, **agent_kwargs: Any) -> Agent:
        """A new agent (not started) on a copy of the history up to ``history[at]``; see ``Branches.fork``."""
        return cast(Agent, self._branches.fork(at, type(self), agent_kwargs))

    def rewind(self, to: int, **options: Any) -> Answer:
        """Cut the history back to ``history[to]`` (kept), no model call; see ``Branches.rewind``."""
        return self._branches.rewind(to, **options)

    def edit(self, index: int, text: Any, **options: Any) -> Answer:
        """Replace the user message ``history[index]`` and run the model afresh from it; ``Branches.edit``."""
        return self._branches.edit(index, text, **options)

    def regenerate(self, **options: Any) -> Answer:
        """Cut the last answer and ask the model again (``keep_tool_results=``); ``Branches.regenerate``."""
        return self._branches.regenerate(**options)

    @classmethod
    def from_state(cls, state: str, llm_call: LLMCall, **kwargs: Any) -> Agent:
        """A new agent that continues the conversation saved by ``state_to_json``.

        ``kwargs`` are those of ``Agent()``; ``system_prompt`` defaults to the
        saved one. Tools that already ran are in the history and never run again.

        Raises:
            FormatError: ``state`` is not a saved state.
        """
        history, usage, system_prompt = parse_state(state)
        kwargs.setdefault("system_prompt", system_prompt)
        agent = cls(llm_call, **kwargs)
        agent.history = history
        agent.usage = usage
        return agent


def _weak(method: Callable[[], None]) -> Callable[[], None]:
    """``method`` called through a weak reference: a part holding it does not keep the agent alive."""
    ref = weakref.WeakMethod(method)

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()

    return call
