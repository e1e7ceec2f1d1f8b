"""A server's tool-list change reaches the agent in both eras and both transports (issue 27, point 4).

Real server: ``tests/servers/sdk_server.py`` (the ``mcp`` SDK, both eras), one process per test because
its ``grow_tools`` changes the process's tool list. ``grow_tools(name)`` adds a tool and announces it on
each era's channel: 2026-07-28 only on ``subscriptions/listen`` streams (the SDK drops change
notifications anywhere else at that era), the handshake era on the ``GET`` stream (HTTP) or stdout.
Before the fix, negotiated into 2026-07-28 (the default), the agent never heard of the change over HTTP
or stdio: the added tool never reached the model (pinned to 2025-11-25 it did).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, serve_http
from tests.mcp.conftest import assert_era
from yiemagent import Agent
from yiemagent.loop import events as ev
from yiemagent.mcp import MCPClient
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

pytestmark = pytest.mark.slow  # a server process per test

SERVER = [PYTHON, str(SERVERS / "sdk_server.py")]


@pytest.fixture(params=["http", "stdio"])
def own_client(request: pytest.FixtureRequest, era: str) -> Iterator[MCPClient]:
    """A client of a fresh SDK server over the transport of the parameter (the era is ``era``'s)."""
    if request.param == "stdio":
        client = MCPClient.stdio(SERVER[0], [*SERVER[1:], "--stdio"], timeout_seconds=15)
        try:
            yield client
        finally:
            client.close()
        return
    with serve_http(SERVER) as url:
        client = MCPClient(url, timeout_seconds=15)
        try:
            yield client
        finally:
            client.close()


def test_a_tool_added_by_the_server_reaches_the_agent_in_both_eras_typescript_sdk_356(own_client, era):
    """typescript-sdk #356 ("the server sent a notification, but the client did not receive any message"):
    the model calls ``grow_tools``; the server adds ``grown_one`` and sends ``tools/list_changed``; the
    agent re-lists, reports ``tools_changed`` with ``added: ["grown_one"]`` and offers the tool to the
    model at the next input. Before the fix, in 2026-07-28, no notification came (waited 10 s) and the
    tool never appeared.
    """
    changes: list[ev.ToolsChangedEvent] = []

    def sink(event: Any) -> None:
        if isinstance(event, ev.ToolsChangedEvent):
            changes.append(event)

    agent = Agent(ScriptedLLM([tool_call_reply("grow_tools", {"name": "grown_one"}), text_reply("grown"),
                               text_reply("again")]), mcp_servers=[own_client], event_sink=sink)
    try:
        assert agent.ask("grow", timeout_seconds=30)["content"] == "grown"
        assert_era(own_client, era)
        deadline = time.monotonic() + 10  # the notification comes on another stream, after the call's answer
        while not (own_client.tools_changed.is_set() or "grown_one" in agent.tools) \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        assert own_client.tools_changed.is_set() or "grown_one" in agent.tools, "no tools/list_changed arrived"
        assert agent.ask("again", timeout_seconds=30)["content"] == "again"
        assert "grown_one" in agent.tools
        assert [change.added for change in changes[1:]] == [["grown_one"]]  # [0]: the first listing
    finally:
        agent.shutdown()


def test_listen_false_keeps_the_agent_from_opening_a_stream(era):
    """``listen=False`` is respected: ``follow_tool_changes`` opens nothing and says so (False)."""
    with serve_http(SERVER) as url:
        client = MCPClient(url, timeout_seconds=15, listen=False)
        try:
            client.connect()
            assert_era(client, era)
            assert client.follow_tool_changes() is False
            assert not client.transport.listening.is_set()
        finally:
            client.close()
