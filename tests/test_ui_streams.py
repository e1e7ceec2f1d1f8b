"""Issue 28 point 6: AG-UI and Vercel AI stream adapters (yiemagent/agent/ui_streams.py) and their Flask routes.

The Python tests read the protocol lines of scripted runs (``ScriptedLLM``: streamed with ``delta_chars``,
whole without). The Node tests point the real clients at the Flask example served on loopback
(werkzeug ``make_server``): ``HttpAgent`` from ``@ag-ui/client`` 1.0.0 and ``AbstractChat`` (the core of
``useChat``) with ``DefaultChatTransport`` from ``ai`` 7 (tests/node/ui, installed by ``npm ci``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent, tool
from yiemagent.agent.ui_parts import decided_items
from yiemagent.agent.ui_streams import (
    AG_UI_HEADERS,
    KEEP_ALIVE,
    VERCEL_AI_HEADERS,
    ag_ui_events,
    approval_decisions,
    vercel_ai_events,
    vercel_approval_decisions,
)
from yiemagent.examples.flask_chat import create_app
from yiemagent.exceptions import LLMError
from yiemagent.testing import ScriptedLLM
from yiemagent.textpolicy import register_secrets

SECRET = "sk-ui-streams-0123456789abcdef"
UI = Path(__file__).parent / "node" / "ui"


@tool
def get_weather(city: str) -> str:
    """Get the weather in a city."""
    return f"Sunny in {city}"


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _reply(message: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [{"message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}]}


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def script(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The model: weather first, then text, reasoning and a deletion that needs approval, then the end."""
    last = messages[-1]
    content = last.get("content") if isinstance(last.get("content"), str) else json.dumps(last.get("content"))
    if last["role"] == "user":
        if "fail" in content:
            raise LLMError(f"the model is down (key {SECRET})")
        return _reply({"role": "assistant", "content": None,
                       "tool_calls": [_call("call_weather", "get_weather", {"city": "Paris"})]})
    if last.get("tool_call_id") == "call_weather":
        return _reply({"role": "assistant", "content": "It is sunny. Deleting a.txt now.",
                       "reasoning_content": "The user asked for both.",
                       "tool_calls": [_call("call_delete", "delete_file", {"path": "a.txt"})]})
    if "rejected" in content:
        return _reply({"role": "assistant", "content": "I kept a.txt."})
    return _reply({"role": "assistant", "content": "Done: a.txt is gone."})


def make_agent(delta_chars: int | None = 4) -> Agent:
    """A conversation's agent: the scripted model (streaming with ``delta_chars``), the two tools."""
    register_secrets([SECRET])
    return Agent(ScriptedLLM([script], repeat_last=True, delta_chars=delta_chars), tools=[get_weather, delete_file])


def _data(lines: list[str]) -> list[Any]:
    out = []
    for line in lines:
        assert line.endswith("\n\n") and line.count("\n") == 2, line  # one data line per event
        if line.startswith(":"):
            continue
        body = line[len("data: "):].strip()
        out.append(body if body == "[DONE]" else json.loads(body))
    return out


def _split(body: str) -> list[str]:
    """A response body back into its SSE events."""
    return [chunk + "\n\n" for chunk in body.split("\n\n")[:-1]]


