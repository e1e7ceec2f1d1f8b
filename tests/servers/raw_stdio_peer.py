"""A raw stdio MCP peer (stdlib only) that replays the bytes a test gives it: for fuzzing the stdio transport.

Why raw: the fuzz tests need lines no real server writes (random bytes, broken UTF-8, truncated JSON, ids of
every JSON type, responses with both ``result`` and ``error``, batches, lines split at arbitrary points), and
a real server's own framing would never produce them. The handshake and ``tools/list`` are well-formed so the
client gets to the interesting part.

Protocol (one JSON message per line on stdin):

    initialize, ping, tools/list     answered normally (one tool, ``replay``)
    tools/call replay {"data", "chunks", "answer"}
                                     writes base64 ``data`` to stdout (``{id}`` inside replaced by this
                                     request's id as JSON) in pieces of the sizes in ``chunks`` (cycled),
                                     flushing after each, then, if ``answer`` (default true), a well-formed
                                     result ``{"content": [{"type": "text", "text": "replayed"}]}`` on a line
                                     of its own (a ``\n`` first if ``data`` did not end with one)
    tools/call echo {"text"}         the text
    anything without a method        ignored (the client's replies to the requests ``data`` made)
"""

from __future__ import annotations

import base64
import itertools
import json
import sys


def main() -> None:
    out = sys.stdout.buffer

    def send(message: dict) -> None:
        out.write(json.dumps(message).encode("utf-8") + b"\n")
        out.flush()

    tools = [{"name": name, "inputSchema": {"type": "object"}} for name in ("replay", "echo")]
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "method" not in message:
            continue
        method, request_id = message["method"], message.get("id")
        params = message.get("params") or {}
        if request_id is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw-stdio-peer", "version": "0"}}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
        elif method == "tools/call" and params.get("name") == "replay":
            arguments = params.get("arguments") or {}
            data = base64.b64decode(arguments.get("data", "")).replace(b"{id}", json.dumps(request_id).encode())
            sizes = itertools.cycle([max(1, int(n)) for n in arguments.get("chunks") or [len(data) or 1]])
            position = 0
            while position < len(data):
                size = next(sizes)
                out.write(data[position:position + size])
                out.flush()
                position += size
            if arguments.get("answer", True):
                if data and not data.endswith(b"\n"):
                    out.write(b"\n")  # end the partial line, so the answer is a line of its own
                send({"jsonrpc": "2.0", "id": request_id,
                      "result": {"content": [{"type": "text", "text": "replayed"}]}})
        elif method == "tools/call" and params.get("name") == "echo":
            text = (params.get("arguments") or {}).get("text", "")
            send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
