"""Static auth headers reach the server but never appear in logs, events, reprs or error messages.

yiemagent-defined (issue 4, point 11). Logs are captured at DEBUG for every logger (urllib3 too).
"""

from __future__ import annotations

import logging

import pytest

from tests.helpers import RecordingSession
from tests.servers.raw_http_peer import Reply
from yiemagent import Agent
from yiemagent.exceptions import MCPTransportError
from yiemagent.mcp import HTTPTransport, MCPClient
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply

SECRET = "sk-test-0123456789abcdef"
HEADERS = {"Authorization": f"Bearer {SECRET}", "X-Api-Key": "key-9876543210"}


def assert_clean(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text and "key-9876543210" not in text, text[:300]


def test_auth_headers_are_sent_but_absent_from_debug_logs_and_reprs(sdk_server, caplog):
    """The server receives both headers on every request (and the DELETE); nothing logged at DEBUG, and
    no ``repr`` of client, transport, its header dict, tools or agent, shows them.
    """
    caplog.set_level(logging.DEBUG)
    http = RecordingSession()
    client = MCPClient(transport=HTTPTransport(sdk_server, headers=HEADERS, session=http, timeout_seconds=5),
                       name="sdk")
    agent = Agent(ScriptedLLM([tool_call_reply("add", {"a": 1, "b": 2}), text_reply("3")]), mcp_servers=[client])
    try:
        assert agent.ask("add", timeout_seconds=10)["content"] == "3"
        reprs = [repr(client), repr(client.transport), repr(client.transport._static_headers), repr(agent),
                 repr(list(agent.tools)), str(vars(client.transport))]
    finally:
        agent.shutdown()
        client.close()
    assert all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in http.sent)
    assert all(r.headers.get("x-api-key") == "key-9876543210" for r in http.sent)
    assert [r.method for r in http.sent][-1] == "DELETE"
    assert "urllib3" in caplog.text and "tools/call" in str([r.message for r in http.sent])
    assert_clean(caplog.text, *reprs)
    assert "Authorization" in repr(client.transport)  # the header names are shown, the values are not


def test_a_401_echoing_the_token_is_scrubbed_from_errors_events_and_tool_results(raw_peer, caplog, no_sleep):
    """Raw peer (no real server here answers 401 and echoes the credential back): the error's message and
    ``.body``, the agent's error event and the error tool result show ``***`` instead of the secret.
    """
    caplog.set_level(logging.DEBUG)
    peer = raw_peer()
    echo = Reply(401, body=f"invalid token: Bearer {SECRET} (key key-9876543210)")
    peer.script("initialize", echo, echo, echo, echo)
    client = MCPClient(peer.url, headers=HEADERS, timeout_seconds=5, retry_sleep=no_sleep.append, name="peer")
    with pytest.raises(MCPTransportError) as caught:
        client.connect()
    assert caught.value.status_code == 401
    assert caught.value.body == "invalid token: *** (key ***)"
    events = EventRecorder()
    agent = Agent(ScriptedLLM([text_reply("no tools")]), mcp_servers=[client], event_sink=events)
    try:
        agent.ask("hi", timeout_seconds=10)
    finally:
        agent.shutdown()
        client.close()
    (error,) = events.of_type("error")
    assert error.where == "mcp"
    assert_clean(str(caught.value), caught.value.body, repr(caught.value), error.message, repr(error), caplog.text)
    assert peer.received("initialize")[0].headers["authorization"] == f"Bearer {SECRET}"


def test_a_malformed_header_value_is_refused_without_echoing_it(open_client):
    """A token with a CR LF (read carelessly from a file) is refused by requests, whose message quotes the
    value; yiemagent's error shows ``***`` instead, and nothing is sent.
    """
    client = MCPClient("http://127.0.0.1:9/mcp", headers={"Authorization": f"Bearer {SECRET}\r\nX-Evil: 1"},
                       retry_sleep=lambda seconds: None)
    with pytest.raises(MCPTransportError) as caught:
        client.connect()
    client.close()
    assert "header" in str(caught.value).lower()
    assert_clean(str(caught.value), repr(caught.value))


def test_passwords_and_query_values_in_the_url_are_hidden_from_names_and_reprs():
    """A URL like ``https://user:pw@host/mcp?api_key=...`` is shown as ``user:***@host/mcp?api_key=***``
    in errors; the client's default name is host and port only.
    """
    client = MCPClient(f"http://bob:{SECRET}@127.0.0.1:9/mcp?api_key=key-9876543210&x=1")
    assert client.name == "127_0_0_1_9"
    assert client.transport.name == "http://bob:***@127.0.0.1:9/mcp?api_key=***&x=***"
    assert_clean(client.name, client.transport.name, repr(client), repr(client.transport))
    client.close()
