"""Typing: ``mypy --strict`` accepts the package and a user's file (issue 11 point 6).

The user's file is checked the way a user checks theirs: against yiemagent installed in a fresh
virtual environment with the README's editable install in ``compat`` mode (setuptools' default
editable mode uses an import hook that type checkers cannot follow; docs/getting_started.rst says so).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER_CODE = ROOT / "tests" / "typing" / "user_code.py"

mypy_api = pytest.importorskip("mypy.api", reason="mypy is part of the test extra")
pytestmark = pytest.mark.slow  # mypy on the package (seconds, minutes with a cold cache), a venv


def _mypy(*args: str) -> tuple[str, int]:
    stdout, stderr, status = mypy_api.run(["--strict", "--no-error-summary", "--cache-dir", str(ROOT / ".mypy_cache"),
                                           *args])
    return stdout + stderr, status


@pytest.mark.timeout(600)  # a cold mypy cache on a busy 2-core machine
def test_the_package_is_mypy_strict_clean():
    """``mypy --strict yiemagent/`` reports nothing (CI runs this test)."""
    out, status = _mypy(str(ROOT / "yiemagent"))
    assert status == 0, out


@pytest.mark.timeout(600)
def test_a_user_file_type_checks_and_runs(tmp_path):
    """The documented uses (``UserMessage("hi")``, ``AgentToolResult("text")``, ``@tool(name=...)`` keeping the
    function's signature) type-check against an installed yiemagent, and the file runs.
    """
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False, system_site_packages=True)
    python = env_dir / ("Scripts" if os.name == "nt" else "bin") / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode:
        pytest.skip("pip is not available")
    install = subprocess.run(
        [*pip, "install", "-q", "--no-deps", "-e", str(ROOT),
         "--config-settings", "editable_mode=compat"],
        capture_output=True, text=True, timeout=300,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    work = tmp_path / "user"
    work.mkdir()
    shutil.copy(USER_CODE, work / "user_code.py")  # outside the repository, as a user's file is
    out, status = _mypy("--python-executable", str(python), str(work / "user_code.py"))
    assert status == 0, out
    ran = subprocess.run([sys.executable, str(work / "user_code.py")], capture_output=True, text=True, timeout=60,
                         cwd=work)
    assert ran.returncode == 0 and ran.stdout.strip() == "done", ran.stderr[-2000:]


def test_a_type_error_in_user_code_is_reported(tmp_path):
    """The check can fail: a wrong argument type against the decorated tool is an error."""
    bad = tmp_path / "bad.py"
    bad.write_text("from yiemagent import tool\n\n@tool\ndef add(a: int, b: int = 1) -> int:\n"
                   "    '''Add.'''\n    return a + b\n\nx: str = add(1, 2)\n")
    out, status = _mypy("--python-executable", sys.executable, str(bad))
    assert status == 1 and "Incompatible types in assignment" in out, out


def test_a_typo_in_an_answer_key_or_status_is_a_type_error(tmp_path):
    """Issue 20 point 5: answers are typed (``yiemagent.Answer``, a TypedDict): ``answer["status"]`` is the
    ``AnswerStatus`` Literal, a misspelt key is an error, so is comparing the status with a status that does
    not exist (``--strict`` has ``--strict-equality``), and a stream item narrowed by ``type`` has its fields.
    """
    user = tmp_path / "answers_user.py"
    user.write_text(
        "from yiemagent import Agent\n"
        "from yiemagent.testing import ScriptedLLM\n\n"
        "agent = Agent(ScriptedLLM([]))\n"
        "answer = agent.ask('hi')\n"
        "reveal_type(answer['status'])\n"
        "print(answer['stauts'])\n"
        "if answer['status'] == 'complete':\n"
        "    pass\n"
        "for item in agent.stream('hi'):\n"
        "    if not isinstance(item, dict) and item.type == 'message_update':\n"
        "        reveal_type(item.delta_type)\n"
        "    if not isinstance(item, dict):\n"
        "        print(item.delta)\n")
    out, status = _mypy("--python-executable", sys.executable, str(user))
    assert status == 1, out
    revealed = "answers_user.py:6: note: Revealed type is \"Literal['completed']"
    assert revealed in out and "'awaiting_approval'" in out, out
    assert "answers_user.py:7: error: TypedDict \"Answer\" has no key \"stauts\"" in out, out
    assert "answers_user.py:8: error: Non-overlapping equality check" in out, out
    narrowed = next(line for line in out.splitlines() if "answers_user.py:12: note: Revealed type is" in line)
    assert "'text'" in narrowed and "'tool_call'" in narrowed, out  # item.type narrowed it to MessageUpdateEvent
    assert "answers_user.py:14: error: Item \"AgentStartEvent\" of" in out, out  # delta only on message_update
    errors = {line.split(":")[1] for line in out.splitlines() if ": error:" in line}
    assert errors == {"7", "8", "14"}, out
