"""yiemagent: a synchronous, thread-based AI-agent framework with an MCP client.

::

    from yiemagent import Agent, openai_chat, tool

    @tool
    def add(a: int, b: int) -> int:
        '''Add two integers.'''
        return a + b

    agent = Agent(openai_chat("http://127.0.0.1:8080/v1", "my-model"), tools=[add])
    print(agent.ask("What is 2 + 3?")["content"])
"""

import logging
import typing as _typing

from .__version__ import __version__
from ._internal.lazy import lazy_exports as _lazy_exports
from .exceptions import (
    AgentBusyError,
    AgentClosedError,
    AgentError,
    ApprovalError,
    BranchConflictError,
    BranchError,
    ConfigError,
    FormatError,
    InvalidRequestError,
    LLMConnectionError,
    LLMError,
    LLMTimeoutError,
    MaxTurnsExceeded,
    MCPAuthorizationError,
    MCPCallbackError,
    MCPError,
    MCPProtocolError,
    MCPRPCError,
    MCPSessionExpiredError,
    MCPTimeoutError,
    MCPTransportError,
    ModelRetry,
    StaleStateError,
    StoreError,
    ToolArgumentsError,
    ToolBlockedError,
    ToolCallFormatError,
    ToolError,
    ToolExecutionError,
    ToolNotFoundError,
    YiemagentError,
    YiemagentWarning,
)

if _typing.TYPE_CHECKING:  # the names for type checkers; at run time each loads on first use (below)
    from .agent import SHUTDOWN, Agent
    from .agent.streaming import SSE_HEADERS, AgentStream, event_to_dict, sse_events
    from .context.usage_limits import UsageLimits
    from .loop import LoopConfig, RunResult, run_turns
    from .loop.events import Event, MessageUpdateEvent
    from .loop.journal import current_idempotency_key
    from .mcp import MCPClient
    from .mcp.config import MCPServerConfig, load_mcp_config
    from .messages import (
        AssistantMessage,
        ImageContent,
        ReasoningContent,
        SystemMessage,
        TextContent,
        ToolCall,
        ToolResultMessage,
        UserMessage,
        from_openai,
        to_openai,
    )
    from .messages.guard import RequestGuard
    from .messages.tool_calls import extract_tool_calls, parse_response
    from .models.adapters import litellm_chat, openai_client_chat
    from .models.constrained import ConstrainedToolCalls
    from .models.fallback import FallbackLLM, fallback_llm
    from .models.openai_chat import openai_chat
    from .output.answers import Answer, AnswerStatus
    from .output.typed_output import OutputSpec, output_spec
    from .store.base import ConversationStore
    from .store.postgres import PostgresStore
    from .store.sqlite import SQLiteStore
    from .tools import AgentTool, AgentToolResult, ToolRegistry, tool
    from .tools.approvals import unless_read_only
    from .tools.guardrails import Guardrail, GuardrailContext, GuardrailVerdict
    from .tools.hooks import (
        AfterToolCallResult,
        BeforeToolCallResult,
        ToolCallContext,
        approve_destructive_tools,
        ask_user,
        is_destructive,
    )
    from .tools.registry import FunctionTool

    from_openai_response = parse_response

