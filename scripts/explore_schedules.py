"""Schedule exploration of durable runs, large: every fault kind at every write, on both backends.

    python scripts/explore_schedules.py [--backend sqlite postgres] [--rounds 3] [--lease 0.5 1.0]
        [--kinds fail fail_after cut pause skew] [--dsn DSN]

One schedule = one input whose run calls a non-idempotent tool, served by a forked process A whose
store injects one fault (``yiemagent.store.faults``) at write number k: ``fail`` (disk full),
``fail_after`` (written, then the connection lost), ``cut`` (PostgreSQL: the backend terminated;
SQLite: the connection closed), ``pause`` (SIGSTOP past the lease while process B takes over, then
SIGCONT), ``skew`` (SIGSTOP within the lease while B, its clock one hour ahead, tries to take over).
See ``tests/store/schedules.py``. Every kind x every write x every lease x rounds, per backend.

Prints, per backend and in all: schedules, pauses, skews, cuts, failures, tool effects, and the
counts that must be 0: non-idempotent calls run twice, inputs lost, calls hidden from the committed
history, committed histories not whole (``schedules.history_faults``: a strict provider's checks, no
input left out under a kept answer), ``ask()`` raising for a committed answer, leases taken from a live
holder. Exit status 1 when any of those is not 0. PostgreSQL: ``--dsn``, else a server is started (Debian's postgresql).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.store import schedules
from yiemagent.store import PostgresStore, SQLiteStore

_MUST_BE_ZERO = ("run_twice", "lost", "hidden", "broken", "ask_raised_committed", "lease_stolen")


def _factories(backends: list[str], dsn: str | None, workdir: Path) -> tuple[dict[str, Any], Any]:
    made: dict[str, Any] = {}
    server = None
    for backend in backends:
        if backend == "sqlite":
            made[backend] = lambda n: functools.partial(SQLiteStore, str(workdir / f"explore-{n}.db"))
        else:
            if dsn is None:
                from tests.helpers import start_postgres

                server = start_postgres()
                dsn = server.dsn
            made[backend] = lambda n, dsn=dsn: functools.partial(PostgresStore, dsn, table_prefix=f"x{n}_")
    return made, server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lease", nargs="+", type=float, default=[0.5, 1.0])
    parser.add_argument("--kinds", nargs="+", default=list(schedules.KINDS), choices=list(schedules.KINDS))
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="yiemagent-explore-"))
    factories, server = _factories(args.backend, args.dsn, workdir)
    totals: list[schedules.Outcome] = []
    started = time.monotonic()
    try:
        n = 0
        for backend, make in factories.items():
            outcomes: list[schedules.Outcome] = []
            for lease in args.lease:
                for _ in range(args.rounds):
                    n += 1
                    outcomes += schedules.explore(make(n), workdir, tuple(args.kinds), lease_seconds=lease)
            figures = schedules.summary(outcomes)
            print(f"{backend}: " + json.dumps({k: v for k, v in figures.items() if k != "bad"}))
            for line in figures["bad"]:
                print(f"  BAD {line}")
            totals += outcomes
    finally:
        if server is not None:
            server.stop()
    figures = schedules.summary(totals)
    figures["seconds"] = round(time.monotonic() - started, 1)
    print("all: " + json.dumps({k: v for k, v in figures.items() if k != "bad"}))
    return 1 if any(figures[k] for k in _MUST_BE_ZERO) else 0


if __name__ == "__main__":
    sys.exit(main())
