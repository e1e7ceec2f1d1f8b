"""Run the official MCP conformance suite's client scenarios against yiemagent and print the score.

Usage::

    python scripts/run_conformance.py [--scenario NAME ...] [--include-auth] [--timeout-seconds 30] [--json]

The suite (npm ``@modelcontextprotocol/conformance`` 0.1.11, installed by ``.ci/run`` with ``npm ci`` in
tests/node/conformance) lists its client scenarios (``conformance list``); each is run as
``conformance client --command "<python> scripts/conformance_client.py" --scenario <name>``, all in
parallel. A scenario passes when the suite reports no failed check and no warning (exit status 0).

The ``auth/*`` scenarios cannot run: they need an OAuth 2.1 client (discovery, dynamic registration,
PKCE, token exchange), and yiemagent supports only static auth headers. They are listed with that
reason; ``--include-auth`` runs them anyway (they fail at the first 401).

Prints one line per scenario and ``conformance: passed P/R runnable (T scenarios; N cannot run)``;
exits 0 when every runnable scenario passed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "node" / "conformance" / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" \
    / "index.js"
CLIENT = ROOT / "scripts" / "conformance_client.py"
CANNOT_RUN = {"auth/": "needs an OAuth 2.1 client; yiemagent has static auth headers only"}


@dataclass
class Outcome:
    """The result of one scenario."""

    scenario: str
    status: str
    """``passed``, ``failed`` or ``cannot run``."""
    checks: str = ""
    """The suite's ``Passed: a/b, ...`` line."""
    reason: str = ""
    seconds: float = 0.0
    output: str = ""
    """The suite's output (only kept when the scenario failed)."""


def suite_command() -> list[str]:
    """``node <suite>``; raises FileNotFoundError when node or the suite is missing."""
    node = shutil.which("node")
    if node is None:
        raise FileNotFoundError("node is not on PATH")
    if not SUITE.exists():
        raise FileNotFoundError(f"{SUITE} is missing: run `npm ci` in tests/node/conformance")
    return [node, str(SUITE)]


def client_scenarios() -> list[str]:
    """The client scenarios the installed suite knows, in its order."""
    listing = subprocess.run([*suite_command(), "list"], capture_output=True, text=True, timeout=60, check=True)
    scenarios: list[str] = []
    in_client = False
    for line in listing.stdout.splitlines():
        if line.startswith("Client scenarios"):
            in_client = True
        elif line and not line.startswith(" "):
            in_client = False
        elif in_client and line.strip().startswith("- "):
            scenarios.append(line.strip()[2:].strip())
    return scenarios


def why_not(scenario: str) -> str:
    """The reason ``scenario`` cannot run here, or ''."""
    return next((reason for prefix, reason in CANNOT_RUN.items() if scenario.startswith(prefix)), "")


def run_scenario(scenario: str, timeout_seconds: float = 30.0) -> Outcome:
    """Run one scenario with yiemagent's client; never raises for a failing scenario."""
    # The suite splits --command on spaces and runs it through a shell: keep the paths free of spaces.
    command = f"{sys.executable} {CLIENT}"
    started = time.monotonic()
    try:
        done = subprocess.run(
            [*suite_command(), "client", "--command", command, "--scenario", scenario,
             "--timeout", str(int(timeout_seconds * 1000))],
            capture_output=True, text=True, timeout=timeout_seconds + 30, cwd=ROOT,
            env={**os.environ, "NO_COLOR": "1"},
        )
    except subprocess.TimeoutExpired as exc:
        return Outcome(scenario, "failed", reason=f"the suite did not finish in {exc.timeout:g}s",
                       seconds=time.monotonic() - started)
    output = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    checks = next((line.strip() for line in output.splitlines() if line.startswith("Passed:")), "")
    passed = done.returncode == 0 and "OVERALL: PASSED" in output
    return Outcome(scenario, "passed" if passed else "failed", checks=checks,
                   reason="" if passed else f"exit status {done.returncode}", seconds=time.monotonic() - started,
                   output="" if passed else output[-6000:])


def run_all(scenarios: list[str] | None = None, *, include_auth: bool = False, timeout_seconds: float = 30.0,
            workers: int = 4) -> list[Outcome]:
    """Run ``scenarios`` (None: every client scenario) in parallel; the ones that cannot run are only listed."""
    names = scenarios or client_scenarios()
    outcomes: dict[str, Outcome] = {}
    runnable = []
    for name in names:
        reason = why_not(name)
        if reason and not include_auth:
            outcomes[name] = Outcome(name, "cannot run", reason=reason)
        else:
            runnable.append(name)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for outcome in pool.map(lambda name: run_scenario(name, timeout_seconds), runnable):
            outcomes[outcome.scenario] = outcome
    return [outcomes[name] for name in names]


def summary(outcomes: list[Outcome]) -> str:
    """``conformance: passed P/R runnable (T scenarios; N cannot run: reason)``."""
    runnable = [o for o in outcomes if o.status != "cannot run"]
    passed = sum(o.status == "passed" for o in runnable)
    reasons = sorted({o.reason for o in outcomes if o.status == "cannot run"})
    cannot = len(outcomes) - len(runnable)
    why = f": {'; '.join(reasons)}" if reasons else ""
    return (f"conformance: passed {passed}/{len(runnable)} runnable "
            f"({len(outcomes)} scenarios; {cannot} cannot run{why})")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scenario", action="append", help="run only this scenario (repeatable)")
    parser.add_argument("--include-auth", action="store_true", help="run the auth/* scenarios too (they fail)")
    parser.add_argument("--timeout-seconds", type=float, default=30.0)
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        outcomes = run_all(args.scenario, include_auth=args.include_auth, timeout_seconds=args.timeout_seconds)
    except (FileNotFoundError, subprocess.SubprocessError) as exc:
        print(f"conformance: cannot run at all: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([asdict(o) for o in outcomes], indent=2))
    else:
        for o in outcomes:
            detail = o.checks or o.reason
            print(f"{o.status:>10}  {o.scenario:<45} {detail}" + (f"  ({o.seconds:.1f}s)" if o.seconds else ""))
            if o.status == "failed" and o.output:
                print("            " + o.output[-2000:].replace("\n", "\n            "))
        print(summary(outcomes))
        print(f"conformance: wall time {time.monotonic() - started:.1f}s")
    return 0 if all(o.status != "failed" for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
