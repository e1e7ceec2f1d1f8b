"""MCP (Model Context Protocol) client: transports, ``MCPClient``, and the tool bridge."""

from ..sse import SSEEvent, SSEParser
from .bridge import (
    DEFAULT_MAX_RESULT_CHARS,
    MCPToolExecutor,
    MCPToolset,
    mcp_tool,
    normalize_input_schema,
    result_to_tool_result,
    sanitize_tool_name,
)
from .client import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, MCPClient
from .http import HTTPTransport
from .limits import MCPLimits
from .prompts import prompt_messages
from .resource_tools import attach_resource, read_resource_tool
from .results import content_part, resource_part
from .stdio import StdioTransport
from .tool_listing import Listing
from .transport import Transport

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "HTTPTransport",
    "Listing",
    "MCPClient",
    "MCPLimits",
    "MCPToolExecutor",
    "MCPToolset",
    "SSEEvent",
    "SSEParser",
    "StdioTransport",
    "Transport",
    "attach_resource",
    "content_part",
    "mcp_tool",
    "normalize_input_schema",
    "prompt_messages",
    "read_resource_tool",
    "resource_part",
    "result_to_tool_result",
    "sanitize_tool_name",
]
