"""The Flask chat example's routes for web frontends' own protocols: AG-UI and the Vercel AI SDK.

Routes (added by ``add_protocol_routes``, which ``flask_chat.create_app`` calls):
    ``POST /ag-ui``    AG-UI ``RunAgentInput`` (``threadId``, ``runId``, ``messages``: the last one, a user
                       message, is the input; or ``resume``: answers to approval interrupts) -> AG-UI 1.0
                       events (``yiemagent.agent.ui_streams.ag_ui_events``); for ``HttpAgent``/CopilotKit.
                       400 ``{"error"}`` for a body that is not one; 409 for a ``resume`` no call waits for
    ``POST /api/chat`` ``useChat``'s body ``{"id", "messages": [UIMessage...]}`` (the last message, a user
                       message, is the input; a last assistant message with answered approvals resumes the
                       run) -> a Vercel AI UI message stream v1 (``vercel_ai_events``). 400 / 409 as above
    ``GET /api/chat/<id>/stream`` the AI SDK's stream resumption (``chat.resumeStream()``,
                       ``useChat({resume: true})``): the chat's last run replayed from its start (live while it
                       runs; the client replaces its partial message, the ``start`` chunk naming the same
                       ``messageId``); 204 when the last run's stream reached the client whole, or there is none
                       (nor for an approval's continuation, which continues the client's message: reload the
                       chat)

After a cut, the rest of the answer (issue 33 point 6): every run is read to its end on the server and
recorded (``yiemagent.agent.ui_runs.RunRecords``, the last run of each thread / chat, in this process's
memory). A Vercel client calls ``resumeStream()``; an AG-UI client runs again with the same messages
(``HttpAgent.runAgent()``, or a new ``HttpAgent`` with them after a reload): when the thread's last run
began from the latest user message of ``messages`` (its ``id``), it is not run again but replayed:
``RUN_STARTED``, ``MESSAGES_SNAPSHOT`` (the client's messages up to that user message: its partial answer
is dropped), the run's events, ``RUN_FINISHED``.

Each route keeps one conversation per ``threadId`` / chat ``id`` (the client makes it, a random
id: whoever knows it continues that conversation, so put authentication in front of a real
deployment); the server holds the history, so only the last message of ``messages`` is read. An
approval is an AG-UI interrupt (resume with ``{"interruptId": <tool call id>, "status": "resolved",
"payload": {"approved": true}}``) or a Vercel ``tool-approval-request`` (``addToolApprovalResponse``,
then the chat sends): the resumed run's messages reach the client whole, after it ended
(``yiemagent.agent.ui_parts.decided_items``).
"""

from __future__ import annotations

import collections
import threading
import uuid
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, jsonify, request

from yiemagent import Agent, ConfigError, FormatError, YiemagentError
from yiemagent.agent.ui_bodies import UIBodyRefused, read_ui_body
from yiemagent.agent.ui_parts import decided_items
from yiemagent.agent.ui_runs import RunRecords
from yiemagent.agent.ui_streams import (
    AG_UI_HEADERS,
    VERCEL_AI_HEADERS,
    ag_ui_events,
    approval_decisions,
    vercel_ai_events,
    vercel_approval_decisions,
)

__all__ = ["Conversations", "add_protocol_routes"]

def _body(*, allow_empty: bool = False) -> dict[str, Any]:
    """The request's JSON object, bounded (``yiemagent.agent.ui_bodies``): a refusal is answered by the app."""
    return read_ui_body(request.stream, request.content_length, allow_empty=allow_empty)


def _refused(refused: UIBodyRefused) -> tuple[Response, int]:
    return jsonify(error=str(refused)), refused.status



class Conversations:
    """Agents by conversation id, least recently used first out, bounded per owner (thread-safe).

    At most ``max_conversations`` in all and ``max_conversations_per_owner`` per owner (``get(..., owner=)``:
    the client's address or user): an owner's new conversation past its share ends its own least recently
    used one, never another owner's (a client making up thread ids no longer evicts others' conversations).
    """

    def __init__(self, make_agent: Callable[[], Agent], max_conversations: int = 100,
                 max_conversations_per_owner: int = 10) -> None:
        if min(max_conversations, max_conversations_per_owner) < 1:
            raise ValueError("max_conversations and max_conversations_per_owner must be >= 1")
        self.make_agent, self.max_conversations = make_agent, max_conversations
        self.max_conversations_per_owner = max_conversations_per_owner
        self._agents: collections.OrderedDict[str, Agent] = collections.OrderedDict()
        self._owners: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def get(self, conversation_id: str, owner: str | None = None) -> Agent:
        """The conversation's agent, started; made on first use (for ``owner``, counted in its share)."""
        evicted: list[Agent] = []
        with self._lock:
            agent = self._agents.get(conversation_id)
            if agent is None:
                mine = [c for c in self._agents if owner is not None and self._owners.get(c) == owner]
                for old in mine[:max(0, len(mine) - self.max_conversations_per_owner + 1)]:  # its own LRU first
                    evicted.append(self._agents.pop(old))
                    self._owners.pop(old, None)
                agent = self.make_agent().start()
                self._agents[conversation_id], self._owners[conversation_id] = agent, owner
                while len(self._agents) > self.max_conversations:
                    dropped, old_agent = self._agents.popitem(last=False)
                    self._owners.pop(dropped, None)
                    evicted.append(old_agent)
            self._agents.move_to_end(conversation_id)
        for old_agent in evicted:  # after its current run; not on this request's time
            threading.Thread(target=old_agent.shutdown, kwargs={"mode": "after_turn"}, daemon=True).start()
        return agent

    def drop(self, conversation_id: str) -> None:
        """Forget a conversation (its agent stops after its current run)."""
        with self._lock:
            agent = self._agents.pop(conversation_id, None)
            self._owners.pop(conversation_id, None)
        if agent is not None:
            threading.Thread(target=agent.shutdown, kwargs={"mode": "after_turn"}, daemon=True).start()

    def close(self) -> None:
        """Shut every agent down."""
        with self._lock:
            agents = list(self._agents.values())
            self._agents.clear()
            self._owners.clear()
        for agent in agents:
            agent.shutdown(mode="now")


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


