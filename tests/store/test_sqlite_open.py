"""Many threads and processes opening one fresh SQLiteStore file at once never fail.

SQLite can answer the switch to WAL mode with SQLITE_BUSY without calling its busy handler
(openai-agents-python PR #4987: 20 of 160 startups failed with "database is locked"; mem0 #7196:
"database is locked" under concurrent sessions). Real processes (fork), real files.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from yiemagent import SQLiteStore

_PROCESSES = 8
_THREADS = 4


def _child(path: str, start_at: float, out: Any) -> None:
    errors: list[str] = []

    def one(i: int) -> None:
        time.sleep(max(0.0, start_at - time.time()))
        store = SQLiteStore(path)
        try:
            store.enqueue("c", f"{os.getpid()}-{i}")
        except Exception as exc:  # what the test counts
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            store.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(errors)


@pytest.mark.slow
def test_openai_agents_4987_many_processes_and_threads_opening_a_fresh_sqlite_store_at_once(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    errors: list[str] = []
    files = 12
    for n in range(files):
        path = str(tmp_path / f"fresh-{n}.db")
        out = ctx.Queue()
        start_at = time.time() + 0.3
        children = [ctx.Process(target=_child, args=(path, start_at, out)) for _ in range(_PROCESSES)]
        for child in children:
            child.start()
        here: list[str] = []
        for _ in children:
            here += out.get(timeout=60)
        for child in children:
            child.join(10)
        errors += here
        store = SQLiteStore(path)
        stored = len(store.pending("c"))
        store.close()
        assert stored >= _PROCESSES * _THREADS - len(here)
    assert errors == [], f"{len(errors)} of {files * _PROCESSES * _THREADS} opens failed: {errors[:3]}"


def test_mem0_7196_readers_and_writers_of_one_store_never_see_database_is_locked(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    errors: list[str] = []
    stop = time.monotonic() + 1.5

    def writer(i: int) -> None:
        store = SQLiteStore(path)
        try:
            while time.monotonic() < stop:
                store.enqueue(f"c{i}", "x")
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            store.close()

    def reader() -> None:
        store = SQLiteStore(path)
        try:
            while time.monotonic() < stop:
                store.pending_conversations()
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            store.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)] + \
        [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_issue_27_new_user_a_store_in_a_missing_folder_or_of_a_number_is_a_config_error_naming_it(tmp_path):
    """Issue 27, a new user's first hour: ``SQLiteStore("/no/dir/x.db")`` failed later without naming the
    path, ``SQLiteStore(123)`` was a bare ``TypeError``. Both are ``ConfigError``s at once, naming what is wrong.
    """
    from yiemagent import ConfigError

    missing = tmp_path / "no" / "dir" / "x.db"
    with pytest.raises(ConfigError, match="does not exist") as raised:
        SQLiteStore(missing)
    assert str(missing.parent) in str(raised.value)
    with pytest.raises(ConfigError, match="a file path"):
        SQLiteStore(123)  # type: ignore[arg-type]
    assert SQLiteStore(tmp_path / "x.db").path.endswith("x.db")  # an existing folder is fine
