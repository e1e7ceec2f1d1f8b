"""``yiemagent chat`` asks a server's elicitation in the terminal (tmux), and the answer reaches the server.

The server is tests/servers/sdk_callbacks_server.py over stdio (official ``mcp`` SDK): its ``get_weather``
asks a profile (defaults, a titled enum, a multi select) before answering; the model is the scripted
OpenAI-compatible server, which calls ``get_weather`` for "weather in <City>" and then repeats the tool's
result, so the screen shows what the server received.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import PYTHON, SERVERS
from tests.terminal import have_tmux
from tests.test_chat import PROMPT, chat_terminal

pytestmark = [pytest.mark.slow,  # a real terminal: tmux
              pytest.mark.skipif(not have_tmux(), reason="tmux is not installed (.ci/run installs it)")]


@pytest.fixture
def callbacks_config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "profile": {"command": PYTHON, "args": [str(SERVERS / "sdk_callbacks_server.py"), "--stdio"]},
    }}), encoding="utf-8")
    return path


def test_inspector_1691_chat_asks_each_field_shows_titles_and_defaults_and_sends_values(
        tmp_path, scripted_model, callbacks_config):
    """Source: modelcontextprotocol/inspector #1691 (titled enums rendered raw values): the person sees
    Red/Green/Blue and the server gets the ``const``. Enter keeps the default (SEP-1034); a wrong answer is
    asked again with the reason; then /decline on the next question declines.
    """
    base_url, _ = scripted_model
    with chat_terminal(tmp_path, "--config", str(callbacks_config), base_url=base_url) as term:
        term.wait_for(PROMPT, 60)
        term.type("What is the weather in Paris?")
        screen = term.wait_for(r"^  Name \(required\) \[Ada\]:$", 60)
        assert re.search(r"^\[profile asks\] Profile for the weather in Paris$", screen, re.M), screen
        term.type("")                                  # Enter: the default
        term.wait_for(r"^  Age \(required\) \[36\]:$", 10)
        term.type("four")
        term.wait_for(r"^    a whole number, please$", 30)
        term.type(" -3")  # (a leading space: tmux would read "-3" as a flag)
        term.wait_for(r"^    -3 is less than the minimum of 0$", 30)
        term.type("41")
        term.wait_for(r"^  Newsletter \[yes\]:$", 30)
        term.type("no")
        screen = term.wait_for(r"^  Color: 1\) Red  2\) Green  3\) Blue \[Green\]:$", 10)
        term.type("Blue")
        term.wait_for(r"^  Tags, comma-separated: 1\) a  2\) b  3\) c:$", 10)
        term.type("1,c")
        screen = term.wait_for(r"^assistant> The tool said: ", 30)
        said = re.search(r"^assistant> The tool said: (.*)$", screen, re.M)
        assert said is not None
        assert json.loads(said.group(1)) == {"action": "accept", "content": {
            "name": "Ada", "age": 41, "newsletter": False, "color": "#0000FF", "tags": ["a", "c"]}}
        term.wait_for(PROMPT, 30)

        term.type("What is the weather in Rome?")
        term.wait_for(r"^  Name \(required\) \[Ada\]:$", 60, count=2)
        term.type("/decline")
        screen = term.wait_for(r"^assistant> The tool said: ", 30, count=2)
        assert '{"action": "decline", "content": null}' in screen
        term.keys("C-d")
        screen = term.wait_for(r"^\[exit 0\]$", 20)
        assert "Traceback" not in screen


def test_chat_asks_before_a_server_samples_its_model_and_a_no_is_the_spec_error(
        tmp_path, scripted_model, callbacks_config):
    """The spec's human in the loop: the request (its system prompt, messages, token cap) is shown; "no"
    answers -1 "User rejected sampling request", "yes" lets the chat's own model answer the server.
    """
    data = json.loads(callbacks_config.read_text(encoding="utf-8"))
    data["mcpServers"]["profile"]["args"].append("--sampling-weather")
    callbacks_config.write_text(json.dumps(data), encoding="utf-8")
    base_url, _ = scripted_model
    with chat_terminal(tmp_path, "--config", str(callbacks_config), base_url=base_url) as term:
        term.wait_for(PROMPT, 60)
        term.type("What is the weather in Oslo?")
        screen = term.wait_for(r"^  Allow\? yes / no \[no\]:$", 60)
        assert re.search(r"^\[profile wants to use the model\] up to 30 tokens; system prompt: Be brief\.$", screen,
                         re.M), screen
        assert re.search(r"^  user: describe Oslo$", screen, re.M)
        term.type("no")
        screen = term.wait_for(r"^  <- get_weather", 30)
        assert "User rejected sampling request" in screen
        term.wait_for(PROMPT, 30)

        term.type("What is the weather in Lima?")
        term.wait_for(r"^  Allow\? yes / no \[no\]:$", 60)  # the first one shows its "no" now
        term.type("yes")
        screen = term.wait_for(r"^assistant> The tool said: .*sampled", 30)
        assert re.search(r'^assistant> The tool said: \{"sampled": "You said: describe Lima"\}', screen, re.M), screen
        term.keys("C-d")
        screen = term.wait_for(r"^\[exit 0\]$", 20)
        assert "Traceback" not in screen
