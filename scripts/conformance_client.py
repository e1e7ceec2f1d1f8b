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
    auth/*                                ``MCPClient(url, auth=OAuth(...))`` (``yiemagent.mcp.auth``):
                                          connect, list and call the tools; the login runs on the
                                          server's 401 with the headless redirect handler. The
                                          client's configuration, as a real one's, comes from
                                          ``MCP_CONFORMANCE_CONTEXT``: ``client_id``/``client_secret``
                                          (pre-registered; with ``issuer`` bound to it), a
                                          ``private_key_pem`` (client_credentials with
                                          private_key_jwt); a client secret without a login
                                          (``auth/client-credentials-*``) is client_credentials. Its
                                          Client ID Metadata Document URL is the suite's
                                          (``CIMD_URL``). A refused login (an issuer or resource
                                          mismatch) exits with status 1. Extensions that need
                                          other grants (enterprise-managed authorization, workload
                                          identity federation, cross-app access, DPoP) exit with 3.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from yiemagent.exceptions import MCPAuthorizationError
from yiemagent.mcp import SUPPORTED_PROTOCOL_VERSIONS, MCPClient
from yiemagent.mcp.auth import HeadlessRedirectHandler, OAuth

NOT_SUPPORTED = 3
"""Exit status for a scenario yiemagent does not implement (the runner reports it as "cannot run")."""
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The Client ID Metadata Document URL the suite's authorization servers expect of this client."""
REDIRECT_URI = "http://localhost:3000/callback"
OTHER_GRANTS = ("idp_id_token", "valid_jwt", "idp_issuer")
"""Context keys of extension grants yiemagent does not implement (token exchange, JWT bearer assertions)."""


def conformance_context() -> dict[str, Any]:
    """``MCP_CONFORMANCE_CONTEXT`` as a dict ({} if unset or not a JSON object)."""
    try:
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    except ValueError:
        return {}
    return context if isinstance(context, dict) else {}


def oauth_for(scenario: str, context: dict[str, Any]) -> OAuth | None:
    """The ``OAuth`` a real client would be configured with for this server; None if it needs another grant."""
    if any(key in context for key in OTHER_GRANTS) or "dpop" in scenario or "cross-app" in scenario:
        return None
    if context.get("private_key_pem"):
        return OAuth(client_id=context.get("client_id"), grant_type="client_credentials",
                     private_key=context["private_key_pem"], token_endpoint_auth_method="private_key_jwt",
                     signing_algorithm=context.get("signing_algorithm") or "ES256", timeout_seconds=10)
    if scenario.startswith("auth/client-credentials"):
        return OAuth(client_id=context.get("client_id"), client_secret=context.get("client_secret"),
                     grant_type="client_credentials", timeout_seconds=10)
    return OAuth(client_id=context.get("client_id"), client_secret=context.get("client_secret"),
                 client_issuer=context.get("issuer"), client_metadata_url=CIMD_URL, redirect_uri=REDIRECT_URI,
                 redirect_handler=HeadlessRedirectHandler(timeout_seconds=10), timeout_seconds=10)


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
    auth = None
    if scenario.startswith("auth/"):
        auth = oauth_for(scenario, conformance_context())
        if auth is None:
            print(f"{scenario}: an extension grant yiemagent does not implement", file=sys.stderr)
            return NOT_SUPPORTED
    options: dict[str, Any] = {"timeout_seconds": 10, "name": scenario or "conformance",
                               "capabilities": {"elicitation": {}},
                               "request_handlers": {"elicitation/create": accept_with_defaults},
                               "protocol_version": wire if wire in SUPPORTED_PROTOCOL_VERSIONS else None,
                               "auth": auth}
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
    try:
        return run(os.environ.get("MCP_CONFORMANCE_SCENARIO", ""), argv[-1])
    except MCPAuthorizationError as exc:
        print(f"authorization refused: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
