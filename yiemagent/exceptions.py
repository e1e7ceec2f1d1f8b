"""Every exception yiemagent raises, in one tree.

::

    YiemagentError                                  root of everything yiemagent raises
    ├── ConfigError(YiemagentError, ValueError)     misuse at construction or registration
    ├── FormatError(YiemagentError, ValueError)     a message or response cannot be converted; .raw
    │   ├── ToolCallFormatError                     a tool-call shape is unusable; .raw, .format_hint
    │   └── InvalidRequestError                     a request the guard cannot make valid (nothing was sent)
    ├── ToolError                                   a tool could not produce a result; .tool_name, .tool_call_id
    │   ├── ToolNotFoundError                       the name is not registered
    │   ├── ToolArgumentsError                      arguments fail the inputSchema; .errors
    │   ├── ToolBlockedError                        before_tool_call blocked it; .reason
    │   └── ToolExecutionError                      the tool or a hook raised; original in __cause__
    ├── LLMError                                    llm_call raised or returned an unusable reply; .response, .status_code
    │   ├── LLMTimeoutError(LLMError, TimeoutError)  no complete reply within the whole-request deadline
    │   └── LLMConnectionError(LLMError, ConnectionError)  no connection to the model's server
    ├── MCPError                                    talking to an MCP server failed; .server
    │   ├── MCPTransportError(MCPError, ConnectionError)   unreachable, HTTP non-2xx, process gone; .status_code, .body,
    │   │                                                  .retry_after
    │   │   ├── MCPTimeoutError(MCPTransportError, TimeoutError)  no complete reply in time
    │   │   └── MCPAuthorizationError                an OAuth login failed (discovery, registration,
    │   │                                            token, issuer/resource mismatch, still 401/403)
    │   ├── MCPProtocolError                        the reply is not valid JSON-RPC / SSE / version
    │   └── MCPRPCError                             the server answered a JSON-RPC error; .code, .message, .data
    │       └── MCPSessionExpiredError              HTTP 404 (or 400 naming it) for our Mcp-Session-Id; .data
    ├── ModelRetry                                  an output validator rejects a typed answer (sent back to the model)
    ├── StoreError                                  a conversation store failed (connection, SQL); original in __cause__
    │   └── StaleStateError                         a stale or zombie writer: version moved or lease lost;
    │                                               .conversation_id, .expected_version, .actual_version, .reason
    │       └── BranchConflictError                 a fork/rewind/edit/regenerate planned on a version that moved
    └── AgentError
        ├── AgentClosedError                        the agent was shut down
        ├── ApprovalError                           a decision about a call not waiting for approval; .tool_call_id
        ├── BranchError                             a branching operation addressed no valid point; .index
        ├── AgentBusyError(AgentError, queue.Full)  a queue stayed full for the whole timeout
        └── MaxTurnsExceeded                        the turn limit was reached; .max_turns
    YiemagentWarning(UserWarning)                   visible by default
    SimulatedCrash(BaseException)                   tests only: stands for the process dying; let through

The text of every one of them is a boundary of the outbound text policy
(``yiemagent.textpolicy``, row ``exception``, ``display`` rule): ``str(exc)``,
``repr(exc)``, ``exc.args`` and its text attributes (``body``,
``stderr_tail``, ``message``...) never hold a registered secret (``***``
instead), however the message was built: a server's stderr echoing the
``${MY_TOKEN}`` it was started with, an HTTP body, a JSON-RPC error message.
One mechanism does it for all: ``YiemagentError``'s constructor (its
arguments), ``__setattr__`` (text attributes) and ``__str__`` (secrets
registered after the exception was made).

Raised vs reported: public APIs (``ToolRegistry.call``, ``MCPClient.call_tool``,
``extract_tool_calls``) raise these. The agent loop catches them and reports them
as error tool results, error answers and ``error`` events; nothing escapes the
agent thread.
"""

from __future__ import annotations

import queue
from typing import Any

from .textpolicy import boundary, display_text, scrub_secrets


@boundary("exception", "display")
def exception_text(text: Any) -> str:
    """The text of a yiemagent exception: known secrets ``***``, lone surrogates U+FFFD (``display`` rule)."""
    return display_text(text)


