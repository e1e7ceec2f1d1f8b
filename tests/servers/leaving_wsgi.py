"""A served app whose tools say, in files, whether their client left (issue 33 point 1).

Each tool, prompt and resource takes a ``tag`` and writes ``<tag>.started`` when it starts and ``<tag>.aborted`` once
its call's abort event is set (``<tag>.finished`` if it ended otherwise) in the folder ``marks``: a test in another
process sees what the server did with a call whose client went away. ``application`` is the app for a server
process (waitress, gunicorn); the folder is ``$YIEMAGENT_LEAVING_MARKS``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from yiemagent.mcp.server import MCPServer, Prompt, PromptArgument, ResourceTemplate, current_call
from yiemagent.mcp.server.inputs import InputUnavailable
from yiemagent.tools import tool

CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
WAIT_SECONDS = 120.0
"""Longest a tool waits for its abort event: far beyond any bound a test waits for the mark."""


def build(marks: Path) -> MCPServer:
    """The server: ``add``, ``wait_for_abort``, ``progress_then_wait``, ``confirm``, a prompt and a resource."""

    def mark(tag: str, what: str) -> None:
        (marks / f"{tag}.{what}").write_text(what)

    def wait(tag: str) -> str:
        call = current_call()
        assert call is not None
        mark(tag, "started")
        aborted = call.abort_event.wait(WAIT_SECONDS)
        mark(tag, "aborted" if aborted else "finished")
        return "aborted" if aborted else "waited"

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def wait_for_abort(tag: str) -> str:
        """Wait until the call is cancelled."""
        return wait(tag)

    @tool
    def progress_then_wait(tag: str) -> str:
        """Send one progress notification, then wait until the call is cancelled."""
        call = current_call()
        assert call is not None
        call.progress(1, 2, "half way")
        call.log("info", "half way")
        return wait(tag)

    @tool
    def confirm(tag: str) -> str:
        """Ask the person to confirm (elicitation), then answer what they said."""
        call = current_call()
        assert call is not None
        mark(tag, "started")
        try:
            answer = call.elicit("Go on?", CONFIRM)
        except InputUnavailable:
            mark(tag, "aborted" if call.abort_event.is_set() else "finished")
            raise
        mark(tag, "finished")
        return str(answer["action"])

    return MCPServer(
        "leaving", "1.0", tools=[add, wait_for_abort, progress_then_wait, confirm],
        prompts=[Prompt("wait_prompt", lambda arguments: wait(arguments["tag"]), description="Waits",
                        arguments=[PromptArgument("tag", "the mark", required=True)])],
        resources=[ResourceTemplate("wait://{tag}", "wait", lambda uri, values: wait(values["tag"]))])


class _Lazy:
    """The WSGI app, built at the first request (the marks folder is read then)."""

    def __init__(self) -> None:
        self._app: Any = None
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        with self._lock:
            if self._app is None:
                self._app = build(Path(os.environ["YIEMAGENT_LEAVING_MARKS"])).wsgi_app()
        return self._app(environ, start_response)


application = _Lazy()


def stdio_server() -> MCPServer:
    """The server for ``python -m yiemagent.mcp.server tests.servers.leaving_wsgi:stdio_server``."""
    return build(Path(os.environ["YIEMAGENT_LEAVING_MARKS"]))
