"""Agent tool: ``AgentTool``, a tool the model can call.

A tool is a name (``^[a-zA-Z0-9_-]{1,64}$``, what OpenAI accepts), a
description, a JSON Schema for its arguments (``input_schema``, MCP's
``inputSchema``) and an ``execute`` callable::

    execute(tool_call_id: str, arguments: dict, abort_event: threading.Event)
        -> AgentToolResult | str | dict | list | None

``AgentTool.validate`` checks arguments against the schema with
``jsonschema``; ``AgentTool.to_openai`` gives the OpenAI function tool.
``@tool`` (``yiemagent.tools.decorator``) makes one from a function;
``ToolRegistry`` (``yiemagent.tools``) runs them.

Spec: OpenAI function tools (``{"type": "function", "function": {...}}``);
JSON Schema 2020-12 (``jsonschema`` picks the draft from ``$schema``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from .._internal.jsonload import check_schema_depth
from ..exceptions import ConfigError, ToolArgumentsError
from .quick_schema import quick_check
from .schema_checks import foreign_failure, pattern_budget, safe_validator_class

__all__ = ["AgentTool", "Execute"]

Execute = Callable[[str, dict[str, Any], threading.Event], Any]

_VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass
class AgentTool:
    """A tool the model can call.

    Contract of ``execute``: called on a worker thread with the call id, the
    validated arguments and the run's abort ``threading.Event`` (long tools
    should check it and return early). It may return an ``AgentToolResult``,
    ``str``, ``dict``, ``list`` or None; if it raises, the model gets an error
    result naming the exception and the run goes on.
    """

    name: str
    """``^[a-zA-Z0-9_-]{1,64}$`` is what OpenAI accepts."""
    description: str
    input_schema: dict[str, Any]
    """JSON Schema of the arguments object (MCP ``inputSchema``)."""
    execute: Execute = field(repr=False, compare=False)
    sequential: bool = False
    """True when this tool must not run at the same time as other tools."""
    idempotent: bool = False
    """True when running it again with the same arguments does no harm (a read, an upsert): a call
    interrupted by a crash is then run again on replay; else the model is told its effect is unknown."""
    needs_approval: bool = False
    """True when a call of this tool runs only once a person approved it: the run stops with status
    ``awaiting_approval`` and resumes on ``Agent.approve``/``reject``/``decide`` (``yiemagent.tools.approvals``)."""
    annotations: dict[str, Any] | None = field(default=None, compare=False)
    """Hints about the tool's behaviour, MCP ``ToolAnnotations``: ``title``, ``readOnlyHint``,
    ``destructiveHint``, ``idempotentHint``, ``openWorldHint`` (booleans). ``{}`` for an MCP tool
    that sent none (the spec's defaults apply: not read-only, destructive, open world); None for a
    tool that does not say (a local tool). Hooks and events read them (``ToolCallContext.annotations``,
    ``yiemagent.tools.hooks.approve_destructive_tools``); they are never sent to the model."""
    title: str | None = field(default=None, compare=False)
    """A display name for people (MCP ``title``), or None."""
    icons: list[dict[str, Any]] | None = field(default=None, compare=False)
    """MCP ``icons`` (``[{"src", "mimeType"?, "sizes"?, "theme"?}]``) for UIs, or None."""
    inline: bool = field(default=False, compare=False)
    """True when the tool returns at once (a pure function, a lookup in memory): it runs on the loop's
    own thread, without a hand-off to a worker, and an abort is seen when it returns."""
    may_await_approval: bool = field(default=False, compare=False)
    """True when a call may itself wait for a person (its ``execute`` raises
    ``yiemagent.tools.nested_approvals.AwaitingApproval``: an agent behind ``Agent.as_tool`` whose tools need
    approval): the run keeps a journal so that it can stop ``awaiting_approval`` and resume."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _VALID_NAME.match(self.name):
            raise ConfigError(
                f"tool name {self.name!r} is not accepted by OpenAI-compatible servers: use 1-64 of "
                "a-z, A-Z, 0-9, _ and - (for @tool on a lambda, pass name=...)"
            )
        if self.input_schema is None:
            self.input_schema = {"type": "object", "properties": {}}
        if not isinstance(self.input_schema, dict):
            raise ConfigError(f"tool {self.name!r}: input_schema must be a dict")
        check_schema_depth(self.input_schema, f"tool {self.name!r}: input_schema")
        try:
            cls = safe_validator_class(self.input_schema)
            cls.check_schema(self.input_schema)
            self._validator = cls(self.input_schema)
            self._quick = quick_check(self.input_schema)  # plainly valid arguments skip jsonschema
        except jsonschema.exceptions.SchemaError as exc:
            raise ConfigError(f"tool {self.name!r}: invalid input_schema: {exc.message}") from exc
        except BaseException as exc:  # a dependency's RecursionError, referencing error or Rust panic
            if not foreign_failure(exc):
                raise
            raise ConfigError(f"tool {self.name!r}: input_schema cannot be used: {type(exc).__name__}: "
                              f"{str(exc)[:200]}") from None

    def validate(self, arguments: dict[str, Any], tool_call_id: str = "") -> None:
        """Check ``arguments`` against ``input_schema``.

        Regexes of the schema (``pattern``) run in bounded time
        (``yiemagent.tools.schema_checks``); a schema the validator cannot evaluate
        (a ``$ref`` cycle, a dependency's panic) gives ``ToolArgumentsError``.

        Raises:
            ToolArgumentsError: with ``.errors`` = ``["<json path>: <message>", ...]``.
        """
        quick = self._quick
        if quick is not None and quick(arguments):
            return
        try:
            with pattern_budget():
                errors = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        except BaseException as exc:  # RecursionError on a $ref cycle, referencing errors, a Rust PanicException
            if not foreign_failure(exc):
                raise
            message = f"$: the tool's inputSchema cannot be evaluated ({type(exc).__name__}: {str(exc)[:200]})"
            raise ToolArgumentsError(f"invalid arguments for tool {self.name!r}: {message}", tool_name=self.name,
                                     tool_call_id=tool_call_id, errors=[message]) from None
        if errors:
            messages = [f"{e.json_path}: {e.message}" for e in errors]
            raise ToolArgumentsError(
                f"invalid arguments for tool {self.name!r}: " + "; ".join(messages),
                tool_name=self.name,
                tool_call_id=tool_call_id,
                errors=messages,
            )

    def to_openai(self) -> dict[str, Any]:
        """Return ``{"type": "function", "function": {"name", "description", "parameters"}}``."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema},
        }
