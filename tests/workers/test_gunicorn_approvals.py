"""Approvals across processes: real gunicorn (3 sync workers) serving ``yiemagent.examples.flask_durable``.

A message whose run asks for ``guarded`` (``@tool(needs_approval=True)``, in ``tests.apps.kit``) is
answered ``awaiting_approval`` by the worker that served it; the decision is posted later and reaches
whichever worker gunicorn gives it. The test records which worker paused each run and which resumed it,
over 8 conversations and more until a pair differs (at most 40: gunicorn's sync workers do not take
requests evenly, one often takes several in a row); each
approved call ran exactly once (the counter file outside the store), each rejected call never. Two
decisions posted at once for one call: one 200, one 409. A worker killed with ``kill -9`` right after
the approved tool's effect: the run is finished by another worker, the call reported "interrupted",
never run again. PostgreSQL and SQLite (one WAL file, 3 processes).
"""

from __future__ import annotations

import collections
import concurrent.futures
import threading
import time
import uuid
from typing import Any

import requests

from tests.apps import kit
from tests.helpers import PYTHON, free_port, wait_for_port
from tests.strict_openai import validate

CONVERSATIONS = 8
MAX_CONVERSATIONS = 40


def _start(rig: Any) -> str:
    port = free_port()
    server = rig.start([PYTHON, "-m", "gunicorn", "--workers", "3", "--bind", f"127.0.0.1:{port}",
                        "--timeout", "90", "--graceful-timeout", "2", "tests.apps.flask_app:app"],
                       ready_line=None, lease_ttl_seconds=3.0)
    wait_for_port(port, timeout_seconds=30, process=server)
    return f"http://127.0.0.1:{port}"


def _message(base: str, cid: str, label: str, call_label: str) -> requests.Response:
    return requests.post(f"{base}/conversations/{cid}/messages",
                         json={"message": kit.instruction(label, [("guarded", call_label)])}, timeout=60)


def _decide(base: str, cid: str, decisions: dict[str, Any]) -> requests.Response:
    return requests.post(f"{base}/conversations/{cid}/approvals", json={"decisions": decisions}, timeout=60)


def test_an_approval_given_in_one_gunicorn_worker_resumes_a_run_paused_in_another(any_rig: Any) -> None:
    rig = any_rig
    base = _start(rig)
    run = uuid.uuid4().hex[:6]
    pairs: list[tuple[str, str]] = []
    for i in range(MAX_CONVERSATIONS):
        if i >= CONVERSATIONS and any(a != b for a, b in pairs):
            break
        cid = f"a{run}-{i}"
        paused = _message(base, cid, f"{cid}-m1", f"{cid}-x")
        assert paused.status_code == 200, paused.text
        answer = paused.json()["answer"]
        assert answer["status"] == "awaiting_approval", answer
        assert [c["tool_call_id"] for c in answer["pending_approvals"]] == [f"call_{cid}-x"]
        listed = requests.get(f"{base}/conversations/{cid}/approvals", timeout=30).json()["pending_approvals"]
        assert [c["tool_call_id"] for c in listed] == [f"call_{cid}-x"]
        polled = requests.get(f"{base}/conversations/{cid}/messages/1", timeout=30)
        assert polled.status_code == 202 and polled.json()["pending_approvals"][0]["name"] == "guarded"
        approve = i % 4 != 3  # every fourth conversation is rejected
        decided = _decide(base, cid, {f"call_{cid}-x": True if approve else "not today"})
        assert decided.status_code == 200, decided.text
        final = decided.json()["answer"]
        assert final["status"] == "completed" and final["seq"] == [1]
        expected = f"guarded {cid}-x" if approve else "rejected"
        assert expected in final["content"], final
        pairs.append((paused.headers["X-Served-By"], decided.headers["X-Served-By"]))
        again = _decide(base, cid, {f"call_{cid}-x": True})  # decided already: refused, not run again
        assert again.status_code == 409, again.text
        history = rig.history(cid)
        validate(history)
        assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
        assert not rig.store.pending(cid)
    assert any(a != b for a, b in pairs), f"every decision reached the worker that paused its run: {pairs}"
    counts = collections.Counter(line["label"] for line in kit.read_counter(rig.counter))
    for i in range(len(pairs)):
        assert counts[f"a{run}-{i}-x"] == (1 if i % 4 != 3 else 0), (i, counts)


def test_two_decisions_at_once_in_two_workers_run_the_call_once(any_rig: Any) -> None:
    rig = any_rig
    base = _start(rig)
    cid = f"b{uuid.uuid4().hex[:6]}"
    assert _message(base, cid, f"{cid}-m1", f"{cid}-x").json()["answer"]["status"] == "awaiting_approval"
    barrier = threading.Barrier(2)

    def post() -> requests.Response:
        barrier.wait()
        return _decide(base, cid, {f"call_{cid}-x": True})

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        responses = [f.result(timeout=90) for f in [pool.submit(post), pool.submit(post)]]
    assert sorted(r.status_code for r in responses) == [200, 409], [r.text for r in responses]
    assert [line["label"] for line in kit.read_counter(rig.counter)] == [f"{cid}-x"]


def test_a_worker_killed_after_the_approved_tool_ran_never_runs_it_again(any_rig: Any) -> None:
    rig = any_rig
    base = _start(rig)
    cid = f"k{uuid.uuid4().hex[:6]}"
    assert _message(base, cid, f"{cid}-m1", f"{cid}-x").json()["answer"]["status"] == "awaiting_approval"
    kit.arm(rig.kill_dir, f"tool-{cid}-x")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        doomed = pool.submit(_decide, base, cid, {f"call_{cid}-x": True})
        pid = kit.wait_ready(rig.kill_dir, f"tool-{cid}-x")  # the effect happened; the result not recorded
        rig.kill9(pid)
        try:
            doomed.result(timeout=30)
        except requests.RequestException:
            pass  # the worker died under the request
    assert _decide(base, cid, {f"call_{cid}-x": True}).status_code == 409  # decided: the decision stands
    deadline = time.monotonic() + 60
    while True:  # the next message is served after the interrupted run, once the dead worker's lease expired
        follow = requests.post(f"{base}/conversations/{cid}/messages",
                               json={"message": kit.instruction(f"{cid}-m2")}, timeout=60)
        if follow.status_code == 200:
            break
        assert time.monotonic() < deadline, follow.text
    first = rig.store.get_input(cid, 1).answer
    assert first["status"] == "completed"
    history = rig.history(cid)
    validate(history)
    tool_message = next(m for m in history if m["role"] == "tool")
    assert "interrupted" in str(tool_message["content"])
    assert [line["label"] for line in kit.read_counter(rig.counter)] == [f"{cid}-x"]  # ran once
