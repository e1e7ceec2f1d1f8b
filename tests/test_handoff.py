"""The loop's hand-off of calls to a worker (``yiemagent.loop.handoff``): one lane per run, given back to the pool."""

import concurrent.futures
import json
import queue
import threading

import pytest

from yiemagent import tool
from yiemagent.loop import LoopConfig, handoff, run_turns
from yiemagent.messages import UserMessage
from yiemagent.testing import ScriptedLLM, text_reply
from yiemagent.tools import ToolRegistry

WATCHDOG_SECONDS = 10  # a run that cannot go on is aborted by then, and the test fails on its status


def calls_reply(*calls):
    return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                       for i, n, a in calls]}}]}


def watched_run(llm, tools, executor, **config):
    """``run_turns`` with an abort set after ``WATCHDOG_SECONDS``: a stuck run ends ``aborted``, not never."""
    abort = threading.Event()
    watchdog = threading.Timer(WATCHDOG_SECONDS, abort.set)
    watchdog.start()
    try:
        return run_turns([], [UserMessage("go")], LoopConfig(llm, ToolRegistry(tools), executor=executor, **config),
                         abort)
    finally:
        watchdog.cancel()


@pytest.fixture
def lingering(monkeypatch):
    """An idle lane keeps its thread as long as the test lasts: only ``close`` gives it back."""
    monkeypatch.setattr(handoff, "LINGER_SECONDS", 3600)


@pytest.fixture
def one_thread():
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    yield executor
    executor.shutdown(wait=False, cancel_futures=True)


def test_a_runs_model_calls_and_single_tool_calls_run_on_one_worker_thread_not_the_loops():
    threads = []

    @tool
    def where() -> str:
        """Where it runs."""
        threads.append(threading.get_ident())
        return "here"

    llm = ScriptedLLM([calls_reply(("a", "where", {})), calls_reply(("b", "where", {})), text_reply("done")])
    result = watched_run(llm, [where], None)
    assert result.status == "completed"
    assert len(threads) == 2 and len(set(threads)) == 1
    assert threads[0] != threading.get_ident()


def test_a_parallel_batch_runs_on_a_one_thread_pool_the_lane_gives_its_thread_back_first(lingering, one_thread):
    """The lane holds a pool thread between calls; a batch of several calls needs the pool's threads."""
    ran = []

    @tool
    def note(n: int) -> str:
        """Note n."""
        ran.append(n)
        return str(n)

    llm = ScriptedLLM([calls_reply(("a", "note", {"n": 1})),  # one call: on the lane
                       calls_reply(("b", "note", {"n": 2}), ("c", "note", {"n": 3})),  # two at once: the pool
                       calls_reply(("d", "note", {"n": 4})),  # the lane again
                       text_reply("done")])
    result = watched_run(llm, [note], one_thread, tool_execution="parallel")
    assert result.status == "completed"
    assert sorted(ran) == [1, 2, 3, 4]
    assert [m.text for m in result.new_messages if m.role == "tool"] == ["1", "2", "3", "4"]


def test_the_lane_gives_its_pool_thread_back_when_the_run_ends(lingering, one_thread):
    llm = ScriptedLLM([calls_reply(("a", "noop", {})), text_reply("done")])

    @tool
    def noop() -> str:
        """Nothing."""
        return "ok"

    assert watched_run(llm, [noop], one_thread).status == "completed"
    assert one_thread.submit(lambda: 42).result(timeout=WATCHDOG_SECONDS) == 42


def test_a_call_cancelled_before_it_started_is_not_run_and_still_comes_back(one_thread):
    done: queue.SimpleQueue[handoff.Handed] = queue.SimpleQueue()
    blocker = threading.Event()
    one_thread.submit(blocker.wait)  # the pool's only thread is busy: the lane cannot start yet
    ran = []
    handed = handoff.Lane(one_thread, done.put).hand(ran.append, (1,))
    handed.cancelled = True  # what the loop does when an abort ends its wait
    blocker.set()
    assert done.get(timeout=WATCHDOG_SECONDS) is handed
    assert ran == [] and handed.finished


