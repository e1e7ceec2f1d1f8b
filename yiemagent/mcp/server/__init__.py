"""Serving tools, agents, resources and prompts over MCP, synchronously: WSGI (Flask, Django, gunicorn) and stdio.

``MCPServer`` (``server``) answers JSON-RPC messages; ``MCPServer.wsgi_app()``
(``wsgi``) serves Streamable HTTP as a PEP 3333 app, ``MCPServer.run_stdio()``
(``stdio``) serves stdin/stdout, and ``python -m yiemagent.mcp.server
module:server`` starts the stdio server from the command line (what a desktop
client's ``mcpServers`` entry runs). ``Resource``, ``ResourceTemplate``,
``Prompt``, ``PromptArgument`` (``catalog``) describe what is offered besides
tools; ``ToolReply`` (``content``) lets a tool answer with MCP content blocks;
``current_call()`` (``calls``) is the call running on this thread (progress,
log messages, the abort event, and asking the client: ``elicit``, ``sample``,
``list_roots``, ``ask`` with the requests of ``inputs``). Both protocol eras are
served by one app: 2025-11-25 (sessions; asking by back-channel requests) and
2026-07-28 (stateless, ``modern``; asking by ``input_required`` rounds,
``rounds``). The guide is docs/guides/serving.rst.

Spec: MCP 2025-11-25 and 2026-07-28 (server side).
"""

from typing import Any

from .calls import MemorySessions, RequestContext, ServedCall, ServerSession, current_call
from .catalog import Prompt, PromptArgument, Resource, ResourceTemplate
from .content import ToolReply
from .inputs import (
    InputLimits,
    InputUnavailable,
    InvalidInputResponse,
    MissingClientCapability,
    elicitation_request,
    roots_request,
    sampling_request,
)
from .server import MCPServer
from .wsgi import WSGIApp

__all__ = [
    "InputLimits",
    "InputUnavailable",
    "InvalidInputResponse",
    "MCPServer",
    "MemorySessions",
    "MissingClientCapability",
    "Prompt",
    "PromptArgument",
    "RequestContext",
    "Resource",
    "ResourceTemplate",
    "ServedCall",
    "ServerSession",
    "ToolReply",
    "WSGIApp",
    "current_call",
    "elicitation_request",
    "roots_request",
    "sampling_request",
]


def make_wsgi_app(server: MCPServer, **options: Any) -> WSGIApp:
    """``server.wsgi_app(**options)``: the WSGI app of ``server`` (options in ``WSGIApp``)."""
    return WSGIApp(server, **options)


__all__ += ["make_wsgi_app"]
