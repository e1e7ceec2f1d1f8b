"""Servers as data: ``yiemagent.mcp.config`` and ``Agent(mcp_servers=...)`` with the ``mcpServers`` format.

Real servers: tests/servers/probe_server.py (official ``mcp`` SDK) reports its argv, environment,
working directory and HTTP headers, over stdio and Streamable HTTP; PyPI ``mcp-server-time``.
Tests named after a public report reconstruct it; the source is in the docstring.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, text_of, wait_for_port
from yiemagent import Agent, ConfigError, MCPClient
from yiemagent.mcp.config import MCPServerConfig, expand_variables, load_mcp_config, mcp_clients, parse_mcp_servers
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

PROBE = str(SERVERS / "probe_server.py")


def probe_entry(*args: str, **extra: Any) -> dict[str, Any]:
    return {"command": PYTHON, "args": [PROBE, *args], **extra}



def call(config: MCPServerConfig | MCPClient, tool: str, arguments: dict[str, Any] | None = None) -> str:
    client = config.client() if isinstance(config, MCPServerConfig) else config
    with client:
        result = client.call_tool(tool, arguments or {})
    assert result["isError"] is False, result
    return text_of(result)


def write(tmp_path: Path, data: Any, name: str = "mcp.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def probe_http() -> Iterator[str]:
    port = free_port()
    process = start_process([PYTHON, PROBE, "--http", str(port)])
    try:
        wait_for_port(port, timeout_seconds=20, process=process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


# --------------------------------------------------------------------------- the forms accepted


def test_issue8_point7_a_plain_string_is_a_config_error_not_one_client_per_character():
    """Issue 8 point 7: ``Agent(mcp_servers="http://…")`` made 25 clients; now a ConfigError that shows the fix."""
    with pytest.raises(ConfigError, match=r"plain string .*\['http://127.0.0.1:3001/mcp'\]"):
        Agent(ScriptedLLM([]), mcp_servers="http://127.0.0.1:3001/mcp")
    with pytest.raises(ConfigError, match="plain string"):
        parse_mcp_servers(b"http://x")


def test_claude_desktop_document_gives_one_config_per_server_in_order():
    servers = parse_mcp_servers({"mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"], "env": {"TZ": "UTC"}},
        "docs": {"url": "https://docs.example/mcp", "headers": {"X-Key": "k"}},
    }, "globalShortcut": "Ctrl+Space"}, environ={})
    assert servers == [
        MCPServerConfig(name="time", command="mcp-server-time", args=["--local-timezone", "UTC"], env={"TZ": "UTC"}),
        MCPServerConfig(name="docs", url="https://docs.example/mcp", headers={"X-Key": "k"}),
    ]
    assert [s.transport for s in servers] == ["stdio", "http"]  # type: ignore[union-attr]


def test_vscode_servers_with_type_and_settings_json_form():
    """VS Code ``.vscode/mcp.json`` (``servers``, ``type``) and settings.json (``mcp.servers``)."""
    doc = {"servers": {"t": {"type": "stdio", "command": "mcp-server-time"},
                       "w": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}, "inputs": []}
    assert [(s.name, s.transport) for s in parse_mcp_servers(doc)] == [("t", "stdio"), ("w", "http")]  # type: ignore[union-attr]
    assert [s.name for s in parse_mcp_servers({"mcp": {"servers": doc["servers"]}})] == ["t", "w"]
    with pytest.raises(ConfigError, match=r"servers\.w: .*needs \"command\""):
        parse_mcp_servers({"servers": {"w": {"type": "stdio", "url": "http://127.0.0.1:1/mcp"}}})


def test_existing_forms_keep_working_urls_names_and_clients():
    made = MCPClient("http://127.0.0.1:9/mcp")
    clients, own = mcp_clients(["http://127.0.0.1:1/mcp", made])
    assert [c.name for c in clients] == ["127_0_0_1_1", "127_0_0_1_9"] and own == [clients[0]]
    clients, own = mcp_clients({"a": "http://127.0.0.1:1/mcp", "b": made, "c": {"command": "mcp-server-time"}})
    assert [c.name for c in clients] == ["a", "b", "c"] and clients[1] is made and made not in own
    agent = Agent(ScriptedLLM([]), mcp_servers={"time": {"command": "mcp-server-time"}})
    assert [c.name for c in agent.mcp.clients] == ["time"]
    agent.shutdown()
    for client in clients:
        client.close()


def test_a_path_is_a_config_file_and_disabled_entries_are_left_out(tmp_path):
    path = write(tmp_path, {"mcpServers": {"on": {"command": "mcp-server-time"},
                                           "off": {"command": "nothing-here", "disabled": True}}})
    agent = Agent(ScriptedLLM([]), mcp_servers=path)
    assert [c.name for c in agent.mcp.clients] == ["on"]
    agent.shutdown()


@pytest.mark.parametrize(("entry", "message"), [
    ({"command": "x", "url": "http://a/mcp"}, r"not both"),
    ({"args": ["a"]}, r"needs \"command\" .* or \"url\""),
    ({"command": "x", "argz": []}, r"unknown key\(s\) argz"),
    ({"command": "x", "headers": {}}, r"headers do\(es\) not apply to a stdio server"),
    ({"url": "http://a/mcp", "env": {}}, r"env do\(es\) not apply to a HTTP server"),
    ({"url": "ftp://a/mcp"}, r"not an http\(s\):// URL"),
    ({"url": "http://a/sse", "type": "sse"}, r"legacy HTTP\+SSE"),
    ({"command": "x", "type": "websocket"}, r"\"type\" must be"),
    ({"command": ""}, r"must be the program"),
    ({"command": "x", "args": ["--port", 8080]}, r"must be a string, not int 8080; write \"8080\""),
    ({"command": "x", "env": {"DEBUG": True}}, r"must be a string, not bool; write \"true\""),
    ({"command": "x", "cwd": 3}, r"must be a directory path"),
    ({"command": "x", "timeout": "10"}, r"\"timeout\" must be a positive number"),
    ({"command": "x", "tools": ["read"]}, r"\"tools\" filters are not supported"),
    ("relative/path", r"not an http\(s\):// URL"),
    (42, r"a server is a URL, an MCPClient or an object"),
])
def test_a_malformed_entry_is_a_config_error_naming_it(entry, message):
    with pytest.raises(ConfigError, match=rf"^mcpServers\.bad[\w.\[\]]*: .*{message}"):
        parse_mcp_servers({"mcpServers": {"good": {"command": "mcp-server-time"}, "bad": entry}}, environ={})


def test_list_entries_are_named_by_position_and_names_are_unique():
    with pytest.raises(ConfigError, match=r"^mcp_servers\[1\]: a server needs"):
        parse_mcp_servers(["http://127.0.0.1:1/mcp", {"name": "x"}])
    with pytest.raises(ConfigError, match=r"the server name 'x' is given twice"):
        parse_mcp_servers([{"name": "x", "command": "a"}, {"name": "x", "command": "b"}])
    with pytest.raises(ConfigError, match=r"mcp_servers must be a list"):
        parse_mcp_servers(3005)


# --------------------------------------------------------------------------- ${VAR}


def test_variables_are_expanded_in_every_field_with_defaults_and_vscode_env_form(tmp_path):
    environ = {"BIN": "/opt/bin/server", "ROOT": str(tmp_path), "TOKEN": "s3cret", "HOST": "127.0.0.1"}
    (stdio, http) = parse_mcp_servers({"mcpServers": {
        "s": {"command": "${BIN}", "args": ["--root", "${ROOT}/data", "--mode=${MODE:-fast}"],
              "env": {"API_KEY": "${env:TOKEN}"}, "cwd": "${ROOT}"},
        "h": {"url": "http://${HOST}:${PORT:-8080}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
    }}, environ=environ)
    assert stdio == MCPServerConfig(name="s", command="/opt/bin/server",
                                    args=["--root", f"{tmp_path}/data", "--mode=fast"],
                                    env={"API_KEY": "s3cret"}, cwd=str(tmp_path))
    assert http == MCPServerConfig(name="h", url="http://127.0.0.1:8080/mcp",
                                   headers={"Authorization": "Bearer s3cret"})
    assert expand_variables("cost $5 and $HOME stay", {}) == "cost $5 and $HOME stay"


def test_claude_code_80197_an_unset_variable_is_an_error_not_a_literal_token():
    """anthropics/claude-code#80197 (and #40372): ``${VAR}`` in ``env`` reached the server as the literal text
    ``"${VAR}"``, silently; the server then failed at authentication. Here an unset variable is a ConfigError
    naming the field and the variable (never a value), made before anything starts.
    """
    doc = {"mcpServers": {"confluence": {"command": "mcp-atlassian", "env": {"CONFLUENCE_TOKEN": "${CONF_PAT}",
                                                                            "OTHER": "${SET_ONE}"}}}}
    with pytest.raises(ConfigError) as caught:
        Agent(ScriptedLLM([]), mcp_servers=doc)
    message = str(caught.value)
    assert message.startswith("mcpServers.confluence.env.CONFLUENCE_TOKEN: the environment variable CONF_PAT is "
                              "not set") and "${CONF_PAT:-default}" in message
    with pytest.raises(ConfigError, match=r"\$\{input:pat\} is not an environment variable"):
        parse_mcp_servers({"servers": {"x": {"url": "http://a/mcp", "headers": {"k": "${input:pat}"}}}})


@pytest.mark.slow
def test_claude_code_80197_the_expanded_value_reaches_the_stdio_server(monkeypatch):
    """anthropics/claude-code#80197: the value of ``${VAR}`` in ``env``, not the placeholder, is what the
    server process sees (read back from a real server).
    """
    monkeypatch.setenv("PROBE_SECRET", "tok-123")
    (entry,) = parse_mcp_servers({"mcpServers": {"p": probe_entry(env={"CONFLUENCE_TOKEN": "${PROBE_SECRET}"})}})
    assert call(entry, "env", {"name": "CONFLUENCE_TOKEN"}) == "tok-123"


def test_claude_code_3239_header_variables_are_expanded_for_an_http_server(probe_http):
    """anthropics/claude-code#3239: ``"Authorization": "Bearer ${TOKEN}"`` in an HTTP server's ``headers`` was
    sent unexpanded; the real server here reports the header it received.
    """
    (entry,) = parse_mcp_servers({"mcpServers": {"gh": {"type": "http", "url": probe_http,
                                                        "headers": {"Authorization": "Bearer ${TOKEN}"}}}},
                                 environ={"TOKEN": "ghp_abc"})
    assert json.loads(call(entry, "headers"))["authorization"] == "Bearer ghp_abc"


@pytest.mark.slow
def test_claude_code_1254_an_env_block_adds_to_the_server_environment_it_does_not_replace_path():
    """anthropics/claude-code#1254: with an ``env`` block the server got *only* those variables (no PATH,
    APPDATA), so ``npx`` failed. Here ``env`` is added over the allow-list: PATH is still there.
    """
    (entry,) = parse_mcp_servers({"mcpServers": {"m": probe_entry(env={"MEMORY_FILE_PATH": "/tmp/memory.json"})}})
    client = entry.client()  # type: ignore[union-attr]
    with client:
        assert text_of(client.call_tool("env", {"name": "MEMORY_FILE_PATH"})) == "/tmp/memory.json"
        assert text_of(client.call_tool("env", {"name": "PATH"})) == os.environ["PATH"]


# --------------------------------------------------------------------------- argv, paths, Windows


@pytest.mark.slow
def test_modelcontextprotocol_servers_447_an_argument_with_spaces_reaches_the_server_as_one(tmp_path):
    """modelcontextprotocol/servers#447 (anthropics/claude-ai-mcp#891, metatool-ai/mcp-server-metamcp#26):
    an allowed-directory path with a space was split into several arguments on the way to the server.
    ``args`` items are passed one by one, no shell: the server's argv equals the list.
    """
    args = [str(tmp_path / "Claude Code Group"), "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
            "it's \"quoted\"", "$HOME", "a;b|c"]
    (entry,) = parse_mcp_servers({"mcpServers": {"p": probe_entry(*args)}}, environ={})
    assert json.loads(call(entry, "argv")) == args


@pytest.mark.slow
def test_neon_add_mcp_29_a_command_path_with_spaces_is_kept_whole(tmp_path):
    """neon-solutions/add-mcp#29: ``/Applications/Hopper Disassembler.app/.../HopperMCPServer`` was split at the
    space into command and args. A command path with spaces is one program here; the real server starts.
    """
    folder = tmp_path / "Hopper Disassembler.app" / "Contents"
    folder.mkdir(parents=True)
    program = folder / "python server"  # a wrapper: a symlink to a venv's python would lose the venv
    program.write_text(f"#!/bin/sh\nexec {shlex.quote(PYTHON)} \"$@\"\n", encoding="utf-8")
    program.chmod(0o755)
    (entry,) = parse_mcp_servers({"mcpServers": {"hopper": {"command": str(program), "args": [PROBE, "x"]}}})
    assert entry.command == str(program)  # type: ignore[union-attr]
    assert json.loads(call(entry, "argv")) == ["x"]


def test_duncatzat_vigils_14_a_whole_command_line_in_command_is_an_error_with_the_split_form():
    """duncatzat/vigils#14: ``"command": "npx -y @modelcontextprotocol/server-filesystem /tmp", "args": []`` was
    run as one program named "npx -y ..." (ENOENT, silently unavailable). Here: a ConfigError showing the fix.
    """
    line = f"{shlex.quote(PYTHON)} -m mcp_server_time --local-timezone UTC"
    with pytest.raises(ConfigError) as caught:
        parse_mcp_servers({"mcpServers": {"fs": {"command": line, "args": []}}})
    assert str(caught.value).startswith("mcpServers.fs.command: ")
    assert f'"command": {json.dumps(PYTHON)}, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]' in str(
        caught.value)


def test_jordanhubbard_webmux_15_a_command_given_as_a_list_is_an_error_with_the_split_form():
    """jordanhubbard/webmux#15: ``"command": ["npx", "@codemcp/workflows@latest"]`` (an array) broke the config."""
    with pytest.raises(ConfigError, match=r'^mcpServers\.wf\.command: .*"command": "npx", "args": '
                                          r'\["@codemcp/workflows@latest"\]'):
        parse_mcp_servers({"mcpServers": {"wf": {"command": ["npx", "@codemcp/workflows@latest"]}}})


