"""Callbacks against npm ``@modelcontextprotocol/server-everything`` (Node SDK, Streamable HTTP): it offers
its sampling, elicitation and roots tools only to a client that declares those capabilities.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import text_of
from yiemagent.mcp import ClientCallbacks, LLMSampler, MCPClient

pytestmark = pytest.mark.node



def llm_call(messages: list[dict[str, Any]], tools: list[dict[str, Any]], request_fields: dict[str, Any] | None = None
             ) -> dict[str, Any]:
    llm_call.seen.append((messages, request_fields))  # type: ignore[attr-defined]
    return {"model": "scripted-2", "choices": [{"message": {"role": "assistant", "content": "forty-two"},
                                                "finish_reason": "stop"}]}


llm_call.seen = []  # type: ignore[attr-defined]


def test_everything_offers_and_uses_sampling_elicitation_and_roots(everything_server, tmp_path):
    asked: list[dict[str, Any]] = []

    def ask(server: str, request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        return {"action": "accept", "content": {"name": "Ada"}}  # the rest left empty: the defaults go

    callbacks = ClientCallbacks(sampling=LLMSampler(llm_call), elicitation=ask,
                                url_elicitation=lambda s, r: {"action": "decline"}, roots=[tmp_path / "a b"])
    with MCPClient(everything_server, callbacks=callbacks, listen=True, timeout_seconds=20) as client:
        check(client, asked, tmp_path)


def check(client: MCPClient, asked: list[dict[str, Any]], tmp_path: Any) -> None:
    names = {t["name"] for t in client.list_tools()}
    assert {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"} <= names, names

    sampled = client.call_tool("trigger-sampling-request", {"prompt": "meaning of life", "maxTokens": 7})
    assert "forty-two" in text_of(sampled) and "scripted-2" in text_of(sampled)
    messages, fields = llm_call.seen[-1]  # type: ignore[attr-defined]
    assert messages[0] == {"role": "system", "content": "You are a helpful test server."}
    assert fields["max_tokens"] == 7

    elicited = client.call_tool("trigger-elicitation-request", {})
    assert not elicited["isError"], elicited
    assert "Ada" in text_of(elicited)
    schema = asked[0]["requestedSchema"]
    defaults = {k: v["default"] for k, v in schema["properties"].items() if "default" in v}
    assert defaults, schema
    for value in defaults.values():  # SEP-1034: what the person left empty went as the schema's default
        assert str(value).lower() in text_of(elicited).lower() or isinstance(value, (bool, list)), text_of(elicited)

    roots = client.call_tool("get-roots-list", {})
    assert (tmp_path / "a b").as_uri() in text_of(roots), text_of(roots)


def test_playwright_42256_everything_gets_its_roots_and_an_agent_client_listens_without_listen(
        everything_server, tmp_path):
    """Source: microsoft/playwright #42256 (roots declared, GET stream never opened: roots/list dropped).
    Without ``listen=True`` the client (and one an ``Agent`` builds from a URL, which samples with the
    agent's model) opens the GET stream, where the Node SDK server sends its ``roots/list``.
    """
    from yiemagent import Agent
    from yiemagent.testing import ScriptedLLM, text_reply

    with MCPClient(everything_server, callbacks=ClientCallbacks(roots=[tmp_path / "a b"]),
                   timeout_seconds=10) as client:
        client.connect()
        assert client.transport.listening.is_set()  # type: ignore[attr-defined]
        assert (tmp_path / "a b").as_uri() in text_of(client.call_tool("get-roots-list", {}))
    agent = Agent(ScriptedLLM([text_reply("ok")]), mcp_servers=[everything_server])
    try:
        built = agent.mcp.clients[0]
        built.connect()
        assert built.era == "legacy" and built.transport.listening.is_set()  # type: ignore[attr-defined]
    finally:
        agent.shutdown()
