"""OAuth settings of ``mcpServers`` entries as each client writes them (yiemagent.mcp.config_auth).

Shapes from the clients' documentation: Claude Code (.mcp.json ``oauth.clientId``/``callbackPort``/
``scopes``), VS Code (``oauth.clientId``, microsoft/vscode#308648), Gemini CLI (``oauth.enabled``/
``clientId``/``clientSecret``/``scopes``, ``authProviderType``), opencode (``oauth.clientId``/
``clientSecret``/``scope``, ``"oauth": false``), Cursor (``auth.CLIENT_ID``/``CLIENT_SECRET``/
``scopes``), Codex CLI (``[mcp_servers.NAME.oauth] client_id``, ``scopes``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from yiemagent.exceptions import ConfigError
from yiemagent.mcp.config import load_mcp_config, parse_mcp_servers
from yiemagent.textpolicy import display_text

URL = "https://mcp.example.com/mcp"


def _one(document: dict, environ: dict | None = None):  # type: ignore[no-untyped-def,type-arg]
    (server,) = parse_mcp_servers(document, environ=environ or {})
    return server


def test_claude_code_mcp_json_oauth() -> None:
    server = _one({"mcpServers": {"s": {"type": "http", "url": URL,
                                        "oauth": {"clientId": "cid", "callbackPort": 8080, "scopes": "read write"}}}})
    assert server.oauth == {"client_id": "cid", "callback_port": 8080, "scopes": ["read", "write"]}


def test_vscode_mcp_json_oauth_client_id() -> None:
    server = _one({"servers": {"s": {"type": "http", "url": URL, "oauth": {"clientId": "guid-1"}}}})
    assert server.oauth == {"client_id": "guid-1"}


def test_gemini_cli_oauth_with_secret_from_the_environment() -> None:
    server = _one({"mcpServers": {"s": {"httpUrl": URL, "authProviderType": "dynamic_discovery",
                                        "oauth": {"enabled": True, "clientId": "cid",
                                                  "clientSecret": "${GEMINI_SECRET}", "scopes": ["a", "b"],
                                                  "redirectUri": "http://localhost:7777/oauth/callback"}}}},
                  {"GEMINI_SECRET": "s3cret-VALUE-42"})
    assert server.oauth == {"client_id": "cid", "client_secret": "s3cret-VALUE-42", "scopes": ["a", "b"],
                            "redirect_uri": "http://localhost:7777/oauth/callback"}
    assert "s3cret-VALUE-42" not in repr(server)
    assert "s3cret-VALUE-42" not in display_text("the secret is s3cret-VALUE-42")  # registered as a secret


def test_gemini_cli_oauth_disabled_and_opencode_oauth_false_mean_no_oauth() -> None:
    assert _one({"mcpServers": {"s": {"httpUrl": URL, "oauth": {"enabled": False, "clientId": "x"}}}}).oauth is None
    assert _one({"mcp": {"s": {"type": "remote", "url": URL, "oauth": False}}}).oauth is None


def test_opencode_oauth_scope_string() -> None:
    server = _one({"mcp": {"s": {"type": "remote", "url": URL,
                                 "oauth": {"clientId": "cid", "clientSecret": "cs-1234", "scope": "tools:read"}}}})
    assert server.oauth == {"client_id": "cid", "client_secret": "cs-1234", "scopes": ["tools:read"]}


def test_cursor_auth_object() -> None:
    server = _one({"mcpServers": {"s": {"url": URL, "auth": {"CLIENT_ID": "cid", "CLIENT_SECRET": "${S}",
                                                             "scopes": ["openid", "offline_access"]}}}},
                  {"S": "cursor-secret-9"})
    assert server.oauth == {"client_id": "cid", "client_secret": "cursor-secret-9",
                            "scopes": ["openid", "offline_access"]}


def test_codex_toml_oauth_table_and_scopes(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[mcp_servers.docs]\nurl = "https://mcp.example.com/mcp"\nscopes = ["read"]\n'
                    '[mcp_servers.docs.oauth]\nclient_id = "codex-cid"\ncallback_port = 33418\n')
    (server,) = load_mcp_config(path)
    assert server.oauth == {"client_id": "codex-cid", "callback_port": 33418, "scopes": ["read"]}


def test_codex_scopes_alone_ask_for_oauth(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[mcp_servers.docs]\nurl = "https://mcp.example.com/mcp"\nscopes = ["read", "write"]\n')
    (server,) = load_mcp_config(path)
    assert server.oauth == {"scopes": ["read", "write"]}


def test_entry_without_auth_has_no_oauth() -> None:
    assert _one({"mcpServers": {"s": {"url": URL, "headers": {"X-Key": "k"}}}}).oauth is None


@pytest.mark.parametrize(("entry", "message"), [
    ({"url": URL, "oauth": {"clientId": "c", "tokenUrl": "https://as/token"}}, r"oauth\.tokenUrl: not supported"),
    ({"url": URL, "oauth": {"authServerMetadataUrl": "https://as/.well-known/x"}}, "authServerMetadataUrl"),
    ({"url": URL, "oauth": {"clientID": "c"}}, r"oauth\.clientID: unknown OAuth setting"),
    ({"url": URL, "oauth": "bearer"}, "not an auth setting"),
    ({"url": URL, "oauth": {"callbackPort": "8080"}}, "TCP port number"),
    ({"url": URL, "oauth": {"redirectUri": "https://evil.example.com/cb"}}, "loopback URL"),
    ({"url": URL, "oauth": {"redirectUri": "http://127.0.0.1:1/cb", "callbackPort": 2}}, "wrong port"),
    ({"url": URL, "oauth": {}, "auth": {}}, "not both"),
    ({"url": URL, "authProviderType": "google_credentials"}, "Google credential provider"),
    ({"command": "server", "oauth": {"clientId": "c"}}, "oauth do\\(es\\) not apply to a stdio server"),
    ({"url": URL, "oauth": {"scopes": ["a b"]}}, "scope names"),
])
def test_unknown_or_unusable_auth_shapes_are_refused_naming_the_key(entry: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError, match=message):
        parse_mcp_servers({"mcpServers": {"s": entry}}, environ={})
