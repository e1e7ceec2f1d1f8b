"""The gunicorn target of tests/workers/test_web_streaming.py: ``flask_durable`` with a streaming model and a slow tool.

``gunicorn -k gthread --threads 4 tests.apps.web_app:app`` (store from the environment, see ``kit``).

The model is deterministic and driven by the last user message, the JSON text
``{"text": LABEL, "pause_seconds": s, "pieces": n, "piece_seconds": d}`` (``message()`` builds it):
with ``pause_seconds`` it first calls the tool ``pause`` (which sleeps that long: a slow tool);
then it streams ``"LABEL #k: <tool results>"`` (``k``: the user messages it saw) to ``on_delta`` in
``n`` pieces, ``d`` seconds apart, so that a client can be cut in the middle of the stream.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from tests.apps import kit
from yiemagent import Agent, tool
from yiemagent.examples.flask_durable import create_app
from yiemagent.formats.llm import OnDelta
from yiemagent.testing import text_reply


def message(label: str, *, pause_seconds: float = 0.0, pieces: int = 1, piece_seconds: float = 0.0) -> str:
    """The user message telling ``streaming_model`` what to do (test side)."""
    return json.dumps({"text": label, "pause_seconds": pause_seconds, "pieces": pieces,
                       "piece_seconds": piece_seconds})


def expected_answer(label: str, k: int, pause_seconds: float = 0.0) -> str:
    """The answer ``streaming_model`` gives to the k-th user message ``label``."""
    return f"{label} #{k}: " + (f"paused {pause_seconds:g} s" if pause_seconds else "")


@tool
def pause(seconds: float) -> str:
    """Sleep ``seconds`` (a slow tool), then say so; counted in the counter file."""
    time.sleep(seconds)
    kit._effect("pause", f"{seconds:g}")
    return f"paused {seconds:g} s"


def streaming_model(messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                    on_delta: OnDelta | None = None) -> dict[str, Any]:
    """A deterministic streaming ``llm_call`` (module docstring)."""
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    spec = json.loads(messages[users[-1]]["content"])
    after = messages[users[-1] + 1:]
    if spec["pause_seconds"] and not after:
        call = {"id": f"call_{spec['text']}", "type": "function",
                "function": {"name": "pause", "arguments": json.dumps({"seconds": spec["pause_seconds"]})}}
        return {"choices": [{"index": 0, "finish_reason": "tool_calls",
                             "message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}
    results = [str(m.get("content") or "") for m in after if m["role"] == "tool"]
    text = f"{spec['text']} #{len(users)}: " + " | ".join(results)
    if on_delta is not None:
        size = max(1, -(-len(text) // max(1, spec["pieces"])))
        for start in range(0, len(text), size):
            on_delta("text", text[start:start + size])
            time.sleep(spec["piece_seconds"])
    return text_reply(text)


def make_agent(store: Any, conversation_id: str) -> Agent:
    """The agent of one conversation: the streaming model and the slow tool."""
    return Agent(streaming_model, tools=[pause], store=store, conversation_id=conversation_id,
                 lease_seconds=float(os.environ.get("YIEMAGENT_TEST_LEASE_TTL", "2")))


app = create_app(kit.store_from_env, make_agent, answer_timeout_seconds=120.0)