def test_nousresearch_hermes_agent_55385_args_as_one_string_is_an_error_with_the_list_form():
    """NousResearch/hermes-agent#55385: ``args: "-m some_module --port 8080"`` (a string) failed the server
    start; peers then guessed a split (whitespace, or one item). Here: a ConfigError with the list written out.
    """
    with pytest.raises(ConfigError, match=r'^mcpServers\.t\.args: must be a list of strings, one per argument, '
                                          r'not one string; write "args": \["-m", "some_module", "--port", "8080"\]'):
        parse_mcp_servers({"mcpServers": {"t": {"command": "python", "args": "-m some_module --port 8080"}}})


def test_hacklyc_myagents_54_args_true_is_an_error_naming_the_entry_before_anything_starts():
    """hAcKlyc/MyAgents#54: ``"args": true`` written by a CLI crashed session start for every server. Here the
    agent is never made: a ConfigError names the entry; the good entry's process never started.
    """
    doc = {"mcpServers": {"ok": {"command": "mcp-server-time"}, "framelink-figma": {"command": "npx", "args": True}}}
    with pytest.raises(ConfigError, match=r"^mcpServers\.framelink-figma\.args: must be a list of strings, not bool"):
        Agent(ScriptedLLM([]), mcp_servers=doc)


def test_directus_mcp_6_an_array_in_env_is_an_error_naming_the_variable():
    """directus/mcp#6: ``"DISABLE_TOOLS": ["delete-item", ...]`` in ``env`` (the server's docs asked for an
    array; env values are strings). The error names the exact path.
    """
    with pytest.raises(ConfigError, match=r"^mcpServers\.directus\.env\.DISABLE_TOOLS: must be a string, not list$"):
        parse_mcp_servers({"mcpServers": {"directus": {"command": "npx", "env": {"DISABLE_TOOLS": ["delete-item"]}}}})


