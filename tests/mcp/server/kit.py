"""Servers the MCP server tests share (issue 28): real tools, an agent served as a tool, resources, prompts."""

from __future__ import annotations

import threading
from typing import Any

from yiemagent.mcp.server import MCPServer, Prompt, PromptArgument, Resource, ResourceTemplate, current_call
from yiemagent.tools import AgentTool, report_progress, tool

SECRET = "sk-served-secret-0123456789abcdef"
"""Registered as a known secret by the tests that check it never reaches a client."""


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first
        b: the second
    """
    return a + b


@tool
def leaky() -> str:
    """Fails with a secret in its message."""
    raise RuntimeError(f"cannot reach db with password {SECRET}")


@tool
def steps(count: int) -> str:
    """Report progress ``count`` times, then answer."""
    for done in range(1, count + 1):
        report_progress({"progress": done, "total": count})
    call = current_call()
    if call is not None:
        call.log("info", "steps done")
    return f"{count} steps"


def waiting_tool(started: threading.Event) -> AgentTool:
    """A tool that waits for its abort event (at most 60 s): ``cancelled`` when it was set."""

    def execute(call_id: str, arguments: dict[str, Any], abort: threading.Event) -> str:
        started.set()
        return "cancelled" if abort.wait(60) else "timed out"

    return AgentTool("wait_for_abort", "Waits until the call is cancelled.", {"type": "object", "properties": {}},
                     execute)


def build(**kwargs: Any) -> MCPServer:
    """A server with ``add``, ``leaky``, ``steps``, a resource, a template and a prompt."""
    return MCPServer(
        "kit", "1.0", tools=[add, leaky, steps],
        resources=[Resource("memo://readme", "readme", lambda: "hello", description="A memo"),
                   ResourceTemplate("memo://notes/{id}", "note", lambda uri, values: f"note {values['id']}",
                                    mime_type="text/plain")],
        prompts=[Prompt("greet", lambda a: f"Say hello to {a['who']}", description="Greets",
                        arguments=[PromptArgument("who", "whom", required=True)])],
        instructions="Use add for sums.", **kwargs)
