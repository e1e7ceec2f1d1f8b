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
from .schema import normalize_input_schema

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
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


DEFAULT_MAX_RESULT_CHARS = 100_000
"""Characters of a tool result the model sees by default (text plus image data)."""


def _size_of(data: Any) -> int:
    """Decoded bytes of base64 ``data`` (approximate: 3/4 of its length)."""
    return len(data) * 3 // 4 - (data.endswith("=") + data.endswith("==")) if isinstance(data, str) else 0


def _label(*parts: Any) -> str:
    return " ".join(str(p) for p in parts if p not in (None, ""))


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
        mime = block.get("mimeType") or "unknown"
        return TextContent(f"[{_label('audio', mime)}, {_size_of(block.get('data'))} bytes]")
    if kind == "resource" and isinstance(block.get("resource"), dict):
        resource = block["resource"]
        uri, mime = resource.get("uri", ""), resource.get("mimeType", "")
        if isinstance(resource.get("text"), str):
            return TextContent(f"[{_label('resource', uri, mime)}]\n{resource['text']}")
        return TextContent(f"[{_label('resource', uri, mime)}, {_size_of(resource.get('blob'))} bytes]")
    if kind == "resource_link":
        title = block.get("title") or block.get("name") or ""
        text = f"[{_label('resource link', block.get('uri', ''), block.get('mimeType'), title)}]"
        description = block.get("description")
        return TextContent(f"{text} {description}" if isinstance(description, str) and description else text)
    return TextContent(f"[unsupported content type {kind!r}]")


def _cap(parts: list[TextContent | ImageContent], max_chars: int) -> tuple[list[TextContent | ImageContent], int]:
    """Parts cut to ``max_chars`` characters (text, and image data); returns them and the full size."""
    total = sum(len(p.text) if isinstance(p, TextContent) else len(p.data or p.url) for p in parts)
    if total <= max_chars:
        return parts, total
    budget = max_chars
    kept: list[TextContent | ImageContent] = []
    for part in parts:
        if isinstance(part, TextContent):
            if budget > 0:
                kept.append(TextContent(part.text[:budget]))
            budget -= len(part.text)
        else:
            size = len(part.data or part.url)
            if size <= budget:
                kept.append(part)
            else:
                kept.append(TextContent(f"{part.placeholder()} (left out: over the size cap)"))
            budget -= size
    kept.append(TextContent(
        f"[truncated: the tool result has {total:,} characters; the first {max_chars:,} are shown]"
    ))
    return kept, total


def result_to_tool_result(
    result: dict[str, Any], *, max_chars: int | None = DEFAULT_MAX_RESULT_CHARS
) -> AgentToolResult:
    """Turn an MCP ``tools/call`` result into an ``AgentToolResult``.

    ``isError`` -> ``is_error`` (C16); text blocks -> text; images -> image
    parts (a short placeholder in ``.text``); embedded text resources -> their
    text under a ``[resource <uri> <mime>]`` line; blobs, audio and resource
    links -> short placeholders naming URI, type and size (C18); an empty
    ``content`` with ``structuredContent`` -> its JSON text (C17).

    Args:
        result: ``{"content": [...], "isError"?: bool, "structuredContent"?: {...}, "_meta"?: {...}}``.
        max_chars: characters (text plus image base64) the model may see;
            beyond it text is cut, images are left out, and a last text part
            says ``[truncated: the tool result has N characters; the first
            M are shown]``. None: no cap.

    Returns:
        ``AgentToolResult``; ``details`` keeps ``structuredContent`` and
        ``_meta``, plus ``{"truncated": {"chars": N, "max_chars": M}}`` when cut.

    Spec: MCP 2025-11-25, "Tools" ("Tool Result").
    """
    blocks = result.get("content") if isinstance(result.get("content"), list) else []
    parts = [_content_part(b) for b in blocks]
    structured = result.get("structuredContent")
    if structured is not None and not any(
        isinstance(p, ImageContent) or (isinstance(p, TextContent) and p.text) for p in parts
    ):
        parts = [TextContent(json.dumps(structured, ensure_ascii=False))]
    details = {k: result[k] for k in ("structuredContent", "_meta") if k in result}
    if max_chars is not None:
        capped, total = _cap(parts, max(0, max_chars))
        if capped is not parts:
            parts = capped
            details["truncated"] = {"chars": total, "max_chars": max_chars}
    return AgentToolResult(parts, is_error=bool(result.get("isError")), details=details or None)


