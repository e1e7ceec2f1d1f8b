"""The stream protocols web frontends speak: AG-UI (CopilotKit, ``@ag-ui/client``) and the Vercel AI SDK (``useChat``).

::

    # Flask: an AG-UI endpoint and a useChat endpoint over the same agent
    return flask.Response(ag_ui_events(agent.stream(text), thread_id=body["threadId"],
                                       run_id=body["runId"]), headers=AG_UI_HEADERS)
    return flask.Response(vercel_ai_events(agent.stream(text)), headers=VERCEL_AI_HEADERS)

Both read what ``Agent.stream`` yields (events, then the answer dict) through
``yiemagent.agent.ui_parts`` and write server-sent events, one JSON object a
``data:`` line. What maps to what (``docs/guides/web_apps.rst`` has the table):

=========================  ===========================================  ==============================================
yiemagent                  AG-UI 1.0                                    Vercel AI UI message stream v1
=========================  ===========================================  ==============================================
the stream starts          ``RUN_STARTED``                              ``start``
``turn_start``/``_end``    ``STEP_STARTED``/``STEP_FINISHED``           ``start-step``/``finish-step``
reasoning                  ``REASONING_*`` (start, message, end)        ``reasoning-start``/``-delta``/``-end``
text                       ``TEXT_MESSAGE_START``/``CONTENT``/``END``   ``text-start``/``text-delta``/``text-end``
a tool call                ``TOOL_CALL_START``/``ARGS``/``END``         ``tool-input-start``/``-delta``/``-available``
its result                 ``TOOL_CALL_RESULT`` (errors: ``metadata``)  ``tool-output-available``/``-error``/``-denied``
an ``error`` event         ``CUSTOM`` ``yiemagent-error``               ``data-yiemagent-error`` (transient)
``awaiting_approval``      ``RUN_FINISHED`` outcome ``interrupt``       ``tool-approval-request`` each, ``finish``
status ``error``           ``RUN_ERROR``                                ``error``, ``finish`` (``error``)
status ``aborted``         ``RUN_FINISHED`` outcome ``cancelled``       ``abort``
any other status           ``RUN_FINISHED`` (``result``: the answer)    ``finish`` (``messageMetadata.status``)
=========================  ===========================================  ==============================================

Approvals: an AG-UI interrupt is ``{"id": tool_call_id, "reason": "tool_call",
"toolCallId", "message": "Approve name({...})?", "responseSchema":
APPROVAL_RESPONSE_SCHEMA, "metadata": {"yiemagent": {"name", "arguments"}}}``;
the client resumes with ``RunAgentInput.resume`` ``[{"interruptId",
"status": "resolved", "payload": {"approved": true}}]`` (``approval_decisions``
turns that into ``Agent.decide``'s argument). A Vercel approval request's
``approvalId`` is the tool call id; ``useChat``'s ``addToolApprovalResponse``
sends it back in the tool part's ``approval`` (``vercel_approval_decisions``).

Every ``data:`` line is written by the outbound text policy's ``json`` rule
(``ui_data_line``: one line of RFC 8259 JSON, known secrets ``***``). Closing
the generator (a WSGI server does when the client goes away) closes the
``AgentStream``, as ``sse_events`` does; a ``: keep-alive`` comment goes out
after ``heartbeat_seconds`` of quiet.

Spec: AG-UI protocol 1.0 (https://ag-ui.com/spec/1.0/schema.json, ``@ag-ui/core`` 1.0.0);
Vercel AI SDK UI message stream protocol v1 (``ai`` 7 ``uiMessageChunkSchema``, header
``x-vercel-ai-ui-message-stream: v1``); server-sent events (WHATWG HTML).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from .._internal.checks import check_number, checked_when_called
from ..loop import events as ev
from ..textpolicy import boundary, json_text
from .streaming import SSE_HEADERS, _with_heartbeats
from .ui_parts import UIPart, UIParts

__all__ = [
    "AG_UI_HEADERS",
    "APPROVAL_RESPONSE_SCHEMA",
    "KEEP_ALIVE",
    "VERCEL_AI_HEADERS",
    "ag_ui_events",
    "approval_decisions",
    "ui_data_line",
    "vercel_ai_events",
    "vercel_approval_decisions",
]

AG_UI_HEADERS = dict(SSE_HEADERS)
"""HTTP headers of an AG-UI response (server-sent events)."""

VERCEL_AI_HEADERS = {**SSE_HEADERS, "x-vercel-ai-ui-message-stream": "v1"}
"""HTTP headers of a Vercel AI UI message stream response (SSE plus ``x-vercel-ai-ui-message-stream: v1``)."""

APPROVAL_RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
"""The JSON Schema of the ``payload`` an AG-UI client resumes an approval interrupt with."""

KEEP_ALIVE = ": keep-alive\n\n"
"""The SSE comment both streams send after ``heartbeat_seconds`` without an event (clients ignore it)."""

_FINISH_REASONS = {"completed": "stop", "truncated": "length", "awaiting_approval": "tool-calls"}


def _check_options(*args: Any, heartbeat_seconds: Any = None, **kwargs: Any) -> None:
    """The stream functions' options, checked when they are called (not at their first line): issue 33."""
    check_number("heartbeat_seconds", heartbeat_seconds, optional=True)


