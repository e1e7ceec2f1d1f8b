"""scripts/bench_loop.py: its tables for yiemagent and the floor, at tiny sizes (structure, not timing)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(SCRIPTS))
    try:
        yield importlib.import_module("bench_loop")
    finally:
        sys.path.remove(str(SCRIPTS))


def numbers(table, column):
    values = table.column(column)
    assert values and all(isinstance(v, float) and v > 0 for v in values), (column, values)
    return values


def test_floor_run_does_the_calls(bench):
    messages = []
    answer = bench.floor_run(bench.make_model(3), "go", messages)
    assert answer["content"] == "answer 3"
    assert [m["role"] for m in messages] == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]


def test_calls_table(bench):
    table = bench.table_calls([2, 5], repeat=2, vs=[])
    assert table.columns == ["N", "implementation", "ms/call", "p10", "p90", "floor units", "vs yiemagent", "target"]
    assert table.column("implementation") == ["yiemagent", "yiemagent sequential", "yiemagent inline=True",
                                              "floor"] * 2
    for column in ("ms/call", "p10", "p90", "floor units", "vs yiemagent"):
        numbers(table, column)
    floor_rows = [row for row in table.rows if row[1] == "floor"]
    assert all(row[5] == 1.0 for row in floor_rows)
    marks = [t for t in table.column("target") if t is not None]
    assert len(marks) == 4 and all(t[0] in "✓✗" for t in marks)  # yiemagent and inline=True at each N
    text = table.render()
    assert "floor units" in text and "yiemagent sequential" in text


def test_peers_not_selected_or_missing_are_not_errors(bench, monkeypatch):
    assert bench.peers_for([], "calls") == ({}, [])
    import bench_peers

    monkeypatch.setattr(bench_peers.Peer, "missing", lambda self: "pip install x")
    monkeypatch.setattr(bench_peers.NodePeer, "missing", lambda self: "npm install x")
    usable, notes = bench.peers_for(["all"], "calls")
    assert usable == {} and len(notes) == len(bench_peers.PEERS)
    assert all("not installed" in note for note in notes)


def test_memory_table(bench):
    table = bench.table_memory(20, vs=[])
    assert table.column("implementation") == ["yiemagent", "floor"]
    numbers(table, "bytes/message")
    assert table.rows[1][2] == 1.0


def test_history_and_compaction_tables(bench):
    results: dict = {}
    table = bench.table_history([4, 10], repeat=1, vs=[], results=results)
    assert "x at 4" in table.columns and "first input" in table.columns
    names = table.column("implementation")
    assert names.count("floor") == 2 and names.count("yiemagent, compaction on, usage") == 2
    numbers(table, "ms/input")
    numbers(table, "x at 4")
    compaction = bench.table_compaction([4, 10], repeat=1, results=results)
    assert len(compaction.rows) == 4 and all(row[4].endswith("%") for row in compaction.rows)


def test_concurrent_table(bench):
    table = bench.table_concurrent(3, 2, repeat=1, vs=[], model_seconds=0.001)
    assert [row[0].split(" ")[0] for row in table.rows] == ["yiemagent", "yiemagent", "floor"]
    numbers(table, "wall ms")
    numbers(table, "vs floor")


def test_durable_table_sqlite(bench, monkeypatch):
    import tests.helpers

    def no_postgres():  # the quick lane starts no process: PostgreSQL is the bench's own business
        raise RuntimeError("not in this test")

    monkeypatch.setattr(tests.helpers, "start_postgres", no_postgres)
    table = bench.table_durable(3, repeat=1)
    assert table.column("store") == ["no store", "SQLite (NORMAL)", "SQLite (FULL)", "floor"]
    numbers(table, "ms/call")
    assert any("skipped: no PostgreSQL" in note for note in table.notes)


def test_tracing_table(bench):
    pytest.importorskip("opentelemetry.sdk")
    table = bench.table_tracing(3, repeat=1)
    assert table.column("tracing") == ["off", "on"]
    numbers(table, "ms/call")


@pytest.mark.slow
def test_import_table(bench):
    table = bench.table_import(1)
    assert len(table.rows) == 2
    numbers(table, "ms")
    numbers(table, "vs deps")


def test_main_rejects_unknown_sections(bench, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--only", "calls,nope"])
    assert "unknown sections" in capsys.readouterr().err
