"""Limits on what an MCP server can make yiemagent hold, queue or show the model: all in one place.

MCP servers are written by strangers; what they send is untrusted input. Each
limit below has a default, a parameter that changes it, and a documented
effect when it is passed: a clear error, or a visible truncation
(``…[truncated N chars]``). None of them is silent.

Stdio transport (``StdioTransport`` arguments):

- one stdout line: 16 MiB (``max_line_bytes``). A longer line is discarded
  unread, never buffered whole; the request it answered fails with
  ``MCPProtocolError`` (else the line is logged and skipped).
- nesting of one message: 128 levels (``max_json_depth``); as above.
- server requests waiting for an answer: 1024, and 16 MiB of lines in all
  (``max_server_requests``); more are dropped and logged at WARNING.
- threads answering server requests: 4 (``server_request_workers``);
  started when needed, gone when idle.
- notifications kept before a handler is known: 100 (fixed); more dropped.

Streamable HTTP (``HTTPTransport`` arguments; constants in ``yiemagent.mcp.http_reply``):

- a JSON reply body: 8 MiB (``max_body_bytes``, ``MAX_BODY_BYTES``);
- one SSE event: 8 MiB (``max_event_bytes``, ``MAX_EVENT_BYTES``);
- messages before the response of one request: 10,000 (``max_messages``,
  ``MAX_MESSAGES``). Past any of them the request fails with
  ``MCPProtocolError`` and nothing past the limit is read into memory.

Tools and results (``MCPLimits``, given to ``MCPToolset`` / ``Agent``):

- ``structuredContent`` kept in a result's ``details``: 1,000,000 characters
  of compact JSON (``max_structured_chars``); beyond, ``details`` holds
  ``{"truncated": True, "chars": N, "max_chars": M, "preview": "<first 1,000
  chars>…[truncated N chars]"}`` instead, and the model's text says so.
- ``_meta`` kept in ``details``: 100,000 characters (``max_meta_chars``); the same.
- the tool result the model sees: 100,000 characters (``max_result_chars`` of
  ``Agent`` / ``MCPToolset``): text cut, a ``[truncated: ...]`` note.
- a tool description: 1,024 characters (``max_description_chars``, OpenAI's
  limit, which ``yiemagent.messages.guard`` also enforces on every request); cut,
  ending ``…[truncated N chars]``, the note within the 1,024.
- an ``inputSchema``: 100,000 characters of compact JSON
  (``max_schema_chars``) and 32 levels of nesting (``max_schema_depth``);
  beyond, the tool is skipped (WARNING, and listed in ``MCPToolset.skipped``).
- tools of one server: 128 (``max_tools``); the rest are skipped, the same way.
- a tool name as the server gives it: 256 characters
  (``max_tool_name_chars``); a longer one is skipped (the wire needs the
  exact name, so it cannot be cut; the model sees a sanitised 64-character
  name in any case).

Sampling (``sampling/createMessage`` answered by the agent's model, ``LLMSampler``;
both eras: the 2025-11-25 server request and the 2026-07-28 ``inputRequests``;
``MCPLimits`` fields, also ``LLMSampler(limits=...)``):

- ``maxTokens`` a server asks for: 4,096 (``max_sampling_tokens``); a larger
  one is lowered to it, one missing is set to it.
- sampling requests per call (``tools/call``, ``prompts/get``,
  ``resources/read``, all its rounds): 16 (``max_sampling_per_call``). Over
  stdio in the 2025-11-25 era a server's request names no call; the per-run
  bound holds there.
- sampling requests per run of an agent: 64 (``max_sampling_per_run``).
- an ``input_required`` round: 16 inputs, ``requestState`` 256 KiB
  (``yiemagent.mcp.mrtr``); rounds per call: 8 (``MCPClient(max_input_rounds=)``).

A request past a bound, or one that the run's ``UsageLimits`` forbid (each
sampling reply counts as a model request, its tokens go to the run's usage
and ``agent.usage``), is refused with JSON-RPC -1 and a text naming the
bound; in 2026-07-28 the call ends with ``RequestRefused``. A run whose
sampling reached its usage limit ends with status ``usage_limit``.

Why these numbers: 16 MiB holds a large screenshot or file as base64 and
parses in about 0.1 s; 128 tools is the most an OpenAI request accepts; MCP
2025-11-25 says tool names SHOULD be 1-128 characters (256 leaves room);
OpenAI refuses a description over 1,024 characters, and a longer one is sent
to the model on every call.

Spec: MCP 2025-11-25, "Tools" (tool names), "Transports" (stdio).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._internal.checks import check_int

__all__ = [
    "DEFAULT_MAX_JSON_DEPTH",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_SERVER_REQUESTS",
    "DEFAULT_SERVER_REQUEST_WORKERS",
    "MAX_EARLY_NOTIFICATIONS",
    "MCPLimits",
    "nesting_exceeds",
    "truncate_text",
]

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest stdio line read (bytes, without the ``\\n``)."""

