"""FileTokenStorage: 0600 from the first byte, atomic replace, refusal of files others can read, and
compare-and-set between real processes (fork) sharing one file.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from yiemagent.mcp.auth.storage_file import (
    FileTokenStorage,
    InsecureTokenFileError,
    TokenStorageError,
    default_token_path,
)
from yiemagent.store import SQLiteStore, StoreTokenStorage

URL = "https://mcp.example.com/mcp"

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@posix_only
def test_1mcp_agent_517_token_file_is_0600_in_a_0700_directory_and_a_0644_one_is_refused(tmp_path: Path) -> None:
    """1mcp-app/agent#517: token files written 0644 under umask 022 and never validated on read."""
    path = tmp_path / "conf" / "yiemagent" / "tokens.json"
    old = os.umask(0o022)
    try:
        storage = FileTokenStorage(path)
        storage.set_tokens(URL, {"access_token": "a", "refresh_token": "r"})
    finally:
        os.umask(old)
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert _mode(Path(str(path) + ".lock")) == 0o600
    os.chmod(path, 0o644)
    with pytest.raises(InsecureTokenFileError, match="chmod 600"):
        FileTokenStorage(path).get_tokens(URL)
    os.chmod(path, 0o600)
    assert FileTokenStorage(path).get_tokens(URL) == {"access_token": "a", "refresh_token": "r"}


@posix_only
def test_bounty_challenge_46833_no_moment_with_a_wider_mode_even_under_umask_0(tmp_path: Path) -> None:
    """BaseIntelligence/bounty-challenge#46833 (write then chmod: briefly world-readable) and
    Agent-Hellboy/mcp-server-fuzzer#167 (O_TRUNC of an existing file keeps its old mode).

    Under umask 0 a watcher thread stats every file in the directory while 50 writes happen: no file
    (the temporary ones included) is ever seen with group/other bits.
    """
    path = tmp_path / "tokens.json"
    seen: set[int] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for entry in os.scandir(tmp_path):
                try:
                    seen.add(stat.S_IMODE(entry.stat().st_mode))
                except FileNotFoundError:
                    pass

    old = os.umask(0)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        storage = FileTokenStorage(path)
        for i in range(50):
            storage.get_tokens(URL)
            storage.set_tokens(URL, {"access_token": f"a{i}"})
    finally:
        stop.set()
        watcher.join(timeout=10)
        os.umask(old)
    assert seen and all(mode & 0o077 == 0 for mode in seen), sorted(oct(m) for m in seen)
    assert FileTokenStorage(path).get_tokens(URL) == {"access_token": "a49"}


@posix_only
def test_a_world_writable_directory_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "shared"
    directory.mkdir()
    os.chmod(directory, 0o777)
    with pytest.raises(InsecureTokenFileError):
        FileTokenStorage(directory / "tokens.json").set_tokens(URL, {"access_token": "a"})


def test_garbage_file_is_a_token_storage_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"{not json")
    os.close(fd)
    with pytest.raises(TokenStorageError, match=r"tokens\.json"):
        FileTokenStorage(path).get_tokens(URL)


def test_default_path_follows_xdg_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_token_path() == tmp_path / "yiemagent" / "tokens.json"
    assert FileTokenStorage().path == tmp_path / "yiemagent" / "tokens.json"


