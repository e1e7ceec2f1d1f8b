"""Servers the MCP server tests share (issue 28): real tools, an agent served as a tool, resources, prompts."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from werkzeug.serving import make_server

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


CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


class Booking:
    """A tool that asks the person to confirm (elicitation), then the client's roots, and a sampling tool.

    ``runs`` counts the runs of ``book``: 2026-07-28 runs it again after each answered round, 2025-11-25
    once; the price is looked up once and kept in ``current_call().saved`` across the rounds (``lookups``).
    """

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.lookups: list[str] = []

    def book(self, room: str) -> str:
        """Book a room once the person confirms."""
        call = current_call()
        assert call is not None
        self.runs.append(room)
        if "price" not in call.saved:
            self.lookups.append(room)
            call.saved["price"] = f"{len(room) * 40} EUR"
        answer = call.elicit(f"Book {room} for {call.saved['price']}?", CONFIRM, key="confirm")
        if answer["action"] != "accept" or not (answer.get("content") or {}).get("ok"):
            return f"not booked ({answer['action']})"
        roots = call.list_roots() if call.client_supports("roots") else []
        return f"booked {room} for {call.saved['price']}; roots: {', '.join(r['uri'] for r in roots) or 'none'}"

    @staticmethod
    def summarize(text: str) -> str:
        """Summarize ``text`` with the client's model."""
        call = current_call()
        assert call is not None
        reply = call.sample(f"Summarize: {text}", max_tokens=50)
        return f"{reply['model']} says: {reply['content']['text']}"

    def server(self, **kwargs: Any) -> MCPServer:
        """A server with ``book`` and ``summarize``."""
        return MCPServer("booking", "1.0", tools=[tool(self.book), tool(self.summarize)], **kwargs)


@contextmanager
def serving(app: Callable[..., Any], path: str = "/mcp") -> Iterator[str]:
    """``app`` (a WSGI app) under werkzeug's threaded server on a loopback socket: its URL at ``path``."""
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{http.server_port}{path}"
    finally:
        http.shutdown()
        thread.join(30)
