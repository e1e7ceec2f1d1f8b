"""MCP (Model Context Protocol) client: transports, ``MCPClient``, and the tool bridge."""

from typing import TYPE_CHECKING

from .._internal.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
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

_EXPORTS = {
    "SSEEvent": "..formats.sse",
    "SSEParser": "..formats.sse",
    "DEFAULT_MAX_RESULT_CHARS": ".bridge",
    "MCPToolExecutor": ".bridge",
    "MCPToolset": ".bridge",
    "mcp_tool": ".bridge",
    "normalize_input_schema": ".bridge",
    "result_to_tool_result": ".bridge",
    "sanitize_tool_name": ".bridge",
    "ClientCallbacks": ".callbacks",
    "roots_result": ".callbacks",
    "LATEST_PROTOCOL_VERSION": ".client",
    "SUPPORTED_PROTOCOL_VERSIONS": ".client",
    "MCPClient": ".client",
    "answer_elicitation": ".elicitation",
    "coerce_field": ".elicitation",
    "elicitation_errors": ".elicitation",
    "form_fields": ".elicitation",
    "HTTPTransport": ".http",
    "MCPLimits": ".limits",
    "prompt_messages": ".prompts",
    "attach_resource": ".resource_tools",
    "read_resource_tool": ".resource_tools",
    "content_part": ".results",
    "resource_part": ".results",
    "LLMSampler": ".sampling",
    "sampling_request_to_chat": ".sampling",
    "sampling_result_from_reply": ".sampling",
    "RequestRefused": ".server_messages",
    "StdioTransport": ".stdio",
    "Listing": ".tool_listing",
    "Transport": ".transport",
}

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

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)  # each name on first use (PEP 562)
