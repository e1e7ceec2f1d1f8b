"""Compaction quality: how many facts of a long conversation survive, with the embedded local model.

    python scripts/bench_compaction.py [--turns 200] [--window 2048] [--asked 20] [--model gemma3-270m]

A scripted 200-turn conversation: each user turn states one fact ("Fact 17: locker 17 has code 4821.")
and the agent answers "Noted." (a scripted reply, so the figure is about the summaries, not about
the chat). The conversation runs with ``compaction=Compaction(context_window=W, llm_call=local)``:
the local model writes every summary. At the end, ``--asked`` facts spread over the conversation
are checked two ways:

* kept: the fact's code is in what the next request would send (the summary and the recent messages);
* answered: the local model, given that request and "What is the code of locker N?", answers the code.

The same is printed for ``keep_last_turns`` (the cut a ``prepare_context`` makes without summaries)
with the same budget, as the baseline. Prints a table; takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from yiemagent import Agent
from yiemagent.context.compaction import SUMMARY_INSTRUCTIONS, Compaction, is_compaction
from yiemagent.context.strategies import keep_last_turns
from yiemagent.models.local import LocalModel
from yiemagent.testing import text_reply


def fact(i: int) -> tuple[str, str]:
    code = str(1000 + (i * 7919) % 9000)
    return f"Fact {i}: locker {i} has code {code}.", code


def noted(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    assert not messages[0]["content"].startswith(SUMMARY_INSTRUCTIONS[:40]), "the summariser is the local model"
    return text_reply("Noted.")


def run(turns: int, window: int, local: Any, *, summaries: bool) -> Agent:
    if summaries:
        agent = Agent(noted, compaction=Compaction(context_window=window, llm_call=local))
    else:  # the baseline: the last turns that fit the same budget, no summary
        per_turn = 30
        agent = Agent(noted, prepare_context=keep_last_turns(max(1, (window * 3 // 4) // per_turn)))
    for i in range(turns):
        text, _ = fact(i)
        answer = agent.ask(text)
        assert answer["status"] == "completed", answer
    return agent


def score(agent: Agent, local: Any, asked: list[int]) -> tuple[int, int]:
    sent = agent.openai_messages()
    prepare = agent.config.prepare_context
    if prepare is not None:  # the baseline sends what prepare_context keeps
        from yiemagent.messages.openai import to_openai

        sent = [to_openai(m) for m in prepare(list(agent.history))]
    text = "\n".join(str(m.get("content")) for m in sent)
    kept = answered = 0
    for i in asked:
        _, code = fact(i)
        kept += code in text
        reply = local([*sent, {"role": "user", "content": f"What is the code of locker {i}? Answer with the code."}],
                      [])
        answered += code in str(reply["choices"][0]["message"].get("content") or "")
    return kept, answered


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--window", type=int, default=2048)
    parser.add_argument("--asked", type=int, default=20)
    parser.add_argument("--model", default="gemma3-270m")
    args = parser.parse_args()
    asked = sorted(random.Random(7).sample(range(args.turns), args.asked))
    with LocalModel(model=args.model) as model:
        local = model.llm_call(max_tokens=min(400, args.window // 6), temperature=0)
        print(f"{args.turns} turns, window {args.window} tokens, {args.asked} facts asked back, model {args.model}")
        print(f"{'':<34}{'kept in the request':>20}{'answered':>10}{'summaries':>11}{'seconds':>9}")
        for label, summaries in (("compaction (local summaries)", True), ("keep_last_turns (no summary)", False)):
            started = time.monotonic()
            agent = run(args.turns, args.window, local, summaries=summaries)
            made = sum(is_compaction(m) for m in agent.history)
            kept, answered = score(agent, local, asked)
            print(f"{label:<34}{f'{kept}/{args.asked}':>20}{f'{answered}/{args.asked}':>10}{made:>11}"
                  f"{time.monotonic() - started:>9.0f}")


if __name__ == "__main__":
    main()