def test_github_copilot_cli_117_type_local_and_all_tools_are_read():
    """github/copilot-cli#117: Copilot CLI writes ``"type": "local"`` and ``"tools": ["*"]``; both are read."""
    (entry,) = parse_mcp_servers({"mcpServers": {"signal": {"type": "local", "command": "uv", "tools": ["*"],
                                                            "args": ["run", "server.py"]}}})
    assert entry == MCPServerConfig(name="signal", command="uv", args=["run", "server.py"])


def test_modelcontextprotocol_servers_2519_a_windows_path_with_single_backslashes_is_an_error(tmp_path):
    """modelcontextprotocol/servers#2519: ``"c:\\temp\\bvb"`` in JSON is ``c:<TAB>emp<BS>vb``; the server
    failed with "Connection closed". Here: a ConfigError that says how to write the path; an invalid escape
    (``"C:\\Users"``) names line and column with the same fix.
    """
    path = write(tmp_path, '{"mcpServers": {"git": {"command": "uvx", "args": '
                           '["mcp-server-git", "--repository", "c:\\temp\\bvb"]}}}')
    with pytest.raises(ConfigError, match=r"mcpServers\.git\.args\[2\]: .* holds \\t character; a Windows path in "
                                          r"JSON needs doubled backslashes"):
        load_mcp_config(path)
    path = write(tmp_path, '{"mcpServers": {"fs": {"command": "npx",\n "args": ["C:\\Users\\me"]}}}')
    with pytest.raises(ConfigError, match=r"not JSON: Invalid \\escape at line 2 column 14; a Windows path"):
        load_mcp_config(path)
    assert parse_mcp_servers([{"command": "x", "args": ["line one\nline two"]}])  # a newline in a plain arg is fine


