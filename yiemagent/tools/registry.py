"""Tools: ``AgentTool``, the ``@tool`` decorator, results and the registry.

A tool is a name, a description, a JSON Schema for its arguments
(``input_schema``, MCP's ``inputSchema``) and an ``execute`` callable::

    execute(tool_call_id: str, arguments: dict, abort_event: threading.Event)
        -> AgentToolResult | str | dict | list | None

``ToolRegistry.call`` validates the arguments with ``jsonschema`` before
``execute`` runs, and turns whatever ``execute`` returns into an
``AgentToolResult``: a ``str`` becomes text, a ``dict``/``list`` becomes JSON
text written with the characters themselves (no ``\\u`` escapes).

Code: ``AgentTool`` is in ``yiemagent.tools.agent_tool``, ``@tool`` and ``FunctionTool``
in ``yiemagent.tools.decorator``, ``AgentToolResult``, ``to_result`` and
``cap_result`` in ``yiemagent.tools.results``; this module keeps ``ToolRegistry``
and ``report_progress``, and gathers the names.

Spec: OpenAI function tools (``{"type": "function", "function": {...}}``);
JSON Schema 2020-12 (``jsonschema`` picks the draft from ``$schema``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..exceptions import ConfigError, ToolExecutionError, ToolNotFoundError
from .agent_tool import AgentTool
from .agent_tool import Execute as Execute
from .decorator import FunctionTool as FunctionTool
from .decorator import tool
from .results import AgentToolResult, cap_result, to_result

__all__ = ["AgentTool", "AgentToolResult", "ToolRegistry", "cap_result", "report_progress", "to_result", "tool"]

logger = logging.getLogger("yiemagent.tools")

_running = threading.local()


class progress_reporter:
    """Context manager: while a tool runs on this thread, ``report_progress`` goes to ``callback``."""

    def __init__(self, callback: Callable[[Any], None]) -> None:
        self.callback = callback

    def __enter__(self) -> None:
        self.previous = getattr(_running, "report", None)
        _running.report = self.callback

    def __exit__(self, *exc: object) -> None:
        _running.report = self.previous


def report_progress(progress: Any) -> None:
    """Report progress from inside a running tool.

    Call it from a tool's ``execute`` (on the thread the agent runs it on);
    the agent sends a ``tool_execution_update`` event carrying ``progress``
    (any value, e.g. ``{"progress": 2, "total": 5}``). Outside a tool it does
    nothing. MCP tools forward the server's ``notifications/progress`` this way.
    """
    report = getattr(_running, "report", None)
    if report is not None:
        report(progress)


class ToolRegistry:
    """The tools of one agent, by name.

    Registration is idempotent: adding the same tool again (same name,
    description and schema) changes nothing; a different tool under a taken
    name raises ``ConfigError`` unless ``replace=True``.

    Thread safety: safe to call from any thread.
    """

    def __init__(self, tools: Iterable[AgentTool] = ()) -> None:
        self._tools: dict[str, AgentTool] = {}
        self._lock = threading.Lock()
        self._openai: tuple[tuple[AgentTool, ...], list[dict[str, Any]]] | None = None  # to_openai, by tools
        for t in tools:
            self.add(t)

    def add(self, new: AgentTool | Callable[..., Any], *, replace: bool = False) -> AgentTool:
        """Register a tool (an ``AgentTool`` or a plain function, wrapped with ``@tool``)."""
        added: AgentTool = new if isinstance(new, AgentTool) else tool(new)
        with self._lock:
            old = self._tools.get(added.name)
            if old is not None and not replace:
                same = old is added or (
                    old.description == added.description and old.input_schema == added.input_schema
                    and old.execute == added.execute
                )
                if same:
                    return old
                raise ConfigError(f"a different tool named {added.name!r} is already registered")
            self._tools[added.name] = added
            return added

    def remove(self, name: str) -> None:
        """Unregister ``name`` (no error when absent)."""
        with self._lock:
            self._tools.pop(name, None)

    def get(self, name: str) -> AgentTool | None:
        """The tool named ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._tools)

    def __iter__(self) -> Iterator[AgentTool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def to_openai(self) -> list[dict[str, Any]]:
        """All tools in OpenAI function-tool format.

        The same list object while the same tools are registered (made once, so
        that each request does not rebuild it; the request guard then checks it
        once): callers must not change it, nor the tools' fields in place.
        """
        tools = tuple(self)
        made = self._openai
        if made is None or made[0] != tools:
            made = (tools, [t.to_openai() for t in tools])
            self._openai = made
        return made[1]

    def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        tool_call_id: str = "",
        abort_event: threading.Event | None = None,
    ) -> AgentToolResult:
        """Validate ``arguments`` and run the tool.

        Returns:
            The tool's result (an error result if the tool itself reported one).

        Raises:
            ToolNotFoundError: ``name`` is not registered.
            ToolArgumentsError: ``arguments`` fail the tool's ``input_schema``.
            ToolExecutionError: ``execute`` raised; the original is ``__cause__``.
        """
        found = self._tools.get(name)
        if found is None:
            known = ", ".join(self._tools) or "none"
            raise ToolNotFoundError(
                f"unknown tool {name!r}; available tools: {known}", tool_name=name, tool_call_id=tool_call_id
            )
        found.validate(arguments, tool_call_id)
        try:
            value = found.execute(tool_call_id, arguments, abort_event or threading.Event())
        except Exception as exc:
            raise ToolExecutionError(
                f"tool {name!r} raised {type(exc).__name__}: {exc}", tool_name=name, tool_call_id=tool_call_id
            ) from exc
        return to_result(value)
