"""Tools: what the model can call, and everything that guards a call.

``AgentTool`` (``agent_tool``: name, description, ``input_schema``, ``execute``), the ``@tool`` decorator
(``decorator``), results (``results``), the ``ToolRegistry`` (``registry``), argument validation in bounded
time (``schema_checks``), the JSON Schema of a Python type (``type_schema``), the ``before_tool_call`` /
``after_tool_call`` hooks (``hooks``) and approvals (``approvals``: calls that wait for a person).

Spec: OpenAI function tools (``{"type": "function", "function": {...}}``); JSON Schema 2020-12.
"""

from typing import TYPE_CHECKING

from .._internal.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from .agent_tool import AgentTool, Execute
    from .decorator import FunctionTool, tool
    from .registry import ToolRegistry, report_progress
    from .results import AgentToolResult, cap_result, to_result

_EXPORTS = {
    "AgentTool": ".agent_tool",
    "Execute": ".agent_tool",
    "FunctionTool": ".decorator",
    "tool": ".decorator",
    "ToolRegistry": ".registry",
    "report_progress": ".registry",
    "AgentToolResult": ".results",
    "cap_result": ".results",
    "to_result": ".results",
}

__all__ = [
    "AgentTool", "AgentToolResult", "Execute", "FunctionTool", "ToolRegistry", "cap_result", "report_progress",
    "to_result", "tool",
]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)  # each name on first use (PEP 562)
