"""Issue 9 point 8 (stdio): hypothesis over the bytes a server writes on stdout, against the real transport.

The peer is tests/servers/raw_stdio_peer.py (raw: no real server writes random bytes, cut messages, ids of
every JSON type or lines split at arbitrary points); the strategies and the check are in
tests/mcp/stdio_fuzz.py. CI runs ``FUZZ_EXAMPLES`` (1,200) examples against the transport and 3,000 on the
line reader; scripts/fuzz_mcp_stdio.py runs 100,000+.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.mcp.stdio_fuzz import make_client, run_example, streams
from yiemagent.mcp import MCPClient
from yiemagent.mcp.lines import LineReader, OversizedLine

FUZZ_EXAMPLES = int(os.environ.get("YIEMAGENT_FUZZ_EXAMPLES", "1200"))
"""Examples against the transport (each a round trip to a subprocess: about 2 minutes on 2 busy cores)."""
PURE_EXAMPLES = 3000
pytestmark = pytest.mark.slow  # a subprocess peer, thousands of examples
outcomes: collections.Counter[str] = collections.Counter()


@pytest.fixture(scope="module")
def peer() -> Iterator[MCPClient]:
    client = make_client()
    yield client
    client.close()


@pytest.mark.timeout(900)
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(stream=streams())
def test_any_stdout_bytes_end_the_call_with_a_result_or_a_documented_error_and_the_connection_lives(peer, stream):
    """0 exceptions other than MCPProtocolError/MCPRPCError, 0 hangs, 0 pending requests, reader alive."""
    outcomes[run_example(peer, stream).kind] += 1


def test_the_fuzz_reached_every_outcome():
    """The generator is not vacuous: across the run, results, protocol errors and RPC errors all occurred."""
    if sum(outcomes.values()) < 200:
        pytest.skip("too few examples ran to judge coverage")
    assert {"result", "protocol_error", "rpc_error"} <= set(outcomes), outcomes


class Chunks:
    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self.data, self.sizes, self.turn = data, sizes, 0

    def read1(self, n: int) -> bytes:
        size = min(n, self.sizes[self.turn % len(self.sizes)])
        self.turn += 1
        piece, self.data = self.data[:size], self.data[size:]
        return piece


@settings(max_examples=PURE_EXAMPLES, deadline=None, database=None)
@given(data=st.binary(max_size=400), sizes=st.lists(st.integers(1, 70), min_size=1, max_size=5),
       limit=st.integers(1, 60))
def test_line_reader_equals_split_at_any_chunk_boundaries(data, sizes, limit):
    """Pure property: the lines are ``data.split(b"\\n")`` (minus a last empty one), those over ``limit``
    reported with their size and their first/last bytes, whatever the chunking.
    """
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()
    got = list(LineReader(Chunks(data, sizes), max_line_bytes=limit))  # type: ignore[arg-type]
    assert len(got) == len(expected)
    for line, want in zip(got, expected, strict=True):
        if len(want) > limit:
            assert isinstance(line, OversizedLine)
            assert (line.size, line.head, line.tail) == (len(want), want[:4096], want[-4096:])
        else:
            assert line == want
