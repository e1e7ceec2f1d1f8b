"""An agent's approvals asked of the person at the client: ``AwaitingApproval`` becomes elicitation (issue 28).

A served tool that waits for a person (an ``Agent`` behind ``agent.as_tool(...)`` whose run stopped
``awaiting_approval``: its tool needs approval) raises ``yiemagent.tools.nested_approvals.AwaitingApproval``.
``MCPServer`` runs every served tool through ``elicited_approvals``: each waiting call is asked of the
person at the client as one ``elicitation/create`` (form mode: "<agent> wants to run <tool>(<arguments>).
Approve?" with ``{"approve": boolean, "reason"?: string}``), and the tool is called again with the
decisions (``nested_approvals.deciding``: the sub-agent's run resumes, its approved tool runs once).
Declined, cancelled or ``approve: false``: rejected, with the person's reason or ``DECLINED``.
At most ``MAX_APPROVAL_ROUNDS`` rounds (a sub-agent may ask again).

By era (``current_call().ask``): 2025-11-25, requests on the call's stream, answered in the session;
2026-07-28, ``input_required`` rounds: the waiting calls are kept in ``current_call().saved`` so that the
re-run asks with the answers instead of running the tool again (the waiting agent must be the same
object: one process, or a durable agent). A client without the ``elicitation`` capability gets an error
result naming the calls that wait (so does a stateless 2025-11-25 server: no session to ask through).

Spec: MCP 2025-11-25 "Elicitation"; MCP 2026-07-28 "Multi Round-Trip Requests".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...textpolicy import display_text
from ...tools import AgentToolResult
from ...tools.nested_approvals import AwaitingApproval, deciding
from .calls import current_call
from .inputs import elicitation_request

__all__ = ["DECLINED", "MAX_APPROVAL_ROUNDS", "elicited_approvals"]

MAX_APPROVAL_ROUNDS = 8
"""Rounds of approvals asked for one call; past it, the call's result is an error."""

DECLINED = "the person at the client declined"
"""The reason a call is rejected with when the person declined without giving one."""

_SAVED_KEY = "yiemagent.approvals.waiting"
_SCHEMA = {"type": "object", "properties": {
    "approve": {"type": "boolean", "title": "Approve", "description": "Run the tool call as shown"},
    "reason": {"type": "string", "title": "Reason", "description": "Why not (told to the agent)"}},
    "required": ["approve"]}


def _question(call: dict[str, Any]) -> str:
    who = call.get("agent") or "The agent"
    arguments = json.dumps(call.get("arguments", {}), ensure_ascii=False, default=str)
    if len(arguments) > 500:
        arguments = arguments[:500] + "..."
    return display_text(f"{who} wants to run {call.get('name')}({arguments}). Approve?")


def _decision(answer: dict[str, Any]) -> bool | str:
    content: dict[str, Any] = answer["content"] if isinstance(answer.get("content"), dict) else {}
    if answer.get("action") == "accept" and content.get("approve") is True:
        return True
    reason = content.get("reason")
    return reason.strip()[:500] if isinstance(reason, str) and reason.strip() else DECLINED


def elicited_approvals(execute: Callable[[], Any]) -> Any:
    """``execute()``; while it raises ``AwaitingApproval``, ask the person and call it again with the decisions.

    Returns what ``execute`` returns, or an error ``AgentToolResult`` when the calls cannot be asked (no
    call context, a client without elicitation) or more than ``MAX_APPROVAL_ROUNDS`` rounds were needed.
    Raises what ``ServedCall.ask`` raises (``InputRequired`` in 2026-07-28: the request ends
    ``input_required``; ``InputUnavailable`` in 2025-11-25 when nobody answers).
    """
    call = current_call()
    saved = call.saved if call is not None else {}
    waiting: list[dict[str, Any]] | None = saved.get(_SAVED_KEY)
    decided: list[dict[str, Any]] = []
    for _ in range(MAX_APPROVAL_ROUNDS + 1):
        if waiting is None:
            with deciding(decided):
                try:
                    return execute()
                except AwaitingApproval as pause:
                    waiting = pause.calls
        if call is None or not call.client_supports("elicitation"):
            names = ", ".join(str(c.get("name")) for c in waiting)
            return AgentToolResult.error(f"the tool waits for a person's approval of: {names}; the person cannot "
                                         "be asked: the client declared no elicitation capability, or there is no "
                                         "session to ask through (a stateless server in 2025-11-25)")
        saved[_SAVED_KEY] = waiting  # a 2026-07-28 re-run asks with the answers instead of running the tool again
        answers = call.ask({f"approval-{c['tool_call_id']}": elicitation_request(_question(c), _SCHEMA)
                            for c in waiting})
        decided = [dict(c, decision=_decision(answers[f"approval-{c['tool_call_id']}"])) for c in waiting]
        saved.pop(_SAVED_KEY, None)
        waiting = None
    return AgentToolResult.error(f"the tool asked for approvals more than {MAX_APPROVAL_ROUNDS} times; stopped")
