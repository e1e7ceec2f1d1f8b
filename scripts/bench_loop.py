"""Agent loop overhead per tool call, with an instant scripted model and a no-op tool.

    python scripts/bench_loop.py [--calls 10 100 300] [--repeat 5]

Each run asks for N tool calls, one per turn (N+1 model calls), like the
peers' figures in ../shared/PEERS.md; prints milliseconds per tool call
(median of the repeats), for parallel and sequential tool execution.
"""

import argparse
import statistics
import time

from yiemagent import Agent, AgentTool
from yiemagent.testing import text_reply

PEERS = {  # measured on this kind of machine, ../shared/PEERS.md
    "openai-agents 0.24 run_sync": {10: 1.7, 100: 5.3, 300: 14.0},
    "pi-agent-core (Node)": {10: 0.009, 100: 0.009},
}


def make_model(calls: int):
    made = [0]

    def model(messages, tools):  # O(1): the bench measures the loop, not the fake model
        done = made[0]
        made[0] += 1
        if done >= calls:
            return text_reply("done")
        return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{done}", "type": "function",
                 "function": {"name": "noop", "arguments": f'{{"i": {done}}}'}}]}}]}
    return model


NOOP = AgentTool("noop", "Does nothing.", {"type": "object", "properties": {"i": {"type": "integer"}}},
                 lambda call_id, arguments, event: "ok")


def per_call_ms(calls: int, execution: str) -> float:
    agent = Agent(make_model(calls), tools=[NOOP], max_turns=calls + 2, tool_execution=execution,
                  max_repeated_calls=None)
    started = time.perf_counter()
    answer = agent.ask("go")
    elapsed = time.perf_counter() - started
    assert answer["status"] == "completed", answer
    agent.shutdown()
    return elapsed * 1000 / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[10, 100, 300])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'tool calls':>10} {'yiemagent parallel':>19} {'yiemagent sequential':>21}   peers (ms per call)")
    for calls in args.calls:
        parallel = statistics.median(per_call_ms(calls, "parallel") for _ in range(args.repeat))
        sequential = statistics.median(per_call_ms(calls, "sequential") for _ in range(args.repeat))
        peers = ", ".join(f"{name} {figures[calls]:g}" for name, figures in PEERS.items() if calls in figures)
        print(f"{calls:>10} {parallel:>16.3f} ms {sequential:>18.3f} ms   {peers}")


if __name__ == "__main__":
    main()
