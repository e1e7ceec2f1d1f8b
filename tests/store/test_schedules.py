"""Schedule exploration (small, for CI): a fault at each journal write of a durable run, on both backends.

The large run is ``scripts/explore_schedules.py``; the harness and what each kind of fault does is
``tests/store/schedules.py``. Every schedule must end with the non-idempotent call run at most once,
the input answered, the call visible in the committed history when it ran, ``ask()`` not raising
for a committed answer, and no lease taken from a live holder by a process whose clock is ahead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.store import schedules

Factory = Callable[[], Any]

# the journal steps (model reply, started marker, tool result) and the commit: where the promises break;
# a model reply asking for tools is written with its first call's started marker (one put_steps)
_KEY_WRITES = ("put_step model/1", "put_steps model/1", "put_step started/", "put_step tool/", "commit")


def _key(write: tuple[int, str, str]) -> bool:
    label = f"{write[1]} {write[2]}"
    return any(label.startswith(k) for k in _KEY_WRITES)


@pytest.mark.parametrize("kinds", [("fail", "fail_after", "cut"), ("pause", "skew")], ids=["faults", "pauses"])
@pytest.mark.slow
def test_no_schedule_runs_a_call_twice_loses_an_input_or_hides_a_call(
    store_factory: Factory, tmp_path: Path, kinds: tuple[str, ...]
) -> None:
    outcomes = schedules.explore(store_factory, tmp_path, kinds, _key, lease_seconds=0.5)
    figures = schedules.summary(outcomes)
    assert figures["schedules"] == 3 * len(kinds)  # put_steps model/1 + started/, put_step tool/, commit
    assert figures["bad"] == [], json.dumps(figures, indent=1)
    assert figures["run_twice"] == figures["lost"] == figures["hidden"] == 0
    assert figures["tool_effects"] >= figures["schedules"] - 1  # the call did run (once) nearly everywhere
