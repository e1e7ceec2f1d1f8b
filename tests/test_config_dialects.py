"""Config files as the desktop clients and coding agents write them (``yiemagent.mcp.config_dialects``).

Each test takes a document in the form the client's own documentation (or a public report)
gives, reads it with ``load_mcp_config`` / ``parse_mcp_servers``, and talks to the real probe
server (tests/servers/probe_server.py, official ``mcp`` SDK: it reports the argv, environment
and HTTP headers it got) over the transport the entry names.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, wait_for_port
from yiemagent import ConfigError
from yiemagent.mcp.config import MCPServerConfig, load_mcp_config, parse_mcp_servers

PROBE = str(SERVERS / "probe_server.py")


@pytest.fixture(scope="module")
def probe_http() -> Iterator[str]:
    port = free_port()
    process = start_process([PYTHON, PROBE, "--http", str(port)])
    try:
        wait_for_port(port, timeout_seconds=20, process=process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


def call(config: Any, tool: str, arguments: dict[str, Any] | None = None) -> str:
    assert isinstance(config, MCPServerConfig), config
    with config.client() as client:
        result = client.call_tool(tool, arguments or {})
    assert result["isError"] is False, result
    return "\n".join(block["text"] for block in result["content"] if block.get("type") == "text")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_nuxt_mcp_dev_8_windsurf_server_url_is_read_as_the_http_url(probe_http, tmp_path):
    """antfu/nuxt-mcp-dev#8 and #18, context7#829: Windsurf's ``mcp_config.json`` names an HTTP server's
    endpoint ``serverUrl``; yiemagent refused it (``unknown key(s) serverUrl``) though its docstring named
    Windsurf. Read with its ``headers``; ``disabledTools: []`` (Windsurf writes it) is accepted.
    """
    path = write(tmp_path, "mcp_config.json", json.dumps({"mcpServers": {"nuxt": {
        "serverUrl": probe_http, "headers": {"X-Team": "${TEAM}"}, "disabledTools": []}}}))
    (entry,) = load_mcp_config(path, environ={"TEAM": "blue"})
    assert entry.url == probe_http and entry.name == "nuxt"
    assert json.loads(call(entry, "headers"))["x-team"] == "blue"


def test_windsurf_a_non_empty_tool_filter_is_refused_with_the_hook_hint():
    with pytest.raises(ConfigError, match=r"mcpServers\.s: \"disabledTools\" filters are not supported.*hook"):
        parse_mcp_servers({"mcpServers": {"s": {"serverUrl": "http://127.0.0.1:1/mcp", "disabledTools": ["rm"]}}})


@pytest.mark.slow
def test_zed_context_servers_with_enabled_and_source_keys(tmp_path):
    """Zed's settings.json (zed.dev/docs/ai/mcp; fancier21/mcp-local-server's README): ``context_servers``
    with ``"source": "custom"`` and ``"enabled"``; a disabled one is left out.
    """
    path = write(tmp_path, "settings.json", """{
      // Zed settings
      "theme": "One Dark",
      "context_servers": {
        "probe": {"enabled": true, "source": "custom", "command": "@PYTHON@", "args": ["@PROBE@", "a b"], "env": {}},
        "off": {"enabled": false, "source": "custom", "command": "nothing-here", "args": []},
      }
    }""".replace("@PYTHON@", PYTHON).replace("@PROBE@", PROBE))
    (entry,) = load_mcp_config(path)
    assert entry.name == "probe"
    assert json.loads(call(entry, "argv")) == ["a b"]


@pytest.mark.slow
def test_zed_old_form_command_path_args_env():
    """Zed's first context-server settings (2025): ``"command": {"path", "args", "env"}`` and ``"settings"``."""
    (entry,) = parse_mcp_servers({"context_servers": {"probe": {
        "command": {"path": PYTHON, "args": [PROBE], "env": {"ZED_VAR": "z"}}, "settings": {}}}})
    assert call(entry, "env", {"name": "ZED_VAR"}) == "z"


