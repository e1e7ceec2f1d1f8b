"""Web deployment that holds (issue 20, point 3): real gunicorn, threaded workers, a real store.

The app is ``yiemagent.examples.flask_durable`` (``tests/apps/web_app.py``: a streaming model and a
slow tool). A streaming client is cut in the middle of the answer (and another one before it read a
byte); each fetches its answer afterwards by the ``input_id`` the stream sent first. A run of 60 s
(a slow tool) under ``gunicorn -k gthread`` with the guide's timeouts is not killed, and the same
worker serves other requests meanwhile (once, on SQLite: it costs a minute). A sync worker whose
``--timeout`` is shorter than the run is killed: what the guide warns about.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from typing import Any

import pytest
import requests

from tests.apps import web_app
from tests.helpers import PYTHON, free_port, process_output, wait_for_port
from tests.strict_openai import validate
from yiemagent.formats.sse import SSEParser

APP = "tests.apps.web_app:app"


def _gunicorn(rig: Any, *options: str) -> str:
    port = free_port()
    server = rig.start([PYTHON, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", *options, APP],
                       ready_line=None, lease_ttl_seconds=2.0)
    wait_for_port(port, timeout_seconds=30, process=server)
    return f"http://127.0.0.1:{port}"


def _stream(base: str, cid: str, body: dict[str, Any], *, stop_after_updates: int | None = None,
            timeout_seconds: float = 30.0) -> tuple[list[tuple[str, Any]], list[str]]:
    """POST .../stream and read it: the events (name, data) and the comments; cut after N text deltas."""
    parser = SSEParser()
    events: list[tuple[str, Any]] = []
    comments: list[str] = []
    with requests.post(f"{base}/conversations/{cid}/stream", json=body, stream=True,
                       timeout=timeout_seconds) as response:
        assert response.status_code == 200, response.text
        assert response.headers["Content-Type"].startswith("text/event-stream")
        for chunk in response.iter_content(chunk_size=None):
            text = chunk.decode()
            comments += [line for line in text.split("\n") if line.startswith(":")]
            events += [(e.event, json.loads(e.data)) for e in parser.feed(text)]
            updates = sum(1 for name, _ in events if name == "message_update")
            if stop_after_updates is not None and updates >= stop_after_updates:
                break  # leaving the with-block closes the connection: the client is gone
    return events, comments


def _answer_by_id(base: str, cid: str, input_id: str, timeout_seconds: float = 30.0,
                  resend: dict[str, Any] | None = None) -> tuple[dict[str, Any], int]:
    """Poll GET .../answers/<input_id> until 200; return the body and how many 202s came first.

    ``resend``: on a 404 (the server has not seen the input yet), send that body again, as the guide's
    client does; the same ``input_id`` is stored once. Without it a 404 fails.
    """
    deadline = time.monotonic() + timeout_seconds
    pending = 0
    while True:
        response = requests.get(f"{base}/conversations/{cid}/answers/{input_id}", timeout=10)
        if response.status_code == 200:
            return response.json(), pending
        if response.status_code == 404 and resend is not None:
            _cut_before_reading(base, cid, resend)
        else:
            assert response.status_code == 202, response.text
            pending += 1
        assert time.monotonic() < deadline, f"{input_id} not answered in {timeout_seconds}s"
        time.sleep(0.1)


def _cut_before_reading(base: str, cid: str, body: dict[str, Any]) -> None:
    """Send the request on a raw socket and close it at once: the client read nothing."""
    host, port = base.rsplit("/", 1)[1].split(":")
    payload = json.dumps(body).encode()
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"POST /conversations/{cid}/stream HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json"
                     f"\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode() + payload)


def test_simplechat_1379_a_stream_cut_mid_answer_is_fetched_by_the_input_id_sent_first(any_rig: Any) -> None:
    """microsoft/simplechat#1379: the stream was cut while the backend finished the answer, and the page could
    not find it. Here the stream's first event names the input (client-chosen id, store seq); cut after 3 of 40 deltas,
    the client gets the whole answer from GET /answers/<input_id>; the history holds the run once; a resend of
    the same input_id is not a second turn (PsycherosAI/Psycheros#46: resending during the gap made two replies).
    """
    base = _gunicorn(any_rig, "-k", "gthread", "--workers", "2", "--threads", "4", "--timeout", "120",
                     "--graceful-timeout", "2")
    cid = f"web-{uuid.uuid4().hex[:6]}"
    first_id = f"{cid}-in1"
    events, _ = _stream(base, cid, {"message": web_app.message("m1", pieces=40, piece_seconds=0.05),
                                    "input_id": first_id}, stop_after_updates=3)
    assert events[0] == ("input", {"input_id": first_id, "seq": 1})
    assert not any(name == "answer" for name, _ in events)  # cut before the answer
    body, pending = _answer_by_id(base, cid, first_id)
    assert pending >= 1  # the run was still going when the client asked
    assert body["seq"] == 1 and body["answer"]["status"] == "completed"
    assert body["answer"]["content"] == web_app.expected_answer("m1", 1)
    assert body["answer"]["input_ids"] == [first_id]

    # a client cut before it read a byte knows the id it chose; it sends again while the server says 404
    second_id = f"{cid}-in2"
    second = {"message": web_app.message("m2", pieces=5, piece_seconds=0.05), "input_id": second_id}
    _cut_before_reading(base, cid, second)
    body, _ = _answer_by_id(base, cid, second_id, resend=second)
    assert body["seq"] == 2 and body["answer"]["content"] == web_app.expected_answer("m2", 2)

    # the same input_id again (a client retrying): stored once, the stored answer streamed, nothing re-run
    events, _ = _stream(base, cid, {"message": web_app.message("m1"), "input_id": first_id})
    assert events[0] == ("input", {"input_id": first_id, "seq": 1})
    assert [name for name, _ in events] == ["input", "answer"]
    assert events[-1][1]["content"] == web_app.expected_answer("m1", 1)

    # the conversation goes on: the next message saw both earlier ones
    events, _ = _stream(base, cid, {"message": web_app.message("m3", pieces=4)})
    assert events[0][0] == "input" and events[0][1]["seq"] == 3
    assert events[-1][0] == "answer" and events[-1][1]["content"] == web_app.expected_answer("m3", 3)
    text = "".join(d["delta"] for n, d in events if n == "message_update" and d["delta_type"] == "text")
    assert text == events[-1][1]["content"]

    history = any_rig.history(cid)
    validate(history)
    assert [json.loads(m["content"])["text"] for m in history if m["role"] == "user"] == ["m1", "m2", "m3"]
    assert requests.get(f"{base}/conversations/{cid}/answers/nope", timeout=10).status_code == 404


@pytest.mark.timeout(600)  # a 60 s run by design: a loaded machine makes the rest slower
def test_litellm_1953_a_60_second_run_under_gthread_workers_is_not_killed(sqlite_rig: Any) -> None:
    """BerriAI/litellm#1953: a model taking 30+ s to its first chunk hit gunicorn's 30 s default.
    A slow tool keeps one run busy 60 s under ``gunicorn -k gthread --timeout 90``: the run ends
    ``completed``, keep-alive comments flow meanwhile, the same single worker answers another
    conversation during it, and gunicorn never reports a worker timeout.
    """
    import threading

    base = _gunicorn(sqlite_rig, "-k", "gthread", "--workers", "1", "--threads", "4", "--timeout", "90",
                     "--graceful-timeout", "2")
    cid = f"slow-{uuid.uuid4().hex[:6]}"
    result: dict[str, Any] = {}

    def slow_client() -> None:
        started = time.monotonic()
        result["events"], result["comments"] = _stream(
            base, cid, {"message": web_app.message("long", pause_seconds=60), "input_id": "long-1"},
            timeout_seconds=120)
        result["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=slow_client)
    thread.start()
    time.sleep(3)
    other = requests.post(f"{base}/conversations/{cid}-other/messages",
                          json={"message": web_app.message("quick")}, timeout=30)
    assert other.status_code == 200 and other.json()["answer"]["content"] == web_app.expected_answer("quick", 1)
    thread.join(150)
    assert not thread.is_alive()
    events = result["events"]
    assert events[0] == ("input", {"input_id": "long-1", "seq": 1})
    answer = events[-1][1]
    assert events[-1][0] == "answer" and answer["status"] == "completed", answer
    assert answer["content"] == web_app.expected_answer("long", 1, 60)
    assert result["seconds"] >= 60
    assert len(result["comments"]) >= 3  # ": keep-alive" every 15 s of the quiet tool
    logs = sqlite_rig.logs(20_000)
    assert "WORKER TIMEOUT" not in logs, logs


def test_gunicorn_1801_a_sync_worker_with_a_timeout_shorter_than_the_run_is_killed(sqlite_rig: Any) -> None:
    """benoitc/gunicorn#1801 (sync workers are killed mid-stream; other worker classes heartbeat): what the guide
    warns about: ``gunicorn -w 1`` (sync) with ``--timeout 2`` and a 6 s run: the worker
    is killed mid-run, the client's stream ends without an answer. The input is not lost: it stays in the
    inbox and a later request serves it (once the dead worker's lease expired).
    """
    base = _gunicorn(sqlite_rig, "--workers", "1", "--timeout", "2", "--graceful-timeout", "1")
    cid = f"sync-{uuid.uuid4().hex[:6]}"
    try:
        events, _ = _stream(base, cid, {"message": web_app.message("cut", pause_seconds=6), "input_id": "cut-1"},
                            timeout_seconds=30)
    except requests.exceptions.ChunkedEncodingError:
        events = []  # the connection broke mid-chunk
    assert not any(name == "answer" for name, _ in events)
    deadline = time.monotonic() + 20
    while "WORKER TIMEOUT" not in process_output(sqlite_rig.processes[0], limit=50_000):
        assert time.monotonic() < deadline, sqlite_rig.logs()
        time.sleep(0.2)
    entry = sqlite_rig.store.find_input(cid, "cut-1")
    assert entry is not None and entry.seq == 1  # in the inbox: not lost


@pytest.mark.slow
def test_flask_chat_under_gunicorn_gthread_a_cut_stream_answer_is_fetched_by_its_id(tmp_path: Any) -> None:
    """The guide's one-process command (``gunicorn -k gthread -w 1 ... flask_chat:from_env()``) against the
    scripted OpenAI-compatible server (a word every 0.05 s): the browser session's stream names its input
    first; cut after 3 text deltas, ``GET /answers/<input_id>`` (same session cookie) gives 202, then the
    whole answer; the session's history holds the turn once.
    """
    from tests.helpers import SERVERS, start_process, stop_process

    model_port, port = free_port(), free_port()
    model = start_process([PYTHON, str(SERVERS / "scripted_openai_server.py"), "--port", str(model_port),
                           "--log", str(tmp_path / "requests.jsonl")])
    server = None
    try:
        wait_for_port(model_port, timeout_seconds=20, process=model)
        env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{model_port}/v1", "YIEMAGENT_MODEL": "scripted"}
        server = start_process([PYTHON, "-m", "gunicorn", "-k", "gthread", "-w", "1", "--threads", "4",
                                "--timeout", "300", "--graceful-timeout", "2", "--bind", f"127.0.0.1:{port}",
                                "yiemagent.examples.flask_chat:from_env()"], env=env)
        wait_for_port(port, timeout_seconds=30, process=server)
        base = f"http://127.0.0.1:{port}"
        words = " ".join(f"w{i}" for i in range(40))
        with requests.Session() as browser:
            assert browser.get(f"{base}/", timeout=10).status_code == 200
            parser, events = SSEParser(), []
            with browser.post(f"{base}/chat", json={"message": words, "input_id": "tab-1"}, stream=True,
                              timeout=30) as response:
                for chunk in response.iter_content(chunk_size=None):
                    events += [(e.event, json.loads(e.data)) for e in parser.feed(chunk.decode())]
                    if sum(1 for name, d in events if name == "message_update" and d["delta_type"] == "text") >= 3:
                        break
            assert events[0] == ("input", {"input_id": "tab-1", "seq": None})
            statuses = []
            deadline = time.monotonic() + 30
            while True:
                got = browser.get(f"{base}/answers/tab-1", timeout=10)
                statuses.append(got.status_code)
                if got.status_code == 200:
                    break
                assert got.status_code == 202 and time.monotonic() < deadline, got.text
                time.sleep(0.1)
            assert statuses[0] == 202
            assert got.json()["answer"]["content"] == f"You said: {words}"
            history = browser.get(f"{base}/history", timeout=10).json()["messages"]
            assert [m["role"] for m in history] == ["user", "assistant"]
    finally:
        if server is not None:
            stop_process(server)
        stop_process(model)
