"""The ``yiemagent`` command (``tools`` and ``call``) run as a subprocess against real stdio servers."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from typing import Any

import pytest

from tests.helpers import PYTHON, TESTS, text_of
from tests.servers.raw_http_peer import Reply
from yiemagent.cli import main


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m yiemagent.cli <args>``; output decoded as UTF-8; bounded at 30 s."""
    return subprocess.run(
        [PYTHON, "-m", "yiemagent.cli", *args], capture_output=True, encoding="utf-8", errors="replace",
        timeout=30, cwd=str(TESTS.parent), env={**os.environ, **(env or {})}, check=False,
    )



@pytest.mark.node
def test_tools_with_stdio_prints_the_server_and_one_line_per_tool(everything_stdio):
    """``yiemagent tools --stdio "<command>"``: a header with server, count and protocol, then each tool."""
    done = run_cli("tools", "--stdio", shlex.join(everything_stdio))
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert re.fullmatch(r"mcp-servers/everything \S+: 13 tools \(protocol 2025-11-25\)", header)
    names = {row.split()[0] for row in rows}
    assert len(rows) == 13 and {"echo", "get-sum", "trigger-long-running-operation"} <= names
    assert any(re.fullmatch(r"  echo +Echoes back the input string", row) for row in rows)


@pytest.mark.slow
def test_call_with_a_stdio_command_line_prints_the_result_as_json():
    """``yiemagent call "<command>" <tool> '<json>'`` against PyPI mcp-server-time: exit 0, the result JSON."""
    done = run_cli("call", shlex.join([PYTHON, "-m", "mcp_server_time"]), "get_current_time",
                   '{"timezone": "UTC"}')
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["isError"] is False
    assert result["structuredContent"]["timezone"] == "UTC"


@pytest.mark.node
def test_call_exits_1_and_still_prints_the_result_when_the_tool_reports_is_error(filesystem_stdio, tmp_path):
    """A tool failure is data: server-filesystem refuses a path outside its dir; the JSON is printed, exit 1."""
    command = shlex.join([*filesystem_stdio, str(tmp_path)])
    done = run_cli("call", command, "read_text_file", json.dumps({"path": str(tmp_path.parent / "x.txt")}))
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["isError"] is True
    assert "outside allowed directories" in text_of(result)


