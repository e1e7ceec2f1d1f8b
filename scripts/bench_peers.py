"""Peer drivers and table helpers of ``scripts/bench_loop.py --vs all``: the same runs as yiemagent's, elsewhere.

Each peer is optional: ``PEERS[name].missing()`` returns the install command when it is not importable (or,
for pi-agent-core, when Node or the npm package is absent), and ``bench_loop.py`` prints "not installed" then.
Every fake model here is instant (or sleeps the given seconds) and O(1): the figures measure the frameworks.

- openai-agents: ``Runner.run_sync`` (``Runner.run`` for the concurrent run) with a ``Model`` subclass;
  tracing disabled (its default exporter would send spans to the network).
- pydantic-ai: ``Agent.run_sync`` with ``FunctionModel``; request limit off.
- smolagents: ``ToolCallingAgent`` with a ``Model`` subclass; its answer is a ``final_answer`` tool call.
- pi-agent-core (Node): ``scripts/bench_pi.mjs``, one long-lived ``node`` process answering JSON commands,
  with the npm package installed in ``~/.cache/yiemagent/bench-node`` (``$YIEMAGENT_CACHE/bench-node``).
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PI_PACKAGE = "@mariozechner/pi-agent-core@0.73.1"
NODE_DIR = Path(os.environ.get("YIEMAGENT_CACHE", Path.home() / ".cache" / "yiemagent")) / "bench-node"


@dataclass
class Peer:
    """A peer framework: its drivers (None: that table has no row for it) and how to install it."""

    name: str
    module: str
    install: str
    calls: Callable[[int], float] | None = None  # total ms of one run making n sequential tool calls
    history: Callable[[int], float] | None = None  # ms of one input with m messages already in the history
    memory: Callable[[int], float] | None = None  # bytes kept per message after k inputs
    concurrent: Callable[[int, int, float], float] | None = None  # seconds: conversations x calls, model seconds
    extra: dict[str, Any] = field(default_factory=dict)

    def missing(self) -> str | None:
        """None when usable, else the command that installs it."""
        if importlib.util.find_spec(self.module) is None:
            return self.install
        return None


def kept_bytes(run: Callable[[], Any], count: Callable[[], int]) -> float:
    """Bytes still allocated per new message after ``run()`` (tracemalloc), ``count()`` messages before/after."""
    gc.collect()
    tracemalloc.start()
    try:
        before_messages = count()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        run()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        added = count() - before_messages
    finally:
        tracemalloc.stop()
    return (after - before) / max(1, added)


# --------------------------------------------------------------------------- tables and statistics


@dataclass
class Table:
    """One printed table: ``rows`` are lists in ``columns`` order (numbers, strings, or None for "-")."""

    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def column(self, name: str) -> list[Any]:
        """The values of column ``name``, one per row."""
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def render(self) -> str:
        """The table as text: the title, the header, one line per row (text columns to the left), the notes."""
        cells = [[fmt(value) for value in row] for row in self.rows]
        widths = [max([len(name)] + [len(row[i]) for row in cells]) for i, name in enumerate(self.columns)]
        text = [all(isinstance(row[i], str) or row[i] is None for row in self.rows) for i in range(len(widths))]

        def line(values: list[str]) -> str:
            padded = (v.ljust(w) if left else v.rjust(w) for v, w, left in zip(values, widths, text, strict=True))
            return "  ".join(padded).rstrip()

        return "\n".join([self.title, line(self.columns), *map(line, cells), *(f"  {n}" for n in self.notes)])


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        magnitude = abs(value)
        digits = 0 if magnitude >= 1000 else 1 if magnitude >= 100 else 2 if magnitude >= 1 else \
            3 if magnitude >= 0.1 else 4
        return f"{value:,.{digits}f}"
    return str(value)


def spread(values: list[float]) -> tuple[float, float, float]:
    """Median, p10, p90 (inclusive deciles; the min and max of fewer than 3 values)."""
    if len(values) < 3:
        return statistics.median(values), min(values), max(values)
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return statistics.median(values), deciles[0], deciles[-1]


def target(ok: bool, text: str) -> str:
    return f"{'✓' if ok else '✗'} {text}"


def interleaved(measures: dict[str, Callable[[], float]], repeat: int, warmup: bool = True) -> dict[str, list[float]]:
    """Run each measure ``repeat`` times, alternating between them in a rotating order; one untimed warm-up each."""
    names = list(measures)
    if warmup:
        for name in names:
            measures[name]()
    values: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(repeat):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            gc.collect()
            values[name].append(measures[name]())
    return values


# --------------------------------------------------------------------------- openai-agents


def _oa_model(calls: int, sleep: float = 0.0, text: Callable[[int], str] | None = None) -> Any:
    from agents import ModelResponse, Usage
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class FakeModel(Model):
        made = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            done = self.made
            self.made += 1
            if sleep:
                time.sleep(sleep) if kwargs.get("_thread") else await asyncio.sleep(sleep)
            if done >= calls:
                output: list[Any] = [ResponseOutputMessage(
                    id=f"m{done}", type="message", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text=text(done) if text else "done",
                                                annotations=[])])]
            else:
                output = [ResponseFunctionToolCall(id=f"f{done}", call_id=f"c{done}", type="function_call",
                                                   name="noop", arguments=f'{{"i": {done}}}')]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    return FakeModel()


def _oa_agent(model: Any) -> Any:
    from agents import Agent, function_tool

    @function_tool
    def noop(i: int) -> str:
        """Does nothing."""
        return "ok"

    return Agent(name="bench", instructions=None, tools=[noop], model=model)


def _oa_config() -> Any:
    from agents import RunConfig

    return RunConfig(tracing_disabled=True)


def oa_calls(n: int) -> float:
    from agents import Runner

    agent = _oa_agent(_oa_model(n))
    started = time.perf_counter()
    result = Runner.run_sync(agent, "go", max_turns=n + 2, run_config=_oa_config())
    elapsed = (time.perf_counter() - started) * 1000
    assert result.final_output == "done", result.final_output
    return elapsed


def _oa_history(m: int) -> list[dict[str, Any]]:
    items = [{"role": "user", "content": f"question {i}"} if i % 2 == 0 else
             {"role": "assistant", "content": f"answer {i}"} for i in range(m)]
    return [*items, {"role": "user", "content": "one more"}]


def oa_history(m: int) -> float:
    from agents import Runner

    agent = _oa_agent(_oa_model(0))
    items = _oa_history(m)
    started = time.perf_counter()
    Runner.run_sync(agent, items, max_turns=2, run_config=_oa_config())
    return (time.perf_counter() - started) * 1000


def oa_concurrent(conversations: int, calls: int, model_seconds: float) -> float:
    """``asyncio.gather`` of ``Runner.run`` (its idiomatic concurrency); the fake model awaits asyncio.sleep."""
    from agents import Runner

    async def main() -> None:
        runs = [Runner.run(_oa_agent(_oa_model(calls, model_seconds)), "go", max_turns=calls + 2,
                           run_config=_oa_config()) for _ in range(conversations)]
        for result in await asyncio.gather(*runs):
            assert result.final_output == "done"

    started = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - started


# --------------------------------------------------------------------------- pydantic-ai


def _pa_agent(calls: int, text: Callable[[int], str] | None = None) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    made = [0]

    def model(messages: Any, info: Any) -> Any:
        done = made[0]
        made[0] += 1
        if done >= calls:
            return ModelResponse(parts=[TextPart(text(done) if text else "done")])
        return ModelResponse(parts=[ToolCallPart("noop", {"i": done}, tool_call_id=f"c{done}")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def noop(i: int) -> str:
        """Does nothing."""
        return "ok"

    return agent


def _pa_limits() -> Any:
    from pydantic_ai.usage import UsageLimits

    return UsageLimits(request_limit=None)


def pa_calls(n: int) -> float:
    agent = _pa_agent(n)
    started = time.perf_counter()
    result = agent.run_sync("go", usage_limits=_pa_limits())
    elapsed = (time.perf_counter() - started) * 1000
    assert result.output == "done", result.output
    return elapsed


def pa_history(m: int) -> float:
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    history = [ModelRequest(parts=[UserPromptPart(f"question {i}")]) if i % 2 == 0 else
               ModelResponse(parts=[TextPart(f"answer {i}")]) for i in range(m)]
    agent = _pa_agent(0)
    started = time.perf_counter()
    agent.run_sync("one more", message_history=history, usage_limits=_pa_limits())
    return (time.perf_counter() - started) * 1000


def pa_memory(k: int) -> float:
    """One conversation of ``k`` inputs: each run gets the previous run's ``all_messages()``."""
    agent = _pa_agent(0, text=lambda done: f"answer {done}")
    kept = [agent.run_sync("warm-up").all_messages()]

    def run() -> None:
        for i in range(k):
            kept[0] = agent.run_sync(f"question {i}", message_history=kept[0]).all_messages()

    return kept_bytes(run, lambda: len(kept[0]))


