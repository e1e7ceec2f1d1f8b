"""Many web processes, one conversation at a time: real gunicorn (3 threaded workers, the guide's recipe).

20 chats x 5 messages, all at once, reach random gunicorn workers. Half the chats wait for each
answer (served in-process under the lease); the other half post their 5 messages without
waiting (each request only enqueues and starts a background drain) and poll for the answers.
Each message makes the model call a real tool that appends a line to a counter file outside the
store. Afterwards every conversation's committed history holds its 5 messages in order, each
answer saw exactly the messages before it, every tool call ran exactly once, and the histories
pass the strict OpenAI validator. Run on PostgreSQL and on SQLite (one file, WAL, 3 processes).
"""

from __future__ import annotations

import collections
import concurrent.futures
import time
import uuid
from typing import Any

import requests

from tests.apps import kit
from tests.helpers import PYTHON, free_port, wait_for_port
from tests.strict_openai import validate

CHATS = 20
MESSAGES = 5


def _post(base: str, cid: str, body: dict[str, Any]) -> requests.Response:
    response = requests.post(f"{base}/conversations/{cid}/messages", json=body, timeout=90)
    assert response.status_code in (200, 202), response.text
    return response


def _waiting_chat(base: str, cid: str) -> tuple[list[dict[str, Any]], set[str]]:
    answers, pids = [], set()
    for k in range(1, MESSAGES + 1):
        label = f"{cid}-m{k}"
        response = _post(base, cid, {"message": kit.instruction(label, [("record", f"{label}-a")]),
                                     "input_id": f"{label}-req"})
        pids.add(response.headers["X-Served-By"])
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["seq"] == k
        answers.append(body["answer"])
    return answers, pids


def _posting_chat(base: str, cid: str) -> tuple[list[dict[str, Any]], set[str]]:
    pids = set()
    for k in range(1, MESSAGES + 1):
        label = f"{cid}-m{k}"
        body = {"message": kit.instruction(label, [("record", f"{label}-a")]), "input_id": f"{label}-req",
                "wait": False}
        response = _post(base, cid, body)
        pids.add(response.headers["X-Served-By"])
        assert response.json()["seq"] == k
        if k == 2:  # a retried request (same input_id) is stored once
            again = _post(base, cid, body)
            assert again.json()["seq"] == 2
    answers = []
    deadline = time.monotonic() + 60
    for k in range(1, MESSAGES + 1):
        while True:
            response = requests.get(f"{base}/conversations/{cid}/messages/{k}", timeout=30)
            pids.add(response.headers["X-Served-By"])
            if response.status_code == 200:
                answers.append(response.json()["answer"])
                break
            assert response.status_code == 202, response.text
            assert time.monotonic() < deadline, f"{cid} input {k} not answered in 60 s"
            time.sleep(0.2)  # gentle: 10 pollers on 2 cores
    return answers, pids


def test_gunicorn_three_workers_twenty_chats_in_order(any_rig: Any) -> None:
    rig = any_rig
    port = free_port()
    server = rig.start([PYTHON, "-m", "gunicorn", "-k", "gthread", "--threads", "4", "--workers", "3",
                        "--bind", f"127.0.0.1:{port}",
                        "--timeout", "90", "--graceful-timeout", "2", "tests.apps.flask_app:app"],
                       ready_line=None, lease_ttl_seconds=5.0)
    wait_for_port(port, timeout_seconds=30, process=server)
    base = f"http://127.0.0.1:{port}"
    run = uuid.uuid4().hex[:6]
    chats = {f"g{run}-{i}": (_waiting_chat if i % 2 == 0 else _posting_chat) for i in range(CHATS)}
    with concurrent.futures.ThreadPoolExecutor(CHATS) as pool:
        futures = {cid: pool.submit(fn, base, cid) for cid, fn in chats.items()}
        results = {cid: future.result(timeout=120) for cid, future in futures.items()}

    served_by: set[str] = set().union(*(pids for _, pids in results.values()))
    assert len(served_by) >= 2, f"all requests reached one gunicorn worker: {served_by}"

    counts = collections.Counter(line["label"] for line in kit.read_counter(rig.counter))
    for cid, (answers, _) in results.items():
        labels = [f"{cid}-m{k}" for k in range(1, MESSAGES + 1)]
        # the answers: each saw exactly the k messages before it, and its own tool result
        assert [a["content"] for a in answers] == [f"{label} #{k}: recorded {label}-a"
                                                   for k, label in enumerate(labels, 1)]
        assert [a["status"] for a in answers] == ["completed"] * MESSAGES
        # the store: the committed history is complete and in order
        history = rig.history(cid)
        validate(history)
        assert kit.user_labels(history) == labels
        assert kit.final_answers(history) == [a["content"] for a in answers]
        assert [m["tool_call_id"] for m in history if m["role"] == "tool"] == [f"call_{lb}-a" for lb in labels]
        assert not rig.store.pending(cid)
        for label in labels:  # every tool call ran exactly once
            assert counts[f"{label}-a"] == 1, (label, counts[f"{label}-a"])
    assert sum(counts.values()) == CHATS * MESSAGES
