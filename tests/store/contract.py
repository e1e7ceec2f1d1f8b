"""The ConversationStore contract: every backend must pass these tests.

Use it for a backend of your own: subclass ``StoreContract`` in a ``test_*.py``
file and provide a ``store_factory`` fixture returning a *picklable*
zero-argument callable that opens a new store object on one database that
is fresh for the test (the multi-process tests call it in child processes).
``tests/store/test_contract.py`` runs it on SQLiteStore and PostgresStore.

What is checked: seqs are gap-free and ordered, enqueue with an ``input_id`` is
idempotent, journal steps are first-write-wins (also across processes),
commits are atomic and fenced (version and lease token), the lease excludes
and expires, answers are readable by seq, and several real processes feeding
and serving one conversation lose and duplicate nothing.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from yiemagent.exceptions import FormatError, StaleStateError
from yiemagent.store import ConversationStore, ServedInput, run_key

Factory = Callable[[], Any]

_PROCESS_TIMEOUT_SECONDS = 90


def _spawn() -> Any:
    """Real processes, started fresh (no fork of a process that runs threads)."""
    return multiprocessing.get_context("spawn")


def _run_processes(target: Callable[..., Any], args_list: list[tuple[Any, ...]]) -> list[Any]:
    """Run ``target(queue, *args)`` in one process per args; return what each put on the queue."""
    ctx = _spawn()
    results = ctx.Queue()
    processes = [ctx.Process(target=target, args=(results, *args)) for args in args_list]
    for p in processes:
        p.start()
    out = []
    try:
        for _ in processes:
            out.append(results.get(timeout=_PROCESS_TIMEOUT_SECONDS))
    finally:
        for p in processes:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    for item in out:
        if isinstance(item, str) and item.startswith("ERROR"):
            raise AssertionError(item)
    assert all(p.exitcode == 0 for p in processes), [p.exitcode for p in processes]
    return out


# ------------------------------------------------------------------ child processes (module level: picklable)


def _child_enqueue(results: Any, factory: Factory, cid: str, name: str, count: int) -> None:
    try:
        store = factory()
        seqs = [store.enqueue(cid, f"{name}-{i}", input_id=f"{name}-{i}") for i in range(count)]
        store.close()
        results.put((name, seqs))
    except BaseException as exc:  # report to the parent, which fails the test
        results.put(f"ERROR in {name}: {type(exc).__name__}: {exc}")


def _child_put_step(results: Any, factory: Factory, cid: str, name: str, start_at: float) -> None:
    try:
        store = factory()
        while time.time() < start_at:
            time.sleep(0.001)
        got = [store.put_step(cid, "seq-1", f"step-{i}", {"writer": name}) for i in range(20)]
        store.close()
        results.put((name, got))
    except BaseException as exc:
        results.put(f"ERROR in {name}: {type(exc).__name__}: {exc}")


def _child_serve(results: Any, factory: Factory, cid: str, name: str, total: int) -> None:
    """Serve inputs one at a time under the lease until ``total`` are served; report what we served."""
    try:
        store = factory()
        served: list[int] = []
        stale = 0
        windows: list[tuple[float, float]] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            lease = store.acquire(cid, name, ttl_seconds=10)
            if lease is None:
                time.sleep(0.002)
                continue
            began = time.time()
            try:
                record = store.load(cid)
                log = json.loads(record.state) if record.state else []
                pending = store.pending(cid, limit=1)
                if not pending:
                    if len(log) >= total:
                        break
                    continue
                entry = pending[0]
                store.put_step(cid, run_key(entry.seq), "model/1", {"by": name})
                log.append([entry.seq, entry.message["content"], name])
                try:
                    store.commit(lease, expected_version=record.version, state=json.dumps(log),
                                 served=[ServedInput(entry.seq, {"content": f"answer {entry.seq}", "by": name})],
                                 run=run_key(entry.seq))
                except StaleStateError:
                    stale += 1
                    continue
                served.append(entry.seq)
            finally:
                windows.append((began, time.time()))
                store.release(lease)
            time.sleep(0.001)  # let the others in
        store.close()
        results.put((name, served, stale, windows))
    except BaseException as exc:
        results.put(f"ERROR in {name}: {type(exc).__name__}: {exc}")


def _child_inherited(results: Any, store: Any, cid: str) -> None:
    """Uses the parent's store object as inherited over fork (must open its own connection)."""
    try:
        seq = store.enqueue(cid, "from the child")
        store.put_step(cid, "seq-1", "child", {"pid": os.getpid()})
        results.put(("child", seq, len(store.pending(cid))))
    except BaseException as exc:
        results.put(f"ERROR in child: {type(exc).__name__}: {exc}")


