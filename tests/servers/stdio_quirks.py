"""A tiny stdio MCP server (stdlib only) for shapes no real server produces on purpose.

Each test that uses it says why a real server cannot show the behaviour. Flags:

    --junk          before every message it writes junk to stdout: a banner, a broken JSON
                    line, bytes that are not UTF-8, a bare JSON number, a blank line; and it
                    ends its lines with CRLF
    --ignore-eof    keeps running after stdin closes (a server that never notices EOF)
    --ignore-term   ignores SIGTERM as well (only SIGKILL stops it)
    --silent-unknown  never answers a request for a method it does not know (e.g. ``server/discover``),
                    as some handshake-era servers do before ``initialize`` (MCP spec PR #2844)
    --strict-start  a ``notifications/cancelled`` before ``initialize`` is fatal: it writes the message
                    to stderr and exits 3 (a handshake-era server that takes anything but ``initialize``
                    first as a broken client, the way typescript-sdk #2317's serveStdio wedged)

Tools (``tools/call``):

    echo {"text"}              -> the text
    crash {"code", "message"}  -> writes the message to stderr and exits with ``code`` without answering
    hang {}                    -> sends one ``notifications/progress`` (if a progressToken was given),
                                  then never answers this request (later requests are still served)
    slow {"seconds"}           -> sleeps, then answers (ignores ``notifications/cancelled``)
    ping_client {}             -> sends a ``ping`` request to the client, waits for its reply, and
                                  answers with the reply it got
    flood_pings {"count", "read"} -> sends ``count`` ``ping`` requests at once while a thread reads the
                                  replies, and answers with how many came back and how many were ``{}``;
                                  ``read=false`` never reads them and answers "flooded" at once
    raw {"lines", "answer"}    -> writes each of ``lines`` (base64 of raw bytes; ``{id}`` inside is replaced
                                  by this request's id as JSON) to stdout followed by ``\n``, then answers
                                  "raw done" if ``answer`` (default true)
    deep {"depth", "where"}    -> nested arrays ``depth`` deep: ``where="line"`` writes them as a bare line
                                  and then answers; ``"result"`` answers with them inside the result
    huge {"bytes", "id_at"}    -> answers with one line of about ``bytes`` bytes (a long text);
                                  ``id_at="end"`` puts ``id`` last, as the TypeScript SDK does
    stderr {"bytes", "lines"}  -> writes ``bytes`` bytes to stderr (in lines of 100, or one line without
                                  a newline if ``lines`` is false), then answers "stderr done"
"""

from __future__ import annotations

import base64
import json
import signal
import sys
import threading
import time

JUNK = [b"Starting quirky server v0.1 ...", b'{"jsonrpc": "2.0", "id": ', b"\xff\xfe not utf-8 \xc3", b"42", b""]

TOOLS = [
    {"name": name, "description": f"quirk: {name}", "inputSchema": {"type": "object", "properties": {}}}
    for name in ("echo", "crash", "hang", "slow", "ping_client", "flood_pings", "raw", "deep", "huge", "stderr")
]