# --------------------------------------------------------------------------- files


@pytest.mark.slow
def test_a_file_with_comments_and_trailing_commas_and_a_relative_cwd(tmp_path):
    """VS Code's mcp.json is JSONC; a relative ``cwd`` is relative to the file, ``~`` is the home directory."""
    (tmp_path / "work").mkdir()
    path = write(tmp_path, """{
      // the servers
      "servers": {
        "p": {"type": "stdio", "command": "%s", "args": ["%s", "a//b", "/*c*/",], "cwd": "work",},  /* probe */
        "h": {"url": "http://127.0.0.1:1/mcp", "cwd": null, "headers": {},},
      },
    }""".replace('"cwd": null, ', "") % (PYTHON, PROBE))
    probe, http = load_mcp_config(path)
    assert probe.cwd == str(tmp_path / "work") and http.url == "http://127.0.0.1:1/mcp"
    assert json.loads(call(probe, "argv")) == ["a//b", "/*c*/"]
    assert call(probe, "cwd") == str(tmp_path / "work")
    (home,) = parse_mcp_servers([{"command": "x", "cwd": "~/w"}])
    assert home.cwd == str(Path.home() / "w")  # type: ignore[union-attr]


def test_a_file_without_servers_or_unreadable_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match=r"no \"mcpServers\" \(or VS Code \"servers\", Zed .*\) object"):
        load_mcp_config(write(tmp_path, {"globalShortcut": "x"}))
    with pytest.raises(ConfigError, match=r"cannot read the MCP config .*missing\.json.*No such file"):
        load_mcp_config(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match=r"not JSON: Expecting .* at line 1"):
        load_mcp_config(write(tmp_path, "{mcpServers:"))


