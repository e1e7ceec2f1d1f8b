"""Ctrl-C at a terminal approval prompt inside ``before_tool_call`` exits at once (issue 15, a new user's trial).

Before: with ``input()`` in the hook, Ctrl-C in a cold ``ask()`` was taken as the hook's error and the
run went on (the program did not stop); with the agent started, the exit waited for the thread blocked
in ``input()`` and ended in "Fatal Python error: could not acquire lock for <stdin>". Now a
``KeyboardInterrupt`` in the main thread aborts the run, and ``yiemagent.ask_user`` is a prompt that
``abort_event`` ends. Real terminal: the script runs in tmux (tests/terminal.py), Ctrl-C is a key.
The same kind in a peer: SWE-agent/mini-swe-agent PR #215 ("console.status suppresses KeyboardInterrupt").
"""

from __future__ import annotations

import pytest

from tests.helpers import PYTHON
from tests.terminal import Terminal, have_tmux

pytestmark = [pytest.mark.slow,  # a real terminal: tmux
              pytest.mark.skipif(not have_tmux(), reason="tmux is not installed (.ci/run installs it)")]


@pytest.mark.parametrize(("mode", "prompt"), [
    ("cold", "ask_user"), ("started", "ask_user"), ("with", "ask_user"), ("cold", "input"),
])
def test_mini_swe_agent_215_ctrl_c_at_an_approval_prompt_exits_at_once_without_running_the_tool(mode, prompt):
    with Terminal([PYTHON, "-m", "tests.apps.approval_prompt", mode, prompt]) as term:
        term.wait_for(r"run remove\? \[y/N\]")
        term.keys("C-c")
        screen = term.wait_for(r"KeyboardInterrupt", timeout_seconds=8)
        assert "Fatal Python error" not in screen
        printed = [line for line in screen.splitlines() if line.startswith(("REMOVED ", "answer: ", "done"))]
        assert printed == [], screen  # the tool did not run and the script did not go on


def test_ask_user_returns_the_typed_line_and_the_tool_runs():
    with Terminal([PYTHON, "-m", "tests.apps.approval_prompt", "started", "ask_user"]) as term:
        term.wait_for(r"run remove\? \[y/N\]")
        term.type("y")
        screen = term.wait_for(r"done")
        assert "REMOVED a.txt" in screen and "answer: finished" in screen


def test_ask_user_reads_piped_answers_line_by_line_and_leaves_the_rest_to_input():
    """Found by a new user's trial: from a pipe, ``ask_user`` read 4096 bytes and dropped what followed the
    first line, so the second prompt got None and the program's own ``input()`` met the end of input.
    """
    import subprocess

    script = ("import threading\nfrom yiemagent import ask_user\nev = threading.Event()\n"
              "print(repr(ask_user('q1? ', ev)), repr(ask_user('q2? ', ev)), repr(input('q3? ')))\n")
    done = subprocess.run([PYTHON, "-c", script], input="yes\nno\nmaybe\n", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("'yes' 'no' 'maybe'")


def test_ask_user_keeps_lines_typed_ahead_for_the_next_prompt():
    script = ("import threading, time\nfrom yiemagent import ask_user\nev = threading.Event()\n"
              "time.sleep(1.5)\nprint('A=' + repr(ask_user('q1? ', ev)))\nprint('B=' + repr(ask_user('q2? ', ev)))\n")
    with Terminal([PYTHON, "-c", script]) as term:
        term.type("first")  # typed before any prompt: both lines wait in the terminal
        term.type("second")
        screen = term.wait_for(r"B=")
        assert "A='first'" in screen and "B='second'" in screen
