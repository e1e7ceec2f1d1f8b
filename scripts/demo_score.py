"""Score the demo recipe on 20 questions: weather/time, out of domain, no tool needed (issue 11 point 1, issue 20).

Each question is asked in a fresh conversation (the demo's recipe: ``run_demo``) and judged:

- ``tool`` questions (in the demo server's domain): right when the model made exactly one call, of the
  expected tool with the expected city, the run completed, and the final answer is plain words (not
  JSON or markup) that state the tool's result (its temperature for weather, its HH:MM for time);
- ``none`` questions (out of domain: a city the server does not know, a thing it has no tool for; or
  no tool needed: arithmetic, a greeting, general knowledge): right when the model called no tool and
  answered in plain words (containing ``expect`` where one is given).

For every question, every number in the answer must appear in the question, a tool result of the run
or ``expect``: an answer that adds a temperature, a time, a date or a conversion that no tool gave is
wrong ("invented ..."), however plausible. Prints each transcript as the model really wrote it, then one
row per question and the scores by kind.

    python scripts/demo_score.py                    # SmolLM2-135M, constrained tool calls
    python scripts/demo_score.py --model gemma3-270m
    python scripts/demo_score.py --system "You are a helpful assistant."
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from yiemagent.cli.demo import DEMO_QUESTIONS, DemoRun, demo_model, demo_server, run_demo
from yiemagent.mcp import MCPClient

Question = tuple[str, str, str | None, str | None, str | None]
"""``(kind, question, expected tool or None, expected city or None, text the answer must contain or None)``."""

SCORE_QUESTIONS: list[Question] = [
    *(("weather/time", question, tool, city, None) for question, tool, city in DEMO_QUESTIONS),
    ("out of domain", "What is the weather in Madrid?", None, None, None),
    ("out of domain", "What time is it in Mumbai?", None, None, None),
    ("out of domain", "What is the population of Tokyo?", None, None, None),
    ("out of domain", "Book me a flight to Paris.", None, None, None),
    ("out of domain", "What is the stock price of Apple?", None, None, None),
    ("no tool needed", "What is 2 + 2?", None, None, "4"),
    ("no tool needed", "Hello!", None, None, None),
    ("no tool needed", "Who wrote Hamlet?", None, None, "Shakespeare"),
    ("no tool needed", "What is the capital of Italy?", None, None, "Rome"),
    ("no tool needed", "Thank you, that is all.", None, None, None),
]
"""The 20 scored questions: the 10 ``DEMO_QUESTIONS``, 5 out of the server's domain, 5 that need no tool."""

_NUMBER = re.compile(r"(?<![\w.:])-?\d+(?:[.:]\d+)*")


def numbers(text: str) -> set[str]:
    """The numbers in ``text``, normalised (``"06:35"`` -> ``"6:35"``, ``"2026-12-02"`` -> 2026, 12, 2)."""
    found = set()
    for match in _NUMBER.findall(re.sub(r"(\d)-(?=\d)", r"\1 ", text.replace("\u2212", "-"))):
        sign = "-" if match.startswith("-") else ""
        head, sep, rest = match.lstrip("-").partition(":")
        found.add(sign + (head if "." in head else str(int(head))) + sep + rest)
    return found


def invented(run: DemoRun, expect: str | None) -> set[str]:
    """Numbers in the answer found neither in the question, nor in a tool result, nor in ``expect``."""
    sources = numbers(" ".join([run.question, *run.results, expect or ""]))
    return numbers(run.answer) - sources


def judge(run: DemoRun, tool: str | None, city: str | None, expect: str | None = None) -> str:
    """"ok" or what was wrong."""
    if tool is None and run.calls:
        name, arguments = run.calls[0]
        return f"called {name}({arguments})"
    if tool is not None:
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
    if tool is not None:
        result = run.results[0] if run.results else ""
        fact = re.search(r"-?\d+ °C", result) if tool == "get_weather" else re.search(r"\d\d:\d\d", result)
        if fact and not numbers(fact.group(0).split()[0]) <= numbers(answer):
            return f"answer misses {fact.group(0)!r}"
    if expect is not None and expect.lower() not in answer.lower():
        return f"answer misses {expect!r}"
    extra = invented(run, expect)
    if extra:
        return f"invented {', '.join(sorted(extra))}"
    return "ok"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", default="smollm2-135m", choices=["smollm2-135m", "gemma3-270m"])
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--system", default=None, help="a system prompt for every conversation")
    parser.add_argument("--min-score", type=int, default=0, help="exit 1 below this many right conversations")
    args = parser.parse_args()
    rows = []
    extra = {"system_prompt": args.system} if args.system else {}
    with demo_server() as url, MCPClient(url, name="weather") as client, \
            demo_model(args.model, args.max_tokens) as llm_call:
        for kind, question, tool, city, expect in SCORE_QUESTIONS:
            print()
            run = run_demo(question, llm_call, client, **extra)
            rows.append((kind, question, judge(run, tool, city, expect), run.seconds, run.answer))
    print("\n| kind | question | verdict | s | answer |\n|---|---|---|---|---|")
    for kind, question, verdict, seconds, answer in rows:
        print(f"| {kind} | {question} | {verdict} | {seconds:.1f} | {' '.join(answer.split())[:100]} |")
    print()
    for kind in dict.fromkeys(row[0] for row in rows):
        right = sum(row[2] == "ok" for row in rows if row[0] == kind)
        print(f"{kind}: {right}/{sum(row[0] == kind for row in rows)}")
    score = sum(row[2] == "ok" for row in rows)
    system = f", system prompt {args.system!r}" if args.system else ""
    print(f"demo score ({args.model}{system}): {score}/{len(rows)} correct conversations")
    return 0 if score >= args.min_score else 1


if __name__ == "__main__":
    sys.exit(main())