_EXPORTS = {
    "SHUTDOWN": ".agent.inbox",
    "Agent": ".agent.agent",
    "SSE_HEADERS": ".agent.streaming",
    "AgentStream": ".agent.streaming",
    "event_to_dict": ".agent.streaming",
    "sse_events": ".agent.streaming",
    "UsageLimits": ".context.usage_limits",
    "LoopConfig": ".loop.config",
    "RunResult": ".loop.config",
    "run_turns": ".loop.run",
    "Event": ".loop.events",
    "MessageUpdateEvent": ".loop.events",
    "current_idempotency_key": ".loop.journal",
    "MCPClient": ".mcp.client",
    "MCPServerConfig": ".mcp.config",
    "load_mcp_config": ".mcp.config",
    "AssistantMessage": ".messages.types",
    "ImageContent": ".messages.types",
    "ReasoningContent": ".messages.types",
    "SystemMessage": ".messages.types",
    "TextContent": ".messages.types",
    "ToolCall": ".messages.types",
    "ToolResultMessage": ".messages.types",
    "UserMessage": ".messages.types",
    "from_openai": ".messages.openai",
    "to_openai": ".messages.openai",
    "RequestGuard": ".messages.guard",
    "extract_tool_calls": ".messages.tool_calls",
    "parse_response": ".messages.tool_calls",
    "from_openai_response": ".messages.tool_calls:parse_response",
    "litellm_chat": ".models.adapters",
    "openai_client_chat": ".models.adapters",
    "ConstrainedToolCalls": ".models.constrained",
    "FallbackLLM": ".models.fallback",
    "fallback_llm": ".models.fallback",
    "openai_chat": ".models.openai_chat",
    "Answer": ".output.answers",
    "AnswerStatus": ".output.answers",
    "OutputSpec": ".output.typed_output",
    "output_spec": ".output.typed_output",
    "ConversationStore": ".store.base",
    "PostgresStore": ".store.postgres",
    "SQLiteStore": ".store.sqlite",
    "AgentTool": ".tools.agent_tool",
    "AgentToolResult": ".tools.results",
    "ToolRegistry": ".tools.registry",
    "tool": ".tools.decorator",
    "FunctionTool": ".tools.decorator",
    "unless_read_only": ".tools.approvals",
    "Guardrail": ".tools.guardrails",
    "GuardrailContext": ".tools.guardrails",
    "GuardrailVerdict": ".tools.guardrails",
    "AfterToolCallResult": ".tools.hooks",
    "BeforeToolCallResult": ".tools.hooks",
    "ToolCallContext": ".tools.hooks",
    "approve_destructive_tools": ".tools.hooks",
    "ask_user": ".tools.hooks",
    "is_destructive": ".tools.hooks",
}
"""Public name -> the module that defines it (``".module:name"`` for another name there): each is imported
on first use (PEP 562), so ``import yiemagent`` loads neither the stores, the MCP client, OAuth nor the loop
until they are used. Type checkers read the imports above."""


__all__ = [
    "SHUTDOWN",
    "SSE_HEADERS",
    "AfterToolCallResult",
    "Agent",
    "AgentBusyError",
    "AgentClosedError",
    "AgentError",
    "AgentStream",
    "AgentTool",
    "AgentToolResult",
    "Answer",
    "AnswerStatus",
    "ApprovalError",
    "AssistantMessage",
    "BeforeToolCallResult",
    "BranchConflictError",
    "BranchError",
    "ConfigError",
    "ConstrainedToolCalls",
    "ConversationStore",
    "Event",
    "FallbackLLM",
    "FormatError",
    "FunctionTool",
    "Guardrail",
    "GuardrailContext",
    "GuardrailVerdict",
    "ImageContent",
    "InvalidRequestError",
    "LLMConnectionError",
    "LLMError",
    "LLMTimeoutError",
    "LoopConfig",
    "MCPAuthorizationError",
    "MCPCallbackError",
    "MCPClient",
    "MCPError",
    "MCPProtocolError",
    "MCPRPCError",
    "MCPServerConfig",
    "MCPSessionExpiredError",
    "MCPTimeoutError",
    "MCPTransportError",
    "MaxTurnsExceeded",
    "MessageUpdateEvent",
    "ModelRetry",
    "OutputSpec",
    "PostgresStore",
    "ReasoningContent",
    "RequestGuard",
    "RunResult",
    "SQLiteStore",
    "StaleStateError",
    "StoreError",
    "SystemMessage",
    "TextContent",
    "ToolArgumentsError",
    "ToolBlockedError",
    "ToolCall",
    "ToolCallContext",
    "ToolCallFormatError",
    "ToolError",
    "ToolExecutionError",
    "ToolNotFoundError",
    "ToolRegistry",
    "ToolResultMessage",
    "UsageLimits",
    "UserMessage",
    "YiemagentError",
    "YiemagentWarning",
    "__version__",
    "approve_destructive_tools",
    "ask_user",
    "current_idempotency_key",
    "event_to_dict",
    "extract_tool_calls",
    "fallback_llm",
    "from_openai",
    "from_openai_response",
    "is_destructive",
    "litellm_chat",
    "load_mcp_config",
    "openai_chat",
    "openai_client_chat",
    "output_spec",
    "parse_response",
    "run_turns",
    "sse_events",
    "to_openai",
    "tool",
    "unless_read_only",
]

logging.getLogger("yiemagent").addHandler(logging.NullHandler())

from ._internal import moved as _moved  # noqa: E402
from .textpolicy import install_log_policy as _install_log_policy  # noqa: E402

_moved.install()  # old import paths (yiemagent.compaction, ...) keep working with a DeprecationWarning
_install_log_policy()  # every yiemagent log line, of modules loaded now or later: secrets ***, control chars escaped

# ``yiemagent.Agent`` and the other names above on first use; ``yiemagent.compaction`` and the other moved
# modules with a ``DeprecationWarning``; ``yiemagent.mcp`` and the other subpackages as attributes.
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, fallback=_moved.moved_attribute)
