"""Chat: ``yiemagent chat``, an interactive terminal chat with a model and MCP servers.

::

    yiemagent chat                                        # the embedded local model, no servers
    yiemagent chat --config mcp.json                      # servers of a Claude Desktop / Cursor file
    yiemagent chat --base-url http://127.0.0.1:8080/v1 --model qwen3 --stdio "mcp-server-time"
    OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... yiemagent chat http://127.0.0.1:3001/mcp

The model is the embedded local model (``yiemagent.models.local``) unless
``--base-url`` or ``$OPENAI_BASE_URL`` names an OpenAI-compatible server
(``--model``/``$YIEMAGENT_MODEL``, ``--api-key``/``$OPENAI_API_KEY``); it is
asked to stream. Servers are given as in every verb (``URL``, ``--stdio``,
``--config``); those that cannot be reached at start are shown and left
out. What a screen looks like::

    you> What is the weather in Paris?
      -> get_weather {"city": "Paris"}
      <- get_weather 3 ms: Weather in Paris: Sunny, 21 °C, light wind from the west (demo data).
    assistant> It is sunny in Paris, 21 °C.
      [completed, 2 model calls, 3.1 s, 412 tokens]

The answer is printed as the model writes it (``message_update`` events);
tool calls and their results as they happen, with their duration.

Commands: ``/tools`` (servers and tools), ``/reset`` (a new conversation),
``/save FILE`` and ``/load FILE`` (the conversation as ``Agent.state_to_json``
JSON), ``/compact [FOCUS]`` (summarise the older messages now; with
``--context-window N`` the chat also compacts by itself, see
``yiemagent.context.compaction``), ``/help``, ``/quit``. Keys: **Ctrl-C while an answer is coming aborts
that run** (model call and tools are cut; the conversation stays valid) and
the prompt comes back; Ctrl-C or Ctrl-D at the prompt quits. Input lines are
kept with ``readline`` in ``$XDG_STATE_HOME/yiemagent/chat_history`` (else
``~/.cache/yiemagent/chat_history``; ``--history FILE``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import logging
import os
import queue
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from ..agent import Agent
from ..exceptions import YiemagentError
from ..loop import events as ev
from ..mcp.client import MCPClient
from ..mcp.config import MCPServerConfig
from ..models.openai_chat import openai_chat
from ..output.answers import Answer
from ._errortext import error_text
from .chat_view import ChatView, one_line
from .elicit_prompt import TerminalElicitation

__all__ = ["ChatSession", "ChatView", "history_path", "run_chat"]

logger = logging.getLogger("yiemagent.cli.chat")

ABORT_WAIT_SECONDS = 15.0
"""Seconds to wait for an aborted run to end before the prompt comes back anyway."""

HELP = """Commands:
  /tools         the MCP servers and the tools the model can call
  /reset         start a new conversation
  /save FILE     write the conversation to FILE (JSON)
  /load FILE     continue a conversation saved with /save
  /compact [FOCUS]  summarise the older messages now (needs --context-window)
  /quit          leave (also Ctrl-D, or Ctrl-C at the prompt)
