"""A worker recipe on Celery with a Redis broker: a task per conversation drain.

Needs ``pip install -e ".[celery]"`` (``celery[redis]``: plain ``celery`` fails on the Redis
broker). Celery keeps no per-key order and may run one task twice (redelivery), so order and
exclusivity come from the store: the task only *drains* the conversation, which serves the inbox
in sequence order under the store's lease; a second task for the same conversation finds the
lease held and retries later (or finds nothing left).

::

    app = Celery("chat", broker="redis://127.0.0.1:6379/0")
    app.conf.update(celery_config(visibility_timeout_seconds=600))
    drain = make_drain_task(app, make_agent, store)

    seq = submit(store, drain, "c-42", "What is 2 + 3?")     # web process
    answer = store.wait_answer("c-42", seq, timeout_seconds=60)

Crashes: ``acks_late=True`` and ``task_reject_on_worker_lost=True`` keep a task whose worker
process died in the broker. If only the pool child died, the parent requeues it at once; if the
whole worker died, Redis hands it out again after ``visibility_timeout_seconds`` (kombu restores
unacked messages on its sweep, every ``unacked_restore_interval * unacked_restore_throttle``
seconds: ``celery_config`` sets the throttle to 1). Choose the visibility timeout longer than
your longest drain, or a running drain is handed out twice (harmless here: the lease). The
redelivered drain replays the journal: recorded tool calls are not run again.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery, Task  # type: ignore[import-untyped]

from ..store.base import ConversationStore
from .drain import AgentFactory, AgentPool

__all__ = ["TASK_NAME", "celery_config", "make_drain_task", "submit"]

logger = logging.getLogger(__name__)

TASK_NAME = "yiemagent.drain_conversation"


def celery_config(
    *, visibility_timeout_seconds: float = 600.0, restore_interval_seconds: float = 10.0
) -> dict[str, Any]:
    """The Celery settings the recipe relies on (``app.conf.update(celery_config())``).

    Args:
        visibility_timeout_seconds: seconds before Redis hands an unacknowledged task (its
            worker died) to another worker; longer than the longest drain.
        restore_interval_seconds: how often a worker looks for such tasks.
    """
    return {
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            "visibility_timeout": visibility_timeout_seconds,
            "unacked_restore_interval": restore_interval_seconds,
            "unacked_restore_throttle": 1,
        },
    }


_MAX_RETRY_SECONDS = 30.0


def make_drain_task(
    app: Celery,
    make_agent: AgentFactory,
    store: ConversationStore,
    *,
    name: str = TASK_NAME,
    lease_retry_seconds: float = 0.5,
    max_retries: int | None = None,
) -> Task:
    """Register the drain task on ``app``; return it (``task.delay(conversation_id)``).

    Args:
        app: the Celery app (broker: Redis; configured with ``celery_config()``).
        make_agent: ``make_agent(conversation_id) -> Agent`` (with ``store=`` and ``conversation_id=``).
        store: the store of those agents (to see what is left after a drain).
        name: the task name (the web side sends it by this name).
        lease_retry_seconds: countdown of the first retry when another process holds the lease;
            it doubles with each retry, up to 30 s.
        max_retries: retries of one task; None: no limit (a dead holder's lease always expires).
    """
    agents = AgentPool(make_agent)  # filled in the process that runs the tasks (after a prefork fork)

    @app.task(  # type: ignore[untyped-decorator]
        name=name, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=max_retries
    )
    def drain(self: Task, conversation_id: str) -> list[int]:
        answers = agents.drain(conversation_id)
        served = [seq for answer in answers for seq in answer.get("seq", [])]
        if not answers and store.pending(conversation_id, limit=1):
            # another process holds the lease: it serves what is pending, or dies and its lease expires
            # (bounded exponential backoff, so a conversation that stays busy is not polled in a tight loop)
            raise self.retry(countdown=min(lease_retry_seconds * 2 ** min(self.request.retries or 0, 16),
                                           _MAX_RETRY_SECONDS))
        return served

    return drain


def submit(
    store: ConversationStore,
    task: Task,
    conversation_id: str,
    message: str | dict[str, Any],
    *,
    input_id: str | None = None,
) -> int:
    """Put ``message`` in the conversation's inbox, then send its drain task; return the inbox seq."""
    seq = store.enqueue(conversation_id, message, input_id=input_id)
    task.delay(conversation_id)
    return seq
