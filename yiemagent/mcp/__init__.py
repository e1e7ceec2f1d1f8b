"""MCP (Model Context Protocol) client: transports, ``MCPClient``, and the tool bridge."""

from .bridge import MCPToolset, mcp_tool, normalize_input_schema, result_to_tool_result, sanitize_tool_name
from .client import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, MCPClient
from .http import HTTPTransport
from .sse import SSEEvent, SSEParser
from .stdio import StdioTransport
from .transport import Transport

__all__ = [
    "HTTPTransport",
    "LATEST_PROTOCOL_VERSION",
    "MCPClient",
    "MCPToolset",
    "SSEEvent",
    "SSEParser",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "StdioTransport",
    "Transport",
    "mcp_tool",
    "normalize_input_schema",
    "result_to_tool_result",
    "sanitize_tool_name",
]
