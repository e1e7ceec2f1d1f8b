"""A small threaded raw HTTP peer for ``POST /v1/chat/completions``, only for shapes no real server sends.

Why a raw peer: real model servers (llama.cpp through the ``local_model`` fixture) are used
wherever they can show the behaviour. None of them sends these shapes on purpose: a stream
cut before ``data: [DONE]`` and before any ``finish_reason``; parallel tool calls all at
``index: 0`` with different ids (what Ollama does behind LiteLLM); nested usage details on
demand; a body dripped one byte every half second; an error body that echoes the caller's
``Authorization`` header; a request that never gets an answer.

Each POST takes the next scripted ``Reply`` (then the default: a JSON text reply "ok").
``peer.requests`` records the JSON bodies and headers received.

Usage::

    with LLMPeer() as peer:
        peer.script(Reply(sse=[chunk1, chunk2], done=False))
        llm = openai_chat(peer.base_url, "m", stream=True)
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ECHO_AUTH", "LLMPeer", "Reply", "chunk"]

ECHO_AUTH = "{authorization}"
"""In ``Reply.body``: replaced by the request's ``Authorization`` header value."""


def chunk(delta: dict[str, Any] | None = None, *, finish_reason: str | None = None,
          usage: dict[str, Any] | None = None, choices: bool = True) -> dict[str, Any]:
    """One ``chat.completion.chunk``; ``choices=False`` gives the ``include_usage`` chunk (``choices: []``)."""
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}
    body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}] if choices else []
    if usage is not None:
        body["usage"] = usage
    return body


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    json_body: Any = None
    """A JSON reply (``application/json``)."""
    body: str | None = None
    """A raw body; ``ECHO_AUTH`` in it is replaced by the request's Authorization header."""
    sse: list[Any] | None = None
    """An SSE stream: each dict is sent as ``data: <json>``; each str as the raw data of one event."""
    done: bool = True
    """End an SSE stream with ``data: [DONE]``."""
    drip_seconds: float | None = None
    """Send the body one byte at a time with this pause between bytes (chunked)."""
    hang_seconds: float | None = None
    """Send nothing for this long (cut short by ``stop()``), then close."""
    headers: dict[str, str] = field(default_factory=dict)


class LLMPeer:
    """The peer; a context manager (``start()`` / ``stop()``)."""

    def __init__(self) -> None:
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[dict[str, Any]] = []
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with peer._lock:
                    peer.requests.append({"headers": {k.lower(): v for k, v in self.headers.items()},
                                          "body": json.loads(raw or b"null")})
                    reply = peer._replies.popleft() if peer._replies else Reply(json_body=_text("ok"))
                try:
                    peer._answer(self, reply)
                except OSError:
                    pass  # the client went away (cancel, deadline)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="llm-peer", daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        """Use ``replies`` for the next POSTs, in order."""
        with self._lock:
            self._replies.extend(replies)

    def _answer(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        if reply.hang_seconds is not None:
            self._stopping.wait(reply.hang_seconds)
            handler.close_connection = True
            return
        if reply.sse is not None:
            events = [e if isinstance(e, str) else json.dumps(e) for e in reply.sse]
            if reply.done:
                events.append("[DONE]")
            data = "".join(f"data: {e}\n\n" for e in events).encode()
            content_type = "text/event-stream"
        elif reply.json_body is not None:
            data = json.dumps(reply.json_body).encode()
            content_type = "application/json"
        else:
            text = (reply.body or "").replace(ECHO_AUTH, handler.headers.get("Authorization", ""))
            data = text.encode()
            content_type = "application/json"
        handler.send_response(reply.status)
        handler.send_header("Content-Type", content_type)
        for key, value in reply.headers.items():
            handler.send_header(key, value)
        if reply.drip_seconds is None and reply.sse is None:
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        step = 1 if reply.drip_seconds is not None else len(data) or 1
        for i in range(0, len(data), step):
            if self._stopping.is_set():
                return
            piece = data[i:i + step]
            handler.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            handler.wfile.flush()
            if reply.drip_seconds:
                time.sleep(reply.drip_seconds)
        handler.wfile.write(b"0\r\n\r\n")
        handler.close_connection = True  # a stream without [DONE] ends here: the connection closes

    def start(self) -> LLMPeer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LLMPeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _text(text: str) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}
