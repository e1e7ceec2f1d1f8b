"""One-line connection errors that name the URL and say what to check (issue 15, a new user's trial).

Before: an unreachable server gave a 117-line chained traceback with urllib3 internals
(``HTTPPool(host=...): Max retries exceeded ... NewConnectionError(...)``), in the MCP
client, ``mcp_unavailable`` / ``mcp_status()`` and the model client alike. The shared
``yiemagent._internal.http.connection_problem`` now words the common causes, and the error is raised
without urllib3's chain. Real closed loopback ports; an unresolvable ``.invalid`` name (RFC 6761).
"""

from __future__ import annotations

import pytest

from tests.helpers import free_port
from yiemagent import Agent, LLMError, MCPClient, MCPTransportError, openai_chat
from yiemagent.testing import ScriptedLLM, text_reply

INTERNALS = ("urllib3", "HTTPPool", "Max retries", "NewConnectionError", "Tracked(")


def _one_line(text: str) -> None:
    assert "\n" not in text and len(text) < 240, text
    assert not any(word in text for word in INTERNALS), text


def test_mcp_client_to_a_closed_port_says_connection_refused_is_the_server_running():
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(MCPTransportError) as caught:
        MCPClient(url, retry_attempts=1).list_tools()
    text = str(caught.value)
    assert url in text and "connection refused (is the server running?)" in text
    _one_line(text)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_an_unresolvable_host_says_the_name_does_not_resolve(monkeypatch):
    import socket

    def no_such_name(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)  # what the resolver says for a .invalid name
    with pytest.raises(MCPTransportError, match=r"host name does not resolve \(is it spelled right\?\)") as caught:
        MCPClient("http://mcp.example.invalid/mcp", retry_attempts=1).list_tools()
    _one_line(str(caught.value))


def test_model_server_not_running_is_one_line_naming_the_url():
    url = f"http://127.0.0.1:{free_port()}/v1"
    call = openai_chat(url, model="m", timeout_seconds=10)
    with pytest.raises(LLMError) as caught:
        call([{"role": "user", "content": "hi"}], [])
    text = str(caught.value)
    assert f"{url}/chat/completions" in text and "(is the server running?)" in text
    _one_line(text)
    assert caught.value.__cause__ is None


def test_mcp_unavailable_and_mcp_status_carry_the_one_line_reason():
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with Agent(ScriptedLLM([text_reply("fine")]), mcp_servers=[url]) as agent:
        answer = agent.ask("hi", timeout_seconds=30)
        (unavailable,) = answer["mcp_unavailable"]
        _one_line(unavailable["error"])
        assert "is the server running?" in unavailable["error"]
        (status,) = agent.mcp_status()
        assert status["state"] == "unavailable" and status["error"] == unavailable["error"]
