"""Start-up cost (issue 26 point 4), checked by counting modules, not by timing.

``import yiemagent`` loads the exceptions, the text policy and the lazy-name machinery; every public name
loads its module on first use (PEP 562). An MCP client listing tools over HTTP loads neither the OAuth flow,
the message types (``dataclasses_json``), ``jsonschema`` nor the loop. Each check runs in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAZY_AFTER_IMPORT = [
    "yiemagent.agent", "yiemagent.cli", "yiemagent.context.compaction", "yiemagent.loop.run",
    "yiemagent.loop.tracing", "yiemagent.mcp.auth", "yiemagent.mcp.auth.oauth", "yiemagent.mcp.client",
    "yiemagent.mcp.era", "yiemagent.messages.types", "yiemagent.models", "yiemagent.store", "yiemagent.store.sqlite",
    "yiemagent.store.postgres", "yiemagent.tools", "yiemagent.workers",
    "dataclasses_json", "marshmallow", "jsonschema", "referencing", "requests", "urllib3", "tenacity", "sqlite3",
    "opentelemetry", "http.server", "uuid", "asyncio", "psycopg",
]
"""Modules ``import yiemagent`` must not load (the third-party ones are loaded by what uses them)."""

LAZY_FOR_MCP = [
    "yiemagent.mcp.auth.oauth", "yiemagent.mcp.auth.discovery", "yiemagent.mcp.auth.tokens",
    "yiemagent.mcp.bridge", "yiemagent.mcp.stdio", "yiemagent.messages.types", "yiemagent.tools",
    "yiemagent.loop.events", "yiemagent.loop.run", "yiemagent.store", "yiemagent.agent",
    "dataclasses_json", "marshmallow", "jsonschema", "tenacity", "sqlite3", "uuid", "asyncio", "http.server",
]
"""Modules ``from yiemagent.mcp import MCPClient`` must not load."""


def _loaded(code: str) -> set[str]:
    """The ``sys.modules`` names after running ``code`` in a fresh interpreter (``-I``-like: this checkout first)."""
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def _offenders(loaded: set[str], lazy: list[str]) -> list[str]:
    return sorted(name for name in lazy if any(m == name or m.startswith(name + ".") for m in loaded))


@pytest.mark.slow  # starts a fresh interpreter
def test_import_yiemagent_loads_no_store_mcp_oauth_loop_or_heavy_dependency():
    loaded = _loaded("import yiemagent")
    assert _offenders(loaded, LAZY_AFTER_IMPORT) == []
    ours = sorted(m for m in loaded if m.startswith("yiemagent"))
    assert len(ours) <= 8, ours  # yiemagent, __version__, exceptions, textpolicy, _internal{,.lazy,.moved}


@pytest.mark.slow  # starts a fresh interpreter
def test_the_mcp_client_loads_only_the_http_client_path():
    loaded = _loaded("from yiemagent.mcp import MCPClient")
    assert _offenders(loaded, LAZY_FOR_MCP) == []
    assert "requests" in loaded and "yiemagent.mcp.http" in loaded


@pytest.mark.slow  # starts a fresh interpreter
def test_every_public_name_resolves_and_is_listed():
    """Each name of each package's ``__all__`` resolves lazily to the object of its defining module."""
    code = """
import importlib, warnings
import yiemagent
assert set(yiemagent.__all__) <= set(dir(yiemagent))
for package in ["yiemagent", "yiemagent.agent", "yiemagent.loop", "yiemagent.mcp", "yiemagent.mcp.auth",
                "yiemagent.messages", "yiemagent.store", "yiemagent.tools", "yiemagent.workers"]:
    module = importlib.import_module(package)
    assert set(module.__all__) <= set(dir(module)), package
    for name in module.__all__:
        assert getattr(module, name) is not None, (package, name)
from yiemagent import Agent, MCPClient, SQLiteStore, from_openai_response, parse_response, tool
from yiemagent.agent.agent import Agent as agent_class
from yiemagent.store.sqlite import SQLiteStore as store_class
assert Agent is agent_class and SQLiteStore is store_class and from_openai_response is parse_response
assert yiemagent.mcp.client.MCPClient is MCPClient  # a subpackage and its modules as attributes
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    assert yiemagent.compaction is importlib.import_module("yiemagent.context.compaction")
assert any(issubclass(w.category, DeprecationWarning) for w in caught)
try:
    yiemagent.no_such_name
except AttributeError:
    pass
else:
    raise AssertionError("an unknown name resolved")
"""
    assert "yiemagent.store.sqlite" in _loaded(code)


LAZY_FOR_AGENT = [
    "yiemagent.mcp.client", "yiemagent.mcp.era", "yiemagent.mcp.http", "yiemagent.mcp.stdio", "yiemagent.mcp.auth",
    "yiemagent.mcp.callbacks", "yiemagent.mcp.sampling", "yiemagent.mcp.elicitation", "yiemagent._internal.retry",
    "yiemagent.store.sqlite", "yiemagent.store.postgres", "yiemagent.store.durable", "yiemagent.store.journal",
    "yiemagent.store.branching", "yiemagent.models", "yiemagent.cli",
    "requests", "urllib3", "tenacity", "regex", "http.cookiejar", "sqlite3", "asyncio", "http.server",
    "opentelemetry",
]
"""Modules ``from yiemagent import Agent, tool`` must not load: an agent without MCP servers, a store or a
pattern to check needs no MCP client, HTTP stack, retry policy, ``regex`` or database driver (issue 34 point 2)."""


@pytest.mark.slow  # starts a fresh interpreter
def test_the_first_line_of_a_script_loads_no_mcp_client_http_stack_or_store_driver():
    loaded = _loaded("from yiemagent import Agent, tool")
    assert _offenders(loaded, LAZY_FOR_AGENT) == []
    ours = sorted(m for m in loaded if m.startswith("yiemagent"))
    assert len(ours) <= 91, (len(ours), ours)  # 125 before issue 34 (the MCP client, its transports, retry, the store)
    assert len(loaded) <= 355, len(loaded)  # 508 before: requests, urllib3, tenacity, http.cookiejar, regex


@pytest.mark.slow  # starts a fresh interpreter
def test_an_agent_with_an_mcp_server_still_loads_the_client_when_it_is_given():
    loaded = _loaded("from yiemagent import Agent\n"
                     "agent = Agent(lambda m, t: {'role': 'assistant', 'content': 'ok'},"
                     " mcp_servers=['http://127.0.0.1:9/mcp'])\n"
                     "assert agent.ask('hi')['content'] == 'ok'\nagent.shutdown()")
    assert "yiemagent.mcp.client" in loaded and "requests" in loaded
