"""MCP (Model Context Protocol) client: transports, ``MCPClient``, and the tool bridge."""

from ..formats.sse import SSEEvent, SSEParser
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
from .elicitation import answer_elicitation, coerce_field, elicitation_errors, form_fields
from .http import HTTPTransport
from .limits import MCPLimits
from .prompts import prompt_messages
from .resource_tools import attach_resource, read_resource_tool
from .results import content_part, resource_part
from .sampling import LLMSampler, sampling_request_to_chat, sampling_result_from_reply
from .server_messages import RequestRefused
from .stdio import StdioTransport
from .tool_listing import Listing
from .transport import Transport

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "ClientCallbacks",
    "HTTPTransport",
    "LLMSampler",
    "Listing",
    "MCPClient",
    "MCPLimits",
    "MCPToolExecutor",
    "MCPToolset",
    "RequestRefused",
    "SSEEvent",
    "SSEParser",
    "StdioTransport",
    "Transport",
    "answer_elicitation",
    "attach_resource",
    "coerce_field",
    "content_part",
    "elicitation_errors",
    "form_fields",
    "mcp_tool",
    "normalize_input_schema",
    "prompt_messages",
    "read_resource_tool",
    "resource_part",
    "result_to_tool_result",
    "roots_result",
    "sampling_request_to_chat",
    "sampling_result_from_reply",
    "sanitize_tool_name",
]
