"""Issue 25 point 6: a quick lane (``python -m pytest -m "not slow"``, ~2 minutes) and a full one.

tests/conftest.py marks ``slow`` the tests that start a process or take seconds: by fixture
(``SLOW_FIXTURES``), by a ``postgres`` parameter, by the ``model``/``node``/``browser`` markers and by
folder (tests/property); tests that start a process themselves say ``@pytest.mark.slow``. Its autouse
``quick_tests_start_no_process`` fails a test of the quick lane that starts a process anyway. These
tests run pytest in a process of its own (so they are ``slow`` themselves), once on a file written here
and once on modules of the suite.
"""

from __future__ import annotations

import configparser
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = '''
import subprocess
import sys

import pytest


@pytest.fixture
def sdk_server():  # a stand-in under a name of SLOW_FIXTURES: the hook reads the name
    return "http://127.0.0.1:1/mcp"


def test_uses_a_server_fixture(sdk_server):
    pass


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_backend(backend):
    pass


@pytest.mark.node
def test_node_marker():
    pass


def test_starts_a_process_unmarked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.slow
def test_starts_a_process_marked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_quick():
    pass
'''


def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest`` in the checkout, with the suite's conftest as a plugin and setup.cfg's options."""
    return subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "setup.cfg"), "--rootdir", str(ROOT),
                           "-p", "no:cacheprovider", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_slow_is_a_registered_marker_and_markers_are_strict() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    section = config["tool:pytest"]
    assert "--strict-markers" in section["addopts"].split()
    assert any(line.strip().startswith("slow:") for line in section["markers"].splitlines())


@pytest.mark.slow  # runs pytest twice in a process of its own
def test_the_hook_marks_by_fixture_parameter_and_marker_and_the_guard_fails_a_quick_test_that_starts_a_process(
        tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(textwrap.dedent(PROBE), encoding="utf-8")
    quick = _pytest("-p", "tests.conftest", "-m", "not slow", "-rA", str(probe))
    out = quick.stdout + quick.stderr
    assert quick.returncode == 1, out
    assert "3 passed, 4 deselected, 1 error" in out, out  # of 7: the 4 slow ones are left out
    passed = {line.split("::", 1)[1] for line in out.splitlines() if line.startswith("PASSED ")}
    assert passed == {"test_backend[sqlite]", "test_starts_a_process_unmarked", "test_quick"}, out
    assert "ERROR ::test_starts_a_process_unmarked" in out  # at teardown: the guard
    assert "::test_starts_a_process_unmarked is in the quick lane but started 1 process(es)" in out
    slow = _pytest("-p", "tests.conftest", "-m", "slow", "-rA", str(probe))
    out = slow.stdout + slow.stderr
    assert slow.returncode == 0, out
    passed = {line.split("::", 1)[1] for line in out.splitlines() if line.startswith("PASSED ")}
    assert passed == {"test_uses_a_server_fixture", "test_backend[postgres]", "test_node_marker",
                      "test_starts_a_process_marked"}, out


@pytest.mark.slow  # collects the suite's modules in a process of its own
def test_the_quick_lane_leaves_out_servers_postgres_property_tests_and_typing_and_keeps_the_rest() -> None:
    paths = ["tests/mcp/test_everything.py", "tests/mcp/test_http_client.py", "tests/store/test_contract.py",
             "tests/property/test_roundtrip.py", "tests/test_typing.py", "tests/test_config.py",
             "tests/workers/test_gunicorn.py", "tests/test_chat.py"]
    done = _pytest("--collect-only", "-q", "-m", "not slow", *paths)
    assert done.returncode == 0, done.stdout + done.stderr
    quick = [line for line in done.stdout.splitlines() if "::" in line]
    for slow in ("test_everything.py", "[sdk_server", "[postgres]", "tests/property/", "test_typing.py",
                 "test_gunicorn.py", "test_chat.py", "test_http_client.py::test_handshake_sets",
                 "test_processes_enqueueing_at_once_lose_and_duplicate_nothing",
                 "test_claude_code_80197_the_expanded_value_reaches_the_stdio_server"):
        assert not [nodeid for nodeid in quick if slow in nodeid], slow
    assert any("test_contract.py" in nodeid and nodeid.endswith("[sqlite]") for nodeid in quick)
    assert any(nodeid.startswith("tests/test_config.py::test_issue8_point7") for nodeid in quick)
