"""The Celery app of the tests: ``celery -A tests.apps.celery_app worker ...`` (broker from YIEMAGENT_TEST_BROKER).

``yiemagent.workers.celery_worker`` with the kit's agents; redelivery tuned to ~2 s so that a
killed worker's task comes back quickly (``celery_config(visibility_timeout_seconds=2,
restore_interval_seconds=0.5)``).
"""

import os

from celery import Celery

from tests.apps import kit
from yiemagent.workers.celery_worker import celery_config, make_drain_task

app = Celery("yiemagent-tests", broker=os.environ["YIEMAGENT_TEST_BROKER"])
app.conf.update(celery_config(visibility_timeout_seconds=2.0, restore_interval_seconds=0.5))
app.conf.update(worker_hijack_root_logger=False, task_default_queue=os.environ.get("YIEMAGENT_TEST_QUEUE", "celery"))

store = kit.store_from_env()
drain = make_drain_task(app, lambda cid: kit.make_agent(store, cid), store, lease_retry_seconds=0.2)