@pytest.mark.node
def test_call_passes_env_to_the_server_and_prints_valid_json_even_to_an_ascii_terminal(everything_stdio):
    """``--env KEY=VALUE`` reaches the server (only the allow-list does otherwise); with an ASCII-only stdout
    the JSON is written with escapes and still parses to the same non-ASCII text.
    """
    done = run_cli("call", "--env", "YIEMAGENT_CLI_VAR=日本 🎉", shlex.join(everything_stdio), "get-env",
                   env={"PYTHONIOENCODING": "ascii", "YIEMAGENT_CLI_SECRET": "must-not-leak"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.isascii()
    seen = json.loads(text_of(json.loads(done.stdout)))
    assert seen["YIEMAGENT_CLI_VAR"] == "日本 🎉"
    assert "YIEMAGENT_CLI_SECRET" not in seen


def test_call_of_a_command_that_cannot_start_exits_1_with_a_one_line_reason(capsys):
    """A missing executable is a clear error on stderr (no traceback) and exit status 1."""
    assert main(["call", "yiemagent-no-such-server-xyz --flag", "anything"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("yiemagent call: cannot start yiemagent-no-such-server-xyz")
    assert "Traceback" not in err


def test_call_with_arguments_that_are_not_a_json_object_exits_2(capsys):
    """Bad arguments are refused before any server starts."""
    assert main(["call", "yiemagent-no-such-server-xyz", "tool", "{not json"]) == 2
    assert main(["call", "yiemagent-no-such-server-xyz", "tool", "[1, 2]"]) == 2
    assert "must be a JSON object" in capsys.readouterr().err


def test_call_refuses_a_url_together_with_stdio_and_starts_nothing(capsys):
    """``call URL TOOL --stdio COMMAND`` names two servers for one call: exit 2 (argparse usage error) saying
    the URL would be a second server, before any server is started. (``tools`` lists every server given.)
    """
    with pytest.raises(SystemExit) as caught:
        main(["call", "http://127.0.0.1:9/mcp", "echo", "--stdio", shlex.join([PYTHON, "-m", "mcp_server_time"])])
    assert caught.value.code == 2
    captured = capsys.readouterr()
    assert "call takes one server" in captured.err and "http://127.0.0.1:9/mcp" in captured.err
    assert captured.out == ""


def test_tools_refuses_a_command_given_as_the_url_and_env_for_an_http_server(capsys):
    """A stdio command in the URL's place, or ``--env`` for an HTTP server, is a usage error (exit 2)."""
    with pytest.raises(SystemExit) as caught:
        main(["tools", "mcp-server-time"])
    assert caught.value.code == 2
    assert "--stdio" in capsys.readouterr().err
    for argv in (["tools", "http://127.0.0.1:9/mcp", "--env", "A=1"],
                 ["call", "--env", "A=1", "http://127.0.0.1:9/mcp", "echo"]):
        with pytest.raises(SystemExit) as caught:
            main(argv)
        assert caught.value.code == 2
        assert "--env is for stdio servers" in capsys.readouterr().err


@pytest.mark.node
def test_a_wrong_path_gives_one_short_line_not_the_html_page(everything_server):
    """server-everything (Express) answers a wrong path with an HTML 404 page: the error is one line naming
    the status and the page's text, without its markup.
    """
    done = run_cli("tools", everything_server.rsplit("/", 1)[0] + "/wrong")
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("yiemagent tools: initialize to http://127.0.0.1:")
    assert "HTTP 404" in line and "Cannot POST /wrong" in line
    assert "<" not in line and len(line) < 300


def test_a_long_error_page_is_cut_to_a_few_hundred_characters(raw_peer, capsys):
    """Raw peer: a 20 KB HTML error page (what a reverse proxy in front of a server sends; no MCP server
    does). The message quotes at most 300 characters of its text, on one line, and says it was cut.
    """
    page = "<!DOCTYPE html><html><head><title>404 Not Found</title><style>p {color: red}</style></head><body>" \
           + "<p>upstream failed &amp; gave up</p>\n" * 600 + "</body></html>"
    peer = raw_peer()
    peer.script("initialize", Reply(status=404, body=page, headers={"Content-Type": "text/html"}))
    assert main(["tools", peer.url, "--timeout", "5"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "HTTP 404" in line and "404 Not Found upstream failed & gave up" in line
    assert "<" not in line and "color" not in line
    assert len(line) < 500 and "[cut from 2,000 characters]" in line


# --------------------------------------------------------------------------- servers as data (issue 11 point 3)


def write_config(tmp_path, servers: dict[str, Any]) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return str(path)


TIME_SERVER = {"command": PYTHON, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
PROBE_SERVER = {"command": PYTHON, "args": [str(TESTS / "servers" / "probe_server.py"), "a b"],
                "env": {"PROBE_TOKEN": "${YIEMAGENT_TEST_TOKEN}"}}


@pytest.mark.slow
def test_tools_with_config_lists_every_server_of_the_file(tmp_path):
    """``tools --config FILE`` with Claude Desktop's format: one header and tool list per server, in order."""
    done = run_cli("tools", "--config", write_config(tmp_path, {"time": TIME_SERVER, "probe": PROBE_SERVER}),
                   env={"YIEMAGENT_TEST_TOKEN": "t"})
    assert done.returncode == 0, done.stderr
    headers = [line for line in done.stdout.splitlines() if not line.startswith("  ")]
    assert [h.split()[0] for h in headers] == ["mcp-time", "yiemagent-probe"]
    assert re.search(r"^  get_current_time ", done.stdout, re.M) and re.search(r"^  argv ", done.stdout, re.M)


@pytest.mark.slow
def test_call_with_config_finds_the_server_that_has_the_tool_or_takes_server_name(tmp_path):
    """``call --config FILE TOOL ARGS``: the one server with that tool runs it (``${VAR}`` expanded for it);
    ``--server NAME`` picks one directly; an unknown name is one line, exit 1.
    """
    config = write_config(tmp_path, {"time": TIME_SERVER, "probe": PROBE_SERVER})
    done = run_cli("call", "--config", config, "env", '{"name": "PROBE_TOKEN"}', env={"YIEMAGENT_TEST_TOKEN": "tok"})
    assert done.returncode == 0, done.stderr
    assert text_of(json.loads(done.stdout)) == "tok"
    done = run_cli("call", "--config", config, "--server", "probe", "argv", env={"YIEMAGENT_TEST_TOKEN": "tok"})
    assert json.loads(text_of(json.loads(done.stdout))) == ["a b"]
    done = run_cli("call", "--config", config, "--server", "nope", "argv", env={"YIEMAGENT_TEST_TOKEN": "tok"})
    assert done.returncode == 1 and done.stderr.strip() == (
        "yiemagent call: no server named 'nope'; the config has 'time', 'probe'")


@pytest.mark.slow
def test_call_with_stdio_option_is_the_same_as_the_positional_command():
    """One syntax in every verb: ``call --stdio "CMD" TOOL ARGS`` (issue 11: ``call --stdio`` was refused)."""
    done = run_cli("call", "--stdio", shlex.join([PYTHON, "-m", "mcp_server_time"]), "get_current_time",
                   '{"timezone": "UTC"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"]["timezone"] == "UTC"


def test_a_bad_config_is_one_line_naming_the_entry_and_an_unset_variable_too(tmp_path, capsys):
    """A malformed entry or an unset ``${VAR}`` is a ConfigError: one line on stderr, exit 1, nothing started."""
    config = write_config(tmp_path, {"fs": {"command": "npx", "args": "-y server /tmp"}})
    assert main(["tools", "--config", config]) == 1
    assert capsys.readouterr().err == ('yiemagent tools: mcpServers.fs.args: must be a list of strings, one per '
                                       'argument, not one string; write "args": ["-y", "server", "/tmp"]\n')
    os.environ.pop("YIEMAGENT_TEST_TOKEN", None)
    assert main(["tools", "--config", write_config(tmp_path, {"probe": PROBE_SERVER})]) == 1
    assert capsys.readouterr().err.startswith(
        "yiemagent tools: mcpServers.probe.env.PROBE_TOKEN: the environment variable YIEMAGENT_TEST_TOKEN is not set")


def test_tools_lists_a_url_and_a_stdio_server_together(weather_server):
    """``tools URL --stdio CMD``: both are listed (nothing is silently ignored)."""
    done = run_cli("tools", weather_server, "--stdio", shlex.join([PYTHON, "-m", "mcp_server_time"]))
    assert done.returncode == 0, done.stderr
    headers = [line.split()[0] for line in done.stdout.splitlines() if not line.startswith("  ")]
    assert headers == ["yiemagent-demo-weather", "mcp-time"]


@pytest.mark.slow
def test_issue_27_new_user_a_demo_server_slow_to_start_says_what_to_do(monkeypatch):
    """Issue 27, a new user's first hour: the demo's example server start budget (30 s) failed on a loaded
    machine with no advice. The budget is 60 s, ``YIEMAGENT_DEMO_START_SECONDS`` sets it, and running out
    says so (here made to run out at once).
    """
    from yiemagent import YiemagentError
    from yiemagent.cli.demo import DEMO_START_SECONDS, demo_server

    assert DEMO_START_SECONDS >= 60
    monkeypatch.setenv("YIEMAGENT_DEMO_START_SECONDS", "0.001")
    with pytest.raises(YiemagentError, match="YIEMAGENT_DEMO_START_SECONDS=180"):
        with demo_server():
            pass
    monkeypatch.setenv("YIEMAGENT_DEMO_START_SECONDS", "120")
    with demo_server() as url:  # given the time, it starts
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
