"""The real OAuth-protected SDK server (tests/servers/oauth_sdk_server.py) as a test fixture, and sentinel checks.

``oauth_server(*flags, split=False, trap=False) -> OAuthServer``: starts the server on free loopback ports
(``split``: the authorization server on its own origin; ``trap``: a third origin that records what it gets)
and stops it at teardown. ``OAuthServer`` reads the server's test routes: ``counts()``, ``issued()`` (every
secret it minted or received), ``log()`` (every request of every origin), ``expire()``, ``revoke()``.

``find_leaks(texts, secrets)`` names each (secret kind, channel) where a secret shows up.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from tests.helpers import PYTHON, SERVERS, free_port, process_output, start_process, stop_process, wait_for_port

__all__ = ["OAuthServer", "find_leaks", "oauth_server"]


@dataclass
class OAuthServer:
    """One running oauth_sdk_server.py: its URLs and its test routes."""

    process: subprocess.Popen[bytes]
    url: str
    """The MCP endpoint (the protected resource): ``http://127.0.0.1:<port>/mcp``."""
    as_base: str
    """The authorization server's origin (the issuer)."""
    trap: str | None = None
    """The third origin (``trap=True``), or None."""
    flags: list[str] = field(default_factory=list)

    def _get(self, path: str) -> Any:
        response = requests.get(f"{self.as_base}{path}", timeout=10)
        response.raise_for_status()
        return response.json()

    def counts(self) -> dict[str, int]:
        """``registrations``, ``authorizations`` (logins), ``code_grants``, ``refresh_grants``, ``rs_401``..."""
        return dict(self._get("/_counts"))

    def issued(self) -> dict[str, list[str]]:
        """Every secret the server minted or received, by kind (access_tokens, refresh_tokens, codes, ...)."""
        return dict(self._get("/_secrets"))

    def log(self, origin: str | None = None) -> list[dict[str, Any]]:
        """The requests the server's origins received (``origin``: ``"as"``, ``"rs"``, ``"as+rs"``, ``"trap"``)."""
        entries = list(self._get("/_log"))
        return [e for e in entries if origin is None or e["origin"] == origin]

    def expire(self) -> None:
        """Expire every access token now (the client's ``expires_at`` does not know)."""
        requests.post(f"{self.as_base}/_expire", timeout=10).raise_for_status()

    def revoke(self) -> None:
        """Forget every access and refresh token (only a new login helps)."""
        requests.post(f"{self.as_base}/_revoke", timeout=10).raise_for_status()

    def output(self) -> str:
        return process_output(self.process)


@pytest.fixture
def oauth_server() -> Iterator[Callable[..., OAuthServer]]:
    """Factory: ``oauth_server(*flags, split=False, trap=False) -> OAuthServer``; all stopped at teardown."""
    started: list[OAuthServer] = []

    def start(*flags: str, split: bool = False, trap: bool = False) -> OAuthServer:
        port = free_port()
        args = [PYTHON, str(SERVERS / "oauth_sdk_server.py"), "--port", str(port), *flags]
        ports = [port]
        as_port = trap_port = None
        if split:
            as_port = free_port()
            args += ["--as-port", str(as_port)]
            ports.append(as_port)
        if trap:
            trap_port = free_port()
            args += ["--trap-port", str(trap_port)]
            ports.append(trap_port)
        process = start_process(args)
        server = OAuthServer(process, f"http://127.0.0.1:{port}/mcp", f"http://127.0.0.1:{as_port or port}",
                             f"http://127.0.0.1:{trap_port}" if trap_port else None, list(flags))
        started.append(server)
        for each in ports:
            wait_for_port(each, timeout_seconds=20, process=process)
        return server

    yield start
    for server in started:
        stop_process(server.process)


def find_leaks(channels: Mapping[str, str], secrets: Mapping[str, list[str]]) -> list[tuple[str, str]]:
    """``(secret kind, channel name)`` for each secret found in a channel's text (empty: no leak)."""
    return [(kind, name) for kind, values in secrets.items() for value in values
            for name, text in channels.items() if value and value in text]
