"""Callbacks that hang, raise or get a bare path, against the real ``mcp`` 2.3 SDK server, in both eras.

Defects found by a fresh user of issue 16 (notes/newuser_16.md 1, 2, 3, 6): a bare root string read one
character at a time, ``close()``/``cancel_in_flight()``/``Agent.abort()`` waiting for a hung callback, a
callback's exception escaping raw (2026-07-28) or its text sent to the server (2025-11-25), and server
requests on the handshake era's GET stream unanswered without ``listen=True``. Tests named after a public
report say what failed there.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, wait_for_port
from yiemagent import Agent
from yiemagent.exceptions import ConfigError, MCPCallbackError, MCPRPCError, MCPTransportError
from yiemagent.mcp import ClientCallbacks, LLMSampler, MCPClient
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

SERVER = str(SERVERS / "sdk_callbacks_server.py")
ERAS = ["2025-11-25", "2026-07-28"]
TOOL = {"2025-11-25": "ask_name", "2026-07-28": "resolved_profile"}
"""An elicitation tool of each era (the old era's on the call's own stream; the new era's by MRTR)."""


@pytest.fixture(scope="module")
def callbacks_server() -> Iterator[str]:
    port = free_port()
    process = start_process([PYTHON, SERVER, "--port", str(port)])
    try:
        wait_for_port(port, timeout_seconds=20, process=process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


def make(url: str | None, era: str, callbacks: ClientCallbacks, **kwargs: Any) -> MCPClient:
    if url is None:
        return MCPClient.stdio(sys.executable, [SERVER, "--stdio"], callbacks=callbacks, protocol_version=era,
                               **kwargs)
    return MCPClient(url, callbacks=callbacks, protocol_version=era, **kwargs)


class Hang:
    """An elicitation callback that waits (at most 8 s) until released; records the abort_event it got."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.abort_events: list[threading.Event | None] = []

    def __call__(self, server: str, request: dict[str, Any],
                 abort_event: threading.Event | None = None) -> dict[str, Any]:
        self.abort_events.append(abort_event)
        self.entered.set()
        self.release.wait(8)
        return {"action": "cancel"}


# ---------------------------------------------------------------------------- 1: a bare path as roots


@pytest.mark.parametrize("bare", ["/tmp/project", b"/tmp/project", Path("/tmp/project"),
                                  {"uri": "file:///tmp/project"}])
def test_pyemu_27_a_single_root_string_is_refused_not_read_one_character_at_a_time(bare: Any) -> None:
    """Source: pypest/pyemu #27 (a str set where a list of paths was expected was iterated per character).
    Here ``roots="/tmp/project"`` sent ``file:///`` plus one-letter folders of the cwd to the server.
    """
    with pytest.raises(ConfigError, match=r"roots must be a list of paths, e\.g\. \["):
        ClientCallbacks(roots=bare)
    callbacks = ClientCallbacks(roots=["/tmp/a"])
    with pytest.raises(ConfigError, match=r"set_roots\(roots\) must be a list of paths"):
        callbacks.set_roots(bare)
    assert callbacks.roots == ["/tmp/a"]  # nothing changed
    with pytest.raises(ConfigError, match="a root must be a path"):
        ClientCallbacks(roots=[b"/tmp/project"])


def test_pyemu_27_listen_for_refuses_one_uri_string_before_connecting() -> None:
    """The same trap in ``listen_for(resource_uris=...)``: one URI string would subscribe to its characters.

    Refused before anything is sent (the URL is never contacted).
    """
    client = MCPClient("http://127.0.0.1:9/mcp")
    with pytest.raises(ConfigError, match=r"resource_uris must be a list of URIs"):
        client.listen_for(resource_uris="file:///x")
    client.close()


def test_staticx_59_a_roots_callable_giving_a_string_fails_the_call_not_the_server(callbacks_server: str) -> None:
    """Source: JonathonReinhart/staticx #59 (a string iterated as a list). A roots callable is asked at each
    ``roots/list``; one that returns a bare string ends the call with ``MCPCallbackError`` (ConfigError cause)
    and the server is sent no one-letter roots.
    """
    with make(callbacks_server, "2026-07-28", ClientCallbacks(roots=lambda: "/tmp/project")) as client:
        with pytest.raises(MCPCallbackError) as caught:
            client.call_tool("resolved_roots", {})
    assert isinstance(caught.value.__cause__, ConfigError)
    assert "roots/list callback failed (ConfigError)" in str(caught.value)


# ---------------------------------------------------------------------------- 2: a hung callback is cut


@pytest.mark.parametrize("cut", ["close", "cancel_in_flight"])
@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("era", ERAS)
def test_inspect_ai_5031_a_hung_elicitation_callback_is_cut_at_once(callbacks_server: str, era: str,
                                                                     transport: str, cut: str) -> None:
    """Source: UKGovernmentBEIS/inspect_ai #5031 (a hung tool call could not be cancelled; the sample sat
    running forever). Here close()/cancel_in_flight() returned but call_tool waited for the callback (12 s
    in the report; forever for one that never returns). Now the call fails within a second, and the
    callback's abort_event is set so that it can stop.
    """
    hang = Hang()
    # the handshake and the way to the callback get a generous bound (a Python stdio server on a loaded
    # machine starts in seconds); what is timed is the cut: from close()/cancel_in_flight() to the failure
    client = make(callbacks_server if transport == "http" else None, era, ClientCallbacks(elicitation=hang),
                  timeout_seconds=30)
    try:
        client.connect()
        cut_at: list[float] = []
        threading.Thread(target=lambda: (hang.entered.wait(60), time.sleep(0.3), cut_at.append(time.monotonic()),
                                         getattr(client, cut)()), daemon=True).start()
        with pytest.raises(MCPTransportError) as caught:
            client.call_tool(TOOL[era], {})
        took = time.monotonic() - cut_at[0]
        assert hang.entered.is_set()
        assert took < 4.0, f"the call waited {took:.1f}s for the hung callback"
        told = hang.abort_events[0]
        assert told is not None and told.wait(30)  # the callback was told
        if era == "2026-07-28" or transport == "http":  # the client knows the callback was answering this call
            assert "had been sent, so its effect is unknown (the tool may have run)" in str(caught.value)
            assert "before it was sent" not in str(caught.value)
    finally:
        hang.release.set()
        client.close()


def test_t7_agent_abort_with_a_hung_elicitation_then_answers_the_next_message(callbacks_server: str) -> None:
    """Agent.abort() returned, but the agent's worker stayed inside the hung callback (t7_hang.py)."""
    hang = Hang()
    client = MCPClient(callbacks_server, callbacks=ClientCallbacks(elicitation=hang), timeout_seconds=30)
    agent = Agent(ScriptedLLM([tool_call_reply("resolved_profile", {}), text_reply("second answer")]),
                  mcp_servers=[client])
    try:
        aborted_at: list[float] = []
        threading.Thread(target=lambda: (hang.entered.wait(60), time.sleep(0.3), aborted_at.append(time.monotonic()),
                                         agent.abort()), daemon=True).start()
        first = agent.ask("profile please")
        assert first["status"] == "aborted" and time.monotonic() - aborted_at[0] < 4
        second = agent.ask("and now?")
        assert second["status"] == "completed" and "second answer" in str(second.get("content"))
        told = hang.abort_events[0]
        assert told is not None and told.is_set()
    finally:
        hang.release.set()
        agent.shutdown()
        client.close()


# ---------------------------------------------------------------------------- 3: a callback that raises


def leaky_llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    raise RuntimeError("cannot reach http://model.internal:8000/v1?key=sk-SECRET-0042")


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("era", ERAS)
def test_odk_central_1107_a_callback_error_is_one_class_and_its_text_stays_local(
        callbacks_server: str, era: str, transport: str, caplog: pytest.LogCaptureFixture) -> None:
    """Source: getodk/central-backend #1107 (exception text sent to the peer may hold secrets; keep it in
    the log). 2026-07-28 let the RuntimeError escape raw from call_tool; 2025-11-25 sent the server
    "RuntimeError: cannot reach http://...key=..." Now the server is told the type only, the call raises an
    MCPRPCError in both eras (MCPCallbackError with the RuntimeError as cause where the client knows it: the
    new era, and the old era over HTTP), and the full text is in the local log.
    """
    callbacks = ClientCallbacks(sampling=LLMSampler(leaky_llm))
    with make(callbacks_server if transport == "http" else None, era, callbacks, timeout_seconds=30) as client:
        with pytest.raises(MCPRPCError) as caught:
            client.call_tool("resolved_sample", {"topic": "tea"})
    assert "sk-SECRET-0042" not in str(caught.value) and "model.internal" not in str(caught.value)
    assert "sampling/createMessage callback failed (RuntimeError)" in str(caught.value)
    if era == "2026-07-28" or transport == "http":
        assert isinstance(caught.value, MCPCallbackError)
        assert isinstance(caught.value.__cause__, RuntimeError)
    assert any("sk-SECRET-0042" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


# ---------------------------------------------------------------------------- 6: the GET stream by default


def test_playwright_42256_roots_list_on_the_get_stream_is_answered_without_listen(callbacks_server: str,
                                                                                  tmp_path: Path) -> None:
    """Source: microsoft/playwright #42256 / #42300 (a client that declares roots but never opens the GET
    stream: the server's roots/list is dropped and the first tools/call stalls until its timeout). The SDK
    server sends ``roots/list`` tied to no request; yiemagent needed ``listen=True`` (5 s timeout). Now a
    client with callbacks opens the stream by default; ``listen=False`` still forces it off.
    """
    callbacks = ClientCallbacks(roots=[tmp_path])
    with make(callbacks_server, "2025-11-25", callbacks, timeout_seconds=30) as client:
        client.connect()
        started = time.monotonic()
        result = client.call_tool("list_roots", {})
        assert time.monotonic() - started < 10.0  # a dropped roots/list stalls the call until its 30 s
        assert tmp_path.as_uri() in result["content"][0]["text"]
    with make(callbacks_server, "2025-11-25", callbacks, timeout_seconds=30, listen=False) as client:
        client.connect()
        assert not client.transport.listening.is_set()  # type: ignore[attr-defined]
    with make(callbacks_server, "2025-11-25", ClientCallbacks(), timeout_seconds=30) as client:
        client.connect()  # nothing to answer: no stream, no thread
        assert not client.transport.listening.is_set()  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- LLMSampler and **kwargs


def test_llm_sampler_gives_request_fields_and_abort_event_to_an_llm_call_with_kwargs(callbacks_server: str) -> None:
    """t4_cb.py: an ``llm_call(messages, tools, **kwargs)`` got no ``request_fields`` (maxTokens lost)."""
    seen: list[dict[str, Any]] = []

    def llm_call(messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        seen.append({**kwargs, "aborted": kwargs["abort_event"].is_set()})
        return {"model": "kw-1", "choices": [{"message": {"role": "assistant", "content": "ok"},
                                              "finish_reason": "stop"}]}

    with make(callbacks_server, "2025-11-25", ClientCallbacks(sampling=LLMSampler(llm_call))) as client:
        client.call_tool("sample", {"prompt": "hi", "max_tokens": 7})
    assert seen and seen[0]["request_fields"]["max_tokens"] == 7
    assert isinstance(seen[0]["abort_event"], threading.Event) and seen[0]["aborted"] is False
    assert seen[0]["abort_event"].is_set()  # close() aborted what was left


# ---------------------------------------------------------------------------- the chat's terminal questions


def test_chat_question_whose_request_was_cut_is_not_asked(callbacks_server: str) -> None:
    """The chat queues a server's question for its main thread; once the request is cut (Ctrl-C during the
    answer, Agent.abort) the waiting callback returns and the question is never put to the person.
    """
    import io

    from yiemagent.cli.elicit_prompt import TerminalElicitation

    asked: list[str] = []
    terminal = TerminalElicitation(io.StringIO(), read=lambda prompt: asked.append(prompt) or "Ada")
    with make(callbacks_server, "2026-07-28", terminal.callbacks(), timeout_seconds=30) as client:
        client.connect()  # the handshake's own bound is generous; the call keeps 2 s
        threading.Thread(target=lambda: (time.sleep(0.5), client.cancel_in_flight()), daemon=True).start()
        started = time.monotonic()
        with pytest.raises(MCPTransportError):
            client.call_tool("resolved_profile", {}, timeout_seconds=2)
        assert time.monotonic() - started < 3
        time.sleep(0.3)  # the callback's thread has seen its abort_event
        terminal.serve_pending()
    assert asked == []