def check_ag_ui_pairs(events: list[dict[str, Any]]) -> None:
    """AG-UI's sequence rules (as @ag-ui/client's verifyEvents): RUN_STARTED first, each START ended, the end last."""
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
    open_ids: set[tuple[str, str]] = set()
    for event in events[1:-1]:
        kind = event["type"]
        key = event.get("messageId") or event.get("toolCallId") or event.get("stepName") or ""
        family = kind.rsplit("_", 1)[0]
        if kind.endswith(("_START", "STEP_STARTED")):
            assert (family, key) not in open_ids, event
            open_ids.add((family.replace("STEP_STARTED", "STEP"), key))
        elif kind.endswith(("_END", "STEP_FINISHED")):
            open_ids.remove((family.replace("STEP_FINISHED", "STEP"), key))
        elif kind in ("TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "REASONING_MESSAGE_CONTENT"):
            assert (family, key) in open_ids, event
    assert not open_ids, open_ids


# --------------------------------------------------------------------------- AG-UI, Python


def test_ag_ui_streams_text_tool_calls_results_and_an_approval_interrupt():
    agent = make_agent()
    stream = agent.stream("Weather in Paris, then delete a.txt")
    events = _data(list(ag_ui_events(stream, thread_id="t1", run_id="r1")))
    check_ag_ui_pairs(events)
    types = [e["type"] for e in events]
    assert events[0] == {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == "call_weather")
    assert json.loads(args) == {"city": "Paris"} and types.count("TOOL_CALL_ARGS") > 2  # streamed in pieces
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"], result["role"]) == ("call_weather", "Sunny in Paris", "tool")
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "It is sunny. Deleting a.txt now."
    reasoning = "".join(e["delta"] for e in events if e["type"] == "REASONING_MESSAGE_CONTENT")
    assert reasoning == "The user asked for both."
    start = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
    delete = next(e for e in events if e["type"] == "TOOL_CALL_START" and e["toolCallId"] == "call_delete")
    assert delete["parentMessageId"] == start["messageId"] and delete["toolCallName"] == "delete_file"
    end = events[-1]
    assert end["type"] == "RUN_FINISHED" and end["result"]["status"] == "awaiting_approval"
    (interrupt,) = end["outcome"]["interrupts"]
    assert end["outcome"]["type"] == "interrupt"
    assert interrupt["id"] == interrupt["toolCallId"] == "call_delete" and interrupt["reason"] == "tool_call"
    assert 'delete_file({"path": "a.txt"})' in interrupt["message"]
    assert interrupt["responseSchema"]["required"] == ["approved"]
    # the client answers the interrupt: the resumed run's result and final text, nothing shown twice
    entry = {"interruptId": "call_delete", "status": "resolved", "payload": {"approved": True}}
    decisions = approval_decisions([entry])
    assert decisions == {"call_delete": True}
    resumed = _data(list(ag_ui_events(decided_items(agent, decisions), thread_id="t1", run_id="r2")))
    check_ag_ui_pairs(resumed)
    assert not [e for e in resumed if e["type"] == "TOOL_CALL_START"]
    result = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == ("call_delete", "deleted a.txt")
    assert "".join(e["delta"] for e in resumed if e["type"] == "TEXT_MESSAGE_CONTENT") == "Done: a.txt is gone."
    assert resumed[-1]["outcome"] == {"type": "success"} and resumed[-1]["result"]["status"] == "completed"


def test_without_a_streaming_llm_call_the_text_comes_whole_from_message_end():
    agent = make_agent(delta_chars=None)
    events = _data(list(ag_ui_events(agent.stream("Weather in Paris, then delete a.txt"), thread_id="t")))
    check_ag_ui_pairs(events)
    contents = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert contents == ["It is sunny. Deleting a.txt now."]
    args = [e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS"]
    assert [json.loads(a) for a in args] == [{"city": "Paris"}, {"path": "a.txt"}]


def test_a_failed_run_is_run_error_with_the_secret_scrubbed():
    agent = make_agent()
    lines = list(ag_ui_events(agent.stream("please fail"), thread_id="t"))
    events = _data(lines)
    assert events[-1]["type"] == "RUN_ERROR" and "the model is down" in events[-1]["message"]
    assert "RUN_FINISHED" not in [e["type"] for e in events]
    notice = next(e for e in events if e["type"] == "CUSTOM")
    assert notice["name"] == "yiemagent-error" and notice["value"]["where"] == "llm_call"
    assert SECRET not in "".join(lines) and "***" in events[-1]["message"]


def test_approval_decisions_deny_by_default():
    entries = [{"interruptId": "a", "status": "resolved", "payload": {"approved": True}},
               {"interruptId": "b", "status": "resolved", "payload": {"approved": "yes"}},
               {"interruptId": "c", "status": "cancelled", "payload": {"approved": True}},
               {"interruptId": "d", "status": "resolved", "payload": {"approved": False, "reason": "not now"}},
               {"interruptId": "e", "status": "resolved"}]
    assert approval_decisions(entries) == {"a": True, "b": False, "c": False, "d": "not now", "e": False}
    with pytest.raises(ValueError, match="interruptId"):
        approval_decisions([{"status": "resolved"}])


def test_closing_the_generator_closes_the_agent_stream():
    agent = make_agent()
    stream = agent.stream("Weather in Paris, then delete a.txt")
    lines = ag_ui_events(stream, thread_id="t")
    assert json.loads(next(lines)[len("data: "):])["type"] == "RUN_STARTED"
    lines.close()
    with pytest.raises(StopIteration):
        stream.next(1)
    vercel = vercel_ai_events(agent.stream("again"))
    next(vercel)
    vercel.close()
    assert repr(vercel.gi_frame) == "None"  # finished


def test_a_quiet_spell_sends_keep_alive_comments_between_events():
    def slow(messages, tools):
        time.sleep(0.4)
        return _reply({"role": "assistant", "content": "Late but here."})

    agent = Agent(ScriptedLLM([slow]))
    lines = list(vercel_ai_events(agent.stream("hello"), heartbeat_seconds=0.05))
    assert lines.count(KEEP_ALIVE) >= 2
    chunks = _data(lines)
    assert "".join(c["delta"] for c in chunks[:-1] if c["type"] == "text-delta") == "Late but here."
    assert chunks[-1] == "[DONE]"


# --------------------------------------------------------------------------- Vercel AI, Python


def test_vercel_stream_has_the_chunks_of_the_ui_message_stream_protocol():
    agent = make_agent()
    chunks = _data(list(vercel_ai_events(agent.stream("Weather in Paris, then delete a.txt"))))
    assert chunks[0] == {"type": "start"} and chunks[-1] == "[DONE]"
    types = [c["type"] for c in chunks[:-1]]
    assert types.count("start-step") == types.count("finish-step") == 2
    available = [c for c in chunks[:-1] if c["type"] == "tool-input-available"]
    assert [(c["toolName"], c["input"]) for c in available] == [("get_weather", {"city": "Paris"}),
                                                               ("delete_file", {"path": "a.txt"})]
    output = next(c for c in chunks[:-1] if c["type"] == "tool-output-available")
    assert output == {"type": "tool-output-available", "toolCallId": "call_weather", "output": "Sunny in Paris"}
    assert "".join(c["delta"] for c in chunks[:-1] if c["type"] == "text-delta") == "It is sunny. Deleting a.txt now."
    assert "".join(c["delta"] for c in chunks[:-1] if c["type"] == "reasoning-delta") == "The user asked for both."
    request = next(c for c in chunks[:-1] if c["type"] == "tool-approval-request")
    assert request == {"type": "tool-approval-request", "approvalId": "call_delete", "toolCallId": "call_delete"}
    assert chunks[-2] == {"type": "finish", "finishReason": "tool-calls",
                          "messageMetadata": {"status": "awaiting_approval"}}
    # useChat sends the assistant message back with the tool part answered
    message = {"role": "assistant", "parts": [
        {"type": "tool-delete_file", "toolCallId": "call_delete", "state": "approval-responded",
         "approval": {"id": "call_delete", "approved": False, "reason": "keep it"}}]}
    assert vercel_approval_decisions(message) == {"call_delete": "keep it"}
    resumed = _data(list(vercel_ai_events(decided_items(agent, vercel_approval_decisions(message)))))
    assert {"type": "tool-output-denied", "toolCallId": "call_delete"} in resumed
    assert "".join(c["delta"] for c in resumed[:-1] if c["type"] == "text-delta") == "I kept a.txt."


def test_vercel_failed_run_sends_error_then_finish_and_done():
    chunks = _data(list(vercel_ai_events(make_agent().stream("please fail"))))
    error = next(c for c in chunks[:-1] if c["type"] == "error")
    assert "the model is down" in error["errorText"] and SECRET not in error["errorText"]
    assert chunks[-2]["type"] == "finish" and chunks[-2]["finishReason"] == "error" and chunks[-1] == "[DONE]"


# --------------------------------------------------------------------------- the Flask routes


@pytest.fixture
def protocol_app():
    """The Flask example with the scripted agent (its agents shut down after the test)."""
    app = create_app(make_agent, secret_key="test")
    yield app
    app.extensions["yiemagent_conversations"].close()


def test_flask_ag_ui_route_runs_and_resumes_a_thread(protocol_app):
    client = protocol_app.test_client()
    body = {"threadId": "t-1", "runId": "r-1", "messages": [{"id": "u", "role": "user", "content": "Go"}]}
    response = client.post("/ag-ui", json=body, buffered=False)
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    assert dict(AG_UI_HEADERS)["Cache-Control"] == response.headers["Cache-Control"]
    events = _data(_split(response.get_data(as_text=True)))
    assert events[-1]["outcome"]["type"] == "interrupt"
    resume = {**body, "runId": "r-2", "resume": [{"interruptId": "call_delete", "status": "resolved",
                                                  "payload": {"approved": True}}]}
    again = client.post("/ag-ui", json=resume)
    assert "Done: a.txt is gone." in again.get_data(as_text=True)
    assert client.post("/ag-ui", json=resume).status_code == 409  # nothing waits any more
    assert client.post("/ag-ui", json={"messages": []}).status_code == 400
    assert client.post("/ag-ui", json={"threadId": "t-2", "messages": [{"role": "assistant"}]}).status_code == 400


def test_flask_vercel_route_has_the_protocol_header_and_validates(protocol_app):
    client = protocol_app.test_client()
    body = {"id": "chat-1", "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Go"}]}]}
    response = client.post("/api/chat", json=body)
    assert response.headers["x-vercel-ai-ui-message-stream"] == VERCEL_AI_HEADERS["x-vercel-ai-ui-message-stream"]
    assert '"tool-approval-request"' in response.get_data(as_text=True)
    assert client.post("/api/chat", json={"id": "chat-1", "messages": []}).status_code == 400
    stale = {"id": "chat-1", "messages": [{"role": "assistant", "parts": []}]}
    assert client.post("/api/chat", json=stale).status_code == 409