class YiemagentError(Exception):
    """Root of every exception yiemagent raises.

    Its text never holds a registered secret (``yiemagent.textpolicy``): text
    arguments and text attributes are scrubbed when set, and ``str()`` again
    when shown (a secret registered after the exception was made).
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*(scrub_secrets(a) if isinstance(a, str) else a for a in args))

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, str):
            value = scrub_secrets(value)
        super().__setattr__(name, value)

    def __str__(self) -> str:
        return exception_text(super().__str__())


class YiemagentWarning(UserWarning):
    """A problem yiemagent worked around (shown by default)."""


class ConfigError(YiemagentError, ValueError):
    """Misuse at construction or registration (bad schema, name clash)."""


class FormatError(YiemagentError, ValueError):
    """A message or response cannot be converted to or from OpenAI format."""

    def __init__(self, message: str, *, raw: Any = None) -> None:
        super().__init__(message)
        self.raw = raw


class ToolCallFormatError(FormatError):
    """A tool-call shape is not recognised or its arguments are unusable."""

    def __init__(self, message: str, *, raw: Any = None, format_hint: str | None = None) -> None:
        super().__init__(message, raw=raw)
        self.format_hint = format_hint


class InvalidRequestError(FormatError):
    """A request the request guard (``yiemagent.messages.guard``) cannot make valid; it was not sent.

    Raised for: no messages, a message that is not a dict or has an unknown
    role, a tool name breaking ``^[a-zA-Z0-9_-]{1,64}$``, two tools with one name.
    """


class ToolError(YiemagentError):
    """A tool could not produce a result."""

    def __init__(self, message: str, *, tool_name: str = "", tool_call_id: str = "") -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id


class ToolNotFoundError(ToolError):
    """The tool name is not in the registry."""


class ToolArgumentsError(ToolError):
    """The arguments do not satisfy the tool's ``inputSchema``."""

    def __init__(
        self, message: str, *, tool_name: str = "", tool_call_id: str = "", errors: list[str] | None = None
    ) -> None:
        super().__init__(message, tool_name=tool_name, tool_call_id=tool_call_id)
        self.errors = list(errors or [])


class ToolBlockedError(ToolError):
    """``before_tool_call`` blocked the call."""

    def __init__(self, message: str, *, tool_name: str = "", tool_call_id: str = "", reason: str = "") -> None:
        super().__init__(message, tool_name=tool_name, tool_call_id=tool_call_id)
        self.reason = reason


class ToolExecutionError(ToolError):
    """The tool or one of its hooks raised; the original is ``__cause__``."""


class LLMError(YiemagentError):
    """``llm_call`` raised, or returned a reply that cannot be used."""

    def __init__(self, message: str, *, response: Any = None, status_code: int | None = None) -> None:
        super().__init__(message)
        self.response = response
        self.status_code = status_code


class LLMTimeoutError(LLMError, TimeoutError):
    """No complete reply within the whole-request deadline (``timeout_seconds``), however the bytes came."""


class LLMConnectionError(LLMError, ConnectionError):
    """No connection to the model's server (refused, reset, DNS, TLS), or it dropped before any reply byte."""


class SimulatedCrash(BaseException):
    """For tests only: stands for the process dying at this point; the one exception yiemagent lets through.

    Everything else a tool, hook, event sink, callback or ``llm_call`` raises
    (``SystemExit`` and ``KeyboardInterrupt`` included) is contained. Tests of
    durable runs subclass this to stop a run dead, as a power cut would, without
    a child process. Also in ``yiemagent.testing``.
    """


class MCPError(YiemagentError):
    """Talking to an MCP server failed."""

    def __init__(self, message: str, *, server: str = "") -> None:
        super().__init__(message)
        self.server = server


class MCPTransportError(MCPError, ConnectionError):
    """The server is unreachable, answered HTTP non-2xx, or its process is gone."""

    def __init__(
        self,
        message: str,
        *,
        server: str = "",
        status_code: int | None = None,
        body: str = "",
        stderr_tail: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, server=server)
        self.status_code = status_code
        self.body = body
        self.stderr_tail = stderr_tail
        self.retry_after = retry_after
        """Seconds the server asked to wait (HTTP ``Retry-After``), or None."""


class MCPAuthorizationError(MCPTransportError):
    """The server needs an OAuth login that could not be done (``yiemagent.mcp.auth``).

    Raised when discovery, registration, the user's login (the redirect
    handler), the token request or a refresh fails, when an issuer or
    resource does not match (RFC 9207, RFC 9728), or when the server still
    answers 401/403 after a new token. ``status_code`` is the MCP server's
    401/403 that started the flow (None outside a request, e.g. a direct
    call of a helper). The text never holds a token, a client secret, a
    code or a verifier.
    """


class MCPTimeoutError(MCPTransportError, TimeoutError):
    """No complete reply arrived within the timeout."""


class MCPProtocolError(MCPError):
    """The reply is not valid JSON-RPC, SSE, or a supported protocol version."""

    def __init__(self, message: str, *, server: str = "", body: str = "") -> None:
        super().__init__(message, server=server)
        self.body = body


