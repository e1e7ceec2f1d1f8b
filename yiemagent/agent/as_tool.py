"""Agents as tools: ``Agent.as_tool(name, description)``, a tool that asks another agent.

``AgentAsTool`` is a part of ``Agent`` (``Agent.as_tool`` delegates to it).
The tool takes ``{"input": str}``, runs that input on
the agent (the *sub-agent*) as one of its own inputs, and returns the
sub-agent's answer text; ``details`` holds ``{"agent", "run_id", "status",
"usage", "answer"}`` (the sub-agent's name, its run id, the run's status, the
run's usage and the whole answer dict). The rules:

* **where it runs**: a started sub-agent serves the input on its own thread,
  in its queue order; one that is not started serves it on a thread made for
  the call (``yiemagent-<name>-as-tool``), as ``stream()`` does. The calling
  worker thread only waits, so the parent and the sub-agent share no thread
  but the one that waits: ``parent.ask()`` before ``start()`` with a sub-agent
  that is not started either works.
* **one call at a time per sub-agent**: calls of the sub-agent (through any
  tool ``as_tool`` made of it) are served one after another (a per-agent lock, waited for in steps of 0.05 s
  that see the abort), never merged: each call gets the answer of its own
  input, also for two calls of one parallel batch. The sub-agent keeps its
  conversation: what earlier calls asked is in its history. Inputs put on
  the sub-agent by other callers are served in between, in queue order; with
  ``steering=True`` on the sub-agent such an input could join a delegated
  run, so give a sub-agent with steering no other callers.
* **no waiting for itself**: a call that would wait for a run it is part of
  (an agent given its own tool, a cycle A -> B -> A, two agents asking each
  other from parallel branches) is refused with an error result naming the
  cycle, instead of waiting for ever: the waits of these calls form a graph
  checked when a call starts and at each 0.05 s step of its waits.
* **abort**: the parent's ``abort_event`` (the one handed to tools) aborts the
  sub-agent's run within 0.05 s (its model request is cut, its tools see its
  own ``abort_event``); an input still queued at the sub-agent is aborted as
  soon as its run starts. ``timeout_seconds`` does the same at a deadline.
  As every ``abort()``, it cuts the requests in flight of the sub-agent's
  ``llm_call`` object: give each agent its own (``openai_chat(...)`` per
  agent), or a sub-agent's timeout also cuts the requests of the agents
  sharing that object.
* **events**: each event of the sub-agent's run reaches the parent's sink as
  a ``SubAgentEvent`` (``yiemagent.loop.events``) carrying the parent's ``run_id``,
  the parent's ``tool_call_id`` and the sub-agent's event unchanged; events
  come in order, between the call's ``tool_execution_start`` and ``_end``.
* **usage**: the result's ``usage`` (``AgentToolResult.usage``) is the
  sub-run's token counts plus ``requests`` (its model calls) and
  ``tool_calls``; the parent's loop adds it to its run's usage (the counts
  only when the parent has usage limits, as it counts its own only then), so
  the parent's usage limits (``yiemagent.context.usage_limits``) see it before its
  next model request. A cost counts when the sub-agent prices its replies (its own
  ``usage_limits`` with ``prices``).
* **approvals reach the top run**: a sub-run that stops ``awaiting_approval``
  (a tool of the sub-agent needs approval) makes the call raise
  ``yiemagent.tools.nested_approvals.AwaitingApproval`` with the sub-run's pending calls
  (each with ``"agent"``, the agent that asks): the parent's run stops
  ``awaiting_approval`` too, those calls in its ``pending_approvals`` (ids
  ``"<parent's call id>/<sub's call id>"``, ``"via"`` the tool names asked
  through), at any depth. ``parent.approve``/``reject``/``decide`` resume the
  parent's run, which calls this tool again with the decisions
  (``nested_decisions()``): they are recorded in the sub-agent's conversation
  and its waiting run resumes (its approved tool runs once, a rejected call's
  reason reaches its model); its answer is the call's result. Decide through
  the top agent: a sub-agent's waiting run ended meanwhile (a new input, a
  restart of a process that kept it in memory) gives an error result, never
  a second run of its input;
* **durable parents**: the result is journaled like any tool result (usage
  included), so a durable parent recovering after a crash never asks the
  sub-agent again for a call whose result was recorded; a call interrupted
  before that is reported to the model as "interrupted, effect unknown" (the
  tool is not ``idempotent``).

Peers: openai-agents ``Agent.as_tool``, smolagents managed agents, Google ADK
``AgentTool``, pydantic-ai delegation (issue 18 point 3).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, cast

from .._internal.checks import check_number, check_str
from ..exceptions import AgentBusyError, AgentClosedError, ApprovalError
from ..loop import events as ev
from ..loop.conversation import Input
from ..tools import AgentTool, AgentToolResult, nested_approvals
from .approvals import AgentLike
from .lifecycle import Lifecycle
from .runs import Runs

__all__ = ["INPUT_SCHEMA", "AgentAsTool"]

logger = logging.getLogger("yiemagent.agent")

_POLL_SECONDS = 0.05
_SETTLE_SECONDS = 1.0  # after an abort: how long the call waits for the sub-run to end (its answer, its usage)

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": (
        "The request for the agent, complete: it sees only this text, not this conversation.")}},
    "required": ["input"],
    "additionalProperties": False,
}
"""The arguments of an agent used as a tool: ``{"input": str}``."""

_graph_lock = threading.Lock()
_active: list[tuple[Any, int]] = []
"""Delegations being served: (sub-agent, ident of the thread that waits for it)."""
_waits: dict[int, Any] = {}
"""Threads waiting in a call of an agent's tool: thread ident -> the agent waited for (its turn or its answer)."""


