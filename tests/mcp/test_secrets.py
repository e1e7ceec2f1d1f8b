"""Static auth headers reach the server but never appear in logs, events, reprs or error messages.

yiemagent-defined (issue 4, point 11). Logs are captured at DEBUG for every logger (urllib3 too).
"""

from __future__ import annotations

import logging

import pytest

from tests.helpers import RecordingSession
from tests.mcp.conftest import LEGACY, MODERN, assert_era
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


def test_auth_headers_are_sent_but_absent_from_debug_logs_and_reprs(sdk_server, caplog, era):
    """Both eras: the server receives both headers on every request (and the 2025-11-25 DELETE); nothing
    logged at DEBUG, and no ``repr`` of client, transport, its header dict, tools or agent, shows them.
    """
    caplog.set_level(logging.DEBUG)
    http = RecordingSession()
    client = MCPClient(transport=HTTPTransport(sdk_server, headers=HEADERS, session=http, timeout_seconds=5),
                       name="sdk")
    agent = Agent(ScriptedLLM([tool_call_reply("add", {"a": 1, "b": 2}), text_reply("3")]), mcp_servers=[client])
    try:
        assert agent.ask("add", timeout_seconds=10)["content"] == "3"
        assert_era(client, era)
        reprs = [repr(client), repr(client.transport), repr(client.transport._static_headers), repr(agent),
                 repr(list(agent.tools)), str(vars(client.transport))]
    finally:
        agent.shutdown()
        client.close()
    assert all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in http.sent)
    assert all(r.headers.get("x-api-key") == "key-9876543210" for r in http.sent)
    assert [r.method for r in http.sent][-1] == ("DELETE" if era == LEGACY else "POST")  # no session in 2026
    assert "urllib3" in caplog.text and "tools/call" in str([r.message for r in http.sent])
    assert_clean(caplog.text, *reprs)
    assert "Authorization" in repr(client.transport)  # the header names are shown, the values are not


def test_a_401_echoing_the_token_is_scrubbed_from_errors_events_and_tool_results(raw_peer, caplog, no_sleep, era):
    """Raw peer (no real server here answers 401 and echoes the credential back), both eras (the first
    request is ``initialize`` or ``server/discover``): the error's message and ``.body``, the agent's error
    event and the error tool result show ``***`` instead of the secret.
    """
    caplog.set_level(logging.DEBUG)
    peer = raw_peer(modern=era == MODERN)
    first = "initialize" if era == LEGACY else "server/discover"
    echo = Reply(401, body=f"invalid token: Bearer {SECRET} (key key-9876543210)")
    peer.script(first, echo, echo, echo, echo)
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
    assert peer.received(first)[0].headers["authorization"] == f"Bearer {SECRET}"
    assert peer.count("initialize" if era == MODERN else "server/discover") == 0  # a 401 is not "the other era"


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


# --------------------------------------------------------------------------- issue 9, point 6

URL_TOKEN = "qtok-5f3a9c1e7b2d4086"


def chain_texts(exc: BaseException) -> list[str]:
    """Everything a traceback or a logger could print about ``exc``: the formatted traceback with its
    chained causes, and the args (and str) of every exception reachable through args and the chain.
    """
    import traceback

    texts = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        texts += [str(current), repr(current.args)]
        stack += [a for a in current.args if isinstance(a, BaseException)]
        stack += [c for c in (current.__cause__, current.__context__) if c is not None]
    return texts


def test_a_url_token_is_scrubbed_from_the_error_its_chained_causes_and_their_args(free_port, caplog):
    """Nothing listens on the port: the ``MCPTransportError`` shows ``***``. Since issue 15 a refused
    connection is one line ("connection refused (is the server running?)") without urllib3's chain (its
    ``MaxRetryError`` names ``/mcp?token=...``); the chain goes to the DEBUG log, scrubbed too.
    """
    caplog.set_level(logging.DEBUG, logger="yiemagent")
    client = MCPClient(f"http://127.0.0.1:{free_port}/mcp?token={URL_TOKEN}", timeout_seconds=2, retry_attempts=1)
    with pytest.raises(MCPTransportError) as caught:
        client.connect()
    client.close()
    texts = chain_texts(caught.value)
    assert "connection refused (is the server running?)" in texts[0] and caught.value.__cause__ is None
    assert all(URL_TOKEN not in text for text in texts), next(t for t in texts if URL_TOKEN in t)[:300]
    assert "token=***" in texts[0]
    assert "MaxRetryError" in caplog.text and URL_TOKEN not in caplog.text


def test_a_url_token_is_scrubbed_from_urllib3_debug_lines_and_a_timeout_chain(raw_peer, caplog, era):
    """The token reaches the server in the URL, but urllib3's DEBUG request lines show ``***``, and a
    timeout's traceback does not show it either (raw peer: it hangs ``tools/call`` on demand), both eras.
    """
    caplog.set_level(logging.DEBUG)
    peer = raw_peer(modern=era == MODERN)
    peer.script("tools/call", Reply(hang_seconds=30))
    with MCPClient(f"{peer.url}?token={URL_TOKEN}", timeout_seconds=5) as client:
        client.connect()
        assert_era(client, era)
        with pytest.raises(MCPTransportError) as caught:
            client.call_tool("get_time", timeout_seconds=0.5)
    assert "urllib3.connectionpool" in {r.name for r in caplog.records}
    assert URL_TOKEN not in caplog.text and "token=***" in caplog.text
    assert all(URL_TOKEN not in text for text in chain_texts(caught.value))


def test_a_url_token_reaches_the_real_server_and_stays_out_of_logs(sdk_server, caplog, era):
    """Real SDK server (it ignores the query), both eras: the client works with ``?token=`` in its URL and
    no log line at DEBUG names the token.
    """
    caplog.set_level(logging.DEBUG)
    with MCPClient(f"{sdk_server}?token={URL_TOKEN}", timeout_seconds=10) as client:
        assert client.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5"
        assert_era(client, era)
    assert "POST /mcp?token=***" in caplog.text
    assert URL_TOKEN not in caplog.text