class MCPToolExecutor:
    """``execute`` of an MCP tool: one ``tools/call``; failures become error results.

    Args:
        client: the server's client.
        tool_name: the tool's original name, sent on the wire as is.
        timeout_seconds: seconds the call may take; None uses the client's
            default. A call that takes longer becomes an error result (C21).
        max_result_chars: cap of the result the model sees (see
            ``result_to_tool_result``); None: no cap.
    """

    def __init__(
        self,
        client: MCPClient,
        tool_name: str,
        timeout_seconds: float | None = None,
        *,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        self.client = client
        self.tool_name = tool_name
        self.timeout_seconds = timeout_seconds
        self.max_result_chars = max_result_chars

    def __call__(self, tool_call_id: str, arguments: dict[str, Any], abort_event: threading.Event) -> AgentToolResult:
        """Send ``tools/call``; MCP errors become error results (never raised)."""
        try:
            result = self.client.call_tool(self.tool_name, arguments, timeout_seconds=self.timeout_seconds,
                                           progress_callback=report_progress)
        except MCPTimeoutError as exc:
            seconds = self.client.timeout_seconds if self.timeout_seconds is None else self.timeout_seconds
            return AgentToolResult.error(
                f"MCP tool {self.tool_name!r} timed out after {seconds:g}s ({exc}); it may still be running "
                "on the server", details={"error": exc},
            )
        except MCPRPCError as exc:
            return AgentToolResult.error(
                f"MCP tool {self.tool_name!r} failed: JSON-RPC error {exc.code}: {exc.message}",
                details={"error": exc},
            )
        except MCPError as exc:
            return AgentToolResult.error(f"MCP tool {self.tool_name!r} failed: {exc}", details={"error": exc})
        return result_to_tool_result(result, max_chars=self.max_result_chars)

    def __repr__(self) -> str:
        return f"MCPToolExecutor(server={self.client.name!r}, tool={self.tool_name!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MCPToolExecutor)
            and other.client is self.client
            and other.tool_name == self.tool_name
            and other.timeout_seconds == self.timeout_seconds
            and other.max_result_chars == self.max_result_chars
        )

    def __hash__(self) -> int:
        return hash((id(self.client), self.tool_name))


def mcp_tool(
    client: MCPClient,
    spec: dict[str, Any],
    *,
    name: str | None = None,
    timeout_seconds: float | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
) -> AgentTool:
    """An ``AgentTool`` for one MCP tool object.

    Args:
        client: the server's client.
        spec: a ``tools/list`` entry, ``{"name", "description"?, "title"?, "inputSchema"?}``.
        name: the name the model sees; None sanitises ``spec["name"]``.
        timeout_seconds: seconds each call may take; None: the client's default.
        max_result_chars: cap of each result (see ``result_to_tool_result``).

    Returns:
        An ``AgentTool`` whose schema is ``normalize_input_schema(inputSchema)``
        and whose ``execute`` sends ``tools/call`` with the original name.
    """
    original = str(spec["name"])
    return AgentTool(
        name=name or sanitize_tool_name(original),
        description=str(spec.get("description") or spec.get("title") or ""),
        input_schema=normalize_input_schema(spec.get("inputSchema")),
        execute=MCPToolExecutor(client, original, timeout_seconds, max_result_chars=max_result_chars),
    )


class MCPToolset:
    """The tools of several MCP servers, kept in a ``ToolRegistry``.

    Names: each tool is registered as ``sanitize_tool_name(name)``; if that is
    taken (by another server or a local tool), as
    ``sanitize_tool_name("<server name>_<name>")``, then with ``_2``, ``_3``...
    until unique. The wire always carries the server's original name;
    ``resolve(name)`` maps back.

    Args:
        clients: the servers; give each a distinct ``name`` (used as prefix).
        registry: where the tools are registered (local tools may live there too).
        on_change: called with ``(added_names, removed_names)`` after a refresh
            that changed something.
        on_error: called with ``(client, exception)`` when a server cannot be listed.
        call_timeout_seconds: seconds each ``tools/call`` may take; None uses
            each client's default.
        max_result_chars: cap of each tool result the model sees (see
            ``result_to_tool_result``); None: no cap.

    Thread safety: ``refresh`` may be called from any thread.
    """

    def __init__(
        self,
        clients: Iterable[MCPClient],
        registry: ToolRegistry,
        *,
        on_change: Callable[[list[str], list[str]], None] | None = None,
        on_error: Callable[[MCPClient, Exception], None] | None = None,
        call_timeout_seconds: float | None = None,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        self.clients = list(clients)
        self.registry = registry
        self.on_change = on_change
        self.on_error = on_error
        self.call_timeout_seconds = call_timeout_seconds
        self.max_result_chars = max_result_chars
        self._names: dict[int, list[str]] = {}  # id(client) -> registered names
        self._lock = threading.Lock()

    def _free_name(self, client: MCPClient, original: str) -> str:
        """A name for ``original`` of ``client`` that nothing in the registry has yet."""
        name = sanitize_tool_name(original)
        if name not in self.registry:
            return name
        candidate = sanitize_tool_name(f"{client.name}_{original}")
        count = 2
        while candidate in self.registry:
            candidate = sanitize_tool_name(f"{client.name}_{original}_{count}")
            count += 1
        return candidate

    def resolve(self, name: str) -> tuple[MCPClient, str] | None:
        """``(client, original tool name)`` of a registered MCP tool name, or None."""
        found = self.registry.get(name)
        execute = getattr(found, "execute", None)
        if isinstance(execute, MCPToolExecutor):
            return execute.client, execute.tool_name
        return None

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
                    name = self._free_name(client, str(spec["name"]))
                    try:
                        self.registry.add(mcp_tool(client, spec, name=name, timeout_seconds=self.call_timeout_seconds,
                                                   max_result_chars=self.max_result_chars))
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
                    original = getattr(found.execute, "tool_name", name)
                    out.append({"name": name, "description": found.description, "server": client.name,
                                "mcp_name": original})
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
