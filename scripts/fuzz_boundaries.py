"""Run the hostile corpus of ``tests/property/boundaries.py`` through every boundary of the text policy.

Usage: ``PYTHONPATH=. python scripts/fuzz_boundaries.py [--examples 100000] [--seed 0]``

Prints, per boundary, the examples run, rule violations and undocumented exceptions, then the totals;
exits 1 if any. ``yiemagent.textpolicy.BOUNDARIES`` is the table; the corpus mixes terminal escape
sequences, lone surrogates, NaN/Infinity, bytes, bidi overrides and a registered secret.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, seed, settings

from tests.property.boundaries import check, hostile_values, load_boundaries

runs: Counter[str] = Counter()
violations: Counter[str] = Counter()
undocumented: Counter[str] = Counter()
samples: dict[str, str] = {}


def runner(name: str, boundary: Any, examples: int, seed_value: int) -> Callable[[], None]:
    """A hypothesis run of ``examples`` hostile values through ``boundary``, counting instead of stopping."""

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(value=hostile_values)
    def run(value: object) -> None:
        runs[name] += 1
        try:
            check(boundary, value)
        except AssertionError as exc:
            violations[name] += 1
            samples.setdefault(name, f"violation: {str(exc)[:200]!r}")
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            undocumented[name] += 1
            samples.setdefault(name, f"{type(exc).__name__}: {str(exc)[:200]!r}")

    return run  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description="hostile corpus through every text-policy boundary")
    parser.add_argument("--examples", type=int, default=100_000, help="examples in all (split over the boundaries)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    table = load_boundaries()
    per = max(1, args.examples // len(table))
    started = time.monotonic()
    for name, boundary in sorted(table.items()):
        runner(name, boundary, per, args.seed)()
        print(f"{name:<22} {boundary.kind:<9} examples {runs[name]:>7,}  violations {violations[name]:>4}  "
              f"undocumented exceptions {undocumented[name]:>4}  {samples.get(name, '')}", flush=True)
    bad = sum(violations.values()) + sum(undocumented.values())
    print(f"boundaries {len(table)}, examples {sum(runs.values()):,}, violations {sum(violations.values())}, "
          f"undocumented exceptions {sum(undocumented.values())}, {time.monotonic() - started:.0f}s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
