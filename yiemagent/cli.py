"""The ``yiemagent`` command: ``tools``, ``call`` and ``demo``.

::

    yiemagent tools http://127.0.0.1:3001/mcp        # name and first line of each tool
    yiemagent tools --stdio "mcp-server-time --local-timezone UTC"   # a stdio server
    yiemagent call http://127.0.0.1:3001/mcp echo '{"message": "hi"}'
    yiemagent call "mcp-server-time" get_current_time '{"timezone": "UTC"}'   # stdio
    yiemagent demo                                   # a real conversation, offline

``tools`` takes a URL or ``--stdio COMMAND``, never both (exit status 2);
``--env`` is only for stdio servers. Errors are one short message on stderr
(exit status 1); an HTTP error page quoted in it is cut to a few hundred
characters.

``demo`` starts the example MCP server shipped with yiemagent and the embedded
local model (or uses ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and
``YIEMAGENT_MODEL`` when ``OPENAI_BASE_URL`` is set), asks a question that
needs a tool, and prints the transcript as it happens.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from . import events as ev
from .__version__ import __version__
from .agent import Agent
from .exceptions import ConfigError, YiemagentError
from .llm import openai_chat
from .mcp.client import MCPClient
from .messages import AssistantMessage, ToolResultMessage

__all__ = ["main"]

DEMO_QUESTION = "What is the weather in Paris?"

ERROR_BODY_CHARS = 300
"""Characters of a server's answer body quoted in a CLI error message."""

_HTML = re.compile(r"<\s*(!doctype|html|head|body|title|pre|p|h1|div)\b", re.IGNORECASE)


def _short_body(body: str, limit: int = ERROR_BODY_CHARS) -> str:
    """``body`` as one short line: HTML tags dropped, whitespace collapsed, at most ``limit`` characters."""
    text = body
    if _HTML.search(text):
        text = re.sub(r"<(script|style)\b.*?</\1\s*>", " ", text, flags=re.IGNORECASE | re.DOTALL)
        text = html.unescape(re.sub(r"<[^>]*>", " ", text))
    text = " ".join(text.split())
    if len(text) > limit:
        text = f"{text[:limit].rstrip()}... [cut from {len(body):,} characters]"
    return text


def _error_text(exc: BaseException) -> str:
    """The message of ``exc`` for the terminal: a quoted answer body (``exc.body``) is shortened."""
    message = str(exc)
    body = getattr(exc, "body", "") or ""
    if isinstance(body, str) and body.strip():
        # errors quote the start of the body at the end of their message: find where that quote begins
        probe = body[:40]
        start = message.find(probe)
        while start != -1 and not body.startswith(message[start:]):
            start = message.find(probe, start + 1)
        if start != -1:
            message = message[:start] + _short_body(body)
    if len(message) > 4 * ERROR_BODY_CHARS and "\n" not in message:
        message = _short_body(message, 4 * ERROR_BODY_CHARS)
    return message


def _client(target: str, stdio: str | None, timeout_seconds: float, env: Sequence[str] = ()) -> MCPClient:
    """An ``MCPClient`` for an http(s) URL, or for a stdio server command line."""
    if stdio is None:
        return MCPClient(target, timeout_seconds=timeout_seconds)
    try:
        parts = shlex.split(stdio)
    except ValueError as exc:
        raise ConfigError(f"cannot split the server command line {stdio!r}: {exc}") from exc
    if not parts:
        raise ConfigError("the stdio server command line is empty")
    extra = {}
    for item in env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--env wants KEY=VALUE, not {item!r}")
        extra[key] = value
    return MCPClient.stdio(parts[0], parts[1:], env=extra, timeout_seconds=timeout_seconds,
                           name=os.path.basename(parts[0]))


def _cmd_tools(args: argparse.Namespace) -> int:
    with _client(args.url, args.stdio, args.timeout, args.env) as client:
        tools = client.list_tools()
        info = client.server_info
        print(f"{info.get('name', client.name)} {info.get('version', '')}: {len(tools)} tools "
              f"(protocol {client.protocol_version})")
        width = max((len(t["name"]) for t in tools), default=0)
        for spec in tools:
            first = (spec.get("description") or "").strip().split("\n", 1)[0]
            print(f"  {spec['name']:<{width}}  {first}")
    return 0


