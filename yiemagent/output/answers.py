"""The answer dict's type, for users' type checkers: ``Answer`` (a ``TypedDict``).

``Agent.ask``, ``submit`` (its ``Future``), ``stream`` (its last item), ``drain`` and ``decide``
return an ``Answer``: an OpenAI assistant message (``role``, ``content``, and ``tool_calls`` or
reasoning fields when the message had them) plus the keys below. At run time it is a plain
``dict``; the type only lets ``mypy --strict`` check the keys a program reads::

    answer = agent.ask("What is the weather in Paris?")
    if answer["status"] == "completed":      # status: AnswerStatus, a Literal
        print(answer["content"])
    answer["stauts"]                         # mypy: TypedDict "Answer" has no key "stauts"

Keys always present: ``role``, ``content``, ``status``, ``input_ids``. The others come when
they apply (read them with ``answer.get(key)``): see each one below and ``yiemagent.agent``.

Events are ``yiemagent.loop.events.Event``, a union of dataclasses told apart by their ``type``
(a ``Literal``): ``if item.type == "message_update": item.delta_type`` type-checks.

Source: OpenAI Chat Completions assistant message (``role``, ``content``, ``tool_calls``,
``reasoning_content``); the other keys are yiemagent's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:  # the type checker's; at run time the annotations stay strings
    from typing_extensions import Required

__all__ = ["Answer", "AnswerStatus", "GuardrailReport", "MCPUnavailable", "PendingApproval", "UsageLimitReached"]

AnswerStatus = Literal[
    "completed", "truncated", "terminated", "max_turns", "repeated_call", "usage_limit", "aborted", "error",
    "output_invalid", "awaiting_approval", "conflict", "guardrail_tripped",
]
"""How the run serving the input ended (``yiemagent.loop``; ``AgentEndEvent.status`` too); ``conflict``: a
branching operation refused because the conversation moved since it was planned (``yiemagent.loop.branching``)."""


class PendingApproval(TypedDict, total=False):
    """A tool call waiting for a person's decision (``yiemagent.tools.approvals``)."""

    tool_call_id: Required[str]
    name: Required[str]
    """The tool's name as the model sees it."""
    arguments: Required[Any]
    """The call's arguments (a JSON object, or the raw text when the model's JSON was broken)."""
    input_id: str
    seq: int
    """With a store: the inbox seq of the input whose run waits."""


class MCPUnavailable(TypedDict):
    """An MCP server that could not be reached at its last listing."""

    server: str
    error: str


class UsageLimitReached(TypedDict):
    """The limit that ended a run with status ``usage_limit`` (``yiemagent.context.usage_limits``)."""

    limit: str
    """Its name: ``requests``, ``input_tokens``, ``output_tokens``, ``total_tokens``, ``tool_calls``, ``cost``."""
    maximum: float
    value: float
    scope: Literal["run", "conversation"]


class GuardrailReport(TypedDict):
    """The tripwire that ended a run with status ``guardrail_tripped`` (``yiemagent.tools.guardrails``)."""

    stage: Literal["input", "output", "tool_input", "tool_output"]
    guardrail: str
    """The guardrail's name."""
    kind: str
    """``tripwire`` (a ``retry`` the run could not act on counts as one)."""
    reason: str
    info: Any
    """What the guardrail reported (JSON-ready)."""
    answer: str | None
    """The guardrail's own answer text, when it gave one (the answer's ``content`` then)."""


class Answer(TypedDict, total=False):
    """The answer to one input (module docstring). Keys past the four required come when they apply."""

    role: Required[Literal["assistant"]]
    content: Required[str | None]
    """The answer's text (``""`` when the model wrote none; None only next to ``tool_calls``)."""
    status: Required[AnswerStatus]
    input_ids: Required[list[str]]
    """The ids of the inputs this answers (several when steering joined inputs into one run)."""
    finish_reason: str | None
    """The model's (``stop``, ``length``, ``tool_calls``...), or None (an answer no model reply ended)."""
    model: str
    """The model that answered, when its reply named it (``fallback_llm`` tells which one)."""
    error: str
    """With status ``error`` or ``output_invalid``: what went wrong."""
    output: Any
    """With ``output_type``: the parsed answer, an instance of that type (``yiemagent.output.typed_output``)."""
    pending_approvals: list[PendingApproval]
    """With status ``awaiting_approval``: the calls waiting (``Agent.decide``)."""
    usage_limit: UsageLimitReached
    """With status ``usage_limit``: the limit reached."""
    guardrail: GuardrailReport
    """With status ``guardrail_tripped``: the guardrail whose tripwire ended the run."""
    request_tokens: int
    """With ``context_window``: the tokens of the run's last model request (``yiemagent.context.compaction``)."""
    mcp_unavailable: list[MCPUnavailable]
    """While an MCP server cannot be reached."""
    seq: list[int]
    """With a store: the inbox seqs this answers."""
    tool_calls: list[dict[str, Any]]
    """OpenAI ``tool_calls`` of the message, when it had any (intermediate items only, see ``emit_intermediate``)."""
    reasoning_content: str
    """The model's reasoning text, when its reply had it (DeepSeek, llama.cpp, vLLM field)."""
    reasoning: str
    """The same under the name some servers use (OpenRouter, Ollama)."""
    intermediate: bool
    """``emit_intermediate``: True on the assistant and tool messages put on ``output_queue`` mid-run."""
    branch: dict[str, Any]
    """A branching operation's (``Agent.rewind``/``edit``/``regenerate``): ``{"op", "keep", "base", "resume"}``."""
