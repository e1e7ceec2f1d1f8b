"""The demo: a real conversation, offline — a local model calls a tool of a real MCP server.

``yiemagent demo`` starts the example server (``yiemagent.examples.weather_server``,
on the official ``mcp`` SDK) and SmolLM2-135M-Instruct in llama.cpp, asks one
question and prints what really happens: the model's call, the server's result
and the model's answer, word for word. The model calls tools through
``yiemagent.models.constrained`` (a JSON schema built from the server's tool schemas,
with two examples); ``scripts/demo_score.py`` runs ``DEMO_QUESTIONS`` and prints
how many conversations were right.

With ``OPENAI_BASE_URL`` (and ``OPENAI_API_KEY``, ``YIEMAGENT_MODEL``) set, the
demo uses that server's native ``tools`` instead.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..agent import Agent
from ..exceptions import YiemagentError
from ..loop import events as ev
from ..mcp import MCPClient
from ..messages import AssistantMessage, ToolResultMessage
from ..models.openai_chat import openai_chat
from ..textpolicy import display_text

__all__ = ["DEMO_EXAMPLES", "DEMO_QUESTIONS", "DemoRun", "demo_server", "run_demo"]

DEMO_QUESTION = "What is the weather in Paris?"

DEMO_QUESTIONS: list[tuple[str, str, str]] = [
    ("What is the weather in Paris?", "get_weather", "Paris"),
    ("What time is it in Tokyo?", "get_time", "Tokyo"),
    ("How is the weather in London today?", "get_weather", "London"),
    ("Tell me the current time in New York.", "get_time", "New York"),
    ("Is it raining in Lima?", "get_weather", "Lima"),
    ("What's the time in Kyiv right now?", "get_time", "Kyiv"),
    ("What is the weather like in Cairo?", "get_weather", "Cairo"),
    ("What time is it in Toronto?", "get_time", "Toronto"),
    ("Do I need an umbrella in New York?", "get_weather", "New York"),
    ("What is the local time in London?", "get_time", "London"),
]
"""``(question, expected tool, expected city)``: what ``scripts/demo_score.py`` scores."""

DEMO_EXAMPLES: list[tuple[str, str, dict[str, Any]]] = [
    ("What time is it in Rome?", "get_time", {"city": "Rome"}),
    ("Is it sunny in Oslo?", "get_weather", {"city": "Oslo"}),
]
"""Shown to the model. Their cities are not in the server's enum, so they cannot be copied into a call.
(Examples of ``final_answer`` made SmolLM2-135M answer weather questions without a tool: 4/10 right.)"""


@dataclass
class DemoRun:
    """What one demo conversation did."""

    question: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """``(tool name, arguments)`` of every call the model made, in order."""
    results: list[str] = field(default_factory=list)
    """The tool results' text, in order."""
    answer: str = ""
    status: str = ""
    seconds: float = 0.0


