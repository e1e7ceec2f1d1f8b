"""Tools: what the model can call, and everything that guards a call.

``AgentTool`` (``agent_tool``: name, description, ``input_schema``, ``execute``), the ``@tool`` decorator
(``decorator``), results (``results``), the ``ToolRegistry`` (``registry``), argument validation in bounded
time (``schema_checks``), the JSON Schema of a Python type (``type_schema``), the ``before_tool_call`` /
``after_tool_call`` hooks (``hooks``) and approvals (``approvals``: calls that wait for a person).

Spec: OpenAI function tools (``{"type": "function", "function": {...}}``); JSON Schema 2020-12.
"""

from .agent_tool import AgentTool, Execute
from .decorator import FunctionTool, tool
from .registry import ToolRegistry, report_progress
from .results import AgentToolResult, cap_result, to_result

__all__ = [
    "AgentTool", "AgentToolResult", "Execute", "FunctionTool", "ToolRegistry", "cap_result", "report_progress",
    "to_result", "tool",
]
