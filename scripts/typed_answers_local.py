"""Typed answers on the local model, with and without ``response_format`` (issue 18 points 1 and 6).

Twenty scripted sentences, each asked as ``agent.ask(sentence, output_type=Reading)`` against the
embedded llama.cpp server (Gemma 3 270M, ``yiemagent.models.local``), in each ``output_mode``:

* ``response_format``: the server's JSON-schema constrained decoding;
* ``tool``: a ``final_answer`` tool (llama.cpp parses the model's ``<tool_call>`` into ``tool_calls``);
* ``prompted``: the schema in the system message, JSON read from the text.

A question is *valid* when the run completed with an ``output`` (schema-valid, parsed into
``Reading``) and *right* when that output also equals the expected one. ``--retries`` is
``output_retries`` (default 0: the first answer counts alone). Prints one row per question and the
rates side by side; about 2 minutes on 2 cores.

    python scripts/typed_answers_local.py
    python scripts/typed_answers_local.py --retries 2 --modes response_format prompted
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from yiemagent import Agent
from yiemagent.models.local import LocalModel


@dataclasses.dataclass
class Reading:
    """What each sentence is extracted into."""

    city: str
    temperature_c: int


QUESTIONS: list[tuple[str, Reading]] = [
    ("It is 21 degrees in Paris today.", Reading("Paris", 21)),
    ("Berlin had 15 degrees this morning.", Reading("Berlin", 15)),
    ("The thermometer in Madrid shows 34 degrees.", Reading("Madrid", 34)),
    ("In Oslo it is 3 degrees right now.", Reading("Oslo", 3)),
    ("Rome: 27 degrees and sunny.", Reading("Rome", 27)),
    ("We measured 12 degrees in London.", Reading("London", 12)),
    ("Tokyo is at 18 degrees tonight.", Reading("Tokyo", 18)),
    ("The forecast for Cairo says 38 degrees.", Reading("Cairo", 38)),
    ("Lisbon reached 24 degrees yesterday.", Reading("Lisbon", 24)),
    ("It was 9 degrees in Dublin at noon.", Reading("Dublin", 9)),
    ("Vienna: 16 degrees, light rain.", Reading("Vienna", 16)),
    ("The temperature in Athens is 31 degrees.", Reading("Athens", 31)),
    ("Prague woke up to 7 degrees.", Reading("Prague", 7)),
    ("In Warsaw the air is 11 degrees.", Reading("Warsaw", 11)),
    ("Helsinki is cold: 2 degrees.", Reading("Helsinki", 2)),
    ("Sydney enjoys 25 degrees this afternoon.", Reading("Sydney", 25)),
    ("Toronto recorded 14 degrees.", Reading("Toronto", 14)),
    ("It is 30 degrees in Dubai.", Reading("Dubai", 30)),
    ("Zurich: 13 degrees at sunset.", Reading("Zurich", 13)),
    ("Chicago dropped to 5 degrees.", Reading("Chicago", 5)),
]

INSTRUCTION = "Extract the city and the temperature in degrees Celsius from the user's sentence."
MODES = ("response_format", "tool", "prompted")


def make_agent(model: LocalModel, mode: str = "response_format", retries: int = 2, max_tokens: int = 60) -> Agent:
    """The agent each question is asked (docs/guides/typed_answers.rst shows this function as it is).

    Both settings matter on a 270M model: without ``system_prompt`` it does not know what to extract (it
    writes the field names as values: ``city="city"``); without a small ``max_tokens``, constrained decoding
    lets it pad the JSON with whitespace for the server's whole default budget, and the answer is cut.
    """
    return Agent(model.llm_call(max_tokens=max_tokens), system_prompt=INSTRUCTION, output_type=Reading,
                 output_mode=mode, output_retries=retries, max_turns=4)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--retries", type=int, default=0, help="output_retries (default 0)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--max-tokens", type=int, default=60)
    args = parser.parse_args()
    scores: dict[str, list[float]] = {mode: [0, 0, 0.0] for mode in args.modes}  # valid, right, seconds
    rows: list[list[str]] = []
    with LocalModel() as model:
        for sentence, expected in QUESTIONS:
            row = [sentence[:44]]
            for mode in args.modes:
                agent = make_agent(model, mode, args.retries, args.max_tokens)
                started = time.monotonic()
                answer = agent.ask(sentence, timeout_seconds=120)
                scores[mode][2] += time.monotonic() - started
                output = answer.get("output")
                valid, right = output is not None, output == expected
                scores[mode][0] += int(valid)
                scores[mode][1] += int(right)
                row.append("right" if right else ("valid" if valid else answer["status"]))
            rows.append(row)
            print(" | ".join(f"{cell:<16}" if i else f"{cell:<44}" for i, cell in enumerate(row)), flush=True)
    total = len(QUESTIONS)
    print()
    print(f"{'mode':<16} {'valid':>7} {'right':>7} {'s/question':>11}   "
          f"(output_retries={args.retries}, {total} questions)")
    for mode, (n_valid, n_right, seconds) in scores.items():
        print(f"{mode:<16} {int(n_valid):>4}/{total} {int(n_right):>4}/{total} {seconds / total:>11.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
