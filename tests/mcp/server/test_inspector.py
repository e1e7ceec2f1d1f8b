"""The official MCP Inspector's CLI against the served app (issue 28 point 4), over HTTP and over stdio.

npm ``@modelcontextprotocol/inspector`` 2.12.0 (tests/node/servers, installed by the test run), run with Node 24:
``mcp-inspector --cli <url or command> --method ...``, as a developer checks a server by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import NODE_SERVERS
from tests.mcp.server.kit import build, serving

pytestmark = [pytest.mark.node, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
INSPECTOR = NODE_SERVERS / ".bin" / "mcp-inspector"


def node() -> str:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import run_conformance
    finally:
        sys.path.pop(0)
    return str(run_conformance.node24())


def inspect(*args: str) -> Any:
    if not INSPECTOR.exists():
        pytest.skip(f"{INSPECTOR} is missing: the test run installs tests/node/servers")
    done = subprocess.run([node(), str(INSPECTOR), "--cli", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
                                         "HOME": str(ROOT / ".pytest_cache"), "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    return json.loads(done.stdout)


@pytest.fixture
def served() -> Iterator[str]:
    with serving(build().wsgi_app()) as url:
        yield url


@pytest.mark.timeout(300)
def test_the_inspector_lists_calls_reads_and_renders_over_http(served: str) -> None:
    tools = inspect(served, "--method", "tools/list")
    assert [t["name"] for t in tools["tools"]] == ["add", "leaky", "steps"]
    assert tools["tools"][0]["inputSchema"]["required"] == ["a", "b"]
    result = inspect(served, "--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=40", "b=2")
    assert result["content"] == [{"type": "text", "text": "42"}] and result.get("isError") is False
    resource = inspect(served, "--method", "resources/read", "--uri", "memo://readme")
    assert resource["contents"][0]["text"] == "hello"
    prompt = inspect(served, "--method", "prompts/get", "--prompt-name", "greet", "--prompt-args", "who=Ada")
    assert prompt["messages"][0]["content"]["text"] == "Say hello to Ada"


@pytest.mark.timeout(300)
def test_the_inspector_over_stdio() -> None:
    tools = inspect(sys.executable, "-m", "yiemagent.mcp.server", "tests.mcp.server.kit:build", "--method",
                    "tools/list")
    assert [t["name"] for t in tools["tools"]] == ["add", "leaky", "steps"]
    result = inspect(sys.executable, "-m", "yiemagent.mcp.server", "tests.mcp.server.kit:build", "--method",
                     "tools/call", "--tool-name", "add", "--tool-arg", "a=1", "b=2")
    assert result["content"][0]["text"] == "3"
