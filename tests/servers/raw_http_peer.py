"""A small threaded raw HTTP peer, only for wire shapes no real MCP server sends.

Real servers (tests/servers/sdk_server.py, the fastmcp server, npm server-everything) are used
wherever they can produce the behaviour under test. This peer exists for what they cannot:
SSE frames split at arbitrary byte boundaries, malformed JSON, a 404 mid-session on demand, a
connection dropped after the request was read, 429/503 with ``Retry-After``, an unsupported or
older protocol version, a repeated ``nextCursor``, a stream that ends before its response.
Every test that uses it says why in its docstring.

By default it behaves like a minimal MCP server (JSON replies, sessions ``s-1``, ``s-2``...):
``initialize`` answers ``protocol_version``; notifications and responses get 202; ``tools/list``
lists ``tools``; ``tools/call`` answers ``called <name>``; ``ping`` answers ``{}``; ``DELETE``
ends the session; a request with an unknown session id gets 404. A test changes one exchange
with ``peer.script(method, Reply(...), ...)``: the replies are used in order for the next
requests of that JSON-RPC method (``"GET"``/``"DELETE"`` for those HTTP methods), then the
default applies again. ``peer.requests`` records everything received; ``peer.count(method)``
counts it, so tests can prove how often a request really reached the server.

``RawPeer(modern=True)`` is a 2026-07-28 peer instead: it answers ``server/discover``
(``supportedVersions: ["2026-07-28"]``), gives and checks no session, refuses ``initialize``
and any POST without ``MCP-Protocol-Version: 2026-07-28`` or without the ``_meta`` envelope
(HTTP 400, ``-32022``/``-32602``, as the ``mcp`` SDK does), answers ``GET`` with 405, and
adds ``resultType: "complete"`` to its default results. Scripted replies are sent as given.

Usage::

    with RawPeer() as peer:
        peer.script("tools/call", Reply(drop=True))
        client = MCPClient(peer.url)
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["REQUEST_ID", "PeerRequest", "RawPeer", "Reply"]

REQUEST_ID = object()
"""Placeholder in ``Reply.result``/``Reply.sse`` messages: the JSON-RPC id of the request being
answered (for ``GET``, of the last POSTed request)."""


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    headers: dict[str, Any] = field(default_factory=dict)
    """Header values; a list sends the header once per item (only with ``framing``/``drip_seconds``)."""
    result: Any = None
    """A JSON-RPC ``result`` sent as ``{"jsonrpc", "id": <request id>, "result"}`` (application/json)."""
    body: bytes | str | dict[str, Any] | None = None
    """A raw body (used as is, but ``{request_id}`` in a ``str`` body becomes the request's id; set
    ``Content-Type`` in ``headers`` if it matters); a dict is sent as JSON (``application/json``) with
    ``REQUEST_ID`` resolved, e.g. a JSON-RPC error under any status."""
    sse: list[Any] | None = None
    """An SSE reply: each dict is sent as ``event: message`` + ``data: <json>``; each str as raw text."""
    crlf: bool = False
    """SSE lines end with CRLF (like the Python SDK) instead of LF."""
    split: int | None = None
    """Send the body in pieces of this many bytes, each its own HTTP chunk."""
    pause_seconds: float = 0.0
    """Pause between pieces (and before the first one)."""
    drop: bool = False
    """Close the connection after reading the request, without any answer."""
    hang_seconds: float | None = None
    """Wait this long (cut short by ``stop()``) before answering; with ``drop`` nothing is sent."""
    framing: str = "auto"
    """``"auto"`` (``Content-Length``, or chunked with ``split``/``pause_seconds``), ``"length"``,
    ``"chunked"`` or ``"close"`` (no length: the body ends when the connection closes)."""
    drip_seconds: float = 0.0
    """Send the whole answer, status line and headers included, one byte at a time with this pause."""
    content_length: int | None = None
    """A ``Content-Length`` to announce instead of the body's real length (a lying peer)."""
    linger_seconds: float = 0.0
    """With ``framing``/``drip_seconds``/``content_length``: keep the connection open this long after the
    body (cut short by ``stop()``), then close it if the framing needs the close (``"close"``, or a
    ``content_length`` longer than the body)."""


@dataclass
class PeerRequest:
    """One HTTP request the peer received."""

    http_method: str
    headers: dict[str, str]
    """Lower-cased header names."""
    message: Any
    """The JSON body, or None."""
    status: int | None = None
    """The status answered; None when the connection was dropped."""

    @property
    def method(self) -> str | None:
        """The JSON-RPC ``method``, or None."""
        return self.message.get("method") if isinstance(self.message, dict) else None


