"""A scripted OpenAI-compatible chat server (``POST /v1/chat/completions``, SSE streaming), for terminal tests.

Run::

    python tests/servers/scripted_openai_server.py --port P --log FILE

It stands in for a model where a test needs to know what the model will say and when (the real
local model is used by the ``model`` tests). Replies, by the last message of the request:

* a ``tool`` message: ``The tool said: <its content>``
* a user message with ``weather in <City>`` and tools offered: one call ``get_weather({"city": City})``
* a user message with ``slow``: ``word1 word2 ...`` one word every 0.3 s, 200 words (a minute)
* a user message with ``[empty]``: a valid reply with no text and no calls (``finish_reason: "stop"``)
* a user message with ``[think N]``, not streamed: the plain reply after N seconds of "thinking" (a model
  answering a long request); a log line with ``"thinking": true`` when it arrives, another after the
  wait, ``cut`` true (and no reply sent) when the client closed the connection meanwhile
* anything else: ``You said: <text>``, a word every 0.05 s

``--status CODE`` makes every request answer HTTP CODE (``Retry-After: 0``, an OpenAI-style error body):
a provider that is down or refuses (fallback tests); with ``--status-in-stream`` a streamed request gets
HTTP 200 and a first SSE event ``{"error": {"code": CODE, ...}}`` instead (as OpenRouter sends a rate limit).
``--status-body-as CONTENT_TYPE`` (with ``--status``): a streamed request gets HTTP 200 with that
``Content-Type`` and the bare error JSON as its body, without ``data:`` framing (what
lemonade-sdk/lemonade#2826 forwarded from llama.cpp: a spec-compliant SSE parser sees no event).
``--status-first N`` limits ``--status`` to the first N requests (a provider that fails once, then
answers); ``--retry-after VALUE`` sets the error answers' ``Retry-After`` header (default ``0``).
``--ignore-stream`` answers a streamed request with a plain ``chat.completion`` JSON (a server without streaming).
``--model NAME`` sets the replies' ``model`` field. ``--usage JSON`` sets every reply's ``usage`` object
(a server or proxy reporting broken counts: ``{"completion_tokens": -1e9}``, ``NaN``).

``POST /v1/moderations`` (OpenAI's moderation endpoint: ``{"model", "input"}`` in, ``{"id", "model",
"results": [{"flagged", "categories", "category_scores"}]}`` out; ``input`` a string or a list of
strings, one result each): a text containing a word of ``_FLAGGED`` is flagged in that word's category.
Its requests are logged too, with ``"moderation": true``.

Streams end with a usage chunk and ``data: [DONE]``. Each request appends one JSON line to the log (before
the answer is sent, so a client that read it finds it there; a stream's after the stream, with ``cut``):
``{"n", "last", "stream", "cut", "tools"}`` (``tools``: the names offered); ``cut`` is true when the
client closed the connection before the reply was complete (what ``Agent.abort()`` must cause).
"""

from __future__ import annotations

import argparse
import json
import re
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_lock = threading.Lock()
_count = [0]
_log_path = ""
_status = [0]
_model = ["scripted"]
_status_in_stream = [False]
_status_body_as = [""]
_ignore_stream = [False]
_status_first = [0]
_retry_after = ["0"]
_usage: list[Any] = [None]


_FLAGGED = {"kill": "violence", "hurt": "violence", "idiot": "harassment", "hate": "hate"}
"""Words that a moderation request flags, and their category."""


def _moderation(body: dict[str, Any]) -> dict[str, Any]:
    """The answer of ``POST /v1/moderations`` for ``body``."""
    given = body.get("input")
    texts = given if isinstance(given, list) else [given]
    results = []
    for text in texts:
        words = set(re.findall(r"[a-z]+", str(text).lower()))
        hit = {category for word, category in _FLAGGED.items() if word in words}
        names = sorted(set(_FLAGGED.values()))
        results.append({"flagged": bool(hit), "categories": {n: n in hit for n in names},
                        "category_scores": {n: 0.97 if n in hit else 0.01 for n in names}})
    return {"id": "modr-scripted", "model": body.get("model") or "scripted-moderation", "results": results}


