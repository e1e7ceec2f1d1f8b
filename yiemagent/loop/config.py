"""What a run of the loop is given and what it gives back: ``LoopConfig``, ``RunResult``, ``add_usage``.

Split out of ``yiemagent.loop`` (which re-exports them), so the two halves of
a run (``model_turn``, ``tool_batch``) can name them without importing the loop.
"""

from __future__ import annotations

import concurrent.futures
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .._internal.checks import check_int, one_of
from ..context.compaction import Compaction
from ..context.usage_limits import UsageGuard, UsageLimits
from ..formats.llm import accepts_on_delta
from ..messages import AssistantMessage, Message, UserMessage
from ..messages.formatting import OpenAIFormatter
from ..messages.guard import RequestGuard
from ..output.typed_output import OutputSpec
from ..output.typed_run import OutputOutcome
from ..tools import ToolRegistry
from ..tools.guardrails import Guardrail
from ..tools.hooks import AfterToolCall, BeforeToolCall

__all__ = ["LLMCall", "LoopConfig", "RunMeter", "RunResult", "Status", "Steering", "add_usage"]

LLMCall = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]
Status = Literal["completed", "truncated", "terminated", "max_turns", "repeated_call", "usage_limit", "aborted",
                 "error", "output_invalid", "awaiting_approval", "guardrail_tripped"]
Steering = Callable[[], "list[tuple[UserMessage, str]]"]



class RunMeter(Protocol):
    """What the loop tells ``LoopConfig.spend`` (``yiemagent.loop.spend.RunSpend`` is one)."""

    def open(self, usage: dict[str, Any], guard: UsageGuard) -> None:
        """A run starts: its ``usage`` (changed in place) and its limits."""

    def close(self) -> None:
        """The run ended."""


@dataclass
class LoopConfig:
    """Everything a run needs besides the history."""

    llm_call: LLMCall
    """``llm_call(messages, tools) -> reply``: OpenAI chat messages and function tools in, a reply out."""
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    system_prompt: str | None = None
    max_turns: int = 10
    """Model calls per run, at most."""
    final_turn_without_tools: bool = True
    """Send the last allowed turn without tools so the model must answer in text."""
    max_repeated_calls: int | None = 3
    """The same tool with the same arguments this many times in a row is refused and ends the run; None: no limit."""
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    prepare_context: Callable[[list[Message]], list[Message]] | None = None
    """``prepare_context(history) -> history`` (e.g. trim); default: identity."""
    format_messages: Callable[[list[Message]], list[dict[str, Any]]] = field(default_factory=OpenAIFormatter)
    """``format_messages(history) -> [OpenAI message dict]``; the system prompt is put first by the loop."""
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    """Parallel: a batch runs at once (a batch holding a ``sequential`` tool runs one by one)."""
    max_parallel_tools: int = 8
    max_result_chars: int | None = 100_000
    """Characters of one tool result the model sees; longer ones are cut with a note (``cap_result``)."""
    before_model_call: Callable[[], object] | None = None
    """Called before each model call (MCP tool refresh); may raise, reported as an error event."""
    poll_steering: Steering | None = None
    """Returns ``[(message, input_id)]`` that arrived during the run; called after each tool batch."""
    executor: concurrent.futures.Executor | None = None
    """Worker threads for model calls and tools; None makes a pool per run."""
    inline: bool = False
    """Call ``llm_call`` and every tool on the loop's own thread: no hand-off to a worker (the fastest
    loop), but an abort is seen only when the call returns. For models and tools that return at once
    (scripted models, pure functions); one tool alone: ``AgentTool(inline=True)``."""
    _streaming: tuple[Any, bool, bool] | None = field(default=None, init=False, repr=False, compare=False)
    """Cache: (llm_call, whether it takes ``on_delta``, ``abort_event``): the signature is read once per callable."""

    def streams(self) -> bool:
        """True if ``llm_call`` takes ``on_delta`` (see ``yiemagent.formats.llm``); read once per callable."""
        cached = self._streaming
        if cached is None or cached[0] is not self.llm_call:
            cached = (self.llm_call, accepts_on_delta(self.llm_call), accepts_on_delta(self.llm_call, "abort_event"))
            self._streaming = cached
        return cached[1]

    def takes_abort_event(self) -> bool:
        """True if ``llm_call`` takes ``abort_event`` (see ``yiemagent.formats.llm.accepts_on_delta``)."""
        self.streams()
        return self._streaming[2] if self._streaming is not None else False
    max_tool_calls_per_turn: int | None = 16
    """Calls of one reply that run, at most; the rest get an error result. None: no limit."""
    request_guard: Callable[[list[dict[str, Any]], list[dict[str, Any]]],
                            tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]] = field(
        default_factory=RequestGuard)
    """``guard(messages, tools) -> (messages, tools, repairs)`` run on every request before ``llm_call``."""
    usage_limits: UsageLimits | None = None
    """Limits on each run (``yiemagent.context.usage_limits``); None: none."""
    conversation_usage_limits: UsageLimits | None = None
    """Limits on the conversation: the history's replies and tool results plus the run's; None: none."""
    output: OutputSpec | None = None
    """The typed final answer every run must give (``yiemagent.output.typed_output``); None: a text answer."""
    approval_policy: Callable[[Any], bool] | None = None
    """``policy(tool) -> bool``: calls of tools it returns True for wait for approval
    (``yiemagent.tools.approvals``)."""
    compaction: Compaction | None = None
    """Token budget and compaction of long conversations (``yiemagent.context.compaction``); None: requests
    not measured."""
    spend: RunMeter | None = None
    """Opened with each run's live ``usage`` and limits, closed when it ends: model calls made on the run's
    behalf outside its turns (MCP sampling) count there (``yiemagent.loop.spend.RunSpend``); None: none."""
    input_guardrails: tuple[Guardrail, ...] = ()
    """Checks of the run's user text (``yiemagent.tools.guardrails``; stage ``input``)."""
    output_guardrails: tuple[Guardrail, ...] = ()
    """Checks of each answer before it is accepted (stage ``output``)."""
    tool_guardrails: tuple[Guardrail, ...] = ()
    """Checks of tool calls' arguments and results (stages ``tool_input``, ``tool_output``)."""

    def __post_init__(self) -> None:
        """The bounds and options ``Agent()`` checks, checked here too for ``run_turns`` callers (fail closed)."""
        check_int("max_turns", self.max_turns, minimum=1)
        for name in ("max_repeated_calls", "max_result_chars", "max_tool_calls_per_turn"):
            check_int(name, getattr(self, name), minimum=1, optional=True)
        check_int("max_parallel_tools", self.max_parallel_tools, minimum=1)
        one_of("tool_execution", self.tool_execution, ("parallel", "sequential"))


