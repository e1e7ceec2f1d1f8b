"""Issue 19 point 4, end to end: a run's spans reach a real OTLP receiver that users run, Phoenix.

``arize-phoenix`` (``helpers.PHOENIX_VERSION``) runs in a venv of its own, made on first use
(``helpers.phoenix_executable``), started on loopback; the spans go there over OTLP/HTTP and are read back
with Phoenix's REST API. Phoenix turning ``gen_ai.operation.name`` into its span kinds (AGENT, LLM, TOOL)
shows it read the GenAI conventions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

pytest.importorskip("opentelemetry.exporter.otlp.proto.http",
                    reason="the OTLP exporter for the Phoenix test is missing (the test extra has it)")

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests import helpers
from yiemagent import Agent
from yiemagent.loop import tracing
from yiemagent.testing import ScriptedLLM, text_reply

PROJECT = "yiemagent-e2e"


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    command = helpers.phoenix_executable()
    if isinstance(command, str):
        pytest.skip(f"Phoenix (the tracing UI) could not be installed: {command}")
    with helpers.serve_phoenix(command, tmp_path_factory.mktemp("phoenix")) as url:
        yield url


def stored_spans(url: str, expected: int, timeout_seconds: float = 30) -> list[dict[str, Any]]:
    """The spans Phoenix has stored in the project, once there are ``expected`` (it ingests asynchronously)."""
    import time

    deadline = time.monotonic() + timeout_seconds
    while True:
        reply = requests.get(f"{url}/v1/projects/{PROJECT}/spans", params={"limit": 100}, timeout=10)
        found = reply.json().get("data", []) if reply.status_code == 200 else []  # 404 until the project exists
        if len(found) >= expected or time.monotonic() > deadline:
            return list(found)
        time.sleep(0.5)


def test_a_run_with_two_mcp_tool_calls_appears_in_phoenix_as_one_trace(phoenix, sdk_server, open_client):
    provider = TracerProvider(resource=Resource.create({"service.name": "yiemagent-tests",
                                                        "openinference.project.name": PROJECT}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix}/v1/traces")))
    tracing.instrument(tracer_provider=provider)
    try:
        calls = [{"id": f"call_{i}", "type": "function",
                  "function": {"name": "add", "arguments": json.dumps({"a": i, "b": 40})}} for i in (1, 2)]
        llm = ScriptedLLM([
            {"model": "gemma-3-270m", "usage": {"prompt_tokens": 40, "completion_tokens": 9},
             "choices": [{"index": 0, "finish_reason": "tool_calls",
                          "message": {"role": "assistant", "content": None, "tool_calls": calls}}]},
            text_reply("41 and 42"),
        ])
        llm.model = "gemma-3-270m"  # type: ignore[attr-defined]
        agent = Agent(llm, mcp_servers=[open_client(sdk_server)], builtin_list_tools=False)
        answer = agent.ask("add 1 and 2 to 40")
        provider.force_flush()
    finally:
        tracing.uninstrument()
        provider.shutdown()
    assert answer["content"] == "41 and 42"
    results = sorted(m.text for m in agent.history if getattr(m, "tool_name", None) == "add")
    assert results == ["41", "42"]
    spans = stored_spans(phoenix, expected=5)
    assert len({s["context"]["trace_id"] for s in spans}) == 1  # one trace
    names = sorted(s["name"] for s in spans)
    assert names == ["chat gemma-3-270m", "chat gemma-3-270m", "execute_tool add", "execute_tool add",
                     "invoke_agent"]
    root = next(s for s in spans if s["name"] == "invoke_agent")
    assert root["parent_id"] is None
    assert all(s["parent_id"] == root["context"]["span_id"] for s in spans if s is not root)
    kinds = {s["name"]: s["span_kind"] for s in spans}
    assert kinds == {"invoke_agent": "AGENT", "chat gemma-3-270m": "LLM", "execute_tool add": "TOOL"}
    tools = [s for s in spans if s["name"] == "execute_tool add"]
    assert sorted(s["attributes"]["gen_ai.tool.call.id"] for s in tools) == ["call_1", "call_2"]
    first_chat = min((s for s in spans if s["name"].startswith("chat")), key=lambda s: s["start_time"])
    assert first_chat["attributes"]["gen_ai.usage.input_tokens"] == 40
    assert first_chat["attributes"]["gen_ai.request.model"] == "gemma-3-270m"
