"""Served over real HTTP (issue 28 points 1 and 4): werkzeug's threaded server on a socket, talked to by
yiemagent's own ``MCPClient`` (an ``Agent`` using the served tools end to end) and by the official ``mcp``
SDK client (``mcp.client.streamable_http``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from tests.mcp.server.kit import build, serving
from yiemagent import Agent
from yiemagent.mcp import MCPClient
from yiemagent.mcp.server import MCPServer
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

pytestmark = pytest.mark.slow


@pytest.fixture
def served() -> Iterator[str]:
    """``build()`` plus a sub-agent as a tool, at http://127.0.0.1:PORT/mcp (werkzeug, threaded)."""
    helper = Agent(ScriptedLLM([text_reply("Paris")], repeat_last=True), system_prompt="Answer briefly.")
    server: MCPServer = build()
    server.add_tool(helper.as_tool("ask_helper", "Ask the helper agent a question."))
    with serving(server.wsgi_app()) as url:
        yield url


def test_yiemagent_client_and_an_agent_use_the_served_tools(served: str) -> None:
    with MCPClient(served, timeout_seconds=60) as client:
        names = [t["name"] for t in client.list_tools()]
        assert names == ["add", "leaky", "steps", "ask_helper"]
        assert client.protocol_version == "2025-11-25"
        result = client.call_tool("ask_helper", {"input": "Capital of France?"})
        assert result["isError"] is False and result["content"][0]["text"] == "Paris"
    llm = ScriptedLLM([tool_call_reply("add", {"a": 20, "b": 22}), text_reply("It is 42.")])
    agent = Agent(llm, mcp_servers=[served])
    try:
        answer = agent.ask("What is 20 + 22?", timeout_seconds=120)
    finally:
        agent.shutdown()
    assert answer["content"] == "It is 42."
    tool_messages = [m for m in llm.calls[1]["messages"] if m["role"] == "tool"]
    assert tool_messages and tool_messages[0]["content"] == "42"


def test_the_mcp_sdk_client_over_streamable_http(served: str) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    seen: dict[str, Any] = {}

    async def talk() -> None:
        with anyio.fail_after(120):
            await talk_inside()

    async def talk_inside() -> None:
        async with streamable_http_client(served) as (read, write, *_), ClientSession(read, write) as session:
            await session.initialize()
            seen["tools"] = [t.name for t in (await session.list_tools()).tools]
            seen["sum"] = await session.call_tool("add", {"a": 2, "b": 40})
            notes: list[Any] = []

            async def progress(value: float, total: float | None, message: str | None) -> None:
                notes.append((value, total))

            seen["steps"] = await session.call_tool("steps", {"count": 3}, progress_callback=progress)
            seen["progress"] = notes
            seen["resource"] = await session.read_resource("memo://notes/7")
            seen["prompt"] = await session.get_prompt("greet", {"who": "Bo"})

    anyio.run(talk)
    assert seen["tools"] == ["add", "leaky", "steps", "ask_helper"]
    assert seen["sum"].content[0].text == "42" and not seen["sum"].is_error
    assert seen["steps"].content[0].text == "3 steps"
    assert seen["progress"] == [(1, 3), (2, 3), (3, 3)]
    assert seen["resource"].contents[0].text == "note 7"
    assert seen["prompt"].messages[0].content.text == "Say hello to Bo"


@pytest.mark.parametrize(("app", "workers"), [("stateless", "2"), ("sessions", "1")])
def test_under_gunicorn_threaded_workers(app: str, workers: str) -> None:
    """The guide's gunicorn deployments: stateless with 2 workers (any worker answers any request), and
    sessions with one worker (sessions live in the process).
    """
    from tests.helpers import PYTHON, free_port, process_output, start_process, stop_process, wait_for_port

    port = free_port()
    process = start_process([PYTHON, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "-k", "gthread",
                             "--workers", workers, "--threads", "4", "--timeout", "120",
                             f"tests.servers.served_wsgi:{app}"])
    try:
        wait_for_port(port, process=process)
        for _ in range(3):  # new connections: with 2 workers, more than one of them answers
            with MCPClient(f"http://127.0.0.1:{port}/mcp", timeout_seconds=60) as client:
                assert [t["name"] for t in client.list_tools()] == ["add", "leaky", "steps"]
                for a in range(4):
                    assert client.call_tool("add", {"a": a, "b": 1})["content"][0]["text"] == str(a + 1)
    except Exception:
        print(process_output(process))
        raise
    finally:
        stop_process(process)
