"""The durable promise under faults: fenced journal writes, one lease clock, store failures, bad rows.

Real stores (SQLite and a real PostgreSQL, the ``store_factory`` fixture); faults come from the
store's fault-injection seam (``yiemagent.store.faults.FaultyStore``) or from rows changed by SQL,
as a tampered or corrupt database would hold them. Tests named after a public report reproduce
the kind of fault that report describes.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest

from yiemagent import Agent, tool
from yiemagent.store import ServedInput
from yiemagent.store.durable import _Heartbeat
from yiemagent.store.faults import Fault, FaultyStore
from yiemagent.testing import text_reply

Factory = Callable[[], Any]


def _sql(store: Any, statement: str, params: tuple[Any, ...] = ()) -> None:
    """Change a row behind the store's back (a tampered or corrupt database)."""
    with store._use() as conn, store._transaction(conn) as cur:
        cur.execute(store._sql(statement), params)


def charge_call(call_id: str = "call_1") -> dict[str, Any]:
    return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "charge", "arguments": '{"amount": 5}'}}]}}]}


def stateless_llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A user message asks for charge; a tool result gets the answer (any process can serve any turn)."""
    if messages[-1]["role"] == "tool":
        return text_reply(f"done: {messages[-1]['content']}")
    if tools:
        return charge_call()
    return text_reply(f"re: {messages[-1]['content']}")


class Charges:
    """The server-side counter of a non-idempotent tool."""

    def __init__(self, seconds: float = 0.0, watch_abort: bool = False) -> None:
        self.ran: list[str] = []
        self.saw_abort: list[bool] = []
        self.seconds, self.watch_abort = seconds, watch_abort

    def tool(self) -> Any:
        @tool
        def charge(amount: int, abort_event: threading.Event | None = None) -> str:
            """Charge the card (not safe to repeat)."""
            self.ran.append(threading.current_thread().name)
            if self.watch_abort and abort_event is not None:
                self.saw_abort.append(abort_event.wait(self.seconds))
            else:
                time.sleep(self.seconds)
            return f"charged {amount}"

        return charge


def agent_on(store: Any, charges: Charges, llm: Any = stateless_llm, cid: str = "c", **kwargs: Any) -> Agent:
    kwargs.setdefault("tool_execution", "sequential")
    return Agent(llm, tools=[charges.tool()], store=store, conversation_id=cid, **kwargs)


# ---------------------------------------------------------------------------- fencing and the lease clock


def test_dbos_py_742_a_holder_paused_in_its_model_call_past_its_lease_runs_no_tool(
    store_factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dbos-transact-py #742: a stale owner still ran the work. Here process A is paused in its first
    model call past its lease (no heartbeat: a VM pause); B takes over and serves the input, running the
    tool; A wakes with the reply asking for the same call: it must write nothing and run nothing.
    """
    monkeypatch.setattr(_Heartbeat, "_beat", lambda self: None)  # paused: no renewals
    charges = Charges()
    b_store = store_factory()

    def paused_llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if messages[-1]["role"] == "tool":
            return text_reply("A's answer")
        time.sleep(0.5)  # A's lease (0.3 s) expires
        assert agent_on(b_store, charges).drain()  # B takes over and serves it all
        return charge_call()

    a = agent_on(store_factory(), charges, paused_llm, lease_seconds=0.3)
    answer = a.ask("pay 5")
    assert len(charges.ran) == 1  # B's run only; before the fix A ran the call a second time
    assert answer["content"] == "done: charged 5" and answer["status"] == "completed"
    assert b_store.steps("c", "seq-1") == {}  # A left no zombie rows behind
    assert [m.role for m in a.history] == ["user", "assistant", "tool", "assistant"]


