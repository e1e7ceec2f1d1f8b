"""``yiemagent tools/call/chat --auth oauth``: flags, usage errors, and the OAuth each server gets."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PYTHON
from yiemagent.cli import main
from yiemagent.cli.auth_options import DEFAULT_CALLBACK_PORT, SECRET_ENV
from yiemagent.cli.main import build_parser, server_configs
from yiemagent.mcp.auth.storage_file import FileTokenStorage

URL = "https://mcp.example.com/mcp"


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    return capsys.readouterr().err


def test_oauth_flags_without_auth_oauth_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--client-id need(s) --auth oauth" in _usage_error(["tools", URL, "--client-id", "cid"], capsys)
    assert "--scope need(s) --auth oauth" in _usage_error(["call", URL, "echo", "--scope", "read"], capsys)


def test_auth_oauth_needs_a_url_server(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["call", "--stdio", shlex.join([PYTHON, "-m", "mcp_server_time"]), "get_current_time",
                        "--auth", "oauth"], capsys)
    assert "--auth oauth is for servers given as URLs" in err
    assert "--callback-port must be a TCP port" in _usage_error(["tools", URL, "--auth", "oauth",
                                                                 "--callback-port", "70000"], capsys)


def _configs(argv: list[str]) -> list[Any]:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "call":
        from yiemagent.cli.main import _call_words  # the same parsing main() does

        _call_words(parser, args)
    return server_configs(args)


def test_auth_oauth_gives_the_url_server_an_oauth_with_the_flags(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, "env-SECRET-value-77")
    token_file = tmp_path / "tokens.json"
    (server,) = _configs(["call", URL, "echo", "--auth", "oauth", "--client-id", "cid", "--scope", "read write",
                          "--scope", "admin", "--callback-port", "40123", "--token-file", str(token_file)])
    oauth = server.auth
    assert oauth is not None
    text = repr(vars(oauth)) if hasattr(oauth, "__dict__") else repr(oauth)
    assert "env-SECRET-value-77" not in repr(oauth)
    assert "cid" in text and "40123" in text
    storages = [v for v in vars(oauth).values() if isinstance(v, FileTokenStorage)]
    assert [s.path for s in storages] == [token_file]


def test_the_client_of_an_oauth_server_carries_its_oauth(tmp_path: Path) -> None:
    (server,) = _configs(["tools", URL, "--auth", "oauth", "--token-file", str(tmp_path / "t.json")])
    client = server.client()
    try:
        assert server.auth in [getattr(client, "auth", None), getattr(client.transport, "auth", None)]
    finally:
        client.close()


def test_chat_and_tools_take_the_same_flags(tmp_path: Path) -> None:
    for verb in ("tools", "chat"):
        (server,) = _configs([verb, URL, "--auth", "oauth", "--token-file", str(tmp_path / "t.json")])
        assert server.auth is not None
    (plain,) = _configs(["tools", URL])
    assert plain.auth is None


def test_a_config_entry_with_oauth_logs_in_on_its_own_port(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "docs": {"type": "http", "url": URL, "oauth": {"clientId": "from-file", "callbackPort": 40999}},
        "plain": {"type": "http", "url": "https://other.example.com/mcp"}}}))
    docs, plain = _configs(["tools", "--config", str(config), "--token-file", str(tmp_path / "t.json")])
    assert plain.auth is None
    assert docs.auth is not None and "40999" in repr(vars(docs.auth)) and "from-file" in repr(vars(docs.auth))


def test_default_token_file_is_under_the_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (server,) = _configs(["tools", URL, "--auth", "oauth"])
    storages = [v for v in vars(server.auth).values() if isinstance(v, FileTokenStorage)]
    assert [s.path for s in storages] == [tmp_path / "yiemagent" / "tokens.json"]
    assert str(DEFAULT_CALLBACK_PORT) in repr(vars(server.auth))
    assert not os.path.exists(tmp_path / "yiemagent" / "tokens.json")  # nothing written before a login
