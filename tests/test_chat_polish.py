"""``yiemagent chat`` polish (issue 20, point 6), through piped input (no terminal needed).

The MCP servers come from a config file: the demo's weather server over stdio (official ``mcp`` SDK),
twice under two names, and one that cannot start; the model is the scripted OpenAI-compatible server.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers import PYTHON, TESTS


def _config(tmp_path: Path) -> Path:
    weather = {"command": PYTHON, "args": ["-m", "yiemagent.examples.weather_server", "--transport", "stdio"]}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"weather": weather, "weather2": weather,
                                               "broken": {"command": "yiemagent-no-such-server-xyz"}}}),
                    encoding="utf-8")
    return path


def test_chat_counts_configured_servers_and_prints_no_tools_changed_line_after_reset_or_load(
        tmp_path: Path, scripted_model: tuple[str, Path]) -> None:
    """Issue 20: the banner said "2 MCP servers (1 unreachable)" for 3 configured, and after ``/reset``
    and ``/load`` the next answer was preceded by a spurious ``[tools changed: +...]`` line (the new
    agent's first listing of the same tools). Now: "3 MCP servers (1 unreachable)", and no such line.
    """
    base_url, _ = scripted_model
    saved = tmp_path / "chat.json"
    lines = ["first", f"/save {saved}", "/reset", "after reset", f"/load {saved}", "after load", "/quit"]
    done = subprocess.run([PYTHON, "-m", "yiemagent.cli", "chat", "--config", str(_config(tmp_path)),
                           "--base-url", base_url, "--model", "scripted", "--history", str(tmp_path / "h")],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120, check=False,
                          cwd=str(TESTS.parent))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "3 MCP servers (1 unreachable), 4 tools." in out, out
    for text in ("first", "after reset", "after load"):
        assert f"assistant> You said: {text}\n" in out, out
    assert "(a new conversation)" in out and "(loaded 2 messages from" in out
    assert "tools changed" not in out, out