def _plan(body: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]], float]:
    """``(text pieces, tool calls, seconds between pieces)`` for a request."""
    messages = body.get("messages") or [{}]
    last = messages[-1]
    content = last.get("content") or ""
    if isinstance(content, list):
        content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    if last.get("role") == "tool":
        return [f"The tool said: {content}"], [], 0.0
    found = re.search(r"weather in ([A-Za-z ]+?)[?.!]*$", content)
    if found and body.get("tools"):
        return [], [{"name": "get_weather", "arguments": json.dumps({"city": found.group(1).strip()})}], 0.0
    if "[empty]" in content:
        return [], [], 0.0
    if "slow" in content:
        return [f"word{i} " for i in range(1, 201)], [], 0.3
    return ["You said:", *(f" {w}" for w in content.split())], [], 0.05


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.rstrip("/").endswith("/moderations"):
            self._moderate(body)
            return
        with _lock:
            _count[0] += 1
            number = _count[0]
        pieces, calls, pause = _plan(body)
        last = (body.get("messages") or [{}])[-1].get("content")
        status = _status[0] if not _status_first[0] or number <= _status_first[0] else 0
        streamed = bool(body.get("stream")) and not _ignore_stream[0] and not status
        think = re.search(r"\[think (\d+(?:\.\d+)?)\]", str(last))
        if think and not streamed and not status:  # logged after the wait too, with whether the client left
            self._log(body, number, last, cut=False, thinking=True)
            cut = self._think(float(think.group(1)))
            self._log(body, number, last, cut=cut)
            if not cut:
                self._plain(pieces, calls)
            return
        if not streamed:  # logged before the answer: a client that read it finds its request in the log
            self._log(body, number, last, cut=False)
        cut = False
        try:
            if status and _status_in_stream[0] and body.get("stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self._event({"error": {"message": f"scripted error {status}", "code": status}})
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            elif status and _status_body_as[0] and body.get("stream"):
                self._error(status, http_status=200, content_type=_status_body_as[0])
            elif status:
                self._error(status)
            elif streamed:
                self._stream(pieces, calls, pause)
            else:
                self._plain(pieces, calls)
        except (BrokenPipeError, ConnectionResetError):
            cut = True
        if streamed:  # logged after the stream, with whether the client cut it
            self._log(body, number, last, cut=cut)

    def _think(self, seconds: float) -> bool:
        """Wait ``seconds`` before answering; True (at once) when the client closed the connection meanwhile."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable:
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        return True
                except OSError:
                    return True
        return False

    def _moderate(self, body: dict[str, Any]) -> None:
        with _lock, open(_log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"moderation": True, "input": body.get("input"), "model": body.get("model"),
                                  "authorization": self.headers.get("Authorization")}) + "\n")
        data = json.dumps(_moderation(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _log(self, body: dict, number: int, last: object, *, cut: bool, thinking: bool = False) -> None:
        with _lock, open(_log_path, "a", encoding="utf-8") as log:
            tools = [t.get("function", {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
            log.write(json.dumps({"n": number, "last": last, "stream": bool(body.get("stream")), "cut": cut,
                                  "tools": tools, "model": body.get("model"),
                                  "authorization": self.headers.get("Authorization"),
                                  **({"thinking": True} if thinking else {})}) + "\n")

    def _error(self, status: int, http_status: int | None = None, content_type: str = "application/json") -> None:
        data = json.dumps({"error": {"message": f"scripted HTTP {status}", "type": "scripted_error",
                                     "code": status}}).encode()
        self.send_response(http_status or status)
        self.send_header("Content-Type", content_type)
        self.send_header("Retry-After", _retry_after[0])
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _plain(self, pieces: list[str], calls: list[dict[str, Any]]) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(pieces) or None}
        if calls:
            message["tool_calls"] = [{"id": f"call_{i}", "type": "function", "function": c}
                                     for i, c in enumerate(calls)]
        data = json.dumps({"id": "x", "object": "chat.completion", "model": _model[0], "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": _usage[0] or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _event(self, payload: Any) -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        chunk = f"data: {data}\n\n".encode()
        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.wfile.flush()

    def _stream(self, pieces: list[str], calls: list[dict[str, Any]], pause: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"id": "x", "object": "chat.completion.chunk", "model": _model[0],
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        self._event(chunk({"role": "assistant", "content": ""}))
        for piece in pieces:
            if pause:
                time.sleep(pause)
            self._event(chunk({"content": piece}))
        for i, call in enumerate(calls):
            self._event(chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                               "function": {"name": call["name"], "arguments": ""}}]}))
            self._event(chunk({"tool_calls": [{"index": i, "function": {"arguments": call["arguments"]}}]}))
        self._event(chunk({}, "tool_calls" if calls else "stop"))
        self._event({"id": "x", "object": "chat.completion.chunk", "model": _model[0], "choices": [],
                     "usage": _usage[0] or {"prompt_tokens": 10, "completion_tokens": len(pieces) or 5,
                                            "total_tokens": 10 + (len(pieces) or 5)}})
        self._event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main() -> None:
    global _log_path
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--status", type=int, default=0, help="answer every request with this HTTP status")
    parser.add_argument("--model", default="scripted", help="the replies' model field")
    parser.add_argument("--status-in-stream", action="store_true", help="send --status as a first SSE error event")
    parser.add_argument("--ignore-stream", action="store_true", help="answer streamed requests with plain JSON")
    parser.add_argument("--status-body-as", default="", metavar="CONTENT_TYPE",
                        help="a streamed request gets HTTP 200, this Content-Type and --status's bare error JSON")
    parser.add_argument("--status-first", type=int, default=0, metavar="N",
                        help="only the first N requests get --status (0: all)")
    parser.add_argument("--retry-after", default="0", help="the Retry-After header of --status answers")
    parser.add_argument("--usage", default="", help="every reply's usage object (JSON; NaN allowed)")
    args = parser.parse_args()
    _usage[0] = json.loads(args.usage) if args.usage else None
    _log_path = args.log
    _status_first[0] = args.status_first
    _retry_after[0] = args.retry_after
    _status[0] = args.status
    _model[0] = args.model
    _status_in_stream[0] = args.status_in_stream
    _status_body_as[0] = args.status_body_as
    _ignore_stream[0] = args.ignore_stream
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
