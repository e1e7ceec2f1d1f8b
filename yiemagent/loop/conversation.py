"""Conversation: one conversation's history, usage and tools, and the run of one input to its answer.

It sits between the loop and the thread: ``run_turns`` (``yiemagent.loop``)
runs one input and keeps no state; ``Agent`` (``yiemagent.agent``) owns the
threads, queues, futures, lifecycle and abort, and drives a conversation
through the contract below only. A conversation has no thread and no queue.

Two implementations keep the contract: ``Conversation`` (here: the
conversation lives in this process) and
``yiemagent.store.durable.DurableConversation`` (it lives in a
``ConversationStore``: inbox, lease, journal, commit).

The contract of a conversation:

* ``history`` (``list[Message]``, no system prompt) and ``usage`` (token
  counts summed over every run, ``add_usage``) are the conversation so far;
  ``config`` (``LoopConfig``) holds the model, the tool registry, hooks and
  limits every run uses (it may be replaced between runs).
* An input is an ``Input``: a ``UserMessage`` and an id unique within the
  conversation (``Agent`` uses 12 hex characters of a ``uuid4``), plus, for
  the driver's own use, the caller's original item, a future and a stream
  listener (the conversation hands them back to the host, never reads them).
* ``accept(entry)``: an input was put on a queue and will be served later.
  Here: nothing happens. Durable: it is added to the inbox at once, so a crash
  cannot lose it. May raise ``StoreError``.
* ``serve(entry, host, deliver=...)``: run ``entry`` to its answer; hand the
  answer to ``host.deliver``; return ``entry``'s answer dict. ``deliver``:
  True when the input came off a queue (an answer without a future goes to
  the output queue), False when the caller takes the returned answer itself
  (``ask`` before ``start``). Never raises for a failure of the model, a tool,
  a hook or the event sink (``status: "error"``). Here, inputs from
  ``take_steering()`` join the run and get its answer in the same ``deliver``.
  Durable: it may first serve older inputs of the inbox, each as its own run;
  steering reads the inbox (steered inputs were ``accept``-ed), and a steered
  input's answer is committed with the run and delivered when the driver
  ``serve``-s that input. May raise ``StoreError``.
* ``recover(host)`` (at thread start: interrupted runs and inputs left
  pending, while ``host.stop_mode`` is None) and ``drain(host)`` (for
  workers): serve the inputs left pending; return their answers. Here: ``[]``.
* ``state_to_json()`` / ``load_state(text)``: the history and usage as
  yiemagent's own lossless JSON, and back (``FormatError`` for anything that
  is not such a state). The saved ``system_prompt`` is for
  ``Agent.from_state``; ``load_state`` keeps ``config``'s.
* ``openai_messages()``: the history as a valid OpenAI request would carry it.
* ``answer(result)`` / ``error_answer(input_ids, error)``: the answer dict of a
  run (see ``yiemagent.agent`` for its keys).
* ``durable``: True when the inputs survive this process (kept in a store).

What a conversation asks of its driver (``RunHost``; ``Agent`` is the one in
this package), all called on the thread that called ``serve`` unless said:

* ``abort_event``: handed to the loop (tools see it); ``abort()`` sets it and
  cuts requests in flight (a durable conversation calls it from its lease
  heartbeat thread when the lease is lost); ``stop_mode``: how the driver is
  shutting down (``"now"`` makes a durable ``serve`` stop waiting for the
  lease), or None;
* ``running(run_id, entry, deliver)``: a context manager around each run that
  yields a ``RunScope`` (the driver's per-run bookkeeping: one run at a time,
  the abort event cleared). The conversation fills ``scope.result`` (or
  ``scope.error``) before the block ends, so the driver learns how the run
  ended (``Agent`` re-raises a Ctrl-C that ended an ``ask`` run);
* ``emit(event)``: the run's events (also from the loop's worker threads'
  updates, emitted on this thread); ``listening()``: whether ``emit`` hands
  them to anyone now (else the loop makes none);
* ``take_steering()``: inputs that arrived during a run (called after a tool
  batch, with ``steering``);
* ``deliver(answer, entries, to_output)``: resolve the futures of
  ``entries``; with ``to_output``, put ``answer`` on the output queue once for
  those without one (or once when ``entries`` is empty).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import dataclasses
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..context.compaction import compacted_view
from ..context.history_index import HistoryIndex
from ..exceptions import FormatError, InvalidRequestError, MCPError, SimulatedCrash
from ..messages import Message, UserMessage, from_openai, message_to_dict, to_openai
from ..messages.formatting import OpenAIFormatter
from ..messages.guard import RequestGuard
from ..messages.history import History
from ..output.typed_output import OutputSpec
from ..output.typed_run import answer_output
from ..tools.approvals import MemoryJournal, Parking
from . import LoopConfig, RunResult, add_usage, run_turns
from . import events as ev
from .branching import Branch, apply_branch
from .journal import Journal
from .state import parse_state, saved_state_text

__all__ = ["Conversation", "Input", "RunHost", "RunScope", "StopMode", "ToolServers", "describe", "parse_state",
           "user_message"]

logger = logging.getLogger("yiemagent.loop.conversation")

StopMode = Literal["drain", "after_turn", "now"]


@dataclass
class Input:
    """An input with its id and, for ``submit``, the future to resolve."""

    message: UserMessage
    id: str
    original: Any = None
    """What the caller put on the queue (returned as is by ``shutdown()``)."""
    future: concurrent.futures.Future[dict[str, Any]] | None = field(default=None, repr=False)
    listener: Callable[[Any], None] | None = field(default=None, repr=False)
    """``Agent.stream``: gets every event of the run that serves this input, on the run's thread."""
    output: OutputSpec | None = field(default=None, repr=False)
    """The typed answer asked for this input (``ask(..., output_type=T)``); None: ``config.output``."""
    branch: Branch | None = field(default=None, repr=False)
    """A branching operation (``yiemagent.loop.branching``): the history is cut before the run; None: none."""


