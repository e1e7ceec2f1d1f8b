"""The same ``ClientCallbacks`` answer in both eras: the SDK server's resolver tools ask by server requests in
2025-11-25 and by ``input_required`` results (MRTR, answered by retrying) in 2026-07-28.

Runs once the 2026-07-28 era is in the client (``yiemagent.mcp.mrtr``, issue 16 point 1).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, text_of, wait_for_port
from yiemagent.exceptions import MCPError
from yiemagent.mcp import ClientCallbacks, LLMSampler, MCPClient

pytest.importorskip("yiemagent.mcp.mrtr", reason="the 2026-07-28 era is not in this client yet (issue 16 point 1)")

SERVER = str(SERVERS / "sdk_callbacks_server.py")
ERAS = ["2025-11-25", "2026-07-28"]


@pytest.fixture(scope="module")
def callbacks_server() -> Iterator[str]:
    port = free_port()
    process = start_process([PYTHON, SERVER, "--port", str(port)])
    try:
        wait_for_port(port, timeout_seconds=20, process=process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)



def llm_call(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    message = {"role": "assistant", "content": f"on {messages[-1]['content']}"}
    return {"model": "scripted-3", "choices": [{"message": message, "finish_reason": "stop"}]}


def make(url: str | None, era: str, callbacks: ClientCallbacks, **kwargs: Any) -> MCPClient:
    if url is None:
        return MCPClient.stdio(sys.executable, [SERVER, "--stdio"], callbacks=callbacks, protocol_version=era,
                               **kwargs)
    return MCPClient(url, callbacks=callbacks, protocol_version=era, **kwargs)


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("era", ERAS)
def test_callbacks_answer_in_both_eras(callbacks_server: str, tmp_path: Any, era: str, transport: str) -> None:
    asked: list[dict[str, Any]] = []

    def ask(server: str, request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        time.sleep(1.5)  # slower than the call's timeout: never counted against it
        return {"action": "accept", "content": {"name": ""}}  # left empty: the default goes

    callbacks = ClientCallbacks(elicitation=ask, sampling=LLMSampler(llm_call), roots=[tmp_path / "a b"])
    # the handshake gets a generous bound (a Python stdio server on a loaded machine starts in seconds);
    # each call gets 1 s, less than the person's 1.5 s: the person's time never counts against it
    with make(callbacks_server if transport == "http" else None, era, callbacks, timeout_seconds=30.0) as client:
        assert client.protocol_version == era
        profile = json.loads(text_of(client.call_tool("resolved_profile", {}, timeout_seconds=1.0)))
        assert profile == {"action": "accept", "content": {"name": "Ada", "age": 36}}
        assert asked[0]["message"] == "Your profile, please"
        sampled = json.loads(text_of(client.call_tool("resolved_sample", {"topic": "tea"}, timeout_seconds=1.0)))
        assert sampled == {"text": "on tea", "model": "scripted-3", "stopReason": "endTurn"}
        roots = json.loads(text_of(client.call_tool("resolved_roots", {}, timeout_seconds=1.0)))
        assert roots == [{"uri": (tmp_path / "a b").as_uri(), "name": "a b"}]


@pytest.mark.parametrize("era", ERAS)
def test_a_refused_sampling_ends_the_call_with_code_minus_one_in_both_eras(callbacks_server: str, era: str) -> None:
    """Handshake era: the server gets error -1 and passes it on as the call's error. 2026-07-28: an input
    request has no error answer, so the client ends the call itself with the same code.
    """
    sampler = LLMSampler(llm_call, approve=lambda server, params: False)
    with make(callbacks_server, era, ClientCallbacks(sampling=sampler)) as client:
        with pytest.raises(MCPError) as caught:
            client.call_tool("resolved_sample", {"topic": "tea"})
    assert getattr(caught.value, "code", None) == -1 and "User rejected sampling request" in str(caught.value)