@boundary("ui_stream", "json")
def ui_data_line(data: Any) -> str:
    """One SSE event ``data: <JSON>\\n\\n`` of a frontend protocol (the ``ui_stream`` boundary).

    ``data`` is written by the outbound text policy's ``json`` rule
    (``yiemagent.textpolicy.json_text``): one line of RFC 8259 JSON, no lone
    surrogate, no raw control character, known secrets ``***``.
    """
    return f"data: {json_text(data)}\n\n"


def _lines(items: Iterable[ev.Event | Mapping[str, Any] | None], heartbeat_seconds: float | None,
           render: Callable[[UIPart], Iterator[dict[str, Any]]], *first: dict[str, Any]) -> Iterator[str]:
    """``first``, then the ``data:`` lines ``render(part)`` makes of ``items``' parts (closing it closes ``items``)."""
    parts = UIParts()
    try:
        for event in first:
            yield ui_data_line(event)
        for item in _with_heartbeats(items, heartbeat_seconds):
            if item is None:
                yield KEEP_ALIVE
                continue
            for part in parts.feed(item):
                for chunk in render(part):
                    yield ui_data_line(chunk)
            if parts.done:
                return
        for part in parts.close():
            for chunk in render(part):
                yield ui_data_line(chunk)
    finally:
        close = getattr(items, "close", None)
        if callable(close):
            close()


def _approval_interrupt(call: Mapping[str, Any]) -> dict[str, Any]:
    name, arguments = str(call.get("name", "")), call.get("arguments", {})
    return {"id": str(call.get("tool_call_id", "")), "reason": "tool_call",
            "toolCallId": str(call.get("tool_call_id", "")),
            "message": f"Approve {name}({json_text(arguments)})?",
            "responseSchema": copy.deepcopy(APPROVAL_RESPONSE_SCHEMA),
            "metadata": {"yiemagent": {"name": name, "arguments": arguments}}}


def _error_message(answer: Mapping[str, Any]) -> str:
    return str(answer.get("error") or answer.get("content") or "the run failed")