def test_env_file_of_cursor_and_vscode_is_read_and_env_wins(tmp_path):
    (tmp_path / ".env").write_text("# secrets\nexport A=1\nB='two words'\nC=3\n", encoding="utf-8")
    path = write(tmp_path, {"mcpServers": {"s": {"command": "x", "envFile": ".env", "env": {"C": "env wins"}}}})
    (entry,) = load_mcp_config(path)
    assert entry.env == {"A": "1", "B": "two words", "C": "env wins"}


@pytest.mark.slow
def test_agent_runs_a_tool_of_a_server_given_as_data():
    """End to end: ``Agent(mcp_servers={"mcpServers": ...})`` lists the real tools and runs one."""
    llm = ScriptedLLM([tool_call_reply("get_current_time", {"timezone": "UTC"}), text_reply("done")])
    doc = {"mcpServers": {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}}}
    with Agent(llm, mcp_servers=doc, builtin_list_tools=False) as agent:
        answer = agent.ask("time?", timeout_seconds=60)
        assert answer["status"] == "completed"
        results = [m for m in agent.history if getattr(m, "tool_name", None) == "get_current_time"]
        assert len(results) == 1 and '"timezone": "UTC"' in results[0].text


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.node
def test_modelcontextprotocol_servers_447_filesystem_server_allows_a_directory_with_a_space(filesystem_stdio, tmp_path):
    """modelcontextprotocol/servers#447 with the real npm server-filesystem: the directory with a space is
    allowed as one path (the report's server disconnected at start).
    """
    folder = tmp_path / "Claude Code Group"
    folder.mkdir()
    (entry,) = parse_mcp_servers({"mcpServers": {"filesystem": {
        "command": filesystem_stdio[0], "args": [*filesystem_stdio[1:], str(folder)]}}})
    assert str(folder) in call(entry, "list_allowed_directories")