class _Transcript:
    """Event sink that prints the conversation as it happens and records it in a ``DemoRun``."""

    def __init__(self, run: DemoRun, out: Callable[[str], None]) -> None:
        self.run = run
        self.out = out
        self.model_calls = 0

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.MessageEndEvent) and isinstance(event.message, AssistantMessage):
            self.model_calls += 1
            message = event.message
            if message.text.strip() and message.tool_calls:
                self.out(f"assistant (text beside the calls)> {message.text.strip()[:200]}")
            for call in message.tool_calls:
                self.run.calls.append((call.name, dict(call.arguments)))
                problem = f"   [not run: {call.error.split(';')[0]}]" if call.error else ""
                self.out(f"assistant> calls {call.name}({json.dumps(call.arguments, ensure_ascii=False)}){problem}")
        elif isinstance(event, ev.MessageEndEvent) and isinstance(event.message, ToolResultMessage):
            self.run.results.append(event.message.text)
            mark = " (error)" if event.message.is_error else ""
            self.out(f"tool {event.message.tool_name}{mark}> {event.message.text[:300]}")
        elif isinstance(event, ev.ErrorEvent) and event.where != "max_turns":
            self.out(f"[error in {event.where}] {event.message}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


DEMO_START_SECONDS = 60.0
"""How long the example server may take to listen (its imports are slow on a busy machine);
``YIEMAGENT_DEMO_START_SECONDS`` overrides it."""


@contextmanager
def demo_server(timeout_seconds: float | None = None) -> Iterator[str]:
    """Run the example weather server on a free loopback port; yield its ``/mcp`` URL.

    Args:
        timeout_seconds: how long it may take to listen; None: ``YIEMAGENT_DEMO_START_SECONDS``
            from the environment, else ``DEMO_START_SECONDS``.

    Raises:
        YiemagentError: it exited, or did not listen in time (the message says what to do, with the
            last lines the server wrote).
    """
    if timeout_seconds is None:
        try:
            timeout_seconds = float(os.environ.get("YIEMAGENT_DEMO_START_SECONDS") or DEMO_START_SECONDS)
        except ValueError:
            timeout_seconds = DEMO_START_SECONDS
    port = _free_port()
    with tempfile.TemporaryFile() as errors:
        server = subprocess.Popen([sys.executable, "-m", "yiemagent.examples.weather_server", "--port", str(port)],
                                  stdout=subprocess.DEVNULL, stderr=errors)

        def said() -> str:
            errors.seek(0)
            tail = errors.read()[-600:].decode("utf-8", "replace").strip()
            return f"; it wrote: {display_text(tail)}" if tail else ""

        try:
            deadline = time.monotonic() + timeout_seconds
            while True:
                if server.poll() is not None:
                    raise YiemagentError(f"the example MCP server exited with code {server.returncode}{said()}")
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise YiemagentError(
                            f"the example MCP server did not listen on port {port} within {timeout_seconds:g}s "
                            "(a busy machine makes its start slow: run the demo again, or give it longer with "
                            f"YIEMAGENT_DEMO_START_SECONDS=180){said()}") from None
                    time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.terminate()
            try:
                server.wait(5)
            except subprocess.TimeoutExpired:
                server.kill()


def run_demo(question: str, llm_call: Any, client: MCPClient, *, max_turns: int = 3,
             out: Callable[[str], None] = print, system_prompt: str | None = None, grounded: bool = True) -> DemoRun:
    """Ask ``question`` with the tools of ``client`` (and ``system_prompt``); print the conversation.

    ``grounded``: the answer goes through ``grounding_guardrail`` (``yiemagent.tools.grounding``): a number, unit
    or name no tool result or the question gave is sent back, and finally answered "I do not know".
    """
    from ..tools.grounding import grounding_guardrail

    run = DemoRun(question)
    transcript = _Transcript(run, out)
    started = time.monotonic()
    with Agent(llm_call, mcp_servers=[client], event_sink=transcript, max_turns=max_turns,
               builtin_list_tools=False, system_prompt=system_prompt,
               output_guardrails=[grounding_guardrail()] if grounded else ()) as agent:
        out(f"user> {question}")
        answer = agent.ask(question)
    run.answer = (answer.get("content") or "").strip()
    run.status = str(answer["status"])
    run.seconds = time.monotonic() - started
    out(f"assistant> {run.answer if run.answer else '(no text)'}")
    out(f"done in {run.seconds:.1f}s: {transcript.model_calls} model calls, {len(run.results)} tool results, "
        f"status {run.status}")
    return run


@contextmanager
def demo_model(model: str = "smollm2-135m", max_tokens: int = 96,
               out: Callable[[str], None] = print) -> Iterator[Any]:
    """Yield the demo's ``llm_call``: ``OPENAI_BASE_URL`` if set, else the embedded model, constrained."""
    base_url = os.environ.get("OPENAI_BASE_URL")
    if base_url:
        name = os.environ.get("YIEMAGENT_MODEL", "gpt-4o-mini")
        out(f"model: {name} at {base_url}")
        yield openai_chat(base_url, name, api_key=os.environ.get("OPENAI_API_KEY"))
        return
    from ..models.local import SMOLLM2, LocalModel

    local = LocalModel(model=model)
    t0 = time.monotonic()
    try:
        local.start()
        out(f"model: embedded {model} (llama.cpp) at {local.base_url}, started in {time.monotonic() - t0:.1f}s")
        if model == SMOLLM2:
            yield local.constrained_llm_call(examples=DEMO_EXAMPLES, max_tokens=max_tokens)
        else:
            yield local.llm_call(max_tokens=max_tokens)
    finally:
        local.stop()


def main(question: str = DEMO_QUESTION, *, model: str = "smollm2-135m", max_turns: int = 3,
         max_tokens: int = 96) -> int:
    """``yiemagent demo``: returns the exit code (0 unless the run ended in error)."""
    with demo_server() as url, MCPClient(url, name="weather") as client:
        names = [t["name"] for t in client.list_tools()]
        print(f"MCP server: {url} ({client.server_info.get('name')}), tools: {', '.join(names)}", flush=True)
        with demo_model(model, max_tokens) as llm_call:
            run = run_demo(question, llm_call, client, max_turns=max_turns,
                           out=lambda line: print(line, flush=True))
    return 0 if run.status != "error" else 1