@checked_when_called(_check_options)
def ag_ui_events(
    items: Iterable[ev.Event | Mapping[str, Any] | None],
    *,
    thread_id: str,
    run_id: str | None = None,
    heartbeat_seconds: float | None = 15.0,
    snapshot: Sequence[Mapping[str, Any]] | None = None,
) -> Iterator[str]:
    """AG-UI 1.0 events for ``items`` (e.g. ``agent.stream(text)``): ``data: <event JSON>\\n\\n`` strings.

    First ``{"type": "RUN_STARTED", "threadId", "runId"}``, last ``RUN_FINISHED``
    (``result``: the answer dict; ``outcome``: ``{"type": "success"}``, ``{"type":
    "cancelled"}`` for an aborted run, or ``{"type": "interrupt", "interrupts": [...]}``
    for ``awaiting_approval``, one interrupt per waiting call, shaped as the module
    docstring says) or ``RUN_ERROR`` ``{"message", "code": "error"}`` for a failed run.
    In between, per assistant message (its ``messageId``): ``REASONING_*``,
    ``TEXT_MESSAGE_START`` (``role: "assistant"``) / ``CONTENT`` / ``END``, and
    ``TOOL_CALL_START`` (``parentMessageId``) / ``ARGS`` / ``END``; each result is
    ``TOOL_CALL_RESULT`` ``{"messageId", "toolCallId", "content", "role": "tool"}``
    (``metadata.yiemagent`` ``{"is_error", "rejected"}`` when the call failed or a
    person rejected it); each turn a ``STEP_STARTED``/``STEP_FINISHED`` pair named
    ``"turn N"``; an ``error`` event (the run may go on) is ``CUSTOM``
    ``{"name": "yiemagent-error", "value": {"where", "message"}}``.

    Args:
        items: events then the answer dict (None: a keep-alive now, as ``RunRecord.follow`` yields); an
            ``AgentStream`` is closed when this generator is.
        thread_id: ``RunAgentInput.threadId`` (the conversation).
        run_id: ``RunAgentInput.runId``; None: the ``AgentStream``'s ``input_id``, else a random id.
        heartbeat_seconds: a ``: keep-alive`` comment after this long without an event (None: never).
        snapshot: AG-UI messages to send as ``MESSAGES_SNAPSHOT`` right after ``RUN_STARTED`` (the client
            replaces its messages with them): a replay after a cut (``yiemagent.agent.ui_runs``) sends the
            client's messages up to the one that began the run, so that the partial answer it kept is dropped.

    Example:
        >>> import json
        >>> from yiemagent.loop.events import MessageUpdateEvent
        >>> for line in ag_ui_events([MessageUpdateEvent(delta="Hi"), {"content": "Hi", "status": "completed"}],
        ...                          thread_id="t1", run_id="r1"):
        ...     print(json.loads(line[len("data: "):])["type"])
        RUN_STARTED
        TEXT_MESSAGE_START
        TEXT_MESSAGE_CONTENT
        TEXT_MESSAGE_END
        RUN_FINISHED
    """
    run = run_id or str(getattr(items, "input_id", "") or uuid.uuid4().hex)

    def render(part: UIPart) -> Iterator[dict[str, Any]]:
        kind = part.kind
        if kind == "step_start":
            yield {"type": "STEP_STARTED", "stepName": part.id}
        elif kind == "step_end":
            yield {"type": "STEP_FINISHED", "stepName": part.id}
        elif kind == "reasoning_start":
            yield {"type": "REASONING_START", "messageId": part.id}
            yield {"type": "REASONING_MESSAGE_START", "messageId": part.id, "role": "reasoning"}
        elif kind == "reasoning_delta":
            yield {"type": "REASONING_MESSAGE_CONTENT", "messageId": part.id, "delta": part.delta}
        elif kind == "reasoning_end":
            yield {"type": "REASONING_MESSAGE_END", "messageId": part.id}
            yield {"type": "REASONING_END", "messageId": part.id}
        elif kind == "text_start":
            yield {"type": "TEXT_MESSAGE_START", "messageId": part.id, "role": "assistant"}
        elif kind == "text_delta":
            yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": part.id, "delta": part.delta}
        elif kind == "text_end":
            yield {"type": "TEXT_MESSAGE_END", "messageId": part.id}
        elif kind == "tool_start":
            yield {"type": "TOOL_CALL_START", "toolCallId": part.id, "toolCallName": part.name,
                   "parentMessageId": part.message_id}
        elif kind == "tool_args":
            yield {"type": "TOOL_CALL_ARGS", "toolCallId": part.id, "delta": part.delta}
        elif kind == "tool_end":
            yield {"type": "TOOL_CALL_END", "toolCallId": part.id}
        elif kind == "tool_result":
            event = {"type": "TOOL_CALL_RESULT", "messageId": uuid.uuid4().hex, "toolCallId": part.id,
                     "content": part.data["text"], "role": "tool"}
            if part.data["is_error"] or part.data["rejected"]:
                event["metadata"] = {"yiemagent": {"is_error": part.data["is_error"],
                                                   "rejected": part.data["rejected"]}}
            yield event
        elif kind == "notice":
            yield {"type": "CUSTOM", "name": "yiemagent-error", "value": part.data}
        elif kind == "answer":
            yield _ag_ui_end(part.data, thread_id, run)

    first: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": thread_id, "runId": run}]
    if snapshot is not None:
        first.append({"type": "MESSAGES_SNAPSHOT", "messages": [dict(m) for m in snapshot]})
    yield from _lines(items, heartbeat_seconds, render, *first)