def _resolve(value: Any, request_id: Any) -> Any:
    if value is REQUEST_ID:
        return request_id
    if isinstance(value, dict):
        return {k: _resolve(v, request_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, request_id) for v in value]
    return value


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    peer: RawPeer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connections the client (or ``stop()``) cut are normal here: stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.peer._track(self.connection)

    def do_POST(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        peer = self.server.peer
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            message = json.loads(raw) if raw else None
        except ValueError:
            message = None
        record = PeerRequest(self.command, {k.lower(): v for k, v in self.headers.items()}, message)
        reply = peer._answer(record)
        if reply.hang_seconds:
            peer._stopping.wait(reply.hang_seconds)
        if reply.drop or peer._stopping.is_set():
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        record.status = reply.status
        request_id = message.get("id") if isinstance(message, dict) and "id" in message else peer._last_id
        body, content_type = self._body(reply, request_id)
        if reply.framing != "auto" or reply.drip_seconds or reply.content_length is not None:
            self._send_raw(reply, body, content_type)
            return
        self.send_response(reply.status)
        headers = {"Content-Type": content_type, **reply.headers} if content_type else dict(reply.headers)
        for name, value in headers.items():
            self.send_header(name, value)
        if reply.split or reply.pause_seconds:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            size = reply.split or len(body) or 1
            for start in range(0, len(body), size):
                if reply.pause_seconds:
                    time.sleep(reply.pause_seconds)
                piece = body[start:start + size]
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        self.wfile.flush()

    def _send_raw(self, reply: Reply, body: bytes, content_type: str | None) -> None:
        """Write the answer by hand: any framing, any announced length, byte by byte if asked."""
        framing = "length" if reply.framing == "auto" else reply.framing
        head = [f"HTTP/1.1 {reply.status} {self.responses.get(reply.status, ('X',))[0]}"]
        headers = {"Content-Type": content_type, **reply.headers} if content_type else dict(reply.headers)
        head += [f"{k}: {one}" for k, v in headers.items() for one in (v if isinstance(v, list) else [v])]
        if framing == "length":
            head.append(f"Content-Length: {reply.content_length if reply.content_length is not None else len(body)}")
        elif framing == "chunked":
            head.append("Transfer-Encoding: chunked")
            size = reply.split or len(body) or 1
            body = b"".join(f"{len(body[i:i + size]):x}\r\n".encode() + body[i:i + size] + b"\r\n"
                            for i in range(0, len(body), size)) + b"0\r\n\r\n"
        else:
            head.append("Connection: close")
            self.close_connection = True
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        peer = self.server.peer
        try:
            if reply.drip_seconds:
                for i in range(len(data)):
                    if peer._stopping.wait(reply.drip_seconds):
                        return
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
            else:
                self.wfile.write(data)
                self.wfile.flush()
        except OSError:
            self.close_connection = True
            return
        if reply.linger_seconds:
            peer._stopping.wait(reply.linger_seconds)
        if framing == "close" or (reply.content_length or 0) > len(body):
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    @staticmethod
    def _body(reply: Reply, request_id: Any) -> tuple[bytes, str | None]:
        if reply.sse is not None:
            end = "\r\n" if reply.crlf else "\n"
            text = ""
            for item in reply.sse:
                if isinstance(item, str):
                    text += item
                else:
                    text += f"event: message{end}data: {json.dumps(_resolve(item, request_id))}{end}{end}"
            return text.encode("utf-8"), "text/event-stream"
        if reply.result is not None:
            message = {"jsonrpc": "2.0", "id": request_id, "result": _resolve(reply.result, request_id)}
            return json.dumps(message).encode("utf-8"), "application/json"
        if reply.body is None:
            return b"", None
        if isinstance(reply.body, dict):
            return json.dumps(_resolve(reply.body, request_id)).encode("utf-8"), "application/json"
        if isinstance(reply.body, str):  # "{request_id}" in a text body: the request's id, as JSON
            return reply.body.replace("{request_id}", json.dumps(request_id)).encode("utf-8"), None
        return reply.body, None


class RawPeer:
    """A scriptable MCP-ish HTTP peer on 127.0.0.1 (threaded; ``stop()`` cuts every connection).

    Args:
        port: the port to listen on; 0 picks a free one.
        protocol_version: what ``initialize`` answers.
        tools: what ``tools/list`` answers (MCP tool objects).
        sessions: give and check ``Mcp-Session-Id``; False is a stateless server.
        modern: a 2026-07-28 peer (see the module docstring); ``sessions`` is then ignored.
    """

    def __init__(
        self,
        port: int = 0,
        *,
        protocol_version: str = "2025-11-25",
        tools: list[dict[str, Any]] | None = None,
        sessions: bool = True,
        modern: bool = False,
    ) -> None:
        self.port = port
        self.modern = modern
        self.protocol_version = protocol_version
        self.tools = tools if tools is not None else [
            {"name": "get_time", "inputSchema": {"type": "object", "properties": {}}}
        ]
        self.sessions = sessions and not modern
        self.requests: list[PeerRequest] = []
        self._scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self._live_sessions: set[str] = set()
        self._session_count = 0
        self._last_id: Any = None
        self._lock = threading.Lock()
        self._connections: list[socket.socket] = []
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The MCP endpoint, ``http://127.0.0.1:<port>/mcp``."""
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> RawPeer:
        """Listen and serve on a daemon thread."""
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", self.port), _Handler)
        self._server.peer = self
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name=f"raw-peer-{self.port}")
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and cut every open connection (hanging replies end at once)."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> RawPeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _track(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.append(connection)

    # ------------------------------------------------------------------ scripting

    def script(self, method: str, *replies: Reply) -> None:
        """Answer the next requests of ``method`` (JSON-RPC method, or ``"GET"``/``"DELETE"``) with ``replies``."""
        with self._lock:
            self._scripts[method].extend(replies)

    def expire_sessions(self) -> None:
        """Forget every session: the next request carrying one gets 404 (as the Python SDK answers)."""
        with self._lock:
            self._live_sessions.clear()

    def count(self, method: str) -> int:
        """How many requests of ``method`` (JSON-RPC method, or HTTP ``"GET"``/``"DELETE"``) arrived."""
        with self._lock:
            return sum(1 for r in self.requests if (r.method or r.http_method) == method)

    def received(self, method: str) -> list[PeerRequest]:
        """The requests of ``method`` received so far, in order."""
        with self._lock:
            return [r for r in self.requests if (r.method or r.http_method) == method]

    # ------------------------------------------------------------------ answering

    def _answer(self, record: PeerRequest) -> Reply:
        message = record.message
        key = record.method or record.http_method
        with self._lock:
            self.requests.append(record)
            if record.http_method == "POST" and isinstance(message, dict) and "method" in message and "id" in message:
                self._last_id = message["id"]
            scripted = self._scripts[key].popleft() if self._scripts.get(key) else None
        if scripted is not None:
            return scripted
        if self.modern:
            return self._answer_modern(record)
        session = record.headers.get("mcp-session-id")
        if self.sessions and key != "initialize":
            with self._lock:
                known = session in self._live_sessions
            if session is None:
                return Reply(400, body='{"error": "missing session"}', headers={"Content-Type": "application/json"})
            if not known:
                return Reply(404, body='{"error": "session not found"}', headers={"Content-Type": "application/json"})
        if record.http_method == "DELETE":
            with self._lock:
                self._live_sessions.discard(session or "")
            return Reply(200)
        if record.http_method == "GET":
            return Reply(405)
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return Reply(202)
        method = message["method"]
        params = message.get("params") or {}
        if method == "initialize":
            headers = {}
            if self.sessions:
                with self._lock:
                    self._session_count += 1
                    session_id = f"s-{self._session_count}"
                    self._live_sessions.add(session_id)
                headers["Mcp-Session-Id"] = session_id
            return Reply(headers=headers, result={
                "protocolVersion": self.protocol_version, "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw-peer", "version": "0"},
            })
        if method == "tools/list":
            return Reply(result={"tools": self.tools})
        if method == "tools/call":
            return Reply(result={"content": [{"type": "text", "text": f"called {params.get('name')}"}]})
        if method == "ping":
            return Reply(result={})
        return Reply(body=json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                      "error": {"code": -32601, "message": f"no method {method}"}}),
                     headers={"Content-Type": "application/json"})

    def _answer_modern(self, record: PeerRequest) -> Reply:
        """The default answers of a 2026-07-28 peer (no session; every request carries its version)."""
        message = record.message
        if record.http_method != "POST":
            return Reply(405)
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return Reply(202)
        method, request_id = message["method"], message["id"]
        params = message.get("params") or {}
        meta = params.get("_meta") if isinstance(params, dict) else None
        if record.headers.get("mcp-protocol-version") != MODERN_VERSION or method == "initialize":
            return _error(request_id, -32022, "Unsupported protocol version", {"supported": [MODERN_VERSION]})
        if not isinstance(meta, dict) or meta.get("io.modelcontextprotocol/protocolVersion") != MODERN_VERSION:
            return _error(request_id, -32602, "params._meta must carry the protocol version envelope")
        done = {"resultType": "complete"}
        if method == "server/discover":
            return Reply(result={"supportedVersions": [MODERN_VERSION], "capabilities": {"tools": {}},
                                 "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "raw-peer", "version": "0"}},
                                 **done})
        if method == "tools/list":
            return Reply(result={"tools": self.tools, **done})
        if method == "tools/call":
            return Reply(result={"content": [{"type": "text", "text": f"called {params.get('name')}"}], **done})
        if method == "ping":
            return Reply(result=done)
        return Reply(body=json.dumps({"jsonrpc": "2.0", "id": request_id,
                                      "error": {"code": -32601, "message": f"no method {method}"}}),
                     headers={"Content-Type": "application/json"})


MODERN_VERSION = "2026-07-28"


def _error(request_id: Any, code: int, text: str, data: Any = None) -> Reply:
    error: dict[str, Any] = {"code": code, "message": text}
    if data is not None:
        error["data"] = data
    return Reply(400, body=json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}),
                 headers={"Content-Type": "application/json"})
