"""Fuzzing the MCP HTTP wire: SSE streams and JSON bodies from a hostile server, cut anywhere (issue 9, point 8).

yiemagent-defined rules (see ``tests/property/wire.py``): only ``MCPProtocolError`` comes out of the reply
reader, the outcome does not depend on chunk boundaries, a returned response answers the pending request,
and ``SSEParser`` gives the same events however its text is cut. ``scripts/fuzz_mcp_wire.py`` runs the same
checks for 100,000+ examples; here a few thousand run in CI.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.property.wire import check_reader, check_sse_parser, json_bodies, splits, sse_streams

SSE_TEXT = st.text(alphabet=st.sampled_from(["d", "a", "t", ":", " ", "\r", "\n", "x", "é", "i", "e", "v", "n"]),
                   max_size=80)


@pytest.mark.timeout(600)
@settings(max_examples=1000)
@given(st.data())
def test_an_sse_reply_cut_anywhere_gives_the_same_outcome_and_only_protocol_errors(data):
    """Any SSE byte stream (JSON-RPC messages, junk, invalid UTF-8), cut at any byte boundaries."""
    body = data.draw(sse_streams())
    check_reader("sse", body, data.draw(splits(body)))


@pytest.mark.timeout(600)
@settings(max_examples=400)
@given(st.data())
def test_an_sse_reply_under_tight_limits_fails_cleanly(data):
    """The same streams with tiny caps (event size, message count): a clear error, never another exception."""
    body = data.draw(sse_streams())
    check_reader("sse", body, data.draw(splits(body)), max_event_bytes=data.draw(st.integers(1, 64)),
                 max_messages=data.draw(st.integers(1, 4)))


@pytest.mark.timeout(600)
@settings(max_examples=800)
@given(st.data())
def test_a_json_reply_of_any_bytes_gives_a_response_or_a_protocol_error(data):
    """Any JSON body (a message, a batch, deep nesting, huge numbers, random bytes), in any chunks."""
    body = data.draw(json_bodies())
    check_reader("json", body, data.draw(splits(body)), max_body_bytes=data.draw(st.sampled_from([16, 10**6])))


@pytest.mark.timeout(600)
@settings(max_examples=800)
@given(SSE_TEXT, st.lists(st.integers(0, 80), max_size=6), st.sampled_from([None, 5, 40]))
def test_the_sse_parser_gives_the_same_events_however_the_text_is_cut(text, cuts, limit):
    """WHATWG SSE: line endings split across chunks (CR | LF) are one ending; limits fail the same way."""
    check_sse_parser(text, [c for c in cuts if c <= len(text)], limit)