# --------------------------------------------------------------------------- smolagents


def _sa_agent(calls: int) -> Any:
    from smolagents import Model, ToolCallingAgent, tool
    from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole
    from smolagents.monitoring import LogLevel

    @tool
    def noop(i: int) -> str:
        """Does nothing.

        Args:
            i: any number.
        """
        return "ok"

    class FakeModel(Model):
        made = 0

        def generate(self, messages: Any, stop_sequences: Any = None, response_format: Any = None,
                     tools_to_call_from: Any = None, **kwargs: Any) -> Any:
            done = self.made
            self.made += 1
            name, arguments = ("final_answer", {"answer": "done"}) if done >= calls else ("noop", {"i": done})
            return ChatMessage(role=MessageRole.ASSISTANT, content=None, tool_calls=[ChatMessageToolCall(
                function=ChatMessageToolCallFunction(name=name, arguments=arguments), id=f"c{done}",
                type="function")])

    return ToolCallingAgent(tools=[noop], model=FakeModel(model_id="fake"), max_steps=calls + 2,
                            verbosity_level=LogLevel.OFF)


def sa_calls(n: int) -> float:
    agent = _sa_agent(n)
    started = time.perf_counter()
    answer = agent.run("go")
    elapsed = (time.perf_counter() - started) * 1000
    assert answer == "done", answer
    return elapsed