def main() -> None:
    junk = "--junk" in sys.argv
    if "--ignore-term" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    out = sys.stdout.buffer
    stdin = sys.stdin.buffer

    def write(message: dict) -> None:
        if junk:
            for line in JUNK:
                out.write(line + b"\n")
        out.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + (b"\r\n" if junk else b"\n"))
        out.flush()

    def result(request_id, value: dict) -> None:
        write({"jsonrpc": "2.0", "id": request_id, "result": value})

    def text(request_id, value: str) -> None:
        result(request_id, {"content": [{"type": "text", "text": value}], "isError": False})

    initialized = False
    while True:
        line = stdin.readline()
        if not line:
            break
        message = json.loads(line)
        method = message.get("method")
        request_id = message.get("id")
        params = message.get("params") or {}
        if method == "notifications/cancelled" and "--strict-start" in sys.argv and not initialized:
            sys.stderr.write(f"notifications/cancelled before initialize: {line!r}\n")
            sys.stderr.flush()
            sys.exit(3)
        if method == "initialize":
            initialized = True
            result(request_id, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                "serverInfo": {"name": "stdio-quirks", "version": "0.1"}})
        elif method == "ping":
            result(request_id, {})
        elif method == "tools/list":
            result(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            name = params.get("name")
            arguments = params.get("arguments") or {}
            if name == "echo":
                text(request_id, arguments.get("text", ""))
            elif name == "crash":
                sys.stderr.write(arguments.get("message", "crashing") + "\n")
                sys.stderr.flush()
                sys.exit(int(arguments.get("code", 3)))
            elif name == "hang":
                token = (params.get("_meta") or {}).get("progressToken")
                if token is not None:
                    write({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": token, "progress": 0}})
            elif name == "slow":
                time.sleep(float(arguments.get("seconds", 0.5)))
                text(request_id, "slow done")
            elif name == "ping_client":
                write({"jsonrpc": "2.0", "id": "server-ping-1", "method": "ping"})
                while True:  # read until the client's reply to our ping
                    reply = json.loads(stdin.readline())
                    if reply.get("id") == "server-ping-1":
                        break
                text(request_id, json.dumps(reply))
            elif name == "flood_pings":
                count = int(arguments.get("count", 100))
                if not arguments.get("read", True):  # a server that never reads the replies
                    for n in range(count):
                        out.write(json.dumps({"jsonrpc": "2.0", "id": f"flood-{n}", "method": "ping"}).encode()
                                  + b"\n")
                    text(request_id, "flooded")
                    continue
                counts = {"replies": 0, "empty_results": 0}

                def read_replies(counts=counts, count=count) -> None:  # replies arrive while we still write
                    while counts["replies"] < count:
                        reply = json.loads(stdin.readline())
                        if str(reply.get("id", "")).startswith("flood-"):
                            counts["replies"] += 1
                            counts["empty_results"] += reply.get("result") == {}

                reader = threading.Thread(target=read_replies)
                reader.start()
                for n in range(count):
                    out.write(json.dumps({"jsonrpc": "2.0", "id": f"flood-{n}", "method": "ping"}).encode() + b"\n")
                out.flush()
                reader.join(30)
                text(request_id, json.dumps(counts))
            elif name == "raw":
                for item in arguments.get("lines", []):
                    line = base64.b64decode(item).replace(b"{id}", json.dumps(request_id).encode())
                    out.write(line + b"\n")
                out.flush()
                if arguments.get("answer", True):
                    text(request_id, "raw done")
            elif name == "deep":
                depth = int(arguments.get("depth", 100_000))
                nested = "[" * depth + "]" * depth
                if arguments.get("where", "line") == "line":
                    out.write(nested.encode() + b"\n")
                    text(request_id, "deep done")
                else:
                    out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode()
                              + b',"result":{"content":[],"deep":' + nested.encode() + b"}}\n")
                    out.flush()
            elif name == "stderr":
                size = int(arguments.get("bytes", 1 << 20))
                chunk = ("e" * 99 + "\n") if arguments.get("lines", True) else "e" * 100
                for _ in range(size // 100):
                    sys.stderr.write(chunk)
                sys.stderr.flush()
                text(request_id, "stderr done")
            elif name == "huge":
                size = int(arguments.get("bytes", 1 << 20))
                block = {"type": "text", "text": "x" * size}
                if arguments.get("id_at") == "end":
                    body = {"result": {"content": [block]}, "jsonrpc": "2.0", "id": request_id}
                else:
                    body = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [block]}}
                out.write(json.dumps(body).encode() + b"\n")
                out.flush()
            else:
                write({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"no tool {name}"}})
        elif request_id is not None and "--silent-unknown" not in sys.argv:
            write({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})
    if "--ignore-eof" in sys.argv or "--ignore-term" in sys.argv:
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
