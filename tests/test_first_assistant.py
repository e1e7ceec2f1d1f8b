"""docs/guides/first_assistant.rst, run as written (issue 20, point 2).

The guide's two files (``mcp.json`` and ``assistant.py``, the code blocks with those captions) are
taken from the .rst and run unchanged in a fresh directory, so the page cannot drift from the code:
a real ``python assistant.py`` process, the example weather server over stdio (official ``mcp``
SDK, started from the config file) and the scripted OpenAI-compatible server
(tests/servers/scripted_openai_server.py: it asks for ``get_weather`` when the question is about
the weather and then answers ``The tool said: <result>``, streamed word by word). ``python`` in
the config file is this interpreter (its directory first on ``PATH``).
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import time
from pathlib import Path

from tests.helpers import PYTHON

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guides" / "first_assistant.rst"


def guide_files() -> dict[str, str]:
    """``{caption: code}`` of the guide's ``.. code-block::`` directives that have a ``:caption:``."""
    text = GUIDE.read_text(encoding="utf-8")
    files = {}
    for match in re.finditer(r"^\.\. code-block:: \w+\n   :caption: (\S+)\n\n((?:   .*\n|\n)+)", text, re.M):
        lines = match.group(2).rstrip("\n").split("\n")
        files[match.group(1)] = "\n".join(line[3:] for line in lines) + "\n"
    return files


def test_the_guide_has_a_config_file_and_about_40_lines_of_code() -> None:
    files = guide_files()
    assert set(files) == {"mcp.json", "assistant.py"}
    assert "weather" in json.loads(files["mcp.json"])["mcpServers"]
    code = [line for line in files["assistant.py"].splitlines() if line.strip()]
    assert 25 <= len(code) <= 45, len(code)
    compile(files["assistant.py"], "assistant.py", "exec")


def prepare(folder: Path, base_url: str) -> dict[str, str]:
    """Write the guide's files into ``folder``; the environment a reader would have."""
    for name, code in guide_files().items():
        (folder / name).write_text(code, encoding="utf-8")
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "YIEMAGENT_MODEL": "scripted",
           "PATH": f"{Path(PYTHON).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    env.pop("OPENAI_API_KEY", None)
    return env


def run_guide(folder: Path, base_url: str, typed: str) -> subprocess.CompletedProcess[str]:
    env = prepare(folder, base_url)
    return subprocess.run([PYTHON, "assistant.py", "What is the weather in Paris?"], cwd=folder, env=env,
                          input=typed, capture_output=True, text=True, timeout=60)


def test_the_first_assistant_asks_then_streams_the_answer_from_the_mcp_tool(
        scripted_model: tuple[str, Path], tmp_path: Path) -> None:
    base_url, log = scripted_model
    done = run_guide(tmp_path, base_url, typed="y\n")
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "Run get_weather {'city': 'Paris'}? [y/N] " in out
    # the streamed text deltas, then the status line; no tool-call argument JSON among them
    answer = out.split("[y/N] ", 1)[1]
    assert answer.strip().splitlines() == [
        "The tool said: Weather in Paris: Sunny, 21 °C, light wind from the west (demo data).", "[completed]"]
    assert '"city"' not in answer
    requests = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert requests and all(r["stream"] for r in requests)
    assert {"to_fahrenheit", "get_weather", "get_time"} <= set(requests[-1]["tools"])  # local and MCP tools


def test_the_first_assistant_blocks_the_call_when_the_user_says_no(
        scripted_model: tuple[str, Path], tmp_path: Path) -> None:
    done = run_guide(tmp_path, scripted_model[0], typed="n\n")
    assert done.returncode == 0, done.stderr[-2000:]
    answer = done.stdout.split("[y/N] ", 1)[1]
    assert "the user did not approve it" in answer
    assert "Sunny" not in answer  # the tool did not run
    assert answer.strip().endswith("[completed]")


def process_state(pid: int) -> str:
    """The process's state letter and each thread's kernel wait channel (for a failure message)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        tasks = {task.name: (task / "wchan").read_text() for task in Path(f"/proc/{pid}/task").iterdir()}
    except OSError as exc:
        return f"unreadable ({exc})"
    return f"state {state}, threads {tasks}"


def test_llm_agents_from_scratch_712_end_of_input_at_the_approval_prompt_blocks_the_call(
        scripted_model: tuple[str, Path], tmp_path: Path) -> None:
    """nerdai/llm-agents-from-scratch#712 made an approval prompt that hits end of input (or Ctrl-C)
    approve the call. The guide's hook treats "no answer" as no: the call is blocked, the run goes on.
    """
    done = run_guide(tmp_path, scripted_model[0], typed="")
    assert done.returncode == 0, done.stderr[-2000:]
    answer = done.stdout.split("[y/N] ", 1)[1]
    assert "the user did not approve it" in answer
    assert "Sunny" not in answer
    assert answer.strip().endswith("[completed]")


def test_pieces_cli_agent_136_ctrl_c_at_the_approval_prompt_ends_the_program_and_runs_nothing(
        scripted_model: tuple[str, Path], tmp_path: Path) -> None:
    """pieces-app/cli-agent#136: Ctrl-C at a prompt froze the program until the terminal was killed. The
    guide's hook respects ``abort_event``: at a terminal prompt, Ctrl-C (SIGINT) ends the program within
    seconds and the call is not run (nerdai/llm-agents-from-scratch#712 approved it instead); a hook
    calling ``input()`` would leave the agent's thread, and the exit, waiting for a line.
    """
    env = prepare(tmp_path, scripted_model[0])
    leader, follower = pty.openpty()
    process = subprocess.Popen([PYTHON, "assistant.py", "What is the weather in Paris?"], cwd=tmp_path, env=env,
                               stdin=follower, stdout=follower, stderr=follower, start_new_session=True)
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while b"[y/N]" not in seen and time.monotonic() < deadline and process.poll() is None:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(leader, 4096)
                except OSError:
                    break
        assert b"Run get_weather" in seen, seen.decode(errors="replace")[-2000:]
        start = time.monotonic()
        os.kill(process.pid, signal.SIGINT)
        while process.poll() is None and time.monotonic() - start < 20:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(leader, 4096)
                except OSError:
                    pass
        assert process.poll() is not None, (f"still running 20 s after Ctrl-C: {process_state(process.pid)}\n"
                                            f"{seen.decode(errors='replace')[-3000:]}")
        assert b"KeyboardInterrupt" in seen
        assert b"Sunny" not in seen  # the call was not run
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        os.close(leader)