def _deadlock(target: Any, ident: int) -> list[str] | None:
    """The agents through which thread ``ident``, waiting for ``target``, would wait for itself; else None.

    A wait-for graph: the thread's *ancestry* is the thread and, up the
    delegations in progress, the thread that delegated to the agent it
    works for, and so on. From ``target``, each thread working for an agent
    that waits for another agent is an edge. Reaching an agent that works
    for the ancestry closes a cycle (an agent given its own tool, A -> B ->
    A, or two agents asking each other from parallel branches).
    """
    with _graph_lock:
        active, waits = list(_active), dict(_waits)
    idents, between = [ident], []  # the ancestry, and the delegated agents along it (innermost first)
    while True:
        step = next(((agent, caller) for agent, caller in active
                     if agent not in between and agent.works_for(idents[-1])), None)
        if step is None:
            break
        between.append(step[0])
        idents.append(step[1])
    paths: list[list[Any]] = [[target]]
    seen: list[Any] = [target]
    while paths:
        path = paths.pop(0)
        owner = next((k for k, each in enumerate(idents) if path[-1].works_for(each)), None)
        if owner is not None:  # outermost first: the agent in the ancestry -> ... -> this call -> ... -> it
            return [a.name for a in (path[-1], *reversed(between[:owner]), *path)]
        for waiting, waited in waits.items():
            if waiting != ident and waited not in seen and path[-1].works_for(waiting):
                seen.append(waited)
                paths.append([*path, waited])
    return None


class _SubRun:
    """One delegated input: watches the sub-run's events, forwards them, aborts the run when told."""

    def __init__(self, agent: AgentAsTool, tool_name: str, tool_call_id: str,
                 forward: Callable[[ev.Event], object] | None) -> None:
        self.agent = agent
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id
        self.forward = forward
        self.end: ev.AgentEndEvent | None = None
        self.run_id = ""
        self.tool_calls = 0
        self.cancelled = False
        self.input_id = ""

    def on_event(self, event: ev.Event) -> None:
        """The input's stream listener: called on the sub-run's thread with every event of its run."""
        if self.cancelled:  # a queued input whose call was aborted: end its run as soon as it starts
            self.agent.abort_input(self.input_id)
        if isinstance(event, ev.AgentStartEvent):
            self.run_id = event.run_id
        elif isinstance(event, ev.AgentEndEvent):
            self.end = event
        elif isinstance(event, ev.ToolExecutionEndEvent):
            self.tool_calls += 1
        if self.forward is not None:
            self.forward(ev.SubAgentEvent(tool_call_id=self.tool_call_id, tool_name=self.tool_name,
                                          agent_name=self.agent.name, event=event))

    def usage(self) -> dict[str, Any]:
        """The sub-run's usage, with ``requests`` and ``tool_calls`` (counted here when it did not count them)."""
        if self.end is None:
            return {}
        usage = dict(self.end.usage)
        usage.setdefault("requests", self.end.turns)
        usage.setdefault("tool_calls", self.tool_calls)
        return usage


