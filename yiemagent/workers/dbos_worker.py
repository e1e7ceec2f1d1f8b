"""A worker recipe on DBOS Transact: one durable workflow per conversation drain.

Needs ``pip install -e ".[dbos]"`` (PyPI ``dbos``, sync API) and PostgreSQL for DBOS's
system database (SQLite works for one host, but its queue timestamps have 1 s resolution).

How it fits together::

    # worker process (run several, each with its own stable executor id)
    worker = DBOSWorker(make_agent, store, system_database_url=URL, executor_id="worker-1")
    worker.launch()                    # DBOS.launch(), then the partitioned queue
    worker.wait()                      # serve until SIGTERM / worker.destroy()

    # web process (no DBOS runtime needed)
    client = DBOSClient(system_database_url=URL)
    seq = submit(store, client, "c-42", "What is 2 + 3?")
    answer = store.wait_answer("c-42", seq, timeout_seconds=60)

Design, point by point:

* **A workflow per drain.** ``submit`` writes the input to the store's inbox first, then enqueues
  the workflow ``yiemagent_drain_conversation(conversation_id)``. The workflow runs one DBOS
  step, ``agent.drain()``: it serves every pending input under the store's lease, in the
  store's inbox order (sequence numbers we assign), never in the queue's ``created_at`` order.
* **One runner per conversation.** The queue is partitioned by conversation id
  (``queue_partition_key``) with ``partition_concurrency=1``; the store's lease enforces the same
  across anything else serving the conversation (a web process serving in-process, Celery...).
  DBOS wants ``register_queue`` *after* ``launch()``: ``launch()`` here does both.
* **The journal inside the loop.** Model replies and tool results are journaled by the store
  as they happen (yiemagent's durable run), not as DBOS steps: DBOS would silently not
  checkpoint steps called from our tool threads (contextvars are not copied to them). After a
  crash DBOS re-runs the interrupted drain step; the drain replays the journal, so recorded
  tool calls are not run again and an interrupted one is reported to the model.
* **A stable executor id per worker** (``executor_id``, e.g. ``"<host>-<n>"``): DBOS tags each
  workflow with it and, at ``launch()``, recovers only its own pending workflows.
* **Recovering a dead worker's workflows.** A live worker does not take over a dead one's
  workflows by itself. Either restart the dead worker with the same ``executor_id`` (DBOS
  resumes its workflows at launch), or call ``recover_executor(client, "<dead id>")`` from any
  process (it re-queues that executor's pending workflows on the queue). Independently of DBOS,
  ``sweep()`` (at launch, and every ``sweep_seconds``) enqueues a drain for every conversation
  with pending inputs, so an input whose workflow was never enqueued (a crash between the two
  writes of ``submit``) is served too.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, cast

from dbos import DBOS, DBOSClient, DBOSConfig, SetEnqueueOptions

from ..exceptions import ConfigError
from ..store.base import ConversationStore
from .drain import AgentFactory, AgentPool
from .faults import FaultTracker

__all__ = ["QUEUE_NAME", "WORKFLOW_NAME", "DBOSWorker", "enqueue_drain", "recover_executor", "submit"]

logger = logging.getLogger(__name__)

WORKFLOW_NAME = "yiemagent_drain_conversation"
"""The DBOS workflow name (``DBOSClient.enqueue`` uses it)."""
QUEUE_NAME = "yiemagent_conversations"
"""The default DBOS queue, partitioned by conversation id."""

_MAX_RETRY_SECONDS = 30.0
_registered: dict[str, Any] = {}  # DBOS registers functions per process, once
_current: DBOSWorker | None = None


def _drain_step(conversation_id: str) -> dict[str, Any]:
    """The DBOS step: drain the conversation once; report what was served and what is left."""
    worker = _current
    if worker is None:
        raise ConfigError("no DBOSWorker launched in this process")
    answers = worker.agents.drain(conversation_id)
    left = bool(worker.store.pending(conversation_id, limit=1))
    return {"served": [seq for answer in answers for seq in answer.get("seq", [])], "pending": left}


def _drain_workflow(conversation_id: str) -> int:
    """The DBOS workflow: drain until the inbox is empty (another holder's lease is waited out)."""
    worker = _current
    retry_seconds = worker.lease_retry_seconds if worker is not None else 0.5
    served = 0
    wait = retry_seconds
    while True:
        outcome = _registered["step"](conversation_id)
        served += len(outcome["served"])
        if not outcome["pending"]:
            return served
        if outcome["served"]:
            wait = retry_seconds
        else:  # someone else holds the lease: a live holder serves it, a dead one expires (bounded backoff)
            DBOS.sleep(wait)
            wait = min(wait * 2, _MAX_RETRY_SECONDS)


def _register() -> None:
    if not _registered:
        _registered["step"] = DBOS.step(name="yiemagent_drain_step")(_drain_step)
        _registered["workflow"] = DBOS.workflow(name=WORKFLOW_NAME)(_drain_workflow)


class DBOSWorker:
    """Serve conversations from ``store`` with DBOS workflows on a partitioned queue.

    Args:
        make_agent: ``make_agent(conversation_id) -> Agent`` (with ``store=`` and
            ``conversation_id=``); called in this process for each drain.
        store: the conversation store the agents use (for ``sweep`` and pending checks).
        system_database_url: DBOS's system database, e.g. ``postgresql://user@host:5432/dbos``.
        executor_id: this worker's stable id (same id after a restart: DBOS resumes its work).
        app_name: DBOS application name.
        queue_name: the partitioned queue (the web side enqueues on the same name).
        worker_concurrency: conversations drained at once in this process; None: DBOS's default.
        polling_interval_seconds: how often DBOS looks at the queue.
        sweep_seconds: enqueue a drain for every pending conversation this often (also once at
            launch); None: only at launch.
        lease_retry_seconds: wait between two drains while another process holds the lease.
        config: more ``DBOSConfig`` entries (they win over the ones above).

    One ``DBOSWorker`` per process (DBOS is a per-process singleton).
    """

    def __init__(
        self,
        make_agent: AgentFactory,
        store: ConversationStore,
        *,
        system_database_url: str,
        executor_id: str,
        app_name: str = "yiemagent",
        queue_name: str = QUEUE_NAME,
        worker_concurrency: int | None = None,
        polling_interval_seconds: float = 0.2,
        sweep_seconds: float | None = 30.0,
        lease_retry_seconds: float = 0.5,
        config: dict[str, Any] | None = None,
    ) -> None:
        if not executor_id:
            raise ConfigError("DBOSWorker needs a stable executor_id (the same one after a restart)")
        self.agents = AgentPool(make_agent)
        self.store = store
        self.executor_id = executor_id
        self.queue_name = queue_name
        self.worker_concurrency = worker_concurrency
        self.polling_interval_seconds = polling_interval_seconds
        self.sweep_seconds = sweep_seconds
        self.lease_retry_seconds = lease_retry_seconds
        self.config: dict[str, Any] = {
            "name": app_name,
            "system_database_url": system_database_url,
            "executor_id": executor_id,
            **(config or {}),
        }
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None
        self.queue: Any = None

    def launch(self) -> DBOSWorker:
        """Start DBOS (recovering this executor's pending workflows), register the queue, sweep once."""
        global _current
        if _current is not None and _current is not self:
            raise ConfigError("one DBOSWorker per process (DBOS is a per-process singleton)")
        _current = self
        DBOS(config=cast(DBOSConfig, self.config))
        _register()
        DBOS.launch()
        self.queue = DBOS.register_queue(
            self.queue_name, partition_concurrency=1, worker_concurrency=self.worker_concurrency,
            polling_interval_sec=self.polling_interval_seconds,
        )
        self.sweep()
        if self.sweep_seconds:
            self._sweeper = threading.Thread(target=self._sweep_loop, name="yiemagent-dbos-sweep", daemon=True)
            self._sweeper.start()
        logger.info("DBOS worker %s serving queue %s", self.executor_id, self.queue_name)
        return self

    def enqueue(self, conversation_id: str) -> str:
        """Enqueue a drain of ``conversation_id`` from this worker; return the workflow id."""
        with SetEnqueueOptions(queue_partition_key=conversation_id):
            handle = self.queue.enqueue(_registered["workflow"], conversation_id)
        return str(handle.workflow_id)

    def sweep(self) -> int:
        """Enqueue a drain for every conversation with pending inputs; return how many."""
        count = 0
        for conversation_id in self.store.pending_conversations(limit=1000):
            self.enqueue(conversation_id)
            count += 1
        return count

    def _sweep_loop(self) -> None:
        assert self.sweep_seconds
        faults = FaultTracker(logger, base_seconds=self.sweep_seconds, max_seconds=max(self.sweep_seconds, 60.0),
                              quarantine_after=1_000_000)  # the sweep is never given up: it backs off
        wait = self.sweep_seconds
        while not self._stop.wait(wait):
            try:
                self.sweep()
            except Exception as exc:
                wait = max(self.sweep_seconds, faults.failed("<sweep>", exc, "the sweep of"))
            else:
                faults.succeeded("<sweep>")
                wait = self.sweep_seconds

    def recover_executor(self, executor_id: str) -> list[str]:
        """Take over the pending workflows of the dead worker ``executor_id``; return their ids.

        Same as the module function ``recover_executor``, run from this worker onto its queue.
        """
        client = DBOSClient(system_database_url=self.config["system_database_url"])
        try:
            return recover_executor(client, executor_id, queue_name=self.queue_name)
        finally:
            client.destroy()

    def wait(self) -> None:
        """Block until ``destroy()`` (call it from a signal handler or another thread)."""
        self._stop.wait()

    def destroy(self) -> None:
        """Stop the sweeper and DBOS (workflows in progress are resumed by the next launch)."""
        global _current
        self._stop.set()
        DBOS.destroy(workflow_completion_timeout_sec=0)
        self.agents.close()
        _current = None


def recover_executor(client: DBOSClient, executor_id: str, *, queue_name: str = QUEUE_NAME) -> list[str]:
    """Re-queue the pending workflows of the dead worker ``executor_id``; return their ids.

    Call it for an executor known to be dead (its process is gone), from any process (an admin
    script, a live worker): DBOS puts its ``PENDING`` workflows back on ``queue_name`` (their
    partition keys stay), a live worker dequeues them, and each resumes after its last recorded
    step. Even if that executor were still alive, the store's lease keeps one runner per
    conversation.
    """
    ids = [status.workflow_id for status in client.list_workflows(status="PENDING", executor_id=executor_id)]
    for workflow_id in ids:
        client.resume_workflow(workflow_id, queue_name=queue_name)
    logger.info("re-queued %d pending workflows of executor %s", len(ids), executor_id)
    return ids


def enqueue_drain(client: DBOSClient, conversation_id: str, *, queue_name: str = QUEUE_NAME) -> str:
    """Enqueue a drain of ``conversation_id`` from outside a worker (a web process); return the workflow id."""
    handle: Any = client.enqueue(
        {"workflow_name": WORKFLOW_NAME, "queue_name": queue_name, "queue_partition_key": conversation_id},
        conversation_id,
    )
    return str(handle.workflow_id)


def submit(
    store: ConversationStore,
    client: DBOSClient,
    conversation_id: str,
    message: str | dict[str, Any],
    *,
    input_id: str | None = None,
    queue_name: str = QUEUE_NAME,
) -> int:
    """Put ``message`` in the conversation's inbox, then enqueue its drain; return the inbox seq.

    Read the answer with ``store.wait_answer(conversation_id, seq)``. ``input_id`` makes a
    retried request harmless (the same id is stored once). If the process dies between the two
    writes the input is still in the inbox: a worker's ``sweep()`` serves it.
    """
    seq = store.enqueue(conversation_id, message, input_id=input_id)
    enqueue_drain(client, conversation_id, queue_name=queue_name)
    return seq