Ctrl-C while an answer is coming stops that answer."""


def history_path() -> Path:
    """``$XDG_STATE_HOME/yiemagent/chat_history``, else ``~/.cache/yiemagent/chat_history``."""
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state) if state else Path.home() / ".cache"
    return base / "yiemagent" / "chat_history"


class ChatSession:
    """One chat: an agent over ``llm_call`` and ``clients``, commands, and runs that Ctrl-C can abort.

    Args:
        llm_call: the model (see ``yiemagent.formats.llm``).
        clients: connected MCP clients the agent may use (not closed here).
        unreachable: ``{server name: reason}`` for servers left out.
        out: where to print.
        agent_options: more ``Agent(...)`` keywords (``system_prompt``, ``max_turns``...).
    """

    def __init__(
        self,
        llm_call: Any,
        clients: Sequence[MCPClient] = (),
        *,
        unreachable: dict[str, str] | None = None,
        out: TextIO | None = None,
        **agent_options: Any,
    ) -> None:
        self.llm_call = llm_call
        self.clients = list(clients)
        self.unreachable = dict(unreachable or {})
        self.view = ChatView(out or sys.stdout)
        self.agent_options = agent_options
        self.events: queue.Queue[ev.Event] = queue.Queue()
        self.asker: TerminalElicitation | None = None
        """Asks the servers' elicitations in the terminal while a run is drained (``yiemagent.cli.elicit_prompt``)."""
        self.agent = self._new_agent()

    def _new_agent(self, state: str | None = None) -> Agent:
        """A started agent whose servers are listed already: its first listing is not news to the person.

        A new agent (the first, ``/reset``, ``/load``) reports its first listing as ``tools_changed``
        with every tool added; here that listing is compared with the tools the person knows, and
        only a real difference is shown.
        """
        options: dict[str, Any] = dict(self.agent_options, mcp_servers=self.clients, event_sink=self.events.put)
        if state is None:
            agent = Agent(self.llm_call, **options).start()
        else:
            agent = Agent.from_state(state, self.llm_call, **options).start()
        if self.clients:
            agent.mcp.refresh()
        kept: list[ev.Event] = []
        while not self.events.empty():
            event = self.events.get_nowait()
            if not isinstance(event, ev.ToolsChangedEvent):
                kept.append(event)
        for event in kept:
            self.events.put(event)
        names = {tool["name"] for tool in agent.mcp.describe()}
        known = getattr(self, "tool_names", None)
        if known is not None and names != known:
            self.view.show(ev.ToolsChangedEvent(added=sorted(names - known), removed=sorted(known - names)))
        self.tool_names: set[str] = names
        """The MCP tools the person was told about (the banner, ``/tools``, ``tools changed`` lines)."""
        return agent

    def close(self) -> None:
        """Stop the agent (its run, if any, is aborted)."""
        self.agent.shutdown(timeout_seconds=5.0, mode="now")

    # ------------------------------------------------------------------ input

    def handle(self, line: str) -> bool:
        """Serve one input line (a command or a message); False means quit."""
        text = line.strip()
        if not text:
            return True
        if text.startswith("/"):
            command, _, rest = text.partition(" ")
            return self.command(command.lower(), rest.strip())
        self.ask(text)
        return True

    def command(self, name: str, argument: str) -> bool:
        """Run ``/name argument``; False means quit."""
        if name in ("/quit", "/exit", "/q"):
            return False
        if name in ("/help", "/?"):
            self.view.line(HELP)
        elif name == "/tools":
            self.show_tools()
        elif name == "/reset":
            self._replace_agent(None)
            self.view.line("(a new conversation)")
        elif name == "/compact":
            self.compact(argument or None)
        elif name in ("/save", "/load"):
            if not argument:
                self.view.line(f"{name} needs a file name: {name} chat.json")
            elif name == "/save":
                self.save(Path(argument).expanduser())
            else:
                self.load(Path(argument).expanduser())
        else:
            self.view.line(f"unknown command {name}; /help lists them")
        return True

    def _replace_agent(self, state: str | None) -> None:
        agent = self._new_agent(state)
        self.agent.shutdown(timeout_seconds=5.0, mode="now")
        self.agent = agent

    def save(self, path: Path) -> None:
        """Write the conversation to ``path``."""
        try:
            path.write_text(self.agent.state_to_json(), encoding="utf-8")
        except OSError as exc:
            self.view.line(f"cannot save to {path}: {exc.strerror or exc}")
            return
        self.view.line(f"(saved {len(self.agent.history)} messages to {path})")

    def load(self, path: Path) -> None:
        """Continue the conversation saved in ``path`` (the current one is dropped)."""
        try:
            state = path.read_text(encoding="utf-8")
            self._replace_agent(state)
        except OSError as exc:
            self.view.line(f"cannot read {path}: {exc.strerror or exc}")
            return
        except YiemagentError as exc:
            self.view.line(f"cannot load {path}: {one_line(str(exc), 300)}")
            return
        self.view.line(f"(loaded {len(self.agent.history)} messages from {path})")

    def compact(self, focus: str | None) -> None:
        """``/compact [FOCUS]``: summarise the older messages now (``Agent.compact``)."""
        try:
            done = self.agent.compact(focus)
        except YiemagentError as exc:
            self.view.line(f"cannot compact: {one_line(str(exc), 300)}")
            return
        if done is None:
            self.view.line("(nothing to compact yet)")
            return
        while not self.events.empty():  # the compaction event
            self.view.show(self.events.get_nowait())

    def show_tools(self) -> None:
        """Print the servers (reachable or not) and every tool the model may call."""
        by_server: dict[str, list[dict[str, str]]] = {}
        self.agent.mcp.refresh()
        for spec in self.agent.mcp.describe():
            by_server.setdefault(spec["server"], []).append(spec)
        mcp_names = {spec["name"] for specs in by_server.values() for spec in specs}
        local = [t for t in self.agent.tools if t.name not in mcp_names]
        status = getattr(self.agent, "mcp_status", None)
        failing = {s["server"]: s.get("error") for s in (status() if callable(status) else [])
                   if s.get("state") == "unavailable"}
        for client in self.clients:
            specs = by_server.get(client.name, [])
            if client.name in failing:
                self.view.line(f"{client.name}: unreachable now: {one_line(str(failing[client.name]), 200)}")
                continue
            self.view.line(f"{client.name}: {len(specs)} tool{'s' if len(specs) != 1 else ''}")
            for spec in specs:
                self.view.line(f"  {spec['name']:<24} {one_line(spec['description'], 80)}")
        for name, reason in self.unreachable.items():
            self.view.line(f"{name}: unreachable: {one_line(reason, 200)}")
        if local:
            self.view.line("built in:")
            for each in local:
                self.view.line(f"  {each.name:<24} {one_line(each.description, 80)}")
        if not (self.clients or self.unreachable or local):
            self.view.line("(no tools: give servers with URL, --stdio or --config)")

    # ------------------------------------------------------------------ runs

    def ask(self, text: str) -> Answer | None:
        """Send ``text`` and print the run as it happens; Ctrl-C aborts it. Returns the answer (None if gone)."""
        future = self.agent.submit(text)
        aborting_since: float | None = None
        while True:
            try:
                self._drain(future, aborting_since)
                break
            except KeyboardInterrupt:
                if aborting_since is not None:  # a second Ctrl-C: stop waiting
                    self.view.line("  [still stopping; the prompt is back]")
                    return None
                aborting_since = time.monotonic()
                self.view.line("  [stopping the answer]")
                self.agent.abort()
        while True:  # events that arrived with the end
            try:
                self.view.show(self.events.get_nowait())
            except queue.Empty:
                break
        self.view.end_stream()
        if not future.done():
            return None
        answer = future.result()
        for missing in answer.get("mcp_unavailable") or []:  # servers that failed during the run
            self.view.line(f"  [unreachable: {missing.get('server')}: {one_line(str(missing.get('error')), 200)}]")
        return answer

    def _drain(self, future: concurrent.futures.Future[Answer], aborting_since: float | None) -> None:
        while not future.done():
            if aborting_since is not None and time.monotonic() - aborting_since > ABORT_WAIT_SECONDS:
                self.view.line("  [the run did not stop in time; the prompt is back]")
                return
            if self.asker is not None:
                self.asker.serve_pending()  # a server's question, asked on this (the terminal's) thread
            try:
                event = self.events.get(timeout=0.1)
            except queue.Empty:
                continue
            if isinstance(event, ev.ToolsChangedEvent):  # only what the person does not know yet
                added, removed = set(event.added) - self.tool_names, set(event.removed) & self.tool_names
                self.tool_names = (self.tool_names - removed) | added
                if not (added or removed):
                    continue  # e.g. the new agent's first listing, reported after _new_agent looked
                event = ev.ToolsChangedEvent(added=sorted(added), removed=sorted(removed), run_id=event.run_id)
            self.view.show(event)


