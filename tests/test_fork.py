"""Agents, pools and MCP clients made before ``fork()`` (issue 15, point 6; ``yiemagent._internal.fork``).

langfuse-python PRs #1654/#1658 and posthog-python #290: objects that own threads lost them across
gunicorn's ``--preload`` fork, and calls in the child waited for ever. Before: a started ``Agent``
used in the child waited out the whole ``ask()`` timeout (for ever without one). Now a started agent
refuses at once with the reason and the fix, a cold one works, an HTTP ``MCPClient`` works on fresh
connections, a started stdio one refuses (its server is the parent's), and the parent is unharmed.
Real servers: the Python SDK's HTTP server (``sdk_server`` fixture) and PyPI ``mcp-server-time``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork() is POSIX")


def test_objects_made_before_fork_work_in_the_child_or_refuse_at_once_and_the_parent_goes_on(sdk_server):
    done = subprocess.run([sys.executable, "-m", "tests.apps.fork_child", sdk_server, sys.executable, "-m",
                           "mcp_server_time"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    child, parent = (json.loads(line) for line in done.stdout.strip().splitlines()[-2:])
    kind, error, message, seconds = child["started"]
    assert (kind, error) == ("error", "AgentClosedError") and seconds < 5
    assert "before fork()" in message and "gunicorn" in message and "post_fork" in message
    assert child["started_put"][:2] == ["error", "AgentClosedError"] and "before fork()" in child["started_put"][2]
    assert child["cold"] == ["ok", "cold"]
    assert child["http"] == ["ok", True]
    kind, error, message, seconds = child["stdio"]
    assert kind == "error" and "before fork()" in message and seconds < 5, child["stdio"]
    assert parent == {"parent": {"started": "parent", "http": True, "stdio": True}}


@pytest.mark.slow
def test_gunicorn_preload_a_started_agent_refuses_at_once_and_a_cold_one_answers(tmp_path):
    """The reports' shape with real gunicorn ``--preload`` (2 sync workers): the agent started in the master
    answers every request at once with the reason and the fix (before: each request waited 20 s, then
    ``TimeoutError``); the agent made but not started in the master answers in each worker.
    """
    import time

    import requests

    from tests.helpers import PYTHON, free_port, start_process, stop_process, wait_for_port

    port = free_port()
    server = start_process([PYTHON, "-m", "gunicorn", "--preload", "--workers", "2", "--bind", f"127.0.0.1:{port}",
                            "--timeout", "60", "tests.apps.preload_app:app"])
    try:
        wait_for_port(port, timeout_seconds=30, process=server)
        for _ in range(4):
            begun = time.monotonic()
            refused = requests.get(f"http://127.0.0.1:{port}/started", timeout=30)
            assert refused.status_code == 500 and time.monotonic() - begun < 5
            assert refused.text.startswith("AgentClosedError: this Agent's thread was started in process")
            assert "--preload" in refused.text and "post_fork" in refused.text
            answered = requests.get(f"http://127.0.0.1:{port}/cold", timeout=30)
            assert (answered.status_code, answered.text) == (200, "cold")
    finally:
        stop_process(server)
