"""Edit, regenerate and fork across processes: real gunicorn (3 sync workers) serving ``flask_durable``.

Two clients edit the same message of one conversation at once, both having read version 1 (two tabs;
ag-ui #2154: the intent is declared, never inferred from a diff): one gets 200, the other 409 with
the version to reload, whichever workers serve them. Counted outside the store (the kit's counter
file): the first branch's ``record`` ran once, the winner's once, the loser's never (langgraph #7361:
going back must not re-execute recorded tool calls); ``regenerate`` with ``keep_tool_results`` runs
no tool; a stale version is refused. A fork (deepagents #2046) is a new conversation holding the
prefix. PostgreSQL and SQLite (one WAL file, 3 processes).
"""

from __future__ import annotations

import concurrent.futures
import uuid
from typing import Any

import pytest
import requests

from tests.apps import kit
from tests.helpers import PYTHON, free_port, wait_for_port
from tests.strict_openai import validate

pytestmark = pytest.mark.slow


def _start(rig: Any) -> str:
    port = free_port()
    server = rig.start([PYTHON, "-m", "gunicorn", "--workers", "3", "--bind", f"127.0.0.1:{port}",
                        "--timeout", "90", "--graceful-timeout", "2", "tests.apps.flask_app:app"],
                       ready_line=None, lease_ttl_seconds=3.0)
    wait_for_port(port, timeout_seconds=60, process=server)
    return f"http://127.0.0.1:{port}"


def _records(rig: Any, cid: str) -> list[str]:
    return [line["label"] for line in kit.read_counter(rig.counter) if line["label"].startswith(cid)]


def test_two_clients_edit_one_message_at_once_one_gets_200_the_other_409_and_no_tool_runs_twice(
        any_rig: Any) -> None:
    rig = any_rig
    base = _start(rig)
    cid = f"b{uuid.uuid4().hex[:6]}"
    first = requests.post(f"{base}/conversations/{cid}/messages",
                          json={"message": kit.instruction(f"{cid}-m1", [("record", f"{cid}-x")])}, timeout=90)
    assert first.status_code == 200, first.text
    seen = requests.get(f"{base}/conversations/{cid}", timeout=30).json()
    assert seen["version"] == 1 and [m["role"] for m in seen["history"]] == ["user", "assistant", "tool", "assistant"]

    def edit(name: str) -> requests.Response:
        body = {"index": 0, "version": 1, "message": kit.instruction(f"{cid}-{name}", [("record", f"{cid}-{name}")])}
        return requests.post(f"{base}/conversations/{cid}/edit", json=body, timeout=90)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        done = list(pool.map(edit, ["e1", "e2"]))
    assert sorted(r.status_code for r in done) == [200, 409], [r.text for r in done]
    won = next(r for r in done if r.status_code == 200).json()
    lost = next(r for r in done if r.status_code == 409).json()
    assert "version" in lost["error"] and lost["version"] >= 2
    winner = "e1" if "-e1 #1" in won["answer"]["content"] else "e2"
    assert won["answer"]["content"] == f"{cid}-{winner} #1: recorded {cid}-{winner}", won
    assert sorted(_records(rig, cid)) == sorted([f"{cid}-x", f"{cid}-{winner}"])  # the loser's never ran

    now = requests.get(f"{base}/conversations/{cid}", timeout=30).json()
    stale = requests.post(f"{base}/conversations/{cid}/regenerate", json={"version": 1}, timeout=90)
    assert stale.status_code == 409 and stale.json()["version"] == now["version"]
    kept = requests.post(f"{base}/conversations/{cid}/regenerate",
                         json={"version": now["version"], "keep_tool_results": True}, timeout=90)
    assert kept.status_code == 200, kept.text
    assert kept.json()["answer"]["branch"]["resume"] is True and kept.json()["version"] == now["version"] + 1
    assert sorted(_records(rig, cid)) == sorted([f"{cid}-x", f"{cid}-{winner}"])  # no tool ran again
    bad = requests.post(f"{base}/conversations/{cid}/edit", json={"index": 1, "version": now["version"] + 1,
                                                                    "message": "x"}, timeout=30)
    assert bad.status_code == 400 and "only a user message" in bad.json()["error"]

    forked = requests.post(f"{base}/conversations/{cid}/fork", json={"index": 3}, timeout=30)
    assert forked.status_code == 201, forked.text
    copy = requests.get(f"{base}/conversations/{forked.json()['conversation_id']}", timeout=30).json()
    assert copy["version"] == 1 and len(copy["history"]) == 4
    history = rig.history(cid)
    validate(history)
    assert kit.user_labels(history) == [f"{cid}-{winner}"]
