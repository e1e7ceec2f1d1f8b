"""What a served tool's return value becomes on the wire: an MCP ``CallToolResult``.

``call_result(value, output_schema)`` turns whatever a tool's ``execute`` returned into::

    {"content": [<content block>, ...], "isError": bool,
     "structuredContent": {...}?}

- ``ToolReply`` (this module): its MCP content blocks as they are (``text``,
  ``image``, ``audio``, ``resource``, ``resource_link``: what ``AgentToolResult``
  cannot hold), its ``structured_content`` and ``is_error``;
- ``AgentToolResult`` (and anything ``yiemagent.tools.to_result`` takes: str,
  dict, list, numbers, None): text parts -> ``text`` blocks, ``data:`` image URLs
  -> ``image`` blocks (``data`` bare base64, ``mimeType``), other image URLs ->
  ``resource_link`` blocks; ``is_error`` -> ``isError``;
- with an ``output_schema`` (``MCPServer.add_tool(..., output_schema=)``), a
  ``dict`` return value is the ``structuredContent`` too, and its JSON text the
  one ``text`` block (the spec's SHOULD for older clients). A value that is not an
  object is an error result.

Spec: MCP 2025-11-25, "Tools" ("Tool Result", "Structured Content", "Output Schema").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...messages import ImageContent, TextContent
from ...tools import AgentToolResult, to_result

__all__ = ["ToolReply", "call_result"]

_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+)(?:;[\w=.+-]+)*;base64,(.*)\Z", re.ASCII | re.DOTALL)


@dataclass
class ToolReply:
    """A served tool's result given as MCP content blocks (for what ``AgentToolResult`` cannot carry).

    Return it from a tool's ``execute`` (or a ``@tool`` function) that is served by ``MCPServer``; an
    agent running the same tool locally sees it as text (``str(reply)``), so use it for tools made to be
    served.

    Attributes:
        content: MCP content blocks, e.g. ``{"type": "audio", "data": <base64>, "mimeType": "audio/wav"}``
            or ``{"type": "resource", "resource": {"uri", "mimeType", "text"}}``; sent as given.
        structured_content: the ``structuredContent`` object, or None.
        is_error: the result's ``isError``.
    """

    content: list[dict[str, Any]] = field(default_factory=list)
    structured_content: dict[str, Any] | None = None
    is_error: bool = False


def _block(part: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(part, TextContent):
        return {"type": "text", "text": part.text}
    found = _DATA_URL.match(part.url)
    if found is not None:
        return {"type": "image", "data": found.group(2), "mimeType": found.group(1)}
    return {"type": "resource_link", "uri": part.url, "name": part.url.rsplit("/", 1)[-1] or "image"}


def call_result(value: Any, output_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``CallToolResult`` of a tool's return ``value`` (rules in the module docstring).

    ``output_schema`` only decides whether a ``dict`` becomes ``structuredContent``; the server
    checks the object against it (``MCPServer``).
    """
    if isinstance(value, ToolReply):
        result: dict[str, Any] = {"content": list(value.content), "isError": bool(value.is_error)}
        if value.structured_content is not None:
            result["structuredContent"] = value.structured_content
        return result
    if output_schema is not None and not isinstance(value, AgentToolResult):
        if not isinstance(value, dict):
            return {"content": [{"type": "text", "text": f"the tool returned {type(value).__name__}, "
                                 "not the object its outputSchema describes"}], "isError": True}
        return {"content": [{"type": "text", "text": to_result(value).text}], "structuredContent": value,
                "isError": False}
    tool_result = to_result(value)
    return {"content": [_block(part) for part in tool_result.content], "isError": bool(tool_result.is_error)}
