"""StoreTokenStorage on both backends (SQLite file, a real PostgreSQL): one login shared by processes.

Concurrent refreshes by several processes must not lose the newer token (compare-and-set on the
row's version); tokens live in the ``<prefix>oauth`` table only.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from yiemagent.exceptions import ConfigError
from yiemagent.store import SQLiteStore, StoreTokenStorage

URL = "https://mcp.example.com/mcp"
SENTINEL = "tok-SENTINEL-4f1c9e"


def test_round_trip_tokens_and_clients(store: Any) -> None:
    storage = StoreTokenStorage(store)
    assert storage.get_tokens(URL) is None
    assert storage.get_client("https://as.example.com") is None
    tokens = {"access_token": "a1", "token_type": "Bearer", "expires_at": 1.5e9, "refresh_token": "r1",
              "scope": "read write"}
    assert storage.set_tokens_if_unchanged(URL, tokens) is True
    storage.set_client("https://as.example.com", {"client_id": "cid", "client_secret": "cs"})
    other = StoreTokenStorage(store)  # what another worker reads
    assert other.get_tokens(URL) == tokens
    assert other.get_client("https://as.example.com") == {"client_id": "cid", "client_secret": "cs"}
    other.delete(URL)
    assert storage.get_tokens(URL) is None
    assert storage.get_client("https://as.example.com") is not None  # logout keeps the registration


def test_a_slow_refresh_never_overwrites_a_newer_token(store_factory: Callable[[], Any]) -> None:
    worker_a, worker_b = StoreTokenStorage(store_factory()), StoreTokenStorage(store_factory())
    worker_a.set_tokens(URL, {"access_token": "t0", "refresh_token": "r0"})
    assert worker_a.get_tokens(URL)["refresh_token"] == "r0"  # type: ignore[index]
    assert worker_b.get_tokens(URL)["refresh_token"] == "r0"  # type: ignore[index]
    assert worker_b.set_tokens_if_unchanged(URL, {"access_token": "t1", "refresh_token": "r1"}) is True  # B first
    assert worker_a.set_tokens_if_unchanged(URL, {"access_token": "t0b", "refresh_token": "r0b"}) is False  # A is late
    assert worker_a.get_tokens(URL) == {"access_token": "t1", "refresh_token": "r1"}
    assert worker_a.set_tokens_if_unchanged(URL, {"access_token": "t2", "refresh_token": "r2"}) is True  # re-read
    assert worker_b.get_tokens(URL)["access_token"] == "t2"  # type: ignore[index]


def test_delete_then_a_new_login_is_not_mistaken_for_the_old_row(store_factory: Callable[[], Any]) -> None:
    """Versions are never reused (no ABA): a row deleted and written again is a new row."""
    worker_a, worker_b = StoreTokenStorage(store_factory()), StoreTokenStorage(store_factory())
    worker_a.set_tokens(URL, {"access_token": "t0"})
    worker_b.get_tokens(URL)
    worker_a.delete(URL)
    worker_a.set_tokens(URL, {"access_token": "fresh-login"})
    assert worker_b.set_tokens_if_unchanged(URL, {"access_token": "stale"}) is False
    assert worker_b.get_tokens(URL) == {"access_token": "fresh-login"}


def _refresh_many(factory: Callable[[], Any], rounds: int, out: Any) -> None:
    storage = StoreTokenStorage(factory())
    written = 0
    for _ in range(rounds):
        current = storage.get_tokens(URL) or {"access_token": "0"}
        if storage.set_tokens_if_unchanged(URL, {"access_token": str(int(current["access_token"]) + 1)}):
            written += 1
    storage.store.close()
    out.put(written)


@pytest.mark.slow
def test_refresh_race_between_processes_loses_no_write(store_factory: Callable[[], Any]) -> None:
    """4 processes read-modify-write one row 40 times each: the counter equals the writes that succeeded.

    Without compare-and-set, a process writing after another's write it never read loses that write
    (the counter ends below the sum), as a stale refresh token overwrites a rotated one.
    """
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    processes = [ctx.Process(target=_refresh_many, args=(store_factory, 40, out)) for _ in range(4)]
    for p in processes:
        p.start()
    written = [out.get(timeout=60) for _ in processes]
    for p in processes:
        p.join(timeout=30)
        assert p.exitcode == 0
    final = StoreTokenStorage(store_factory()).get_tokens(URL)
    assert final is not None
    assert int(final["access_token"]) == sum(written) > 0


def test_tokens_appear_in_no_other_table(tmp_path: Any) -> None:
    path = str(tmp_path / "app.db")
    store = SQLiteStore(path)
    store.enqueue("c-1", "Hello")
    storage = StoreTokenStorage(store)
    storage.set_tokens(URL, {"access_token": SENTINEL, "refresh_token": SENTINEL + "-r"})
    storage.set_client("https://as.example.com", {"client_id": "cid", "client_secret": SENTINEL + "-c"})
    assert SENTINEL not in repr(storage)
    store.close()
    conn = sqlite3.connect(path)
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    holding = [t for t in tables if any(SENTINEL in str(row) for row in conn.execute(f"SELECT * FROM {t}"))]
    conn.close()
    assert holding == ["yiemagent_oauth"]


def test_postgres_tokens_live_in_their_table_only(postgres_store_factory: Callable[[], Any]) -> None:
    store = postgres_store_factory()
    store.enqueue("c-1", "Hello")
    StoreTokenStorage(store).set_tokens(URL, {"access_token": SENTINEL})
    with store._use() as conn, conn.cursor() as cur:
        prefix = store.conversations_table[: -len("conversations")]
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                    "AND table_name LIKE %s", (prefix + "%",))
        tables = [row[0] for row in cur.fetchall()]
        holding = []
        for table in tables:
            cur.execute(f"SELECT * FROM {table}")
            if any(SENTINEL in str(row) for row in cur.fetchall()):
                holding.append(table)
    assert holding == [prefix + "oauth"]


def test_a_corrupt_row_reads_as_no_tokens(tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    store = SQLiteStore(str(tmp_path / "app.db"))
    storage = StoreTokenStorage(store)
    storage.set_tokens(URL, {"access_token": "a"})
    with store._use() as conn:
        conn.execute("UPDATE yiemagent_oauth SET value = 'not json'")
    assert storage.get_tokens(URL) is None
    assert "not a JSON object" in caplog.text
    store.close()


def test_needs_an_sql_store() -> None:
    with pytest.raises(ConfigError):
        StoreTokenStorage(object())  # type: ignore[arg-type]


def _locked_worker(factory: Callable[[], Any], endpoint_path: str, out: Any) -> None:
    from tests.store.rotating_as import RotatingTokenEndpoint, refresh_rounds

    storage = StoreTokenStorage(factory())
    refresh_rounds(storage, RotatingTokenEndpoint(endpoint_path), URL, 25, use_lock=True)
    storage.store.close()
    out.put("done")


@pytest.mark.slow
def test_claude_code_91641_workers_refresh_one_at_a_time_against_a_rotating_server(
        store_factory: Callable[[], Any], tmp_path: Any) -> None:
    """anthropics/claude-code#91641 (and #84440): processes sharing one refresh token, against an IdP with
    single-use refresh tokens and reuse detection, kill the token family when two refresh at once.
    4 processes x 25 expiries under ``refresh_lock``: no refresh token is ever used twice.
    """
    from tests.store.rotating_as import RotatingTokenEndpoint

    endpoint = RotatingTokenEndpoint(str(tmp_path / "as.db"))
    first = endpoint.issue()
    StoreTokenStorage(store_factory()).set_tokens(URL, {"access_token": "a0", "refresh_token": first})
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    processes = [ctx.Process(target=_locked_worker, args=(store_factory, endpoint.path, out)) for _ in range(4)]
    for p in processes:
        p.start()
    assert [out.get(timeout=120) for _ in processes] == ["done"] * 4
    for p in processes:
        p.join(timeout=30)
        assert p.exitcode == 0
    refreshes, reuses = endpoint.counts()
    assert reuses == 0 and refreshes > 0
    stored = StoreTokenStorage(store_factory()).get_tokens(URL)
    assert stored is not None and stored["access_token"] == "a-" + stored["refresh_token"]


def test_a_dead_holder_frees_the_refresh_lock_after_its_ttl(store: Any) -> None:
    holder, waiter = StoreTokenStorage(store), StoreTokenStorage(store)
    assert holder._try_lock(URL, "dead-process", 0.3) is True  # taken, never released
    with waiter.refresh_lock(URL, timeout_seconds=0.1) as taken:
        assert taken is False  # still held
    with waiter.refresh_lock(URL, timeout_seconds=5) as taken:
        assert taken is True  # expired after 0.3 s