def test_sqlite_leases_ignore_a_process_clock_an_hour_ahead(sqlite_store_factory: Factory) -> None:
    holder = sqlite_store_factory()
    lease = holder.acquire("c", "holder", ttl_seconds=30)
    assert lease is not None
    ahead = sqlite_store_factory()
    with mock.patch("time.time", lambda real=time.time: real() + 3600.0):
        assert ahead.acquire("c", "ahead", ttl_seconds=30) is None  # before: taken (its clock said expired)
    holder.put_step("c", "seq-1", "model/1", {"ok": 1}, lease=lease)


def test_sqlite_a_lease_from_a_previous_boot_counts_as_expired(sqlite_store_factory: Factory) -> None:
    s = sqlite_store_factory()
    old = s.acquire("c", "before-reboot", ttl_seconds=3000)
    _sql(s, f"UPDATE {s.conversations_table} SET lease_clock = 'boot:another-boot'")
    taken = s.acquire("c", "after-reboot", ttl_seconds=30)
    assert taken is not None and taken.token == old.token + 1


@pytest.mark.parametrize("expiry", [1e300, float("inf"), "soon"])
def test_a_lease_row_expiring_in_the_year_10_300_does_not_block_the_conversation(
    store_factory: Factory, expiry: Any
) -> None:
    s = store_factory()
    if isinstance(expiry, str) and s._clock_id == "db":
        expiry = float("nan")  # a typed column cannot hold text; NaN is its corrupt value there
    s.enqueue("c", "hello")
    s.acquire("c", "gone", ttl_seconds=30)
    _sql(s, f"UPDATE {s.conversations_table} SET lease_expires_at = ?", (expiry,))
    answer = Agent(stateless_llm, store=s, conversation_id="c").drain()
    assert [a["content"] for a in answer] == ["re: hello"]


def test_zombie_journal_rows_are_dropped_by_the_commit_that_answers_their_input(store_factory: Factory) -> None:
    s = store_factory()
    s.enqueue("c", "one")
    s.enqueue("c", "two")
    s.put_step("c", "seq-2", "started/late", {"by": "zombie"})  # a late unfenced write (an old version)
    lease = s.acquire("c", "w")
    s.commit(lease, expected_version=0, state="{}", served=[ServedInput(1, {"c": 1}), ServedInput(2, {"c": 2})],
             run="seq-1")
    assert s.steps("c", "seq-2") == {}


# ---------------------------------------------------------------------------- store failures


def test_a_commit_that_keeps_failing_on_a_started_agent_resolves_ask_instead_of_hanging(
    store_factory: Factory,
) -> None:
    faulty = FaultyStore(store_factory(), Fault(1, "fail", only=("commit",), repeat=True))
    charges = Charges()
    with agent_on(faulty, charges, lease_seconds=0.5) as agent:
        answer = agent.ask("pay 5", timeout_seconds=20)  # before: TimeoutError (the future never resolved)
        assert answer["status"] == "error" and "disk is full" in answer["error"]
        assert [e.message["content"] for e in faulty.pending("c")] == ["pay 5"]  # kept for a later serve
    assert len(charges.ran) == 1
    later = agent_on(store_factory(), charges)
    assert [a["content"] for a in later.drain()] == ["done: charged 5"] and len(charges.ran) == 1


@pytest.mark.parametrize("fault", [Fault(1, "fail_after", only=("commit",)), Fault(1, "fail", only=("release",)),
                                   Fault(1, "cut", only=("release",))], ids=["commit-cut-after", "release",
                                                                             "release-cut"])
def test_ask_never_raises_for_an_input_whose_answer_was_committed(store_factory: Factory, fault: Fault) -> None:
    faulty = FaultyStore(store_factory(), fault)
    charges = Charges()
    answer = agent_on(faulty, charges).ask("pay 5")  # before: StoreError
    assert answer["status"] == "completed" and answer["content"] == "done: charged 5"
    assert faulty.injected and len(charges.ran) == 1
    assert faulty.get_input("c", 1).answer["content"] == "done: charged 5"


