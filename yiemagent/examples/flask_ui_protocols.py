"""The Flask chat example's routes for web frontends' own protocols: AG-UI and the Vercel AI SDK.

Routes (added by ``add_protocol_routes``, which ``flask_chat.create_app`` calls):
    ``POST /ag-ui``    AG-UI ``RunAgentInput`` (``threadId``, ``runId``, ``messages``: the last one, a user
                       message, is the input; or ``resume``: answers to approval interrupts) -> AG-UI 1.0
                       events (``yiemagent.agent.ui_streams.ag_ui_events``); for ``HttpAgent``/CopilotKit.
                       400 ``{"error"}`` for a body that is not one; 409 for a ``resume`` no call waits for
    ``POST /api/chat`` ``useChat``'s body ``{"id", "messages": [UIMessage...]}`` (the last message, a user
                       message, is the input; a last assistant message with answered approvals resumes the
                       run) -> a Vercel AI UI message stream v1 (``vercel_ai_events``). 400 / 409 as above

Each route keeps one conversation per ``threadId`` / chat ``id`` (the client makes it, a random
id: whoever knows it continues that conversation, so put authentication in front of a real
deployment); the server holds the history, so only the last message of ``messages`` is read. An
approval is an AG-UI interrupt (resume with ``{"interruptId": <tool call id>, "status": "resolved",
"payload": {"approved": true}}``) or a Vercel ``tool-approval-request`` (``addToolApprovalResponse``,
then the chat sends): the resumed run's messages reach the client whole, after it ended
(``yiemagent.agent.ui_parts.decided_items``).
"""

from __future__ import annotations

from typing import Any, Protocol

from flask import Flask, Response, jsonify, request

from yiemagent import Agent, ConfigError, FormatError, YiemagentError
from yiemagent.agent.ui_parts import decided_items
from yiemagent.agent.ui_streams import (
    AG_UI_HEADERS,
    VERCEL_AI_HEADERS,
    ag_ui_events,
    approval_decisions,
    vercel_ai_events,
    vercel_approval_decisions,
)

__all__ = ["Conversations", "add_protocol_routes"]


class Conversations(Protocol):
    """What the routes use of ``flask_chat.Conversations``: a conversation's started agent, made on first use."""

    def get(self, conversation_id: str) -> Agent: ...  # noqa: D102


def _text_of(message: Any, parts_key: str) -> str:
    """The text of a protocol's user message: ``content`` a str or parts, or ``parts`` (Vercel)."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return ""
    content = message.get(parts_key)
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(p["text"] for p in parts if isinstance(p, dict) and p.get("type") == "text"
                   and isinstance(p.get("text"), str))


def _deciding(agent: Agent, decisions: dict[str, bool | str]) -> Any:
    """The resumed run's items for a protocol stream; a decision that fails is an error answer."""
    try:
        yield from decided_items(agent, decisions, timeout_seconds=300)
    except (YiemagentError, TimeoutError) as exc:  # ApprovalError (decided meanwhile), AgentClosedError...
        yield {"role": "assistant", "content": f"Error: {exc}", "status": "error", "error": str(exc)}


def _waiting(agent: Agent, decisions: dict[str, bool | str]) -> dict[str, bool | str]:
    """``decisions`` about calls that wait (a client re-sending a part it answered before is not an error)."""
    waiting = {str(call["tool_call_id"]) for call in agent.pending_approvals()}
    return {call_id: value for call_id, value in decisions.items() if call_id in waiting}


def add_protocol_routes(app: Flask, conversations: Conversations) -> None:
    """``POST /ag-ui`` (AG-UI 1.0) and ``POST /api/chat`` (Vercel AI ``useChat``) on ``app`` (see the module)."""

    @app.post("/ag-ui")
    def ag_ui() -> Any:
        body = request.get_json(silent=True)
        thread_id = body.get("threadId") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(thread_id, str) or not thread_id:
            return jsonify(error="send an AG-UI RunAgentInput: {threadId, runId, messages}"), 400
        run_id = body.get("runId") if isinstance(body.get("runId"), str) else None
        agent = conversations.get(f"ag-ui:{thread_id}")
        if body.get("resume"):
            try:
                decisions = approval_decisions(body["resume"] if isinstance(body["resume"], list) else [])
            except ValueError as exc:
                return jsonify(error=str(exc)), 400
            if not _waiting(agent, decisions):
                return jsonify(error="no call of this thread waits for these interrupts"), 409
            items: Any = _deciding(agent, _waiting(agent, decisions))
        else:
            messages = body.get("messages")
            text = _text_of(messages[-1], "content") if isinstance(messages, list) and messages else ""
            if not text.strip():
                return jsonify(error="the last of messages must be a user message with text"), 400
            try:
                items = agent.stream(text)
            except (FormatError, ConfigError) as exc:
                return jsonify(error=str(exc)), 400
        return Response(ag_ui_events(items, thread_id=thread_id, run_id=run_id), headers=AG_UI_HEADERS)

    @app.post("/api/chat")
    def vercel_chat() -> Any:
        body = request.get_json(silent=True)
        chat_id = body.get("id") if isinstance(body, dict) else None
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(chat_id, str) or not chat_id or not isinstance(messages, list) or not messages:
            return jsonify(error='send useChat\'s body: {"id", "messages": [...]}'), 400
        agent = conversations.get(f"vercel:{chat_id}")
        last = messages[-1]
        if isinstance(last, dict) and last.get("role") == "assistant":
            decisions = _waiting(agent, vercel_approval_decisions(last))
            if not decisions:
                return jsonify(error="the last message answers no approval that waits"), 409
            items: Any = _deciding(agent, decisions)
        else:
            text = _text_of(last, "parts")
            if not text.strip():
                return jsonify(error="the last message must be a user message with a text part"), 400
            try:
                items = agent.stream(text)
            except (FormatError, ConfigError) as exc:
                return jsonify(error=str(exc)), 400
        return Response(vercel_ai_events(items), headers=VERCEL_AI_HEADERS)
