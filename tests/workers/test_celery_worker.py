"""The Celery recipe (``yiemagent.workers.celery_worker``) with real Celery 5 workers and a real Redis broker.

Two solo-pool worker processes (``tests/apps/celery_app.py``) take drain tasks from Redis.
Celery keeps no per-key order and may hand a task out twice; the store's lease and inbox keep
each conversation in order anyway. One worker is killed with ``kill -9`` between a tool result
and the commit (in ``after_tool_call``): with ``acks_late`` and ``task_reject_on_worker_lost``
the task stays unacknowledged and Redis hands it to the other worker after the (test-tuned, 2 s)
visibility timeout; that drain replays the journal, so the recorded tool call is not run again.
"""

from __future__ import annotations

import collections
import time
import uuid
from typing import Any

import pytest

from tests.apps import kit
from tests.helpers import PYTHON
from tests.strict_openai import validate

celery = pytest.importorskip("celery", reason="the Celery recipe needs celery[redis] (in the test extra)")

CALM = 5
MESSAGES = 3
pytestmark = pytest.mark.timeout(600)  # Redis and Celery workers started, killed: minutes on a loaded machine


def test_celery_workers_order_and_kill9_redelivery(rig: Any, redis_url: str) -> None:
    from yiemagent.workers.celery_worker import make_drain_task, submit

    run = uuid.uuid4().hex[:6]
    queue = f"yiemagent-{run}"

    def start(n: int) -> Any:
        return rig.start([PYTHON, "-m", "celery", "-A", "tests.apps.celery_app", "worker", "--pool", "solo",
                          "--hostname", f"w{n}-{run}@127.0.0.1", "--queues", queue, "--without-gossip",
                          "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
                         ready_line=" ready.", timeout_seconds=60,
                         YIEMAGENT_TEST_BROKER=redis_url, YIEMAGENT_TEST_QUEUE=queue)

    workers = [start(1), start(2)]
    app = celery.Celery("yiemagent-tests-client", broker=redis_url)
    app.conf.update(task_default_queue=queue)
    drain = make_drain_task(app, lambda cid: kit.make_agent(rig.store, cid), rig.store)

    kill_cid = f"celery-kill-{run}"
    kit.arm(rig.kill_dir, f"after-{kill_cid}-m1-a")
    submit(rig.store, drain, kill_cid, kit.instruction(f"{kill_cid}-m1", [("record", f"{kill_cid}-m1-a")]))
    calm = [f"celery-calm-{run}-{i}" for i in range(CALM)]
    for k in range(1, MESSAGES + 1):
        for cid in calm:
            label = f"{cid}-m{k}"
            assert submit(rig.store, drain, cid, kit.instruction(label, [("record", f"{label}-a")])) == k

    pid = kit.wait_ready(rig.kill_dir, f"after-{kill_cid}-m1-a", timeout_seconds=30)
    assert pid in {w.pid for w in workers}
    rig.kill9(pid)
    start(3)
    (answer,) = rig.wait_answers(kill_cid, 1, timeout_seconds=40)
    answers = {cid: rig.wait_answers(cid, MESSAGES, timeout_seconds=40) for cid in calm}

    lines = kit.read_counter(rig.counter)
    runs = collections.Counter(line["key"] for line in lines)
    assert {key: n for key, n in runs.items() if n > 1} == {}, "a tool call ran twice"
    assert collections.Counter(line["label"] for line in lines)[f"{kill_cid}-m1-a"] == 1
    assert answer["content"] == f"{kill_cid}-m1 #1: recorded {kill_cid}-m1-a"
    validate(rig.history(kill_cid))
    for cid in calm:
        labels = [f"{cid}-m{k}" for k in range(1, MESSAGES + 1)]
        assert [a["content"] for a in answers[cid]] == [f"{lb} #{k}: recorded {lb}-a" for k, lb in enumerate(labels, 1)]
        history = rig.history(cid)
        validate(history)
        assert kit.user_labels(history) == labels


def test_celery_prefork_child_killed_mid_tool_is_requeued_by_its_parent(rig: Any, redis_url: str) -> None:
    """A prefork pool child killed with ``kill -9`` in the middle of a tool: its parent sees the child
    lost and, with ``task_reject_on_worker_lost``, requeues the task at once; the redelivered drain
    finds the call started without a result and reports it interrupted instead of running it again.
    """
    from yiemagent.workers.celery_worker import make_drain_task, submit

    run = uuid.uuid4().hex[:6]
    queue = f"yiemagent-{run}"
    parent = rig.start([PYTHON, "-m", "celery", "-A", "tests.apps.celery_app", "worker", "--pool", "prefork",
                        "--concurrency", "1", "--hostname", f"p-{run}@127.0.0.1", "--queues", queue,
                        "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
                       ready_line=" ready.", timeout_seconds=60, YIEMAGENT_TEST_BROKER=redis_url,
                       YIEMAGENT_TEST_QUEUE=queue)
    app = celery.Celery("yiemagent-tests-client", broker=redis_url)
    app.conf.update(task_default_queue=queue)
    drain = make_drain_task(app, lambda cid: kit.make_agent(rig.store, cid), rig.store)
    cid = f"celery-child-{run}"
    kit.arm(rig.kill_dir, f"tool-{cid}-m1-a")
    submit(rig.store, drain, cid, kit.instruction(f"{cid}-m1", [("record", f"{cid}-m1-a")]))
    child = kit.wait_ready(rig.kill_dir, f"tool-{cid}-m1-a", timeout_seconds=30)
    assert child != parent.pid
    rig.kill9(child)
    (answer,) = rig.wait_answers(cid, 1, timeout_seconds=30)
    assert parent.poll() is None, "the parent worker must survive its child"
    assert "interrupted" in answer["content"].lower(), answer["content"]
    assert collections.Counter(line["label"] for line in kit.read_counter(rig.counter))[f"{cid}-m1-a"] == 1
    validate(rig.history(cid))


def test_celery_5306_task_redelivered_while_running_runs_the_tool_once(rig: Any, redis_url: str) -> None:
    """celery/celery#5306 (and #5935): with ``acks_late`` a task still running after the Redis
    visibility timeout is handed to a second worker and runs twice. Here a tool holds its drain
    longer than the (2 s) visibility timeout: the second delivery finds the store's lease held and
    retries until the first drain is done; the tool runs once.
    """
    from yiemagent.workers.celery_worker import make_drain_task, submit

    run = uuid.uuid4().hex[:6]
    queue = f"yiemagent-{run}"
    for n in (1, 2):
        rig.start([PYTHON, "-m", "celery", "-A", "tests.apps.celery_app", "worker", "--pool", "solo",
                   "--hostname", f"r{n}-{run}@127.0.0.1", "--queues", queue, "--without-gossip",
                   "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
                  ready_line=" ready.", timeout_seconds=60, YIEMAGENT_TEST_BROKER=redis_url, YIEMAGENT_TEST_QUEUE=queue)
    app = celery.Celery("yiemagent-tests-client", broker=redis_url)
    app.conf.update(task_default_queue=queue)
    drain = make_drain_task(app, lambda cid: kit.make_agent(rig.store, cid), rig.store)
    cid = f"celery-slow-{run}"
    point = f"tool-{cid}-m1-a"
    kit.arm(rig.kill_dir, point, mode="hold")
    submit(rig.store, drain, cid, kit.instruction(f"{cid}-m1", [("record", f"{cid}-m1-a")]))
    kit.wait_ready(rig.kill_dir, point, timeout_seconds=30)
    deadline = time.monotonic() + 20
    while "retry: Retry in" not in rig.logs(limit=100_000):  # the second delivery met the lease and retries
        assert time.monotonic() < deadline, f"the task was not delivered a second time:\n{rig.logs()}"
        time.sleep(0.1)
    kit.release(rig.kill_dir, point)
    (answer,) = rig.wait_answers(cid, 1, timeout_seconds=30)
    assert answer["content"] == f"{cid}-m1 #1: recorded {cid}-m1-a"
    assert collections.Counter(line["label"] for line in kit.read_counter(rig.counter))[f"{cid}-m1-a"] == 1
    validate(rig.history(cid))