def _ag_ui_end(answer: Mapping[str, Any], thread_id: str, run: str) -> dict[str, Any]:
    status = answer.get("status")
    if status == "error":
        return {"type": "RUN_ERROR", "message": _error_message(answer), "code": "error"}
    end: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run, "result": dict(answer)}
    pending = answer.get("pending_approvals") or []
    if status == "awaiting_approval" and pending:
        end["outcome"] = {"type": "interrupt", "interrupts": [_approval_interrupt(call) for call in pending]}
    elif status == "aborted":
        end["outcome"] = {"type": "cancelled"}
        del end["result"]  # a cancelled run has no result (AG-UI 1.0)
    else:
        end["outcome"] = {"type": "success"}
    return end


@checked_when_called(_check_options)
def vercel_ai_events(
    items: Iterable[ev.Event | Mapping[str, Any] | None],
    *,
    message_id: str | None = None,
    heartbeat_seconds: float | None = 15.0,
) -> Iterator[str]:
    """Vercel AI UI message stream v1 chunks for ``items``: ``data: <chunk JSON>\\n\\n`` strings, ``data: [DONE]`` last.

    ``{"type": "start"}`` (``messageId`` when given) first; per turn
    ``start-step``/``finish-step``; ``reasoning-start``/``-delta``/``-end`` and
    ``text-start``/``-delta``/``-end`` (``id``: one per assistant message);
    per tool call ``tool-input-start`` ``{"toolCallId", "toolName"}``,
    ``tool-input-delta`` ``{"inputTextDelta"}``, ``tool-input-available``
    ``{"input"}`` (the parsed arguments), then ``tool-output-available``
    ``{"output": <result text>}``, ``tool-output-error`` ``{"errorText"}`` or,
    for a call a person rejected, ``tool-output-denied``; an ``error`` event (the
    run may go on) is a transient ``data-yiemagent-error`` ``{"where",
    "message"}``. The end: ``awaiting_approval`` gives one ``tool-approval-request``
    ``{"approvalId": tool_call_id, "toolCallId"}`` per waiting call; a failed run
    ``{"type": "error", "errorText"}``; an aborted one ``{"type": "abort",
    "reason"}`` (and no ``finish``); the others ``finish`` ``{"finishReason":
    "stop" | "length" | "tool-calls" | "error" | "other", "messageMetadata":
    {"status"}}``.

    Args:
        items: events then the answer dict (None: a keep-alive now, as ``RunRecord.follow`` yields); an
            ``AgentStream`` is closed when this generator is.
        message_id: the assistant message's id for ``start`` (None: the client picks one; leave it
            None when continuing the client's last assistant message, e.g. after an approval).
        heartbeat_seconds: a ``: keep-alive`` comment after this long without an event (None: never).

    Example:
        >>> from yiemagent.loop.events import MessageUpdateEvent
        >>> for line in vercel_ai_events([MessageUpdateEvent(delta="Hi"), {"content": "Hi", "status": "completed"}]):
        ...     print(line.strip())  # doctest: +ELLIPSIS
        data: {"type": "start"}
        data: {"type": "text-start", "id": "..."}
        data: {"type": "text-delta", "id": "...", "delta": "Hi"}
        data: {"type": "text-end", "id": "..."}
        data: {"type": "finish", "finishReason": "stop", "messageMetadata": {"status": "completed"}}
        data: [DONE]
    """

    def render(part: UIPart) -> Iterator[dict[str, Any]]:
        kind = part.kind
        if kind in ("step_start", "step_end"):
            yield {"type": "start-step" if kind == "step_start" else "finish-step"}
        elif kind in ("reasoning_start", "reasoning_end", "text_start", "text_end"):
            yield {"type": kind.replace("_", "-"), "id": part.id}
        elif kind in ("reasoning_delta", "text_delta"):
            yield {"type": kind.replace("_", "-"), "id": part.id, "delta": part.delta}
        elif kind == "tool_start":
            yield {"type": "tool-input-start", "toolCallId": part.id, "toolName": part.name}
        elif kind == "tool_args":
            yield {"type": "tool-input-delta", "toolCallId": part.id, "inputTextDelta": part.delta}
        elif kind == "tool_end":
            yield {"type": "tool-input-available", "toolCallId": part.id, "toolName": part.name, "input": part.data}
        elif kind == "tool_result":
            if part.data["rejected"]:
                yield {"type": "tool-output-denied", "toolCallId": part.id}
            elif part.data["is_error"]:
                yield {"type": "tool-output-error", "toolCallId": part.id, "errorText": part.data["text"]}
            else:
                yield {"type": "tool-output-available", "toolCallId": part.id, "output": part.data["text"]}
        elif kind == "notice":
            yield {"type": "data-yiemagent-error", "data": part.data, "transient": True}
        elif kind == "answer":
            yield from _vercel_end(part.data)

    start: dict[str, Any] = {"type": "start"}
    if message_id is not None:
        start["messageId"] = message_id
    yield from _lines(items, heartbeat_seconds, render, start)
    yield "data: [DONE]\n\n"