def test_lock_wait_is_bounded(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / "tokens.json"
    FileTokenStorage(path).set_tokens(URL, {"access_token": "a"})
    fd = os.open(str(path) + ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another process holding the lock
    try:
        with pytest.raises(TokenStorageError, match="locked"):
            FileTokenStorage(path, lock_timeout_seconds=0.3).get_tokens(URL)
    finally:
        os.close(fd)


def _refresh_many(path: str, rounds: int, out: Any) -> None:
    storage = FileTokenStorage(path)
    written = 0
    for _ in range(rounds):
        current = storage.get_tokens(URL) or {"access_token": "0"}
        if storage.set_tokens_if_unchanged(URL, {"access_token": str(int(current["access_token"]) + 1)}):
            written += 1
    out.put(written)


@pytest.mark.slow
def test_opencode_49439_processes_sharing_one_file_lose_no_refresh(tmp_path: Path) -> None:
    """anomalyco/opencode#49439: processes sharing one mcp-auth.json refresh independently.

    4 processes x 30 read-modify-writes: the counter equals the writes reported as done (a stale
    writer is refused instead of overwriting a newer token), and the file is always whole JSON.
    """
    path = str(tmp_path / "tokens.json")
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    processes = [ctx.Process(target=_refresh_many, args=(path, 30, out)) for _ in range(4)]
    for p in processes:
        p.start()
    written = [out.get(timeout=60) for _ in processes]
    for p in processes:
        p.join(timeout=30)
        assert p.exitcode == 0
    final = FileTokenStorage(path).get_tokens(URL)
    assert final is not None and int(final["access_token"]) == sum(written) > 0
    assert json.loads(Path(path).read_text())["format"] == 1
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


@pytest.mark.parametrize("backend", ["file", "sqlite"])
def test_claude_code_84440_losing_refresh_never_clears_the_winners_tokens(tmp_path: Path, backend: str) -> None:
    """anthropics/claude-code#84440 and NousResearch/hermes-agent#105314: the process whose refresh
    lost the race (invalid_grant) cleared the stored tokens, destroying the ones the winner had
    just stored. Here the loser's ``delete`` keeps tokens written since it read them.
    """
    def make() -> Any:
        if backend == "file":
            return FileTokenStorage(tmp_path / "tokens.json")
        return StoreTokenStorage(SQLiteStore(str(tmp_path / "app.db")))

    winner, loser = make(), make()
    winner.set_tokens(URL, {"access_token": "t1", "refresh_token": "r1"})
    assert loser.get_tokens(URL)["refresh_token"] == "r1"
    winner.get_tokens(URL)
    assert winner.set_tokens_if_unchanged(URL, {"access_token": "t2", "refresh_token": "r2"}) is True  # rotated
    assert loser.delete_if_unchanged(URL) is False  # its refresh with r1 got invalid_grant
    assert loser.set_tokens_if_unchanged(URL, {"access_token": "stale"}) is False
    assert make().get_tokens(URL) == {"access_token": "t2", "refresh_token": "r2"}
    assert loser.get_tokens(URL) == {"access_token": "t2", "refresh_token": "r2"}
    assert loser.delete_if_unchanged(URL) is True  # a logout after reading the current tokens
    assert make().get_tokens(URL) is None


def test_secrets_not_in_repr(tmp_path: Path) -> None:
    storage = FileTokenStorage(tmp_path / "tokens.json")
    storage.set_tokens(URL, {"access_token": "SENTINEL-abc"})
    storage.set_client("https://as.example.com", {"client_id": "c", "client_secret": "SENTINEL-def"})
    assert "SENTINEL" not in repr(storage)


def _locked_worker(path: str, endpoint_path: str, out: Any) -> None:
    from tests.store.rotating_as import RotatingTokenEndpoint, refresh_rounds

    refresh_rounds(FileTokenStorage(path), RotatingTokenEndpoint(endpoint_path), URL, 25, use_lock=True)
    out.put("done")


@pytest.mark.slow
def test_opencode_49439_file_refresh_lock_means_no_refresh_token_is_used_twice(tmp_path: Path) -> None:
    """anomalyco/opencode#49439: "no cross-process single-flight for the refresh transaction" (its file
    lock covered read/write only); against a rotating server one overlap killed the login for 27 h.
    4 processes x 25 expiries under ``refresh_lock``: no reuse.
    """
    from tests.store.rotating_as import RotatingTokenEndpoint

    path = str(tmp_path / "tokens.json")
    endpoint = RotatingTokenEndpoint(str(tmp_path / "as.db"))
    FileTokenStorage(path).set_tokens(URL, {"access_token": "a0", "refresh_token": endpoint.issue()})
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    processes = [ctx.Process(target=_locked_worker, args=(path, endpoint.path, out)) for _ in range(4)]
    for p in processes:
        p.start()
    assert [out.get(timeout=120) for _ in processes] == ["done"] * 4
    for p in processes:
        p.join(timeout=30)
        assert p.exitcode == 0
    refreshes, reuses = endpoint.counts()
    assert reuses == 0 and refreshes > 0


def test_both_storages_are_token_storages_for_mypy_strict(tmp_path: Path) -> None:
    """The protocol is structural: ``mypy --strict`` proves the file and store storages fit ``TokenStorage``
    and the loopback handler fits ``RedirectHandler`` (a return type that drifts fails here).
    """
    mypy_api = pytest.importorskip("mypy.api", reason="mypy is part of the test extra")
    root = Path(__file__).resolve().parents[2]
    snippet = tmp_path / "uses_storages.py"
    snippet.write_text(
        "from yiemagent.mcp.auth import OAuth, RedirectHandler, TokenStorage\n"
        "from yiemagent.mcp.auth.loopback import loopback_redirect_handler\n"
        "from yiemagent.mcp.auth.storage_file import FileTokenStorage\n"
        "from yiemagent.store import SQLiteStore, StoreTokenStorage\n"
        "file_storage: TokenStorage = FileTokenStorage('tokens.json')\n"
        "store_storage: TokenStorage = StoreTokenStorage(SQLiteStore('app.db'))\n"
        "handler: RedirectHandler = loopback_redirect_handler()\n"
        "OAuth(storage=file_storage, redirect_handler=handler)\n")
    out, err, status = mypy_api.run(["--strict", "--no-error-summary", "--cache-dir", str(root / ".mypy_cache"),
                                     str(snippet)])
    assert status == 0, out + err


@pytest.mark.parametrize("value", [float("nan"), "zq-secret\ud800", b"zq-secret", [[[[]]]]],
                         ids=["nan", "surrogate", "bytes", "ok-nested"])
def test_issue_27_values_token_storage_cannot_write_are_a_token_storage_error_never_a_raw_one(tmp_path: Path,
                                                                                            value: Any) -> None:
    """Issue 27: ``FileTokenStorage`` raised ``ValueError``/``UnicodeEncodeError``/``TypeError`` on NaN, a lone
    surrogate or bytes. Its documented ``TokenStorageError`` instead, the value not quoted (it may be a secret),
    and the file as it was.
    """
    storage = FileTokenStorage(tmp_path / "t" / "tokens.json")
    storage.set_tokens("https://a.example/mcp", {"access_token": "first", "token_type": "Bearer"})
    tokens = {"access_token": "zq-second", "token_type": "Bearer", "extra": value}
    if value == [[[[]]]]:
        storage.set_tokens("https://a.example/mcp", tokens)  # plain nested JSON is fine
        return
    with pytest.raises(TokenStorageError) as raised:
        storage.set_tokens("https://a.example/mcp", tokens)
    assert "zq-" not in str(raised.value)
    stored = FileTokenStorage(tmp_path / "t" / "tokens.json").get_tokens("https://a.example/mcp")
    assert stored is not None and stored["access_token"] == "first"


def test_issue_27_a_token_file_nested_too_deep_is_a_token_storage_error(tmp_path: Path) -> None:
    """Issue 27: a deep file raised ``RecursionError`` on read."""
    path = tmp_path / "t" / "tokens.json"
    path.parent.mkdir(mode=0o700)
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    path.chmod(0o600)
    with pytest.raises(TokenStorageError, match="not a JSON token file"):
        FileTokenStorage(path).get_tokens("https://a.example/mcp")
