"""Fuzz the entry of replies (issue 15, point 2): every accepted reply is saved and loaded again.

    python scripts/fuzz_replies.py [--examples 20000] [--show 3]

Each example is a reply of any shape ``parse_response`` reads, odd values anywhere
(``tests/property/strategies.reply_shapes``). An agent answers it; its state must be strict
JSON, ``Agent.from_state`` must load the same history, and every request the agent sends must
pass the strict oracle (provider fields allowed). Also: ``parse_state`` on generated
states and ``merge_chunks`` on generated chunk lists must raise nothing but ``FormatError``.
Printed: examples run, replies accepted, and the counts of failures by kind (all should be 0).
Exit status 1 when any count is not 0.
"""

import argparse
import collections
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, settings

from tests.property import test_reply_storable as t
from tests.property.strategies import reply_shapes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--show", type=int, default=3)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    problems: dict[str, list[str]] = collections.defaultdict(list)
    counts = collections.Counter()
    quiet = settings(max_examples=args.examples, deadline=None, database=None, phases=[Phase.generate],
                     suppress_health_check=list(HealthCheck))

    def record(kind, exc, example):
        problems[kind].append(f"{type(exc).__name__}: {exc} <- {example!r:.300}")

    @quiet
    @given(reply_shapes())
    def replies(reply):
        counts["replies"] += 1
        if not t.accepted(reply):
            return
        counts["accepted"] += 1
        try:
            agent = t.Agent(t.scripted(reply), tools=[t.get_weather], max_turns=3)
            answer = agent.ask("go", timeout_seconds=30)
            assert answer["status"] != "error", answer.get("error")  # also: a request the oracle refused
            t.check_state(agent)
        except BaseException as exc:
            record("not storable", exc, reply)

    @quiet
    @given(t.states)
    def states(state):
        counts["states"] += 1
        try:
            t.test_parse_state_raises_only_format_error.hypothesis.inner_test(state)
        except BaseException as exc:
            record("parse_state", exc, state)

    started = time.monotonic()
    replies()
    states()
    print(f"examples: {dict(counts)} in {time.monotonic() - started:.0f} s")
    for kind in ("not storable", "parse_state"):
        print(f"{kind:>14}: {len(problems[kind])}")
        for line in problems[kind][:args.show]:
            print("    ", line)
    return 1 if any(problems.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
