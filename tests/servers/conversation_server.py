"""An MCP server serving a durable agent as a tool (``conversation_tool``), for the crash test of issue 28.

Run::

    python tests/servers/conversation_server.py --port P --db PATH --effects PATH [--die-after-effect]

The agent's model is a plain function (answers ``charge`` once per question, then "charged"); its tool
``charge`` appends a line to ``--effects`` (the non-idempotent side effect a test counts).
``--die-after-effect``: the process kills itself (SIGKILL) right after the effect, before the result is
journaled: a worker killed mid-call.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from werkzeug.serving import make_server

from yiemagent import Agent, tool
from yiemagent.mcp.server import MCPServer
from yiemagent.mcp.server.conversations import conversation_tool
from yiemagent.store import SQLiteStore
from yiemagent.testing import text_reply, tool_call_reply


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--effects", required=True)
    parser.add_argument("--die-after-effect", action="store_true")
    args = parser.parse_args()

    @tool
    def charge(amount: int) -> str:
        """Charge the card (not safe to repeat)."""
        fd = os.open(args.effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
        if args.die_after_effect:
            os.kill(os.getpid(), signal.SIGKILL)
        return f"charged {amount}"

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if messages[-1]["role"] == "user":
            return tool_call_reply("charge", {"amount": 5})
        return text_reply(f"done: {messages[-1]['content']}")

    store = SQLiteStore(args.db)
    server = MCPServer("conversations", tools=[conversation_tool(
        lambda cid: Agent(model, tools=[charge], store=store, conversation_id=cid, lease_seconds=1.0),
        "ask_agent", "Ask the agent.")])
    http = make_server("127.0.0.1", args.port, server.wsgi_app(stateless=True), threaded=True)
    http.serve_forever()


if __name__ == "__main__":
    main()
