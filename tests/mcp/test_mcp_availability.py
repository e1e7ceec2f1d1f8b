"""Issue 9 point 5: MCP failures are visible, not silent; who owns a client; stdio names from ``serverInfo``.

Real peers only: a port nothing listens on, a command that does not exist, ``python -m http.server`` (a real
HTTP server that is not MCP), mcp-server-time and tests/servers/stdio_quirks.py over stdio.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, wait_for_port
from yiemagent import Agent
from yiemagent.mcp import MCPClient
from yiemagent.mcp.client import server_info_name
from yiemagent.testing import ScriptedLLM, text_reply

QUIRKS = [PYTHON, str(SERVERS / "stdio_quirks.py")]
TIME_SERVER = [PYTHON, "-m", "mcp_server_time", "--local-timezone", "UTC"]


@pytest.fixture
def not_mcp() -> Iterator[str]:
    """URL of ``python -m http.server``: answers HTTP, but POST gets 501 (it is no MCP server)."""
    port = free_port()
    process = start_process([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"])
    try:
        wait_for_port(port, process=process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


def test_unreachable_servers_are_named_on_the_answer_and_in_mcp_status(not_mcp):
    """Issue 9 point 5: a refused URL, a missing stdio command and a server that is not MCP gave
    ``status: completed`` and a model with no tools, the only signal a WARNING. The answer now carries
    ``mcp_unavailable`` (one entry each, with the error), and ``mcp_status()`` says the same.
    """
    refused = f"http://127.0.0.1:{free_port()}/mcp"
    missing = MCPClient.stdio("/nonexistent/mcp-server-nothing", name="missing")
    time_client = MCPClient.stdio(*TIME_SERVER[:1], TIME_SERVER[1:])
    llm = ScriptedLLM([text_reply("hello")])
    agent = Agent(llm, mcp_servers={"refused": refused, "missing": missing, "not_mcp": not_mcp,
                                    "time": time_client}, close_mcp_clients=True)
    try:
        answer = agent.ask("hi", timeout_seconds=60)
        assert answer["status"] == "completed" and answer["content"] == "hello"
        unavailable = {item["server"]: item["error"] for item in answer["mcp_unavailable"]}
        assert set(unavailable) == {"refused", "missing", "not_mcp"}
        assert "refused" in unavailable["refused"].lower() or "connect" in unavailable["refused"].lower()
        assert "cannot start" in unavailable["missing"]
        assert "501" in unavailable["not_mcp"]
        status = {item["server"]: item for item in agent.mcp_status()}
        assert status["time"]["state"] == "connected" and "get_current_time" in status["time"]["tools"]
        assert status["time"]["server_info"]["name"] == "mcp-time"
        assert {status[name]["state"] for name in unavailable} == {"unavailable"}
        assert [t["function"]["name"] for t in llm.calls[0]["tools"]].count("get_current_time") == 1
    finally:
        agent.shutdown()


@pytest.mark.slow
def test_the_key_is_absent_when_every_server_is_reachable():
    client = MCPClient.stdio(TIME_SERVER[0], TIME_SERVER[1:])
    with Agent(ScriptedLLM([text_reply("ok")]), mcp_servers=[client], close_mcp_clients=True) as agent:
        answer = agent.ask("hi", timeout_seconds=60)
        assert "mcp_unavailable" not in answer
        assert [s["state"] for s in agent.mcp_status()] == ["connected"]


def test_mcp_required_makes_an_unreachable_server_an_error_answer_without_calling_the_model():
    """Issue 9 point 5: ``mcp_required=True``: each input's answer is an error naming the server while it
    cannot be reached; the model is not called and the input is not added to the history.
    """
    refused = f"http://127.0.0.1:{free_port()}/mcp"
    llm = ScriptedLLM([text_reply("never")])
    agent = Agent(llm, mcp_servers={"down": refused}, mcp_required=True)
    try:
        answer = agent.ask("hi", timeout_seconds=60)
        assert answer["status"] == "error"
        assert "mcp_required" in answer["error"] and "down" in answer["error"]
        assert [item["server"] for item in answer["mcp_unavailable"]] == ["down"]
        assert llm.calls == [] and agent.history == []
    finally:
        agent.shutdown()


@pytest.mark.slow
def test_mcp_required_with_every_server_up_runs_normally():
    client = MCPClient.stdio(TIME_SERVER[0], TIME_SERVER[1:])
    with Agent(ScriptedLLM([text_reply("fine")]), mcp_servers=[client], mcp_required=True,
               close_mcp_clients=True) as agent:
        assert agent.ask("hi", timeout_seconds=60)["status"] == "completed"


@pytest.mark.parametrize("close_mcp_clients", [False, True])
@pytest.mark.slow
def test_a_given_stdio_client_is_closed_by_shutdown_only_when_the_agent_owns_it(close_mcp_clients):
    """Issue 9 point 5: stdio clients handed to an Agent outlived ``shutdown()`` and ``with Agent(...)`` with no
    way to hand them over. Default: they stay the caller's (still running after the agent); with
    ``close_mcp_clients=True`` the agent closes them.
    """
    client = MCPClient.stdio(QUIRKS[0], QUIRKS[1:])
    try:
        with Agent(ScriptedLLM([text_reply("ok")]), mcp_servers=[client],
                   close_mcp_clients=close_mcp_clients) as agent:
            agent.ask("hi", timeout_seconds=60)
        process = client.transport.process
        assert process is not None
        if close_mcp_clients:
            assert process.poll() is not None
        else:
            assert process.poll() is None
            assert client.call_tool("echo", {"text": "still mine"})["content"][0]["text"] == "still mine"
    finally:
        client.close()


@pytest.mark.slow
def test_stdio_servers_are_named_after_server_info_not_their_command_line():
    """Issue 9 point 5: default names were the command line (``node__tmp_…_e2765ec3`` as a tool prefix). After
    the handshake an unnamed stdio client takes ``serverInfo.name``; a name given (or set) is kept.
    """
    first = MCPClient.stdio(QUIRKS[0], QUIRKS[1:])
    second = MCPClient.stdio(PYTHON, [str(SERVERS / "raw_stdio_peer.py")])  # also has a tool named echo
    named = MCPClient.stdio(TIME_SERVER[0], TIME_SERVER[1:], name="clock")
    assert first.name.startswith("python ")  # before the handshake: the command line
    with Agent(ScriptedLLM([text_reply("ok")]), mcp_servers=[first, second, named], close_mcp_clients=True) as agent:
        agent.ask("hi", timeout_seconds=60)
        assert (first.name, second.name, named.name) == ("stdio-quirks", "raw-stdio-peer", "clock")
        assert {"echo", "raw-stdio-peer_echo"} <= set(agent.tools.names())  # the clash, prefixed readably
    assert server_info_name({"name": "mcp-servers/everything"}) == "mcp-servers_everything"
    assert server_info_name({"name": 5}) is None and server_info_name(None) is None
