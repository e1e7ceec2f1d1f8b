"""``yiemagent tools/call --auth oauth`` end to end: a real OAuth-protected SDK server, the CLI as a subprocess,
the loopback callback server, and the test as the browser following the authorization server's redirect.
"""

from __future__ import annotations

import json
import os
import queue
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.helpers import PYTHON, TESTS

oauth_rig = pytest.importorskip("tests.mcp.oauth_rig", reason="the OAuth SDK server rig comes with i17-oauthreal")
oauth_server = oauth_rig.oauth_server  # the fixture

LOGIN_LINE = "Open this URL in a browser to log in:"


def _start(args: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], queue.Queue[str]]:
    process = subprocess.Popen([PYTHON, "-m", "yiemagent.cli", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, encoding="utf-8", cwd=str(TESTS.parent),
                               env={**os.environ, **(env or {})})
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    return process, lines


def _browse(lines: queue.Queue[str], port: int) -> tuple[str, list[str]]:
    """Play the browser: read the printed URL, follow the authorization server's redirect to the loopback."""
    seen: list[str] = []
    while True:
        line = lines.get(timeout=60)
        seen.append(line)
        assert line, f"the CLI ended before printing a login URL: {''.join(seen)}"
        if line.startswith("http"):
            break
    url = line.strip()
    answer = requests.get(url, allow_redirects=False, timeout=10)
    location = answer.headers["Location"]
    assert location.startswith(f"http://127.0.0.1:{port}/callback?"), location
    page = requests.get(location, timeout=10)
    assert page.status_code == 200 and "Login complete" in page.text
    return url, seen


def _finish(process: subprocess.Popen[str], lines: queue.Queue[str]) -> tuple[str, str]:
    assert process.stdout is not None
    out = process.stdout.read()
    process.wait(timeout=60)
    err = []
    while True:
        line = lines.get(timeout=30)
        if not line:
            break
        err.append(line)
    _close(process)
    return out, "".join(err)


def _close(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait(timeout=30)
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


def test_cli_tools_logs_in_once_through_the_loopback_and_reuses_the_token_file(
        oauth_server: Any, tmp_path: Path, free_port: int) -> None:
    server = oauth_server(split=True)
    token_file = tmp_path / "conf" / "tokens.json"
    args = ["tools", server.url, "--auth", "oauth", "--callback-port", str(free_port), "--token-file", str(token_file)]
    process, lines = _start(args)
    try:
        _, before = _browse(lines, free_port)
        out, err = _finish(process, lines)
    finally:
        _close(process)
    assert process.returncode == 0, err
    assert "add" in out and "echo" in out and LOGIN_LINE in "".join(before)
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    logins = server.counts()["authorizations"]

    again = subprocess.run([PYTHON, "-m", "yiemagent.cli", *args], capture_output=True, encoding="utf-8",
                           timeout=60, cwd=str(TESTS.parent), check=False)
    assert again.returncode == 0, again.stderr
    assert LOGIN_LINE not in again.stderr and "add" in again.stdout  # tokens from the file: no second login
    assert server.counts()["authorizations"] == logins
    issued = server.issued()
    leaks = oauth_rig.find_leaks({"stdout": out + again.stdout, "stderr": err + "".join(before) + again.stderr},
                                 {k: v for k, v in issued.items() if k != "client_secrets"})
    assert leaks == []


def test_cli_call_with_a_registered_client_and_the_secret_from_the_environment(
        oauth_server: Any, tmp_path: Path, free_port: int) -> None:
    secret = "cli-client-SECRET-5c1e"
    server = oauth_server("--client-id", "cli-app", "--client-secret", secret, "--no-dcr", split=True)
    process, lines = _start(["call", server.url, "add", '{"a": 2, "b": 3}', "--auth", "oauth", "--client-id",
                             "cli-app", "--callback-port", str(free_port), "--token-file",
                             str(tmp_path / "tokens.json")], env={"YIEMAGENT_OAUTH_CLIENT_SECRET": secret})
    try:
        url, before = _browse(lines, free_port)
        out, err = _finish(process, lines)
    finally:
        _close(process)
    assert process.returncode == 0, err
    assert "client_id=cli-app" in url
    assert "5" in [block.get("text") for block in json.loads(out)["content"]]
    assert server.counts()["registrations"] == 0
    assert secret not in out + err + "".join(before)
