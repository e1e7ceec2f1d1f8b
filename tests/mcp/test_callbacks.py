"""Sampling, elicitation and roots as plain sync callbacks, against the real ``mcp`` 2.3 SDK server.

The server (tests/servers/sdk_callbacks_server.py) asks back from inside its tools, on the call's own
stream (HTTP) or over stdio; the callbacks here are real functions, and the agent test's model is the
scripted OpenAI-compatible server. Tests named after a public report say what failed there.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, RecordingSession, serve_http, text_of
from yiemagent.exceptions import MCPRPCError, MCPTimeoutError
from yiemagent.mcp import ClientCallbacks, HTTPTransport, LLMSampler, MCPClient

SERVER = str(SERVERS / "sdk_callbacks_server.py")


@pytest.fixture(scope="module")
def callbacks_server() -> Iterator[str]:
    with serve_http([PYTHON, SERVER]) as url:
        yield url



def http_client(clients: list[MCPClient], url: str, **kwargs: Any) -> MCPClient:
    client = MCPClient(url, **kwargs)
    clients.append(client)
    return client


def stdio_client(clients: list[MCPClient], **kwargs: Any) -> MCPClient:
    client = MCPClient.stdio(sys.executable, [SERVER, "--stdio"], **kwargs)
    clients.append(client)
    return client



def scripted_llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 request_fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """A model whose answers are known: a get_weather call when offered tools and no tool result yet."""
    scripted_llm.seen.append({"messages": messages, "tools": tools, "fields": request_fields})  # type: ignore
    if tools and not any(m["role"] == "tool" for m in messages):
        call = {"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        return {"model": "scripted-1", "choices": [{"message": {"role": "assistant", "content": None,
                                                                "tool_calls": [call]}, "finish_reason": "tool_calls"}]}
    last = messages[-1]["content"]
    return {"model": "scripted-1", "choices": [{"message": {"role": "assistant", "content": f"echo: {last}"},
                                                "finish_reason": "length" if "long" in str(last) else "stop"}]}


scripted_llm.seen = []  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- capabilities


def test_capabilities_declare_only_what_exists() -> None:
    assert ClientCallbacks().capabilities() == {}
    form_only = ClientCallbacks(elicitation=lambda s, r: {"action": "cancel"})
    assert form_only.capabilities() == {"elicitation": {"form": {}}}
    both = ClientCallbacks(elicitation=lambda s, r: {}, url_elicitation=lambda s, r: {}, roots=["/tmp"],
                           sampling=LLMSampler(scripted_llm))
    assert both.capabilities() == {"elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": True},
                                   "sampling": {"tools": {}}}
    assert ClientCallbacks(sampling=LLMSampler(scripted_llm, tools=False)).capabilities() == {"sampling": {}}
    client = MCPClient("http://127.0.0.1:9/mcp", request_handlers={"roots/list": lambda p: {"roots": []}},
                       callbacks=ClientCallbacks(roots=["/tmp"]))
    assert client.request_handlers["roots/list"]({}) == {"roots": []}  # a handler given by hand wins
    client.close()


# ---------------------------------------------------------------------------- elicitation


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_form_elicitation_answer_reaches_the_sdk_server(callbacks_server: str, clients: list[MCPClient],
                                                        transport: str) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def ask(server: str, request: dict[str, Any]) -> dict[str, Any]:
        asked.append((server, request))
        return {"action": "accept", "content": {"name": "Grace"}}

    callbacks = ClientCallbacks(elicitation=ask)
    client = (http_client(clients, callbacks_server, callbacks=callbacks, name="cb") if transport == "http"
              else stdio_client(clients, callbacks=callbacks, name="cb"))
    assert text_of(client.call_tool("ask_name", {})) == "hello Grace"
    assert asked[0][0] == "cb" and asked[0][1]["message"] == "What is your name?"
    assert asked[0][1]["requestedSchema"]["required"] == ["name"]


def test_conformance_19_sep1034_defaults_fill_what_the_person_left_empty(callbacks_server: str,
                                                                        clients: list[MCPClient]) -> None:
    """Source: modelcontextprotocol/conformance #19 (client-side SEP-1034 defaults): fields the user omits
    take the schema's ``default``. Here the person typed nothing for name and age and left color out.
    """
    answer = {"action": "accept", "content": {"name": "", "age": None, "newsletter": False, "tags": ["a", "c"]}}
    client = http_client(clients, callbacks_server, callbacks=ClientCallbacks(elicitation=lambda s, r: answer))
    got = json.loads(text_of(client.call_tool("ask_profile", {})))
    assert got == {"action": "accept", "content": {"name": "Ada", "age": 36, "newsletter": False,
                                                   "color": "#00FF00", "tags": ["a", "c"]}}


def test_answer_that_breaks_the_requested_schema_is_never_sent(callbacks_server: str,
                                                               clients: list[MCPClient]) -> None:
    answer = {"action": "accept", "content": {"name": "Ada", "age": -4, "color": "Green"}}  # title, not const
    client = http_client(clients, callbacks_server, callbacks=ClientCallbacks(elicitation=lambda s, r: answer))
    with pytest.raises(MCPRPCError) as caught:  # the SDK passes our JSON-RPC error on as the call's
        client.call_tool("ask_profile", {})
    assert "requestedSchema" in caught.value.message and "age: -4" in caught.value.message


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_go_sdk_758_decline_and_cancel_are_not_validated_and_send_no_content(
        callbacks_server: str, clients: list[MCPClient], action: str) -> None:
    """Source: modelcontextprotocol/go-sdk #758 ("content validation should be done only for accept"): a
    cancel carrying content that breaks the schema failed there. Here it goes as a plain cancel.
    """
    answer = {"action": action, "content": {"name": "leaked", "age": -4}}
    client = http_client(clients, callbacks_server, callbacks=ClientCallbacks(elicitation=lambda s, r: answer))
    assert json.loads(text_of(client.call_tool("ask_profile", {}))) == {"action": action, "content": None}


def test_url_elicitation_gets_the_url_and_form_only_clients_refuse_it(callbacks_server: str,
                                                                      clients: list[MCPClient]) -> None:
    seen: list[dict[str, Any]] = []
    client = http_client(clients, callbacks_server, callbacks=ClientCallbacks(
        url_elicitation=lambda s, r: seen.append(r) or {"action": "accept"}))
    assert text_of(client.call_tool("ask_url", {})) == "accept"
    assert seen[0]["url"] == "https://example.com/connect?state=1" and seen[0]["elicitationId"] == "el-1"
    form_only = http_client(clients, callbacks_server, callbacks=ClientCallbacks(
        elicitation=lambda s, r: {"action": "accept"}))
    with pytest.raises(MCPRPCError) as caught:  # the SDK passes our -32602 on as the call's error
        form_only.call_tool("ask_url", {})
    assert caught.value.code == -32602 and "'url' is not supported" in caught.value.message


# ---------------------------------------------------------------------------- the call's timeout


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_typescript_sdk_903_elicitation_slower_than_the_call_timeout_still_answers(
        callbacks_server: str, clients: list[MCPClient], transport: str) -> None:
    """Source: modelcontextprotocol/typescript-sdk #903 "Elicitation Timeout" (-32001 when the user takes
    a second or two); also MCPJam inspector #1603 and openai/codex #17566 (pause the timer while eliciting).
    The person takes 2.5 s; the call's timeout is 1 s; the answer still arrives.
    """

    def slow_person(server: str, request: dict[str, Any]) -> dict[str, Any]:
        time.sleep(2.5)
        return {"action": "accept", "content": {"name": "Slow"}}

    callbacks = ClientCallbacks(elicitation=slow_person)
    client = (http_client(clients, callbacks_server, callbacks=callbacks) if transport == "http"
              else stdio_client(clients, callbacks=callbacks))
    client.connect()
    started = time.monotonic()
    assert text_of(client.call_tool("ask_name", {}, timeout_seconds=1.0)) == "hello Slow"
    assert time.monotonic() - started >= 2.5
    assert client.transport.clock.paused_seconds >= 2.5  # type: ignore[attr-defined]


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_the_timeout_runs_again_after_the_callback(callbacks_server: str, clients: list[MCPClient],
                                                   transport: str) -> None:
    """The pause ends with the callback: a server that then stays silent still times out, 1 s later."""

    def ask(server: str, request: dict[str, Any]) -> dict[str, Any]:
        time.sleep(1.5)
        return {"action": "accept", "content": {"name": "x"}}

    callbacks = ClientCallbacks(elicitation=ask)
    client = (http_client(clients, callbacks_server, callbacks=callbacks) if transport == "http"
              else stdio_client(clients, callbacks=callbacks))
    client.connect()
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError):
        client.call_tool("slow_after_ask", {"seconds": 10}, timeout_seconds=1.0)
    elapsed = time.monotonic() - started
    assert 2.4 <= elapsed < 6.0, elapsed  # 1.5 s paused + 1 s of deadline: not 10 s, not 1 s


# ---------------------------------------------------------------------------- sampling


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_sampling_by_llm_call_with_system_prompt_and_request_fields(callbacks_server: str, clients: list[MCPClient],
                                                                    transport: str) -> None:
    scripted_llm.seen.clear()  # type: ignore[attr-defined]
    callbacks = ClientCallbacks(sampling=LLMSampler(scripted_llm))
    client = (http_client(clients, callbacks_server, callbacks=callbacks) if transport == "http"
              else stdio_client(clients, callbacks=callbacks))
    got = json.loads(text_of(client.call_tool("sample", {"prompt": "hi there"})))
    assert got == {"text": "echo: hi there", "model": "scripted-1", "stopReason": "endTurn"}
    seen = scripted_llm.seen[-1]  # type: ignore[attr-defined]
    assert seen["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi there"}]
    assert seen["fields"] == {"max_tokens": 50, "temperature": 0.2, "stop": ["END"]}
    got = json.loads(text_of(client.call_tool("sample", {"prompt": "a long one"})))
    assert got["stopReason"] == "maxTokens"  # finish_reason length


def test_sampling_with_tools_round_trip(callbacks_server: str, clients: list[MCPClient]) -> None:
    """SEP-1577: the model's tool call goes back as tool_use (stopReason toolUse); the server's tool_result
    comes in as a ``tool`` message with the call's id; ``toolChoice`` none reaches the model.
    """
    scripted_llm.seen.clear()  # type: ignore[attr-defined]
    client = http_client(clients, callbacks_server, callbacks=ClientCallbacks(sampling=LLMSampler(scripted_llm)))
    got = json.loads(text_of(client.call_tool("sample_with_tools", {"prompt": "weather in Paris?"})))
    assert got == {"first": "toolUse", "calls": [{"city": "Paris"}], "final": "endTurn",
                   "text": "echo: 18C in Paris"}
    first, second = scripted_llm.seen  # type: ignore[attr-defined]
    assert first["tools"][0]["function"]["name"] == "get_weather" and first["fields"]["tool_choice"] == "auto"
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "18C in Paris"}
    assert second["messages"][-2]["tool_calls"][0]["function"] == {"name": "get_weather",
                                                                   "arguments": '{"city": "Paris"}'}
    assert second["fields"]["tool_choice"] == "none"


def test_pydantic_ai_3822_sampling_with_a_thinking_model_answers_the_text(callbacks_server: str,
                                                                          clients: list[MCPClient]) -> None:
    """Source: pydantic/pydantic-ai #3822 "MCP Sampling is not working with thinking models" (a reply with
    thinking parts raised). Reasoning (``reasoning_content`` and ``<think>``) never reaches the server.
    """

    def thinking_llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        message = {"role": "assistant", "reasoning_content": "the user wants a city",
                   "content": "<think>France... capital</think>Paris"}
        return {"model": "thinker", "choices": [{"message": message, "finish_reason": "stop"}]}

    client = http_client(clients, callbacks_server, callbacks=ClientCallbacks(sampling=LLMSampler(thinking_llm)))
    got = json.loads(text_of(client.call_tool("sample", {"prompt": "capital of France?"})))
    assert got == {"text": "Paris", "model": "thinker", "stopReason": "endTurn"}


def test_a_denied_sampling_request_answers_the_spec_error(callbacks_server: str, clients: list[MCPClient]) -> None:
    asked: list[str] = []
    sampler = LLMSampler(scripted_llm, approve=lambda server, params: asked.append(server) or False)
    client = http_client(clients, callbacks_server, callbacks=ClientCallbacks(sampling=sampler), name="srv")
    with pytest.raises(MCPRPCError) as caught:  # the SDK passes our error on as the call's
        client.call_tool("sample", {"prompt": "hi"})
    assert asked == ["srv"]
    assert (caught.value.code, caught.value.message) == (-1, "User rejected sampling request")


def test_an_approver_may_change_the_request(callbacks_server: str, clients: list[MCPClient]) -> None:
    scripted_llm.seen.clear()  # type: ignore[attr-defined]
    sampler = LLMSampler(scripted_llm, approve=lambda server, params: {**params, "maxTokens": 5}, max_tokens=3)
    client = http_client(clients, callbacks_server, callbacks=ClientCallbacks(sampling=sampler))
    client.call_tool("sample", {"prompt": "hi"})
    assert scripted_llm.seen[-1]["fields"]["max_tokens"] == 3  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- roots


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_perl_lsp_4887_root_paths_with_spaces_and_hash_are_percent_encoded(
        callbacks_server: str, clients: list[MCPClient], tmp_path: Any, transport: str) -> None:
    """Source: EffortlessMetrics/perl-lsp #4887 (raw-space ``file:///`` URIs broke URI consumers) and
    microsoft/vscode #29691. The SDK server parses each root as a URL: it must get them encoded.
    """
    odd = tmp_path / "my project #2 é"
    odd.mkdir()
    callbacks = ClientCallbacks(roots=[odd, str(tmp_path)])
    # the SDK sends roots/list tied to no request: over HTTP it travels on the standalone GET stream
    client = (http_client(clients, callbacks_server, callbacks=callbacks, listen=True) if transport == "http"
              else stdio_client(clients, callbacks=callbacks))
    got = json.loads(text_of(client.call_tool("list_roots", {}, timeout_seconds=10)))
    assert got[0]["uri"] == odd.as_uri() and "%20" in got[0]["uri"] and "%23" in got[0]["uri"]
    assert got[0]["name"] == "my project #2 é"
    assert got[1]["uri"] == tmp_path.as_uri()


def test_set_roots_tells_the_connected_server_and_it_reads_the_new_roots(
        callbacks_server: str, clients: list[MCPClient], tmp_path: Any) -> None:
    session = RecordingSession()
    callbacks = ClientCallbacks(roots=[tmp_path / "old"])
    client = MCPClient(transport=HTTPTransport(callbacks_server, session=session), callbacks=callbacks, listen=True)
    clients.append(client)
    first = json.loads(text_of(client.call_tool("list_roots", {}, timeout_seconds=10)))
    assert [r["name"] for r in first] == ["old"]
    assert callbacks.set_roots([tmp_path / "new", tmp_path / "other"]) == 1
    [sent] = session.rpc("notifications/roots/list_changed")
    assert sent.status == 202  # the SDK server accepted it
    second = json.loads(text_of(client.call_tool("list_roots", {}, timeout_seconds=10)))
    assert [r["name"] for r in second] == ["new", "other"]
    unconnected = MCPClient("http://127.0.0.1:9/mcp", callbacks=ClientCallbacks(roots=[]))
    assert unconnected.callbacks is not None and unconnected.callbacks.set_roots(["/tmp"]) == 0
    unconnected.close()


# ---------------------------------------------------------------------------- the agent


def test_go_sdk_601_an_agent_answers_sampling_with_its_own_model(callbacks_server: str) -> None:
    """Source: modelcontextprotocol/go-sdk #601 "Sampling within a tool request": the client answered
    ``Method not found``. An ``Agent`` given a server URL answers with its own ``llm_call``.
    """
    from yiemagent.agent import Agent

    tool_results: list[str] = []

    def llm_call(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        last = messages[-1]
        if last["role"] == "user" and last["content"] == "go":
            call = {"id": "c9", "type": "function", "function": {"name": "sample", "arguments": '{"prompt": "ping"}'}}
            return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]},
                                 "finish_reason": "tool_calls"}]}
        if last["role"] == "tool":
            tool_results.append(last["content"])
            return {"choices": [{"message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}]}
        return {"model": "agent-model", "choices": [{"message": {"role": "assistant", "content": "pong"},
                                                     "finish_reason": "stop"}]}

    agent = Agent(llm_call, mcp_servers={"cb": callbacks_server})
    try:
        assert agent.mcp.clients[0].capabilities["sampling"] == {"tools": {}}  # type: ignore[attr-defined]
        answer = agent.ask("go", timeout_seconds=60)
        assert answer["content"] == "done"
        assert json.loads(tool_results[0]) == {"text": "pong", "model": "agent-model", "stopReason": "endTurn"}
    finally:
        agent.shutdown()


def test_an_agent_leaves_a_client_with_its_own_callbacks_alone() -> None:
    from yiemagent.mcp.config import mcp_clients

    mine = MCPClient("http://127.0.0.1:9/mcp", callbacks=ClientCallbacks(), name="mine")
    bare = MCPClient("http://127.0.0.1:9/mcp", name="bare")
    mcp_clients([mine, bare], sampling_llm_call=scripted_llm)
    assert "sampling" not in mine.capabilities and "sampling/createMessage" not in mine.request_handlers
    assert bare.capabilities["sampling"] == {"tools": {}}
    mine.close()
    bare.close()
