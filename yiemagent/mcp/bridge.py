"""Bridge: MCP tools as ``AgentTool`` objects, and MCP results as ``AgentToolResult``.

``MCPToolset`` discovers the tools of one or more ``MCPClient``s at run time,
registers them in a ``ToolRegistry`` and keeps them current (re-listing after
``notifications/tools/list_changed``). Each tool's ``execute`` sends
``tools/call`` with the tool's original name; the name the model sees is
sanitised to ``^[a-zA-Z0-9_-]{1,64}$`` and made unique across servers.

Spec: MCP 2025-11-25, "Tools" (``inputSchema``, ``content``, ``isError``,
``structuredContent``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ..exceptions import MCPError, MCPRPCError, MCPTimeoutError
from ..messages import ImageContent, TextContent
from ..tools import AgentTool, AgentToolResult, ToolRegistry, report_progress
from .client import MCPClient

__all__ = [
    "MCPToolExecutor",
    "MCPToolset",
    "mcp_tool",
    "normalize_input_schema",
    "result_to_tool_result",
    "sanitize_tool_name",
]

logger = logging.getLogger("yiemagent.mcp")

_VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def sanitize_tool_name(name: str) -> str:
    """Return ``name`` if OpenAI accepts it, else a valid name with a short hash suffix.

    Characters outside ``[a-zA-Z0-9_-]`` become ``_``; a changed or too long
    name gets ``_<8 hex of sha1(name)>`` so distinct names stay distinct.
    """
    if _VALID_NAME.match(name):
        return name
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:55].strip("_") or "tool"
    return f"{cleaned}_{digest}"


def normalize_input_schema(schema: Any) -> dict[str, Any]:
    """An ``inputSchema`` OpenAI's function format accepts.

    Missing or not an object -> ``{"type": "object", "properties": {}}``; an
    object schema without ``properties`` gets ``"properties": {}``. ``$defs``
    and ``$ref`` are kept (validation resolves them).
    """
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    out = dict(schema)
    out.setdefault("type", "object")
    if out.get("type") == "object" and not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    return out


def _content_part(block: Any) -> TextContent | ImageContent:
    """One MCP content block as text or image (C18: no base64 inlined as text)."""
    if not isinstance(block, dict):
        return TextContent(f"[unsupported content {type(block).__name__}]")
    kind = block.get("type")
    if kind == "text":
        return TextContent(str(block.get("text", "")))
    if kind == "image" and isinstance(block.get("data"), str):
        return ImageContent.from_base64(block["data"], str(block.get("mimeType") or "image/png"))
    if kind == "audio":
        return TextContent(f"[audio {block.get('mimeType', 'unknown')}]")
    if kind == "resource" and isinstance(block.get("resource"), dict):
        resource = block["resource"]
        if isinstance(resource.get("text"), str):
            return TextContent(resource["text"])
        return TextContent(f"[resource {resource.get('uri', '')} {resource.get('mimeType', '')}]".replace(" ]", "]"))
    if kind == "resource_link":
        label = block.get("name") or block.get("title") or ""
        return TextContent(f"[resource link {block.get('uri', '')} {label}]".replace(" ]", "]"))
    return TextContent(f"[unsupported content type {kind!r}]")


def result_to_tool_result(result: dict[str, Any]) -> AgentToolResult:
    """Turn an MCP ``tools/call`` result into an ``AgentToolResult``.

    ``isError`` -> ``is_error``; text blocks -> text; images -> image parts;
    embedded text resources -> their text; blobs, audio and resource links ->
    short placeholders; an empty ``content`` with ``structuredContent`` -> its
    JSON text (C17). ``details`` keeps ``structuredContent`` and ``_meta``.
    """
    blocks = result.get("content") if isinstance(result.get("content"), list) else []
    parts = [_content_part(b) for b in blocks]
    structured = result.get("structuredContent")
    if structured is not None and not any(
        isinstance(p, ImageContent) or (isinstance(p, TextContent) and p.text) for p in parts
    ):
        parts = [TextContent(json.dumps(structured, ensure_ascii=False))]
    details = {k: result[k] for k in ("structuredContent", "_meta") if k in result}
    return AgentToolResult(parts, is_error=bool(result.get("isError")), details=details or None)


class MCPToolExecutor:
    """``execute`` of an MCP tool: one ``tools/call``; failures become error results."""

    def __init__(self, client: MCPClient, tool_name: str, timeout_seconds: float | None = None) -> None:
        self.client = client
        self.tool_name = tool_name
        self.timeout_seconds = timeout_seconds

    def __call__(self, tool_call_id: str, arguments: dict[str, Any], abort_event: threading.Event) -> AgentToolResult:
        """Send ``tools/call``; MCP errors become error results (never raised)."""
        try:
            result = self.client.call_tool(self.tool_name, arguments, timeout_seconds=self.timeout_seconds,
                                           progress_callback=report_progress)
        except MCPTimeoutError as exc:
            return AgentToolResult.error(f"MCP tool {self.tool_name!r} timed out: {exc}", details={"error": exc})
        except MCPRPCError as exc:
            return AgentToolResult.error(
                f"MCP tool {self.tool_name!r} failed: JSON-RPC error {exc.code}: {exc.message}",
                details={"error": exc},
            )
        except MCPError as exc:
            return AgentToolResult.error(f"MCP tool {self.tool_name!r} failed: {exc}", details={"error": exc})
        return result_to_tool_result(result)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MCPToolExecutor)
            and other.client is self.client
            and other.tool_name == self.tool_name
        )

    def __hash__(self) -> int:
        return hash((id(self.client), self.tool_name))


def mcp_tool(client: MCPClient, spec: dict[str, Any], *, name: str | None = None) -> AgentTool:
    """An ``AgentTool`` for one MCP tool object (``{"name", "description", "inputSchema"}``)."""
    original = str(spec["name"])
    return AgentTool(
        name=name or sanitize_tool_name(original),
        description=str(spec.get("description") or spec.get("title") or ""),
        input_schema=normalize_input_schema(spec.get("inputSchema")),
        execute=MCPToolExecutor(client, original),
    )


class MCPToolset:
    """The tools of several MCP servers, kept in a ``ToolRegistry``.

    Args:
        clients: the servers.
        registry: where the tools are registered (local tools may live there too).
        on_change: called with ``(added_names, removed_names)`` after a refresh
            that changed something.
        on_error: called with ``(client, exception)`` when a server cannot be listed.

    Thread safety: ``refresh`` may be called from any thread.
    """

    def __init__(
        self,
        clients: Iterable[MCPClient],
        registry: ToolRegistry,
        *,
        on_change: Callable[[list[str], list[str]], None] | None = None,
        on_error: Callable[[MCPClient, Exception], None] | None = None,
    ) -> None:
        self.clients = list(clients)
        self.registry = registry
        self.on_change = on_change
        self.on_error = on_error
        self._names: dict[int, list[str]] = {}  # id(client) -> registered names
        self._lock = threading.Lock()

    def _stale(self, client: MCPClient) -> bool:
        return id(client) not in self._names or client.tools_changed.is_set()

    def refresh(self, *, force: bool = False) -> tuple[list[str], list[str]]:
        """List the tools of every server that is new, changed, or all with ``force``.

        Returns:
            ``(added, removed)`` tool names as the model sees them.
        """
        added: list[str] = []
        removed: list[str] = []
        with self._lock:
            for client in self.clients:
                if not (force or self._stale(client)):
                    continue
                try:
                    specs = client.list_tools()
                except MCPError as exc:
                    logger.warning("listing tools of %s failed: %s", client.name, exc)
                    if self.on_error is not None:
                        self.on_error(client, exc)
                    continue
                old = set(self._names.get(id(client), []))
                for name in old:
                    self.registry.remove(name)
                names = []
                for spec in specs:
                    name = sanitize_tool_name(str(spec["name"]))
                    if name in self.registry:  # another server (or a local tool) has it
                        name = sanitize_tool_name(f"{client.name}_{spec['name']}")
                    try:
                        self.registry.add(mcp_tool(client, spec, name=name), replace=True)
                    except Exception as exc:  # a schema jsonschema rejects: skip this tool only
                        logger.warning("skipping MCP tool %r of %s: %s", spec.get("name"), client.name, exc)
                        continue
                    names.append(name)
                self._names[id(client)] = names
                added += sorted(set(names) - old)
                removed += sorted(old - set(names))
        if (added or removed) and self.on_change is not None:
            self.on_change(added, removed)
        return added, removed

    def describe(self) -> list[dict[str, str]]:
        """``[{"name", "description", "server"}]`` for every MCP tool registered."""
        out = []
        for client in self.clients:
            for name in self._names.get(id(client), []):
                found = self.registry.get(name)
                if found is not None:
                    out.append({"name": name, "description": found.description, "server": client.name})
        return out

    def list_tools_tool(self) -> AgentTool:
        """The builtin ``list_tools`` tool: re-lists every server and returns all tools."""

        def execute(tool_call_id: str, arguments: dict[str, Any], abort_event: threading.Event) -> Any:
            self.refresh(force=True)
            return [
                {"name": t.name, "description": t.description.split("\n", 1)[0]}
                for t in self.registry
            ]

        return AgentTool(
            name="list_tools",
            description="List every tool available now (asks the MCP servers again).",
            input_schema={"type": "object", "properties": {}},
            execute=execute,
        )
