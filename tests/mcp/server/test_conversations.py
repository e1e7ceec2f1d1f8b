"""A durable agent served as a tool (issue 28 point 1): a conversation per ``conversation_id`` in the store, a
call retried with the same ``input_id`` answered once, and a worker killed mid-call whose retry on another
process runs nothing twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.helpers import PYTHON, SERVERS, free_port, process_output, start_process, stop_process, wait_for_port
from yiemagent import Agent
from yiemagent.exceptions import ConfigError
from yiemagent.mcp.server import MCPServer
from yiemagent.mcp.server.conversations import conversation_tool
from yiemagent.store import SQLiteStore
from yiemagent.testing import ScriptedLLM, text_reply


def call(server: MCPServer, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    reply = server.handle({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                           "params": {"name": "ask_agent", "arguments": arguments}})
    assert reply is not None and "result" in reply, reply
    return dict(reply["result"])


def test_a_conversation_goes_on_by_its_id_and_a_retried_input_id_is_answered_once(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "c.db"))
    llm = ScriptedLLM([text_reply("Hello Ada."), text_reply("Your name is Ada."), text_reply("Noted.")])
    server = MCPServer("s", tools=[conversation_tool(
        lambda cid: Agent(llm, store=store, conversation_id=cid), "ask_agent", "Ask the agent.")])
    first = call(server, {"input": "My name is Ada."})
    cid = first["structuredContent"]["conversation_id"]
    assert first["content"] == [{"type": "text", "text": "Hello Ada."}] and first["isError"] is False
    assert first["structuredContent"]["status"] == "completed"
    second = call(server, {"input": "What is my name?", "conversation_id": cid})
    assert second["structuredContent"]["answer"] == "Your name is Ada."
    assert "My name is Ada." in json.dumps(llm.calls[1]["messages"])  # the store kept the conversation
    keyed = call(server, {"input": "Remember 42.", "conversation_id": cid, "input_id": "k-1"})
    again = call(server, {"input": "Remember 42.", "conversation_id": cid, "input_id": "k-1"}, request_id=2)
    assert keyed["structuredContent"] == again["structuredContent"]
    assert keyed["structuredContent"]["input_id"] == "k-1" and again["content"][0]["text"] == "Noted."
    assert len(llm.calls) == 3  # the retry asked the model nothing
    other = call(server, {"input": "Hi"})
    assert other["structuredContent"]["conversation_id"] != cid and other["isError"] is True  # script exhausted
    with pytest.raises(ConfigError):
        conversation_tool("not callable", "x", "y")  # type: ignore[arg-type]


def _post_call(url: str, input_id: str) -> requests.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ask_agent", "arguments": {"input": "charge me", "conversation_id": "c-1",
                                                          "input_id": input_id}}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    return requests.post(url, json=body, timeout=120, headers=headers)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_worker_killed_mid_call_and_the_retry_on_another_runs_the_tool_once(tmp_path: Path) -> None:
    """Worker A runs the agent's non-idempotent tool and is killed (SIGKILL) before the result is journaled; the
    client retries the same call (same ``input_id``) on worker B: B takes the conversation over once A's lease
    lapses, reports the call as interrupted instead of running it again, and answers.
    """
    db, effects = str(tmp_path / "c.db"), tmp_path / "effects"
    started = []
    try:
        port_a = free_port()
        worker_a = start_process([PYTHON, str(SERVERS / "conversation_server.py"), "--port", str(port_a), "--db", db,
                                  "--effects", str(effects), "--die-after-effect"])
        started.append(worker_a)
        wait_for_port(port_a, process=worker_a)
        with pytest.raises(requests.ConnectionError):
            _post_call(f"http://127.0.0.1:{port_a}/mcp", "pay-1")
        assert worker_a.wait(30) == -9
        assert effects.read_text().count("\n") == 1
        port_b = free_port()
        worker_b = start_process([PYTHON, str(SERVERS / "conversation_server.py"), "--port", str(port_b), "--db", db,
                                  "--effects", str(effects)])
        started.append(worker_b)
        wait_for_port(port_b, process=worker_b)
        answer = _post_call(f"http://127.0.0.1:{port_b}/mcp", "pay-1")
        assert answer.status_code == 200, answer.text
        result = answer.json()["result"]
        assert result["structuredContent"]["input_id"] == "pay-1", result
        assert result["structuredContent"]["status"] == "completed", result
        assert effects.read_text().count("\n") == 1  # the tool ran once, in A
        assert "interrupted" in result["content"][0]["text"] or "unknown" in result["content"][0]["text"], result
    finally:
        for process in started:
            print(process_output(process)[-3000:])
            stop_process(process)


def test_conversation_tool_inputs_are_bounded_and_its_timeout_fails_closed(tmp_path: Path) -> None:
    """A 1 MB ``input`` (the body bound is 4 MiB) was handed to the model; NaN / inf timeouts never cut a call."""
    made: list[str] = []

    def make(cid: str) -> Agent:
        made.append(cid)
        return Agent(ScriptedLLM([text_reply("ok")]), store=SQLiteStore(str(tmp_path / "c.db")), conversation_id=cid)

    server = MCPServer("s", tools=[conversation_tool(make, "ask_agent", "Ask the agent.")])
    reply = server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "ask_agent", "arguments": {"input": "x" * 1_000_000}}})
    assert reply is not None
    refused = reply.get("error") or reply["result"]
    assert made == [] and ("isError" not in refused or refused["isError"] is True), str(reply)[:300]
    assert len(json.dumps(reply)) < 5000  # the input is not echoed back whole
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ConfigError, match="finite"):
            conversation_tool(make, "x", "y", timeout_seconds=bad)
