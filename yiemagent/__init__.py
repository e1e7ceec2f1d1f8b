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
from types import ModuleType as _ModuleType

from .__version__ import __version__
from .agent import SHUTDOWN, Agent
from .agent.streaming import SSE_HEADERS, AgentStream, event_to_dict, sse_events
from .context.usage_limits import UsageLimits
from .exceptions import (
    AgentBusyError,
    AgentClosedError,
    AgentError,
    ApprovalError,
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
    "ConfigError",
    "ConstrainedToolCalls",
    "ConversationStore",
    "Event",
    "FallbackLLM",
    "FormatError",
    "FunctionTool",
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
from .textpolicy import install_log_policy as _install_log_policy  # noqa: E402  (after every module made its logger)

_moved.install()  # old import paths (yiemagent.compaction, ...) keep working with a DeprecationWarning
_install_log_policy()  # every yiemagent log line: secrets ***, peer text's control characters escaped


def __getattr__(name: str) -> _ModuleType:
    """``yiemagent.compaction`` and the other moved modules, with a ``DeprecationWarning`` (PEP 562)."""
    return _moved.moved_attribute(name)
