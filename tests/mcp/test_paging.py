"""``MCPClient.list_tools`` paging against a real low-level SDK server (tests/servers/paging_server.py:
60 tools, 20 per page, ``nextCursor`` "20" then "40"). Tests taking ``era`` run in both eras (the paging
guards: max pages, the total listing deadline, a repeated cursor, a hanging page).
"""

from __future__ import annotations

import time

import pytest

from tests.helpers import RecordingSession
from tests.mcp.conftest import MODERN, assert_era
from tests.servers.raw_http_peer import Reply
from yiemagent.exceptions import MCPRPCError, MCPTimeoutError, YiemagentWarning
from yiemagent.mcp import jsonrpc

EXPECTED = [f"tool_{i:02d}" for i in range(60)]


def test_list_tools_follows_next_cursor_through_three_pages_and_returns_each_tool_once_in_order(
    paging_server, open_client, era
):
    """Spec (Pagination): the client repeats ``tools/list`` with ``params.cursor`` while the server
    gives ``nextCursor``; every tool appears once, in server order.
    """
    http = RecordingSession()
    client = open_client(paging_server, session=http)
    names = [t["name"] for t in client.list_tools()]
    assert names == EXPECTED
    assert_era(client, era)
    lists = http.rpc("tools/list")
    params = [{k: v for k, v in (r.message.get("params") or {}).items() if k != "_meta"} for r in lists]
    assert params == [{}, {"cursor": "20"}, {"cursor": "40"}]
    assert all(r.status == 200 for r in lists)


def test_paged_tools_can_be_called_by_name(paging_server, open_client):
    """A tool from the last page is callable; the server echoes its name."""
    client = open_client(paging_server)
    assert client.list_tools()[-1]["name"] == "tool_59"
    result = client.call_tool("tool_59")
    assert result == {"content": [{"type": "text", "text": "tool_59"}], "isError": False}


def test_paging_stops_with_a_warning_after_max_pages(paging_server, open_client, era):
    """yiemagent-defined: more than ``max_pages`` pages stops paging with a ``YiemagentWarning`` and
    returns the tools listed so far.
    """
    client = open_client(paging_server)
    client.max_pages = 2
    with pytest.warns(YiemagentWarning, match="over 2 pages"):
        names = [t["name"] for t in client.list_tools()]
    assert names == EXPECTED[:40]
    assert_era(client, era)


def test_server_rejects_an_invalid_cursor_with_invalid_params(paging_server, open_client):
    """Spec (Pagination): an invalid cursor is JSON-RPC error -32602, read as ``MCPRPCError.code``."""
    client = open_client(paging_server)
    client.connect()
    response = client.transport.send(jsonrpc.make_request("tools/list", {"cursor": "not-a-cursor"}, "bad-cursor"))
    with pytest.raises(MCPRPCError) as caught:
        jsonrpc.result_of(response)
    assert caught.value.code == -32602


# --------------------------------------------------------------------------- fastmcp, and the paging guards


def test_fastmcp_list_page_size_25_is_followed_through_opaque_cursors(fastmcp_server, open_client):
    """Spec (Pagination) with PyPI ``fastmcp`` (``list_page_size=25``): three pages with opaque base64
    cursors, sent back unchanged; 64 tools, each once, in server order.
    """
    from tests.servers.fastmcp_server import NAMES

    http = RecordingSession()
    tools = open_client(fastmcp_server, session=http).list_tools()
    assert [t["name"] for t in tools] == NAMES
    cursors = [(r.message.get("params") or {}).get("cursor") for r in http.rpc("tools/list")]
    assert len(cursors) == 3 and cursors[0] is None
    assert all(isinstance(c, str) and not c.isdigit() for c in cursors[1:])
    assert len(set(cursors[1:])) == 2


def test_a_repeated_cursor_stops_paging_with_a_warning_and_tools_are_deduplicated(raw_peer, open_client, era):
    """Raw peer (no real server repeats a cursor): page 2 gives the same cursor again; paging stops with a
    ``YiemagentWarning`` naming it, the tool listed twice appears once, and no third page is asked for.
    """
    peer = raw_peer(modern=era == MODERN)
    page = {"tools": [{"name": "a"}, {"name": "b"}], "nextCursor": "same"}
    peer.script("tools/list", Reply(result=page), Reply(result={**page, "tools": [{"name": "b"}, {"name": "c"}]}))
    client = open_client(peer.url)
    with pytest.warns(YiemagentWarning, match="repeated cursor 'same'"):
        names = [t["name"] for t in client.list_tools()]
    assert names == ["a", "b", "c"]
    assert peer.count("tools/list") == 2
    assert_era(client, era)


def test_the_total_listing_deadline_stops_paging_after_the_first_page_with_a_warning(paging_server, open_client,
                                                                                    era):
    """yiemagent-defined, real paging server: with ``list_deadline_seconds=0`` the first page is kept, the
    second is never asked for, and a warning says the deadline passed.
    """
    http = RecordingSession()
    client = open_client(paging_server, session=http)
    client.list_deadline_seconds = 0
    with pytest.warns(YiemagentWarning, match="took over 0s"):
        names = [t["name"] for t in client.list_tools()]
    assert names == EXPECTED[:20]
    assert len(http.rpc("tools/list")) == 1
    assert_era(client, era)


def test_a_page_that_hangs_is_cut_at_the_listing_deadline_and_the_first_pages_are_kept(raw_peer, open_client,
                                                                                       era):
    """Raw peer (a page that never comes, on demand): the per-page wait is cut to the time left of
    ``list_deadline_seconds``; the tools of page 1 come back with a warning, well before the 10 s timeout.
    """
    peer = raw_peer(modern=era == MODERN)
    peer.script("tools/list", Reply(result={"tools": [{"name": "a"}], "nextCursor": "2"}),
                Reply(hang_seconds=10, result={"tools": [{"name": "b"}]}))
    client = open_client(peer.url, timeout_seconds=10)
    client.list_deadline_seconds = 0.5
    started = time.monotonic()
    with pytest.warns(YiemagentWarning, match="took over 0.5s"):
        names = [t["name"] for t in client.list_tools()]
    assert names == ["a"]
    assert time.monotonic() - started < 3
    assert_era(client, era)


def test_a_first_page_that_times_out_raises(raw_peer, open_client, era):
    """yiemagent-defined: with nothing listed, a timeout is an error, not an empty tool list."""
    peer = raw_peer(modern=era == MODERN)
    peer.script("tools/list", Reply(hang_seconds=10, result={"tools": []}))
    client = open_client(peer.url, timeout_seconds=0.5)
    with pytest.raises(MCPTimeoutError):
        client.list_tools()
    assert_era(client, era)
