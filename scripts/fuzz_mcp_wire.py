"""Fuzz the MCP HTTP wire: 100,000+ hostile replies, and a count of every rule they break (issue 9, point 8).

Run::

    python scripts/fuzz_mcp_wire.py                  # 100,000 in-process examples + 1,000 over sockets
    python scripts/fuzz_mcp_wire.py --examples 5000 --socket-examples 200

Targets (hypothesis strategies and checks in ``tests/property/wire.py``):

- ``sse``: SSE byte streams of JSON-RPC messages, junk and invalid UTF-8, cut at arbitrary byte
  boundaries, read by ``ReplyReader`` (default limits, and tiny ones);
- ``json``: JSON bodies (messages, batches, 5,000-deep nesting, ``1e999999``, 5,000-digit integers, bytes);
- ``parser``: ``SSEParser`` alone, text cut anywhere, with and without an event limit;
- ``socket``: the same SSE/JSON bodies sent by a raw HTTP peer (Content-Length, chunked or close-delimited,
  split in small chunks) to a real ``HTTPTransport.send`` with a 2 s timeout.

Printed per target: examples run, outcomes, exceptions other than the documented ones, hangs (an example
over 5 s of CPU), and (socket) requests left unresolved 10 s past their 2 s deadline. Then a linearity figure:
seconds to parse a 1 MiB and a 4 MiB SSE line fed in 1 KiB chunks, and the ratio. Exit status 1 if any
rule broke. (The stdio transport's line fuzzing lives with ``mcp/stdio``; a ``stdio`` target can be added
to ``TARGETS`` here.)
"""

from __future__ import annotations

import argparse
import collections
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.property import wire
from tests.servers.raw_http_peer import RawPeer, Reply
from yiemagent.exceptions import MCPError
from yiemagent.formats.sse import SSEParser
from yiemagent.mcp import HTTPTransport

HANG_SECONDS = 5
"""CPU seconds one in-process example may use (CPU time, so a loaded machine does not count as a hang)."""
SOCKET_TIMEOUT_SECONDS = 2
SOCKET_GRACE_SECONDS = 10
"""Wall seconds past its deadline before a socket example counts as unresolved (the machine may be loaded)."""


class Hang(Exception):
    """An example ran past ``HANG_SECONDS``."""


def _alarm(signum: int, frame: Any) -> None:
    raise Hang()


