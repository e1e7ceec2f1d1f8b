"""Crash tests against real worker processes: ``kill -9`` at deterministic points, then recovery.

Peers' reports of the fault: a side effect whose result was not yet checkpointed is executed
again on resume (andrewyng/openworker#443); a crash re-executes the whole tool batch that was in
flight (GEMISIS/leviath#96); after a SIGKILL, whether a step is replayed or re-executed depends
on write order (langchain-ai/langgraph#8039); a checkpoint retry after an executor failure
replays a turn's tool calls (microsoft/agent-framework#3938).

One scenario (module fixture ``crashed``), several checks. Worker processes
(``tests/apps/poll_worker.py``: ``yiemagent.workers.PollingWorker``, 2 drains at once each)
serve conversations from a real PostgreSQL store (and again from a SQLite file). The tools
append one line per execution to a counter file outside the store (the "server-side" count).
Each scenario conversation's first message reaches a kill point (``tests/apps/kit.py``); the
test waits until a worker process says it is there, kills it with SIGKILL and starts a fresh one:

* ``model-call``: in the model call after the tool results (the tool's result is journaled);
* ``first-model-call``: in the model call that asks for the tools (nothing journaled yet);
* ``parallel-batch``: in a batch of three calls, two finished (their results journaled, which the
  test checks before it kills), the third running (its side effect done, no result recorded);
* ``before-commit``: in ``after_tool_call``: the tool's result is journaled, the run not committed;
* ``idempotent-tool``: inside a tool marked ``idempotent=True``: it is run again, by design.

The points are taken one after the other (a kill must not pre-empt the next point); three calm
conversations run meanwhile. Afterwards each conversation takes a second message.

Run them: ``python -m pytest tests/workers/test_crash.py -q -s`` (``-s`` prints the figures).
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.apps import kit
from tests.helpers import PYTHON
from tests.strict_openai import validate

WORKER = [PYTHON, "-m", "tests.apps.poll_worker", "--concurrency", "2"]
pytestmark = pytest.mark.timeout(600)  # the module fixture kills and restarts workers: minutes on a loaded machine
SCENARIOS: dict[str, dict[str, Any]] = {
    "model-call": {"calls": [("record", "a")], "point": "model2-{label}"},
    "first-model-call": {"calls": [("record", "a")], "point": "model1-{label}"},
    "parallel-batch": {"calls": [("record", "a"), ("record", "b"), ("record", "c")],
                       "point": "tool-{label}-c", "journaled_first": ["a", "b"]},
    "before-commit": {"calls": [("record", "a")], "point": "after-{label}-a"},
    "idempotent-tool": {"calls": [("lookup", "a")], "point": "tool-{label}-a"},
}


@dataclass
class Crashed:
    """What the scenario left: ids, answers, histories and the counter."""

    ids: dict[str, str]
    """scenario name (or ``calm-N``) -> conversation id"""
    answers: dict[str, list[dict[str, Any]]]
    histories: dict[str, list[dict[str, Any]]]
    lines: list[dict[str, Any]]
    kills: int
    by_label: collections.Counter[str] = field(default_factory=collections.Counter)

    def label(self, name: str, k: int = 1) -> str:
        return f"{self.ids[name]}-m{k}"

    def tool_results(self, name: str) -> dict[str, str]:
        return {m["tool_call_id"]: str(m["content"]) for m in self.histories[name] if m["role"] == "tool"}


@pytest.fixture(scope="module")
def crashed(module_rig: Any) -> Iterator[Crashed]:
    rig = module_rig
    run = uuid.uuid4().hex[:6]
    ids = {name: f"{name}-{run}" for name in SCENARIOS}
    ids.update({f"calm-{i}": f"calm-{run}-{i}" for i in range(3)})
    for _ in range(2):
        rig.start(WORKER)
    for i in range(3):  # calm conversations: no kill point of their own, but a kill may hit them too
        cid = ids[f"calm-{i}"]
        rig.store.enqueue(cid, kit.instruction(f"{cid}-m1", [("record", f"{cid}-m1-a")]))
    # one kill point after the other (a kill must not pre-empt the next point): arm it, send the
    # message, wait until a worker is there, kill that worker, start a fresh one, wait for the answer
    for name, spec in SCENARIOS.items():
        cid = ids[name]
        label = f"{cid}-m1"
        point = spec["point"].format(label=label)
        kit.arm(rig.kill_dir, point)
        rig.store.enqueue(cid, kit.instruction(label, [(tool, f"{label}-{x}") for tool, x in spec["calls"]]))
        try:
            pid = kit.wait_ready(rig.kill_dir, point, timeout_seconds=30)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n{rig.logs()}") from None
        if spec.get("journaled_first"):
            rig.wait_journaled(cid, [f"call_{label}-{x}" for x in spec["journaled_first"]])
        rig.kill9(pid)
        rig.start(WORKER)
        rig.wait_answers(cid, 1, timeout_seconds=30)

    # every conversation finishes its interrupted run, then serves a second message
    for cid in ids.values():
        rig.wait_answers(cid, 1, timeout_seconds=60)
        rig.store.enqueue(cid, kit.instruction(f"{cid}-m2", [("record", f"{cid}-m2-a")]))
    answers = {name: rig.wait_answers(cid, 2, timeout_seconds=60) for name, cid in ids.items()}
    histories = {name: rig.history(cid) for name, cid in ids.items()}
    lines = kit.read_counter(rig.counter)
    result = Crashed(ids, answers, histories, lines, rig.kills,
                     collections.Counter(line["label"] for line in lines))
    runs = collections.Counter(line["key"] for line in lines)
    rerun = [key for key, n in runs.items() if n > 1 and "idempotent-tool" not in key]
    print(f"\ncrash figures: kills={rig.kills} conversations={len(ids)} tool executions={len(lines)} "
          f"recorded tool calls run twice={len(rerun)}")
    yield result


def test_every_conversation_finishes_continues_and_stays_valid(crashed: Crashed) -> None:
    assert crashed.kills == len(SCENARIOS)
    for name, cid in crashed.ids.items():
        history = crashed.histories[name]
        validate(history)
        assert kit.user_labels(history) == [f"{cid}-m1", f"{cid}-m2"]
        assert crashed.answers[name][1]["content"] == f"{cid}-m2 #2: recorded {cid}-m2-a"
        assert [a["status"] for a in crashed.answers[name]] == ["completed", "completed"]
        assert kit.final_answers(history) == [a["content"] for a in crashed.answers[name]]
    for i in range(3):  # a kill may have hit them in the middle of their tool: then it was reported
        cid = crashed.ids[f"calm-{i}"]
        first = crashed.answers[f"calm-{i}"][0]["content"]
        assert first == f"{cid}-m1 #1: recorded {cid}-m1-a" or "interrupted" in first.lower(), first


def test_no_recorded_tool_call_ran_twice(crashed: Crashed) -> None:
    """The server-side count: every non-idempotent call ran at most once, whatever was killed when."""
    runs = collections.Counter(line["key"] for line in crashed.lines)
    assert all(key for key in runs), "a tool ran without an idempotency key"
    twice = {key: n for key, n in runs.items() if n > 1 and crashed.ids["idempotent-tool"] not in key}
    assert twice == {}


def test_leviath_96_parallel_batch_killed_in_flight_runs_nothing_again(crashed: Crashed) -> None:
    """GEMISIS/leviath#96: a crash re-executed the whole in-flight batch. Here the two finished calls
    keep their recorded results and the running one is not started again.
    """
    label = crashed.label("parallel-batch")
    assert [crashed.by_label[f"{label}-{x}"] for x in "abc"] == [1, 1, 1]
    results = crashed.tool_results("parallel-batch")
    assert results[f"call_{label}-a"] == f"recorded {label}-a"
    assert results[f"call_{label}-b"] == f"recorded {label}-b"


def test_openworker_443_interrupted_side_effect_is_reported_not_rerun(crashed: Crashed) -> None:
    """andrewyng/openworker#443: a side effect done before the crash but not checkpointed ran again on
    resume. Here the interrupted call gets an error result saying so, and the model sees it.
    """
    label = crashed.label("parallel-batch")
    interrupted = crashed.tool_results("parallel-batch")[f"call_{label}-c"]
    assert "interrupted" in interrupted.lower(), interrupted
    first = crashed.answers["parallel-batch"][0]["content"]
    assert first.startswith(f"{label} #1: recorded {label}-a | recorded {label}-b | "), first
    assert "interrupted" in first.lower()


def test_agent_framework_3938_kill_between_result_and_commit_replays_the_result(crashed: Crashed) -> None:
    """microsoft/agent-framework#3938: a retry after an executor died replayed the turn's tool calls.
    Killed after the result was journaled and before the commit: the result is replayed, not re-run.
    """
    label = crashed.label("before-commit")
    assert crashed.by_label[f"{label}-a"] == 1
    assert crashed.answers["before-commit"][0]["content"] == f"{label} #1: recorded {label}-a"


def test_langgraph_8039_kill_in_model_call_replays_journal_not_tools(crashed: Crashed) -> None:
    """langchain-ai/langgraph#8039: after SIGKILL, replay vs re-execution depended on write order.
    Killed in the model call after the tools: the tool result comes from the journal; killed in
    the model call before them: the model is asked again and the tool runs once.
    """
    for name in ("model-call", "first-model-call"):
        label = crashed.label(name)
        assert crashed.by_label[f"{label}-a"] == 1, name
        assert crashed.answers[name][0]["content"] == f"{label} #1: recorded {label}-a"


def test_idempotent_tool_is_run_again_after_a_crash(crashed: Crashed) -> None:
    """A tool marked ``idempotent=True`` that was interrupted is simply run again."""
    label = crashed.label("idempotent-tool")
    assert crashed.by_label[f"{label}-a"] == 2
    assert crashed.answers["idempotent-tool"][0]["content"] == f"{label} #1: looked up {label}-a"
