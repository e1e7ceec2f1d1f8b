"""The official conformance suite's *server* scenarios against ``MCPServer``, at both revisions (issue 28 point 4).

tests/servers/conformance_server.py (an ``MCPServer`` under werkzeug, both eras on one endpoint) is started
in a process and ``scripts/run_conformance.py``'s server mode (``run_server``: ``conformance server --url ...
--requirements <revision>``, npm ``@modelcontextprotocol/conformance`` 0.2.0-alpha.12 under Node 24) tests
it: once at 2025-11-25 (the ``initialize`` handshake, sessions) and once at 2026-07-28 (stateless, ``_meta``,
``input_required``). Each list below is exact: a scenario that starts passing or failing fails the test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import PYTHON, SERVERS, free_port, process_output, start_process, stop_process, wait_for_port
from tests.mcp.test_conformance import load_runner

pytestmark = [pytest.mark.node, pytest.mark.slow]

PASSING_2025_11_25 = [
    "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list", "tools-call-simple-text",
    "tools-call-image", "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content",
    "tools-call-with-logging", "tools-call-error", "tools-call-with-progress", "tools-call-sampling",
    "tools-call-elicitation", "elicitation-sep1034-defaults", "server-sse-multiple-streams",
    "elicitation-sep1330-enums", "resources-list", "resources-read-text", "resources-read-binary",
    "resources-templates-read", "resources-subscribe", "resources-unsubscribe", "prompts-list", "prompts-get-simple",
    "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image", "dns-rebinding-protection",
    # run unscored at 2025-11-25 (added after the release, or pending), passing too:
    "server-session-lifecycle", "json-schema-2020-12", "server-sse-polling",
]
"""Every scenario that passes at 2025-11-25, in the suite's order."""
NOT_SUPPORTED_2025_11_25: dict[str, str] = {}
"""Scenarios of the 2025-11-25 requirement set not supported yet, and why: none (resource subscriptions came with
the session's GET stream)."""

PASSING_2026_07_28 = [
    "server-stateless", "completion-complete", "tools-list", "tools-call-simple-text", "tools-call-image",
    "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
    "tools-call-with-progress", "server-sse-multiple-streams", "resources-list", "resources-read-text",
    "resources-read-binary", "resources-templates-read", "sep-2164-resource-not-found", "prompts-list",
    "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
    "dns-rebinding-protection", "caching", "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling", "input-required-result-basic-list-roots",
    "input-required-result-request-state", "input-required-result-multiple-input-requests",
    "input-required-result-multi-round", "input-required-result-missing-input-response",
    "input-required-result-non-tool-request", "input-required-result-result-type",
    "input-required-result-unsupported-methods", "input-required-result-tampered-state",
    "input-required-result-capability-check", "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
    # run unscored at 2026-07-28, passing too ("tasks-status-notifications" runs no check without the
    # tasks extension: the suite counts it passed, 0/0):
    "tasks-status-notifications", "json-schema-2020-12", "http-header-validation",
    "http-custom-header-server-validation",
]
"""Every scenario that passes at 2026-07-28, in the suite's order: every scored one."""
TASKS = "the io.modelcontextprotocol/tasks extension (SEP-2663: tasks/get, CreateTaskResult) is not served"
NOT_SUPPORTED_2026_07_28 = {name: TASKS for name in (
    "tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
    "tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-required-task-error",
    "tasks-mrtr-composition")}
"""Scenarios the 2026-07-28 run fails, and why: all unscored (an extension)."""


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """The conformance fixture server in a process: its URL."""
    port = free_port()
    process = start_process([PYTHON, str(SERVERS / "conformance_server.py"), "--port", str(port)])
    try:
        wait_for_port(port, process=process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        log = process_output(process)
        stop_process(process)
        print(f"server log:\n{log[-4000:]}")


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("revision", "passing", "failing", "scored_failures"), [
    ("2025-11-25", PASSING_2025_11_25, NOT_SUPPORTED_2025_11_25, True),
    ("2026-07-28", PASSING_2026_07_28, NOT_SUPPORTED_2026_07_28, False),
])
def test_server_scenarios(served: str, revision: str, passing: list[str], failing: dict[str, str],
                          scored_failures: bool) -> None:
    runner = load_runner()
    if not runner.SUITE.exists():
        pytest.skip("the conformance suite is not installed; the test run installs it (npm ci)")
    outcomes, output = runner.run_server(served, revision, timeout_seconds=120)
    passed = [o.scenario for o in outcomes if o.status == "passed"]
    failed = {o.scenario for o in outcomes if o.status != "passed"}
    assert passed == passing, output[-4000:]
    assert failed == set(failing), output[-4000:]
    assert all(o.scored == scored_failures for o in outcomes if o.scenario in failing)
    assert "warnings" in outcomes[0].checks and all(o.checks.endswith(", 0 warnings") for o in outcomes
                                                    if o.status == "passed")
