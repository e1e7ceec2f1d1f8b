"""Issue 27 point 2: a retry's wait is part of the request: its deadline, ``cancel()`` and the run's abort end it,
and a connection cut under the pool is never used again. Real HTTP: tests/servers/scripted_openai_server.py
(``--status 503``, ``--status-first``, ``--retry-after``), ``openai_chat`` and ``CancellableSession``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, wait_for_port
from yiemagent import Agent, LLMTimeoutError, openai_chat
from yiemagent._internal.http import CancellableSession
from yiemagent.loop import events as ev

pytestmark = pytest.mark.slow  # starts model servers

USER = [{"role": "user", "content": "hello"}]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """``start(*flags) -> base_url`` of a scripted model server started for this test."""
    processes: list[Any] = []

    def start(*flags: str) -> str:
        log = tmp_path / f"requests{len(processes)}.jsonl"
        log.write_text("", encoding="utf-8")
        port = free_port()
        process = start_process([PYTHON, str(SERVERS / "scripted_openai_server.py"), "--port", str(port),
                                 "--log", str(log), *flags])
        processes.append(process)
        wait_for_port(port, timeout_seconds=30, process=process)
        return f"http://127.0.0.1:{port}/v1"

    try:
        yield start
    finally:
        for process in processes:
            stop_process(process)


def test_urllib3_1878_a_socket_cut_while_pooled_is_never_reused(server: Callable[..., str]) -> None:
    """urllib3 #1878 "ValueError: file descriptor cannot be a negative integer (-1)": a pooled connection
    whose socket was closed. A deadline's watchdog shut the idle socket of a request that had ended (a retry's
    wait ran past it); the next request on the session raised that ValueError. Now it connects afresh.
    """
    url = server() + "/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "[empty]"}]}
    session = CancellableSession()
    with session.deadline(time.monotonic() + 0.5):
        assert session.post(url, json=body, timeout=30).status_code == 200  # back in the pool, socket armed
        time.sleep(1.0)  # the watchdog shuts it there
    assert session.post(url, json=body, timeout=30).status_code == 200
    session.close()


def test_issue_27_a_deadline_cutting_a_retried_503_leaves_the_next_input_working(server: Callable[..., str]) -> None:
    """Issue 27: after a deadline cut a retried 503 (``Retry-After: 3``, timeout 1.5 s) the call slept 3 s
    past its deadline, and the next input failed with ``ValueError: file descriptor cannot be a negative
    integer (-1)``. Now the wait that would pass the deadline is not begun and the next call answers.
    """
    llm = openai_chat(server("--status", "503", "--status-first", "1", "--retry-after", "3"), "m",
                      timeout_seconds=1.5)
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match="past the deadline"):
        llm(USER, [])
    assert time.monotonic() - started < 1.5  # not the 3 s wait
    assert llm(USER, [])["choices"][0]["message"]["content"] == "You said: hello"
    assert llm(USER, [])["choices"][0]["message"]["content"] == "You said: hello"


def test_opencode_46461_a_sub_agent_waiting_out_retry_after_ends_at_the_parents_deadline(
        server: Callable[..., str]) -> None:
    """anomalyco/opencode #46461 "one stalled child hangs the parent indefinitely" (its model backend stopped
    answering mid-call; #44931: on repeated upstream 429s). A sub-agent behind ``as_tool`` whose model answers
    503 with ``Retry-After: 8`` slept the wait out after the parent's ``ask(timeout_seconds=1)``: its run
    ended ~8 s after the deadline. The abort now reaches the retry wait of the sub-run's model call.
    """
    ends: list[tuple[float, str]] = []
    started = time.monotonic()

    def sink(event: ev.Event) -> None:
        if isinstance(event, ev.AgentEndEvent):
            ends.append((time.monotonic() - started, event.status))

    sub = Agent(openai_chat(server("--status", "503", "--retry-after", "8"), "m", timeout_seconds=60),
                name="sub", event_sink=sink)

    def parent_llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        arguments = json.dumps({"input": "x"})
        call = {"id": "c1", "type": "function", "function": {"name": "ask_sub", "arguments": arguments}}
        return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]},
                             "finish_reason": "tool_calls"}]}

    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Asks the sub-agent.")], name="parent")
    try:
        with pytest.raises(TimeoutError):
            parent.ask("go", timeout_seconds=1.0)
        deadline = time.monotonic() + 6.0
        while not ends and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ends and ends[0][1] == "aborted", ends
        assert ends[0][0] < 1.0 + 1.5, ends  # the parent's deadline plus a small bound, not the 8 s wait
    finally:
        parent.shutdown()
        sub.shutdown()
