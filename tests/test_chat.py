"""``yiemagent chat`` through a real terminal (tmux): streaming, tool lines, commands, Ctrl-C, history.

The chat runs in a tmux pane, is driven with ``send-keys`` and read with ``capture-pane``
(tests/terminal.py). Its MCP servers come from a config file: the demo's weather server over stdio
(official ``mcp`` SDK) and one that cannot start. The model is the scripted OpenAI-compatible
server (tests/servers/scripted_openai_server.py: known words at a known pace, and it records
whether the client cut a reply) or, in the ``model`` tests, the real embedded local model.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, TESTS
from tests.terminal import Terminal, have_tmux

pytestmark = [pytest.mark.slow,  # a real terminal: tmux
              pytest.mark.skipif(not have_tmux(), reason="tmux is not installed (.ci/run installs it)")]

PROMPT = r"^you>$"  # the screen's lines have their trailing spaces stripped


def requests_seen(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def logged(log: Path, before: int, last: str, timeout_seconds: float = 30.0) -> list[dict[str, Any]]:
    """The requests after the first ``before`` whose last message is ``last``, once one is logged (the server
    logs a request when its reply ended, which for a cut reply is at its next write, 0.3 s later).
    """
    deadline = time.monotonic() + timeout_seconds
    while True:
        found = [r for r in requests_seen(log)[before:] if r["last"] == last]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "weather": {"command": PYTHON, "args": ["-m", "yiemagent.examples.weather_server", "--transport", "stdio"]},
        "broken": {"command": "yiemagent-no-such-server-xyz"},
    }}), encoding="utf-8")
    return path


def chat_terminal(tmp_path: Path, *args: str, base_url: str | None = None) -> Terminal:
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "OPENAI_API_KEY": "", "OPENAI_BASE_URL": "",
           "PYTHONUNBUFFERED": "1"}
    argv = [PYTHON, "-m", "yiemagent.cli", "chat", *args]
    if base_url:
        argv += ["--base-url", base_url, "--model", "scripted"]
    return Terminal(argv, env=env, cwd=str(TESTS.parent))


def test_chat_streams_shows_tools_with_durations_and_ctrl_c_aborts_only_the_run(tmp_path, scripted_model,
                                                                              config_file):
    """One session: the banner names the unreachable server; a tool call and its result are shown with
    their duration; an answer appears word by word; Ctrl-C during it cuts the model's reply (the server
    saw the connection close), the prompt comes back and the next input is answered; Ctrl-D quits.
    """
    base_url, log = scripted_model
    with chat_terminal(tmp_path, "--config", str(config_file), base_url=base_url) as term:
        screen = term.wait_for(PROMPT, 60)
        assert re.search(r"^  weather \(yiemagent-demo-weather 1\.0\): 2 tools$", screen, re.M), screen
        assert re.search(r"^  broken: unreachable: cannot start broken: \[Errno 2\] No such file or directory: "
                         r"'yiemagent-no-such-server-xyz'$", screen, re.M)
        assert re.search(r"^2 MCP servers \(1 unreachable\), 2 tools\.", screen, re.M)  # configured: 2

        term.type("What is the weather in Paris?")
        screen = term.wait_for(r"^  \[completed, 2 model calls", 60)
        lines = screen.splitlines()
        start = lines.index("you> What is the weather in Paris?")
        shown = lines[start + 1:]
        assert shown[0] == "  .. calling get_weather"
        assert shown[1] == '  -> get_weather {"city": "Paris"}'
        assert re.fullmatch(r"  <- get_weather \d+ ms: Weather in Paris: Sunny, 21 °C, light wind from the "
                            r"west \(demo data\)\.", shown[2]), shown[2]
        assert shown[3] == ("assistant> The tool said: Weather in Paris: Sunny, 21 °C, light wind from the west "
                            "(demo data).")
        assert re.fullmatch(r"  \[completed, 2 model calls, (\d+ ms|\d+\.\d s), \d+ tokens\]", shown[4])

        before = len(requests_seen(log))
        term.type("tell me something slow")
        first = term.wait_for(r"^assistant> word1 word2 word3 ", 30)
        later = term.wait_for(r"^assistant> word1 .*word6 ", 30)
        assert "word6" not in first.splitlines()[-1] and later  # the line grew while the model wrote
        term.keys("C-c")
        screen = term.wait_for(r"^  \[aborted, 1 model call", 15)
        assert re.search(r"^assistant> word1 .*\n  \[stopping the answer\]\n  \[aborted, 1 model call, \d", screen,
                         re.M)
        term.wait_for(PROMPT, 30)
        slow = logged(log, before, "tell me something slow")
        assert [{k: r[k] for k in ("n", "last", "stream", "cut")} for r in slow] == [
            {"n": slow[0]["n"], "last": "tell me something slow", "stream": True, "cut": True}]

        term.type("hello again")
        screen = term.wait_for(r"^assistant> You said: hello again$", 30)
        term.wait_for(r"^  \[completed, 1 model call, ", 30)
        term.keys("C-d")
        screen = term.wait_for(r"^\[exit 0\]$", 20)
        assert re.search(r"^bye$", screen, re.M)
        assert "Traceback" not in screen


def test_chat_commands_tools_save_reset_load_and_readline_history(tmp_path, scripted_model, config_file):
    """``/tools`` lists the servers (the unreachable one too) and tools; ``/save`` writes the state JSON,
    ``/reset`` forgets, ``/load`` brings it back; Ctrl-C at the prompt quits with status 0; a new chat
    recalls the previous inputs with the Up key (readline history under ``$XDG_STATE_HOME``).
    """
    base_url, _ = scripted_model
    saved = tmp_path / "chat.json"
    with chat_terminal(tmp_path, "--config", str(config_file), base_url=base_url) as term:
        term.wait_for(PROMPT, 60)
        term.type("/tools")
        screen = term.wait_for(r"^broken: unreachable: ", 20)
        assert re.search(r"^weather: 2 tools\n  get_weather +Get the current weather for a city\.\n  get_time ",
                         screen, re.M), screen
        assert re.search(r"^built in:\n  list_tools ", screen, re.M)
        term.type("first message")
        term.wait_for(r"^assistant> You said: first message$", 30)
        term.type(f"/save {saved}")
        term.wait_for(r"^\(saved 2 messages to ", 30)
        assert [m["role"] for m in json.loads(saved.read_text(encoding="utf-8"))["history"]] == ["user", "assistant"]
        term.type("/reset")
        term.wait_for(r"^\(a new conversation\)$", 10)
        term.type(f"/load {saved}")
        term.wait_for(r"^\(loaded 2 messages from ", 30)
        term.type("/load /nonexistent/chat.json")
        term.wait_for(r"^cannot read /nonexistent/chat\.json: No such file or directory$", 30)
        term.type("/frobnicate")
        term.wait_for(r"^unknown command /frobnicate; /help lists them$", 30)
        term.keys("C-c")
        screen = term.wait_for(r"^\[exit 0\]$", 20)
        assert "Traceback" not in screen
    history = tmp_path / "state" / "yiemagent" / "chat_history"
    assert "first message" in history.read_text(encoding="utf-8")
    with chat_terminal(tmp_path, base_url=base_url) as term:
        term.wait_for(PROMPT, 60)
        term.keys("Up")
        term.wait_for(r"^you> /frobnicate$", 30)
        term.keys("Up", "Up", "Up", "Up", "Up")  # /load x2, /reset, /save, first message
        term.wait_for(r"^you> first message$", 30)
        term.keys("Enter")
        term.wait_for(r"^assistant> You said: first message$", 30)
        term.keys("C-d")
        term.wait_for(r"^\[exit 0\]$", 20)


def test_kali_mcp_server_80_escape_sequences_from_a_server_do_not_drive_the_chat_terminal(tmp_path, scripted_model):
    """kali-mcp-server #80 and hermes-agent #70527, in a real terminal (tmux): a real MCP server's tool result
    and description hold a screen clear, cursor moves, a window title (OSC 0), an OSC 52 clipboard write and an
    OSC 8 hyperlink. Before: ``yiemagent chat`` printed them raw (the pane's title became ``PWNED``, the
    screen was cleared, tmux's clipboard buffer got the payload). Now: the words are shown, the title, the
    screen above and the clipboard are untouched, and ``/save`` writes no raw control character.
    """
    base_url, _ = scripted_model
    config = tmp_path / "hostile.json"
    config.write_text(json.dumps({"mcpServers": {"weather": {
        "command": PYTHON, "args": [str(SERVERS / "hostile_text_server.py")]}}}), encoding="utf-8")
    saved = tmp_path / "chat.json"
    with chat_terminal(tmp_path, "--config", str(config), base_url=base_url) as term:
        term._tmux("set-option", "-g", "set-clipboard", "on")
        term.wait_for(PROMPT, 60)
        title_before = term._tmux("display-message", "-p", "-t", "t", "#{pane_title}").strip()
        term.type("/tools")
        term.wait_for(r"^weather: 1 tool$", 20)
        term.type("What is the weather in Paris?")
        screen = term.wait_for(r"^  \[completed, 2 model calls", 60)
        assert re.search(r"^weather: 1 tool\n  get_weather +Get the weather\.$", screen, re.M), screen  # not cleared
        assert re.search(r"^  <- get_weather \d+ ms: Weather in Paris: Sunny details, 21 C$", screen, re.M), screen
        title = term._tmux("display-message", "-p", "-t", "t", "#{pane_title}").strip()
        assert "PWNED" not in title and "TOOLTITLE" not in title and title == title_before, title
        assert "cm0gLXJmIH4=" not in term._tmux("list-buffers")  # no OSC 52 clipboard write
        term.type(f"/save {saved}")
        term.wait_for(r"^\(saved 4 messages to ", 30)
        text = saved.read_text(encoding="utf-8")
        assert not [c for c in text if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F]
        assert "Sunny" in json.dumps(json.loads(text))
        term.keys("C-d")
        term.wait_for(r"^\[exit 0\]$", 20)


def test_chat_reads_piped_input_without_a_terminal(tmp_path, scripted_model):
    """``printf 'hello\\n/quit\\n' | yiemagent chat``: no terminal, no readline prompt editing; each line is
    served in order and the chat exits 0 at ``/quit``.
    """
    base_url, _ = scripted_model
    done = subprocess.run([PYTHON, "-m", "yiemagent.cli", "chat", "--base-url", base_url, "--model", "scripted",
                           "--history", str(tmp_path / "h")], input="hello\nsecond line\n/quit\n",
                          capture_output=True, text=True, timeout=60, check=False, cwd=str(TESTS.parent))
    assert done.returncode == 0, done.stderr
    assert "assistant> You said: hello\n" in done.stdout and "assistant> You said: second line\n" in done.stdout
    assert done.stdout.index("You said: hello") < done.stdout.index("You said: second line")
    assert done.stdout.rstrip().endswith("bye") and done.stderr == ""


def test_chat_compact_summarises_by_hand_and_says_why_it_cannot_without_a_window(tmp_path, scripted_model):
    """Issue 19 point 2: ``/compact [FOCUS]`` (piped, as in the test above) with ``--context-window``."""
    base_url, log = scripted_model
    before = len(requests_seen(log))
    lines = "".join(f"fact {i}: item {i} costs {i * 3} euros\n" for i in range(8))
    done = subprocess.run([PYTHON, "-m", "yiemagent.cli", "chat", "--base-url", base_url, "--model", "scripted",
                           "--context-window", "8192", "--history", str(tmp_path / "h")],
                          input=lines + "/compact the prices\nand now?\n/quit\n", capture_output=True, text=True,
                          timeout=90, check=False, cwd=str(TESTS.parent))
    assert done.returncode == 0, done.stderr
    assert re.search(r"\[compacted \(manual\): \d+ messages summarised, \d+ -> \d+ tokens\]", done.stdout), done.stdout
    assert "assistant> You said: and now?" in done.stdout
    sent = requests_seen(log)[before:]
    assert any(str(r["last"]).startswith("Summarise these messages:") for r in sent)  # the summariser was asked
    plain = subprocess.run([PYTHON, "-m", "yiemagent.cli", "chat", "--base-url", base_url, "--model", "scripted",
                            "--history", str(tmp_path / "h2")], input="hi\n/compact\n/quit\n",
                           capture_output=True, text=True, timeout=60, check=False, cwd=str(TESTS.parent))
    assert "cannot compact: compact() needs Agent(..., context_window=N)" in plain.stdout


@pytest.mark.model
@pytest.mark.timeout(400)
def test_chat_with_the_local_model_ctrl_c_during_a_model_call_and_the_next_input_is_answered(tmp_path,
                                                                                             config_file):
    """The real embedded model (Gemma 3 270M, which writes to ``max_tokens``): an answer streams; Ctrl-C
    during the long generation ends that run as aborted within seconds (LocalModel's call is cut, not
    waited for: the demo used to hang 30 s and more here), the prompt comes back and the next input gets
    an answer; Ctrl-D then stops the model and the servers and exits 0.
    """
    with chat_terminal(tmp_path, "--config", str(config_file), "--local-model", "gemma3-270m",
                       "--max-tokens", "200", "--max-turns", "2") as term:
        screen = term.wait_for(PROMPT, 120)
        assert re.search(r"^model: gemma3-270m \(embedded llama\.cpp, started in", screen, re.M), screen
        term.type("Write a very long story about a dragon who learns to sing.")
        term.wait_for(r"^(assistant|thinking)> \S+", 120)
        term.keys("C-c")
        term.wait_for(r"^  \[aborted, 1 model call, .*\n^you>$", 20)
        term.type("What is the weather in Paris?")
        # Gemma writes to max_tokens, so a text answer may end "truncated" (finish_reason length; issue 8)
        screen = term.wait_for(r"^  \[(completed|truncated|max_turns|repeated_call|terminated), \d+ model calls?", 300)
        assert "[error" not in screen.split("What is the weather in Paris?")[1]
        term.keys("C-d")
        screen = term.wait_for(r"^\[exit 0\]$", 30)
        assert "Traceback" not in screen


@pytest.mark.model
@pytest.mark.timeout(400)
def test_chat_default_local_model_calls_the_weather_tool_and_answers(tmp_path, config_file):
    """The default embedded model (SmolLM2-135M, tool calls forced by a JSON schema as in the demo), with
    the servers of a config file: the question gets a ``get_weather`` call with a city, its result, and a
    text answer; the run completes.
    """
    with chat_terminal(tmp_path, "--config", str(config_file)) as term:
        screen = term.wait_for(PROMPT, 180)
        assert re.search(r"^model: smollm2-135m \(embedded llama\.cpp, tool calls by JSON schema", screen, re.M)
        term.type("What is the weather in Paris?")
        screen = term.wait_for(r"^  \[\w+, \d+ model calls?", 240)
        shown = screen.split("you> What is the weather in Paris?")[1]
        assert re.search(r'^  -> get_weather \{"city": "\w[\w ]*"\}$', shown, re.M), shown
        assert re.search(r"^  <- get_weather \d+ ms: Weather in ", shown, re.M), shown
        assert re.search(r"^assistant> \S", shown, re.M) and "[completed, 2 model calls" in shown, shown
        term.keys("C-d")
        term.wait_for(r"^\[exit 0\]$", 30)
