"""Cheap checks of the worker recipes' edges (the process tests are in the other modules of this folder)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.apps import kit


@pytest.mark.slow
def test_workers_package_imports_no_engine() -> None:
    """``yiemagent.workers`` works without dbos or celery installed: it never imports them itself."""
    code = ("import sys, yiemagent.workers; "
            "bad = [m for m in ('dbos', 'celery', 'kombu', 'flask') if m in sys.modules]; "
            "assert not bad, bad; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_dbos_worker_needs_a_stable_executor_id(tmp_path: Path) -> None:
    from yiemagent import ConfigError, SQLiteStore
    from yiemagent.workers.dbos_worker import DBOSWorker

    store = SQLiteStore(str(tmp_path / "c.db"))
    with pytest.raises(ConfigError, match="executor_id"):
        DBOSWorker(lambda cid: kit.make_agent(store, cid), store, system_database_url="sqlite:///x", executor_id="")
    store.close()


def test_celery_config_sets_late_acks_and_a_fast_restore() -> None:
    from yiemagent.workers.celery_worker import celery_config

    config = celery_config(visibility_timeout_seconds=5, restore_interval_seconds=1)
    assert config["task_acks_late"] is True and config["task_reject_on_worker_lost"] is True
    assert config["broker_transport_options"] == {"visibility_timeout": 5, "unacked_restore_interval": 1,
                                                  "unacked_restore_throttle": 1}


@pytest.fixture
def flask_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from yiemagent import SQLiteStore
    from yiemagent.examples.flask_durable import create_app

    monkeypatch.setenv("YIEMAGENT_TEST_COUNTER", str(tmp_path / "counter.jsonl"))
    app = create_app(lambda: SQLiteStore(str(tmp_path / "c.db")), kit.make_agent)
    app.testing = True
    return app.test_client()


def test_flask_app_refuses_bad_bodies_with_clear_errors(flask_client: Any) -> None:
    response = flask_client.post("/conversations/c1/messages", data="not json", content_type="application/json")
    assert response.status_code == 400 and "message" in response.get_json()["error"]
    response = flask_client.post("/conversations/c1/messages", json={"message": {"role": "assistant",
                                                                                  "content": "hi"}})
    assert response.status_code == 400 and "user" in response.get_json()["error"].lower()
    response = flask_client.post("/conversations/c1/messages", json={"message": "x", "input_id": 7})
    assert response.status_code == 400
    assert flask_client.get("/conversations/c1/messages/1").status_code == 404  # nothing was stored


def test_flask_app_serves_in_process_and_by_seq(flask_client: Any) -> None:
    body = {"message": kit.instruction("f-m1", [("record", "f-m1-a")]), "input_id": "r1"}
    response = flask_client.post("/conversations/c2/messages", json=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["answer"]["content"] == "f-m1 #1: recorded f-m1-a"
    again = flask_client.post("/conversations/c2/messages", json=body)  # a retried request: same seq, same answer
    assert again.get_json()["seq"] == 1 and again.get_json()["answer"] == response.get_json()["answer"]
    got = flask_client.get("/conversations/c2/messages/1")
    assert got.status_code == 200 and got.get_json()["answer"]["seq"] == [1]
