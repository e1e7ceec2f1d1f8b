"""A durable agent served as a tool: one conversation per ``conversation_id``, retried calls answered once.

::

    from yiemagent import Agent
    from yiemagent.mcp.server import MCPServer
    from yiemagent.mcp.server.conversations import conversation_tool
    from yiemagent.store import PostgresStore

    store = PostgresStore(dsn)
    server = MCPServer("helpdesk", tools=[conversation_tool(
        lambda conversation_id: Agent(llm, tools=[...], store=store, conversation_id=conversation_id),
        "ask_helpdesk", "Ask the helpdesk agent; pass conversation_id to go on with a conversation.")])

The tool takes ``{"input": str, "conversation_id"?: str, "input_id"?: str}`` and answers the agent's text, with
``structuredContent`` ``{"answer", "conversation_id", "input_id", "status"}`` (``isError`` unless the run
completed or waits for an approval):

- ``conversation_id``: the conversation to go on with; absent, a new one is started (its id is in the
  result). The conversation lives in the agent's store, so any gunicorn worker (or process) can serve the
  next call of it;
- ``input_id``: the caller's idempotency key. The store keeps one input per ``(conversation_id,
  input_id)``: a call retried with the same key (after a timeout, or a worker killed mid-call) is not run
  again; it waits for the run in progress, or finishes the run a dead worker left (the journal: a recorded
  model reply or tool call is never run twice), and answers the same. The key names the input: a call
  with a used key gets the first input's answer, whatever its ``input`` says (the store's rule, as for
  ``flask_durable``); use a new key for a new input. Without a key, a retry is a new input.
- ``conversation_id`` is bound to the verified user: with ``BearerAuth`` in front
  (``yiemagent.mcp.server.auth``), the conversation in the store is ``"<owner>/<conversation_id>"``, the
  owner a digest of the token's principal (``AccessToken.principal``: its ``sub``, else its client id), so
  another user who sends the same ``conversation_id`` reaches a conversation of their own, never this
  one. The client sees its own ``conversation_id`` only. A token naming no subject and no client gets an
  error result. Without authentication (stdio, no ``BearerAuth``) the id is used as it is: whoever knows it
  continues it, so use long random ids or put authentication in front; an id of the bound shape
  (``<32 hex digits>/...``) is then an error result, so that a server on the same store without
  authentication (stdio beside HTTP) cannot name a user's conversation.

Each call makes its agent with ``make_agent(store_id)``, or ``make_agent(store_id, identity=token)`` when
``make_agent`` takes an ``identity`` parameter (or ``**kwargs``): ``store_id`` is the conversation's id in
the store (bound to the user as above), ``token`` the verified ``AccessToken`` or None. It shuts the agent
down afterwards; the call's
abort (``notifications/cancelled``, a client gone) aborts the run. ``timeout_seconds`` bounds one call
(the run is aborted then). ``make_agent`` must give an agent with a store (durable); without one the
conversation does not outlive the call.

Spec: MCP 2025-11-25 "Tools"; yiemagent's conversation store (docs/guides/durable.rst).
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import math
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Protocol

from ...exceptions import ConfigError
from ...tools import AgentTool
from .calls import current_call
from .content import ToolReply

__all__ = ["MAX_INPUT_CHARS", "conversation_tool", "store_id"]

logger = logging.getLogger("yiemagent.mcp.server.conversations")

_MAX_ID = 200
MAX_INPUT_CHARS = 100_000
"""Longest ``input`` a client may send (the schema's ``maxLength``: a longer one is an invalid-arguments error)."""
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "input": {"type": "string", "maxLength": MAX_INPUT_CHARS, "description": "What to ask the agent."},
        "conversation_id": {"type": "string", "maxLength": _MAX_ID,
                            "description": "The conversation to go on with (from a result); absent: a new one."},
        "input_id": {"type": "string", "maxLength": _MAX_ID,
                     "description": "An idempotency key: a call retried with the same key is answered once."},
    },
    "required": ["input"],
    "additionalProperties": False,
}


class _DurableAgent(Protocol):
    def stream(self, text: Any, *, input_id: str | None = ...) -> Any: ...

    def abort(self) -> None: ...

    def shutdown(self, *args: Any, **kwargs: Any) -> Any: ...


