"""Two gunicorn workers share one OAuth login through the conversation store (issue 17, "Done when").

Real gunicorn (2 sync workers) serving ``tests/apps/oauth_app.py``: store-backed conversations whose
agents call the ``note`` tool of the real OAuth-protected SDK server (tests/servers/oauth_sdk_server.py,
authorization server on its own origin, access tokens living 3 s, rotating refresh tokens, a refresh grant
taking 1 s so that the two workers' refreshes overlap). The tokens live
in the store's ``oauth`` table (``StoreTokenStorage``). On PostgreSQL and on SQLite (one file, WAL).

Public cases:
    claude-code 84440, opencode 49439, oh-my-pi 5081: processes sharing one stored credential refreshed
        the same rotating refresh token at once; the loser's ``invalid_grant`` wiped the store (even the
        winner's new token) and every process had to log in again -> here, after the token expired, both
        workers answer concurrent requests, and there is still one login in all
"""

from __future__ import annotations

import concurrent.futures
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.apps import kit
from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, wait_for_port


def _start_oauth_server(token_seconds: int) -> tuple[Any, str, str]:
    port, as_port = free_port(), free_port()
    process = start_process([PYTHON, str(SERVERS / "oauth_sdk_server.py"), "--port", str(port),
                             "--as-port", str(as_port), "--token-seconds", str(token_seconds),
                             "--refresh-delay-seconds", "1"])
    wait_for_port(port, timeout_seconds=20, process=process)
    wait_for_port(as_port, timeout_seconds=20, process=process)
    return process, f"http://127.0.0.1:{port}/mcp", f"http://127.0.0.1:{as_port}"


def _ask(base: str, cid: str, label: str) -> tuple[str, str]:
    response = requests.post(f"{base}/conversations/{cid}/messages", timeout=60, headers={"Connection": "close"},
                             json={"message": kit.instruction(label, [("note", f"{label}-n")])})
    assert response.status_code == 200, response.text
    return response.json()["answer"]["content"], response.headers["X-Served-By"]


def _logins(path: Path) -> list[int]:
    return [json.loads(line)["pid"] for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.timeout(600)  # an OAuth server and gunicorn workers twice; 11 s idle, minutes loaded
def test_two_gunicorn_workers_share_one_login_and_survive_expiry(any_rig: Any, tmp_path: Path) -> None:
    """One login (in whichever worker served first); the other worker calls the protected tool with the
    stored token, no login of its own; after the 3 s token expired, 8 concurrent conversations on both
    workers go through by refresh (compare-and-set in the store), still one login and one registration.
    """
    oauth, url, as_base = _start_oauth_server(token_seconds=3)
    logins = tmp_path / "logins.jsonl"
    try:
        rig = any_rig
        port = free_port()
        server = rig.start([PYTHON, "-m", "gunicorn", "--workers", "2", "--bind", f"127.0.0.1:{port}",
                            "--timeout", "90", "--graceful-timeout", "2", "tests.apps.oauth_app:app"],
                           ready_line=None, lease_ttl_seconds=5.0, YIEMAGENT_TEST_OAUTH_URL=url,
                           YIEMAGENT_TEST_LOGINS=str(logins))
        wait_for_port(port, timeout_seconds=30, process=server)
        base = f"http://127.0.0.1:{port}"
        run = uuid.uuid4().hex[:6]
        started = time.monotonic()
        answer, first_pid = _ask(base, f"o{run}-0", f"o{run}-0")
        assert answer == f"o{run}-0 #1: noted o{run}-0-n", answer
        assert _logins(logins) == [int(first_pid)]
        pids = {first_pid}
        deadline = time.monotonic() + 30
        k = 0
        while len(pids) < 2:  # sequential requests until the other worker answered one
            assert time.monotonic() < deadline, f"only worker {pids} answered in 30 s"
            k += 1
            answer, pid = _ask(base, f"o{run}-{k}", f"o{run}-{k}")
            assert answer.endswith(f"noted o{run}-{k}-n"), answer
            pids.add(pid)
        assert _logins(logins) == [int(first_pid)], "the second worker used the stored login"
        counts = requests.get(f"{as_base}/_counts", timeout=10).json()
        assert (counts["registrations"], counts["authorizations"]) == (1, 1), counts

        time.sleep(3.5)  # the access token expired: every worker must refresh (rotating refresh tokens)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(_ask, base, f"r{run}-{i}", f"r{run}-{i}") for i in range(8)]
            results = [f.result(timeout=90) for f in futures]
        assert [a for a, _ in results] == [f"r{run}-{i} #1: noted r{run}-{i}-n" for i in range(8)]
        counts = requests.get(f"{as_base}/_counts", timeout=10).json()
        assert (counts["registrations"], counts["authorizations"]) == (1, 1), (counts, rig.logs())
        assert len({pid for _, pid in results}) == 2, "both workers served after the expiry"
        # one successful refresh per token lifetime (3 s, refreshed 0.5 s early), not one per worker or request
        lifetimes = int((time.monotonic() - started) / 2.5) + 1
        assert 1 <= counts["refresh_grants"] <= lifetimes, (counts, lifetimes)
        print(f"\nOAUTH-GUNICORN counts={counts}")
        assert _logins(logins) == [int(first_pid)]
    finally:
        stop_process(oauth)