def _connect(configs: Sequence[MCPServerConfig], view: ChatView, asker: TerminalElicitation | None = None,
             ) -> tuple[list[MCPClient], dict[str, str]]:
    """Make and connect each server's client (in parallel); ``(reachable, {name: reason})``."""
    clients = [config.client() for config in configs]
    for client in clients:
        if asker is not None:
            asker.callbacks().install(client)  # elicitation asked in the terminal
    if not clients:
        return [], {}
    view.line(f"connecting to {len(clients)} MCP server{'s' if len(clients) != 1 else ''}...")

    def probe(client: MCPClient) -> int:
        return len(client.list_tools())

    reachable: list[MCPClient] = []
    unreachable: dict[str, str] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, len(clients))) as pool:
        futures = [pool.submit(probe, client) for client in clients]
        for client, future in zip(clients, futures, strict=True):
            try:
                count = future.result()
            except Exception as exc:  # any failure: the server is left out and said so
                unreachable[client.name] = error_text(exc)
                view.line(f"  {client.name}: unreachable: {one_line(unreachable[client.name], 300)}")
                client.close()
                continue
            info = client.server_info
            label = f" ({info.get('name')} {info.get('version', '')})".rstrip(" )") + ")" if info.get("name") else ""
            view.line(f"  {client.name}{label}: {count} tool{'s' if count != 1 else ''}")
            reachable.append(client)
    return reachable, unreachable


