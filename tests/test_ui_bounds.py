"""Bodies web frontends send are bounded per request, and run records per owner (issue 33 point 2, hidden rule).

The Flask examples (``flask_chat`` with its AG-UI and ``useChat`` routes, ``flask_durable``) read bodies with
``yiemagent.agent.ui_bodies.read_ui_body``: before, ``request.get_json`` read any size, a body nested 100,000
deep raised ``RecursionError`` (a 500 and a traceback), and a ``messages`` list of 50,000 entries or a part
of 2 MB reached the agent. The shapes are hostile ones no real frontend sends (flop-labs/technocore-chat
#130: a body nested 20,000 deep answered 500, a ``RecursionError``, under the size cap); they go over raw
HTTP (``requests``) to the app on werkzeug's threaded server, and another client is served after each.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.mcp.server.kit import serving
from yiemagent import Agent
from yiemagent.agent.ui_bodies import UIBodyLimits, UIBodyRefused, check_ui_value, read_ui_body
from yiemagent.agent.ui_runs import RunRecord, RunRecords
from yiemagent.examples.flask_chat import create_app
from yiemagent.testing import ScriptedLLM, text_reply

pytest.importorskip("flask", reason="the flask extra is not installed")


@pytest.fixture(scope="module")
def chat_url() -> Iterator[str]:
    app = create_app(lambda: Agent(ScriptedLLM([text_reply("hello")] * 50)), secret_key="test")
    try:
        with serving(app, path="") as url:
            yield url
    finally:
        app.extensions["yiemagent_conversations"].close()


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _ag_ui(messages: Any, **extra: Any) -> dict[str, Any]:
    return {"threadId": "t-hostile", "runId": "r1", "messages": messages, **extra}


def _user(text: str, n: int = 0) -> dict[str, Any]:
    return {"id": f"u{n}", "role": "user", "content": text}


HOSTILE = [
    ("/ag-ui", '{"threadId": "t", "runId": "r", "messages": ' + _deep(100_000) + "}", 400, "nested"),
    ("/api/chat", '{"id": "c", "messages": ' + _deep(5_000) + "}", 400, "nested"),
    ("/chat", '{"message": ' + _deep(100_000) + "}", 400, "nested"),
    ("/ag-ui", json.dumps(_ag_ui([_user("x" * (2 * 1024 * 1024))])), 413, "larger than"),
    ("/ag-ui", json.dumps(_ag_ui([_user("hi", n) for n in range(5_000)])), 413, "more than 1000 items"),
    ("/ag-ui", json.dumps(_ag_ui([_user("hi")], resume=[{"interruptId": str(n)} for n in range(5_000)])), 413,
     "more than 1000 items"),
    ("/api/chat", json.dumps({"id": "c", "messages": [{"id": "m", "role": "user",
                                                       "parts": [{"type": "text", "text": "y" * 300_000}]}]}),
     413, "longer than"),
    ("/api/chat", json.dumps({"id": "c", "messages": [{"id": "m", "role": "user",
                                                       "parts": [{"type": "text", "text": "a"}] * 5_000}]}),
     413, "more than 1000 items"),
    ("/chat", json.dumps({"message": "z" * 300_000}), 413, "longer than"),
    ("/approvals", "not json", 400, "not JSON"),
]


@pytest.mark.parametrize(("path", "body", "status", "says"), HOSTILE,
                         ids=[f"{p}-{s}-{w.split()[0]}-{i}" for i, (p, _, s, w) in enumerate(HOSTILE)])
def test_technocore_chat_130_deep_and_large_ag_ui_and_vercel_bodies_are_refused_cleanly(
        chat_url: str, path: str, body: str, status: int, says: str) -> None:
    answer = requests.post(chat_url + path, data=body, headers={"Content-Type": "application/json"}, timeout=60)
    assert answer.status_code == status, answer.text[:300]
    assert says in answer.json()["error"]
    served = requests.post(chat_url + "/api/chat", timeout=60, json={"id": "other", "messages": [
        {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]})
    assert served.status_code == 200 and '"text-delta"' in served.text  # another client is still served


def test_a_durable_apps_body_is_bounded_too() -> None:
    from werkzeug.test import Client

    from yiemagent.examples.flask_durable import create_app as durable_app

    app = durable_app(lambda: None, lambda store, conversation_id: None)  # type: ignore[arg-type,return-value]
    client = Client(app)
    for body, status in ((_deep(100_000), 400), (json.dumps({"message": "m" * (2 * 1024 * 1024)}), 413)):
        answer = client.post("/conversations/c1/messages", data=body, content_type="application/json")
        assert answer.status_code == status and "error" in answer.json


def test_read_ui_body_reads_no_more_than_its_bound() -> None:
    stream = io.BytesIO(b'{"a": "' + b"x" * 5_000_000 + b'"}')
    with pytest.raises(UIBodyRefused) as refused:
        read_ui_body(stream, None, UIBodyLimits(max_body_bytes=1000))
    assert refused.value.status == 413 and stream.tell() == 1001  # read one byte past the bound, no more
    with pytest.raises(UIBodyRefused, match="larger than"):
        read_ui_body(io.BytesIO(b"{}"), 10**12)  # an announced length past the bound: refused unread
    assert read_ui_body(io.BytesIO(b"  "), None, allow_empty=True) == {}
    with pytest.raises(UIBodyRefused, match="must be a JSON object"):
        read_ui_body(io.BytesIO(b"[1]"), None)
    with pytest.raises(UIBodyRefused, match="members"):
        check_ui_value({str(n): n for n in range(1001)})
    with pytest.raises(ValueError, match="max_depth"):
        UIBodyLimits(max_depth=0)


def test_one_owners_runs_never_push_out_another_owners_record() -> None:
    records = RunRecords(max_records=1000, max_records_per_owner=3)
    kept = records.start("vercel:bob", iter([{"role": "assistant", "content": "bob's"}]), owner="198.51.100.2")
    for n in range(50):  # one client making up chat ids
        records.start(f"vercel:flood-{n}", iter([{"role": "assistant", "content": "x"}]), owner="198.51.100.1")
    assert records.get("vercel:bob") is kept
    assert [records.get(f"vercel:flood-{n}") is not None for n in range(47, 50)] == [True, True, True]
    assert records.get("vercel:flood-46") is None  # its own oldest went
    with pytest.raises(ValueError, match="max_records_per_owner"):
        RunRecords(max_records_per_owner=0)


def test_a_run_record_is_bounded_in_bytes() -> None:
    record = RunRecord(iter([{"delta": "x" * 1000}] * 50 + [{"role": "assistant", "content": "done"}]),
                       max_bytes=10_000)
    assert all(item is not None for item in record.follow())  # read to the end
    assert record.truncated and not record.replayable()


def test_numbers_a_frontend_sends_fail_closed(chat_url: str) -> None:
    for body in ('{"threadId": "t", "runId": NaN, "messages": []}', '{"id": "c", "messages": [], "n": 1e999}',
                 '{"message": "hi", "input_id": Infinity}'):
        path = "/ag-ui" if "threadId" in body else "/api/chat" if '"id"' in body else "/chat"
        answer = requests.post(chat_url + path, data=body, headers={"Content-Type": "application/json"}, timeout=60)
        assert answer.status_code == 400 and "not JSON" in answer.json()["error"], (path, answer.text[:200])
    tab = requests.Session()
    for text in ("first", "second"):
        assert "answer" in tab.post(chat_url + "/chat", json={"message": text}, timeout=60).text
    edited = tab.post(chat_url + "/edit", json={"turn": True, "message": "changed"}, timeout=60)
    assert edited.status_code == 400  # `true` is not the 2nd turn
    history = tab.get(chat_url + "/conversation", timeout=60).json()["history"]
    assert [m["text"] for m in history if m["role"] == "user"] == ["first", "second"]


def test_one_client_making_up_thread_ids_never_evicts_another_clients_conversation() -> None:
    """Raw HTTP from two addresses (``X-Forwarded-For`` through werkzeug's ``ProxyFix``, as behind a proxy)."""
    from werkzeug.middleware.proxy_fix import ProxyFix

    made: list[int] = []

    def make_agent() -> Agent:
        made.append(1)
        return Agent(ScriptedLLM([text_reply("hello")] * 5))

    app = create_app(make_agent, secret_key="test", max_conversations=10, max_conversations_per_owner=3)
    conversations = app.extensions["yiemagent_conversations"]
    app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1)  # type: ignore[method-assign]

    def send(chat_id: str, owner: str) -> Any:
        return requests.post(url + "/api/chat", headers={"X-Forwarded-For": owner}, timeout=60, json={
            "id": chat_id, "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]})

    try:
        with serving(app, path="") as url:
            assert send("bob", "198.51.100.2").status_code == 200
            bobs = conversations.get("vercel:anonymous/bob")
            for n in range(20):  # the flood: each a new conversation
                assert send(f"flood-{n}", "198.51.100.1").status_code == 200
            assert conversations.get("vercel:anonymous/bob") is bobs  # bob's agent (and its history) is still there
            assert len(made) == 21
            assert "hello" in send("bob", "198.51.100.2").text and len(made) == 21  # no new agent for bob
    finally:
        conversations.close()


def test_a_durable_apps_background_inputs_are_bounded_per_client(tmp_path: Any) -> None:
    """Each ``"wait": false`` input started a thread: a client's flood of them held any number."""
    import threading
    import time

    from werkzeug.test import Client

    from yiemagent.examples.flask_durable import create_app as durable_app
    from yiemagent.store import SQLiteStore

    gate = threading.Event()

    def slow_model(messages: Any, tools: Any) -> Any:
        gate.wait(30)
        return text_reply("done")

    store = SQLiteStore(str(tmp_path / "d.db"))
    app = durable_app(lambda: store, lambda s, cid: Agent(slow_model, store=s, conversation_id=cid),
                      max_background_per_client=2)
    client = Client(app)

    def post(cid: str, address: str) -> Any:
        return client.post(f"/conversations/{cid}/messages", json={"message": "hi", "wait": False},
                           environ_base={"REMOTE_ADDR": address})

    try:
        assert [post(f"a{n}", "198.51.100.1").status_code for n in range(2)] == [202, 202]
        refused = post("a2", "198.51.100.1")
        assert refused.status_code == 429 and "background" in refused.json["error"]
        assert store.get_input("a2", 1) is None  # nothing stored
        assert post("b0", "198.51.100.2").status_code == 202  # another client is served
    finally:
        gate.set()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and post("a3", "198.51.100.1").status_code == 429:
        time.sleep(0.1)
    assert post("a4", "198.51.100.1").status_code == 202  # its share is back once its inputs ran


@pytest.mark.parametrize("heartbeat", [0, -1.0, float("nan"), float("inf"), True, "15"])
def test_stream_heartbeats_fail_closed(heartbeat: Any) -> None:
    """0 / negative / NaN heartbeats sent ``: keep-alive`` without end (an AgentStream's next(0) never waits)."""
    from yiemagent.agent.streaming import sse_events
    from yiemagent.agent.ui_streams import ag_ui_events, vercel_ai_events

    answer = [{"role": "assistant", "content": "hi", "status": "completed"}]
    for writer in (lambda: sse_events(answer, heartbeat_seconds=heartbeat),
                   lambda: ag_ui_events(answer, thread_id="t", heartbeat_seconds=heartbeat),
                   lambda: vercel_ai_events(answer, heartbeat_seconds=heartbeat)):
        with pytest.raises(ValueError, match="heartbeat_seconds"):
            list(writer())
    with pytest.raises(ValueError, match="heartbeat_seconds"):
        RunRecord(iter(answer), heartbeat_seconds=heartbeat)
    assert list(sse_events(answer, heartbeat_seconds=None))  # None: no heartbeats, still fine
