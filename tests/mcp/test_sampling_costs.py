"""Issue 27 point 1: every cost a server can cause through sampling is bounded and counted, in both eras.

A 2026-07-28 server answering ``tools/call`` with ``input_required`` rounds of ``sampling/createMessage``
made the agent's model answer 1,600 sampling calls for one tool call (8 rounds x 200), each asking
``maxTokens: 100000``; none reached ``agent.usage`` and ``UsageLimits(requests=5)`` did not stop it. The
handshake era's back-channel (``sampling/createMessage`` requests on the session) had the same hole. Here the
real SDK server (``tests/servers/sdk_callbacks_server.py``) floods in both eras: ``sample_flood`` (requests on
the call's stream, 2025-11-25) and ``sample_flood_rounds`` (input_required rounds, 2026-07-28).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, text_of, wait_for_port
from yiemagent import Agent, UsageLimits
from yiemagent.exceptions import ConfigError
from yiemagent.mcp import ClientCallbacks, LLMSampler, MCPClient, RequestRefused
from yiemagent.mcp.limits import MCPLimits

SERVER = str(SERVERS / "sdk_callbacks_server.py")
ERAS = ["2025-11-25", "2026-07-28"]
SAMPLING_USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
OWN_USAGE = {"prompt_tokens": 10, "completion_tokens": 1}


@pytest.fixture(scope="module")
def callbacks_server() -> Iterator[str]:
    port = free_port()
    process = start_process([PYTHON, SERVER, "--port", str(port)])
    try:
        wait_for_port(port, timeout_seconds=30, process=process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


class Model:
    """The agent's model: calls the flood tool(s) once, answers each sampling request, then ends."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.calls = calls
        self.sampled: list[dict[str, Any]] = []

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 request_fields: dict[str, Any] | None = None) -> dict[str, Any]:
        last = messages[-1]
        if last["role"] == "user" and last["content"] == "hi":  # a server's sampling request
            self.sampled.append(dict(request_fields or {}))
            return {"model": "m", "choices": [{"message": {"role": "assistant", "content": "ok"},
                                               "finish_reason": "stop"}], "usage": SAMPLING_USAGE}
        if last["role"] == "user":
            tool_calls = [{"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                          for i, (name, args) in enumerate(self.calls)]
            return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": tool_calls},
                                 "finish_reason": "tool_calls"}], "usage": OWN_USAGE}
        return {"choices": [{"message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
                "usage": OWN_USAGE}


def flood(era: str, count: int) -> tuple[str, dict[str, Any]]:
    """The flood tool of ``era`` asking ``count`` sampling requests (2026-07-28: 8 rounds of count/8)."""
    if era == "2025-11-25":
        return "sample_flood", {"count": count}
    return "sample_flood_rounds", {"per_round": max(1, count // 8), "rounds": 8}


@pytest.mark.parametrize("era", ERAS)
def test_issue_27_one_call_answers_at_most_16_sampling_requests_each_capped_at_4096_tokens(
        callbacks_server: str, era: str) -> None:
    """Before: 40 requests on the call's stream (2025-11-25) were all answered, 8 rounds x 16 inputs
    (2026-07-28) made 128 model calls, each with ``max_tokens: 100000``. Now 16 per call, ``max_tokens`` 4096.
    """
    model = Model([])
    sampler = LLMSampler(model)
    name, args = flood(era, 128 if era == "2026-07-28" else 40)
    with MCPClient(callbacks_server, callbacks=ClientCallbacks(sampling=sampler), protocol_version=era,
                   timeout_seconds=60) as client:
        if era == "2025-11-25":  # refused requests are -1 answers the server counts
            assert json.loads(text_of(client.call_tool(name, args))) == {"answered": 16, "refused": 24}
        else:  # an input request has no error answer: the refusal ends the call
            with pytest.raises(RequestRefused, match="max_sampling_per_call"):
                client.call_tool(name, args)
    assert len(model.sampled) == 16
    assert {fields["max_tokens"] for fields in model.sampled} == {4096}


@pytest.mark.parametrize(("era", "transport"), [("2025-11-25", "http"), ("2025-11-25", "stdio"),
                                                ("2026-07-28", "http")])
def test_issue_27_sampling_counts_in_agent_usage_and_usage_limits_requests_stops_it(
        callbacks_server: str, era: str, transport: str) -> None:
    """``UsageLimits(requests=5)``: the agent's own request is 1, four sampling replies make 5, the fifth
    sampling request is refused and the run ends ``usage_limit``; ``agent.usage`` holds the sampling tokens.
    Over stdio in 2025-11-25 the server's requests name no call: the run's limits hold there too.
    """
    model = Model([flood(era, 40 if era == "2025-11-25" else 128)])
    client = (MCPClient(callbacks_server, protocol_version=era, timeout_seconds=60) if transport == "http" else
              MCPClient.stdio(sys.executable, [SERVER, "--stdio"], protocol_version=era, timeout_seconds=60))
    agent = Agent(model, mcp_servers={"cb": client}, close_mcp_clients=True, usage_limits=UsageLimits(requests=5))
    try:
        answer = agent.ask("go", timeout_seconds=120)
    finally:
        agent.shutdown()
    assert len(model.sampled) == 4
    assert answer["status"] == "usage_limit", answer
    assert answer["usage_limit"]["limit"] == "requests" and answer["usage_limit"]["value"] == 5
    assert agent.usage["requests"] == 5
    assert (agent.usage["prompt_tokens"], agent.usage["completion_tokens"]) == (4 * 3 + 10, 4 * 2 + 1)  # + its own


def test_issue_27_one_run_answers_at_most_max_sampling_per_run(callbacks_server: str) -> None:
    """Two calls of one reply, 10 sampling requests each, ``max_sampling_per_run=12``: 12 answered in all;
    without limits set the sampling tokens still reach ``agent.usage`` (as the run's own do).
    """
    model = Model([flood("2025-11-25", 10), flood("2025-11-25", 10)])
    client = MCPClient(callbacks_server, protocol_version="2025-11-25", timeout_seconds=60)
    agent = Agent(model, mcp_servers={"cb": client}, close_mcp_clients=True, tool_execution="sequential",
                  mcp_limits=MCPLimits(max_sampling_per_call=10, max_sampling_per_run=12))
    try:
        answer = agent.ask("go", timeout_seconds=120)
    finally:
        agent.shutdown()
    assert answer["status"] == "completed" and len(model.sampled) == 12
    results = [json.loads(m["content"]) for m in agent.openai_messages() if m["role"] == "tool"]
    assert results == [{"answered": 10, "refused": 0}, {"answered": 2, "refused": 8}]
    assert (agent.usage["prompt_tokens"], agent.usage["completion_tokens"]) == (12 * 3 + 2 * 10, 12 * 2 + 2)


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "16"])
def test_nonsense_sampling_bounds_are_config_errors(value: Any) -> None:
    for name in ("max_sampling_tokens", "max_sampling_per_call", "max_sampling_per_run"):
        with pytest.raises(ConfigError, match=name):
            MCPLimits(**{name: value})
    with pytest.raises(ConfigError, match="max_tokens"):
        LLMSampler(lambda m, t: {}, max_tokens=value)
