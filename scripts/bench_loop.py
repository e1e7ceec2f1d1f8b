"""Agent loop overheads of yiemagent beside a pure-Python floor and peer frameworks (issue 26 point 7).

    python scripts/bench_loop.py [--vs all] [--only calls,memory,...] [--quick] [--repeat R]

Sections (``--only``; all by default): calls (per tool call at 10 / 100 / 300 sequential calls, one per
turn, with an instant scripted model and a no-op tool), memory (bytes kept per message), history (one
input with 100 .. 40,000 messages already in the history, compaction off/on, replies with/without
``usage``), import, mcp (process start to 50 tools listed), concurrent (100 conversations x 50 calls,
5 ms model), durable (SQLite / PostgreSQL store per call), tracing (OpenTelemetry on/off; compaction
on/off per input). Every measurement alternates between the implementations (a rotating order each
repeat) so that load on the host hits them alike; tables give the median, p10 and p90, ratios, and
the load average at start and end. The floor is ``floor_run``: build the request list, call the
model function, parse the call, run the tool, append the result, in the calling thread.

Without ``--vs all`` only yiemagent and the floor run; with it the peers of ``bench_peers.py``
(openai-agents, pydantic-ai, smolagents, pi-agent-core in Node) that are installed
(``pip install -e .[bench]``; pi: the npm command printed).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _path in (str(ROOT), str(HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench_peers import Table, interleaved, peers_for, spread, target  # noqa: E402
from bench_startup import table_import, table_mcp  # noqa: E402

from yiemagent import Agent, AgentTool  # noqa: E402
from yiemagent.context.compaction import Compaction  # noqa: E402
from yiemagent.messages.types import AssistantMessage, UserMessage  # noqa: E402
from yiemagent.testing import text_reply  # noqa: E402

SECTIONS = ["calls", "memory", "history", "import", "mcp", "concurrent", "durable", "tracing"]
USAGE = {"prompt_tokens": 1200, "completion_tokens": 8, "total_tokens": 1208}


def make_model(calls: int, sleep: float = 0.0, usage: bool = False) -> Callable[..., dict[str, Any]]:
    """An O(1) scripted model: ``calls`` tool calls of ``noop``, one per reply, then text answers."""
    made = [0]

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        done = made[0]
        made[0] += 1
        if sleep:
            time.sleep(sleep)
        if done >= calls:
            reply = text_reply(f"answer {done}")
        else:
            reply = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [
                    {"id": f"c{done}", "type": "function",
                     "function": {"name": "noop", "arguments": f'{{"i": {done}}}'}}]}}]}
        if usage:
            reply["usage"] = dict(USAGE)
        return reply
    return model


NOOP = AgentTool("noop", "Does nothing.", {"type": "object", "properties": {"i": {"type": "integer"}}},
                 lambda call_id, arguments, event: "ok")

# --------------------------------------------------------------------------- the floor


FLOOR_TOOLS = [{"type": "function", "function": {"name": "noop", "description": "Does nothing.",
                                                  "parameters": NOOP.input_schema}}]
FLOOR_FUNCTIONS: dict[str, Callable[..., str]] = {"noop": lambda i=0: "ok"}


def floor_run(model: Callable[..., dict[str, Any]], text: str, messages: list[dict[str, Any]] | None = None
              ) -> dict[str, Any]:
    """The least an agent loop does per input: OpenAI dicts in a list, one tool call at a time, in-thread."""
    messages = [] if messages is None else messages
    messages.append({"role": "user", "content": text})
    while True:
        message = model(list(messages), FLOOR_TOOLS)["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            return message
        for call in message["tool_calls"]:
            function = call["function"]
            result = FLOOR_FUNCTIONS[function["name"]](**json.loads(function["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


# --------------------------------------------------------------------------- 1. per tool call


def yiemagent_calls_ms(calls: int, execution: str = "parallel", inline: bool = False) -> float:
    """Total ms of one ``ask`` making ``calls`` tool calls, one per turn (``inline``: ``Agent(inline=True)``)."""
    agent = Agent(make_model(calls), tools=[NOOP], max_turns=calls + 2, tool_execution=execution,
                  max_repeated_calls=None, inline=inline)
    started = time.perf_counter()
    answer = agent.ask("go")
    elapsed = (time.perf_counter() - started) * 1000
    assert answer["status"] == "completed", answer
    agent.shutdown()
    return elapsed


def floor_calls_ms(calls: int) -> float:
    model = make_model(calls)
    started = time.perf_counter()
    floor_run(model, "go")
    return (time.perf_counter() - started) * 1000


def per_call_ms(calls: int, execution: str) -> float:  # scripts/bench_tracing.py's figure before issue 26
    return yiemagent_calls_ms(calls, execution) / calls


def calls_measures(calls: int, peers: dict[str, Any]) -> dict[str, Callable[[], float]]:
    """Total ms of one run of ``calls`` tool calls, by implementation."""
    measures: dict[str, Callable[[], float]] = {
        "yiemagent": lambda: yiemagent_calls_ms(calls),
        "yiemagent sequential": lambda: yiemagent_calls_ms(calls, "sequential"),
        "yiemagent inline=True": lambda: yiemagent_calls_ms(calls, inline=True),
        "floor": lambda: floor_calls_ms(calls)}
    measures.update({name: (lambda peer=peer: peer.calls(calls)) for name, peer in peers.items()})
    return measures


def table_calls(sizes: list[int], repeat: int, vs: list[str]) -> Table:
    peers, notes = peers_for(vs, "calls")
    table = Table("1. per tool call (N sequential calls, one per turn, N+1 model calls; ms per tool call)",
                  ["N", "implementation", "ms/call", "p10", "p90", "floor units", "vs yiemagent", "target"],
                  notes=notes)
    for calls in sizes:
        values = interleaved(calls_measures(calls, peers), repeat)
        medians = {name: spread(v)[0] / calls for name, v in values.items()}
        for name, times in values.items():
            median, p10, p90 = (x / calls for x in spread(times))
            units = median / medians["floor"]
            goal = None
            if name in ("yiemagent", "yiemagent inline=True"):
                goal = target(median <= 0.05 and units <= 4, "<= 0.05 ms and <= 4 floor units")
            table.rows.append([calls, name, median, p10, p90, units, median / medians["yiemagent"], goal])
    return table


# --------------------------------------------------------------------------- 2. memory per message


def yiemagent_memory(inputs: int) -> float:
    from bench_peers import kept_bytes

    agent = Agent(make_model(0))
    agent.ask("warm-up")

    def run() -> None:
        for i in range(inputs):
            agent.ask(f"question {i}")

    try:
        return kept_bytes(run, lambda: len(agent.history))
    finally:
        agent.shutdown()


def floor_memory(inputs: int) -> float:
    from bench_peers import kept_bytes

    messages: list[dict[str, Any]] = []
    model = make_model(0)
    floor_run(model, "warm-up", messages)
    return kept_bytes(lambda: [floor_run(model, f"question {i}", messages) for i in range(inputs)],
                      lambda: len(messages))


def table_memory(inputs: int, vs: list[str]) -> Table:
    peers, notes = peers_for(vs, "memory")
    table = Table(f"2. memory kept per message ({inputs} text inputs in one conversation: user + assistant "
                  "each; tracemalloc, Node: heapUsed after gc)", ["implementation", "bytes/message",
                                                                  "vs floor", "target"], notes=notes)
    figures = {"yiemagent": yiemagent_memory(inputs), "floor": floor_memory(inputs)}
    figures.update({name: peer.memory(inputs) for name, peer in peers.items()})
    for name, value in figures.items():
        goal = target(value <= 700, "<= 700 B/message") if name == "yiemagent" else None
        table.rows.append([name, value, value / figures["floor"], goal])
    return table


# --------------------------------------------------------------------------- 3. history sweep


def build_history(messages: int) -> list[Any]:
    return [UserMessage(f"question {i}") if i % 2 == 0 else AssistantMessage(f"answer {i}") for i in range(messages)]


def yiemagent_history(messages: int, compaction: bool, usage: bool, warm: int) -> tuple[float, list[float]]:
    """Milliseconds of the first input after ``agent.history`` is set to ``messages`` messages, and of ``warm`` more."""
    kwargs: dict[str, Any] = {"compaction": Compaction(context_window=10**9)} if compaction else {}
    agent = Agent(make_model(0, usage=usage), **kwargs)
    agent.history = build_history(messages)
    times = []
    for _ in range(1 + warm):
        started = time.perf_counter()
        answer = agent.ask("one more")
        times.append((time.perf_counter() - started) * 1000)
        assert answer["status"] == "completed", answer
    agent.shutdown()
    return times[0], times[1:]


def floor_history(messages: int) -> float:
    history = [{"role": "user", "content": f"question {i}"} if i % 2 == 0 else
               {"role": "assistant", "content": f"answer {i}"} for i in range(messages)]
    started = time.perf_counter()
    floor_run(make_model(0), "one more", history)
    return (time.perf_counter() - started) * 1000


HISTORY_CONFIGS = {"compaction off": (False, False), "compaction off, usage": (False, True),
                   "compaction on": (True, False), "compaction on, usage": (True, True)}


def measure_history(sizes: list[int], repeat: int, configs: dict[str, tuple[bool, bool]],
                    warm: int = 2) -> dict[tuple[str, int], dict[str, list[float]]]:
    """{(config, size): {"warm": [ms...], "first": [ms...]}}, configs alternating at each size and repeat."""
    out: dict[tuple[str, int], dict[str, list[float]]] = {}
    yiemagent_history(10, True, True, 1)  # warm-up (imports, first-call paths)
    names = list(configs)
    for rep in range(repeat):
        for size in sizes:
            for name in names[rep % len(names):] + names[:rep % len(names)]:
                gc.collect()
                first, rest = yiemagent_history(size, *configs[name], warm)
                cell = out.setdefault((name, size), {"warm": [], "first": []})
                cell["first"].append(first)
                cell["warm"] += rest
    return out


def table_history(sizes: list[int], repeat: int, vs: list[str], results: dict[str, Any]) -> Table:
    peers, notes = peers_for(vs, "history")
    table = Table("3. history sweep (one text input with M messages already in the history; ms per input: "
                  "median of the inputs after the first, and the first input after `agent.history = ...`)",
                  ["M", "implementation", "ms/input", "p10", "p90", f"x at {sizes[0]}", "first input",
                   f"first x at {sizes[0]}", "target"], notes=notes)
    measured = measure_history(sizes, repeat, HISTORY_CONFIGS)
    results["history"] = measured
    others: dict[str, dict[int, list[float]]] = {"floor": {}}
    slow: dict[str, int] = {}
    for _ in range(repeat):  # the floor and the peers: each input is the whole list again
        for size in sizes:
            for name, run in [("floor", floor_history)] + [(n, p.history) for n, p in peers.items()]:
                if name in slow:
                    continue
                gc.collect()
                others.setdefault(name, {}).setdefault(size, []).append(run(size))
                if others[name][size][-1] > 2000 and size != sizes[-1]:
                    slow[name] = size
    for name, size in slow.items():
        table.notes.append(f"{name}: sizes above {size:,} skipped (> 2 s per input)")
    for size in sizes:
        for name in HISTORY_CONFIGS:
            warm, first = measured[(name, size)]["warm"], measured[(name, size)]["first"]
            base_warm = statistics.median(measured[(name, sizes[0])]["warm"])
            base_first = statistics.median(measured[(name, sizes[0])]["first"])
            median, p10, p90 = spread(warm)
            goal = None
            if size == sizes[-1] and name in ("compaction off", "compaction on"):
                goal = target(median / base_warm <= 1.2, f"<= 1.2x at {size:,} vs {sizes[0]}")
            table.rows.append([size, f"yiemagent, {name}", median, p10, p90, median / base_warm,
                               statistics.median(first), statistics.median(first) / base_first, goal])
        for name, by_size in others.items():
            if size in by_size:
                median, p10, p90 = spread(by_size[size])
                table.rows.append([size, name, median, p10, p90, median / statistics.median(by_size[sizes[0]]),
                                   None, None, None])
    return table


# --------------------------------------------------------------------------- 6. concurrent conversations


def yiemagent_concurrent(conversations: int, calls: int, model_seconds: float, inline: bool = False) -> float:
    agents = [Agent(make_model(calls, model_seconds), tools=[NOOP], max_turns=calls + 2, max_repeated_calls=None,
                    inline=inline).start() for _ in range(conversations)]
    started = time.perf_counter()
    futures = [agent.submit("go") for agent in agents]
    answers = [future.result(timeout=600) for future in futures]
    elapsed = time.perf_counter() - started
    assert all(answer["status"] == "completed" for answer in answers)
    for agent in agents:
        agent.shutdown()
    return elapsed


def floor_concurrent(conversations: int, calls: int, model_seconds: float) -> float:
    import threading

    threads = [threading.Thread(target=floor_run, args=(make_model(calls, model_seconds), "go"))
               for _ in range(conversations)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def table_concurrent(conversations: int, calls: int, repeat: int, vs: list[str], model_seconds: float = 0.005
                     ) -> Table:
    peers, notes = peers_for(vs, "concurrent")
    ideal = (calls + 1) * model_seconds * 1000
    table = Table(f"6. {conversations} concurrent conversations x {calls} tool calls, {model_seconds * 1000:g} ms "
                  f"model (time.sleep; asyncio.sleep for async peers); wall ms (ideal {ideal:.0f})",
                  ["implementation", "wall ms", "p10", "p90", "vs floor", "target"], notes=notes)
    measures: dict[str, Callable[[], float]] = {
        "yiemagent (agents started, inputs submitted at once)":
            lambda: yiemagent_concurrent(conversations, calls, model_seconds) * 1000,
        "yiemagent inline=True": lambda: yiemagent_concurrent(conversations, calls, model_seconds, True) * 1000,
        "floor (a thread per conversation)": lambda: floor_concurrent(conversations, calls, model_seconds) * 1000}
    values = interleaved(measures, repeat)
    for name, peer in peers.items():  # one run each: openai-agents takes ~40 s for 100 x 50 here
        gc.collect()
        values[f"{name} (asyncio.gather, 1 run)"] = [peer.concurrent(conversations, calls, model_seconds) * 1000]
    floor = statistics.median(values["floor (a thread per conversation)"])
    for name, times in values.items():
        median, p10, p90 = spread(times)
        goal = target(median / floor <= 2, "<= 2x threaded floor") if name.startswith("yiemagent") else None
        table.rows.append([name, median, p10, p90, median / floor, goal])
    return table


# --------------------------------------------------------------------------- 7. durable


def table_durable(calls: int, repeat: int) -> Table:
    import tempfile
    import uuid

    import bench_durable

    from yiemagent import PostgresStore, SQLiteStore

    table = Table(f"7. durable overhead per tool call ({calls} sequential calls in one run; "
                  "bench_durable.run_ms; ms per tool call)",
                  ["store", "ms/call", "p10", "p90", "added ms/call", "floor units", "target"])
    folder = tempfile.mkdtemp(prefix="yiemagent-bench-")
    stores: dict[str, Any] = {"no store": None,
                              "SQLite (NORMAL)": SQLiteStore(os.path.join(folder, "normal.db")),
                              "SQLite (FULL)": SQLiteStore(os.path.join(folder, "full.db"), synchronous="FULL")}
    server = None
    try:
        from tests.helpers import start_postgres

        server = start_postgres()
        for mode in ("markers", "all"):
            stores[f"PostgreSQL sync_journal={mode}"] = PostgresStore(
                server.dsn, table_prefix=f"bench{uuid.uuid4().hex[:6]}_", sync_journal=mode)
    except (FileNotFoundError, RuntimeError, ImportError) as exc:
        table.notes.append(f"PostgreSQL skipped: no PostgreSQL ({exc})")
    try:
        measures: dict[str, Callable[[], float]] = {
            name: (lambda store=store: bench_durable.run_ms(calls, store)) for name, store in stores.items()}
        measures["floor"] = lambda: floor_calls_ms(calls)
        values = interleaved(measures, repeat)
    finally:
        for store in stores.values():
            if store is not None:
                store.close()
        if server is not None:
            server.stop()
    base = statistics.median(values["no store"]) / calls
    floor = statistics.median(values["floor"]) / calls
    for name, times in values.items():
        median, p10, p90 = (x / calls for x in spread(times))
        added = None if name in ("no store", "floor") else median - base
        goal = target(median - base <= 0.25, "<= +0.25 ms/call") if name.startswith("SQLite (NORMAL)") else None
        table.rows.append([name, median, p10, p90, added, median / floor, goal])
    return table


# --------------------------------------------------------------------------- 8. tracing and compaction


def table_tracing(calls: int, repeat: int) -> Table:
    import bench_tracing
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from yiemagent.loop import tracing

    exporter = InMemorySpanExporter()
    provider = bench_tracing.provider(exporter)

    def run(on: bool) -> float:
        if on:
            tracing.instrument(tracer_provider=provider)
        try:
            return yiemagent_calls_ms(calls) / calls
        finally:
            tracing.uninstrument()
            provider.force_flush()
            exporter.clear()

    table = Table(f"8a. tracing overhead per tool call ({calls} calls; OpenTelemetry SDK, BatchSpanProcessor, "
                  "in-memory exporter; ms per tool call)", ["tracing", "ms/call", "p10", "p90", "added", "target"])
    try:
        values = interleaved({"off": lambda: run(False), "on": lambda: run(True)}, repeat)
    finally:
        provider.shutdown()
    off = statistics.median(values["off"])
    for name, times in values.items():
        median, p10, p90 = spread(times)
        goal = target(median / off - 1 <= 0.15, "<= +15%") if name == "on" else None
        table.rows.append([name, median, p10, p90, f"{(median / off - 1) * 100:+.1f}%", goal])
    return table


def table_compaction(sizes: list[int], repeat: int, results: dict[str, Any]) -> Table:
    measured = results.get("history") or measure_history(
        sizes, repeat, {k: HISTORY_CONFIGS[k] for k in ("compaction off", "compaction on")})
    table = Table("8b. compaction overhead per input (on, never triggering, vs off; warm inputs; ms)",
                  ["M", "usage", "off ms", "on ms", "added", "target"])
    for size in sizes:
        for usage in ("", ", usage"):
            if (f"compaction off{usage}", size) not in measured:
                continue
            off = statistics.median(measured[(f"compaction off{usage}", size)]["warm"])
            on = statistics.median(measured[(f"compaction on{usage}", size)]["warm"])
            table.rows.append([size, "yes" if usage else "no", off, on, f"{(on / off - 1) * 100:+.1f}%",
                               target(on / off - 1 <= 0.10, "<= +10%")])
    return table


# --------------------------------------------------------------------------- main


def run(sections: list[str], vs: list[str], quick: bool, repeat: int | None = None,
        printer: Callable[[str], None] | None = None) -> list[Table]:
    """Print (and return) the tables of ``sections``; ``vs``: peer names or ["all"], [] for none."""
    printer = printer or (lambda text: print(text, flush=True))
    r = repeat or (3 if quick else 7)
    results: dict[str, Any] = {}
    sizes = [100, 1000, 10000, 40000]
    builders: dict[str, Callable[[], list[Table]]] = {
        "calls": lambda: [table_calls([10, 100, 300], r, vs)],
        "memory": lambda: [table_memory(100 if quick else 300, vs)],  # pydantic-ai: O(K^2) under tracemalloc
        "history": lambda: [table_history(sizes, max(2, r // 2), vs, results)],
        "import": lambda: [table_import(r + 2)],
        "mcp": lambda: [table_mcp(r)],
        "concurrent": lambda: [table_concurrent(*((20, 10) if quick else (100, 50)), max(2, r // 2), vs)],
        "durable": lambda: [table_durable(50 if quick else 100, r)],
        "tracing": lambda: [table_tracing(100, r), table_compaction(sizes, max(2, r // 2), results)],
    }
    tables = []
    for section in sections:
        started = time.perf_counter()
        for table in builders[section]():
            printer(table.render())
            tables.append(table)
        printer(f"  ({section}: {time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.2f})\n")
    return tables


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--vs", default="", help='"all", or peer names separated by commas (bench_peers.PEERS)')
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"sections, comma-separated: {','.join(SECTIONS)}")
    parser.add_argument("--quick", action="store_true", help="fewer repeats and smaller runs")
    parser.add_argument("--repeat", type=int, default=None, help="repeats per measurement (default 7, quick 3)")
    args = parser.parse_args(argv)
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; known: {','.join(SECTIONS)}")
    vs = [v.strip() for v in args.vs.split(",") if v.strip()]
    import platform

    print(f"yiemagent bench_loop: Python {platform.python_version()}, {os.cpu_count()} cores, "
          f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}; peers: {args.vs or 'none'}\n",
          flush=True)
    try:
        run(sections, vs, args.quick, args.repeat)
    finally:
        if vs:
            from bench_peers import PI

            PI.close()
    print(f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
