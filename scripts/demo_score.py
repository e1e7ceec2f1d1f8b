"""Score the demo: ``DEMO_QUESTIONS`` asked one by one, each conversation checked (issue 11 point 1).

A conversation is right when the model made exactly one tool call, of the expected tool with the
expected city, the run completed, and the final answer is plain words (not JSON or markup) that state
the tool's result (its temperature for weather, its HH:MM for time). Prints each transcript as the
model really wrote it, then one row per question and the score.

    python scripts/demo_score.py                    # SmolLM2-135M, constrained tool calls
    python scripts/demo_score.py --model gemma3-270m
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from yiemagent.cli.demo import DEMO_QUESTIONS, DemoRun, demo_model, demo_server, run_demo
from yiemagent.mcp import MCPClient


def judge(run: DemoRun, tool: str, city: str) -> str:
    """"ok" or what was wrong."""
    if len(run.calls) != 1:
        return f"{len(run.calls)} calls"
    name, arguments = run.calls[0]
    if name != tool or arguments.get("city") != city:
        return f"called {name}({arguments})"
    if run.status != "completed":
        return f"status {run.status}"
    answer = run.answer
    if not answer or answer.lstrip()[:1] in "{[<" or "tool_call" in answer:
        return "no plain answer"
    result = run.results[0] if run.results else ""
    fact = re.search(r"-?\d+ °C", result) if tool == "get_weather" else re.search(r"\d\d:\d\d", result)
    if fact and fact.group(0).split()[0] not in answer:
        return f"answer misses {fact.group(0)!r}"
    return "ok"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", default="smollm2-135m", choices=["smollm2-135m", "gemma3-270m"])
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()
    rows = []
    with demo_server() as url, MCPClient(url, name="weather") as client, \
            demo_model(args.model, args.max_tokens) as llm_call:
        for question, tool, city in DEMO_QUESTIONS:
            print()
            run = run_demo(question, llm_call, client)
            rows.append((question, judge(run, tool, city), run.seconds, run.answer))
    print("\n| question | verdict | s | answer |\n|---|---|---|---|")
    for question, verdict, seconds, answer in rows:
        print(f"| {question} | {verdict} | {seconds:.1f} | {' '.join(answer.split())[:100]} |")
    score = sum(verdict == "ok" for _, verdict, _, _ in rows)
    print(f"\ndemo score ({args.model}): {score}/{len(rows)} correct conversations")
    return 0 if score >= 9 else 1


if __name__ == "__main__":
    sys.exit(main())