@dataclass
class RunResult:
    """How a run ended."""

    answer: AssistantMessage
    """The final assistant message (an error answer when ``status == "error"``)."""
    status: Status
    run_id: str
    turns: int = 0
    new_messages: list[Message] = field(default_factory=list)
    """Messages the run added to the history, inputs included."""
    error: BaseException | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    input_ids: list[str] = field(default_factory=list)
    """Ids of every input this run answers (steered inputs included)."""
    usage_limit: dict[str, Any] | None = None
    """With status ``usage_limit``: ``LimitReached.as_dict()`` (limit, maximum, value, scope)."""
    output: OutputOutcome | None = None
    """With ``LoopConfig.output``: the typed answer (``valid``, ``output``) or why it failed (``error``)."""
    pending_approvals: list[dict[str, Any]] | None = None
    """With status ``awaiting_approval``: ``[{"tool_call_id", "name", "arguments"}]``
    (``yiemagent.tools.approvals``)."""
    request_tokens: int | None = None
    """With ``LoopConfig.compaction``: the size of the run's last model request, in tokens."""
    guardrail: dict[str, Any] | None = None
    """With status ``guardrail_tripped``: ``{"stage", "guardrail", "reason", "info"}`` of the tripwire."""


def add_usage(total: dict[str, Any], usage: dict[str, Any] | None, *, _depth: int = 0) -> None:
    """Add the token counts of ``usage`` into ``total``, in place.

    Numbers are summed key by key; nested objects (OpenAI's
    ``prompt_tokens_details.cached_tokens``,
    ``completion_tokens_details.reasoning_tokens``) are summed key by key
    inside the same nested key of ``total``, up to 4 levels. Other values
    (strings, lists, booleans) are skipped, and so is a sum that is not a
    finite number (NaN, an overflow), so the total can always be saved, and
    a negative number (a peer's broken count: it never lowers a total).
    """
    if not isinstance(usage, dict) or _depth > 4:
        return
    for key, value in usage.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            if not value >= 0:  # a negative or NaN count is unknown (yiemagent._internal.numbers, issue 33)
                continue
            current = total.get(key, 0)
            if isinstance(current, (int, float)) and not isinstance(current, bool):
                added = current + value
                if not isinstance(added, float) or math.isfinite(added):  # NaN or an overflow is not kept
                    total[key] = added
        elif isinstance(value, dict):
            nested = total.get(key)
            if not isinstance(nested, dict):
                nested = total[key] = {}
            add_usage(nested, value, _depth=_depth + 1)