def _readline(path: Path | None) -> Callable[[], None]:
    """Turn on line editing and history in ``path``; returns the function that saves it."""
    try:
        import readline
    except ImportError:  # Windows without pyreadline: plain input()
        return lambda: None
    if path is None:
        return lambda: None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            readline.read_history_file(str(path))
    except OSError as exc:
        logger.warning("chat history %s not read: %s", path, exc)
    readline.set_history_length(1000)

    def save() -> None:
        try:
            readline.write_history_file(str(path))
        except OSError as exc:
            logger.warning("chat history %s not written: %s", path, exc)

    return save


def _model(args: argparse.Namespace, view: ChatView, *, tools: bool) -> tuple[Any, Any, str]:
    """``(llm_call, local model or None, description)`` from the options and environment."""
    extra: dict[str, Any] = {}
    if args.max_tokens:
        extra["max_tokens"] = args.max_tokens
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    if base_url:
        name = args.model or os.environ.get("YIEMAGENT_MODEL") or "gpt-4o-mini"
        api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or None
        return openai_chat(base_url, name, api_key=api_key, stream=True, **extra), None, f"{name} at {base_url}"
    from ..models.local import LocalModel

    name = getattr(args, "local_model", None) or "smollm2-135m"
    view.line(f"starting the embedded local model {name}...")
    model = LocalModel(model=name)
    started = time.monotonic()
    how = "llama.cpp"
    llm_call: Any
    if name == "smollm2-135m" and tools:  # it ignores "tools": calls forced by a JSON schema, as in the demo
        llm_call = model.constrained_llm_call(**extra)
        how = "llama.cpp, tool calls by JSON schema"
    else:
        llm_call = model.llm_call(**extra)
    return llm_call, model, f"{name} (embedded {how}, started in {time.monotonic() - started:.1f}s)"


def run_chat(args: argparse.Namespace, configs: Sequence[MCPServerConfig], *, out: TextIO | None = None) -> int:
    """The ``yiemagent chat`` loop (``args`` from ``yiemagent.cli.build_parser``); returns the exit status."""
    view = ChatView(out or sys.stdout)
    model: Any = None
    clients: list[MCPClient] = []
    session: ChatSession | None = None
    save_history: Callable[[], None] = lambda: None  # noqa: E731
    try:
        asker = TerminalElicitation(view.out)
        clients, unreachable = _connect(configs, view, asker)
        llm_call, model, description = _model(args, view, tools=bool(clients))
        view.line(f"model: {description}")
        asker.use_model(llm_call)  # servers may sample the chat's model, once the person allows each request
        options: dict[str, Any] = {"max_turns": args.max_turns}
        if args.system:
            options["system_prompt"] = args.system
        if getattr(args, "context_window", None):
            options.update(compaction=True, context_window=args.context_window)
        if model is not None and model.model == "smollm2-135m":
            options["builtin_list_tools"] = False  # a 135M model picks it instead of the tool it needs
        session = ChatSession(llm_call, clients, unreachable=unreachable, out=view.out, **options)
        session.view, session.asker = view, asker
        tools = len(session.tool_names)  # the first listing is the banner's, not news (ChatSession._new_agent)
        configured = len(clients) + len(unreachable)
        view.line(f"{configured} MCP server{'s' if configured != 1 else ''}"
                  f"{f' ({len(unreachable)} unreachable)' if unreachable else ''}, {tools} tools. "
                  "/help for commands; Ctrl-C stops an answer, Ctrl-D quits.")
        save_history = _readline(Path(args.history).expanduser() if args.history else history_path())
        while True:
            try:
                line = input("you> ")
            except (EOFError, KeyboardInterrupt):
                view.write("\n")
                break
            if not session.handle(line):
                break
        view.line("bye")
        return 0
    except KeyboardInterrupt:  # while starting
        view.line("^C")
        return 130
    finally:
        save_history()
        if session is not None:
            session.close()
        for client in clients:
            client.close()
        if model is not None:
            model.stop()