@pytest.mark.slow
def test_goose_extensions_yaml_with_cmd_envs_and_builtins_left_out(tmp_path):
    """Goose's ``~/.config/goose/config.yaml`` (block.github.io/goose/docs/guides/config-files): ``extensions``
    with ``cmd``, ``args``, ``envs``, ``enabled``, ``timeout`` (seconds); built-in extensions
    (``type: builtin``) are Goose's own and left out.
    """
    path = write(tmp_path, "config.yaml", f"""
GOOSE_PROVIDER: openai
extensions:
  developer:
    enabled: true
    type: builtin
    name: developer
    timeout: 300
  probe:
    enabled: true
    type: stdio
    name: probe
    cmd: {PYTHON}
    args: [{PROBE}]
    envs: {{GOOSE_VAR: "g"}}
    env_keys: []
    description: reports what it got
    timeout: 120
  unused:
    enabled: false
    type: stdio
    cmd: nothing-here
""")
    (entry,) = load_mcp_config(path)
    assert (entry.name, entry.timeout_seconds) == ("probe", 120.0)
    assert call(entry, "env", {"name": "GOOSE_VAR"}) == "g"


def test_goose_a_yaml_name_read_as_a_boolean_is_named_in_the_error(tmp_path):
    """YAML 1.1 reads an extension named ``off`` (or on/yes/no) as ``False``: say so, not just "not False"."""
    path = write(tmp_path, "config.yaml", "extensions:\n  off:\n    type: stdio\n    cmd: x\n")
    with pytest.raises(ConfigError, match=r"extensions\.False: .*YAML reads on/off/yes/no as true/false"):
        load_mcp_config(path)


def test_goose_streamable_http_uri_with_headers(probe_http):
    (entry,) = parse_mcp_servers({"extensions": {"remote": {
        "type": "streamable_http", "uri": probe_http, "headers": {"Authorization": "Bearer t"}, "enabled": True}}})
    assert json.loads(call(entry, "headers"))["authorization"] == "Bearer t"


def test_opencode_local_command_list_environment_and_timeout_in_milliseconds(probe_http, tmp_path):
    """Opencode's ``opencode.json`` (opencode.ai/docs/mcp-servers): ``mcp`` with ``type: "local"``, the whole
    command as a list, ``environment``, ``enabled``, ``timeout`` in milliseconds; ``type: "remote"``.
    """
    path = write(tmp_path, "opencode.json", json.dumps({"$schema": "https://opencode.ai/config.json", "mcp": {
        "probe": {"type": "local", "command": [PYTHON, PROBE], "enabled": True,
                  "environment": {"OC_VAR": "o"}, "timeout": 5000},
        "remote": {"type": "remote", "url": probe_http, "headers": {"X-Key": "k"}},
        "off": {"type": "local", "command": ["nothing-here"], "enabled": False}}}))
    probe, remote = load_mcp_config(path)
    assert probe.timeout_seconds == 5.0 and probe.command == PYTHON and probe.args == [PROBE]
    assert call(probe, "env", {"name": "OC_VAR"}) == "o"
    assert json.loads(call(remote, "headers"))["x-key"] == "k"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")
def test_codex_config_toml_mcp_servers_with_bearer_token_env_var(probe_http, tmp_path):
    """Codex CLI's ``~/.codex/config.toml`` (developers.openai.com/codex/mcp): ``[mcp_servers.NAME]`` with
    ``command``/``args``/``env``, or ``url`` with ``bearer_token_env_var`` and ``http_headers``;
    ``tool_timeout_sec`` is the per-call timeout.
    """
    path = write(tmp_path, "config.toml", f"""
model = "o4-mini"

[mcp_servers.probe]
command = "{PYTHON}"
args = ["{PROBE}"]
env = {{ "CODEX_VAR" = "c" }}
startup_timeout_sec = 20
tool_timeout_sec = 45

[mcp_servers.remote]
url = "{probe_http}"
bearer_token_env_var = "REMOTE_TOKEN"
http_headers = {{ "X-Region" = "eu" }}
""")
    probe, remote = load_mcp_config(path, environ={"REMOTE_TOKEN": "tok"})
    assert probe.timeout_seconds == 45.0
    assert call(probe, "env", {"name": "CODEX_VAR"}) == "c"
    seen = json.loads(call(remote, "headers"))
    assert (seen["authorization"], seen["x-region"]) == ("Bearer tok", "eu")