# --------------------------------------------------------------------------- real clients in Node


@pytest.fixture
def served_protocol_app():
    """The Flask example served by werkzeug's threaded server on 127.0.0.1; yields its base URL."""
    from tests.mcp.server.kit import serving

    app = create_app(make_agent, secret_key="test")
    try:
        with serving(app, path="") as url:
            yield url
    finally:
        app.extensions["yiemagent_conversations"].close()


def _node(script: str, base_url: str) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
    try:
        from run_conformance import node24
    finally:
        sys.path.pop(0)
    if not (UI / "node_modules" / "ai").is_dir() or not (UI / "node_modules" / "@ag-ui" / "client").is_dir():
        pytest.skip(f"npm packages not installed in {UI} (npm ci)")
    done = subprocess.run([node24(), str(UI / script), base_url], cwd=UI, capture_output=True, text=True,
                          timeout=90)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.node
@pytest.mark.slow
def test_the_ag_ui_client_renders_the_conversation_with_a_tool_call_and_an_approval(served_protocol_app):
    out = _node("ag_ui_client.mjs", served_protocol_app)
    first, second = out["first"], out["second"]
    assert first["outcomes"] == ["interrupt"] and out["pendingAfterFirst"] == ["call_delete"]
    (interrupt,) = first["interrupts"]
    assert interrupt["toolCallId"] == "call_delete" and "delete_file" in interrupt["message"]
    assert second["outcomes"] == ["success"] and out["pendingAfterSecond"] == []
    messages = out["messages"]
    calls = {c["id"]: c for m in messages if m["role"] == "assistant" for c in m.get("toolCalls", [])}
    assert json.loads(calls["call_weather"]["function"]["arguments"]) == {"city": "Paris"}
    assert json.loads(calls["call_delete"]["function"]["arguments"]) == {"path": "a.txt"}
    results = {m["toolCallId"]: m["content"] for m in messages if m["role"] == "tool"}
    assert results == {"call_weather": "Sunny in Paris", "call_delete": "deleted a.txt"}
    texts = [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")]
    assert texts == ["It is sunny. Deleting a.txt now.", "Done: a.txt is gone."]
    assert [m["content"] for m in messages if m["role"] == "reasoning"] == ["The user asked for both."]
    assert messages[0]["role"] == "user"
    failing = out["failing"]
    assert len(failing["runErrors"]) == 1 and "the model is down" in failing["runErrors"][0]
    assert SECRET not in json.dumps(out) and failing["outcomes"] == []


@pytest.mark.node
@pytest.mark.slow
def test_the_vercel_ai_chat_renders_the_conversation_with_a_tool_call_and_an_approval(served_protocol_app):
    out = _node("vercel_ai_client.mjs", served_protocol_app)
    approved = out["approved"]
    assert approved["finished"] and approved["errors"] == [] and approved["status"] == "ready"
    before = approved["before"][-1]["parts"]
    request = next(p for p in before if p["type"] == "tool-delete_file")
    assert request["state"] == "approval-requested" and request["approval"]["id"] == "call_delete"
    assert request["input"] == {"path": "a.txt"}
    parts = approved["after"][-1]["parts"]
    weather = next(p for p in parts if p["type"] == "tool-get_weather")
    assert (weather["state"], weather["input"], weather["output"]) == ("output-available", {"city": "Paris"},
                                                                       "Sunny in Paris")
    delete = next(p for p in parts if p["type"] == "tool-delete_file")
    assert (delete["state"], delete["output"], delete["approval"]["approved"]) == ("output-available",
                                                                                  "deleted a.txt", True)
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts == ["It is sunny. Deleting a.txt now.", "Done: a.txt is gone."]
    assert [p["text"] for p in parts if p["type"] == "reasoning"] == ["The user asked for both."]
    assert [m["role"] for m in approved["after"]] == ["user", "assistant"]  # the resumed run continued it
    rejected = out["rejected"]
    delete = next(p for p in rejected["after"][-1]["parts"] if p["type"] == "tool-delete_file")
    assert delete["state"] == "output-denied"
    assert [p["text"] for p in rejected["after"][-1]["parts"] if p["type"] == "text"][-1] == "I kept a.txt."
    failing = out["failing"]
    assert failing["status"] == "error" and "the model is down" in failing["error"]
    assert SECRET not in json.dumps(out)
