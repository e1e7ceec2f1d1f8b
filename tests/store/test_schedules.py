"""Schedule exploration (small, for CI): a fault at each journal write of a durable run, on both backends.

The large run is ``scripts/explore_schedules.py``; the harness and what each kind of fault does is
``tests/store/schedules.py``. Every schedule must end with the non-idempotent call run at most once,
the input answered, the call visible in the committed history when it ran, the committed history
whole (``schedules.history_faults``), ``ask()`` not raising
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
    assert figures["run_twice"] == figures["lost"] == figures["hidden"] == figures["broken"] == 0
    assert figures["tool_effects"] >= figures["schedules"] - 1  # the call did run (once) nearly everywhere


def test_history_faults_names_the_shapes_a_strict_provider_refuses() -> None:
    """The explorer's check of a committed history (issue 27 point 3), on the shape issue 27's PostgreSQL cut
    committed (the question excluded, its answer kept) and on a whole one.
    """
    from yiemagent.messages import AssistantMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage

    call = ToolCall(id="call_1", name="charge", arguments={"amount": 1})
    whole = [SystemMessage("s"), UserMessage("charge 1"), AssistantMessage("", tool_calls=[call]),
             ToolResultMessage("call_1", "ok", tool_name="charge"), AssistantMessage("charged")]
    assert schedules.history_faults(whole) == []
    cut = [SystemMessage("s"), UserMessage("charge 1", excluded="failed"), *whole[2:]]
    faults = schedules.history_faults(cut)
    assert any("not the user's" in f for f in faults) and any("excluded input" in f for f in faults)
    unanswered = [UserMessage("charge 1"), AssistantMessage("", tool_calls=[call]), AssistantMessage("charged")]
    assert any("no result" in f for f in schedules.history_faults(unanswered))
    stray = [UserMessage("hi"), ToolResultMessage("call_9", "ok", tool_name="charge")]
    assert schedules.history_faults(stray) == ["tool result call_9 answers no open call"]