@dataclass
class RunScope:
    """One run, as its host sees it (yielded by ``RunHost.running``)."""

    run_id: str
    entry: Input
    result: RunResult | None = None
    """How the run ended (None when it did not start: an unreachable required server, an error of ours)."""
    error: BaseException | None = None
    """What ended the run when it is not in ``result`` (a bug of ours or of a callback)."""


class RunHost(Protocol):
    """What a conversation needs from whoever drives it (``Agent``)."""

    abort_event: threading.Event

    @property
    def stop_mode(self) -> StopMode | None:
        """How the driver is shutting down, or None while it serves."""
        ...

    def abort(self) -> None:
        """End the current run as soon as possible (also cuts requests in flight)."""
        ...

    def running(self, run_id: str, entry: Input, deliver: bool) -> contextlib.AbstractContextManager[RunScope]:
        """Around one run: one run at a time, the abort event cleared at its start."""
        ...

    def emit(self, event: ev.Event) -> None:
        """The sink of a run's events."""
        ...

    def listening(self) -> bool:
        """Whether ``emit`` hands events to anyone now."""
        ...

    def take_steering(self) -> list[Input]:
        """Inputs queued during the run, to join it after a tool batch (``steering``)."""
        ...

    def deliver(self, answer: dict[str, Any], entries: list[Input], to_output: bool) -> None:
        """Resolve the futures of ``entries``; ``to_output``: the output queue once for those without one.

        With ``entries`` empty and ``to_output``, ``answer`` goes to the output queue.
        """
        ...


class ToolServers(Protocol):
    """What a conversation asks of its MCP servers (``yiemagent.mcp.MCPToolset`` is one)."""

    def refresh(self) -> object:
        """List the servers' tools again where needed."""
        ...

    def unavailable(self) -> list[dict[str, Any]]:
        """``[{"server": name, "error": message}]`` for each server not reachable at its last listing."""
        ...


def user_message(item: Any) -> UserMessage:
    """``item`` (a str, ``UserMessage`` or OpenAI user-message dict) as a ``UserMessage``.

    Raises:
        FormatError: anything else.
    """
    if isinstance(item, UserMessage):
        return item
    if isinstance(item, str):
        return UserMessage(item)
    if isinstance(item, dict):
        message = from_openai(item)
        if isinstance(message, UserMessage):
            return message
    raise FormatError(
        f"an agent input must be a str, a UserMessage or an OpenAI user-message dict, not {item!r:.100}", raw=item
    )


def describe(error: BaseException | None) -> str:
    """``str(error)``, or its type name when that is empty (``SystemExit()``, ``KeyboardInterrupt()``)."""
    if error is None:
        return "unknown error"
    text = str(error)
    return f"{type(error).__name__}: {text}" if not isinstance(error, Exception) or not text else text