def _vercel_end(answer: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    status = str(answer.get("status") or "completed")
    if status == "aborted":
        yield {"type": "abort", "reason": str(answer.get("content") or "the run was aborted")}
        return
    if status == "error":
        yield {"type": "error", "errorText": _error_message(answer)}
    for call in answer.get("pending_approvals") or [] if status == "awaiting_approval" else []:
        call_id = str(call.get("tool_call_id", ""))
        yield {"type": "tool-approval-request", "approvalId": call_id, "toolCallId": call_id}
    yield {"type": "finish", "finishReason": "error" if status == "error" else _FINISH_REASONS.get(status, "other"),
           "messageMetadata": {"status": status}}


def approval_decisions(resume: Sequence[Mapping[str, Any]]) -> dict[str, bool | str]:
    """``Agent.decide``'s argument from AG-UI ``RunAgentInput.resume`` entries answering approval interrupts.

    ``{"interruptId": tool_call_id, "status": "resolved", "payload": {"approved": true}}``
    approves; ``"approved": false`` (with an optional ``"reason"``), any other
    payload, and ``"status": "cancelled"`` reject (deny by default: only a JSON
    ``true`` approves).

    Raises:
        ValueError: an entry is not an object with a string ``interruptId``.
    """
    decisions: dict[str, bool | str] = {}
    for entry in resume:
        interrupt_id = entry.get("interruptId") if isinstance(entry, Mapping) else None
        if not isinstance(interrupt_id, str) or not interrupt_id:
            raise ValueError("each resume entry needs a string interruptId (the tool call id)")
        payload = entry.get("payload")
        payload = payload if isinstance(payload, Mapping) else {}
        if entry.get("status") == "resolved" and payload.get("approved") is True:
            decisions[interrupt_id] = True
        else:
            reason = payload.get("reason")
            decisions[interrupt_id] = reason if isinstance(reason, str) and reason.strip() else False
    return decisions


def vercel_approval_decisions(message: Mapping[str, Any]) -> dict[str, bool | str]:
    """``Agent.decide``'s argument from a ``useChat`` assistant message's answered approvals.

    Reads the message's tool parts in state ``approval-responded``: ``approval``
    ``{"id": tool_call_id, "approved": bool, "reason"?}`` (what ``addToolApprovalResponse`` sets).
    ``approved: true`` approves; anything else rejects (with the reason when given). ``{}`` when none.
    """
    decisions: dict[str, bool | str] = {}
    parts = message.get("parts")
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, Mapping) or part.get("state") != "approval-responded":
            continue
        approval = part.get("approval")
        if not isinstance(approval, Mapping) or not isinstance(approval.get("id"), str):
            continue
        reason = approval.get("reason")
        decisions[approval["id"]] = True if approval.get("approved") is True else (
            reason if isinstance(reason, str) and reason.strip() else False)
    return decisions
