"""One typed run: what each request carries and whether an answer is accepted (``TypedRun``).

The loop (``yiemagent.loop``) makes a ``TypedRun`` per run when
``LoopConfig.output`` (an ``OutputSpec``, ``yiemagent.output.typed_output``) is set:
``shape_request`` before each model call (instruction, tools, ``response_format``),
``on_text`` for a reply without tool calls, ``after_batch`` after a tool batch;
``outcome`` is how it ended (``RunResult.output``). The modes and the retry rule
are described in ``yiemagent.output.typed_output``.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..exceptions import ConfigError
from ..formats.llm import accepts_keyword
from ..tools import ToolRegistry
from ..tools.agent_tool import AgentTool
from ..tools.results import AgentToolResult
from .typed_output import OutputInvalid, OutputSpec, parse_json_text, to_json_value

__all__ = ["OutputOutcome", "TypedRun", "answer_output"]

@dataclasses.dataclass
class OutputOutcome:
    """How a typed run's answer turned out (``RunResult.output``)."""

    valid: bool = False
    output: Any = None
    """The parsed answer (an instance of ``output_type``) when ``valid``."""
    error: str | None = None
    """The last validation error, or None."""
    failures: int = 0
    """Answers that failed validation (each sent back, except the last when retries ran out)."""
    exhausted: bool = False
    """True when the retries ran out: the run ends with status ``output_invalid``."""


class _WithOutputTool(ToolRegistry):
    """The agent's tools plus the ``final_answer`` tool, for one run (the agent's registry is not changed)."""

    def __init__(self, base: ToolRegistry, extra: AgentTool) -> None:
        super().__init__()
        self._base, self._extra = base, extra

    def add(self, new: AgentTool | Callable[..., Any], *, replace: bool = False) -> AgentTool:
        return self._base.add(new, replace=replace)

    def remove(self, name: str) -> None:
        self._base.remove(name)

    def get(self, name: str) -> AgentTool | None:
        return self._extra if name == self._extra.name else self._base.get(name)

    def names(self) -> list[str]:
        return [*self._base.names(), self._extra.name]

    def __iter__(self) -> Iterator[AgentTool]:
        return iter([*self._base, self._extra])

    def __len__(self) -> int:
        return len(self._base) + 1

    def __contains__(self, name: object) -> bool:
        return name == self._extra.name or name in self._base

    def call(self, name: str, arguments: dict[str, Any], *, tool_call_id: str = "",
             abort_event: threading.Event | None = None) -> AgentToolResult:
        registry = ToolRegistry([self._extra]) if name == self._extra.name else self._base
        return registry.call(name, arguments, tool_call_id=tool_call_id, abort_event=abort_event)