# ------------------------------------------------------------------ the contract


class StoreContract:
    """Tests every ``ConversationStore`` backend must pass (needs a ``store_factory`` fixture)."""

    @pytest.fixture
    def s(self, store_factory: Factory) -> Any:
        made = store_factory()
        yield made
        made.close()

    # ---------------------------------------------------------------- shape

    def test_is_a_conversation_store(self, s: Any) -> None:
        assert isinstance(s, ConversationStore)

    def test_unknown_conversation_loads_as_version_0(self, s: Any) -> None:
        record = s.load("nobody")
        assert (record.conversation_id, record.version, record.state) == ("nobody", 0, None)
        assert s.pending("nobody") == [] and s.get_input("nobody", 1) is None and s.steps("nobody", "seq-1") == {}

    # ---------------------------------------------------------------- inbox

    def test_seqs_are_gap_free_per_conversation_and_pending_keeps_their_order(self, s: Any) -> None:
        assert [s.enqueue("a", f"a{i}") for i in range(3)] == [1, 2, 3]
        assert s.enqueue("b", {"role": "user", "content": [{"type": "text", "text": "b0"}]}) == 1
        assert s.enqueue("a", "a3") == 4
        assert [e.message["content"] for e in s.pending("a")] == ["a0", "a1", "a2", "a3"]
        assert [e.seq for e in s.pending("a", limit=2)] == [1, 2]
        assert s.pending("b")[0].message == {"role": "user", "content": [{"type": "text", "text": "b0"}]}
        entry = s.get_input("a", 2)
        assert entry.message == {"role": "user", "content": "a1"} and not entry.served and entry.answer is None

    def test_messages_keep_unicode_and_reply_to(self, s: Any) -> None:
        seq = s.enqueue("u", "Grüße, 東京 🌧", reply_to="output_queue")
        entry = s.get_input("u", seq)
        assert entry.message["content"] == "Grüße, 東京 🌧" and entry.reply_to == "output_queue"
        assert s.get_input("u", s.enqueue("u", "x")).reply_to == "store"

    def test_enqueue_with_the_same_input_id_stores_nothing_new(self, s: Any) -> None:
        first = s.enqueue("c", "hello", input_id="req-1")
        again = s.enqueue("c", "hello (retried request)", input_id="req-1")
        other = s.enqueue("c", "next", input_id="req-2")
        assert (first, again, other) == (1, 1, 2)
        assert [(e.input_id, e.message["content"]) for e in s.pending("c")] == [("req-1", "hello"), ("req-2", "next")]

    def test_bad_messages_are_refused_and_store_nothing(self, s: Any) -> None:
        for bad in ({"role": "assistant", "content": "x"}, 42, {"content": "no role"}, None):
            with pytest.raises(FormatError):
                s.enqueue("c", bad)
        assert s.pending("c") == [] and s.enqueue("c", "ok") == 1

    def test_pending_conversations_oldest_first(self, s: Any) -> None:
        s.enqueue("late", "x")
        time.sleep(0.01)
        s.enqueue("later", "y")
        assert s.pending_conversations()[:2] == ["late", "later"]
        lease = s.acquire("late", "w")
        s.commit(lease, expected_version=0, state="{}", served=[ServedInput(1, {"content": "done"})])
        assert "late" not in s.pending_conversations() and "later" in s.pending_conversations()

    # ---------------------------------------------------------------- journal

    def test_put_step_first_write_wins_and_returns_the_stored_value(self, s: Any) -> None:
        assert s.put_step("c", "seq-1", "model/1", {"text": "first"}) == {"text": "first"}
        assert s.put_step("c", "seq-1", "model/1", {"text": "second"}) == {"text": "first"}
        assert s.put_step("c", "seq-1", "tool/call_1", ["a", 1]) == ["a", 1]
        assert s.put_step("c", "seq-2", "model/1", {"text": "other run"}) == {"text": "other run"}
        assert s.put_step("d", "seq-1", "model/1", "other conversation") == "other conversation"
        assert s.steps("c", "seq-1") == {"model/1": {"text": "first"}, "tool/call_1": ["a", 1]}

    def test_put_step_with_a_lease_is_fenced_by_it_as_commit_is(self, s: Any) -> None:
        first = s.acquire("c", "w1", ttl_seconds=0.2)
        assert s.put_step("c", "seq-1", "model/1", {"by": "w1"}, lease=first) == {"by": "w1"}
        time.sleep(0.3)
        second = s.acquire("c", "w2", ttl_seconds=30)
        assert second is not None and second.token > first.token
        with pytest.raises(StaleStateError) as raised:
            s.put_step("c", "seq-1", "started/call_1", {"by": "zombie"}, lease=first)
        assert raised.value.reason == "lease"
        assert s.steps("c", "seq-1") == {"model/1": {"by": "w1"}}  # the zombie wrote nothing
        assert s.put_step("c", "seq-1", "started/call_1", {"by": "w2"}, lease=second) == {"by": "w2"}


    def test_put_step_stores_what_json_cannot_carry_by_the_text_policy(self, s: Any) -> None:
        """Issue 15 point 3 (was: refused with TypeError/ValueError, so a tool result holding NaN or a lone
        surrogate was lost after the tool ran): stored as ``yiemagent.textpolicy`` says, never refused.
        """
        s.put_step("c", "seq-1", "x", {"f": float("nan"), "name": "a\udcffb"})
        s.put_step("c", "seq-1", "y", object())
        steps = s.steps("c", "seq-1")
        assert steps["x"] == {"f": None, "name": "a\ufffdb"} and isinstance(steps["y"], str)

    # ---------------------------------------------------------------- lease

    def test_lease_excludes_other_owners_and_is_reentrant_for_its_owner(self, s: Any) -> None:
        lease = s.acquire("c", "w1", ttl_seconds=30)
        assert lease is not None and lease.owner == "w1" and lease.expires_at > time.time() + 20
        assert s.acquire("c", "w2") is None
        again = s.acquire("c", "w1", ttl_seconds=30)
        assert again is not None and again.token == lease.token
        assert s.acquire("other", "w2") is not None  # per conversation
        s.release(lease)
        taken = s.acquire("c", "w2")
        assert taken is not None and taken.token > lease.token

    def test_lease_expires_and_the_zombie_cannot_renew_commit_or_release(self, s: Any) -> None:
        s.enqueue("c", "hi")
        zombie = s.acquire("c", "zombie", ttl_seconds=0.2)
        assert s.acquire("c", "w2") is None
        time.sleep(0.35)
        fresh = s.acquire("c", "w2", ttl_seconds=30)
        assert fresh is not None and fresh.token > zombie.token
        with pytest.raises(StaleStateError) as raised:
            s.commit(zombie, expected_version=0, state='{"by": "zombie"}', served=[ServedInput(1, {"c": "z"})])
        assert raised.value.reason == "lease"
        with pytest.raises(StaleStateError):
            s.renew(zombie)
        s.release(zombie)  # not ours any more: a no-op
        assert s.acquire("c", "w3") is None
        assert s.load("c").version == 0 and [e.seq for e in s.pending("c")] == [1]
        assert s.commit(fresh, expected_version=0, state='{"by": "w2"}', served=[ServedInput(1, {"c": "w"})]) == 1

    def test_an_expired_lease_nobody_took_still_commits(self, s: Any) -> None:
        lease = s.acquire("c", "w1", ttl_seconds=0.05)
        time.sleep(0.1)
        assert s.commit(lease, expected_version=0, state="{}") == 1
        renewed = s.renew(lease, ttl_seconds=30)
        assert renewed.token == lease.token and renewed.expires_at > time.time() + 20
        assert s.acquire("c", "w2") is None

    # ---------------------------------------------------------------- commit

    def test_commit_writes_state_answers_and_drops_the_run_journal_at_once(self, s: Any) -> None:
        s.enqueue("c", "one")
        s.enqueue("c", "two")
        s.put_step("c", "seq-1", "model/1", {"x": 1})
        s.put_step("c", "seq-3", "model/1", {"x": 3})
        lease = s.acquire("c", "w")
        answer = {"role": "assistant", "content": "both", "status": "completed", "input_ids": ["a", "b"],
                  "seq": [1, 2]}
        version = s.commit(lease, expected_version=0, state='{"history": []}',
                           served=[ServedInput(1, answer), ServedInput(2, answer)], run="seq-1")
        assert version == 1
        record = s.load("c")
        assert (record.version, record.state) == (1, '{"history": []}') and record.updated_at
        assert s.pending("c") == []
        one = s.get_input("c", 1)
        assert one.served and one.answer == answer and one.run_key == "seq-1"
        assert s.steps("c", "seq-1") == {} and s.steps("c", "seq-3") == {"model/1": {"x": 3}}
        assert s.commit(lease, expected_version=1, state="{}") == 2

    def test_a_stale_version_writes_nothing(self, s: Any) -> None:
        s.enqueue("c", "one")
        s.put_step("c", "seq-1", "model/1", {"x": 1})
        lease = s.acquire("c", "w")
        s.commit(lease, expected_version=0, state='{"v": 1}')
        with pytest.raises(StaleStateError) as raised:
            s.commit(lease, expected_version=0, state='{"v": "stale"}', served=[ServedInput(1, {"c": 1})],
                     run="seq-1")
        err = raised.value
        assert (err.reason, err.expected_version, err.actual_version, err.conversation_id) == ("version", 0, 1, "c")
        assert s.load("c").state == '{"v": 1}' and [e.seq for e in s.pending("c")] == [1]
        assert s.steps("c", "seq-1") == {"model/1": {"x": 1}}

    def test_serving_an_input_twice_or_an_unknown_one_writes_nothing(self, s: Any) -> None:
        s.enqueue("c", "one")
        lease = s.acquire("c", "w")
        s.commit(lease, expected_version=0, state="v1", served=[ServedInput(1, {"c": "first"})])
        for seq in (1, 99):
            with pytest.raises(StaleStateError) as raised:
                s.commit(lease, expected_version=1, state="v2", served=[ServedInput(seq, {"c": "again"})])
            assert raised.value.reason == "served"
        assert s.load("c").version == 1 and s.get_input("c", 1).answer == {"c": "first"}

    def test_wait_answer_returns_once_served_and_times_out_before(self, s: Any) -> None:
        seq = s.enqueue("c", "question")
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            s.wait_answer("c", seq, timeout_seconds=0.1)
        assert time.monotonic() - started >= 0.1
        lease = s.acquire("c", "w")

        def serve() -> None:
            time.sleep(0.1)
            s.commit(lease, expected_version=0, state="{}", served=[ServedInput(seq, {"content": "42"})])

        thread = threading.Thread(target=serve)
        thread.start()
        assert s.wait_answer("c", seq, timeout_seconds=10) == {"content": "42"}
        thread.join()

    def test_close_then_use_again_reconnects(self, s: Any, store_factory: Factory) -> None:
        s.enqueue("c", "one")
        s.close()
        assert s.enqueue("c", "two") == 2
        other = store_factory()  # a second object on the same database sees the same data
        assert [e.seq for e in other.pending("c")] == [1, 2]
        other.close()

    # ---------------------------------------------------------------- several processes

    @pytest.mark.slow
    def test_processes_enqueueing_at_once_lose_and_duplicate_nothing(self, store_factory: Factory) -> None:
        out = _run_processes(_child_enqueue, [(store_factory, "c", f"p{i}", 25) for i in range(4)])
        store = store_factory()
        entries = store.pending("c")
        store.close()
        assert [e.seq for e in entries] == list(range(1, 101))
        assert sorted(e.message["content"] for e in entries) == sorted(f"p{i}-{j}" for i in range(4) for j in range(25))
        for name, seqs in out:  # each process got its own seqs, increasing, matching what was stored
            assert seqs == sorted(seqs)
            assert [entries[q - 1].input_id for q in seqs] == [f"{name}-{j}" for j in range(25)]

    @pytest.mark.slow
    def test_processes_racing_on_one_step_all_see_the_first_write(self, store_factory: Factory) -> None:
        start_at = time.time() + 1.5
        out = _run_processes(_child_put_step, [(store_factory, "c", f"p{i}", start_at) for i in range(3)])
        store = store_factory()
        stored = store.steps("c", "seq-1")
        store.close()
        assert len(stored) == 20
        for _, got in out:
            assert got == [stored[f"step-{i}"] for i in range(20)]

    @pytest.mark.slow
    def test_processes_serving_one_conversation_take_turns_in_inbox_order(self, store_factory: Factory) -> None:
        store = store_factory()
        total = 30
        for i in range(total):
            store.enqueue("c", f"m{i}")
        out = _run_processes(_child_serve, [(store_factory, "c", f"w{i}", total) for i in range(3)])
        record = store.load("c")
        log = json.loads(record.state)
        assert record.version == total
        assert [row[0] for row in log] == list(range(1, total + 1))  # served once each, in order
        assert [row[1] for row in log] == [f"m{i}" for i in range(total)]
        assert sorted(q for _, served, _, _ in out for q in served) == list(range(1, total + 1))
        assert sum(stale for _, _, stale, _ in out) == 0  # the lease kept them apart: no commit was refused
        windows = sorted(w for _, _, _, ws in out for w in ws)
        for (_, end), (begin, _) in itertools.pairwise(windows):  # lease windows never overlap
            assert begin >= end - 0.005
        for seq in range(1, total + 1):
            answer = store.get_input("c", seq).answer
            assert answer["content"] == f"answer {seq}" and answer["by"] == log[seq - 1][2]
        assert store.pending("c") == [] and store.steps("c", "seq-1") == {}
        store.close()

    @pytest.mark.slow
    def test_a_store_object_inherited_over_fork_opens_its_own_connection(self, store_factory: Factory) -> None:
        store = store_factory()
        store.enqueue("c", "from the parent")  # the parent's connection is open now
        ctx = multiprocessing.get_context("fork")
        results = ctx.Queue()
        with warnings.catch_warnings():  # Python 3.12+ warns about fork with threads; the child uses none of them
            warnings.simplefilter("ignore", DeprecationWarning)
            child = ctx.Process(target=_child_inherited, args=(results, store, "c"))
            child.start()
        got = results.get(timeout=_PROCESS_TIMEOUT_SECONDS)
        child.join(10)
        assert got == ("child", 2, 2), got
        assert store.enqueue("c", "parent again") == 3  # the parent's connection still works
        assert [e.message["content"] for e in store.pending("c")] == ["from the parent", "from the child",
                                                                      "parent again"]
        assert store.steps("c", "seq-1")["child"]["pid"] == child.pid
        store.close()