def _latest_user(messages: Any) -> tuple[int, str | None]:
    """The index of the latest user message of ``messages`` and its ``id`` (a string, or None); (-1, None)."""
    for index in range(len(messages) - 1, -1, -1) if isinstance(messages, list) else ():
        message = messages[index]
        if isinstance(message, dict) and message.get("role") == "user":
            given = message.get("id")
            return index, given if isinstance(given, str) and given else None
    return -1, None


def add_protocol_routes(app: Flask, conversations: Conversations) -> None:
    """``POST /ag-ui`` (AG-UI 1.0), ``POST /api/chat`` and ``GET /api/chat/<id>/stream`` (``useChat``) on ``app``.

    See the module docstring.
    """
    records = RunRecords()
    app.extensions["yiemagent_run_records"] = records
    app.register_error_handler(UIBodyRefused, _refused)  # a body past its bounds: 400 / 413 {"error"}

    @app.post("/ag-ui")
    def ag_ui() -> Any:
        body = _body()
        thread_id = body.get("threadId") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(thread_id, str) or not thread_id:
            return jsonify(error="send an AG-UI RunAgentInput: {threadId, runId, messages}"), 400
        run_id = body.get("runId") if isinstance(body.get("runId"), str) else None
        given = body.get("messages")
        key, messages = f"ag-ui:{thread_id}", given if isinstance(given, list) else []
        user_index, user_id = _latest_user(messages)
        last = records.get(key)
        if not body.get("resume") and last is not None and user_id is not None and last.user_message_id == user_id:
            # the client runs again after a cut: the run of this message is replayed, not run twice
            if last.truncated:
                return jsonify(error="this message's run was too long to replay: load the thread's messages"), 409
            lines = ag_ui_events(last.follow(), thread_id=thread_id, run_id=run_id,
                                 snapshot=[m for m in messages[:user_index + 1] if isinstance(m, dict)])
            return Response(last.stream(lines), headers=AG_UI_HEADERS)
        agent = conversations.get(key, request.remote_addr)
        if body.get("resume"):
            try:
                decisions = approval_decisions(body["resume"] if isinstance(body["resume"], list) else [])
            except ValueError as exc:
                return jsonify(error=str(exc)), 400
            if not _waiting(agent, decisions):
                return jsonify(error="no call of this thread waits for these interrupts"), 409
            items: Any = _deciding(agent, _waiting(agent, decisions))
            user_id = None
        else:
            text = _text_of(messages[-1], "content") if isinstance(messages, list) and messages else ""
            if not text.strip():
                return jsonify(error="the last of messages must be a user message with text"), 400
            try:
                items = agent.stream(text)
            except (FormatError, ConfigError) as exc:
                return jsonify(error=str(exc)), 400
        record = records.start(key, items, user_message_id=user_id, owner=request.remote_addr)
        return Response(record.stream(ag_ui_events(record.follow(), thread_id=thread_id, run_id=run_id)),
                        headers=AG_UI_HEADERS)

    @app.post("/api/chat")
    def vercel_chat() -> Any:
        body = _body()
        chat_id = body.get("id") if isinstance(body, dict) else None
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(chat_id, str) or not chat_id or not isinstance(messages, list) or not messages:
            return jsonify(error='send useChat\'s body: {"id", "messages": [...]}'), 400
        agent = conversations.get(f"vercel:{chat_id}", request.remote_addr)
        last, message_id = messages[-1], None
        if isinstance(last, dict) and last.get("role") == "assistant":
            decisions = _waiting(agent, vercel_approval_decisions(last))
            if not decisions:
                return jsonify(error="the last message answers no approval that waits"), 409
            items: Any = _deciding(agent, decisions)  # continues the client's message: no new messageId
        else:
            text = _text_of(last, "parts")
            if not text.strip():
                return jsonify(error="the last message must be a user message with a text part"), 400
            try:
                items = agent.stream(text)
            except (FormatError, ConfigError) as exc:
                return jsonify(error=str(exc)), 400
            message_id = f"msg-{uuid.uuid4().hex}"  # a replay names it too: the client replaces its partial one
        record = records.start(f"vercel:{chat_id}", items, message_id=message_id, owner=request.remote_addr)
        return Response(record.stream(vercel_ai_events(record.follow(), message_id=message_id)),
                        headers=VERCEL_AI_HEADERS)

    @app.get("/api/chat/<chat_id>/stream")
    def vercel_resume(chat_id: str) -> Any:
        record = records.get(f"vercel:{chat_id}")
        if record is None or not record.replayable() or record.message_id is None:
            return Response(status=204)  # nothing to resume (an approval's continuation is not replayed)
        return Response(record.stream(vercel_ai_events(record.follow(), message_id=record.message_id)),
                        headers=VERCEL_AI_HEADERS)
