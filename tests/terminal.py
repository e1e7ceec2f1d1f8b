"""A real terminal for tests: a program run in a detached tmux session, driven by keys, read from the screen.

::

    with Terminal([PYTHON, "-m", "yiemagent.cli", "chat"], env={"A": "1"}) as term:
        term.wait_for(r"you> $")
        term.type("hello")              # the text, then Enter
        term.keys("C-c")                # tmux key names: C-c, C-d, Up, Enter
        screen = term.wait_for(r"\\[completed")

Each terminal has its own tmux server (``tmux -L <unique socket>``), 120x40, killed at the end, so
tests never touch another tmux. After the program exits the pane shows ``[exit <status>]``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence

__all__ = ["Terminal", "have_tmux"]


def have_tmux() -> bool:
    """True when the ``tmux`` program is installed (``.ci/run`` installs it)."""
    return shutil.which("tmux") is not None


class Terminal:
    """A program in a 120x40 tmux pane."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
                 width: int = 120, height: int = 40) -> None:
        self.socket = f"yiemagent-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        variables = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
        # sh would die of the Ctrl-C meant for the program (same process group): a trap keeps it (the program
        # still gets the default SIGINT, unlike with an ignored one)
        script = f"trap 'true' INT; cd {shlex.quote(cwd or os.getcwd())} && env {variables} {shlex.join(argv)}; " \
                 'echo "[exit $?]"; sleep 3600'
        self._tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), "sh", "-c", script)
        self._tmux("set-option", "-t", "t", "history-limit", "5000")

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10,
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:2])} failed: {done.stderr.strip()}")
        return done.stdout

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill this terminal's tmux server (and the program in it)."""
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10, check=False)

    def keys(self, *names: str) -> None:
        """Press keys by tmux name (``C-c``, ``C-d``, ``Up``, ``Enter``)."""
        self._tmux("send-keys", "-t", "t", *names)

    def type(self, text: str, *, enter: bool = True) -> None:
        """Type ``text`` literally, then Enter."""
        self._tmux("send-keys", "-t", "t", "-l", text)
        if enter:
            self.keys("Enter")

    def screen(self) -> str:
        """The pane's text with its scrollback, wrapped lines joined, trailing spaces and blank lines dropped."""
        text = self._tmux("capture-pane", "-p", "-J", "-t", "t", "-S", "-5000")
        return "\n".join(line.rstrip() for line in text.splitlines()).rstrip("\n")

    def visible(self) -> str:
        """Only what is on the screen now (40 lines)."""
        return self._tmux("capture-pane", "-p", "-t", "t").rstrip("\n")

    def wait_for(self, pattern: str, timeout_seconds: float = 60.0, *, count: int = 1) -> str:
        """Wait until ``pattern`` (a regex, multiline) occurs ``count`` times on the screen; return the screen.

        Raises:
            AssertionError: not within ``timeout_seconds``; the message shows the screen.
        """
        deadline = time.monotonic() + timeout_seconds
        regex = re.compile(pattern, re.MULTILINE)
        while True:
            screen = self.screen()
            if len(regex.findall(screen)) >= count:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} (x{count}) not on the screen within {timeout_seconds:g}s:\n{screen}")
            time.sleep(0.1)