def _takes_identity(make_agent: Callable[..., Any]) -> bool:
    """True when ``make_agent`` accepts ``identity=`` (a parameter of that name, or ``**kwargs``)."""
    try:
        parameters = inspect.signature(make_agent).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature: the one-argument form
        return False
    return any(p.kind is p.VAR_KEYWORD or (p.name == "identity" and p.kind is not p.POSITIONAL_ONLY)
               for p in parameters)


_BOUND = re.compile(r"[0-9a-f]{32}/")
"""The shape of a conversation id bound to a principal: an unauthenticated caller may not name one."""


def store_id(conversation_id: str, principal: str | None) -> str:
    """The store's id of ``conversation_id`` as seen by ``principal`` (None: unauthenticated, the id itself).

    Raises:
        ValueError: unauthenticated, an id of the bound shape (``<32 hex digits>/...``): a user's conversation.
    """
    if principal is None:
        if _BOUND.match(conversation_id):
            raise ValueError("a conversation_id of the form '<32 hex digits>/...' belongs to an authenticated "
                             "user; use another id")
        return conversation_id
    return f"{hashlib.sha256(principal.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}/{conversation_id}"


def conversation_tool(make_agent: Callable[..., Any], name: str, description: str, *,
                      timeout_seconds: float = 300.0) -> AgentTool:
    """An ``AgentTool`` running ``make_agent(store_id[, identity=token])``'s agent on each call (see the module).

    Raises:
        ConfigError: ``make_agent`` is not callable or ``timeout_seconds`` is not a finite number > 0.
    """
    if not callable(make_agent):
        raise ConfigError("conversation_tool needs make_agent(conversation_id) -> Agent")
    if not isinstance(timeout_seconds, (int, float)) or isinstance(timeout_seconds, bool) \
            or not 0 < timeout_seconds < math.inf:  # NaN or inf: the call would never be cut
        raise ConfigError(f"timeout_seconds must be a finite number > 0, not {timeout_seconds!r}")

    with_identity = _takes_identity(make_agent)

    def execute(call_id: str, arguments: Mapping[str, Any], abort: threading.Event) -> ToolReply:
        conversation_id = arguments.get("conversation_id") or uuid.uuid4().hex
        input_id = arguments.get("input_id") or None
        served = current_call()
        identity = served.identity if served is not None else None
        if identity is not None and identity.principal is None:
            text = "the access token names no subject and no client: a conversation cannot be bound to it"
            return ToolReply([{"type": "text", "text": text}], {"answer": text, "conversation_id": conversation_id,
                                                               "input_id": input_id, "status": "error"}, is_error=True)
        try:  # the same store served without authentication too (stdio): no id of a user's shape
            key = store_id(conversation_id, identity.principal if identity is not None else None)
        except ValueError as exc:
            return ToolReply([{"type": "text", "text": str(exc)}], {"answer": str(exc), "conversation_id":
                                                                  conversation_id, "input_id": input_id,
                                                                  "status": "error"}, is_error=True)
        agent: _DurableAgent = make_agent(key, identity=identity) if with_identity else make_agent(key)
        try:
            stream = agent.stream(arguments["input"], input_id=input_id)
            stream.close()  # nobody reads the events: the run goes on, its answer comes by the future
            deadline = time.monotonic() + timeout_seconds
            while True:
                try:
                    answer = stream.future.result(timeout=0.05)
                    break
                except FutureTimeout:
                    if abort.is_set() or time.monotonic() >= deadline:
                        agent.abort()
                        answer = stream.future.result(timeout=30)
                        break
        finally:
            agent.shutdown(timeout_seconds=10)
        status = str(answer.get("status", "error"))
        ids = answer.get("input_ids") or [input_id]
        text = answer.get("content") if isinstance(answer.get("content"), str) else ""
        if status != "completed":
            text = text or str(answer.get("error") or f"the agent's run ended {status}")
        structured = {"answer": text, "conversation_id": conversation_id, "input_id": ids[0] if ids else input_id,
                      "status": status}
        return ToolReply([{"type": "text", "text": text}], structured,
                         is_error=status not in ("completed", "awaiting_approval"))

    return AgentTool(name, description, _SCHEMA, execute)
