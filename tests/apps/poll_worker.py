"""A worker process without an engine: ``python -m tests.apps.poll_worker [--concurrency N]``.

Runs ``yiemagent.workers.PollingWorker`` with the kit's agents until SIGTERM; prints ``ready`` first.
"""

import argparse
import signal
import sys

from tests.apps import kit
from yiemagent.workers import PollingWorker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    store = kit.store_from_env()
    worker = PollingWorker(store, lambda cid: kit.make_agent(store, cid), concurrency=args.concurrency)
    signal.signal(signal.SIGTERM, lambda *_: worker.stop())
    print("ready", flush=True)
    worker.run()
    store.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