def test_a_lane_that_let_its_thread_go_takes_one_again_for_the_next_call(monkeypatch, one_thread):
    monkeypatch.setattr(handoff, "LINGER_SECONDS", 0.001)
    done: queue.SimpleQueue[handoff.Handed] = queue.SimpleQueue()
    lane = handoff.Lane(one_thread, done.put)
    first = lane.hand(lambda: "first", ())
    assert done.get(timeout=WATCHDOG_SECONDS) is first and first.result() == "first"
    # the idle lane gives the only thread back: a plain task runs on it
    assert one_thread.submit(lambda: "pool").result(timeout=WATCHDOG_SECONDS) == "pool"
    second = lane.hand(lambda: "second", ())
    assert done.get(timeout=WATCHDOG_SECONDS) is second and second.result() == "second"


def test_what_a_handed_call_raises_is_raised_by_result(one_thread):
    done: queue.SimpleQueue[handoff.Handed] = queue.SimpleQueue()

    def fail() -> None:
        raise ValueError("no")

    handed = handoff.Lane(one_thread, done.put).hand(fail, ())
    assert done.get(timeout=WATCHDOG_SECONDS) is handed
    with pytest.raises(ValueError, match="no"):
        handed.result()


def test_a_parallel_batch_emits_each_calls_progress_before_its_end_and_answers_in_order():
    from yiemagent.testing import EventRecorder
    from yiemagent.tools import report_progress

    both_started = threading.Barrier(2, timeout=WATCHDOG_SECONDS)

    @tool
    def step(n: int) -> str:
        """Step n."""
        both_started.wait()  # the two calls run at once
        for k in range(3):
            report_progress({"call": n, "k": k})
        return str(n)

    llm = ScriptedLLM([calls_reply(("a", "step", {"n": 1}), ("b", "step", {"n": 2})), text_reply("done")])
    recorder = EventRecorder()
    result = run_turns([], [UserMessage("go")], LoopConfig(llm, ToolRegistry([step]), tool_execution="parallel"),
                       emit=recorder)
    assert result.status == "completed"
    assert [m.text for m in result.new_messages if m.role == "tool"] == ["1", "2"]
    for call_id, n in (("a", 1), ("b", 2)):
        mine = [e for e in recorder.events if getattr(e, "tool_call_id", None) == call_id
                or getattr(getattr(e, "tool_call", None), "id", None) == call_id]
        kinds = [e.type for e in mine]
        assert kinds == ["tool_execution_start", *["tool_execution_update"] * 3, "tool_execution_end"], kinds
        assert [e.progress["k"] for e in mine[1:4]] == [0, 1, 2]
        assert all(e.progress["call"] == n for e in mine[1:4])


class _EndlessCalls:
    """A model that asks for ``ping`` again and again until ``stop`` is set (at most ``cap`` times)."""

    def __init__(self, stop: threading.Event, cap: int) -> None:
        self.stop, self.cap, self.made = stop, cap, 0

    def __call__(self, messages, tools):
        self.made += 1
        if self.stop.is_set() or self.made > self.cap:
            return text_reply("done")
        return calls_reply((f"c{self.made}", "ping", {}))


def test_runs_sharing_a_one_thread_executor_take_turns(one_thread):
    """A busy run's lane gives the pool thread back after its lease: another run on the same pool gets it."""
    other_done = threading.Event()

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    busy = _EndlessCalls(other_done, cap=100_000)  # without turns, the other run would wait for all of these
    busy_thread = threading.Thread(target=watched_run, args=(busy, [ping], one_thread),
                                   kwargs={"max_turns": busy.cap + 2, "max_repeated_calls": None})
    busy_thread.start()
    try:
        while busy.made < 3:  # the busy run holds the lane
            threading.Event().wait(0.001)
        other = watched_run(ScriptedLLM([calls_reply(("x", "ping", {})), text_reply("ok")]), [ping], one_thread)
        other_done.set()
    finally:
        other_done.set()
        busy_thread.join(WATCHDOG_SECONDS)
    assert other.status == "completed"
    assert busy.made <= busy.cap  # the busy run was still going when the other one ended
