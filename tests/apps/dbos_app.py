"""A DBOS worker process: ``python -m tests.apps.dbos_app --executor-id ID --system-database-url URL``.

``yiemagent.workers.dbos_worker.DBOSWorker`` with the kit's agents; prints ``ready`` once
launched; SIGTERM stops it.
"""

import argparse
import signal
import threading

from tests.apps import kit
from yiemagent.workers.dbos_worker import DBOSWorker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--executor-id", required=True)
    parser.add_argument("--system-database-url", required=True)
    args = parser.parse_args()
    store = kit.store_from_env()
    worker = DBOSWorker(
        lambda cid: kit.make_agent(store, cid), store, system_database_url=args.system_database_url,
        executor_id=args.executor_id, app_name="yiemagent-tests", polling_interval_seconds=0.05,
        sweep_seconds=None, lease_retry_seconds=0.2, config={"log_level": "WARNING", "sys_db_pool_size": 4},
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    worker.launch()
    print("ready", flush=True)
    stop.wait()
    worker.destroy()
    store.close()


if __name__ == "__main__":
    main()
