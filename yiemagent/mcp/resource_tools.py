"""Resources offered to the model: attach one to a user message, or let the model read one with a tool.

::

    parts = attach_resource(client, "file:///notes.txt")
    agent.ask(UserMessage([TextContent("Summarise this:"), *parts]))   # text and images for the model

    agent.tools.add(agent.mcp.read_resource_tool())          # opt-in builtin tool ``read_resource``

Contents become parts as embedded resources in tool results do
(``yiemagent.mcp.results.resource_part``): text under a ``[resource <uri>
<mimeType>]`` line, image blobs as images, text-type blobs decoded, other
blobs a line naming URI, type and size. Text from the server is untrusted:
it reaches the model through the outbound text policy (``json`` boundary of
the model request, ``yiemagent.textpolicy``) like every tool result, and is
capped (``max_chars``).

Spec: MCP 2025-11-25, "Resources" (``resources/read``, Resource Contents;
"applications could ... allow users to select resources to include, or let
the model decide").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from .._internal.checks import check_int, check_timeout
from .._internal.cuts import cut_by
from ..exceptions import ConfigError, MCPError, MCPRPCError
from ..messages import ImageContent, TextContent
from ..tools import AgentTool, AgentToolResult, cap_result
from .client import MCPClient
from .results import DEFAULT_MAX_RESULT_CHARS, header_field, resource_part

__all__ = ["attach_resource", "read_resource_tool"]


def attach_resource(
    client: MCPClient, uri: str, *, max_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    timeout_seconds: float | None = None,
) -> list[TextContent | ImageContent]:
    """Read ``uri`` from ``client`` and return content parts for a ``UserMessage``.

    Args:
        client: the server's client.
        uri: the resource's URI.
        max_chars: characters (text plus image data) kept; beyond it text is
            cut and a last part says ``[truncated: ...]``. None: no cap.
        timeout_seconds: seconds the read may take; None: the client's default.

    Returns:
        One part per content item (``TextContent`` or ``ImageContent``), in order.

    Raises:
        ConfigError: ``uri`` is not a non-empty str, ``max_chars`` is not None
            or an int >= 1, ``timeout_seconds`` is not None or a number > 0.
        MCPRPCError: the server refused (e.g. an unknown URI, -32602 / -32002).
        MCPError: the server could not be reached or answered no contents.
    """
    check_int("max_chars", max_chars, minimum=1, optional=True)
    contents = client.read_resource(uri, timeout_seconds=timeout_seconds)
    capped = cap_result(AgentToolResult([resource_part(item) for item in contents]), max_chars)
    return list(capped.content)


READ_RESOURCE_DESCRIPTION = (
    "Read one resource of an MCP server by its URI (a URI the user gave, or one from a resource link in a "
    "tool result) and return its contents."
)


def read_resource_tool(
    clients: Sequence[MCPClient] | Callable[[], Sequence[MCPClient]], *,
    max_chars: int | None = DEFAULT_MAX_RESULT_CHARS, timeout_seconds: float | None = None,
    name: str = "read_resource",
) -> AgentTool:
    """The builtin tool ``read_resource(uri, server?)``: the model reads one resource.

    Args:
        clients: the servers it may read from (or a function giving them now).
        max_chars: cap of each result the model sees (as for tool results).
        timeout_seconds: seconds each read may take; None: the client's default.
        name: the tool's name.

    Returns:
        An ``AgentTool`` taking ``{"uri": str, "server"?: str}``; ``server``
        (a client's ``name``) is needed only with several servers. It is
        read-only (``annotations`` ``readOnlyHint``, ``idempotent``). A failed
        read (unknown server or URI, unreachable server) is an error result
        the model can read, never an exception.

    Raises:
        ConfigError: ``max_chars`` is not None or an int >= 1,
            ``timeout_seconds`` not None or a number > 0, ``clients`` neither
            a list nor a function.
    """
    check_int("max_chars", max_chars, minimum=1, optional=True)
    check_timeout(timeout_seconds)
    if not isinstance(clients, Sequence) and not callable(clients):
        raise ConfigError(f"clients must be a list of MCPClient or a function giving one, not {type(clients).__name__}")

    def servers() -> Sequence[MCPClient]:
        return clients() if callable(clients) else clients

    def execute(tool_call_id: str, arguments: dict[str, Any], abort_event: threading.Event) -> AgentToolResult:
        uri = str(arguments.get("uri", ""))
        wanted = arguments.get("server")
        found = [c for c in servers() if wanted in (None, "", c.name)]
        if len(found) != 1:
            names = ", ".join(c.name for c in servers()) or "none"
            why = "name one with 'server'" if len(found) > 1 else f"no MCP server named {wanted!r}"
            return AgentToolResult.error(f"read_resource: {why}; servers: {names}.")
        try:
            with cut_by(abort_event):  # a read begun after the run was aborted is not sent
                parts = attach_resource(found[0], uri, max_chars=max_chars, timeout_seconds=timeout_seconds)
        except ConfigError as exc:  # e.g. an empty uri from the model: nothing was sent
            return AgentToolResult.error(f"read_resource: {exc}")
        except MCPRPCError as exc:
            return AgentToolResult.error(f"read_resource {uri!r} on {found[0].name}: JSON-RPC error {exc.code}: "
                                         f"{exc.message}")
        except MCPError as exc:
            return AgentToolResult.error(f"read_resource {uri!r} on {found[0].name} failed: {exc}")
        return AgentToolResult(parts or [TextContent(f"[resource {header_field(uri)}: no contents]")])

    return AgentTool(
        name=name,
        description=READ_RESOURCE_DESCRIPTION,
        input_schema={"type": "object", "required": ["uri"], "properties": {
            "uri": {"type": "string", "description": "The resource URI, e.g. file:///notes.txt"},
            "server": {"type": "string", "description": "The MCP server's name (needed with several servers)."},
        }},
        execute=execute,
        idempotent=True,
        annotations={"readOnlyHint": True, "title": "Read a resource"},
    )
