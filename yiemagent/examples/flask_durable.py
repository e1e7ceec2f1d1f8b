"""A Flask app serving store-backed conversations from any number of web processes.

Every request may reach any gunicorn worker: the conversation lives in the store, not in the
process. A message is first put in the conversation's inbox (``store.enqueue``), then served
*in-process* under the store's lease (``serve_input``), or, with ``"wait": false``, by a
background drain while the client polls for the answer. Needs ``pip install flask gunicorn``.

Routes (JSON in and out; every reply carries ``X-Served-By: <pid>``):

* ``POST /conversations/<id>/messages`` ``{"message": str | user-message dict, "input_id": str
  (optional: a retried request with the same id is stored once), "wait": bool (default true)}``
  -> 200 ``{"seq": n, "answer": {...}}``, or 202 ``{"seq": n}`` when not waiting or when the
  answer took longer than ``answer_timeout_seconds`` (it is served later all the same); 429 (nothing
  stored) for a ``"wait": false`` input past the client's ``max_background_per_client`` running ones.
* ``GET /conversations/<id>/messages/<seq>`` -> 200 ``{"seq": n, "answer": {...}}``, 202
  ``{"seq": n}`` while pending (plus ``"pending_approvals"`` while its run waits for a person),
  404 for an unknown seq.
* ``POST /conversations/<id>/stream`` ``{"message": ..., "input_id": str (optional, recommended:
  chosen by the client, so that it can ask for the answer even if the connection is cut before
  the first byte)}`` -> ``text/event-stream``: first ``event: input`` ``{"input_id", "seq"}``,
  then the run's events (``yiemagent.sse_events``), the answer last as ``event: answer``. A
  client that goes away does not stop the run: its answer is stored. The same ``input_id`` again
  is stored once: it streams the stored answer, or waits for the run in progress.
* ``GET /conversations/<id>/answers/<input_id>`` -> 200 ``{"input_id", "seq", "answer"}``, 202
  ``{"input_id", "seq"}`` while pending (plus ``"pending_approvals"``), 404 for an unknown id:
  the answer of a stream whose connection was cut.
* ``GET /conversations/<id>/approvals`` -> 200 ``{"pending_approvals": [{"tool_call_id", "name",
  "arguments", "input_id", "seq"}]}``: the calls waiting for a decision (``yiemagent.tools.approvals``).
* ``POST /conversations/<id>/approvals`` ``{"decisions": {tool_call_id: true | false | "reason"}}``
  -> 200 ``{"answer": {...}}`` (the resumed run's answer, or ``awaiting_approval`` while calls are
  left), 409 ``{"error": ...}`` for a call not waiting or already decided (``ApprovalError``), 202
  when the resumed run took longer than ``answer_timeout_seconds``. Any worker may take it: the
  waiting calls and the decisions live in the store.

Branching (``yiemagent.loop.branching``; messages addressed by their index in the history, and every
operation names the ``version`` it was read on, so that two tabs or users editing at once cannot
both win):

* ``GET /conversations/<id>`` -> 200 ``{"version": v, "history": [{"index", "role", "text"}]}``.
* ``POST /conversations/<id>/edit`` ``{"index": i, "message": str, "version": v}`` -> 200
  ``{"seq", "answer", "version"}``: the user message ``i`` replaced, the model run afresh from it;
  409 ``{"error", "version"}`` when the conversation is no longer at ``v`` (another edit, or an
  answer, won: nothing of this one was applied; its text stays in the inbox); 400 for an index
  that is not a user message.
* ``POST /conversations/<id>/regenerate`` ``{"version": v, "keep_tool_results": bool}`` -> the
  same for the last answer (``keep_tool_results``: its tools are not run again).
* ``POST /conversations/<id>/rewind`` ``{"index": i, "version": v}`` -> the history cut after ``i``.
* ``POST /conversations/<id>/fork`` ``{"index": i, "version": v}`` -> 201 ``{"conversation_id"}``.

A message whose run asks for a tool declared ``@tool(needs_approval=True)`` answers
``{"status": "awaiting_approval", "pending_approvals": [...]}``; a new message instead of a
decision rejects those calls (the rule of ``yiemagent.tools.approvals``).

Run it (a real model behind an OpenAI-compatible endpoint, PostgreSQL for the store) with
*threaded* workers whose timeouts are longer than the longest run (``docs/guides/web_apps.rst``
says why: a sync worker is killed after ``--timeout`` seconds of one request, and the next
message of that conversation then waits ``lease_seconds`` for the dead worker's lease)::

    YIEMAGENT_STORE="host=127.0.0.1 port=5432 dbname=chat user=chat" \\
    OPENAI_BASE_URL=http://127.0.0.1:8080/v1 \\
    gunicorn -k gthread -w 3 --threads 8 --timeout 300 --graceful-timeout 300 \\
        -b 127.0.0.1:8000 'yiemagent.examples.flask_durable:from_env()'

``YIEMAGENT_STORE`` is a PostgreSQL DSN or URL, else a SQLite file path.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, jsonify, request

from yiemagent import SSE_HEADERS, Agent, ConversationStore, sse_events
from yiemagent.agent.ui_bodies import UIBodyRefused, read_ui_body
from yiemagent.exceptions import ApprovalError, BranchConflictError, BranchError, ConfigError, FormatError
from yiemagent.store.approvals import pending_approvals, waiting_answer
from yiemagent.store.base import find_input
from yiemagent.store.branching import branch_input, committed_history, fork_conversation
from yiemagent.workers import AgentPool, serve_input

__all__ = ["create_app", "from_env", "open_store"]

StoreFactory = Callable[[], ConversationStore]
AgentMaker = Callable[[ConversationStore, str], Agent]


def _body(*, allow_empty: bool = False, expected: str = "a JSON object") -> dict[str, Any]:
    """The request's JSON object, bounded (``yiemagent.agent.ui_bodies``): a refusal is answered by the app.

    A body that is not JSON, or not an object, is refused with what to send (``expected``).
    """
    try:
        return read_ui_body(request.stream, request.content_length, allow_empty=allow_empty)
    except UIBodyRefused as refused:
        if refused.status != 400:
            raise
        raise UIBodyRefused(f"{refused}: the body must be {expected}", refused.status) from None


def _refused(refused: UIBodyRefused) -> tuple[Response, int]:
    return jsonify(error=str(refused)), refused.status


def create_app(
    store_factory: StoreFactory, make_agent: AgentMaker, *, answer_timeout_seconds: float = 60.0,
    max_background_per_client: int = 64,
) -> Flask:
    """The Flask app (routes in the module docstring).

    Args:
        store_factory: ``store_factory() -> ConversationStore``, called once per process on
            its first request (after gunicorn forked it).
        make_agent: ``make_agent(store, conversation_id) -> Agent`` with ``store=store`` and
            ``conversation_id=conversation_id``.
        answer_timeout_seconds: how long a waiting request waits for its answer.
        max_background_per_client: ``"wait": false`` inputs one client address may have running on threads of
            their own (one more: 429, nothing stored).
    """
    app = Flask(__name__)
    app.register_error_handler(UIBodyRefused, _refused)  # a body past its bounds: 400 / 413 {"error"}
    lock = threading.Lock()
    opened: list[ConversationStore] = []
    agents = AgentPool(lambda conversation_id: make_agent(store(), conversation_id))

    def store() -> ConversationStore:
        with lock:
            if not opened:
                opened.append(store_factory())
            return opened[0]

    def reply(body: dict[str, Any], status: int) -> tuple[Response, int]:
        response = jsonify(body)
        response.headers["X-Served-By"] = str(os.getpid())
        return response, status

    background: dict[str | None, int] = {}  # drains running on threads of their own, per client address

    def drain_in_background(conversation_id: str, seq: int) -> None:
        owner = request.remote_addr

        def run() -> None:
            try:
                serve_input(agents, store(), conversation_id, seq, timeout_seconds=None)
            except Exception:
                app.logger.exception("background drain of %s failed; the input stays in the inbox", conversation_id)
            finally:
                with lock:
                    background[owner] -= 1
                    if not background[owner]:
                        del background[owner]

        with lock:
            background[owner] = background.get(owner, 0) + 1
        threading.Thread(target=run, name=f"drain-{conversation_id}", daemon=True).start()

    @app.post("/conversations/<conversation_id>/messages")
    def post_message(conversation_id: str) -> tuple[Response, int]:
        body = _body(expected='a JSON object with "message"')
        if not isinstance(body, dict) or "message" not in body:
            return reply({"error": 'the body must be a JSON object with "message"'}, 400)
        input_id = body.get("input_id")
        if input_id is not None and not isinstance(input_id, str):
            return reply({"error": '"input_id" must be a string'}, 400)
        with lock:  # each "wait": false input takes a thread: a client has max_background_per_client of them
            busy = body.get("wait", True) is False and background.get(request.remote_addr, 0) >= \
                max_background_per_client
        if busy:
            return reply({"error": "too many inputs of this client run in the background: wait for one"}, 429)
        try:
            seq = store().enqueue(conversation_id, body["message"], input_id=input_id)
        except FormatError as exc:
            return reply({"error": str(exc)}, 400)
        if body.get("wait", True) is False:
            drain_in_background(conversation_id, seq)
            return reply({"seq": seq}, 202)
        try:
            answer = serve_input(agents, store(), conversation_id, seq, timeout_seconds=answer_timeout_seconds)
        except TimeoutError:
            drain_in_background(conversation_id, seq)
            return reply({"seq": seq}, 202)
        return reply({"seq": seq, "answer": answer}, 200)

    @app.get("/conversations/<conversation_id>/messages/<int:seq>")
    def get_answer(conversation_id: str, seq: int) -> tuple[Response, int]:
        entry = store().get_input(conversation_id, seq)
        if entry is None:
            return reply({"error": f"no input {seq} in conversation {conversation_id!r}"}, 404)
        if entry.answer is None:
            waiting = waiting_answer(store(), conversation_id, seq)
            return reply({"seq": seq} if waiting is None else
                         {"seq": seq, "pending_approvals": waiting["pending_approvals"]}, 202)
        return reply({"seq": seq, "answer": entry.answer}, 200)

    @app.post("/conversations/<conversation_id>/stream")
    def post_stream(conversation_id: str) -> Response | tuple[Response, int]:
        body = _body(expected='a JSON object with "message"')
        if not isinstance(body, dict) or "message" not in body:
            return reply({"error": 'the body must be a JSON object with "message"'}, 400)
        input_id = body.get("input_id")
        if input_id is not None and (not isinstance(input_id, str) or not input_id):
            return reply({"error": '"input_id" must be a non-empty string'}, 400)
        agent = make_agent(store(), conversation_id)  # its own agent: it runs on a thread of its own
        try:
            stream = agent.stream(body["message"], input_id=input_id)
        except (FormatError, ConfigError) as exc:
            agent.shutdown()
            return reply({"error": str(exc)}, 400)
        except BaseException:
            agent.shutdown()
            raise
        assert stream.future is not None
        # shut the agent down once its run is over, whether or not the client is still reading
        stream.future.add_done_callback(lambda _: threading.Thread(target=agent.shutdown, daemon=True,
                                                                   name=f"close-{conversation_id}").start())
        response = Response(sse_events(stream), headers=SSE_HEADERS)
        response.headers["X-Served-By"] = str(os.getpid())
        return response

    @app.get("/conversations/<conversation_id>/answers/<input_id>")
    def get_answer_by_id(conversation_id: str, input_id: str) -> tuple[Response, int]:
        entry = find_input(store(), conversation_id, input_id)
        if entry is None:
            return reply({"error": f"no input {input_id!r} in conversation {conversation_id!r}"}, 404)
        if entry.answer is None:
            waiting = waiting_answer(store(), conversation_id, entry.seq)
            return reply({"input_id": input_id, "seq": entry.seq} if waiting is None else
                         {"input_id": input_id, "seq": entry.seq,
                          "pending_approvals": waiting["pending_approvals"]}, 202)
        return reply({"input_id": input_id, "seq": entry.seq, "answer": entry.answer}, 200)

    @app.get("/conversations/<conversation_id>/approvals")
    def get_approvals(conversation_id: str) -> tuple[Response, int]:
        return reply({"pending_approvals": pending_approvals(store(), conversation_id)}, 200)

    @app.post("/conversations/<conversation_id>/approvals")
    def post_approvals(conversation_id: str) -> tuple[Response, int]:
        body = _body()
        decisions = body.get("decisions") if isinstance(body, dict) else None
        if not isinstance(decisions, dict) or not decisions:
            return reply({"error": 'the body must be {"decisions": {tool_call_id: true | false | "reason"}}'}, 400)
        try:
            answer = agents.decide(conversation_id, decisions, timeout_seconds=answer_timeout_seconds)
        except ApprovalError as exc:
            return reply({"error": str(exc), "tool_call_id": exc.tool_call_id}, 409)
        except TimeoutError:
            return reply({"decided": sorted(decisions)}, 202)
        return reply({"answer": answer}, 200)

    @app.get("/conversations/<conversation_id>")
    def get_conversation(conversation_id: str) -> tuple[Response, int]:
        history, _, version = committed_history(store(), conversation_id)
        return reply({"version": version, "history": [{"index": i, "role": m.role, "text": getattr(m, "text", "")}
                                                      for i, m in enumerate(history)]}, 200)

    def branch(conversation_id: str, op: str) -> tuple[Response, int]:
        body = _body(allow_empty=True)
        body = body if isinstance(body, dict) else {}
        index, version = body.get("index"), body.get("version")
        index = None if isinstance(index, bool) else index  # true is not an index (fail closed)
        version = "" if isinstance(version, bool) else version
        at = index if isinstance(index, int) else -1
        if (version is not None and not isinstance(version, int)) or (op != "regenerate" and not isinstance(
                index, int)):
            return reply({"error": 'the body must be {"index": int, "version": int, ...}'}, 400)
        try:
            if op == "fork":
                new_id, _ = fork_conversation(store(), conversation_id, at, expected_version=version)
                return reply({"conversation_id": new_id}, 201)
            message = branch_input(store(), conversation_id, op, index=at, text=body.get("message"),  # type: ignore[arg-type]
                                   keep_tool_results=body.get("keep_tool_results") is True, expected_version=version)
            seq = store().enqueue(conversation_id, message, input_id=body.get("input_id"))
            answer = serve_input(agents, store(), conversation_id, seq, timeout_seconds=answer_timeout_seconds)
        except BranchConflictError as exc:
            return reply({"error": str(exc), "version": store().load(conversation_id).version}, 409)
        except (BranchError, FormatError) as exc:
            return reply({"error": str(exc)}, 400)
        except TimeoutError:
            return reply({"seq": seq}, 202)
        now = store().load(conversation_id).version
        if answer.get("status") == "conflict":  # planned on v, but another operation or answer was served first
            return reply({"error": answer.get("error"), "seq": seq, "version": now}, 409)
        return reply({"seq": seq, "answer": answer, "version": now}, 200)

    for op in ("edit", "regenerate", "rewind", "fork"):
        app.add_url_rule(f"/conversations/<conversation_id>/{op}", f"branch_{op}", methods=["POST"],
                         view_func=lambda conversation_id, op=op: branch(conversation_id, op))

    return app


def open_store(spec: str) -> ConversationStore:
    """A PostgreSQL store for a DSN or ``postgresql://`` URL, else a SQLite store on that path."""
    if spec.startswith(("postgres://", "postgresql://")) or "host=" in spec or "dbname=" in spec:
        from yiemagent import PostgresStore

        return PostgresStore(spec)
    from yiemagent import SQLiteStore

    return SQLiteStore(spec)