class Conversation:
    """A conversation kept in this process (see the module docstring for the contract).

    Args:
        config: model, tools, hooks and limits of every run. With
            ``steering``, the conversation keeps a copy whose
            ``poll_steering`` is its own (``config`` itself is not changed).
        servers: the MCP servers behind some of the tools, or None.
        mcp_required: answer an error, without calling the model, while a
            server in ``servers`` cannot be reached.
        steering: inputs queued during a run join it after a tool batch.
    """

    durable = False
    """False: the conversation and its inputs live in this process only."""

    def __init__(self, config: LoopConfig, *, servers: ToolServers | None = None, mcp_required: bool = False,
                 steering: bool = False) -> None:
        self._steering = steering
        self.config = config
        self.servers = servers
        self.mcp_required = mcp_required
        self.history = History()
        self.index = HistoryIndex()
        """What runs need of the history, read once per message (``yiemagent.context.history_index``)."""
        self.usage: dict[str, Any] = {}
        """Token counts summed over every run (from replies that report ``usage``)."""
        self._host: RunHost | None = None  # of the run in progress (steering polls go to it)
        self._steered: list[Input] = []  # inputs steered into the run in progress
        self.parking = Parking()
        """The run waiting for approval, without a store (``yiemagent.tools.approvals``)."""
        self._memory: MemoryJournal | None = None  # of the run in progress without a store (steering replays)
        self._polls = 0

    @property
    def config(self) -> LoopConfig:
        """Model, tools, hooks and limits of every run (may be replaced between runs)."""
        return self._config

    @config.setter
    def config(self, config: LoopConfig) -> None:
        self._config = dataclasses.replace(config, poll_steering=self._poll_steering) if self._steering else config

    @property
    def history(self) -> list[Message]:
        """The conversation (no system prompt): a ``History`` (``yiemagent.messages.history``); a list set is copied."""
        return self._history

    @history.setter
    def history(self, messages: list[Message]) -> None:
        self._history = messages if type(messages) is History else History(messages)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {len(self.history)} messages>"

    # ------------------------------------------------------------------ serving

    def accept(self, entry: Input) -> int | None:
        """An input was queued; it lives in the queue until served (nothing to do; None: no inbox seq)."""
        return None

    def serve(self, entry: Input, host: RunHost, *, deliver: bool) -> dict[str, Any]:
        """Run ``entry`` to its answer; deliver it to ``entry`` and the inputs steered in; return it."""
        with self.parking.serving:  # a run waiting for approval is finished once (yiemagent.tools.approvals)
            waiting = self.parking.pending() if entry.branch is not None else []
            if waiting and entry.branch is not None:  # a branching operation never decides a waiting call
                names = ", ".join(sorted({str(c.get("name")) for c in waiting}))
                refused = (f"a run waits for a decision about {len(waiting)} tool call(s) ({names}): decide first; "
                           "nothing was changed")
                answer = self._finish({"role": "assistant", "content": f"Error: {refused}", "status": "conflict",
                                       "error": refused, "finish_reason": None, "branch": entry.branch.to_dict()},
                                      [entry.id])
                host.deliver(answer, [entry], deliver)
                return answer
            superseded = self.parking.supersede(entry.id)  # a new input: the waiting run ends first
            if superseded is not None:
                self.parking.keep(superseded.id, self.run(superseded, host, deliver=False)[0])
            done = self.parking.answered(entry.id)  # a resume of a run that ended meanwhile
            answer, steered = (done, []) if done is not None else self.run(entry, host, deliver=deliver)
        host.deliver(answer, [entry, *steered], deliver)
        return answer

    def recover(self, host: RunHost) -> list[dict[str, Any]]:
        """Serve what was left pending by an earlier process: nothing here."""
        return []

    def drain(self, host: RunHost) -> list[dict[str, Any]]:
        """Serve every pending input: nothing is pending outside a queue here."""
        return []

    def run(self, entry: Input, host: RunHost, *, deliver: bool,
            journal: Journal | None = None) -> tuple[dict[str, Any], list[Input]]:
        """One run answering ``entry`` (and inputs steered into it), delivered nowhere.

        Returns the answer and the steered inputs it also answers. Never raises
        for a failure of the model, tools, hooks or sink.
        """
        run_id = uuid.uuid4().hex[:12]
        with host.running(run_id, entry, deliver) as scope:
            self._host, self._steered, self._polls = host, [], 0
            try:
                unreachable = self._required_servers_unreachable()
                done = None if unreachable is not None or entry.branch is None else self._branch(entry, entry.branch)
                if unreachable is not None:
                    answer = self.error_answer([entry.id], unreachable)
                elif done is not None:  # a rewind, or an operation refused: no model call
                    answer = done
                else:
                    start, memory = len(self.history), self._memory_journal(entry) if journal is None else None
                    self._memory = memory
                    config = self.config if entry.output is None else dataclasses.replace(self.config,
                                                                                          output=entry.output)
                    inputs = [] if entry.branch is not None and entry.branch.resume else [entry.message]
                    result = run_turns(self.history, inputs, config, host.abort_event, host.emit,
                                       run_id=run_id, input_ids=[entry.id], journal=journal or memory,
                                       index=self.index, listening=getattr(host, "listening", None))
                    scope.result = result
                    waiting = result.status == "awaiting_approval"
                    if waiting:  # replayed when the run resumes: not in the history, not counted yet
                        del self.history[start:]
                        self.index.rollback(self.history)
                    else:
                        add_usage(self.usage, result.usage)
                    if memory is not None:
                        self.parking.after_run(entry, memory, waiting)
                    self._memory = None  # nothing of a finished run is kept but its messages
                    answer = self.answer(result)
                    if entry.branch is not None:
                        answer["branch"] = entry.branch.to_dict()
            except SimulatedCrash:
                raise
            except BaseException as exc:  # run_turns does not raise; belt and braces
                scope.error = exc
                if not isinstance(exc, KeyboardInterrupt):
                    logger.exception("run failed")
                answer = self.error_answer([entry.id, *(e.id for e in self._steered)], exc)
            finally:
                steered, self._host, self._steered = self._steered, None, []
        return answer, steered

    def _branch(self, entry: Input, branch: Branch) -> dict[str, Any] | None:
        """Cut the history for ``branch``; the answer of a rewind or of a refused operation, else None."""
        refused = apply_branch(self.history, branch, getattr(self, "version", None))
        if refused is None and branch.op != "rewind":
            return None
        answer: dict[str, Any] = {"role": "assistant", "content": "", "status": "completed", "finish_reason": None}
        if refused is not None:
            answer.update(content=f"Error: {refused}", status="conflict", error=refused)
        answer["branch"] = branch.to_dict()
        return self._finish(answer, [entry.id])

    def _memory_journal(self, entry: Input) -> MemoryJournal | None:
        """The in-memory journal a run may stop and resume by (approvals), or None when none can wait."""
        waits = self.parking.parked or self.config.approval_policy or any(
            t.needs_approval or t.may_await_approval for t in self.config.tools)  # as_tool: a sub-agent may wait
        return self.parking.journal_for(entry.id) if waits else None

    def pending_approvals(self) -> list[dict[str, Any]]:
        """The calls waiting for approval ``[{"tool_call_id", "name", "arguments", "input_id"}]`` (``approvals``)."""
        return self.parking.pending()

    def decide(self, decisions: dict[str, bool | str]) -> tuple[list[dict[str, Any]], Input | None]:
        """Record decisions; return the calls still waiting and, once none is, the input to serve again.

        Raises:
            ApprovalError: a call not waiting for approval, already decided, or a malformed decision.
        """
        return self.parking.decide(decisions)

    def _poll_steering(self) -> list[tuple[UserMessage, str]]:
        """The loop's ``poll_steering``: what the host took off its queue, joined to this run."""
        if self._host is None:
            return []
        self._polls += 1
        replayed = None if self._memory is None else self._memory.recorded.get(f"steer/{self._polls}")
        if replayed is not None:  # a run resumed after approval takes what it took the first time
            return list(replayed)
        taken = self._host.take_steering()
        self._steered += taken
        pairs = [(each.message, each.id) for each in taken]
        return pairs if self._memory is None else list(self._memory.put(f"steer/{self._polls}", pairs))

    def _required_servers_unreachable(self) -> MCPError | None:
        """With ``mcp_required``: list the servers now; the error to answer with if one cannot be reached."""
        if not self.mcp_required or self.servers is None:
            return None
        self.servers.refresh()
        missing = self.servers.unavailable()
        if not missing:
            return None
        names = ", ".join(item["server"] for item in missing)
        return MCPError(f"mcp_required: cannot reach MCP server {names}: {missing[0]['error']}",
                        server=missing[0]["server"])

    # ------------------------------------------------------------------ answers

    def answer(self, result: RunResult) -> dict[str, Any]:
        """The answer dict of a run (the keys are listed in ``yiemagent.agent``).

        An OpenAI assistant message plus ``status``, ``finish_reason``,
        ``model`` (the reply's, when known), ``input_ids``, ``error`` (on failure) and ``mcp_unavailable`` (while a
        server is missing).
        """
        answer = to_openai(result.answer)
        answer["status"] = result.status
        answer["finish_reason"] = result.answer.finish_reason
        if result.answer.model:  # the model that answered (e.g. behind fallback_llm)
            answer["model"] = result.answer.model
        if result.status == "error" and result.error is not None:
            answer["error"] = describe(result.error)
        if result.usage_limit is not None:
            answer["usage_limit"] = dict(result.usage_limit)
        if result.guardrail is not None:  # status guardrail_tripped: which guardrail, why
            answer["guardrail"] = dict(result.guardrail)
        if result.request_tokens is not None:  # with compaction / context_window: the last request's size
            answer["request_tokens"] = result.request_tokens
        answer_output(answer, result.output)  # a typed answer: ``output``, or ``error`` when output_invalid
        if result.pending_approvals is not None:
            answer["pending_approvals"] = [dict(c, input_id=result.input_ids[0]) for c in result.pending_approvals]
        return self._finish(answer, result.input_ids)

    def error_answer(self, input_ids: list[str], error: BaseException | None) -> dict[str, Any]:
        """The answer of inputs no run answered: ``status: "error"`` and ``error`` (a message)."""
        answer = {"role": "assistant", "content": f"Error: {describe(error)}", "status": "error",
                  "error": describe(error)}
        return self._finish(answer, input_ids)

    def _finish(self, answer: dict[str, Any], input_ids: list[str]) -> dict[str, Any]:
        answer["input_ids"] = list(input_ids)
        unavailable = self.servers.unavailable() if self.servers is not None else []
        if unavailable:
            answer["mcp_unavailable"] = unavailable
        return answer

    # ------------------------------------------------------------------ state

    def openai_messages(self) -> list[dict[str, Any]]:
        """The conversation in OpenAI chat format, system prompt first; fresh dicts.

        Made valid by the request guard (``yiemagent.messages.guard``), as every request
        is; messages of failed runs (``excluded``) are left out, as they are
        from every request (they stay in ``history``); after a compaction, the
        summary stands for the messages it replaced (``yiemagent.context.compaction``).
        """
        formatter = self.config.format_messages
        history = compacted_view(self.history)
        if isinstance(formatter, OpenAIFormatter):  # same options, fresh dicts the caller may change
            messages = OpenAIFormatter(tool_images=formatter.tool_images, send_reasoning=formatter.send_reasoning,
                                       send_provider_fields=formatter.send_provider_fields)(history)
        else:
            messages = copy.deepcopy(formatter(history))
        if self.config.system_prompt:
            messages.insert(0, {"role": "system", "content": self.config.system_prompt})
        try:
            return RequestGuard()(messages)[0] if messages else messages  # valid to send, as every request is
        except InvalidRequestError:  # nothing valid is left (only orphaned tool results)
            return []

    def state_to_json(self) -> str:
        """The conversation and usage as JSON text (yiemagent's own lossless form).

        Shape: ``{"version": 1, "history": [<message dict>, ...], "usage": {...},
        "system_prompt": str | null}``; tool-result ``details`` keep JSON values
        (anything else becomes ``{"repr": "..."}``). Call it between runs.
        """
        return saved_state_text({
            "version": 1,
            "history": [message_to_dict(m) for m in list(self.history)],
            "usage": dict(self.usage),
            "system_prompt": self.config.system_prompt,
        })

    def load_state(self, state: str | None) -> None:
        """Replace the history and usage with those of ``state_to_json()`` text (None: empty).

        Raises:
            FormatError: ``state`` is not a saved state.
        """
        self.parking.parked = None  # a run waiting for approval belongs to the history replaced
        if state is None:
            self.history, self.usage = [], {}
        else:
            self.history, self.usage, _ = parse_state(state)
