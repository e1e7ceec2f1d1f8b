"""Served over stdio (issue 28 points 1 and 5): ``python -m yiemagent.mcp.server module:server`` started from
exactly the ``mcpServers`` entry of docs/guides/serving.rst, talked to by yiemagent's ``MCPClient`` (stdio
transport, through ``yiemagent.mcp.config``) and by the official ``mcp`` SDK client (``mcp.client.stdio``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from yiemagent.mcp.config import mcp_clients

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "guides" / "serving.rst"
TARGET = "tests.mcp.server.kit:build"


def guide_entry() -> dict[str, Any]:
    """The guide's ``mcpServers`` document, with only the Python, the target and the directory filled in."""
    block = re.search(r"\.\. code-block:: json\n\n((?:    .*\n|\n)+)", GUIDE.read_text(encoding="utf-8"))
    assert block is not None, "the guide has no JSON mcpServers entry"
    document = json.loads(block.group(1))
    entry = document["mcpServers"]["myapp"]
    assert entry["command"] == "python" and entry["args"] == ["-m", "yiemagent.mcp.server", "myapp.tools:server"]
    entry.update(command=sys.executable, args=[*entry["args"][:2], TARGET], cwd=str(ROOT))
    return dict(document)


def test_the_guide_entry_starts_a_server_yiemagent_talks_to() -> None:
    clients, made = mcp_clients(guide_entry())
    try:
        assert [c.name for c in clients] == ["myapp"]
        client = clients[0]
        assert [t["name"] for t in client.list_tools()] == ["add", "leaky", "steps"]
        assert client.server_info["name"] == "kit"
        result = client.call_tool("add", {"a": 40, "b": 2})
        assert result["content"] == [{"type": "text", "text": "42"}] and result["isError"] is False
    finally:
        for client in made:
            client.close()


def test_the_mcp_sdk_stdio_client() -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    entry = guide_entry()["mcpServers"]["myapp"]
    parameters = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=entry["cwd"])
    seen: dict[str, Any] = {}

    async def talk() -> None:
        with anyio.fail_after(120):
            async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                seen["tools"] = [t.name for t in (await session.list_tools()).tools]
                seen["sum"] = await session.call_tool("add", {"a": 1, "b": 2})
                seen["prompts"] = [p.name for p in (await session.list_prompts()).prompts]

    anyio.run(talk)
    assert seen["tools"] == ["add", "leaky", "steps"]
    assert seen["sum"].content[0].text == "3"
    assert seen["prompts"] == ["greet"]
