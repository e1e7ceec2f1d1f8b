"""Worker loops under a conversation that keeps failing: bounded backoff, quarantine, one log line per fault.

Real SQLite store; the failing conversation holds a corrupt state row (as a tampered database would),
so every drain of it fails in ``load`` with ``FormatError`` while the other conversations go on.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent, SQLiteStore
from yiemagent.testing import text_reply
from yiemagent.workers.drain import PollingWorker


def _echo(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    return text_reply(f"re: {messages[-1]['content']}")


def _poisoned(tmp_path: Path) -> tuple[SQLiteStore, list[str]]:
    store = SQLiteStore(str(tmp_path / "c.db"))
    store.enqueue("bad", "never served")
    lease = store.acquire("bad", "setup")
    store.commit(lease, expected_version=0, state="{}")
    store.release(lease)
    with store._use() as conn, store._transaction(conn) as cur:
        cur.execute(f"UPDATE {store.conversations_table} SET state = 'not a saved state' WHERE conversation_id = 'bad'")
    for i in range(3):
        store.enqueue("good", f"m{i}")
    return store, []


def _run(worker: PollingWorker, seconds: float) -> None:
    thread = threading.Thread(target=worker.run)
    thread.start()
    time.sleep(seconds)
    worker.stop()
    thread.join(timeout=10)


def test_azure_durabletask_1040_a_poison_conversation_backs_off_and_the_others_are_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Azure/durabletask #1040: a poison message was dequeued 79+ times, forever. Before: 17-19 drains
    of the bad conversation a second, a traceback each; now a bounded exponential backoff.
    """
    store, tries = _poisoned(tmp_path)

    def make_agent(cid: str) -> Agent:
        tries.append(cid)
        return Agent(_echo, store=SQLiteStore(store.path), conversation_id=cid)

    worker = PollingWorker(store, make_agent, poll_seconds=0.02)
    with caplog.at_level(logging.WARNING, logger="yiemagent.workers.drain"):
        _run(worker, 2.0)
    bad = tries.count("bad")
    assert 2 <= bad <= 7, bad  # 0.1 s doubling (with jitter): 0, ~0.1, ~0.3, ~0.7, ~1.5 s
    assert [e.answer["content"] for e in (store.get_input("good", q) for q in (1, 2, 3))] == \
        ["re: m0", "re: m1", "re: m2"]
    lines = [r for r in caplog.records if "bad" in r.getMessage()]
    assert len(lines) <= bad and all(r.exc_info is None for r in lines)  # one line per fault, no traceback
    assert [e.seq for e in store.pending("bad")] == [1]  # not lost: it stays pending
    store.close()


def test_memos_2403_a_conversation_that_keeps_failing_is_quarantined_and_logged_once_per_interval(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """MemOS PR #2403: a deterministically failing message was redelivered forever, spamming logs."""
    from yiemagent.workers.faults import FaultTracker

    store, tries = _poisoned(tmp_path)

    def make_agent(cid: str) -> Agent:
        tries.append(cid)
        return Agent(_echo, store=SQLiteStore(store.path), conversation_id=cid)

    faults = FaultTracker(logging.getLogger("yiemagent.workers.drain"), base_seconds=0.01, max_seconds=0.02,
                          quarantine_after=4, quarantine_seconds=60, log_every_seconds=60)
    worker = PollingWorker(store, make_agent, poll_seconds=0.01, faults=faults)
    with caplog.at_level(logging.WARNING, logger="yiemagent.workers.drain"):
        _run(worker, 1.0)
    assert tries.count("bad") == 4 and "bad" in faults.quarantined
    assert "CorruptRowError" in faults.quarantined["bad"]  # a corrupt saved state names itself
    messages = [r.getMessage() for r in caplog.records if "bad" in r.getMessage()]
    assert len(messages) == 2 and "quarantined" in messages[-1], messages  # first fault, then quarantine
    store.close()


def test_fault_tracker_backoff_is_bounded_and_a_success_ends_the_quarantine() -> None:
    from yiemagent.workers.faults import FaultTracker

    faults = FaultTracker(logging.getLogger("test.faults"), base_seconds=1, max_seconds=4, quarantine_after=6,
                          quarantine_seconds=50, log_every_seconds=0)
    waits = [faults.failed("k", RuntimeError("x")) for _ in range(6)]
    assert all(w <= 4 for w in waits[:5]) and waits[-1] == 50 and not faults.ready("k")
    assert waits[4] >= 2  # doubled up to the bound (with jitter of at most half)
    faults.succeeded("k")
    assert faults.ready("k") and faults.quarantined == {}


def test_a_drain_whose_result_write_failed_records_it_on_the_next_drain_not_interrupted(tmp_path: Path) -> None:
    """The pool keeps an agent whose drain failed in the store: the next drain records the result
    that agent still holds (the call ran once), instead of reporting it "interrupted".
    """
    from yiemagent import StoreError, tool
    from yiemagent.store.faults import Fault, FaultyStore
    from yiemagent.workers.drain import AgentPool

    ran: list[int] = []

    @tool
    def charge(amount: int) -> str:
        """Charge (not safe to repeat)."""
        ran.append(amount)
        return f"charged {amount}"

    def llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if messages[-1]["role"] == "tool":
            return text_reply(f"done: {messages[-1]['content']}")
        return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "charge", "arguments": '{"amount": 5}'}}]}}]}

    store = SQLiteStore(str(tmp_path / "c.db"))
    store.enqueue("c", "pay 5")
    # acquire, model/1 + started/call_1 (one put_steps), tool/: 3
    faulty = FaultyStore(SQLiteStore(store.path), Fault(3, "fail"))
    pool = AgentPool(lambda cid: Agent(llm, tools=[charge], store=faulty, conversation_id=cid))
    with pytest.raises(StoreError):
        pool.drain("c")
    assert [w[2] for w in faulty.injected] == ["tool/call_1"]
    answers = pool.drain("c")
    assert [a["content"] for a in answers] == ["done: charged 5"] and ran == [5]
    pool.close()
    store.close()
