"""``MCPClient.list_tools`` paging against a real low-level SDK server (tests/servers/paging_server.py:
60 tools, 20 per page, ``nextCursor`` "20" then "40").
"""

from __future__ import annotations

import pytest

from tests.helpers import RecordingSession
from yiemagent.exceptions import MCPRPCError, YiemagentWarning
from yiemagent.mcp import jsonrpc

EXPECTED = [f"tool_{i:02d}" for i in range(60)]


def test_list_tools_follows_next_cursor_through_three_pages_and_returns_each_tool_once_in_order(
    paging_server, open_client
):
    """Spec (Pagination): the client repeats ``tools/list`` with ``params.cursor`` while the server
    gives ``nextCursor``; every tool appears once, in server order.
    """
    http = RecordingSession()
    names = [t["name"] for t in open_client(paging_server, session=http).list_tools()]
    assert names == EXPECTED
    lists = http.rpc("tools/list")
    assert [r.message.get("params") for r in lists] == [None, {"cursor": "20"}, {"cursor": "40"}]
    assert all(r.status == 200 for r in lists)


def test_paged_tools_can_be_called_by_name(paging_server, open_client):
    """A tool from the last page is callable; the server echoes its name."""
    client = open_client(paging_server)
    assert client.list_tools()[-1]["name"] == "tool_59"
    result = client.call_tool("tool_59")
    assert result == {"content": [{"type": "text", "text": "tool_59"}], "isError": False}


def test_paging_stops_with_a_warning_after_max_pages(paging_server, open_client):
    """yiemagent-defined: more than ``max_pages`` pages stops paging with a ``YiemagentWarning`` and
    returns the tools listed so far.
    """
    client = open_client(paging_server)
    client.max_pages = 2
    with pytest.warns(YiemagentWarning, match="over 2 pages"):
        names = [t["name"] for t in client.list_tools()]
    assert names == EXPECTED[:40]


def test_server_rejects_an_invalid_cursor_with_invalid_params(paging_server, open_client):
    """Spec (Pagination): an invalid cursor is JSON-RPC error -32602, read as ``MCPRPCError.code``."""
    client = open_client(paging_server)
    client.connect()
    response = client.transport.send(jsonrpc.make_request("tools/list", {"cursor": "not-a-cursor"}, "bad-cursor"))
    with pytest.raises(MCPRPCError) as caught:
        jsonrpc.result_of(response)
    assert caught.value.code == -32602
