"""Both eras over real HTTP with real clients, a tool asking the person (issue 28 points 1, 2, 4).

``Booking().server()`` (tests/mcp/server/kit.py) under werkzeug's threaded server on a socket: ``book``
elicits a confirmation, then lists the client's roots; ``summarize`` asks the client's model. Talked to by
yiemagent's ``MCPClient`` (negotiated default: 2026-07-28, ``input_required`` rounds; pinned to
2025-11-25: requests on the call's SSE stream, answers POSTed back) and by the official ``mcp`` SDK
``Client`` (``mode="auto"`` -> 2026-07-28, ``mode="legacy"`` -> 2025-11-25).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mcp.server.kit import Booking, serving
from yiemagent.mcp import MCPClient

pytestmark = pytest.mark.slow  # servers on sockets, a server process (stdio)


@pytest.fixture
def booking() -> Iterator[tuple[Booking, str]]:
    """The booking server at http://127.0.0.1:PORT/mcp, and its ``Booking`` (run counters)."""
    kept = Booking()
    with serving(kept.server().wsgi_app()) as url:
        yield kept, url


def person(asked: list[dict[str, Any]]) -> dict[str, Any]:
    """MCPClient options answering elicitation (yes), roots and sampling, noting each request."""

    def confirm(params: dict[str, Any]) -> dict[str, Any]:
        asked.append({"method": "elicitation/create", **params})
        return {"action": "accept", "content": {"ok": True}}

    def roots(params: dict[str, Any]) -> dict[str, Any]:
        asked.append({"method": "roots/list"})
        return {"roots": [{"uri": "file:///work", "name": "work"}]}

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        asked.append({"method": "sampling/createMessage", **params})
        return {"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "tiny"}

    return {"capabilities": {"elicitation": {}, "roots": {}, "sampling": {}},
            "request_handlers": {"elicitation/create": confirm, "roots/list": roots,
                                 "sampling/createMessage": sample}}


@pytest.mark.parametrize(("pinned", "era", "runs"), [(None, ("modern", "2026-07-28"), 3),
                                                     ("2025-11-25", ("legacy", "2025-11-25"), 1)])
def test_yiemagent_client_answers_what_a_served_tool_asks(booking: tuple[Booking, str], pinned: str | None,
                                                          era: tuple[str, str], runs: int) -> None:
    kept, url = booking
    asked: list[dict[str, Any]] = []
    with MCPClient(url, timeout_seconds=60, protocol_version=pinned, **person(asked)) as client:
        result = client.call_tool("book", {"room": "Lab"})
        assert (client.era, client.protocol_version) == era
        assert result["isError"] is False
        assert result["content"][0]["text"] == "booked Lab for 120 EUR; roots: file:///work"
        summary = client.call_tool("summarize", {"text": "a long text"})
        assert summary["content"][0]["text"] == "tiny says: short"
    assert [a["method"] for a in asked] == ["elicitation/create", "roots/list", "sampling/createMessage"]
    assert asked[0]["message"] == "Book Lab for 120 EUR?" and asked[2]["maxTokens"] == 50
    assert kept.runs == ["Lab"] * runs  # 2026-07-28 runs the tool again per answered round; 2025-11-25 once
    assert kept.lookups == ["Lab"]  # what the tool kept in current_call().saved was not redone


@pytest.mark.parametrize(("mode", "version", "runs"), [("auto", "2026-07-28", 2), ("legacy", "2025-11-25", 1)])
def test_the_mcp_sdk_client_answers_an_elicitation(booking: tuple[Booking, str], mode: str, version: str,
                                                   runs: int) -> None:
    from mcp import Client, types

    kept, url = booking
    seen: dict[str, Any] = {"asked": []}

    async def elicit(context: Any, params: Any) -> Any:
        seen["asked"].append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    async def talk() -> None:
        with anyio.fail_after(120):
            async with Client(url, mode=mode, elicitation_callback=elicit) as client:  # type: ignore[arg-type]
                seen["version"] = client.protocol_version
                seen["result"] = await client.call_tool("book", {"room": "Hall"})

    anyio.run(talk)
    assert seen["version"] == version
    assert seen["asked"] == ["Book Hall for 160 EUR?"]
    assert seen["result"].content[0].text == "booked Hall for 160 EUR; roots: none"  # no roots capability
    assert kept.runs == ["Hall"] * runs


@pytest.mark.parametrize(("pinned", "era"), [(None, ("modern", "2026-07-28")),
                                             ("2025-11-25", ("legacy", "2025-11-25"))])
def test_over_stdio_in_both_eras(pinned: str | None, era: tuple[str, str]) -> None:
    """``python -m yiemagent.mcp.server``: 2026-07-28 rounds, or 2025-11-25 requests on stdout answered on stdin."""
    root = Path(__file__).resolve().parents[3]
    asked: list[dict[str, Any]] = []
    with MCPClient.stdio(sys.executable, ["-m", "yiemagent.mcp.server", "tests.servers.served_booking:server"],
                         cwd=str(root), env={"PYTHONPATH": str(root)}, protocol_version=pinned, timeout_seconds=60,
                         **person(asked)) as client:
        result = client.call_tool("book", {"room": "Lab"})
        assert (client.era, client.protocol_version) == era
    assert result["content"][0]["text"] == "booked Lab for 120 EUR; roots: file:///work"
    assert [a["method"] for a in asked] == ["elicitation/create", "roots/list"]