def _with_instruction(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """``messages`` with ``text`` at the end of the system message (one put first when there is none)."""
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{text}"}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


class TypedRun:
    """The typed answer of one run: what each request carries, and whether an answer is accepted.

    The loop (``yiemagent.loop``) makes one per run when ``LoopConfig.output``
    is set; see the module docstring for the modes.

    Raises:
        ConfigError: ``mode="response_format"`` with an ``llm_call`` that does not take ``response_format``.
    """

    def __init__(self, spec: OutputSpec, llm_call: Any, tools: ToolRegistry,
                 runner: Callable[[Callable[[], object]], object] | None = None) -> None:
        self.runner = runner
        """Runs the output validators of a text answer (the loop's: an abort cuts the wait); None: here."""
        self.spec = spec
        takes = accepts_keyword(llm_call, "response_format")
        if spec.mode == "response_format" and not takes:
            raise ConfigError("output_mode='response_format' needs an llm_call that takes response_format= "
                              "(OpenAIChat does); use 'auto', 'tool' or 'prompted'")
        self.mode: str = ("auto" if takes else "tool") if spec.mode == "auto" else spec.mode
        self.outcome = OutputOutcome()
        self.format_next = False
        """auto: the next request goes without tools and with ``response_format`` (a retry)."""
        self.tool: AgentTool | None = None
        self.tools = tools
        if self.mode == "tool":
            name = "final_answer"
            while name in tools:
                name = f"final_answer_{len(name)}"
            self.tool = AgentTool(name=name, description=f"Give the final answer ({spec.name}). Call it once, "
                                  "when you have everything; the run ends with it.",
                                  input_schema=spec.tool_schema(), execute=self._execute)
            self.tools = _WithOutputTool(tools, self.tool)

    # ------------------------------------------------------------------ requests

    def shape_request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any] | None]:
        """``(messages, tools, response_format or None)`` of one request (see the module docstring)."""
        response_format = None
        if self.mode == "auto" and self.format_next:
            tools = []
        if self.mode == "response_format" or (self.mode == "auto" and not tools):
            response_format = self.spec.response_format()
        if response_format is not None:  # the server has the schema; words around it only distract small models
            return messages, tools, response_format
        offered = self.tool is not None and any(t.get("function", {}).get("name") == self.tool.name for t in tools)
        text = self.spec.instruction(tool_name=self.tool.name if offered and self.tool else None)
        return _with_instruction(messages, text), tools, None

    # ------------------------------------------------------------------ answers

    def _retry_text(self, error: str) -> str:
        if self.tool is not None:
            return (f"Your answer was not accepted: {error}. Give the final answer by calling the tool "
                    f"{self.tool.name} (or, if you cannot call tools, as one JSON value matching {self.spec.name}).")
        return (f"Your answer was not accepted: {error}. Answer again with only one JSON value matching the "
                f"JSON Schema {self.spec.name}.")

    def _failed(self, error: str, can_retry: bool) -> str | None:
        self.outcome.failures += 1
        self.outcome.error = error
        if can_retry and self.outcome.failures <= self.spec.retries:
            self.format_next = self.mode == "auto"
            return self._retry_text(error)
        self.outcome.exhausted = True
        return None

    def on_text(self, text: str, *, can_retry: bool, cut: bool = False) -> str | None:
        """A reply without tool calls: accept it (None) or return the retry message to send as a user message.

        ``cut``: the reply was cut by the token limit (``finish_reason`` ``length``): when its JSON
        does not parse, the message says so (a constrained server can pad JSON with whitespace until
        the limit). When it returns None and ``outcome.exhausted`` is set, the run ends ``output_invalid``.
        """
        try:
            self.outcome = OutputOutcome(valid=True, output=self.spec.parse(parse_json_text(text), runner=self.runner),
                                         failures=self.outcome.failures)
            return None
        except OutputInvalid as exc:
            error = str(exc)
            if cut and error.startswith("the answer is not JSON"):
                error = "the answer was cut by the token limit before its JSON ended (write compact JSON)"
            return self._failed(error, can_retry)

    def _execute(self, tool_call_id: str, arguments: dict[str, Any], abort_event: threading.Event) -> Any:
        """``final_answer``: the arguments were validated against the schema; convert them and run the validators."""
        try:
            self.spec.parse(arguments["response"] if self.spec.wrapped else arguments)
        except OutputInvalid as exc:
            name = self.tool.name if self.tool is not None else "final_answer"
            return AgentToolResult.error(f"The answer was not accepted: {exc}. Call {name} again with a "
                                         "corrected answer.")
        return AgentToolResult("Final answer received.", terminate=True)

    def after_batch(self, calls: Sequence[Any], results: Sequence[AgentToolResult], *, ran: bool,
                    can_retry: bool) -> bool:
        """After a tool batch (``calls`` and their ``results``): True when the run ends here.

        It ends when ``final_answer`` was called with a valid answer (``outcome.valid``), or when
        its calls kept failing past ``retries`` (``outcome.exhausted``). ``ran``: the batch ran
        (not refused by the turn or usage limit). A replayed result (a durable run) is taken as it was
        recorded: its arguments are converted again, the validators are not run again.
        """
        if self.tool is None or not ran:
            return False
        mine = [(call, result) for call, result in zip(calls, results, strict=False) if call.name == self.tool.name]
        if not mine:
            return False
        for call, result in mine:
            if not result.is_error:
                value = call.arguments.get("response") if self.spec.wrapped else call.arguments
                try:
                    output = self.spec.parse(value, run_validators=False)
                except OutputInvalid as exc:  # recorded by a process with another schema: not this run's answer
                    self._failed(str(exc), False)
                    return True
                self.outcome = OutputOutcome(valid=True, output=output, failures=self.outcome.failures)
                return True
        self._failed(mine[-1][1].text, can_retry)
        return self.outcome.exhausted

    def closing_text(self) -> str:
        """The answer's text after a ``final_answer`` batch: the output as JSON, or why it failed."""
        if self.outcome.valid:
            return json.dumps(to_json_value(self.outcome.output), ensure_ascii=False)
        return (f"The answer did not match {self.spec.name} after {self.outcome.failures} attempts: "
                f"{self.outcome.error}")

def answer_output(answer: dict[str, Any], outcome: OutputOutcome | None) -> None:
    """Put a typed run's ``output`` (valid) or ``error`` (``output_invalid``) into its answer dict."""
    if outcome is None:
        return
    if outcome.valid:
        answer["output"] = outcome.output
    elif outcome.exhausted:
        answer["error"] = f"the answer did not match the output schema: {outcome.error}"
