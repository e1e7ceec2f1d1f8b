"""Conversations a frontend can finish (issue 33 point 6): after a mid-stream cut, the real AG-UI and Vercel
clients get the rest of the answer from the run that finished on the server.

The Flask example (``flask_chat.create_app``, its AG-UI and ``useChat`` routes) serves a model that streams a
story slowly; the clients' first request goes through a loopback proxy that closes the connection after the
first text delta (a network cut: raw sockets, since no real server cuts its own stream), the resumption goes to
the server. Clients: ``ai`` 7 (``AbstractChat``, ``DefaultChatTransport``, ``resumeStream``) and
``@ag-ui/client`` 1.0.0 (``HttpAgent``) from tests/node/ui.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent
from yiemagent.agent.ui_runs import RunRecords
from yiemagent.examples.flask_chat import create_app
from yiemagent.testing import ScriptedLLM, text_reply

UI = Path(__file__).parent / "node" / "ui"
STORY = " ".join(f"Line {n} of the story." for n in range(1, 31))


class CuttingProxy:
    """A loopback TCP proxy to ``port`` that closes each connection once the response carried ``marker``."""

    def __init__(self, port: int, marker: bytes = b"delta") -> None:
        self.port, self.marker, self.cuts = port, marker, 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.port))

        def forward() -> None:
            try:
                while data := client.recv(65536):
                    upstream.sendall(data)
            except OSError:
                pass

        threading.Thread(target=forward, daemon=True).start()
        seen = b""
        try:
            while data := upstream.recv(65536):
                seen += data
                if self.marker in seen:  # the stream has begun: cut it here, mid-answer
                    client.sendall(data[: max(1, data.index(self.marker) if self.marker in data else len(data))])
                    self.cuts += 1
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            for each in (client, upstream):
                try:
                    each.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                each.close()

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def story_app() -> Iterator[tuple[str, CuttingProxy, list[ScriptedLLM]]]:
    from tests.mcp.server.kit import serving

    llms: list[ScriptedLLM] = []

    def make_agent() -> Agent:
        llm = ScriptedLLM([text_reply(STORY)], delta_chars=8, delta_delay_seconds=0.02)
        llms.append(llm)
        return Agent(llm)

    app = create_app(make_agent, secret_key="test")
    try:
        with serving(app, path="") as url:
            proxy = CuttingProxy(int(url.rsplit(":", 1)[1]))
            try:
                yield url, proxy, llms
            finally:
                proxy.close()
    finally:
        app.extensions["yiemagent_conversations"].close()


def _node(script: str, *args: str) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
    try:
        from run_conformance import node24
    finally:
        sys.path.pop(0)
    if not (UI / "node_modules" / "ai").is_dir() or not (UI / "node_modules" / "@ag-ui" / "client").is_dir():
        pytest.skip(f"npm packages not installed in {UI} (npm ci)")
    done = subprocess.run([node24(), str(UI / script), *args], cwd=UI, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.node
@pytest.mark.slow
def test_vercel_ai_6052_and_ag_ui_1852_a_stream_cut_mid_answer_is_finished_by_the_real_clients(
        story_app: tuple[str, CuttingProxy, list[ScriptedLLM]]) -> None:
    """vercel/ai #6052 (``resumeStream``: ``GET {api}/{chatId}/stream``) and ag-ui-protocol/ag-ui #1852 / #2105
    (no way to reattach to a run after a cut): before, the Flask routes had no resume route (the AI SDK's GET
    was 404) and an AG-UI client running again with its kept messages got 400 (its last message was the partial
    answer), though the run had finished on the server. Now each client ends with the whole story, once, and
    the model ran once per conversation.
    """
    url, proxy, llms = story_app
    out = _node("resume_client.mjs", url, proxy.url)
    assert proxy.cuts == 2
    cut = out["vercelCut"]
    assert cut["status"] == "error" and cut["errors"]
    assert cut["messages"][0]["role"] == "user"
    assert all(m["text"] != STORY for m in cut["messages"])  # the cut left a partial answer at most
    resumed = out["vercelResumed"]
    assert resumed["status"] == "ready"
    assert resumed["messages"] == [{"role": "user", "text": "Tell me the story."}, {"role": "assistant", "text": STORY}]
    assert len(set(resumed["ids"])) == 2
    assert out["vercelAgain"]["messages"] == resumed["messages"]  # nothing replayed twice
    assert out["agUiCutError"] is not None or all(m["content"] != STORY for m in out["agUiCut"])
    ag_ui = out["agUiResumed"]
    assert ag_ui["messages"] == [{"role": "user", "content": "Tell me the story."},
                                 {"role": "assistant", "content": STORY}]
    assert ag_ui["types"][:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"] and ag_ui["types"][-1] == "RUN_FINISHED"
    assert [len(llm.calls) for llm in llms] == [1, 1]  # one run per conversation: the resumptions ran nothing


def test_a_run_record_is_read_to_its_end_without_a_reader_and_replayed_whole() -> None:
    """The record's thread reads the run whatever its client does; ``follow`` replays from the first item;
    a stream written to its last line is no longer replayable; ``max_items`` stops a record (not replayable).
    """
    released = threading.Event()

    def run() -> Iterator[Any]:
        yield {"type": "a"}
        released.wait(30)
        yield {"type": "b"}
        yield {"content": "done", "status": "completed"}

    records = RunRecords(max_records=1, max_items=10)
    record = records.start("k", run())
    first = record.follow()
    assert next(first) == {"type": "a"}
    first.close()  # the client went away
    released.set()
    deadline = time.monotonic() + 30
    while not record.done and time.monotonic() < deadline:
        time.sleep(0.01)
    assert record.done and record.replayable()
    assert [item for item in record.follow() if item is not None] == [
        {"type": "a"}, {"type": "b"}, {"content": "done", "status": "completed"}]
    assert list(record.stream(iter(["x", "y"]))) == ["x", "y"] and not record.replayable()
    records.start("other", iter([]))
    assert records.get("k") is None  # at most max_records
    big = RunRecords(max_items=2).start("k", iter([1, 2, 3]))
    deadline = time.monotonic() + 30
    while not big.done and time.monotonic() < deadline:
        time.sleep(0.01)
    assert big.truncated and not big.replayable()