# --------------------------------------------------------------------------- pi-agent-core (Node)


class PiDriver:
    """One ``node scripts/bench_pi.mjs`` process for the whole bench (started on first use)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None

    def missing(self) -> str | None:
        """None when node and the npm package are there, else what to install."""
        install = f"npm install --prefix {NODE_DIR} {PI_PACKAGE}"
        if shutil.which("node") is None:
            return "node not found (apt-get install nodejs)"
        if not (NODE_DIR / "node_modules" / "@mariozechner" / "pi-agent-core").is_dir():
            return install
        return None

    def ask(self, command: dict[str, Any]) -> dict[str, Any]:
        """Send one command to the driver (started on first use); its answer."""
        if self.process is None:
            self.process = subprocess.Popen(["node", "--expose-gc", str(HERE / "bench_pi.mjs")], cwd=NODE_DIR,
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert self.process.stdout is not None
            json.loads(self.process.stdout.readline())  # {"ready": true}
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        if "error" in answer:
            raise RuntimeError(f"bench_pi.mjs: {answer['error']}")
        return answer

    def close(self) -> None:
        """End the driver (closing its stdin ends it)."""
        if self.process is not None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(10)
            self.process = None


PI = PiDriver()


class NodePeer(Peer):
    """pi-agent-core: usable when node and the npm package are there."""

    def missing(self) -> str | None:
        """See ``PiDriver.missing``."""
        return PI.missing()


PEERS: dict[str, Peer] = {
    "openai-agents": Peer("openai-agents", "agents", "pip install openai-agents==0.24.0",
                          calls=oa_calls, history=oa_history, concurrent=oa_concurrent),
    "pydantic-ai": Peer("pydantic-ai", "pydantic_ai", "pip install pydantic-ai-slim==2.68.0",
                        calls=pa_calls, history=pa_history, memory=pa_memory),
    "smolagents": Peer("smolagents", "smolagents", "pip install smolagents==1.26.0", calls=sa_calls),
    "pi-agent-core (Node)": NodePeer(
        "pi-agent-core (Node)", "", f"npm install --prefix {NODE_DIR} {PI_PACKAGE}",
        calls=lambda n: float(PI.ask({"op": "calls", "n": n})["ms"]),
        history=lambda m: float(PI.ask({"op": "history", "m": m})["ms"]),
        memory=lambda k: float(PI.ask({"op": "memory", "k": k})["bytes"])),
}
"""Every peer by its printed name (``bench_loop.py --vs all`` runs those that are installed)."""


def peers_for(vs: list[str], kind: str) -> tuple[dict[str, Any], list[str]]:
    """The selected peers that have a ``kind`` driver and are installed, and notes for those that are not."""
    if not vs:
        return {}, []
    usable, notes = {}, []
    for name, peer in PEERS.items():
        if ("all" not in vs and name not in vs) or getattr(peer, kind) is None:
            continue
        missing = peer.missing()
        if missing is None:
            usable[name] = peer
        else:
            notes.append(f"{name}: not installed ({missing})")
    return usable, notes


# --------------------------------------------------------------------------- MCP start-up: fastmcp's client


def fastmcp_listing(url: str, tools: int) -> None:
    """A cold ``fastmcp.Client``: connect and list the tools (for a child process of the MCP table)."""
    from fastmcp import Client

    async def main() -> None:
        async with Client(url) as client:
            listed = await client.list_tools()
        assert len(listed) == tools, len(listed)

    asyncio.run(main())