@pytest.mark.parametrize("kind", ["fail", "cut"])
def test_a_store_failure_after_a_tool_ran_keeps_the_call_in_the_committed_history(
    store_factory: Factory, kind: str
) -> None:
    """The write of the tool's result fails (disk full; a real connection cut on PostgreSQL): before,
    the run ended "error", its answer was committed and the call dropped from what the model sees.
    """
    # write 4: tool/call_1 (3 wrote model/1 and started/call_1 in one transaction)
    faulty = FaultyStore(store_factory(), Fault(4, kind))  # type: ignore[arg-type]
    charges = Charges()
    answer = agent_on(faulty, charges).ask("pay 5")
    assert [w[2] for w in faulty.injected] == ["tool/call_1"], faulty.writes
    assert answer["status"] == "completed" and answer["content"] == "done: charged 5", answer
    assert len(charges.ran) == 1  # the failed write did not make it run again
    fresh = agent_on(store_factory(), Charges())
    tools = [m for m in fresh.history if m.role == "tool" and not getattr(m, "excluded", None)]
    assert len(tools) == 1 and "charged 5" in str(tools[0].content)


# ---------------------------------------------------------------------------- output queue (bug 3a)


@pytest.mark.parametrize("when", ["before start", "right after start"])
def test_dbos_java_491_an_input_queued_around_start_is_answered_once(store_factory: Factory, when: str) -> None:
    """dbos-transact-java #491: launch-time recovery re-ran what the caller was already running. Here
    recover() served the queued input, then the main loop delivered its answer a second time.
    """
    charges = Charges()
    agent = agent_on(store_factory(), charges)
    if when == "before start":
        agent.input_queue.put("pay 5")
        agent.start()
    else:
        agent.start()
        agent.input_queue.put("pay 5")
    first = agent.output_queue.get(timeout=20)
    assert first["content"] == "done: charged 5"
    with pytest.raises(queue.Empty):
        agent.output_queue.get(timeout=0.5)
    agent.shutdown(timeout_seconds=5)
    assert len(charges.ran) == 1


# ---------------------------------------------------------------------------- bad rows


@pytest.mark.parametrize("row", ["{not json", "[1, 2]", json.dumps({"role": "system", "content": "x"}),
                                 json.dumps({"role": "user", "content": {"bad": "shape"}})])
def test_agent_framework_8221_a_corrupt_inbox_row_is_quarantined_and_the_conversation_goes_on(
    store_factory: Factory, row: str
) -> None:
    """microsoft/agent-framework PR #8221: a corrupt checkpoint surfaced as a raw JSONDecodeError. Here
    a corrupt inbox row must read as an entry with its error, be answered with that error, and the
    inputs after it served.
    """
    s = store_factory()
    s.enqueue("c", "one")
    _sql(s, f"UPDATE {s.inbox_table} SET message = ? WHERE seq = 1", (row,))
    entry = s.get_input("c", 1)  # before: json.JSONDecodeError for the non-JSON row
    assert entry is not None and (entry.error is not None or row != "{not json")
    answer = agent_on(s, Charges()).ask("two")  # before: JSONDecodeError / FormatError, forever
    assert answer["content"] == "done: charged 5"
    first = s.get_input("c", 1).answer
    assert first["status"] == "error" and first["quarantined"] is True and first["seq"] == [1]
    assert s.pending("c") == []


def test_langgraph_6491_a_corrupt_journal_row_does_not_stall_the_conversation(store_factory: Factory) -> None:
    """Langgraph #6491: one bad checkpoint made a thread permanently unloadable. Here a corrupt journal
    row quarantines its input (answered with the reason) and the next input is served.
    """
    s = store_factory()
    s.enqueue("c", "one")
    s.put_step("c", "seq-1", "model/1", {"role": "assistant", "content": "x"})
    _sql(s, f"UPDATE {s.journal_table} SET value = 'garbage'")
    answer = agent_on(s, Charges()).ask("two")
    assert answer["content"] == "done: charged 5"
    first = s.get_input("c", 1).answer
    assert first["quarantined"] is True and "corrupt" in first["error"]
    assert s.steps("c", "seq-1") == {}


