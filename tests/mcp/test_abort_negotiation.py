"""An abort, a ``shutdown("now")`` and a deadline cut a hanging era probe, handshake or first listing (issue 27).

Both transports and both eras: ``server/discover`` (2026-07-28 probe), ``initialize`` (2025-11-25
handshake, after the probe found a legacy server) and the first ``tools/list`` of either era hang. The
agent lists its servers at ``start()`` on a thread of its own; the run waits for that listing. Before the
fix ``abort()`` cut the listing's request, and the run then listed again (the server was "unavailable")
and waited out the whole MCP timeout: 8.0 s against an 8 s timeout (0.01 s without the 2026 era's probe
in front), ``shutdown("now")`` as long, or returned with the agent thread alive when its own timeout
was shorter. Now a request begun in a run that was aborted is not sent (``yiemagent._internal.cuts``).

The hanging peers are raw: no real server hangs its ``server/discover``, ``initialize`` or ``tools/list``
on demand (a wedged one does). HTTP: ``tests/servers/raw_http_peer.py`` accepts and never answers the
method; stdio: ``tests/servers/hanging_stdio_server.py`` reads it and never answers.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS
from tests.servers.raw_http_peer import Reply
from yiemagent import Agent
from yiemagent.mcp import MCPClient
from yiemagent.testing import ScriptedLLM, text_reply

TIMEOUT = 8.0
"""The MCP timeout of the issue's report: what an uncut wait lasts."""
BOUND = 1.0
"""Abort and ``shutdown("now")`` end within this (measured ~0.01 s)."""

CASES = [("2026-07-28", "server/discover"), ("2025-11-25", "initialize"),
         ("2025-11-25", "tools/list"), ("2026-07-28", "tools/list")]
IDS = ["modern-discover", "legacy-initialize", "legacy-tools_list", "modern-tools_list"]
TRANSPORTS = ["http", pytest.param("stdio", marks=pytest.mark.slow)]  # stdio starts a process


class Hanging:
    """One hanging server of either transport, and the count of what reached it."""

    def __init__(self, transport: str, era: str, method: str, raw_peer: Any, tmp_path: Path) -> None:
        self.method = method
        self.log = tmp_path / "received.log"
        if transport == "http":
            self.peer = raw_peer(modern=era == "2026-07-28")
            for _ in range(5):  # every try of the method hangs
                self.peer.script(method, Reply(hang_seconds=30))
            self.client = MCPClient(self.peer.url, timeout_seconds=TIMEOUT, protocol_version=None)
        else:
            self.peer = None
            flags = ["--modern"] if era == "2026-07-28" else []
            self.client = MCPClient.stdio(PYTHON, [str(SERVERS / "hanging_stdio_server.py"), *flags,
                                                   "--hang", method, "--log", str(self.log)],
                                          timeout_seconds=TIMEOUT, protocol_version=None)

    def count(self) -> int:
        """How often the hanging method reached the server."""
        if self.peer is not None:
            return int(self.peer.count(self.method))
        if not self.log.exists():
            return 0
        return self.log.read_text(encoding="utf-8").splitlines().count(self.method)

    def wait_hanging(self) -> None:
        """Until the method reached the server (and hangs there)."""
        deadline = time.monotonic() + 20
        while self.count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.count() == 1, f"{self.method} never reached the server"
        time.sleep(0.2)


def _asking(agent: Agent) -> tuple[threading.Thread, list[Any]]:
    answers: list[Any] = []

    def ask() -> None:
        try:
            answers.append(agent.ask("hello", timeout_seconds=30))
        except Exception as exc:  # AgentClosedError after shutdown: an outcome too
            answers.append(exc)

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread, answers


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("era", "method"), CASES, ids=IDS)
def test_abort_cuts_a_hanging_negotiation_and_it_is_not_sent_again_deepseek_reasonix_1236(
        transport, era, method, raw_peer, tmp_path):
    """DeepSeek-Reasonix #1236 (a server stuck in ``initialize`` at start; Esc did nothing for the 60 s
    timeout): ``abort()`` while the start-up listing hangs ends the run within 1 s (before: 8.0 s), with
    status ``aborted``, and the hanging request was sent once (before: twice).
    """
    server = Hanging(transport, era, method, raw_peer, tmp_path)
    agent = Agent(ScriptedLLM([text_reply("hi")]), mcp_servers=[server.client]).start()
    try:
        thread, answers = _asking(agent)
        server.wait_hanging()
        started = time.monotonic()
        agent.abort()
        thread.join(TIMEOUT + 5)
        elapsed = time.monotonic() - started
        assert not thread.is_alive()
        assert answers[0]["status"] == "aborted"
        assert elapsed < BOUND, f"abort took {elapsed:.2f}s"
        assert server.count() == 1
    finally:
        agent.shutdown(timeout_seconds=2)
        server.client.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("era", "method"), CASES, ids=IDS)
def test_shutdown_now_ends_the_agent_thread_during_a_hanging_negotiation(transport, era, method, raw_peer,
                                                                         tmp_path):
    """``shutdown("now")`` while the start-up listing hangs returns within 1 s (before: 8.0 s) and the agent
    thread is dead when it returns (its documented contract: "Stop the agent thread").
    """
    server = Hanging(transport, era, method, raw_peer, tmp_path)
    agent = Agent(ScriptedLLM([text_reply("hi")]), mcp_servers=[server.client]).start()
    try:
        thread, _ = _asking(agent)
        server.wait_hanging()
        started = time.monotonic()
        agent.shutdown(timeout_seconds=TIMEOUT + 2, mode="now")
        elapsed = time.monotonic() - started
        assert not agent.is_running
        assert elapsed < BOUND, f"shutdown('now') took {elapsed:.2f}s"
        thread.join(5)
        assert not thread.is_alive()
        assert server.count() == 1
    finally:
        agent.shutdown(timeout_seconds=2)
        server.client.close()


@pytest.mark.parametrize(("era", "method"), CASES, ids=IDS)
def test_a_request_begun_after_the_run_was_aborted_is_not_sent(era, method, raw_peer, tmp_path):
    """The mechanism, on its own: inside ``cut_by(event)`` with the event set, no request reaches the
    server and the caller gets ``MCPTransportError`` at once (nothing to wait out), retries included.
    """
    from yiemagent._internal.cuts import cut_by
    from yiemagent.exceptions import MCPTransportError

    server = Hanging("http", era, method, raw_peer, tmp_path)
    aborted = threading.Event()
    aborted.set()
    try:
        started = time.monotonic()
        with cut_by(aborted), pytest.raises(MCPTransportError, match="aborted"):
            server.client.list_tools()
        assert time.monotonic() - started < BOUND
        assert server.peer.requests == []
    finally:
        server.client.close()