class Tally:
    """Counts of one target: examples, outcomes, rule breaks, hangs, unresolved requests."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.examples = 0
        self.outcomes: collections.Counter[str] = collections.Counter()
        self.undocumented: list[str] = []
        self.hangs = 0
        self.unresolved = 0
        self.started = time.monotonic()

    def run(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        """Run one example, counting its outcome (what ``fn`` returns) or how it broke a rule."""
        self.examples += 1
        signal.setitimer(signal.ITIMER_PROF, HANG_SECONDS)
        try:
            self.outcomes[str(fn(*args, **kwargs))] += 1
        except Hang:
            self.hangs += 1
        except Exception as exc:  # AssertionError: a rule broke; anything else: an undocumented exception
            if len(self.undocumented) < 5:
                self.undocumented.append(f"{type(exc).__name__}: {str(exc)[:300]}")
            self.outcomes["FAILED"] += 1
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)

    @property
    def failed(self) -> bool:
        """True if any example broke a rule, hung or left its request unresolved."""
        return bool(self.outcomes["FAILED"] or self.hangs or self.unresolved)

    def report(self) -> str:
        """One summary line, plus up to five examples of what broke."""
        seconds = time.monotonic() - self.started
        lines = [f"{self.name:7s} {self.examples:7d} examples in {seconds:6.1f}s  outcomes {dict(self.outcomes)}  "
                 f"undocumented exceptions/rule breaks {self.outcomes['FAILED']}  hangs {self.hangs}"
                 + (f"  unresolved {self.unresolved}" if self.name == "socket" else "")]
        lines += [f"        e.g. {text}" for text in self.undocumented]
        return "\n".join(lines)


def _settings(examples: int) -> Any:
    return settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                    suppress_health_check=list(HealthCheck))


def fuzz_sse(tally: Tally, examples: int) -> None:
    @_settings(examples)
    @given(st.data())
    def run(data: Any) -> None:
        body = data.draw(wire.sse_streams())
        chunks = data.draw(wire.splits(body))
        limits = {} if data.draw(st.booleans()) else {"max_event_bytes": data.draw(st.integers(1, 64)),
                                                      "max_messages": data.draw(st.integers(1, 4))}
        tally.run(wire.check_reader, "sse", body, chunks, **limits)

    run()


def fuzz_json(tally: Tally, examples: int) -> None:
    @_settings(examples)
    @given(st.data())
    def run(data: Any) -> None:
        body = data.draw(wire.json_bodies())
        tally.run(wire.check_reader, "json", body, data.draw(wire.splits(body)),
                  max_body_bytes=data.draw(st.sampled_from([16, 10**6])))

    run()


def fuzz_parser(tally: Tally, examples: int) -> None:
    alphabet = st.sampled_from(["d", "a", "t", ":", " ", "\r", "\n", "x", "é", "i", "e", "v", "n", "\ufeff"])

    @_settings(examples)
    @given(st.text(alphabet=alphabet, max_size=120), st.lists(st.integers(0, 120), max_size=8),
           st.sampled_from([None, 3, 40]))
    def run(text: str, cuts: list[int], limit: int | None) -> None:
        tally.run(lambda: wire.check_sse_parser(text, [c for c in cuts if c <= len(text)], limit) or "ok")

    run()


def fuzz_socket(tally: Tally, examples: int) -> None:
    peer = RawPeer(sessions=False).start()
    transport = HTTPTransport(peer.url, timeout_seconds=SOCKET_TIMEOUT_SECONDS)
    try:
        @_settings(examples)
        @given(st.data())
        def run(data: Any) -> None:
            kind = data.draw(st.sampled_from(["sse", "json"]))
            body = data.draw(wire.sse_streams() if kind == "sse" else wire.json_bodies())
            framing = data.draw(st.sampled_from(["length", "chunked", "close"]))
            content_type = "text/event-stream" if kind == "sse" else "application/json"
            peer.script("tools/call", Reply(body=body, headers={"Content-Type": content_type}, framing=framing,
                                            split=data.draw(st.sampled_from([None, 1, 7, 64]))))
            tally.run(_one_socket_call, transport, tally)

        run()
    finally:
        transport.close()
        peer.stop()


def _one_socket_call(transport: HTTPTransport, tally: Tally) -> str:
    out: list[Any] = []

    def call() -> None:
        try:
            out.append(transport.send({"jsonrpc": "2.0", "id": wire.PENDING_ID, "method": "tools/call",
                                       "params": {"name": "x", "arguments": {}}}))
        except MCPError as exc:
            out.append(exc)
        except BaseException as exc:  # an undocumented exception: reported below
            import traceback

            out.append(("undocumented", exc, traceback.format_exc(limit=-4)))

    thread = threading.Thread(target=call, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(SOCKET_TIMEOUT_SECONDS + SOCKET_GRACE_SECONDS)
    if thread.is_alive():
        tally.unresolved += 1
        return "unresolved"
    result = out[0]
    if isinstance(result, tuple):
        raise AssertionError(f"undocumented {type(result[1]).__name__}: {result[1]} at {result[2]}")
    late = time.monotonic() - started - SOCKET_TIMEOUT_SECONDS
    if late > SOCKET_GRACE_SECONDS / 2:
        raise AssertionError(f"resolved, but {late:.1f}s past its deadline")
    if isinstance(result, MCPError):
        return type(result).__name__
    assert isinstance(result, dict) and (result.get("id") == wire.PENDING_ID or (
        result.get("id") is None and "error" in result)), result
    return "response"


def linearity() -> str:
    """Seconds to parse one long SSE line fed in 1 KiB chunks, for 1, 4 and 16 MiB (best of 3)."""

    def parse(size: int) -> float:
        best = float("inf")
        for _ in range(3):
            parser = SSEParser(max_event_chars=size * 2)
            piece = "x" * 1024
            started = time.perf_counter()
            parser.feed("data: ")
            for _ in range(size // 1024):
                parser.feed(piece)
            events = parser.feed("\n\n")
            best = min(best, time.perf_counter() - started)
            assert len(events) == 1 and len(events[0].data) == size // 1024 * 1024
        return best

    times = {mib: parse(mib << 20) for mib in (1, 4, 16)}
    deep = "[" * 100_000 + "]" * 100_000
    started = time.perf_counter()
    try:
        json.loads(deep)
    except RecursionError:
        pass
    deep_seconds = time.perf_counter() - started
    shown = ", ".join(f"{mib} MiB {seconds * 1000:.0f} ms ({seconds * 1000 / mib:.0f} ms/MiB)"
                      for mib, seconds in times.items())
    return (f"linearity: one SSE line in 1 KiB chunks: {shown} (linear: the same ms/MiB at every size); "
            f"100k-deep JSON refused in {deep_seconds * 1000:.1f} ms")


TARGETS = {"sse": fuzz_sse, "json": fuzz_json, "parser": fuzz_parser, "socket": fuzz_socket}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--examples", type=int, default=100_000, help="in-process examples in all (split over "
                        "sse 50%%, json 25%%, parser 25%%)")
    parser.add_argument("--socket-examples", type=int, default=1_000)
    parser.add_argument("--targets", default="sse,json,parser,socket")
    args = parser.parse_args()
    signal.signal(signal.SIGPROF, _alarm)
    share = {"sse": args.examples // 2, "json": args.examples // 4, "parser": args.examples // 4,
             "socket": args.socket_examples}
    tallies = []
    for name in args.targets.split(","):
        tally = Tally(name)
        TARGETS[name](tally, share[name])
        tallies.append(tally)
        print(tally.report(), flush=True)
    total = sum(t.examples for t in tallies)
    print(f"total   {total:7d} examples; rule breaks {sum(t.outcomes['FAILED'] for t in tallies)}, hangs "
          f"{sum(t.hangs for t in tallies)}, unresolved {sum(t.unresolved for t in tallies)}")
    print(linearity())
    return 1 if any(t.failed for t in tallies) else 0


if __name__ == "__main__":
    sys.exit(main())
