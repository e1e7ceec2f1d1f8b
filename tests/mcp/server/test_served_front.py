"""The guide's deployment survives clients that leave mid-question and slow clients (issue 33 points 1 and 2).

A real server process (waitress, as docs/guides/serving.rst deploys it: ``--threads=8
--channel-request-lookahead=1``) serves tests/servers/leaving_wsgi.py. Eight slow clients hold connections open
(raw sockets: headers sent a byte at a time, headers never finished, a body that never comes: hostile shapes no
real client program sends), eight clients leave while a tool asks them to confirm (``current_call().elicit``,
2025-11-25, SSE accepted; ``http.client`` connections closed at the question), and then a normal client
(yiemagent's ``MCPClient``) must be served within ``BOUND_SECONDS`` and every abandoned call must have been
cancelled (its tool saw its abort event). Before issue 33, under the guide's gunicorn gthread deployment the eight
questions held all eight threads until the 600 s input deadline, and eight half-open connections alone stopped
the server (gunicorn reads requests on its pool threads). gunicorn gthread stays supported behind a buffering
proxy: its case runs the leaving clients only.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import PYTHON, free_port, process_output, start_process, stop_process, wait_for_port
from tests.mcp.server.test_client_leaves import BOUND_SECONDS, Peer, wait_for
from yiemagent.mcp import MCPClient

pytestmark = pytest.mark.slow

COMMANDS = {
    "waitress": ["-m", "waitress", "--threads=8", "--channel-request-lookahead=1", "--max-request-body-size=4194304"],
    "gunicorn": ["-m", "gunicorn", "-k", "gthread", "--workers", "1", "--threads", "8", "--timeout", "120"],
}


@contextmanager
def server_process(kind: str, marks: Path) -> Iterator[tuple[int, str]]:
    port = free_port()
    listen = [f"--listen=127.0.0.1:{port}"] if kind == "waitress" else ["--bind", f"127.0.0.1:{port}"]
    process = start_process([PYTHON, *COMMANDS[kind], *listen, "tests.servers.leaving_wsgi:application"],
                            env={"YIEMAGENT_LEAVING_MARKS": str(marks)})
    try:
        wait_for_port(port, process=process)
        yield port, f"http://127.0.0.1:{port}/mcp"
    except Exception:
        print(process_output(process))
        raise
    finally:
        stop_process(process)


class SlowClients:
    """Raw sockets that hold connections without ever finishing a request (hostile shapes, see the docstring)."""

    def __init__(self, port: int, count: int) -> None:
        self.port, self.count = port, count
        self.stop = threading.Event()
        self.sockets: list[socket.socket] = []
        self.threads: list[threading.Thread] = []

    def __enter__(self) -> SlowClients:
        head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n").encode()
        for index in range(self.count):
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=BOUND_SECONDS)
            self.sockets.append(sock)
            shape = index % 3
            if shape == 0:  # headers a byte at a time, slower than any request is read
                thread = threading.Thread(target=self._dribble, args=(sock, head), daemon=True)
                thread.start()
                self.threads.append(thread)
            elif shape == 1:  # half-open: headers begun, then nothing
                sock.sendall(head[:20])
            else:  # headers done, the body promised and never sent
                sock.sendall(head + b'{"jsonrpc": "2.0"')
        return self

    def _dribble(self, sock: socket.socket, head: bytes) -> None:
        for byte in head[:-4]:
            if self.stop.wait(0.5):
                return
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for sock in self.sockets:
            sock.close()


def leave_mid_question(url: str, tag: str, asked: threading.Event, errors: list[BaseException]) -> None:
    try:
        peer = Peer(url)
        peer.initialize()
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "confirm", "arguments": {"tag": tag}}})
        peer.read_until("elicitation/create")
        asked.set()
        peer.leave()
    except BaseException as exc:  # reported by the test
        errors.append(exc)
        asked.set()


@pytest.mark.parametrize("kind", ["waitress", "gunicorn"])
def test_eight_leaving_and_eight_slow_clients_leave_a_normal_client_served(kind: str, tmp_path: Path) -> None:
    with server_process(kind, tmp_path) as (port, url), SlowClients(port, 8 if kind == "waitress" else 0):
        errors: list[BaseException] = []
        asked = [threading.Event() for _ in range(8)]
        leavers = [threading.Thread(target=leave_mid_question, args=(url, f"leave-{i}", asked[i], errors),
                                    daemon=True) for i in range(8)]
        for leaver in leavers:
            leaver.start()
        for event in asked:
            assert event.wait(BOUND_SECONDS * 2)
        assert errors == []
        assert len(list(tmp_path.glob("leave-*.started"))) == 8  # eight threads each held by a question
        began = time.monotonic()
        with MCPClient(url, timeout_seconds=BOUND_SECONDS) as client:
            result = client.call_tool("add", {"a": 40, "b": 2})
        waited = time.monotonic() - began
        print(f"{kind}: a normal client was served in {waited:.2f} s")
        assert result["content"][0]["text"] == "42" and result["isError"] is False
        aborted = [wait_for(tmp_path / f"leave-{i}.aborted") for i in range(8)]
        assert aborted == [True] * 8, "a call whose client left was not cancelled"
        assert not list(tmp_path.glob("leave-*.finished"))
