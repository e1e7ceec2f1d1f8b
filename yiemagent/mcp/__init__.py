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
from .callbacks import ClientCallbacks, roots_result
from .client import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, MCPClient
from .http import HTTPTransport
from .elicitation import answer_elicitation, coerce_field, elicitation_errors, form_fields
from .limits import MCPLimits
from .sampling import LLMSampler, sampling_request_to_chat, sampling_result_from_reply
from .server_messages import RequestRefused
from .stdio import StdioTransport
from .transport import Transport

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "ClientCallbacks",
    "HTTPTransport",
    "LLMSampler",
    "MCPClient",
    "MCPLimits",
    "MCPToolExecutor",
    "MCPToolset",
    "RequestRefused",
    "SSEEvent",
    "SSEParser",
    "StdioTransport",
    "answer_elicitation",
    "coerce_field",
    "elicitation_errors",
    "form_fields",
    "Transport",
    "mcp_tool",
    "normalize_input_schema",
    "result_to_tool_result",
    "roots_result",
    "sampling_request_to_chat",
    "sampling_result_from_reply",
    "sanitize_tool_name",
]