class MCPRPCError(MCPError):
    """The server answered with a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None, *, server: str = "") -> None:
        where = f" from {server}" if server else ""
        super().__init__(f"JSON-RPC error {code}{where}: {message}", server=server)
        self.code = code
        self.message = message
        self.data = data

    @classmethod
    def from_error(cls, error: dict[str, Any], *, server: str = "") -> MCPRPCError:
        """Build from a JSON-RPC ``error`` member (``{"code", "message", "data"?}``)."""
        code = error.get("code")
        return cls(
            code if isinstance(code, int) else -32603,
            str(error.get("message", "")),
            error.get("data"),
            server=server,
        )


class MCPCallbackError(MCPRPCError):
    """A client callback (sampling, elicitation, roots, a ``request_handlers`` entry) raised.

    ``__cause__`` is the callback's own exception; ``code`` is -32603 and
    ``message`` names the method and the exception's type only (never its
    text, which may hold URLs or secrets: that goes to the local log). In the
    2026-07-28 era ``call_tool``/``read_resource``/``get_prompt`` raise it
    when a callback answering an input request raises; in the handshake era
    the server gets that -32603 error, and a request whose callback ran on
    the calling thread's stream (HTTP) raises it when the server then fails
    the request (``code``/``message`` are the server's then). An
    ``MCPRPCError``: code that catches ``MCPRPCError`` handles both eras.
    """


class MCPSessionExpiredError(MCPRPCError):
    """The server no longer knows our ``Mcp-Session-Id`` (spec: re-initialize).

    ``code`` is -32001; ``data`` is ``{"session_id": str, "status_code": int}``.
    """


class StoreError(YiemagentError):
    """A conversation store failed (connection, SQL, corrupt row); the original is ``__cause__``."""


class StaleStateError(StoreError):
    """A write was refused: the conversation moved on (version) or the writer lost its lease.

    Nothing was written. The writer is stale (another process served the
    conversation since it loaded it) or a zombie (its lease expired and was
    taken); it must reload, not retry blindly.
    """

    def __init__(
        self,
        message: str,
        *,
        conversation_id: str = "",
        expected_version: int | None = None,
        actual_version: int | None = None,
        reason: str = "",
    ) -> None:
        super().__init__(message)
        self.conversation_id = conversation_id
        self.expected_version = expected_version
        self.actual_version = actual_version
        self.reason = reason
        """``"version"``, ``"lease"`` or ``"served"`` (an input was already answered)."""


class BranchConflictError(StaleStateError):
    """A branching operation was refused: the conversation moved since the version it was planned on.

    ``Agent.fork``/``rewind``/``edit``/``regenerate`` planned on a version that another worker moved
    since (it edited the conversation, or answered an input). Nothing of it was applied; the conversation is as the winner left it. Reload the
    history (its ``version``) and try again. ``reason`` is ``"version"``, or ``"exists"`` when a
    fork's new conversation id is taken. ``yiemagent.loop.branching`` has the rules.
    """


class AgentError(YiemagentError):
    """Misuse or failure of the ``Agent`` wrapper."""


class BranchError(AgentError):
    """A branching operation addressed no valid point of the history (``yiemagent.loop.branching``).

    An index out of range, ``edit`` of a message that is not the user's, ``regenerate`` with no
    user message, or a cut that would leave tool calls without their results (the cut a LangGraph
    fork replays tool calls from). Nothing was changed. ``index`` is the index asked for, or None.
    """

    def __init__(self, message: str, *, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class AgentClosedError(AgentError):
    """The agent was shut down, or its thread is gone."""


class ApprovalError(AgentError):
    """A decision (``Agent.approve``/``reject``/``decide``) was refused; nothing was decided.

    Raised when the ``tool_call_id`` is not a call waiting for approval in
    this conversation (never requested, made up by a client, from a state
    restored with ``from_state``), when it was already decided (here or by a
    concurrent request, in any process), or when the decision is malformed
    (``yiemagent.tools.approvals``). ``tool_call_id``: the id refused.
    """

    def __init__(self, message: str, *, tool_call_id: str = "") -> None:
        super().__init__(message)
        self.tool_call_id = tool_call_id


class AgentBusyError(AgentError, queue.Full):
    """A queue stayed full for the whole timeout."""


class MaxTurnsExceeded(AgentError):
    """The run reached its turn limit."""

    def __init__(self, max_turns: int) -> None:
        super().__init__(f"the run reached max_turns={max_turns}")
        self.max_turns = max_turns


class ModelRetry(YiemagentError):
    """Raised by an output validator (``Agent(output_validators=[fn])``) to reject a typed answer.

    Its message is sent back to the model, which answers again (up to
    ``output_retries`` times; see ``yiemagent.output.typed_output``). Also accepted
    from a pydantic validator of the output type. Peer: pydantic-ai's ``ModelRetry``.
    """
