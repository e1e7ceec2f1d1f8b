"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance`` 0.1.11) against yiemagent's client.

Runs every client scenario that can run here through scripts/run_conformance.py (in parallel, ~3 s);
the ``auth/*`` scenarios need an OAuth 2.1 client, which yiemagent does not have.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.node

RUNNER = Path(__file__).resolve().parents[2] / "scripts" / "run_conformance.py"
RUNNABLE = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]


def load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_conformance", RUNNER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runner() -> ModuleType:
    module = load_runner()
    if not module.SUITE.exists():
        pytest.skip(f"{module.SUITE} is missing; run `npm ci` in tests/node/conformance (as .ci/run does)")
    return module


def test_every_client_scenario_except_auth_is_runnable_here(runner):
    """The suite's 23 client scenarios: 4 yiemagent can play, 19 ``auth/*`` that need OAuth."""
    scenarios = runner.client_scenarios()
    assert len(scenarios) == 23
    assert [s for s in scenarios if not runner.why_not(s)] == RUNNABLE
    assert all(s.startswith("auth/") for s in scenarios if runner.why_not(s))


def test_yiemagent_passes_every_runnable_conformance_scenario(runner):
    """Official suite: handshake, tools/call, elicitation with defaults over the standalone GET stream, and
    SSE resumption with ``Last-Event-ID`` at the ``retry`` time; each with no failed check and no warning.
    """
    outcomes = runner.run_all(RUNNABLE, timeout_seconds=30)
    failed = {o.scenario: o.output for o in outcomes if o.status != "passed"}
    assert failed == {}, "\n\n".join(f"{name}:\n{output}" for name, output in failed.items())
    assert [o.checks.split(",")[0] for o in outcomes] == [
        "Passed: 1/1", "Passed: 1/1", "Passed: 5/5", "Passed: 3/3"]