def test_gemini_cli_http_url_and_timeout_in_milliseconds(probe_http):
    """Gemini CLI's settings.json (geminicli.com/docs/tools/mcp-server): ``httpUrl`` is Streamable HTTP,
    ``timeout`` is milliseconds, ``trust`` is its own; its ``url`` is the legacy SSE transport: refused.
    """
    (entry,) = parse_mcp_servers({"mcpServers": {"g": {"httpUrl": probe_http, "timeout": 30000, "trust": False,
                                                       "headers": {"X-G": "1"}}}})
    assert entry.timeout_seconds == 30.0  # type: ignore[union-attr]
    assert json.loads(call(entry, "headers"))["x-g"] == "1"
    with pytest.raises(ConfigError, match=r"legacy HTTP\+SSE.*httpUrl"):
        parse_mcp_servers({"mcpServers": {"g": {"url": "http://127.0.0.1:1/sse", "trust": True}}})


def test_continue_config_yaml_list_of_named_servers_with_request_options(probe_http, tmp_path):
    """Continue's ``config.yaml`` (docs.continue.dev/customize/deep-dives/mcp): ``mcpServers`` is a list of
    entries with ``name``; a remote one carries ``requestOptions.headers``.
    """
    path = write(tmp_path, "config.yaml", f"""
name: my-assistant
version: 0.0.1
schema: v1
mcpServers:
  - name: probe
    command: {PYTHON}
    args: [{PROBE}]
    env: {{CONT_VAR: "v"}}
  - name: remote
    type: streamable-http
    url: {probe_http}
    requestOptions:
      headers: {{X-C: "c"}}
""")
    probe, remote = load_mcp_config(path)
    assert (probe.name, remote.name) == ("probe", "remote")
    assert call(probe, "env", {"name": "CONT_VAR"}) == "v"
    assert json.loads(call(remote, "headers"))["x-c"] == "c"


@pytest.mark.slow
def test_continue_old_config_json_transport_form():
    """Continue's old config.json: ``experimental.modelContextProtocolServers: [{"transport": {...}}]``."""
    (entry,) = parse_mcp_servers({"experimental": {"modelContextProtocolServers": [
        {"transport": {"type": "stdio", "command": PYTHON, "args": [PROBE, "x"]}}]}})
    assert json.loads(call(entry, "argv")) == ["x"]


def test_cline_streamable_http_type_timeout_seconds_and_auto_approve(probe_http):
    """Cline's ``cline_mcp_settings.json`` (docs.cline.bot/mcp): ``"type": "streamableHttp"``, ``timeout`` in
    seconds, ``autoApprove``/``alwaysAllow``/``disabled``.
    """
    (entry,) = parse_mcp_servers({"mcpServers": {"c": {"type": "streamableHttp", "url": probe_http, "timeout": 60,
                                                       "autoApprove": [], "alwaysAllow": ["x"], "disabled": False}}})
    assert entry.timeout_seconds == 60.0  # type: ignore[union-attr]
    assert "x-" not in call(entry, "headers")


def test_claude_code_mcp_json_and_lm_studio_cursor_notation(probe_http, tmp_path):
    """Claude Code's project ``.mcp.json`` (``type: "http"``) and LM Studio's ``mcp.json`` (Cursor's notation:
    ``url`` + ``headers``, or ``command``/``args``/``env``) are the canonical form.
    """
    path = write(tmp_path, ".mcp.json", json.dumps({"mcpServers": {
        "web": {"type": "http", "url": probe_http, "headers": {"Authorization": "Bearer ${API_KEY:-none}"}},
        "local": {"type": "stdio", "command": PYTHON, "args": [PROBE], "env": {"L": "1"}}}}))
    web, local = load_mcp_config(path, environ={})
    assert json.loads(call(web, "headers"))["authorization"] == "Bearer none"
    assert call(local, "env", {"name": "L"}) == "1"


def test_vscode_mcp_json_with_inputs_and_sandbox_keys_is_read():
    """VS Code's ``.vscode/mcp.json`` (code.visualstudio.com/docs/copilot/customization/mcp-servers) keeps
    ``inputs`` beside ``servers``; the servers are read, ``${input:...}`` in a value is refused clearly.
    """
    document = {"inputs": [{"type": "promptString", "id": "key", "password": True}],
                "servers": {"p": {"type": "stdio", "command": PYTHON, "args": [PROBE]}}}
    (entry,) = parse_mcp_servers(document)
    assert isinstance(entry, MCPServerConfig) and entry.command == PYTHON
    with pytest.raises(ConfigError, match=r"input:key.*not supported"):
        parse_mcp_servers({"servers": {"p": {"type": "http", "url": "http://127.0.0.1:1/mcp",
                                             "headers": {"K": "${input:key}"}}}})