def from_env() -> Flask:
    """The app for gunicorn, configured by the environment, as ``flask_chat.from_env`` is.

    ``YIEMAGENT_STORE`` (a SQLite path or a PostgreSQL DSN, required), ``OPENAI_BASE_URL``
    (required), ``YIEMAGENT_MODEL`` (default ``gpt-4o-mini``; ``OPENAI_MODEL`` is read too),
    ``OPENAI_API_KEY``. The model is asked to stream, so ``/stream`` sends the answer as it is written.

    Raises:
        ConfigError: ``YIEMAGENT_STORE`` or ``OPENAI_BASE_URL`` is not set.
    """
    from yiemagent import openai_chat

    spec, base_url = os.environ.get("YIEMAGENT_STORE"), os.environ.get("OPENAI_BASE_URL")
    if not spec or not base_url:
        raise ConfigError("set YIEMAGENT_STORE (a SQLite path or a PostgreSQL DSN) and OPENAI_BASE_URL (an "
                          "OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1)")
    model = os.environ.get("YIEMAGENT_MODEL") or os.environ.get("OPENAI_MODEL") or "gpt-4o-mini"
    llm = openai_chat(base_url, model, api_key=os.environ.get("OPENAI_API_KEY") or None, stream=True)

    def make_agent(store: ConversationStore, conversation_id: str) -> Agent:
        return Agent(llm, store=store, conversation_id=conversation_id)

    return create_app(lambda: open_store(spec), make_agent)
