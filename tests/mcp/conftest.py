"""The tests of this folder written for the handshake era speak it.

They test 2025-11-25 mechanics (sessions, ``initialize``, the GET stream,
``Last-Event-ID`` resumption, server requests on a stream) against servers
that speak both eras (the ``mcp`` 2.3 SDK) or raw peers written for the
handshake. ``MCPClient`` negotiates the 2026-07-28 era by default
(``protocol_version=None``); here the default is the handshake
(``"2025-11-25"``), except in the modules named ``test_modern*`` and
``test_conformance`` and in tests marked ``@pytest.mark.negotiate``, which
test negotiation and the new era. ``YIEMAGENT_TEST_MCP_ERA=negotiate`` turns
the pin off for a whole run (to see which promises hold in the new era).
A test taking the ``era`` fixture runs twice, pinned to 2025-11-25 and
negotiated into 2026-07-28: the promise-level tests (deadlines, cancel,
secrets, limits, protocol breaks, slow peers, paging guards, hostile results).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.helpers import PYTHON, SERVERS, serve_http
from tests.mcp.oauth_rig import oauth_server  # noqa: F401  (the OAuth-protected server fixture of this folder)
from yiemagent.mcp import MCPClient

_NEGOTIATING = ("test_modern", "test_conformance")
LEGACY = "2025-11-25"
MODERN = "2026-07-28"


@pytest.fixture(params=[LEGACY, MODERN])
def era(request: pytest.FixtureRequest) -> str:
    """Run a promise-level test in both eras: ``"2025-11-25"`` (``MCPClient`` pinned to the handshake) and
    ``"2026-07-28"`` (``MCPClient`` keeps its real default, negotiation, and the server speaks 2026-07-28:
    the ``mcp`` SDK server does; a raw peer must be ``raw_peer(modern=era == MODERN)``). Check with
    ``assert_era(client, era)`` that the client really spoke it.
    """
    return str(request.param)


def assert_era(client: MCPClient, era: str) -> None:
    """The client connected in ``era`` (``"2025-11-25"`` or ``"2026-07-28"``)."""
    assert (client.era, client.protocol_version) == ("legacy" if era == LEGACY else "modern", era)


@pytest.fixture(autouse=True)
def handshake_era_by_default(request: pytest.FixtureRequest) -> Iterator[None]:
    """``MCPClient(protocol_version=...)`` defaults to ``"2025-11-25"`` for the handshake-era tests."""
    callspec = getattr(request.node, "callspec", None)
    chosen = callspec.params.get("era") if callspec is not None else None  # the ``era`` fixture's (or a param's)
    if chosen == MODERN or (chosen != LEGACY and (
            request.module.__name__.rsplit(".", 1)[-1].startswith(_NEGOTIATING)
            or request.node.get_closest_marker("negotiate") is not None
            or os.environ.get("YIEMAGENT_TEST_MCP_ERA") == "negotiate")):
        yield
        return
    defaults = MCPClient.__init__.__kwdefaults__  # MCPClient.stdio() passes its options on: the same default
    saved = defaults["protocol_version"]
    defaults["protocol_version"] = "2025-11-25"
    try:
        yield
    finally:
        defaults["protocol_version"] = saved


@pytest.fixture(scope="module")
def modern_only_server() -> Iterator[str]:
    """URL of the ``mcp`` SDK server in 2026-07-28-only mode (``--modern-only``: no handshake, no GET)."""
    with serve_http([PYTHON, str(SERVERS / "sdk_server.py"), "--modern-only"]) as url:
        yield url


@pytest.fixture
def clients() -> Iterator[list[MCPClient]]:
    r"""A list to put ``MCPClient``\ s in; each is closed after the test."""
    made: list[MCPClient] = []
    yield made
    for client in made:
        client.close()
