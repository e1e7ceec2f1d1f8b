"""The client the official MCP conformance suite drives: yiemagent's ``MCPClient`` doing what each scenario asks.

The suite (npm ``@modelcontextprotocol/conformance``) starts a test server per scenario, then runs::

    python scripts/conformance_client.py <server url>

with ``MCP_CONFORMANCE_SCENARIO`` set to the scenario name. Exit status 0 means the client did
its part; the suite judges the wire exchange itself. ``scripts/run_conformance.py`` runs every
client scenario this way and prints the score.

The wire revision is ``MCP_CONFORMANCE_PROTOCOL_VERSION`` when the suite sets it; else the client negotiates.

Scenarios:
    initialize, request-metadata          connect, ``tools/list``, close
    json-schema-ref-no-deref              the same (the ``$ref`` to a URL is never fetched)
    json-schema-2020-12-preservation      echo one tool's ``inputSchema``, as listed, through the other
    http-custom-headers                   the ``toolCalls`` of ``MCP_CONFORMANCE_CONTEXT``
    sep-2322-client-request-state, http-standard-headers, http-invalid-tool-headers
                                          call every tool ``list_tools`` kept, with placeholder arguments
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

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from yiemagent.mcp import SUPPORTED_PROTOCOL_VERSIONS, MCPClient

NOT_SUPPORTED = 3
"""Exit status for a scenario yiemagent does not implement (the runner reports it as "cannot run")."""


def accept_with_defaults(params: dict[str, Any]) -> dict[str, Any]:
    """Answer ``elicitation/create``: accept, filling each requested field with its schema ``default``."""
    properties = (params.get("requestedSchema") or {}).get("properties") or {}
    content = {name: spec["default"] for name, spec in properties.items()
               if isinstance(spec, dict) and "default" in spec}
    return {"action": "accept", "content": content}


def placeholder_arguments(tool: dict[str, Any]) -> dict[str, Any]:
    """Arguments that fit a tool's required properties (``"x"``, 0, false, {} or [] by type)."""
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") or {}
    samples = {"string": "x", "integer": 0, "number": 0, "boolean": False, "object": {}, "array": []}
    return {name: samples.get((properties.get(name) or {}).get("type"), "x") for name in schema.get("required") or []}


def context_tool_calls() -> list[dict[str, Any]]:
    """The ``toolCalls`` the suite passes in ``MCP_CONFORMANCE_CONTEXT`` (``[{"name", "arguments"}]``), or []."""
    try:
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    except ValueError:
        return []
    calls = context.get("toolCalls") if isinstance(context, dict) else None
    return [call for call in calls or [] if isinstance(call, dict) and isinstance(call.get("name"), str)]


def run(scenario: str, url: str) -> int:
    """Play ``scenario`` against ``url``; return the exit status.

    The wire revision is the one the suite asks for in ``MCP_CONFORMANCE_PROTOCOL_VERSION`` (0.2.x
    runs each requirement set "at its wire": its scenario servers speak both eras); without it the
    client negotiates (``protocol_version=None``). It declares ``elicitation`` and answers it with
    each field's default.
    """
    wire = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    if scenario.startswith("auth/"):
        print(f"{scenario}: yiemagent has no OAuth 2.1 client (static auth headers only)", file=sys.stderr)
        return NOT_SUPPORTED
    options: dict[str, Any] = {"timeout_seconds": 10, "name": scenario or "conformance",
                               "capabilities": {"elicitation": {}},
                               "request_handlers": {"elicitation/create": accept_with_defaults},
                               "protocol_version": wire if wire in SUPPORTED_PROTOCOL_VERSIONS else None}
    if scenario == "elicitation-sep1034-client-defaults":
        # the suite's server sends elicitation/create on the standalone GET stream, not the call's stream
        options["listen"] = True
    with MCPClient(url, **options) as client:
        tools = {tool["name"]: tool for tool in client.list_tools()}
        print(f"{scenario}: protocol {client.protocol_version} ({client.era}), tools {sorted(tools)}")
        calls = context_tool_calls()
        if scenario == "tools_call":
            calls = [{"name": "add_numbers", "arguments": {"a": 5, "b": 3}}]
        elif scenario == "elicitation-sep1034-client-defaults":
            calls = [{"name": "test_client_elicitation_defaults", "arguments": {}}]
        elif scenario == "sse-retry":
            calls = [{"name": "test_reconnection", "arguments": {}}]
        elif scenario in ("initialize", "request-metadata", "json-schema-ref-no-deref"):
            return 0
        elif scenario == "json-schema-2020-12-preservation":
            # echo the other tool's inputSchema, as listed, through the tool that takes a "schema" object
            echo = next(name for name, tool in tools.items()
                        if (tool.get("inputSchema") or {}).get("required") == ["schema"])
            focal = next(tool for name, tool in tools.items() if name != echo)
            calls = [{"name": echo, "arguments": {"schema": focal.get("inputSchema")}}]
        elif not calls:
            # every tool the client kept (http-invalid-tool-headers: the invalid ones are left out), in order
            calls = [{"name": name, "arguments": placeholder_arguments(tool)} for name, tool in tools.items()]
        failed = False
        for call in calls:
            result = client.call_tool(call["name"], call.get("arguments") or {})
            print(f"{scenario}: {call['name']} -> {result}")
            failed = failed or bool(result.get("isError"))
        return 1 if failed and scenario == "tools_call" else 0


def main(argv: list[str]) -> int:
    """Entry point: ``conformance_client.py [--verbose] <server url>``."""
    logging.basicConfig(level=logging.DEBUG if "--verbose" in argv else logging.WARNING, stream=sys.stderr)
    if len(argv) < 2:
        print("usage: conformance_client.py <server url>", file=sys.stderr)
        return 2
    return run(os.environ.get("MCP_CONFORMANCE_SCENARIO", ""), argv[-1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