def _cmd_call(args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.arguments) if args.arguments else {}
    except ValueError as exc:
        print(f"yiemagent call: the arguments are not JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(arguments, dict):
        print(f"yiemagent call: the arguments must be a JSON object, not {type(arguments).__name__}",
              file=sys.stderr)
        return 2
    is_url = args.server.startswith(("http://", "https://"))
    with _client(args.server, None if is_url else args.server, args.timeout, args.env) as client:
        result = client.call_tool(args.tool, arguments)
    try:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    except UnicodeEncodeError:  # a terminal that cannot show the text: \u escapes are still the same JSON
        print(json.dumps(result, indent=2))
    return 1 if result.get("isError") else 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, timeout_seconds: float, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise YiemagentError(f"the example MCP server exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise YiemagentError(f"the example MCP server did not listen on port {port} within {timeout_seconds:g}s")


class _Transcript:
    """Event sink that prints the conversation as it happens."""

    def __init__(self) -> None:
        self.model_calls = 0
        self.tool_calls = 0

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.MessageEndEvent) and isinstance(event.message, AssistantMessage):
            self.model_calls += 1
            message = event.message
            if message.text.strip() and message.tool_calls:
                print(f"assistant (text beside the calls)> {message.text.strip()[:200]}")
            for call in message.tool_calls:
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                problem = f"   [not run: {call.error.split(';')[0]}]" if call.error else ""
                print(f"assistant> calls {call.name}({arguments}){problem}", flush=True)
        elif isinstance(event, ev.MessageEndEvent) and isinstance(event.message, ToolResultMessage):
            self.tool_calls += 1
            mark = " (error)" if event.message.is_error else ""
            print(f"tool {event.message.tool_name}{mark}> {event.message.text[:300]}", flush=True)
        elif isinstance(event, ev.ErrorEvent) and event.where != "max_turns":
            print(f"[error in {event.where}] {event.message}", flush=True)


def _cmd_demo(args: argparse.Namespace) -> int:
    started = time.monotonic()
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "yiemagent.examples.weather_server", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    model: Any = None
    agent: Agent | None = None
    try:
        _wait_for_port(port, 30.0, server)
        url = f"http://127.0.0.1:{port}/mcp"
        client = MCPClient(url, name="weather")
        names = [t["name"] for t in client.list_tools()]
        print(f"MCP server: {url} ({client.server_info.get('name')}), tools: {', '.join(names)}")
        base_url = os.environ.get("OPENAI_BASE_URL")
        if base_url:
            model_name = os.environ.get("YIEMAGENT_MODEL", "gpt-4o-mini")
            llm_call = openai_chat(base_url, model_name, api_key=os.environ.get("OPENAI_API_KEY"))
            print(f"model: {model_name} at {base_url}")
        else:
            from .local import LocalModel

            model = LocalModel()
            t0 = time.monotonic()
            model.start()
            llm_call = model.llm_call(max_tokens=args.max_tokens)
            print(f"model: embedded gemma3-270m (llama.cpp) at {model.base_url}, "
                  f"started in {time.monotonic() - t0:.1f}s")
        transcript = _Transcript()
        agent = Agent(llm_call, mcp_servers=[client], event_sink=transcript, max_turns=args.max_turns,
                      builtin_list_tools=False)
        print(f"user> {args.question}", flush=True)
        answer = agent.ask(args.question)
        text = " ".join((answer.get("content") or "").split())  # one line; a tiny model rambles
        print(f"assistant> {text[:300] if text else '(no text)'}")
        print(f"done in {time.monotonic() - started:.1f}s: {transcript.model_calls} model calls, "
              f"{transcript.tool_calls} tool results, status {answer['status']}")
        return 0 if answer["status"] != "error" else 1
    finally:
        if agent is not None:
            agent.shutdown()
        if model is not None:
            model.stop()
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``yiemagent`` command."""
    parser = argparse.ArgumentParser(prog="yiemagent", description="yiemagent: sync AI agents with MCP tools.")
    parser.add_argument("--version", action="version", version=f"yiemagent {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    tools = sub.add_parser("tools", help="list the tools of an MCP server")
    tools.add_argument("url", nargs="?", help="Streamable HTTP endpoint, e.g. http://127.0.0.1:3001/mcp")
    tools.add_argument("--stdio", metavar="COMMAND", help='run a stdio server, e.g. --stdio "mcp-server-time"')
    tools.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    tools.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                       help="a variable for the stdio server (repeatable); it sees only these and "
                            "HOME, LOGNAME, PATH, SHELL, TERM, USER")
    tools.set_defaults(func=_cmd_tools)

    call = sub.add_parser("call", help="run one tool of an MCP server and print the result")
    call.add_argument("server", help="an http(s):// endpoint, or a stdio server command line")
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object")
    call.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the result")
    call.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                      help="a variable for the stdio server (repeatable)")
    call.set_defaults(func=_cmd_call)

    demo = sub.add_parser("demo", help="a real conversation: local model + example MCP server")
    demo.add_argument("--question", default=DEMO_QUESTION)
    demo.add_argument("--max-turns", type=int, default=3)
    demo.add_argument("--max-tokens", type=int, default=64)
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``yiemagent`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "tools":
        if args.url and args.stdio:
            parser.error(f"tools takes a URL or --stdio COMMAND, not both: cannot combine {args.url!r} with "
                         f"--stdio {args.stdio!r}")
        if not (args.url or args.stdio):
            parser.error("tools needs a URL or --stdio COMMAND")
        if args.url and not args.url.startswith(("http://", "https://")):
            parser.error(f"{args.url!r} is not an http(s):// URL; for a stdio server use --stdio {args.url!r}")
        if args.url and args.env:
            parser.error("--env is for stdio servers; an HTTP server does not take it")
    if args.command == "call" and args.env and args.server.startswith(("http://", "https://")):
        parser.error("--env is for stdio servers; an HTTP server does not take it")
    try:
        return int(args.func(args))
    except YiemagentError as exc:
        print(f"yiemagent {args.command}: {_error_text(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