class AgentAsTool:
    """``Agent.as_tool``: tools that ask one agent, and the rules of their calls (a part of ``Agent``).

    Args:
        agent: the agent asked, used through its public methods only (``name``, ``submit``); held
            strongly (a parent's tool keeps its sub-agent alive).
        lifecycle: its thread and stop state; runs: its run in progress (``yiemagent.agent.runs``).
    """

    def __init__(self, agent: AgentLike, lifecycle: Lifecycle, runs: Runs) -> None:
        self._agent = agent
        self._lifecycle = lifecycle
        self._runs = runs
        self._lock = threading.Lock()  # one delegated input at a time, whichever tool of this agent asks

    @property
    def name(self) -> str:
        """The asked agent's name."""
        return self._agent.name

    def works_for(self, ident: int) -> bool:
        """True when thread ``ident`` works for the asked agent (its thread, a worker, its run's thread)."""
        return self._runs.works_for(ident)

    def abort_input(self, input_id: str) -> bool:
        """Abort the asked agent's run if it serves ``input_id``."""
        return self._runs.abort_input(input_id)

    def tool(self, name: str, description: str, *, timeout_seconds: float | None = None) -> AgentTool:
        """This agent as a tool another agent can call (see ``yiemagent.agent.as_tool`` for the rules).

        Args:
            name: the tool's name (``^[a-zA-Z0-9_-]{1,64}$``).
            description: what the agent does and when to ask it; the model reads it.
            timeout_seconds: a call that has no answer by then aborts the
                sub-agent's run and returns an error result; None: no deadline
                (the parent's abort still ends it).

        Returns:
            An ``AgentTool`` taking ``{"input": str}``; its result is the
            sub-agent's answer text, ``is_error`` when the sub-run ended with
            status ``error`` or ``aborted`` (or did not run: a cycle, the
            sub-agent shut down, the deadline), ``details`` ``{"agent",
            "run_id", "status", "usage", "answer"}``, ``usage`` the sub-run's.

        Raises:
            ConfigError: a bad ``name``, ``description`` or ``timeout_seconds``.

        Example:
            >>> from yiemagent import Agent
            >>> from yiemagent.testing import ScriptedLLM, text_reply
            >>> researcher = Agent(ScriptedLLM([text_reply("Paris")]), name="researcher")
            >>> tool = researcher.as_tool("ask_researcher", "Looks facts up.")
            >>> tool.name, sorted(tool.input_schema["properties"])
            ('ask_researcher', ['input'])
        """
        check_str("description", description)
        check_number("timeout_seconds", timeout_seconds, optional=True)

        def execute(tool_call_id: str, arguments: dict[str, Any], abort_event: threading.Event) -> AgentToolResult:
            return self._delegate(name, tool_call_id, str(arguments["input"]), abort_event, timeout_seconds,
                                  nested_approvals.nested_calls())  # [] unless the call resumes after a decision

        return AgentTool(name=name, description=description, input_schema=INPUT_SCHEMA, execute=execute,
                         annotations={"title": f"Ask agent {self.name}", "readOnlyHint": False,
                                      "openWorldHint": True}, may_await_approval=True)

    def _delegate(self, tool_name: str, tool_call_id: str, text: str, abort_event: threading.Event,
                  timeout_seconds: float | None, decided: list[dict[str, Any]]) -> AgentToolResult:
        """One call of the tool: wait for this agent's turn, serve ``text``, return its answer as a result.

        ``decided``: the calls it waited on, decided (``nested_calls()``, a resume): its waiting run goes on.

        Raises:
            AwaitingApproval: the run stopped for a person (``yiemagent.tools.nested_approvals``).
        """
        if self._lifecycle.closed:
            return AgentToolResult.error(f"Agent {self.name!r} was not asked: {self._lifecycle.closed_reason}.")
        ident = threading.get_ident()
        refused = self._would_deadlock(tool_name, ident)
        if refused is not None:
            return refused
        deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
        lock = self._lock
        with _graph_lock:
            _waits[ident] = self
        try:
            while not lock.acquire(timeout=_POLL_SECONDS):  # one delegated input at a time, abort seen meanwhile
                stop = self._stopped(abort_event, deadline, timeout_seconds) or self._would_deadlock(tool_name, ident)
                if stop is not None:
                    return stop
            entry = (self, ident)
            with _graph_lock:
                _active.append(entry)
            try:
                served = self._runs.wrap(text) if not decided else self._resumed(decided)
                if isinstance(served, AgentToolResult):
                    return served
                return self._serve_one(tool_name, tool_call_id, served, abort_event, deadline, timeout_seconds)
            finally:
                with _graph_lock:
                    _active.remove(entry)
                lock.release()
        finally:
            with _graph_lock:
                _waits.pop(ident, None)

    def _would_deadlock(self, tool_name: str, ident: int) -> AgentToolResult | None:
        """An error result when thread ``ident`` waiting for this agent closes a cycle of waits (``_deadlock``)."""
        cycle = _deadlock(self, ident)
        if cycle is None:
            return None
        path = " -> ".join(cycle)
        logger.warning("tool %s refused: agent %s would wait for itself (%s)", tool_name, self.name, path)
        return AgentToolResult.error(
            f"Agent {self.name!r} was not asked: it is already working on the request this call is part of "
            f"({path}); asking it would wait for itself. Answer without it.")

    def _stopped(self, abort_event: threading.Event, deadline: float | None,
                 timeout_seconds: float | None) -> AgentToolResult | None:
        """The result of a call stopped by the parent's abort or the deadline, or None."""
        if abort_event.is_set():
            return AgentToolResult.error(f"Agent {self.name!r} was not asked: the run was aborted.",
                                         details={"aborted": True})
        if deadline is not None and time.monotonic() >= deadline:
            return AgentToolResult.error(f"Agent {self.name!r} gave no answer within {timeout_seconds}s.")
        return None

    def _resumed(self, decided: list[dict[str, Any]]) -> Input | AgentToolResult:
        """Record ``decided`` in this agent's conversation; its waiting input to serve again, or an error result.

        Only calls still waiting in the run that raised them (its ``agent_input_id``) are decided: ids
        repeat across runs, so a decision never reaches another run of this agent.

        Raises:
            AwaitingApproval: calls of its waiting run are still undecided (not known to the caller).
        """
        conversation = self._agent.conversation
        asked: dict[tuple[Any, Any], bool | str] = {
            (c.get("tool_call_id"), c.get("agent_input_id")): c["decision"] for c in decided if "decision" in c}
        try:
            mine = {str(c["tool_call_id"]): asked[key] for c in conversation.pending_approvals()
                    if (key := (c.get("tool_call_id"), c.get("input_id"))) in asked}
            left, resume = conversation.decide(mine) if mine else ([], None)
        except ApprovalError as exc:  # decided meanwhile by someone else (``sub.decide``): that run answered them
            left, resume = [], None
            logger.warning("agent %s: the decisions were not recorded: %s", self.name, exc)
        if left:
            raise nested_approvals.AwaitingApproval([self._asking(c) for c in left])
        if resume is None:
            return AgentToolResult.error(
                f"Agent {self.name!r} was not asked again: it no longer waits for these decisions (its waiting run "
                "ended: a new input, a decision made on it directly, or a restart).",
                details={"agent": self.name, "status": "error",
                         "lost_approvals": sorted(str(c.get("tool_call_id")) for c in decided)})
        logger.info("agent %s: every waiting call is decided; resuming its run", self.name)
        return Input(message=resume.message, id=resume.id)

    def _asking(self, call: dict[str, Any]) -> dict[str, Any]:
        """A pending call of this agent as its callers see it: with ``agent`` and ``agent_input_id`` (its run's)."""
        return dict(call, agent=call.get("agent", self.name), agent_input_id=call.get("input_id"))

    def _serve_one(self, tool_name: str, tool_call_id: str, entry: Input, abort_event: threading.Event,
                   deadline: float | None, timeout_seconds: float | None) -> AgentToolResult:
        run = _SubRun(self, tool_name, tool_call_id, ev.reporter())
        run.input_id = entry.id
        entry.listener = run.on_event
        try:
            future = self._send(entry, abort_event, deadline, timeout_seconds)
        except AgentClosedError as exc:
            return AgentToolResult.error(f"Agent {self.name!r} was not asked: {exc}.")
        if isinstance(future, AgentToolResult):
            return future
        try:
            while True:
                try:
                    answer = future.result(timeout=_POLL_SECONDS)
                    break
                except concurrent.futures.TimeoutError:
                    pass
                except Exception as exc:  # AgentClosedError: shut down before serving it; a store that kept failing
                    return AgentToolResult.error(f"Agent {self.name!r} gave no answer: {type(exc).__name__}: {exc}",
                                                 details={"agent": self.name, "error": str(exc)})
                stop = self._stopped(abort_event, deadline, timeout_seconds) or (
                    None if run.run_id else self._would_deadlock(tool_name, threading.get_ident()))  # still queued
                if stop is not None:
                    run.cancelled = True
                    self._runs.abort_input(entry.id)  # the run serving it, if it started; else at its first event
                    try:
                        future.result(timeout=_SETTLE_SECONDS)
                    except concurrent.futures.TimeoutError:
                        pass
                    stop.usage = run.usage() or None
                    stop.details = {"agent": self.name, "run_id": run.run_id, "status": "aborted",
                                    "usage": run.usage(), "aborted": True}
                    return stop
        finally:
            run.forward = None  # late events of an aborted run are not the parent's news
        status = answer.get("status")
        if status == "awaiting_approval":  # a person decides first, through the top run (see the module's rules)
            raise nested_approvals.AwaitingApproval([self._asking(c) for c in answer.get("pending_approvals") or []
                                              if isinstance(c, dict)])
        content = answer.get("content")
        body = content if isinstance(content, str) else ""
        if status not in ("completed", "terminated", "error", "aborted"):
            body = f"{body}\n[agent {self.name!r} stopped early: status {status}]".lstrip("\n")
        usage = run.usage()
        return AgentToolResult(body, is_error=status in ("error", "aborted"), usage=usage or None,
                               details={"agent": self.name, "run_id": run.run_id, "status": status,
                                        "usage": usage, "answer": answer})

    def _send(self, entry: Input, abort_event: threading.Event, deadline: float | None,
              timeout_seconds: float | None) -> concurrent.futures.Future[dict[str, Any]] | AgentToolResult:
        """Hand ``entry`` to this agent: its queue when started, else a thread of its own. Its future.

        Raises:
            AgentClosedError: the agent was shut down.
        """
        if self._lifecycle.thread is None:
            entry.future = concurrent.futures.Future()
            threading.Thread(target=self._runs.serve_quietly, args=(entry, self._agent),
                             name=f"yiemagent-{self.name}-as-tool", daemon=True).start()
            return entry.future
        while True:  # a full input queue is waited for in steps that see the abort and the deadline
            try:
                future = self._agent.submit(entry, timeout_seconds=_POLL_SECONDS)
                return cast("concurrent.futures.Future[dict[str, Any]]", future)
            except AgentBusyError:
                stop = self._stopped(abort_event, deadline, timeout_seconds)
                if stop is not None:
                    return stop