def test_a_corrupt_stored_answer_reads_as_an_error_answer(store_factory: Factory) -> None:
    s = store_factory()
    agent_on(s, Charges()).ask("one")
    _sql(s, f"UPDATE {s.inbox_table} SET answer = '{{cut'")
    answer = s.wait_answer("c", 1, timeout_seconds=1)
    assert answer["status"] == "error" and "corrupt" in answer["error"]


# ---------------------------------------------------------------------------- long tools, lost leases


def test_celery_5935_a_tool_running_past_lease_seconds_is_not_run_again_by_another_worker(
    store_factory: Factory,
) -> None:
    """Celery #5935 (and pretix #2058): a task running past the visibility timeout was delivered
    again and ran twice. Here the lease is renewed while the tool runs; another worker draining all
    along never gets it.
    """
    charges = Charges(seconds=1.2)
    done = threading.Event()
    other_served: list[dict[str, Any]] = []

    def other_worker() -> None:
        other = agent_on(store_factory(), charges, lease_seconds=0.3)
        while not charges.ran:  # from the moment the tool runs (1.2 s, 4 leases long)
            time.sleep(0.01)
        while not done.is_set():
            other_served.extend(other.drain())
            time.sleep(0.05)

    thread = threading.Thread(target=other_worker)
    agent = agent_on(store_factory(), charges, lease_seconds=0.3)
    thread.start()
    try:
        answer = agent.ask("pay 5")
    finally:
        done.set()
        thread.join()
    assert len(charges.ran) == 1 and answer["content"] == "done: charged 5" and other_served == []


def test_temporal_sdk_python_812_a_tool_whose_lease_was_taken_sees_abort(store_factory: Factory) -> None:
    """temporalio/sdk-python #812: a heartbeating activity should learn it lost its slot. Here another
    process takes the lease while a tool runs: the heartbeat aborts the run, the tool sees
    ``abort_event``, and the run's commit writes nothing.
    """
    charges = Charges(seconds=10, watch_abort=True)
    s = store_factory()
    intruder = store_factory()

    def steal() -> None:
        while not charges.ran:
            time.sleep(0.02)
        _sql(intruder, f"UPDATE {intruder.conversations_table} SET lease_expires_at = 0")
        assert intruder.acquire("c", "intruder", ttl_seconds=1) is not None

    thread = threading.Thread(target=steal)
    thread.start()
    started = time.monotonic()
    agent = agent_on(s, charges, lease_seconds=0.6)
    answer = agent.ask("pay 5", timeout_seconds=30)
    thread.join()
    assert charges.saw_abort == [True] and time.monotonic() - started < 8
    # then served once the intruder's lease expired: the call reported "interrupted", not run again
    assert len(charges.ran) == 1 and answer["status"] == "completed", answer
    tools = [m for m in agent.history if m.role == "tool"]
    assert len(tools) == 1 and "interrupted" in str(tools[0].content)


def test_a_quarantined_run_names_the_tool_calls_it_had_started(store_factory: Factory) -> None:
    """A corrupt reply row after a tool ran: the input is quarantined, and its answer says which call
    may have had an effect (the quarantine never hides a call that ran).
    """
    from yiemagent import AgentToolResult
    from yiemagent.messages import ToolCall
    from yiemagent.store.journal import result_to_dict

    s = store_factory()
    s.enqueue("c", "one")
    call = ToolCall("call_1", "charge", {"amount": 5})
    s.put_step("c", "seq-1", "model/1", {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "charge", "arguments": '{"amount": 5}'}}]})
    s.put_step("c", "seq-1", "started/call_1", {"name": "charge"})
    s.put_step("c", "seq-1", "tool/call_1", result_to_dict(call, AgentToolResult("charged 5")))
    s.put_step("c", "seq-1", "model/2", {"role": "assistant", "content": "x"})
    _sql(s, f"UPDATE {s.journal_table} SET value = 'garbage' WHERE step_key = 'model/2'")
    charges = Charges()
    answer = agent_on(s, charges).ask("two")
    assert answer["content"] == "done: charged 5" and len(charges.ran) == 1  # input 2's own call
    first = s.get_input("c", 1).answer
    assert first["quarantined"] is True and "call_1" in first["error"] and "effect is unknown" in first["error"]