DEFAULT_MAX_JSON_DEPTH = 128
"""Deepest nesting of arrays and objects in one message (the message object is level 1)."""

DEFAULT_MAX_SERVER_REQUESTS = 1024
"""Server requests (``ping``, ``elicitation/create``...) waiting for a worker, per stdio connection
(their lines count against ``max_line_bytes`` in all, too)."""

DEFAULT_SERVER_REQUEST_WORKERS = 4
"""Threads answering server requests, per stdio connection (started when needed, gone when idle)."""

MAX_EARLY_NOTIFICATIONS = 100
"""Notifications kept while no handler is known yet (before the first request)."""


@dataclass(frozen=True)
class MCPLimits:
    """Caps on the tools and results of MCP servers (see the table in ``yiemagent.mcp.limits``).

    Attributes:
        max_structured_chars: characters of ``structuredContent`` (as compact
            JSON) kept in a tool result's ``details``; None: no cap.
        max_meta_chars: the same for the result's ``_meta``.
        max_description_chars: characters of a tool description given to the model.
        max_schema_chars: characters of an ``inputSchema`` (as compact JSON).
        max_schema_depth: nesting of an ``inputSchema`` (the schema object is level 1).
        max_tools: tools registered per server (in the server's order).
        max_tool_name_chars: characters of a tool name as the server gives it.
        max_sampling_tokens: the ``max_tokens`` a sampling request may get
            (``maxTokens`` above it is lowered; missing: this).
        max_sampling_per_call: sampling requests answered for one call, all
            its rounds (where the era ties them to it).
        max_sampling_per_run: sampling requests answered in one agent run.

    Raises:
        ConfigError: a bound that is not an int >= 1 (``max_structured_chars``, ``max_meta_chars``:
            >= 0 or None): a negative, NaN or float bound is refused when given (issue 33).
    """

    max_structured_chars: int | None = 1_000_000
    max_meta_chars: int | None = 100_000
    max_description_chars: int = 1024
    max_schema_chars: int = 100_000
    max_schema_depth: int = 32
    max_tools: int = 128
    max_tool_name_chars: int = 256
    max_sampling_tokens: int = 4096
    max_sampling_per_call: int = 16
    max_sampling_per_run: int = 64

    def __post_init__(self) -> None:
        for name in ("max_description_chars", "max_schema_chars", "max_schema_depth", "max_tools",
                     "max_tool_name_chars", "max_sampling_tokens", "max_sampling_per_call", "max_sampling_per_run"):
            check_int(f"MCPLimits {name}", getattr(self, name), minimum=1)
        for name in ("max_structured_chars", "max_meta_chars"):  # 0: none kept; None: no cap
            check_int(f"MCPLimits {name}", getattr(self, name), minimum=0, optional=True)


def truncate_text(text: str, max_chars: int) -> str:
    """``text`` if it fits in ``max_chars``, else its start and ``…[truncated N chars]`` (N: characters cut off).

    The result, note included, has at most ``max_chars`` characters (when
    ``max_chars`` leaves room for the note at all), so a consumer with the
    same limit (OpenAI's 1024 for a description) never cuts the note off.
    """
    if len(text) <= max_chars:
        return text
    keep = max_chars
    for _ in range(3):  # the note's length depends on N, which depends on what is kept
        note = f"…[truncated {len(text) - keep:,} chars]"
        keep = max(0, max_chars - len(note))
    return f"{text[:keep]}…[truncated {len(text) - keep:,} chars]"


def nesting_exceeds(value: Any, max_depth: int) -> bool:
    """True when lists/dicts in ``value`` nest deeper than ``max_depth`` (``value`` itself is level 1).

    Iterative and linear in the number of nodes: no input can exhaust the
    Python stack here.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
