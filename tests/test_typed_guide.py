"""The typed answers guide's local example is the script's own agent (issue 27, a new user's first hour).

A new user who built the agent the guide described got 0 of 5 valid answers from the local model: the guide
named the script but not the system prompt and ``max_tokens`` the script sets. The guide now shows the script's
``make_agent`` through ``literalinclude`` (it cannot drift from what was measured); these tests fail when the
include is dropped or when the function stops setting what the small model needs.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

from yiemagent.testing import ScriptedLLM, text_reply

ROOT = Path(__file__).resolve().parents[1]


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("typed_answers_local", ROOT / "scripts" / "typed_answers_local.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_the_guide_shows_the_scripts_make_agent() -> None:
    guide = (ROOT / "docs" / "guides" / "typed_answers.rst").read_text(encoding="utf-8")
    include = re.search(r"\.\. literalinclude:: (\S+)\n\s+:pyobject: (\w+)", guide)
    assert include is not None
    assert (ROOT / "docs" / "guides" / include.group(1)).resolve() == ROOT / "scripts" / "typed_answers_local.py"
    assert include.group(2) == "make_agent"


def test_make_agent_sets_the_system_prompt_and_a_small_max_tokens() -> None:
    script = _script()
    asked: dict[str, Any] = {}
    scripted = ScriptedLLM([text_reply('{"city": "Paris", "temperature_c": 21}')])

    def llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
            response_format: dict[str, Any] | None = None) -> dict[str, Any]:
        asked["response_format"] = response_format is not None  # the mode the guide measured
        return scripted(messages, tools)

    class Model:
        def llm_call(self, **fields: Any) -> Any:
            asked.update(fields)
            return llm

    answer = script.make_agent(Model()).ask("It is 21 degrees in Paris today.")
    assert asked == {"max_tokens": 60, "response_format": True}
    assert scripted.calls[0]["messages"][0] == {"role": "system", "content": script.INSTRUCTION}
    assert answer["output"] == script.Reading("Paris", 21)
