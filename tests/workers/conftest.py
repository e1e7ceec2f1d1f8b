"""Fixtures for the tests of conversations served by other processes (issue 10, points 3-5).

redis_url    session: a real ``redis-server`` (Debian package; ``.ci/run`` installs it) on a free
loopback port, no persistence; skipped with the reason when it is not installed
rig          one test's world: a PostgreSQL store on tables of its own (``rig.store`` in this
process, ``rig.env()`` for app processes), the tools' counter file, a kill-point
directory, and the processes it started (stopped at teardown; ``rig.kill9``)
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.apps import kit
from tests.helpers import free_port, process_output, start_process, stop_process, wait_for_port

_prefixes = iter(range(1, 1_000_000))
WAIT_SECONDS = 90
"""The least ``Rig.wait_answers``/``wait_journaled`` wait for app processes: they answer in a second or two, in
tens of seconds on a loaded 2-core machine; how fast is never what these tests test."""


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """``redis://127.0.0.1:<port>/0`` of a redis-server started for this session."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed here; .ci/run installs Debian's redis-server")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="yiemagent-redis-")
    process = start_process([exe, "--port", str(port), "--bind", "127.0.0.1", "--daemonize", "no",
                             "--save", "", "--appendonly", "no", "--dir", workdir])
    try:
        wait_for_port(port, timeout_seconds=10, process=process)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop_process(process)
        shutil.rmtree(workdir, ignore_errors=True)


class Rig:
    """A test's store, counter, kill points and app processes (see the module docstring)."""

    def __init__(self, dsn: str | None, tmp_path: Path) -> None:
        from yiemagent import PostgresStore, SQLiteStore

        self.dsn = dsn
        self.prefix = f"w{os.getpid()}_{next(_prefixes)}_"
        self.sqlite_path = None if dsn else str(tmp_path / "conversations.db")
        self.store: Any = (PostgresStore(dsn, table_prefix=self.prefix) if dsn
                           else SQLiteStore(str(self.sqlite_path), table_prefix=self.prefix))
        self.counter = tmp_path / "counter.jsonl"
        self.kill_dir = tmp_path / "kill"
        self.kill_dir.mkdir()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.kills = 0
        self.killed_pids: list[int] = []

    def env(self, lease_ttl_seconds: float = 2.0, **extra: str) -> dict[str, str]:
        """Environment of an app process on this rig's store."""
        where = {"YIEMAGENT_TEST_DSN": self.dsn} if self.dsn else {"YIEMAGENT_TEST_SQLITE": str(self.sqlite_path)}
        env = kit.env_for({**where, "YIEMAGENT_TEST_TABLE_PREFIX": self.prefix}, self.counter, self.kill_dir,
                          lease_ttl_seconds)
        env.update(extra)
        return env

    def start(self, args: Sequence[str], *, ready_line: str | None = "ready", timeout_seconds: float = 120.0,
              **extra_env: str) -> subprocess.Popen[bytes]:
        """Start an app process; wait until its log shows ``ready_line`` (None: do not wait)."""
        process = start_process(list(args), env=self.env(**extra_env))
        self.processes.append(process)
        if ready_line is not None:
            deadline = time.monotonic() + timeout_seconds
            while ready_line not in process_output(process, limit=100_000):
                if process.poll() is not None:
                    raise RuntimeError(f"{args} exited with {process.returncode}:\n{process_output(process)}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{args} not ready within {timeout_seconds}s:\n{process_output(process)}")
                time.sleep(0.05)
        return process

    def kill9(self, pid: int) -> None:
        """``kill -9`` one process (a worker, a pool child) and count it."""
        os.kill(pid, signal.SIGKILL)
        self.kills += 1
        self.killed_pids.append(pid)
        for process in self.processes:
            if process.pid == pid:
                process.wait(10)

    def wait_answers(self, conversation_id: str, count: int, timeout_seconds: float = 60.0) -> list[dict[str, Any]]:
        """Wait until inputs 1..count of a conversation are answered; return the answers."""
        deadline = time.monotonic() + max(timeout_seconds, WAIT_SECONDS)
        answers = []
        for seq in range(1, count + 1):
            remaining = max(0.1, deadline - time.monotonic())
            answers.append(self.store.wait_answer(conversation_id, seq, timeout_seconds=remaining))
        return answers

    def wait_journaled(self, conversation_id: str, call_ids: list[str], run_key: str = "seq-1",
                       timeout_seconds: float = 20.0) -> None:
        """Wait until the results of ``call_ids`` are in the journal of ``run_key``."""
        timeout_seconds = max(timeout_seconds, WAIT_SECONDS)
        deadline = time.monotonic() + timeout_seconds
        while True:
            steps = self.store.steps(conversation_id, run_key)
            if all(f"tool/{call_id}" in steps for call_id in call_ids):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{conversation_id}: {call_ids} not journaled: {sorted(steps)}")
            time.sleep(0.02)

    def history(self, conversation_id: str) -> list[dict[str, Any]]:
        """The committed conversation as OpenAI messages."""
        from yiemagent import Agent

        record = self.store.load(conversation_id)
        assert record.state is not None, f"{conversation_id} was never committed"
        agent = Agent.from_state(record.state, kit.instant_model)
        try:
            return agent.openai_messages()
        finally:
            agent.shutdown()

    def logs(self, limit: int = 1500) -> str:
        """The tail of every started process's output (for failure messages)."""
        return "\n".join(f"--- {p.args[2:4]} pid {p.pid} rc {p.poll()}:\n{process_output(p, limit)}"
                         for p in self.processes)

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                stop_process(process)
        self.store.close()


@pytest.fixture
def rig(postgres_dsn: str, tmp_path: Path) -> Iterator[Rig]:
    """A ``Rig`` on the session's PostgreSQL."""
    made = Rig(postgres_dsn, tmp_path)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def sqlite_rig(tmp_path: Path) -> Iterator[Rig]:
    """A ``Rig`` on a SQLite file (WAL; several processes of one host)."""
    made = Rig(None, tmp_path)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(params=["postgres", "sqlite"])
def any_rig(request: pytest.FixtureRequest) -> Rig:
    """``rig`` (PostgreSQL), then ``sqlite_rig``."""
    return request.getfixturevalue("rig" if request.param == "postgres" else "sqlite_rig")  # type: ignore[no-any-return]


@pytest.fixture(scope="module", params=["postgres", "sqlite"])
def module_rig(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """A ``Rig`` shared by the tests of one module (one expensive scenario, several checks), on each backend."""
    dsn = request.getfixturevalue("postgres_dsn") if request.param == "postgres" else None
    made = Rig(dsn, tmp_path_factory.mktemp("rig"))
    try:
        yield made
    finally:
        made.close()
