"""The ``yiemagent`` command: ``tools``, ``call``, ``chat`` and ``demo``.

::

    yiemagent tools http://127.0.0.1:3001/mcp        # name and first line of each tool
    yiemagent tools --stdio "mcp-server-time --local-timezone UTC"   # a stdio server
    yiemagent tools --config ~/.cursor/mcp.json      # every server of a config file
    yiemagent call http://127.0.0.1:3001/mcp echo '{"message": "hi"}'
    yiemagent call --stdio "mcp-server-time" get_current_time '{"timezone": "UTC"}'
    yiemagent call --config mcp.json --server time get_current_time '{"timezone": "UTC"}'
    yiemagent chat --config mcp.json                 # an interactive chat (yiemagent.cli.chat)
    yiemagent demo                                   # a real conversation, offline

Servers are given the same way in every verb: ``URL`` (Streamable HTTP),
``--stdio "COMMAND ARGS"`` and ``--config FILE`` (the ``mcpServers`` JSON of
Claude Desktop, Cursor and VS Code; see ``yiemagent.mcp.config``), each
repeatable where the verb takes several servers (``tools``, ``chat``);
``call`` runs one tool of one server (``--server NAME`` picks one of a
config; by default the one that has the tool). ``call COMMAND TOOL`` with a
command line in the server's place is kept as an alias of ``--stdio``.
``--env KEY=VALUE`` is only for ``--stdio`` servers. ``--auth oauth`` logs in to the URL
servers (``yiemagent.cli.auth_options``: ``--client-id``, ``--client-secret`` or
``$YIEMAGENT_OAUTH_CLIENT_SECRET``, ``--scope``, ``--callback-port``; tokens kept in
``~/.config/yiemagent/tokens.json``). Usage errors exit with
status 2 before any server starts; other errors are one short message on
stderr (exit status 1); an HTTP error page quoted in it is cut to a few
hundred characters.

``demo`` starts the example MCP server shipped with yiemagent and the embedded
local model (or uses ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and
``YIEMAGENT_MODEL`` when ``OPENAI_BASE_URL`` is set), asks a question that
needs a tool, and prints the transcript as it happens.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence

from ..__version__ import __version__
from ..exceptions import ConfigError, YiemagentError
from ..mcp.client import MCPClient
from ..mcp.config import MCPServerConfig, load_mcp_config
from ..textpolicy import terminal_text
from ._errortext import error_text
from .auth_options import add_auth_options, apply_auth, check_auth_usage

__all__ = ["build_parser", "main", "server_configs"]

DEMO_QUESTION = "What is the weather in Paris?"

def _stdio_config(line: str, env: Sequence[str]) -> MCPServerConfig:
    """A stdio server from a command line (``--stdio "CMD ARGS"``) and ``--env KEY=VALUE`` items."""
    try:
        parts = shlex.split(line)
    except ValueError as exc:
        raise ConfigError(f"cannot split the server command line {line!r}: {exc}") from exc
    if not parts:
        raise ConfigError("the stdio server command line is empty")
    extra = {}
    for item in env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--env wants KEY=VALUE, not {item!r}")
        extra[key] = value
    return MCPServerConfig(command=parts[0], args=parts[1:], env=extra)


def server_configs(args: argparse.Namespace) -> list[MCPServerConfig]:
    """The servers named on the command line: URLs, then ``--stdio`` commands, then ``--config`` files.

    Every verb takes the same three: ``URL`` (positional, Streamable HTTP),
    ``--stdio "CMD ARGS"`` (repeatable; ``--env KEY=VALUE`` applies to these)
    and ``--config FILE`` (repeatable; the ``mcpServers`` JSON of Claude
    Desktop, Cursor or VS Code, see ``yiemagent.mcp.config``). ``--timeout`` sets
    the seconds per request of all of them.

    Raises:
        ConfigError: a malformed command line, file or entry.
    """
    servers: list[MCPServerConfig] = []
    for url in getattr(args, "urls", None) or []:
        servers.append(MCPServerConfig(url=url))
    url_count = len(servers)
    for line in args.stdio or []:
        servers.append(_stdio_config(line, args.env))
    for path in args.config or []:
        servers.extend(load_mcp_config(path))
    for server in servers:
        server.timeout_seconds = args.timeout
    if hasattr(args, "auth"):  # --auth oauth for the URLs; a config entry's own "oauth" settings (auth_options)
        apply_auth(args, servers, url_count)
    return servers


def _check_servers(parser: argparse.ArgumentParser, verb: str, urls: Sequence[str], args: argparse.Namespace) -> None:
    """Usage errors (exit status 2) shared by every verb, before any server starts."""
    for url in urls:
        if not url.startswith(("http://", "https://")):
            parser.error(f"{url!r} is not an http(s):// URL; for a stdio server use --stdio {shlex.quote(url)}")
    if args.env and not args.stdio:
        parser.error("--env is for stdio servers (--stdio); an HTTP server does not take it")


def _cmd_tools(args: argparse.Namespace) -> int:
    status = 0
    for config in server_configs(args):
        try:
            with config.client() as client:
                tools = client.list_tools()
                info = client.server_info
                print(terminal_text(f"{info.get('name', client.name)} {info.get('version', '')}: {len(tools)} tools "
                                    f"(protocol {client.protocol_version})"))
                width = max((len(t["name"]) for t in tools), default=0)
                for spec in tools:
                    first = (spec.get("description") or "").strip().split("\n", 1)[0]
                    print(terminal_text(f"  {spec['name']:<{width}}  {first}"))
        except YiemagentError as exc:
            print(f"yiemagent tools: {error_text(exc)}", file=sys.stderr)
            status = 1
    return status


def _pick_server(configs: list[MCPServerConfig], wanted: str | None, tool: str) -> MCPClient:
    """The client of the one server ``call`` runs ``tool`` on (``--server NAME``, the only one, or the one with it)."""
    if wanted is not None:
        named = [c for c in configs if c.name == wanted]
        if not named:
            raise ConfigError(f"no server named {wanted!r}; the config has "
                              f"{', '.join(repr(c.name) for c in configs) or 'none'}")
        return named[0].client()
    if len(configs) == 1:
        return configs[0].client()
    having = []
    for config in configs:
        client = config.client()
        try:
            names = [spec["name"] for spec in client.list_tools()]
        except YiemagentError as exc:
            client.close()
            print(f"yiemagent call: {config.name}: {error_text(exc)}", file=sys.stderr)
            continue
        if tool in names:
            having.append(client)
        else:
            client.close()
    if len(having) == 1:
        return having[0]
    for client in having:
        client.close()
    if not having:
        raise ConfigError(f"no server has a tool named {tool!r}")
    raise ConfigError(f"{len(having)} servers have a tool named {tool!r}: "
                      f"{', '.join(c.name for c in having)}; choose one with --server NAME")


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
    configs = server_configs(args)
    with _pick_server(configs, args.server, args.tool) as client:
        result = client.call_tool(args.tool, arguments)
    try:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    except UnicodeEncodeError:  # a terminal that cannot show the text: \u escapes are still the same JSON
        print(json.dumps(result, indent=2))
    return 1 if result.get("isError") else 0


def _cmd_chat(args: argparse.Namespace) -> int:
    from .chat import run_chat

    return run_chat(args, server_configs(args))


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import main as demo_main

    return demo_main(args.question, model=args.model, max_turns=args.max_turns, max_tokens=args.max_tokens)


def _server_options(command: argparse.ArgumentParser, timeout_seconds: float) -> None:
    command.add_argument("--stdio", action="append", metavar="COMMAND",
                         help='a stdio server\'s command line, e.g. --stdio "mcp-server-time --local-timezone UTC" '
                              "(repeatable)")
    command.add_argument("--config", action="append", metavar="FILE",
                         help='servers from a config file: {"mcpServers": {name: {"command", "args", "env", "cwd"} | '
                              '{"url", "headers"}}} (Claude Desktop, Cursor; VS Code\'s {"servers": ...}) or any '
                              "other client's file (Windsurf, Zed, Goose .yaml, opencode, Codex .toml, Gemini CLI, "
                              "Continue, Cline); ${VAR} is expanded (repeatable)")
    command.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                         help="a variable for the --stdio servers (repeatable); they see only these and "
                              "HOME, LOGNAME, PATH, SHELL, TERM, USER")
    command.add_argument("--timeout", type=float, default=timeout_seconds,
                         help=f"seconds per request to a server (default {timeout_seconds:g})")
    add_auth_options(command)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``yiemagent`` command."""
    parser = argparse.ArgumentParser(prog="yiemagent", description="yiemagent: sync AI agents with MCP tools.")
    parser.add_argument("--version", action="version", version=f"yiemagent {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    tools = sub.add_parser("tools", help="list the tools of MCP servers")
    tools.add_argument("urls", nargs="*", metavar="URL",
                       help="Streamable HTTP endpoint, e.g. http://127.0.0.1:3001/mcp")
    _server_options(tools, 30.0)
    tools.set_defaults(func=_cmd_tools)

    call = sub.add_parser("call", help="run one tool of an MCP server and print the result",
                          usage="yiemagent call [URL | COMMAND] TOOL [ARGUMENTS] [--stdio COMMAND] "
                                "[--config FILE [--server NAME]] [--env KEY=VALUE] [--timeout SECONDS] "
                                "[--auth oauth [--client-id ID] [--scope SCOPES] ...]")
    call.add_argument("words", nargs="+", metavar="[URL | COMMAND] TOOL [ARGUMENTS]",
                      help="the server (an http(s):// URL, or a stdio command line: the same as --stdio) unless "
                           "--stdio or --config gives it; the tool; its arguments as a JSON object")
    call.add_argument("--server", metavar="NAME", help="which server of --config (default: the one with the tool)")
    _server_options(call, 60.0)
    call.set_defaults(func=_cmd_call)

    chat = sub.add_parser("chat", help="an interactive chat with a model and MCP servers")
    chat.add_argument("urls", nargs="*", metavar="URL", help="Streamable HTTP MCP endpoints")
    _server_options(chat, 60.0)
    chat.add_argument("--base-url", default=None,
                      help="an OpenAI-compatible server (default $OPENAI_BASE_URL; none: the embedded local model)")
    chat.add_argument("--model", default=None,
                      help="the model name (default $YIEMAGENT_MODEL, else gpt-4o-mini)")
    chat.add_argument("--api-key", default=None, help="the API key (default $OPENAI_API_KEY)")
    chat.add_argument("--system", default=None, metavar="TEXT", help="a system prompt")
    chat.add_argument("--max-turns", type=int, default=6, help="model calls per input, at most")
    chat.add_argument("--max-tokens", type=int, default=None, help="tokens per model reply, at most")
    chat.add_argument("--context-window", type=int, default=None, metavar="TOKENS",
                      help="the model's context length: the conversation is compacted before a request passes it "
                           "(and /compact works)")
    chat.add_argument("--local-model", choices=["smollm2-135m", "gemma3-270m"], default="smollm2-135m",
                      help="the embedded model when there is no --base-url (smollm2-135m: tool calls forced by a "
                           "JSON schema, as in the demo)")
    chat.add_argument("--history", default=None, metavar="FILE",
                      help="readline history file (default $XDG_STATE_HOME or ~/.cache: yiemagent/chat_history)")
    chat.set_defaults(func=_cmd_chat)

    demo = sub.add_parser("demo", help="a real conversation: local model + example MCP server")
    demo.add_argument("--question", default=DEMO_QUESTION)
    demo.add_argument("--max-turns", type=int, default=3)
    demo.add_argument("--max-tokens", type=int, default=96)
    demo.add_argument("--model", choices=["smollm2-135m", "gemma3-270m"], default="smollm2-135m",
                      help="the embedded model (default: SmolLM2-135M-Instruct, tool calls constrained by schema)")
    demo.set_defaults(func=_cmd_demo)
    return parser


def _call_words(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Split ``call``'s positional words into server, tool and arguments (usage errors exit 2)."""
    words = list(args.words)
    given = bool(args.stdio or args.config)
    if given:
        if len(words) > 2 or (words and words[0].startswith(("http://", "https://"))):
            parser.error("call takes one server: with --stdio or --config give only TOOL [ARGUMENTS]; "
                         f"{words[0]!r} would be a second server")
    elif len(words) < 2:
        parser.error("call needs a server (URL, --stdio COMMAND or --config FILE) and a TOOL")
    elif words[0].startswith(("http://", "https://")):
        args.urls = [words.pop(0)]
    else:  # the positional command line: an alias of --stdio
        args.stdio = [words.pop(0)]
    if len(words) > 2:
        parser.error(f"call takes TOOL [ARGUMENTS]; {words[2]!r} is one word too many (quote the JSON)")
    args.tool = words[0]
    args.arguments = words[1] if len(words) > 1 else "{}"
    if len(args.stdio or []) + len(getattr(args, "urls", None) or []) > 1:
        parser.error("call runs one tool of one server: give one --stdio COMMAND (or a URL, or --config)")
    if args.server and not args.config:
        parser.error("--server NAME picks a server of --config FILE")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``yiemagent`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "call":
        _call_words(parser, args)
    if args.command in ("tools", "call", "chat"):
        _check_servers(parser, args.command, getattr(args, "urls", None) or [], args)
        check_auth_usage(parser, args, getattr(args, "urls", None) or [])
    if args.command == "tools" and not (args.urls or args.stdio or args.config):
        parser.error("tools needs a server: a URL, --stdio COMMAND or --config FILE")
    try:
        return int(args.func(args))
    except YiemagentError as exc:
        print(f"yiemagent {args.command}: {error_text(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
