"""The client the official MCP conformance suite drives: yiemagent's ``MCPClient`` doing what each scenario asks.

The suite (npm ``@modelcontextprotocol/conformance``) starts a test server per scenario, then runs::

    python scripts/conformance_client.py <server url>

with ``MCP_CONFORMANCE_SCENARIO`` set to the scenario name. Exit status 0 means the client did
its part; the suite judges the wire exchange itself. ``scripts/run_conformance.py`` runs every
client scenario this way and prints the score.

Scenarios:
    initialize                            handshake, ``tools/list``, close
    tools_call                            ``tools/call add_numbers`` with two numbers
    elicitation-sep1034-client-defaults   announce ``elicitation``, open the standalone GET stream
                                          (``listen=True``: the server sends ``elicitation/create``
                                          there) and accept with each field's ``default``
    sse-retry                             a tool whose SSE stream closes before the result: the
                                          transport resumes with GET + Last-Event-ID after ``retry``
    auth/*                                not supported: yiemagent sends static headers only and has
                                          no OAuth 2.1 client; exits with status 3 and says so
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from yiemagent.mcp import MCPClient

NOT_SUPPORTED = 3
"""Exit status for a scenario yiemagent does not implement (the runner reports it as "cannot run")."""


def accept_with_defaults(params: dict[str, Any]) -> dict[str, Any]:
    """Answer ``elicitation/create``: accept, filling each requested field with its schema ``default``."""
    properties = (params.get("requestedSchema") or {}).get("properties") or {}
    content = {name: spec["default"] for name, spec in properties.items()
               if isinstance(spec, dict) and "default" in spec}
    return {"action": "accept", "content": content}


def run(scenario: str, url: str) -> int:
    """Play ``scenario`` against ``url``; return the exit status."""
    if scenario.startswith("auth/"):
        print(f"{scenario}: yiemagent has no OAuth 2.1 client (static auth headers only)", file=sys.stderr)
        return NOT_SUPPORTED
    options: dict[str, Any] = {"timeout_seconds": 10, "name": scenario or "conformance"}
    if scenario == "elicitation-sep1034-client-defaults":
        # the suite's server sends elicitation/create on the standalone GET stream, not the call's stream
        options.update(capabilities={"elicitation": {}}, listen=True,
                       request_handlers={"elicitation/create": accept_with_defaults})
    with MCPClient(url, **options) as client:
        tools = {tool["name"]: tool for tool in client.list_tools()}
        print(f"{scenario}: protocol {client.protocol_version}, tools {sorted(tools)}")
        if scenario == "tools_call":
            result = client.call_tool("add_numbers", {"a": 5, "b": 3})
        elif scenario == "elicitation-sep1034-client-defaults":
            result = client.call_tool("test_client_elicitation_defaults", {})
        elif scenario == "sse-retry":
            result = client.call_tool("test_reconnection", {})
        elif scenario == "initialize":
            return 0
        else:
            print(f"{scenario}: unknown scenario; only the handshake was done", file=sys.stderr)
            return NOT_SUPPORTED
        print(f"{scenario}: result {result}")
        return 1 if result.get("isError") else 0


def main(argv: list[str]) -> int:
    """Entry point: ``conformance_client.py [--verbose] <server url>``."""
    logging.basicConfig(level=logging.DEBUG if "--verbose" in argv else logging.WARNING, stream=sys.stderr)
    if len(argv) < 2:
        print("usage: conformance_client.py <server url>", file=sys.stderr)
        return 2
    return run(os.environ.get("MCP_CONFORMANCE_SCENARIO", ""), argv[-1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
