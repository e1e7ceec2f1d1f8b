"""An agent's approval becomes an elicitation to the person at the client (issue 28 point 2).

A served ``agent.as_tool(...)`` whose agent calls a tool that needs approval: the person at the client is asked
(``elicitation/create``), in both eras over real HTTP with yiemagent's ``MCPClient``; approved, the tool runs
once and the agent answers; declined, the agent hears the reason and the tool never runs; a client that cannot
be asked gets an error result naming the waiting call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.mcp.server.kit import serving
from yiemagent import Agent, tool
from yiemagent.mcp import MCPClient
from yiemagent.mcp.server import MCPServer
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

pytestmark = pytest.mark.slow  # a server on a socket


class Office:
    """A served helper agent whose ``delete_file`` needs a person's yes."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        seen = self.deleted

        @tool(needs_approval=True)
        def delete_file(path: str) -> str:
            """Delete a file."""
            seen.append(path)
            return f"deleted {path}"

        def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
            last = messages[-1]
            if last["role"] == "user":
                return tool_call_reply("delete_file", {"path": "/tmp/report.txt"})
            return text_reply(f"helper: {last['content']}")

        self.llm = ScriptedLLM([model], repeat_last=True)
        self.helper = Agent(self.llm, tools=[delete_file])
        self.server = MCPServer("office", tools=[self.helper.as_tool("helper", "Ask the office helper.")])


@pytest.fixture
def office() -> Iterator[tuple[Office, str]]:
    kept = Office()
    try:
        with serving(kept.server.wsgi_app()) as url:
            yield kept, url
    finally:
        kept.helper.shutdown()


def person(asked: list[dict[str, Any]], answer: dict[str, Any]) -> dict[str, Any]:
    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return answer

    return {"capabilities": {"elicitation": {}}, "request_handlers": {"elicitation/create": elicit}}


@pytest.mark.parametrize("pinned", [None, "2025-11-25"], ids=["2026-07-28", "2025-11-25"])
def test_an_approval_is_asked_of_the_person_and_the_tool_runs_once(office: tuple[Office, str],
                                                                   pinned: str | None) -> None:
    kept, url = office
    asked: list[dict[str, Any]] = []
    yes = {"action": "accept", "content": {"approve": True}}
    with MCPClient(url, timeout_seconds=60, protocol_version=pinned, **person(asked, yes)) as client:
        result = client.call_tool("helper", {"input": "Delete the old report."})
    assert result["isError"] is False, result
    assert result["content"][0]["text"] == "helper: deleted /tmp/report.txt"
    assert kept.deleted == ["/tmp/report.txt"]  # once, whatever the rounds
    assert len(asked) == 1 and "delete_file" in asked[0]["message"] and "report.txt" in asked[0]["message"]
    assert asked[0]["requestedSchema"]["required"] == ["approve"]


def test_a_declined_approval_never_runs_the_tool_and_the_agent_hears_why(office: tuple[Office, str]) -> None:
    kept, url = office
    asked: list[dict[str, Any]] = []
    no = {"action": "accept", "content": {"approve": False, "reason": "keep it, it is needed for the audit"}}
    with MCPClient(url, timeout_seconds=60, protocol_version="2025-11-25", **person(asked, no)) as client:
        result = client.call_tool("helper", {"input": "Delete the old report."})
    assert kept.deleted == []
    assert "keep it, it is needed for the audit" in result["content"][0]["text"]


def test_a_client_that_cannot_be_asked_gets_an_error_naming_the_waiting_call(office: tuple[Office, str]) -> None:
    kept, url = office
    with MCPClient(url, timeout_seconds=60, protocol_version="2025-11-25") as client:
        result = client.call_tool("helper", {"input": "Delete the old report."})
    assert result["isError"] is True and "delete_file" in result["content"][0]["text"]
    assert "elicitation" in result["content"][0]["text"] and kept.deleted == []