def test_a_table_made_before_lease_clock_gets_the_column_on_open(store_factory: Factory) -> None:
    old = store_factory()
    old.enqueue("c", "from 0.x")
    _sql(old, f"ALTER TABLE {old.conversations_table} DROP COLUMN lease_clock")
    old.close()
    new = store_factory()
    lease = new.acquire("c", "w", ttl_seconds=30)
    assert lease is not None and new.acquire("c", "other", ttl_seconds=30) is None
    assert [e.message["content"] for e in new.pending("c")] == ["from 0.x"]


def _hold_row_then_stop(dsn: str, prefix: str, ready: Any) -> None:
    import os
    import signal

    from yiemagent.store import PostgresStore

    store = PostgresStore(dsn, table_prefix=prefix, lock_timeout_seconds=1)
    with store._use() as conn, store._transaction(conn) as cur:
        store._ensure_row(cur, "c")  # the conversation's row, locked FOR UPDATE
        ready.set()
        os.kill(os.getpid(), signal.SIGSTOP)  # paused in the middle of a write


def test_postgres_a_process_paused_inside_a_write_holds_the_row_only_lock_timeout_seconds(
    postgres_dsn: str,
) -> None:
    import multiprocessing
    import os
    import signal

    from yiemagent.exceptions import StoreError
    from yiemagent.store import PostgresStore

    prefix = f"paused{os.getpid()}_"
    other = PostgresStore(postgres_dsn, table_prefix=prefix, lock_timeout_seconds=1)
    other.enqueue("c", "hi")
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    child = ctx.Process(target=_hold_row_then_stop, args=(postgres_dsn, prefix, ready))
    child.start()
    try:
        assert ready.wait(30)
        got: list[Any] = []

        def take() -> None:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not got:
                try:
                    got.append(other.acquire("c", "other", ttl_seconds=30))
                except StoreError:  # lock_timeout: try again (the server ends the paused session soon)
                    time.sleep(0.1)

        started = time.monotonic()
        thread = threading.Thread(target=take, daemon=True)
        thread.start()
        thread.join(25)
        assert got and got[0] is not None, "blocked behind a paused process's row lock"
        assert time.monotonic() - started < 10
    finally:
        os.kill(child.pid, signal.SIGCONT)
        child.join(10)
        if child.is_alive():
            child.kill()
        other.close()


def test_a_run_retried_after_a_failed_journal_write_sends_and_commits_its_input(store_factory, tmp_path):
    """Issue 27's cut that committed a history whose user input was ``excluded``: the failed run marked the
    inbox entry's own message object, and the retry served that same object. Runs now mark their own copy:
    the retry sends the input, runs the call once and commits the input as a message like any other.
    """
    from tests.store.schedules import make_agent

    effects = tmp_path / "effects"
    store = FaultyStore(store_factory(), Fault(3, "fail"))  # write 3: the model reply with its call's marker
    answer = make_agent(store, "c-retry", str(effects), 0.5).ask("pay")
    assert [w[1] for w in store.writes][2] == "put_steps"  # the fault hit the write this test is about
    assert answer["status"] == "completed", answer
    assert effects.read_text().count("call_1") == 1
    state = json.loads(store_factory().load("c-retry").state)
    first = state["history"][0]
    assert first["role"] == "user" and first.get("excluded") is None, first
    assert [m["role"] for m in state["history"] if not m.get("excluded")] == ["user", "assistant", "tool", "assistant"]