def test_oauth_settings_are_read_not_refused():
    """Issue 17: Gemini CLI's ``"oauth": {"enabled": true}`` is OAuth with discovery (tests/test_config_auth.py)."""
    (server,) = parse_mcp_servers({"mcpServers": {"g": {"httpUrl": "http://127.0.0.1:1/mcp",
                                                        "oauth": {"enabled": True}}}})
    assert server.oauth == {}


@pytest.mark.parametrize("entry, message", [
    ({"type": ["stdio"], "command": "x"}, r"\"type\" must be a string"),
    ({"command": "x", 1: "y"}, r"keys must be strings"),
    ({"serverUrl": "http://a/mcp", "url": "http://b/mcp"}, r"give one URL"),
])
def test_malformed_dialect_entries_are_config_errors_not_type_errors(entry, message):
    """The fuzz run of issue 15: a list as ``type`` raised ``TypeError: unhashable type``."""
    with pytest.raises(ConfigError, match=message):
        parse_mcp_servers({"mcpServers": {"s": entry}})


def test_a_100000_deep_config_document_is_a_config_error_not_a_recursion_error(tmp_path):
    """The fuzz run of issue 15: a 100,000-deep JSON config raised ``RecursionError``."""
    path = write(tmp_path, "mcp.json", '{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ConfigError, match=r"nested too deep|nested more than"):
        load_mcp_config(path)
    path = write(tmp_path, "deep.json", '{"mcpServers": {"s": {"env": ' + '{"a": ' * 300 + "1" + "}" * 300 + "}}}")
    with pytest.raises(ConfigError, match=r"nested more than 200 levels"):
        load_mcp_config(path)


@pytest.mark.slow
def test_edison_watch_app_20_zed_assistant_mcp_servers_is_read_too():
    """Edison-Watch/app#20: Zed's settings.json keeps servers under ``context_servers`` or, in some versions,
    ``assistant.mcp_servers``; a reader of only one missed the other. Both are read.
    """
    (entry,) = parse_mcp_servers({"assistant": {"version": "2", "mcp_servers": {
        "probe": {"command": PYTHON, "args": [PROBE, "z"]}}}})
    assert json.loads(call(entry, "argv")) == ["z"]


# --------------------------------------------------------------------------- found by a new user's trial


def test_gemini_cli_dollar_var_and_opencode_env_and_file_forms_are_expanded_not_sent_literally(probe_http, tmp_path):
    """Gemini CLI documents ``$VAR`` (and ``${VAR}``) in ``env``/``headers``; opencode ``{env:VAR}`` and
    ``{file:path}``. They reached the server as literal text (``Bearer $PROBE_TOKEN``).
    """
    environ = {"PROBE_TOKEN": "tok-1"}
    gemini_dir = tmp_path / ".gemini"
    gemini_dir.mkdir()
    path = gemini_dir / "settings.json"  # the file name says Gemini CLI, even without Gemini-only keys
    path.write_text(json.dumps({"mcpServers": {"g": {"httpUrl": probe_http,
                                                     "headers": {"Authorization": "Bearer $PROBE_TOKEN"}},
                                               "s": {"command": PYTHON, "args": [PROBE],
                                                     "env": {"TOKEN_ENV": "$PROBE_TOKEN"}}}}))
    entry, stdio = load_mcp_config(path, environ=environ)
    assert json.loads(call(entry, "headers"))["authorization"] == "Bearer tok-1"
    assert call(stdio, "env", {"name": "TOKEN_ENV"}) == "tok-1"  # by the file name: no Gemini-only key here
    (entry,) = parse_mcp_servers({"mcpServers": {"g": {"httpUrl": probe_http, "headers": {"X-T": "$PROBE_TOKEN"}}}},
                                 environ=environ)
    assert json.loads(call(entry, "headers"))["x-t"] == "tok-1"
    key = tmp_path / "key.txt"
    key.write_text("from-file\n")
    (entry,) = parse_mcp_servers({"mcp": {"r": {"type": "remote", "url": probe_http, "headers": {
        "Authorization": "Bearer {env:PROBE_TOKEN}", "X-File": f"{{file:{key}}}"}}}}, environ=environ)
    seen = json.loads(call(entry, "headers"))
    assert (seen["authorization"], seen["x-file"]) == ("Bearer tok-1", "from-file")


def test_files_as_goose_zed_opencode_and_codex_write_them_are_read_whole(tmp_path):
    """Goose writes ``envs: {}`` on a streamable_http extension, Zed keeps ``"source": "extension"`` servers
    (run by Zed's extensions), opencode documents ``"oauth": false``, Codex ``env_http_headers``: each made
    the whole file be refused.
    """
    goose = write(tmp_path, "config.yaml", "extensions:\n  p:\n    type: streamable_http\n    uri: http://127.0.0.1:1/mcp\n"
                                           "    envs: {}\n    env_keys: []\n    headers: {}\n    enabled: true\n")
    assert [e.url for e in load_mcp_config(goose)] == ["http://127.0.0.1:1/mcp"]
    zed = parse_mcp_servers({"context_servers": {
        "time": {"command": PYTHON, "args": ["-m", "mcp_server_time"]},
        "postgres-context-server": {"source": "extension", "enabled": True, "settings": {"database_url": "x"}}}})
    assert [e.name for e in zed] == ["time"]  # type: ignore[union-attr]
    (opencode,) = parse_mcp_servers({"mcp": {"r": {"type": "remote", "url": "http://127.0.0.1:1/mcp", "oauth": False,
                                                   "headers": {"Authorization": "Bearer k"}}}})
    assert opencode.headers == {"Authorization": "Bearer k"}  # type: ignore[union-attr]
    (codex,) = parse_mcp_servers({"mcp_servers": {"r": {"url": "http://127.0.0.1:1/mcp",
                                                        "env_http_headers": {"X-Api-Key": "API_KEY"}}}},
                                 environ={"API_KEY": "k-1"})
    assert codex.headers == {"X-Api-Key": "k-1"}  # type: ignore[union-attr]


@pytest.mark.parametrize("entry", [{"disabled": "true"}, {"disabled": 1}, {"enabled": "false"}, {"enabled": 0}])
def test_a_disabled_or_enabled_flag_that_is_not_a_boolean_is_an_error_not_enabled(entry):
    """``"disabled": "true"`` started the server the user switched off."""
    with pytest.raises(ConfigError, match=r"(disabled|enabled): must be true or false"):
        parse_mcp_servers({"mcpServers": {"a": {"command": PYTHON, **entry}}})


def test_a_utf16_config_from_windows_powershell_is_read(tmp_path):
    """PowerShell 5's ``>`` and ``Out-File`` write UTF-16 with a byte order mark: a raw UnicodeDecodeError."""
    path = tmp_path / "mcp.json"
    path.write_bytes(json.dumps({"mcpServers": {"a": {"command": PYTHON}}}).encode("utf-16"))
    assert [e.command for e in load_mcp_config(path)] == [PYTHON]
    path.write_bytes(b'{"mcpServers": {"a": {"command": "\xff\xfe\xfd"}}}')
    with pytest.raises(ConfigError, match=r"not UTF-8 text .*save it as UTF-8"):
        load_mcp_config(path)


def test_continue_hub_secrets_and_an_empty_variable_have_their_own_messages():
    with pytest.raises(ConfigError, match=r"Continue's \$\{\{ secrets.NAME \}\} values come from Continue Hub"):
        parse_mcp_servers({"mcpServers": [{"name": "c", "command": "x", "env": {"T": "${{ secrets.TOKEN }}"}}]})
    with pytest.raises(ConfigError, match=r"EMPTY_T is empty"):
        parse_mcp_servers({"mcpServers": {"a": {"command": "x", "env": {"T": "${EMPTY_T}"}}}}, environ={"EMPTY_T": ""})


def test_a_yaml_alias_bomb_is_walked_once_per_object(tmp_path):
    """A small YAML whose aliases nest 9 deep (9^9 references) made the depth check walk every path."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = write(tmp_path, "config.yaml", "\n".join(lines) + "\nextensions:\n  p:\n    cmd: x\n    args: *a9\n")
    with pytest.raises(ConfigError, match=r"args\[0\]: must be a string"):
        load_mcp_config(path)
