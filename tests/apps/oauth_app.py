"""The gunicorn target of the OAuth worker tests: ``flask_durable`` whose agents call a protected MCP server.

``gunicorn -w 2 tests.apps.oauth_app:app``; besides ``kit``'s store variables:

    YIEMAGENT_TEST_OAUTH_URL      the protected MCP endpoint (tests/servers/oauth_sdk_server.py)
    YIEMAGENT_TEST_LOGINS         a file this process appends ``{"pid": ...}`` to on every login it runs

Each worker process makes one ``MCPClient(url, auth=OAuth(storage=StoreTokenStorage(store)))`` on its first
request: the tokens (and the registered client) live in the conversation store's database, so one login
serves every worker. The model is ``kit.instant_model``: ``kit.instruction(label, [("note", call)])`` makes
it call the server's ``note`` tool.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from tests.apps import kit
from yiemagent import Agent
from yiemagent.examples.flask_durable import create_app
from yiemagent.mcp import MCPClient
from yiemagent.mcp.auth import HeadlessRedirectHandler, OAuth
from yiemagent.store import StoreTokenStorage

_lock = threading.Lock()
_clients: list[MCPClient] = []


class CountingLogin:
    """The headless login, recording each use (pid) in ``YIEMAGENT_TEST_LOGINS``."""

    def __init__(self) -> None:
        self.handler = HeadlessRedirectHandler(timeout_seconds=10)

    @property
    def redirect_uri(self) -> str | None:
        return self.handler.redirect_uri

    @redirect_uri.setter
    def redirect_uri(self, value: str | None) -> None:
        self.handler.redirect_uri = value

    def __call__(self, url: str) -> tuple[str, str | None, str | None]:
        with open(os.environ["YIEMAGENT_TEST_LOGINS"], "a") as handle:
            handle.write(json.dumps({"pid": os.getpid()}) + "\n")
        return self.handler(url)


def client(store: Any) -> MCPClient:
    """This process's client of the protected server (made on first use)."""
    with _lock:
        if not _clients:
            auth = OAuth(redirect_handler=CountingLogin(), storage=StoreTokenStorage(store),
                         refresh_margin_seconds=float(os.environ.get("YIEMAGENT_TEST_REFRESH_MARGIN", "0.5")),
                         timeout_seconds=10)
            _clients.append(MCPClient(os.environ["YIEMAGENT_TEST_OAUTH_URL"], auth=auth, timeout_seconds=20,
                                      name="protected"))
        return _clients[0]


def make_agent(store: Any, conversation_id: str) -> Agent:
    return Agent(kit.instant_model, mcp_servers=[client(store)], store=store, conversation_id=conversation_id,
                 lease_seconds=float(os.environ.get("YIEMAGENT_TEST_LEASE_TTL", "2")))


app = create_app(kit.store_from_env, make_agent, answer_timeout_seconds=60.0)
