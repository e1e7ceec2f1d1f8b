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
id: without ``user=``, whoever knows it continues that conversation and replays its last run). Behind
authentication give ``user``, a function returning the request's verified user (e.g. ``lambda:
request.environ.get("REMOTE_USER")`` set by your authenticating middleware, never a header the client
writes): conversations and recorded runs are then kept per user (``"user/<digest of the user>/<id>"``,
and an anonymous visitor's under ``"anonymous/<id>"``, which no id can turn into a user's), so another
user who sends or resumes the same id reaches an empty conversation of their own (204 for a resume),
never this one (vercel/chatbot PR #1486: a resume of another user's chat is refused). Records
are bounded per user (else per client address), so one client starting runs in many chats pushes out
only its own (``RunRecords(max_records_per_owner=)``). The server holds the history, so only the last
message of ``messages`` is read. An
approval is an AG-UI interrupt (resume with ``{"interruptId": <tool call id>, "status": "resolved",
"payload": {"approved": true}}``) or a Vercel ``tool-approval-request`` (``addToolApprovalResponse``,
then the chat sends): the resumed run's messages reach the client whole, after it ended
(``yiemagent.agent.ui_parts.decided_items``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from flask import Flask, Response, jsonify, request

from yiemagent import Agent, ConfigError, FormatError, YiemagentError
from yiemagent._internal.checks import check_callable
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
from yiemagent.mcp.server.sessions import session_owner

__all__ = ["Conversations", "add_protocol_routes", "request_owner", "user_digest"]

def _body(*, allow_empty: bool = False) -> dict[str, Any]:
    """The request's JSON object, bounded (``yiemagent.agent.ui_bodies``): a refusal is answered by the app."""
    return read_ui_body(request.stream, request.content_length, allow_empty=allow_empty)


def _refused(refused: UIBodyRefused) -> tuple[Response, int]:
    return jsonify(error=str(refused)), refused.status


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


def _latest_user(messages: Any) -> tuple[int, str | None]:
    """The index of the latest user message of ``messages`` and its ``id`` (a string, or None); (-1, None)."""
    for index in range(len(messages) - 1, -1, -1) if isinstance(messages, list) else ():
        message = messages[index]
        if isinstance(message, dict) and message.get("role") == "user":
            given = message.get("id")
            return index, given if isinstance(given, str) and given else None
    return -1, None


def user_digest(who: str) -> str:
    """The key a verified user's conversations are kept under (a digest: no user name in a key or a log)."""
    return hashlib.sha256(str(who).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def request_owner(user: Callable[[], str | None] | None) -> str:
    """Who the current request's conversations and runs count against: the verified user, else the address."""
    who = user() if user is not None else None
    return f"user {user_digest(who)}" if who is not None else session_owner(None, request.remote_addr)


def add_protocol_routes(app: Flask, conversations: Conversations, *,
                        user: Callable[[], str | None] | None = None) -> None:
    """``POST /ag-ui`` (AG-UI 1.0), ``POST /api/chat`` and ``GET /api/chat/<id>/stream`` (``useChat``) on ``app``.

    ``user``: the verified user of the current request, or None (anonymous); see the module docstring.

    Raises:
        ConfigError: ``user`` is not callable (e.g. the name of a header: a client writes those).
    """
    check_callable("user", user)
    records = RunRecords()
    app.extensions["yiemagent_run_records"] = records
    app.register_error_handler(UIBodyRefused, _refused)  # a body past its bounds: 400 / 413 {"error"}

    def keyed(protocol: str, given_id: str) -> tuple[str, str]:
        """The conversation's key, bound to the verified user when there is one, and the owner of its runs."""
        who = user() if user is not None else None  # two prefixes: a visitor's id never names a user's key
        key = f"{protocol}:anonymous/{given_id}" if who is None else f"{protocol}:user/{user_digest(who)}/{given_id}"
        return key, request_owner(user)  # an address: an IPv6 client's /64

    @app.post("/ag-ui")
    def ag_ui() -> Any:
        body = _body()
        thread_id = body.get("threadId") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(thread_id, str) or not thread_id:
            return jsonify(error="send an AG-UI RunAgentInput: {threadId, runId, messages}"), 400
        run_id = body.get("runId") if isinstance(body.get("runId"), str) else None
        given = body.get("messages")
        (key, owner), messages = keyed("ag-ui", thread_id), given if isinstance(given, list) else []
        user_index, user_id = _latest_user(messages)
        last = records.get(key)
        if not body.get("resume") and last is not None and user_id is not None and last.user_message_id == user_id:
            # the client runs again after a cut: the run of this message is replayed, not run twice
            if last.truncated:
                return jsonify(error="this message's run was too long to replay: load the thread's messages"), 409
            lines = ag_ui_events(last.follow(), thread_id=thread_id, run_id=run_id,
                                 snapshot=[m for m in messages[:user_index + 1] if isinstance(m, dict)])
            return Response(last.stream(lines), headers=AG_UI_HEADERS)
        agent = conversations.get(key)
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
        record = records.start(key, items, user_message_id=user_id, owner=owner)
        return Response(record.stream(ag_ui_events(record.follow(), thread_id=thread_id, run_id=run_id)),
                        headers=AG_UI_HEADERS)

    @app.post("/api/chat")
    def vercel_chat() -> Any:
        body = _body()
        chat_id = body.get("id") if isinstance(body, dict) else None
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(chat_id, str) or not chat_id or not isinstance(messages, list) or not messages:
            return jsonify(error='send useChat\'s body: {"id", "messages": [...]}'), 400
        key, owner = keyed("vercel", chat_id)
        agent = conversations.get(key)
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
        record = records.start(key, items, message_id=message_id, owner=owner)
        return Response(record.stream(vercel_ai_events(record.follow(), message_id=message_id)),
                        headers=VERCEL_AI_HEADERS)

    @app.get("/api/chat/<chat_id>/stream")
    def vercel_resume(chat_id: str) -> Any:
        record = records.get(keyed("vercel", chat_id)[0])  # another user's chat of this id: not found (204)
        if record is None or not record.replayable() or record.message_id is None:
            return Response(status=204)  # nothing to resume (an approval's continuation is not replayed)
        return Response(record.stream(vercel_ai_events(record.follow(), message_id=record.message_id)),
                        headers=VERCEL_AI_HEADERS)
