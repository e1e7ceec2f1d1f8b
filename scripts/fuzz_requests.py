"""Fuzz the agent loop and the request guard: N generated cases, problems counted by kind.

    python scripts/fuzz_requests.py [--examples 100000] [--engine random|hypothesis] [--show 5] [--seed 0]

Each case (``tests/property/wild.py``) is a generated history (tampered too),
a ``prepare_context`` window, up to 4 model replies of any shape, a list of
raw message dicts, a tool schema and a saved state; ``wild.check_one`` runs it
through ``run_turns`` + guard, the guard alone, ``parse_response`` and
``Agent.from_state`` + ``ask``. Printed: cases run, and the counts of
undocumented exceptions, requests the strict validator rejects, and inputs
without an answer (all three should be 0), with the first few examples.
Exit status 1 when any count is not 0.

Engines: ``random`` (default) draws cases with ``wild.random_case`` (fast:
a few ms each); ``hypothesis`` draws them with the property tests'
strategies (``wild.cases``), which is thorough but spends tens of ms per
case drawing on a shared machine.
"""

import argparse
import collections
import logging
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, seed, settings

from tests.property.wild import cases, check_one, random_case


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--show", type=int, default=5, help="examples of each problem kind to print")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine", choices=["random", "hypothesis"], default="random")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # failures are expected and reported as answers; keep the output short
    counts: collections.Counter[str] = collections.Counter()
    shown: dict[str, list[str]] = collections.defaultdict(list)
    ran = [0]

    def one(case):
        ran[0] += 1
        for kind, detail in check_one(case):
            counts[kind] += 1
            if len(shown[kind]) < args.show:
                shown[kind].append(f"{detail[:300]}\n      case: {case!r:.600}")
        if ran[0] % 5000 == 0:
            print(f"  {ran[0]} cases, {dict(counts)}", flush=True)

    @seed(args.seed)
    @settings(max_examples=args.examples, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(cases)
    def run_hypothesis(case):
        one(case)

    started = time.monotonic()
    if args.engine == "hypothesis":
        run_hypothesis()
    else:
        rng = random.Random(args.seed)
        for _ in range(args.examples):
            one(random_case(rng))
    print(f"cases run: {ran[0]} ({args.engine}) in {time.monotonic() - started:.0f} s")
    for kind in ("undocumented", "rejected", "unanswered"):
        print(f"{kind:>13}: {counts[kind]}")
        for example in shown[kind]:
            print(f"      - {example}")
    return 1 if any(counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
