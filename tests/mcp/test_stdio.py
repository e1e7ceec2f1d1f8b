"""The stdio transport against real servers: npm server-everything and server-filesystem, PyPI
mcp-server-time, and yiemagent's example server; tests/servers/stdio_quirks.py only for shapes no
real server produces (each such test says why).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, run_in_thread, text_of
from yiemagent import Agent
from yiemagent.exceptions import ConfigError, MCPTimeoutError, MCPTransportError
from yiemagent.mcp import MCPClient, StdioTransport, stdio_process
from yiemagent.mcp import stdio as stdio_module
from yiemagent.mcp.jsonrpc import make_notification, make_request
from yiemagent.mcp.stdio import DEFAULT_INHERITED_ENV_VARS, parse_line
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply

QUIRKS = [PYTHON, str(SERVERS / "stdio_quirks.py")]
NON_ASCII = "héllo ✓ 日本語 🎉 — naïve"
C_LOCALE = {"LC_ALL": "C", "LANG": "C"}



# --------------------------------------------------------------------------- npm server-everything


@pytest.mark.node
def test_unrequested_tools_list_changed_sets_the_flag_and_the_agent_refresh_reports_the_tools(
    everything_stdio, stdio_client
):
    """Server-everything sends ``notifications/tools/list_changed`` unasked right after ``initialized``:
    the reader routes it between requests, the flag is set, and the Agent's refresh emits ``tools_changed``.
    """
    client = stdio_client(everything_stdio)
    client.connect()
    assert client.tools_changed.wait(5)
    assert client.protocol_version == "2025-11-25"
    assert client.server_info["name"] == "mcp-servers/everything"
    recorder = EventRecorder()
    agent = Agent(ScriptedLLM([text_reply("ok")]), mcp_servers=[client], event_sink=recorder)
    try:
        assert agent.ask("hi", timeout_seconds=10)["content"] == "ok"
    finally:
        agent.shutdown()
    (changed,) = recorder.of_type("tools_changed")
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= set(changed.added)
    assert not client.tools_changed.is_set()  # the refresh re-listed and cleared it
    assert agent.mcp.refresh() == ([], [])  # nothing new: no second listing


@pytest.mark.node
def test_non_ascii_round_trips_through_a_server_running_in_the_c_locale(everything_stdio, stdio_client):
    """yiemagent-defined: pipes are UTF-8 bytes on both sides whatever the locale of either process."""
    client = stdio_client(everything_stdio, env=C_LOCALE)
    assert client.call_tool("echo", {"message": NON_ASCII}) == {
        "content": [{"type": "text", "text": f"Echo: {NON_ASCII}"}], "isError": False,
    }


@pytest.mark.node
def test_long_running_operation_reports_three_progress_notifications_before_its_result(
    everything_stdio, stdio_client
):
    """Spec (Progress): over stdio the 3 ``notifications/progress`` lines reach the callback, in order and
    before the result is returned.
    """
    client = stdio_client(everything_stdio)
    seen: list[dict[str, Any]] = []
    result = client.call_tool("trigger-long-running-operation", {"duration": 0.3, "steps": 3},
                              progress_callback=seen.append)
    assert "Long running operation completed" in text_of(result)
    assert [(p["progress"], p["total"]) for p in seen] == [(1, 3), (2, 3), (3, 3)]
    assert len({p["progressToken"] for p in seen}) == 1


@pytest.mark.node
def test_a_timeout_raises_mcp_timeout_error_and_the_client_keeps_working(everything_stdio, stdio_client):
    """yiemagent-defined: no response in time -> ``MCPTimeoutError`` (a ``TimeoutError``); the process lives
    on and the next call is answered with its own response.
    """
    client = stdio_client(everything_stdio)
    client.connect()
    started = time.monotonic()
    with pytest.raises(MCPTimeoutError) as caught:
        client.call_tool("trigger-long-running-operation", {"duration": 0.4, "steps": 2}, timeout_seconds=0.15)
    assert time.monotonic() - started < 1.5
    assert isinstance(caught.value, TimeoutError)
    assert client.transport.process.poll() is None
    assert text_of(client.call_tool("echo", {"message": "after"})) == "Echo: after"


@pytest.mark.node
def test_cancel_fails_the_waiting_call_at_once_and_the_process_keeps_running(everything_stdio, stdio_client):
    """yiemagent-defined (``Agent.abort()`` relies on it): ``cancel_in_flight`` makes a blocked ``tools/call``
    raise ``MCPTransportError`` now, not at its timeout; the same process then serves the next call.
    """
    client = stdio_client(everything_stdio, timeout_seconds=30)
    first_progress = threading.Event()
    thread, out = run_in_thread(client.call_tool, "trigger-long-running-operation", {"duration": 0.5, "steps": 10},
                                progress_callback=lambda params: first_progress.set())
    assert first_progress.wait(5)
    started = time.monotonic()
    assert len(client.cancel_in_flight()) == 1
    thread.join(5)
    assert time.monotonic() - started < 1
    (error,) = out
    assert type(error) is MCPTransportError
    assert client.transport.process.poll() is None
    assert text_of(client.call_tool("echo", {"message": "still here"})) == "Echo: still here"


@pytest.mark.node
def test_the_server_sees_only_allow_listed_variables_and_those_passed(everything_stdio, stdio_client, monkeypatch):
    """yiemagent-defined, as the MCP Python SDK: HOME, LOGNAME, PATH, SHELL, TERM, USER plus ``env``; a secret in
    our environment does not reach the server (read back with server-everything's ``get-env``).
    """
    monkeypatch.setenv("YIEMAGENT_TEST_SECRET", "must-not-leak")
    client = stdio_client(everything_stdio, env={"YIEMAGENT_TEST_PASSED": "given ✓"})
    seen = json.loads(text_of(client.call_tool("get-env", {})))
    assert "YIEMAGENT_TEST_SECRET" not in seen
    assert seen["YIEMAGENT_TEST_PASSED"] == "given ✓"
    assert seen["PATH"] == os.environ["PATH"]
    assert set(seen) <= {*DEFAULT_INHERITED_ENV_VARS, "YIEMAGENT_TEST_PASSED"}


@pytest.mark.node
def test_concurrent_calls_from_many_threads_each_get_their_own_response(everything_stdio, stdio_client):
    """yiemagent-defined: sends from several threads share one pipe; responses are matched by ``id``."""
    client = stdio_client(everything_stdio)
    client.connect()
    runs = [run_in_thread(client.call_tool, "echo", {"message": f"m{i}"}) for i in range(8)]
    for i, (thread, out) in enumerate(runs):
        thread.join(5)
        assert text_of(out[0]) == f"Echo: m{i}"


@pytest.mark.node
def test_close_stops_the_process_and_later_requests_fail_clearly(everything_stdio, stdio_client):
    """Spec (Lifecycle, stdio shutdown): closing stdin ends a well-behaved server at once (exit code 0);
    afterwards requests raise ``MCPTransportError``.
    """
    client = stdio_client(everything_stdio)
    client.list_tools()
    process = client.transport.process
    started = time.monotonic()
    client.close()
    assert process.poll() == 0
    assert time.monotonic() - started < 2
    with pytest.raises(MCPTransportError):
        client.transport.send(make_request("ping", None, 999), timeout_seconds=1)


# --------------------------------------------------------------------------- npm server-filesystem


@pytest.mark.node
def test_filesystem_server_keeps_non_ascii_names_and_text_and_refuses_paths_outside(
    filesystem_stdio, stdio_client, tmp_path
):
    """server-filesystem over stdio: a UTF-8 file name and content round-trip; a path outside the allowed dir
    is a result with ``isError: true`` (data, not an exception); its stderr banner is captured.
    """
    client = stdio_client([*filesystem_stdio, str(tmp_path)])
    path = tmp_path / "café ☕.txt"
    written = client.call_tool("write_file", {"path": str(path), "content": NON_ASCII})
    assert written["isError"] is False
    assert path.read_text(encoding="utf-8") == NON_ASCII
    assert text_of(client.call_tool("read_text_file", {"path": str(path)})) == NON_ASCII
    outside = client.call_tool("read_text_file", {"path": str(tmp_path.parent / "elsewhere.txt")})
    assert outside["isError"] is True
    assert "outside allowed directories" in text_of(outside)
    assert "Secure MCP Filesystem Server running on stdio" in client.transport.stderr_tail


@pytest.mark.node
def test_a_server_that_exits_at_start_fails_the_handshake_fast_with_its_exit_code_and_stderr(
    filesystem_stdio, stdio_client, tmp_path
):
    """server-filesystem exits 1 when no allowed dir exists: the handshake raises ``MCPTransportError`` at once
    with ``exit_code`` and the server's own explanation from stderr.
    """
    client = stdio_client([*filesystem_stdio, str(tmp_path / "missing")], timeout_seconds=30)
    started = time.monotonic()
    with pytest.raises(MCPTransportError) as caught:
        client.connect()
    assert time.monotonic() - started < 5
    assert type(caught.value) is MCPTransportError
    assert caught.value.exit_code == 1
    assert "None of the specified directories are accessible" in caught.value.stderr_tail
    assert "None of the specified directories are accessible" in str(caught.value)


# --------------------------------------------------------------------------- Python servers


def test_mcp_server_time_answers_get_current_time_over_stdio(stdio_client):
    """PyPI mcp-server-time (official Python SDK server) over stdio: UTC time with structured content."""
    client = stdio_client([PYTHON, "-m", "mcp_server_time", "--local-timezone", "UTC"])
    assert {t["name"] for t in client.list_tools()} == {"get_current_time", "convert_time"}
    result = client.call_tool("get_current_time", {"timezone": "UTC"})
    assert result["isError"] is False
    assert result["structuredContent"]["timezone"] == "UTC"
    assert result["structuredContent"]["datetime"].endswith("+00:00")


def test_example_weather_server_over_stdio_keeps_the_degree_sign_in_the_c_locale(stdio_client):
    """The example server of yiemagent (mcp SDK) with ``--transport stdio`` in the C locale: ``°`` arrives intact."""
    client = stdio_client([PYTHON, "-m", "yiemagent.examples.weather_server", "--transport", "stdio"], env=C_LOCALE)
    result = client.call_tool("get_weather", {"city": "Kyiv"})
    assert text_of(result) == "Weather in Kyiv: Snow, -3 °C (demo data)."


# --------------------------------------------------------------------------- quirk server (no real server does this)


def test_junk_lines_on_stdout_are_logged_and_skipped(stdio_client, caplog):
    """Needs the quirk server: real servers keep stdout clean, but wrappers print banners and broken lines.
    Non-JSON, non-UTF-8 and non-object lines are skipped with a warning; CRLF endings are accepted.
    """
    caplog.set_level(logging.WARNING, logger="yiemagent.mcp.stdio")
    client = stdio_client([*QUIRKS, "--junk"])
    assert {"echo", "crash", "hang", "slow", "ping_client"} <= {t["name"] for t in client.list_tools()}
    assert text_of(client.call_tool("echo", {"text": NON_ASCII})) == NON_ASCII
    skipped = [r for r in caplog.records if "skipped a stdout line" in r.getMessage()]
    assert len(skipped) >= 3 * 3  # three junk lines before each of the three messages


def test_parse_line_reads_one_message_per_line_and_rejects_what_is_not_a_message():
    """yiemagent-defined framing: blank -> nothing; CRLF accepted; non-JSON, non-UTF-8, scalars -> ValueError."""
    assert parse_line(b"\r\n") == []
    assert parse_line(b'{"jsonrpc":"2.0","method":"x"}\r\n') == [{"jsonrpc": "2.0", "method": "x"}]
    assert parse_line('{"t":"日本"}\n'.encode()) == [{"t": "日本"}]
    for bad in (b"Starting server...\n", b"\xff\xfe\n", b"42\n", b"[]\n"):
        with pytest.raises(ValueError):
            parse_line(bad)


def test_process_exit_mid_call_fails_every_waiting_call_at_once_with_exit_code_and_stderr(stdio_client):
    """Needs the quirk server (a real server does not crash on demand): two calls wait, the process dies;
    both raise ``MCPTransportError`` with ``exit_code`` and the stderr tail, long before their 30 s timeout.
    """
    client = stdio_client(QUIRKS, timeout_seconds=30)
    waiting = threading.Event()
    thread, out = run_in_thread(client.call_tool, "hang", {}, progress_callback=lambda params: waiting.set())
    assert waiting.wait(5)
    started = time.monotonic()
    with pytest.raises(MCPTransportError) as caught:
        client.call_tool("crash", {"code": 3, "message": "fatal: database is locked ✗"})
    thread.join(5)
    assert time.monotonic() - started < 3
    (other,) = out
    for error in (caught.value, other):
        assert type(error) is MCPTransportError
        assert error.exit_code == 3
        assert "fatal: database is locked ✗" in error.stderr_tail
    assert "exited with code 3" in str(caught.value)
    process = client.transport.process
    with pytest.raises(MCPTransportError) as later:  # later calls fail at once too: no restart
        client.call_tool("echo", {"text": "x"})
    assert later.value.exit_code == 3
    assert client.transport.process is process and process.poll() == 3


def test_a_late_response_to_a_timed_out_request_is_discarded_not_given_to_the_next(stdio_client, caplog):
    """Needs the quirk server: it answers ``slow`` after the timeout and ignores ``notifications/cancelled``
    (server-everything too, but the quirk server's ordering makes the check deterministic).
    """
    caplog.set_level(logging.INFO, logger="yiemagent.mcp.stdio")
    client = stdio_client(QUIRKS)
    client.connect()
    with pytest.raises(MCPTimeoutError):
        client.call_tool("slow", {"seconds": 0.4}, timeout_seconds=0.1)
    assert text_of(client.call_tool("echo", {"text": "mine"})) == "mine"
    assert any("discarded a late response" in r.getMessage() for r in caplog.records)


def test_a_ping_from_the_server_is_answered_while_a_call_waits(stdio_client):
    """Spec (Utilities, Ping): the client must answer a server's ``ping`` with ``{}``. Needs the quirk server:
    no real server here pings mid-call.
    """
    client = stdio_client(QUIRKS)
    reply = json.loads(text_of(client.call_tool("ping_client", {})))
    assert reply == {"jsonrpc": "2.0", "id": "server-ping-1", "result": {}}


@pytest.mark.parametrize(("flag", "signum"), [("--ignore-eof", signal.SIGTERM), ("--ignore-term", signal.SIGKILL)])
def test_close_escalates_to_sigterm_then_sigkill_for_servers_that_do_not_exit(
    stdio_client, monkeypatch, flag, signum
):
    """Spec (Lifecycle, stdio shutdown): close stdin, wait, SIGTERM, wait, SIGKILL. Needs the quirk server: real
    servers exit on EOF. The 2 s waits are shortened so the test is fast.
    """
    monkeypatch.setattr(stdio_module, "SHUTDOWN_WAIT_SECONDS", 0.15)
    monkeypatch.setattr(stdio_process, "SHUTDOWN_WAIT_SECONDS", 0.15)
    client = stdio_client([*QUIRKS, flag])
    client.connect()
    process = client.transport.process
    client.close()
    assert process.poll() == -signum


# --------------------------------------------------------------------------- transport on its own


def test_a_command_that_does_not_exist_fails_at_the_first_request(stdio_client):
    """yiemagent-defined: the process starts lazily; a missing executable is an ``MCPTransportError``."""
    client = stdio_client(["yiemagent-no-such-server-xyz"])
    assert client.transport.process is None
    with pytest.raises(MCPTransportError) as caught:
        client.connect()
    assert "yiemagent-no-such-server-xyz" in str(caught.value)
    assert isinstance(caught.value.__cause__, FileNotFoundError)


@pytest.mark.slow
def test_transport_send_returns_none_for_a_notification_and_refuses_a_reused_id():
    """yiemagent-defined: a notification returns once written; an id still pending or abandoned is refused
    (spec: ids are unique per session), so a late response can never match a later request.
    """
    with StdioTransport(QUIRKS[0], QUIRKS[1:], timeout_seconds=30) as transport:  # the first send waits for the start
        assert transport.send(make_request("ping", None, 1)) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert transport.send(make_notification("notifications/initialized")) is None
        with pytest.raises(MCPTimeoutError):
            transport.send(make_request("tools/call", {"name": "hang", "arguments": {}}, 2), timeout_seconds=0.05)
        with pytest.raises(ConfigError):
            transport.send(make_request("ping", None, 2))
        process = transport.process
    assert process.poll() == 0


def test_mcp_client_stdio_builds_an_unstarted_client_named_after_the_command():
    """``MCPClient.stdio`` spawns nothing until the first request; the name defaults to the command line."""
    client = MCPClient.stdio(sys.executable, ["-m", "mcp_server_time"])
    try:
        assert isinstance(client.transport, StdioTransport)
        assert client.transport.process is None
        assert client.name.endswith("-m mcp_server_time")
    finally:
        client.close()
    assert client.transport.process is None


@pytest.mark.slow
def test_invoke_351_a_command_that_exits_at_once_gives_one_clear_error_and_no_thread_traceback(monkeypatch):
    """pyinvoke/invoke #351 (a subprocess that exits before its stdin is written: a race between the IO
    threads). A real command that is not an MCP server and exits at once (``true``), 20 times. Before:
    in ~5 of 20 the stdout reader joined the not yet started stderr reader (``RuntimeError: cannot join
    thread before it is started`` on the thread) and the error said "Broken pipe" instead. After: no
    thread exception, and every error is "the server process ... exited with code 0".
    """
    crashed: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(f"{args.thread.name}: {args.exc_value}"))
    messages = set()
    for _ in range(20):
        client = MCPClient.stdio("true", [], timeout_seconds=10)
        try:
            with pytest.raises(MCPTransportError) as caught:
                client.list_tools()
        finally:
            client.close()
        messages.add(str(caught.value))
        assert caught.value.exit_code == 0
    assert crashed == []
    assert messages == {"the server process true exited with code 0"}


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX process groups")
def test_issue_27_a_script_that_ends_without_shutdown_leaves_no_stdio_server_running(tmp_path):
    """Issue 27: a script that ended without ``shutdown()`` left its stdio MCP servers running. Here the server
    keeps running after its stdin closes (``stdio_quirks.py --ignore-eof``: a server that never notices EOF,
    which a well-behaved real server does not show); the script exits and the server is gone within seconds.
    """
    script = tmp_path / "script.py"
    script.write_text(
        "import sys\n"
        "from yiemagent import Agent, MCPClient\n"
        "from yiemagent.testing import text_reply\n"
        f"client = MCPClient.stdio(sys.executable, [{str(SERVERS / 'stdio_quirks.py')!r}, '--ignore-eof'])\n"
        "agent = Agent(lambda messages, tools: text_reply('ok'), mcp_servers=[client])\n"
        "print(agent.ask('hi')['status'], client.transport.process.pid, flush=True)\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    status, pids = done.stdout.split(" ", 1)
    assert status == "completed", done.stdout + done.stderr
    pid = int(pids)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    raise AssertionError(f"the server {pid} outlived the script")


@pytest.mark.slow
def test_just_every_code_611_a_server_answering_2024_11_05_is_accepted_as_the_sdks_accept_it():
    """just-every/code #611 (and issue 27): a server answering ``2024-11-05`` was refused; the official SDKs
    still accept it. The real SDK server, offered 2024-11-05, answers with it; tools list and call.
    """
    from yiemagent import MCPClient

    client = MCPClient.stdio(PYTHON, [str(SERVERS / "sdk_stdio_server.py")], protocol_version="2024-11-05")
    with client:
        assert client.protocol_version == "2024-11-05"
        assert "echo" in [t["name"] for t in client.list_tools()]
        assert client.call_tool("echo", {"text": "hi"})["content"][0]["text"] == "hi"
