"""Bridge: MCP tools as ``AgentTool`` objects (results: ``yiemagent.mcp.results``).

``MCPToolset`` discovers the tools of one or more ``MCPClient``s at run time,
registers them in a ``ToolRegistry`` and keeps them current (re-listing after
``notifications/tools/list_changed``, which it listens for in both eras when the
server advertises ``tools.listChanged``: ``MCPClient.follow_tool_changes``). Each tool's ``execute`` sends
``tools/call`` with the tool's original name; the name the model sees is
sanitised to ``^[a-zA-Z0-9_-]{1,64}$`` and made unique across servers.

Spec: MCP 2025-11-25, "Tools" (``inputSchema``, ``content``, ``isError``,
``structuredContent``).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .._internal.checks import check_int, check_timeout
from .._internal.cuts import cut_by
from ..exceptions import ConfigError, MCPError, MCPRPCError, MCPTimeoutError
from ..messages import TextContent
from ..textpolicy import boundary, display_text
from ..tools import AgentTool, AgentToolResult, ToolRegistry, report_progress
from .limits import MCPLimits, truncate_text
from .results import DEFAULT_MAX_RESULT_CHARS, result_to_tool_result
from .schema import normalize_input_schema, schema_problem
from .tool_metadata import OutputCheck, tool_annotations, tool_icons, tool_problem

if TYPE_CHECKING:  # annotations only: the client (and requests) load with the first MCP server
    from .client import MCPClient

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

ERROR_CHARS = 500
"""Characters of an error message kept in ``unavailable()`` and ``status()``."""


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


class MCPToolExecutor:
    """``execute`` of an MCP tool: one ``tools/call``; failures become error results.

    Args:
        client: the server's client.
        tool_name: the tool's original name, sent on the wire as is.
        timeout_seconds: seconds the call may take; None uses the client's
            default. A call that takes longer becomes an error result (C21).
        max_result_chars: cap of the result the model sees (see
            ``result_to_tool_result``); None: no cap.
        limits: caps of what a result's ``details`` keeps; None: ``MCPLimits()``.
        output_schema: the tool's ``outputSchema`` (checked by ``tool_problem``),
            or None. A result that is not ``isError`` must then carry
            ``structuredContent`` conforming to it; one that does not becomes
            an error result naming the schema errors (logged at WARNING; the
            server's result is kept in ``details["original_result"]``).
    """

    def __init__(
        self,
        client: MCPClient,
        tool_name: str,
        timeout_seconds: float | None = None,
        *,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
        limits: MCPLimits | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> None:
        check_timeout(timeout_seconds)
        check_int("max_result_chars", max_result_chars, minimum=1, optional=True)
        self.client = client
        self.tool_name = tool_name
        self.timeout_seconds = timeout_seconds
        self.max_result_chars = max_result_chars
        self.limits = limits
        self.output_check = OutputCheck(tool_name, output_schema) if output_schema is not None else None

    def __call__(self, tool_call_id: str, arguments: dict[str, Any], abort_event: threading.Event) -> AgentToolResult:
        """Send ``tools/call``; MCP errors become error results (never raised)."""
        try:
            with cut_by(abort_event):  # a call begun after the run was aborted is not sent
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
        converted = result_to_tool_result(result, max_chars=self.max_result_chars, limits=self.limits)
        problem = self.output_check.problem(result) if self.output_check is not None else None
        if problem is None:
            return converted
        logger.warning("%s: tool %r: %s", self.client.name, self.tool_name, problem)
        # validate, annotate, never hide: the model gets what the server answered, with the finding beside it
        # (claude-code #14465: a text-only success of a tool with an outputSchema had reached the model)
        note = TextContent(f"[Note: this result of MCP tool {self.tool_name!r} does not match the tool's "
                           f"outputSchema ({problem}); it is shown as the server sent it.]")
        details = converted.details if isinstance(converted.details, dict) else {}
        return AgentToolResult([*converted.content, note], is_error=converted.is_error,
                               details={**details, "output_schema_error": problem}, usage=converted.usage)

    def __repr__(self) -> str:
        return f"MCPToolExecutor(server={self.client.name!r}, tool={self.tool_name!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MCPToolExecutor)
            and other.client is self.client
            and other.tool_name == self.tool_name
            and other.timeout_seconds == self.timeout_seconds
            and other.max_result_chars == self.max_result_chars
            and (other.output_check and other.output_check.output_schema) ==
            (self.output_check and self.output_check.output_schema)
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
    limits: MCPLimits | None = None,
) -> AgentTool:
    """An ``AgentTool`` for one MCP tool object.

    Args:
        client: the server's client.
        spec: a ``tools/list`` entry, ``{"name", "description"?, "title"?, "inputSchema"?,
            "outputSchema"?, "annotations"?, "icons"?}``; annotations ``readOnlyHint``
            or ``idempotentHint`` true make the tool ``idempotent`` (run again
            after a crash); annotations, ``title`` and ``icons`` are kept on the
            ``AgentTool`` (``annotations`` is ``{}`` when the server sent none);
            ``outputSchema`` validates each result (``MCPToolExecutor``).
        name: the name the model sees; None sanitises ``spec["name"]``.
        timeout_seconds: seconds each call may take; None: the client's default.
        max_result_chars: cap of each result (see ``result_to_tool_result``).
        limits: the caps of ``yiemagent.mcp.limits``; None: ``MCPLimits()``.
            The description is cut to ``max_description_chars`` (ending
            ``…[truncated N chars]``).

    Returns:
        An ``AgentTool`` whose schema is ``normalize_input_schema(inputSchema)``
        and whose ``execute`` sends ``tools/call`` with the original name.

    Raises:
        ConfigError: the tool is over a limit that cannot be cut (name
            longer than ``max_tool_name_chars``, ``inputSchema`` over
            ``max_schema_chars`` or ``max_schema_depth``), or its definition
            is malformed (``tool_metadata.tool_problem``: no name, a
            non-object ``inputSchema``, bad ``annotations`` or ``outputSchema``).
    """
    limits = limits or MCPLimits()
    malformed = tool_problem(spec, limits)
    if malformed is not None:
        raise ConfigError(malformed)
    original = str(spec["name"])
    hints = tool_annotations(spec)
    if len(original) > limits.max_tool_name_chars:
        raise ConfigError(f"tool name of {len(original):,} characters, over {limits.max_tool_name_chars}")
    problem = schema_problem(spec.get("inputSchema"), limits)
    if problem is not None:
        raise ConfigError(problem)
    description = spec.get("description") or spec.get("title") or ""
    return AgentTool(
        name=name or sanitize_tool_name(original),
        description=truncate_text(str(description), limits.max_description_chars),
        input_schema=normalize_input_schema(spec.get("inputSchema")),
        execute=MCPToolExecutor(client, original, timeout_seconds, max_result_chars=max_result_chars,
                                limits=limits, output_schema=spec.get("outputSchema")),
        idempotent=hints.get("readOnlyHint") is True or hints.get("idempotentHint") is True,
        annotations=hints,
        title=spec["title"] if isinstance(spec.get("title"), str) else None,
        icons=tool_icons(spec) or None,
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
        limits: caps on tools and results (``yiemagent.mcp.limits``); None:
            ``MCPLimits()``. A tool over a cap that cannot be cut (name,
            schema), a malformed tool definition (no name, a non-object
            ``inputSchema``, bad ``annotations`` or ``outputSchema``) and the
            tools past ``max_tools`` of one server are not registered: each is
            logged at WARNING and listed in ``skipped``; the others are usable.

    Attributes:
        skipped: ``[{"server": name, "tool": original name (first 100
            characters), "reason": str}]`` of the last listing of each server.

    Reachability: a server whose listing failed (refused, command not found,
    not an MCP server, handshake timeout) is *unavailable* until a later
    listing succeeds; it is listed again at every ``refresh``.
    ``unavailable()`` and ``status()`` say which and why.

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
        limits: MCPLimits | None = None,
    ) -> None:
        self.clients = list(clients)
        self.limits = limits or MCPLimits()
        self._skipped: dict[int, list[dict[str, str]]] = {}  # id(client) -> tools not registered
        self._errors: dict[int, Exception] = {}  # id(client) -> why its last listing failed
        self.registry = registry
        self.on_change = on_change
        self.on_error = on_error
        self.call_timeout_seconds = call_timeout_seconds
        self.max_result_chars = max_result_chars
        self._names: dict[int, list[str]] = {}  # id(client) -> registered names
        self._lock = threading.Lock()
        self._listing: threading.Thread | None = None  # list_in_background's thread, while it runs

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

    @property
    def skipped(self) -> list[dict[str, str]]:
        """The tools not registered at the last listing of each server, and why."""
        return [entry for client in self.clients for entry in self._skipped.get(id(client), [])]

    def _skip(self, client: MCPClient, spec: Any, reason: str) -> None:
        name = str(spec.get("name") if isinstance(spec, dict) else spec)[:100]
        logger.warning("skipping MCP tool %r of %s: %s", name, client.name, reason)
        self._skipped.setdefault(id(client), []).append({"server": client.name, "tool": name, "reason": reason})

    def _stale(self, client: MCPClient) -> bool:
        return id(client) not in self._names or id(client) in self._errors or client.tools_changed.is_set()

    def unavailable(self) -> list[dict[str, str]]:
        """``[{"server": name, "error": message}]`` for each server whose last listing failed (``[]`` if none).

        ``error`` is the ``MCPError`` message, cut to ``ERROR_CHARS`` characters.
        """
        return [unavailable_entry(client.name, self._errors[id(client)])
                for client in self.clients if id(client) in self._errors]

    def list_in_background(self, thread_name: str = "yiemagent-mcp-list") -> None:
        """Start ``refresh()`` on a daemon thread (``Agent.start`` does); servers read ``connecting`` meanwhile.

        A run's own ``refresh`` waits for it (the toolset's lock) and lists nothing twice. A failure
        is recorded as usual (``unavailable``); nothing is raised.
        """
        def run() -> None:
            try:
                self.refresh()
            except Exception:  # a bug of ours or of a callback: the run's own refresh lists again
                logger.exception("listing the MCP servers in the background failed")
            finally:
                self._listing = None

        thread = threading.Thread(target=run, name=thread_name, daemon=True)
        self._listing = thread
        thread.start()

    def status(self) -> list[dict[str, Any]]:
        """One dict per server, in order, for UIs (``yiemagent chat``, the demo).

        Shape: ``{"server": client.name, "state": "connected" | "unavailable"
        | "connecting" (being listed for the first time: ``Agent.start`` lists in
        the background) | "not_connected" (never listed yet: an agent not
        started lists before its first model call), "error": str | None (the message
        when unavailable), "tools": [names the model sees], "server_info":
        {"name", "version"} ({} before the handshake), "skipped": [tools over
        a limit, see ``skipped``]}``.
        """
        out = []
        for client in self.clients:
            error = self._errors.get(id(client))
            state = "unavailable" if error is not None else (
                "connected" if id(client) in self._names else
                "connecting" if self._listing is not None else "not_connected")
            out.append({
                "server": client.name, "state": state,
                "error": status_error_text(error) if error is not None else None,
                "tools": list(self._names.get(id(client), [])), "server_info": client.server_info,
                "skipped": list(self._skipped.get(id(client), [])),
            })
        return out

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
                    self._errors[id(client)] = exc
                    if self.on_error is not None:
                        self.on_error(client, exc)
                    continue
                self._errors.pop(id(client), None)
                self._follow(client)
                old = set(self._names.get(id(client), []))
                for name in old:
                    self.registry.remove(name)
                names: list[str] = []
                self._skipped[id(client)] = []
                for entry in getattr(specs, "skipped", []):  # items the listing could not even name
                    self._skip(client, entry["item"], entry["reason"])
                for spec in specs:
                    if len(names) >= self.limits.max_tools:
                        self._skip(client, spec, f"over max_tools={self.limits.max_tools} for one server")
                        continue
                    try:
                        name = self._free_name(client, str(spec["name"])[: self.limits.max_tool_name_chars + 1])
                        tool = self.registry.add(mcp_tool(
                            client, spec, name=name, timeout_seconds=self.call_timeout_seconds,
                            max_result_chars=self.max_result_chars, limits=self.limits))
                    except Exception as exc:  # over a limit, or a schema jsonschema rejects: skip this tool only
                        self._skip(client, spec, str(exc))
                        continue
                    names.append(tool.name)
                self._names[id(client)] = names
                added += sorted(set(names) - old)
                removed += sorted(old - set(names))
        if (added or removed) and self.on_change is not None:
            self.on_change(added, removed)
        return added, removed

    def _follow(self, client: MCPClient) -> None:
        """The toolset depends on the server's tool list: hear of its changes (``MCPClient.follow_tool_changes``).

        A failure to open the stream is logged; the tools just listed stay usable.
        """
        try:
            client.follow_tool_changes()
        except MCPError as exc:
            logger.warning("%s: cannot listen for tool list changes: %s", client.name, exc)

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
            with cut_by(abort_event):
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

    def read_resource_tool(self, *, timeout_seconds: float | None = None) -> AgentTool:
        """The builtin ``read_resource(uri, server?)`` tool over this toolset's servers (opt-in).

        ``agent.tools.add(agent.mcp.read_resource_tool())`` lets the model read
        a resource it was told about (a resource link, a URI the user gave);
        see ``yiemagent.mcp.resource_tools.read_resource_tool``. Results are
        capped at ``max_result_chars`` like tool results.
        """
        from .resource_tools import read_resource_tool

        return read_resource_tool(lambda: self.clients, max_chars=self.max_result_chars,
                                  timeout_seconds=timeout_seconds)


@boundary("mcp_unavailable", "display")
def unavailable_entry(server: str, error: BaseException | str) -> dict[str, str]:
    """One ``mcp_unavailable`` entry ``{"server", "error"}`` (answers, events, the Flask example's stream).

    ``error`` follows the outbound text policy's ``display`` rule
    (``yiemagent.textpolicy``): a ``${VAR}`` secret in a URL path or a stdio
    command, or printed by a failing server on stderr, is ``***``.
    """
    return {"server": display_text(server), "error": status_error_text(error)}


@boundary("mcp_status", "display")
def status_error_text(error: BaseException | str) -> str:
    """The ``error`` text of ``mcp_status()`` and ``mcp_unavailable``: cut to ``ERROR_CHARS``, secrets ``***``."""
    return truncate_text(display_text(str(error)), ERROR_CHARS)

