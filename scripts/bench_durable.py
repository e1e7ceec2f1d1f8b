"""Durable runs: what the conversation store costs, on SQLite and PostgreSQL.

    python scripts/bench_durable.py [--steps 2000] [--calls 100] [--dsn DSN] [--part store]

Part ``store`` (this file's first part; targets from issue 10: under 1 ms per
journaled step on SQLite, under 2 ms on a local PostgreSQL):

* ``put_step``: one journal write (first write wins), as the loop does for a
  model reply, a "started" marker and a tool result; p50 / p99 / mean in ms;
* ``in the loop``: an agent with an instant model and a no-op tool making
  ``--calls`` sequential tool calls in one run, with the store minus without
  it, divided by the journaled steps of that run (3 per tool call + the final
  reply: model reply, started, result), in ms per step (best of 5 runs each);
* ``commit``: one run's commit (state of a 200-message history, one answer),
  p50 ms.

Without ``--dsn`` a throw-away PostgreSQL is started with Debian's
initdb/pg_ctl (as the tests do; needs root or the postgres binaries), with its
default ``fsync=on`` and ``synchronous_commit=on``. SQLite runs in WAL mode with
``synchronous=NORMAL`` (survives kill -9 of the process, the default) and
``FULL`` (survives power loss).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from yiemagent import Agent, AgentTool, PostgresStore, SQLiteStore
from yiemagent.store import ServedInput
from yiemagent.testing import text_reply

TOOL_RESULT = {"tool_call_id": "call_x", "role": "tool", "is_error": False, "terminate": False, "details": None,
               "tool_name": "noop", "content": [{"type": "text", "text": "x" * 300}]}
MODEL_REPLY = {"role": "assistant", "content": [{"type": "text", "text": "y" * 200}], "extra": {},
               "finish_reason": "tool_calls", "usage": {"prompt_tokens": 900, "completion_tokens": 40},
               "tool_calls": [{"id": "call_x", "name": "noop", "arguments": {"query": "z" * 200}, "error": None,
                               "raw": None, "note": None}]}


def make_model(calls: int) -> Callable[..., dict[str, Any]]:
    made = [0]

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        done = made[0]
        made[0] += 1
        if done >= calls:
            return text_reply("done")
        return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{done}", "type": "function",
                 "function": {"name": "noop", "arguments": f'{{"i": {done}}}'}}]}}]}

    return model


NOOP = AgentTool("noop", "Does nothing.", {"type": "object", "properties": {"i": {"type": "integer"}}},
                 lambda call_id, arguments, event: "ok")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_put_step(store: Any, steps: int) -> tuple[float, float, float]:
    cid = f"bench-{uuid.uuid4().hex[:8]}"
    times = []
    for i in range(steps):
        value = MODEL_REPLY if i % 3 == 0 else (TOOL_RESULT if i % 3 == 2 else {"name": "noop", "at": time.time()})
        started = time.perf_counter()
        store.put_step(cid, "seq-1", f"step/{i}", value)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), percentile(times, 0.99), statistics.fmean(times)


def run_ms(calls: int, store: Any | None) -> float:
    kwargs: dict[str, Any] = {}
    if store is not None:
        kwargs = {"store": store, "conversation_id": f"bench-{uuid.uuid4().hex[:8]}"}
    agent = Agent(make_model(calls), tools=[NOOP], max_turns=calls + 2, tool_execution="sequential",
                  max_repeated_calls=None, **kwargs)
    started = time.perf_counter()
    answer = agent.ask("go")
    elapsed = (time.perf_counter() - started) * 1000
    assert answer["status"] == "completed", answer
    agent.shutdown()
    return elapsed


def bench_loop(store: Any, calls: int, repeat: int = 5) -> float:
    """Store overhead per journaled step inside a real run, in ms.

    Best of ``repeat`` runs each way: other load on the host inflates single runs.
    """
    with_store = min(run_ms(calls, store) for _ in range(repeat))
    without = min(run_ms(calls, None) for _ in range(repeat))
    return (with_store - without) / (3 * calls + 1)


def bench_commit(store: Any, repeat: int = 50) -> float:
    cid = f"bench-{uuid.uuid4().hex[:8]}"
    history = [{"role": "user", "content": [{"type": "text", "text": "q" * 200}]}] * 200
    state = json.dumps({"version": 1, "history": history, "usage": {}, "system_prompt": None})
    lease = store.acquire(cid, "bench", ttl_seconds=60)
    times = []
    for version in range(repeat):
        seq = store.enqueue(cid, "question")
        started = time.perf_counter()
        store.commit(lease, expected_version=version, state=state,
                     served=[ServedInput(seq, {"role": "assistant", "content": "a"})], run=f"seq-{seq}")
        times.append((time.perf_counter() - started) * 1000)
    store.release(lease)
    return statistics.median(times)


def store_part(args: argparse.Namespace) -> None:
    stores: list[tuple[str, Callable[[], Any], float | None]] = []
    folder = tempfile.mkdtemp(prefix="yiemagent-bench-")
    stores.append(("SQLite (NORMAL)", lambda: SQLiteStore(os.path.join(folder, "normal.db")), 1.0))
    stores.append(("SQLite (FULL)", lambda: SQLiteStore(os.path.join(folder, "full.db"), synchronous="FULL"), None))
    server = None
    dsn = args.dsn
    if dsn is None:
        try:
            from tests.helpers import start_postgres

            server = start_postgres()
            dsn = server.dsn
        except (FileNotFoundError, RuntimeError) as exc:
            print(f"(PostgreSQL skipped: {exc})")
    if dsn is not None:
        prefix = f"bench{os.getpid()}_"
        stores.append(("PostgreSQL (local)", lambda: PostgresStore(dsn, table_prefix=prefix), 2.0))
    try:
        print(f"store cost per journaled step ({args.steps} put_step; a run of {args.calls} tool calls)")
        print(f"{'backend':<20} {'put_step p50':>12} {'p99':>8} {'mean':>8} {'in the loop':>12} "
              f"{'commit p50':>11} {'target':>7}")
        for name, factory, target in stores:
            store = factory()
            p50, p99, mean = bench_put_step(store, args.steps)
            loop = bench_loop(store, args.calls)
            commit = bench_commit(store)
            store.close()
            goal = "-" if target is None else f"<{target:g} ms"
            verdict = "" if target is None else ("ok" if max(mean, loop) < target else "MISSED")
            print(f"{name:<20} {p50:>9.3f} ms {p99:>5.2f} ms {mean:>5.3f} ms {loop:>9.3f} ms {commit:>8.3f} ms "
                  f"{goal:>7} {verdict}")
    finally:
        if server is not None:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--dsn", default=None, help="an existing PostgreSQL (else a throw-away one is started)")
    parser.add_argument("--part", choices=["store", "all"], default="all")
    args = parser.parse_args()
    if args.part in ("store", "all"):
        store_part(args)


if __name__ == "__main__":
    main()
