"""Issue 15 point 3: one outbound text policy at every boundary; each test is named after a public report.

Hostile text (terminal escape sequences, lone surrogates, NaN, ``${VAR}`` secrets) comes from real
components: real SQLite/PostgreSQL stores, real stdio servers (``python -c``), the real chat view, the
real SSE writer and the real logging module.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
from typing import Any

import pytest

from yiemagent import Agent, MCPClient, tool
from yiemagent.agent.streaming import sse_events
from yiemagent.cli.chat import ChatView
from yiemagent.loop import events as ev
from yiemagent.mcp.config import parse_mcp_servers
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply
from yiemagent.textpolicy import register_secrets

HOSTILE = ("Apache\x1b[2J\x1b]0;PWNED\x07 \x1b]52;c;cm0gLXJmIH4=\x07 \x1b]8;;http://evil/\x07click\x1b]8;;\x07"
           " \x1b[3A\x1b[Kok \x9b31m red \u202eevil\u202c \r fake prompt$ ")


def _chat_output(*events: ev.Event) -> str:
    out = io.StringIO()
    view = ChatView(out)
    for event in events:
        view.show(event)
    view.end_stream()
    return out.getvalue()


def _no_control(text: str) -> None:
    bad = [hex(ord(c)) for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F
           or 0x202A <= ord(c) <= 0x202E]
    assert not bad, (bad, text)


def test_kali_mcp_server_80_escape_sequences_in_a_tool_result_never_reach_the_chat_terminal():
    """kali-mcp-server #80: a scanned target's ``Server`` header (ESC[2J clear screen, OSC 0 window title,
    OSC 8 hyperlink) came back verbatim in an MCP tool's text and reached the operator's terminal.
    Before: ``yiemagent chat`` printed the bytes raw. Now: the words stay, the sequences are gone.
    """
    agent_output = _chat_output(
        ev.MessageUpdateEvent(delta=HOSTILE, run_id="r", timestamp=0.0),
        ev.ErrorEvent(where="tool", message=HOSTILE, run_id="r", timestamp=0.0),
    )
    _no_control(agent_output)
    assert "PWNED" not in agent_output and "cm0gLXJmIH4=" not in agent_output and "http://evil" not in agent_output
    assert "Apache" in agent_output and "click" in agent_output and "fake prompt" in agent_output


def test_sentry_for_ai_343_an_osc_sequence_split_across_two_writes_is_not_completed():
    """getsentry/sentry-for-ai PR #343 review: an OSC 8 hyperlink split across two writes reached the
    terminal. Streamed deltas split anywhere; the first half's ESC is removed, so the rest is plain text.
    """
    out = _chat_output(ev.MessageUpdateEvent(delta="see \x1b", run_id="r", timestamp=0.0),
                       ev.MessageUpdateEvent(delta="]52;c;ZXZpbA==\x07 done", run_id="r", timestamp=0.0))
    _no_control(out)
    assert "\x1b" not in out and "done" in out


def test_hermes_agent_70527_bidi_overrides_and_c1_controls_are_removed_for_terminals():
    """NousResearch/hermes-agent #70527: tool output with bidi overrides and C1 controls; the terminal
    shows text in the order it was sent.
    """
    out = _chat_output(ev.MessageUpdateEvent(delta="abc\u202edcba\u2066x\u2069 \x9b2J \x9d0;t\x9c end",
                                             run_id="r", timestamp=0.0))
    _no_control(out)
    assert "dcba" in out and "end" in out and "0;t" not in out


def test_jonigl_mcp_client_for_ollama_270_saved_chat_file_cannot_drive_a_terminal(tmp_path):
    """jonigl/mcp-client-for-ollama PR #270 (strip terminal control characters from tool responses), for the
    file ``/save`` writes: ``cat chat.json`` must not drive the terminal. C0 controls were already written as
    ``\\u`` escapes by ``json``; before, C1 controls (8-bit CSI U+009B) were written raw. Now every one is
    an escape, and loading it back gives the same text (lossless).
    """
    hostile = "x\x9b2J\x1b]0;t\x07y"
    llm = ScriptedLLM([text_reply(hostile)])
    agent = Agent(llm)
    agent.ask("hi")
    state = agent.state_to_json()
    agent.shutdown()
    _no_control(state)
    again = Agent.from_state(state, llm)
    assert again.openai_messages()[-1]["content"] == hostile
    again.shutdown()


def _hostile_tool_agent(store: Any, text: str) -> Agent:
    @tool
    def list_files() -> str:
        """Lists files."""
        return text

    llm = ScriptedLLM([tool_call_reply("list_files", {}), text_reply("done")])
    return Agent(llm, tools=[list_files], store=store, conversation_id="c-surrogate")


def test_open_webui_27084_lone_surrogate_in_tool_result_is_stored(store_factory):
    """open-webui PR #27084 and simonw/llm #546: a file name from ``os.listdir`` holds a lone surrogate
    (``\\udcff`` from undecodable bytes). Before: the store's commit raised, the run ended ``error`` and the
    tool's result was lost after it ran (SQLite and PostgreSQL). Now: stored with U+FFFD, as the request
    guard sends it to the model; a new agent loads it.
    """
    name = os.fsdecode(b"report-\xff.txt")
    assert "\udcff" in name
    store = store_factory()
    try:
        agent = _hostile_tool_agent(store, f"files: {name}")
        answer = agent.ask("list them")
        agent.shutdown()
        assert answer["status"] == "completed", answer
        state = json.loads(store.load("c-surrogate").state)
        tool_text = json.dumps(state["history"], ensure_ascii=False)
        assert "report-\ufffd.txt" in tool_text
        again = Agent(ScriptedLLM([]), store=store_factory(), conversation_id="c-surrogate")
        assert any("report-\ufffd.txt" in json.dumps(m, ensure_ascii=False) for m in again.openai_messages())
        again.shutdown()
    finally:
        store.close()


def test_fertilizer_57_nan_and_surrogates_in_an_answer_stream_as_strict_json():
    """molecular-labs/fertilizer PR #57 (lone surrogates from ``json.loads`` of an API answer): the same text
    in an SSE stream. Before: ``json.dumps(..., ensure_ascii=False)`` wrote a string the WSGI server could not
    encode (and NaN as ``NaN``). Now every ``data:`` line is strict JSON, UTF-8 encodable.
    """
    answer = {"role": "assistant", "content": "bad \udcff name", "status": "completed", "score": float("nan")}
    chunks = list(sse_events([answer], heartbeat_seconds=None))
    for chunk in chunks:
        chunk.encode("utf-8")
        data = chunk.split("data: ", 1)[1].strip()
        decoded = json.loads(data, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert decoded["content"] == "bad \ufffd name" and decoded["score"] is None


def _failing_stdio(token: str) -> str:
    return json.dumps({"mcpServers": {"leaky": {
        "command": sys.executable,
        "args": ["-c", "import sys; print('auth failed for token', sys.argv[1], file=sys.stderr); sys.exit(3)",
                 "${LEAKY_API_TOKEN}"]}}})


@pytest.mark.slow
def test_codex_5524_a_var_secret_in_a_stdio_command_is_hidden_from_mcp_status_events_and_logs(caplog):
    """openai/codex #5524: ``/mcp`` showed the API key that the config took from the environment. Here the
    secret goes into a stdio server's arguments and the failing server prints it on stderr. Before: it
    reached ``mcp_unavailable`` (which the Flask example streams to browsers), ``mcp_status()`` and the log.
    Now each shows ``***``.
    """
    token = "sk-live-7f3a9b2c4d5e6f708192"
    config = parse_mcp_servers(json.loads(_failing_stdio(token)), environ={"LEAKY_API_TOKEN": token})
    client = config[0].client()
    agent = Agent(ScriptedLLM([text_reply("ok")]), mcp_servers=[client], mcp_required=False)
    try:
        with caplog.at_level(logging.DEBUG, logger="yiemagent"):
            answer = agent.ask("hi")
        shown = json.dumps(answer) + json.dumps(agent.mcp_status()) + repr(client) + repr(config) + caplog.text
        assert "auth failed" in shown  # the server's words are kept ...
        assert token not in shown  # ... its secret is not
        assert "***" in json.dumps(answer["mcp_unavailable"])
    finally:
        agent.shutdown()
        client.close()


def test_metabase_mcp_33_a_var_secret_in_a_url_path_is_hidden_from_reprs_and_errors():
    """jerichosequitin/metabase-mcp #33 (the API key in log lines). A ``${VAR}`` key expanded into a URL
    *path* (``display_url`` hides only passwords and query values): before, ``repr`` of the client, the
    connection error in ``mcp_status()`` and the answer's ``mcp_unavailable`` named it. Now ``***``.
    """
    key = "mk_9d8c7b6a5f4e3d2c1b0a"
    config = parse_mcp_servers({"mcpServers": {"meta": {"url": "http://127.0.0.1:9/${METABASE_API_KEY}/mcp"}}},
                               environ={"METABASE_API_KEY": key})
    client = config[0].client()
    agent = Agent(ScriptedLLM([text_reply("ok")]), mcp_servers=[client], mcp_required=False)
    try:
        answer = agent.ask("hi")
        shown = (json.dumps(answer) + json.dumps(agent.mcp_status()) + repr(client) + repr(client.transport)
                 + repr(config))
        assert answer.get("mcp_unavailable"), answer
        assert key not in shown and "***" in shown
    finally:
        agent.shutdown()
        client.close()


def test_known_secrets_and_log_forging_are_removed_from_yiemagent_log_lines():
    """CWE-117 log forging plus a registered credential: a peer's text with a line break cannot start a fake
    log line, and the secret is ``***``, for every yiemagent logger (child loggers too).
    """
    register_secrets(["tok_1234567890abcdef"])
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    log = logging.getLogger("yiemagent.mcp.bridge")
    log.addHandler(handler)
    try:
        log.warning("skipping MCP tool %r of %s: %s", "x", "srv",
                    "bad\nERROR admin logged in tok_1234567890abcdef \x1b[2J")
    finally:
        log.removeHandler(handler)
    line = stream.getvalue()
    assert line.count("\n") == 1 and "tok_1234567890abcdef" not in line and "\x1b" not in line, line


def test_mcp_requests_still_refuse_what_they_cannot_send_and_escape_c1():
    """The ``mcp`` rule: a C1 control is sent as an escape (same string for the server), a lone surrogate is
    refused (changing it would name another file).
    """
    from yiemagent.exceptions import MCPProtocolError
    from yiemagent.mcp.lines import encode_message

    line = encode_message({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": "\x9b"}})
    assert b"\\u009b" in line and json.loads(line)["params"]["a"] == "\x9b"
    with pytest.raises(MCPProtocolError):
        encode_message({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": "\udcff"}})


def test_mcp_client_repr_never_names_a_registered_secret():
    register_secrets(["pathsecret_abcdef123456"])
    client = MCPClient("http://127.0.0.1:9/pathsecret_abcdef123456/mcp")
    try:
        assert "pathsecret_abcdef123456" not in repr(client) + repr(client.transport)
    finally:
        client.close()


# ------------------------------------------------------------------ exceptions are a boundary (issue 15 trial)

EXC_SECRET = "sk-live-TRIALSECRET-abcdef123456"


@pytest.mark.slow
def test_matterbot_286_a_stdio_servers_stderr_echoing_its_env_token_is_scrubbed_from_the_one_line_error(
        monkeypatch):
    """uforia/MatterBot PR #286 (an exception's text carried the API key into a chat channel). Real
    stdio process: started with ``env: {MY_TOKEN: ${MY_TOKEN}}``, it prints the token on stderr and
    exits 3. Before: ``MCPServerConfig.client()`` raised ``MCPTransportError`` quoting the token in
    clear, on two lines. After: ``***`` in ``str``, ``repr``, ``args`` and ``.stderr_tail``; one line.
    """
    monkeypatch.setenv("MY_TOKEN", EXC_SECRET)
    script = ("import os, sys; sys.stderr.write('auth failed for ' + os.environ['MY_TOKEN'] + '\\nbye\\n'); "
              "sys.exit(3)")
    [config] = parse_mcp_servers({"mcpServers": {"s": {"command": sys.executable, "args": ["-c", script],
                                                       "env": {"MY_TOKEN": "${MY_TOKEN}"}}}})
    client = config.client()
    try:
        with pytest.raises(Exception) as caught:
            client.list_tools()
    finally:
        client.close()
    error = caught.value
    shown = [str(error), repr(error), repr(error.args), error.stderr_tail]
    assert all(EXC_SECRET not in text for text in shown), shown
    assert "\n" not in str(error)
    assert str(error).endswith("stderr ends with: auth failed for *** | bye"), str(error)
    assert "exited with code 3" in str(error) and error.exit_code == 3


def test_kindly_web_search_87_every_yiemagent_exception_hides_a_registered_secret_in_its_text():
    """Shelpuk-AI-Technology-Consulting/kindly-web-search-mcp-server PR #87 (a provider key returned to
    the agent in a tool error). Every exception class of ``yiemagent.exceptions``, built with a secret
    in its message (and in the text attributes peers fill: ``body``, ``stderr_tail``, a JSON-RPC
    ``message``), never shows it; a secret registered after the exception was made is hidden too.
    Before: the text held the secret for every class.
    """
    import yiemagent.exceptions as exceptions_module
    from yiemagent.exceptions import MCPProtocolError, MCPRPCError, MCPTransportError, YiemagentError
    from yiemagent.store import CorruptRowError
    from yiemagent.textpolicy import BOUNDARIES

    register_secrets([EXC_SECRET])
    assert BOUNDARIES["exception"].kind == "display"
    message = f"the server said: invalid key {EXC_SECRET}"
    classes = [c for c in vars(exceptions_module).values()
               if isinstance(c, type) and issubclass(c, YiemagentError) and c.__name__ != "MaxTurnsExceeded"]
    made: list[BaseException] = [c(message) for c in classes if not issubclass(c, MCPRPCError)]
    made += [MCPRPCError(-32000, message, {"key": EXC_SECRET}), CorruptRowError(message, conversation_id="c"),
             MCPTransportError("HTTP 401", body=message, stderr_tail=message), MCPProtocolError("bad", body=message)]
    assert len(made) > 20
    for error in made:
        texts = [str(error), repr(error), repr(error.args)]
        texts += [v for v in vars(error).values() if isinstance(v, str)]
        assert all(EXC_SECRET not in text for text in texts), (type(error).__name__, texts)
        assert "***" in " ".join(texts)
    late = YiemagentError("made before its secret: sk-later-0123456789abcdef")
    register_secrets(["sk-later-0123456789abcdef"])
    assert str(late) == "made before its secret: ***"


def test_a_traceback_logged_with_exc_info_quotes_no_secret_and_forges_no_line():
    """The log boundary covers the traceback too: ``logger.warning(..., exc_info=True)`` of an exception whose
    message holds a registered secret (a served MCP tool's ``RuntimeError("... password sk-...")``, found by
    tests/mcp/server/test_hostile_clients.py) printed it in the traceback, where the message rule never looked.
    """
    register_secrets(["tok_traceback_0123456789"])
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    log = logging.getLogger("yiemagent.mcp.server")
    log.addHandler(handler)
    try:
        try:
            raise RuntimeError("cannot reach db with password tok_traceback_0123456789\nFAKE LOG LINE \x1b[2J")
        except RuntimeError:
            log.warning("served tool %s raised %s", "leaky", "RuntimeError", exc_info=True)
    finally:
        log.removeHandler(handler)
    text = stream.getvalue()
    assert "Traceback" in text and "RuntimeError: cannot reach db" in text
    assert "tok_traceback_0123456789" not in text and "\x1b" not in text
    assert not any(line.startswith("FAKE LOG LINE") for line in text.splitlines())
