"""``fallback_llm``: the next model answers when a provider is down, never after a valid reply or a bad request.

Real HTTP servers: tests/servers/scripted_openai_server.py, one started with ``--status 503`` (or 429, 500,
400, 401) standing for a provider that is down or refuses, one healthy (``--model backup``); the
``llm_call``s are yiemagent's own ``openai_chat``. Each server logs every request it got, so a test
can tell which model was asked.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, wait_for_port
from yiemagent import Agent, LLMConnectionError, LLMError, fallback_llm, openai_chat
from yiemagent.loop.events import FallbackEvent, report
from yiemagent.models.fallback import provider_down

USER = [{"role": "user", "content": "hello there"}]

Server = tuple[str, Path]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Server]]:
    """``start(status=0, model="scripted", in_stream=False, first=0, retry_after="0") -> (base_url, request log)``;
    one server per set (``first``: only the first N requests get ``status``).
    """
    started: dict[tuple[int, str, bool, int, str], tuple[Server, Any]] = {}

    def start(status: int = 0, model: str = "scripted", in_stream: bool = False, first: int = 0,
              retry_after: str = "0") -> Server:
        key = (status, model, in_stream, first, retry_after)
        if key not in started:
            log = tmp_path_factory.mktemp("scripted") / "requests.jsonl"
            log.write_text("", encoding="utf-8")
            port = free_port()
            process = start_process([PYTHON, str(SERVERS / "scripted_openai_server.py"), "--port", str(port),
                                     "--log", str(log), "--status", str(status), "--model", model,
                                     "--status-first", str(first), "--retry-after", retry_after,
                                     *(["--status-in-stream"] if in_stream else [])])
            wait_for_port(port, timeout_seconds=20, process=process)
            started[key] = ((f"http://127.0.0.1:{port}/v1", log), process)
        return started[key][0]

    try:
        yield start
    finally:
        for _, process in started.values():
            stop_process(process)


def seen(log: Path) -> int:
    """Requests the server answered so far."""
    return len([line for line in log.read_text(encoding="utf-8").splitlines() if line.strip()])


def text_of(reply: dict[str, Any]) -> Any:
    return reply["choices"][0]["message"]["content"]


@pytest.mark.parametrize("status", [503, 429, 500])
def test_provider_down_status_falls_back_to_the_next_model(servers: Callable[..., Server], status: int) -> None:
    down_url, down_log = servers(status=status)
    up_url, up_log = servers(model="backup")
    before_down, before_up = seen(down_log), seen(up_log)
    failures: list[tuple[Any, BaseException, Any]] = []
    primary, backup = openai_chat(down_url, "primary", timeout_seconds=10), openai_chat(up_url, "backup")
    llm = fallback_llm(primary, backup, on_fallback=lambda *a: failures.append(a))
    reply = llm(USER, [])
    assert text_of(reply) == "You said: hello there"
    assert reply["model"] == "backup"
    assert seen(down_log) > before_down and seen(up_log) == before_up + 1
    assert len(failures) == 1 and failures[0][0] is primary and failures[0][2] is backup
    assert isinstance(failures[0][1], LLMError) and failures[0][1].status_code == status


def test_connection_refused_falls_back(servers: Callable[..., Server]) -> None:
    up_url, _ = servers(model="backup")
    dead = openai_chat(f"http://127.0.0.1:{free_port()}/v1", "primary", timeout_seconds=10)
    with pytest.raises(LLMConnectionError):
        dead(USER, [])
    assert text_of(fallback_llm(dead, openai_chat(up_url, "backup"))(USER, [])) == "You said: hello there"


@pytest.mark.parametrize("status", [400, 401])
def test_bad_request_or_bad_key_is_raised_not_fallen_back(servers: Callable[..., Server], status: int) -> None:
    bad_url, _ = servers(status=status)
    up_url, up_log = servers(model="backup")
    before = seen(up_log)
    llm = fallback_llm(openai_chat(bad_url, "primary"), openai_chat(up_url, "backup"))
    with pytest.raises(LLMError) as raised:
        llm(USER, [])
    assert raised.value.status_code == status
    assert seen(up_log) == before  # the backup was never asked
    assert not provider_down(raised.value)


def test_valid_empty_reply_is_returned_never_retried(servers: Callable[..., Server]) -> None:
    """A valid reply whatever its content: no text, no calls, ``finish_reason: "stop"``."""
    first_url, first_log = servers(model="first")
    up_url, up_log = servers(model="backup")
    before_first, before_up = seen(first_log), seen(up_log)
    reply = fallback_llm(openai_chat(first_url, "first"), openai_chat(up_url, "backup"))(
        [{"role": "user", "content": "[empty]"}], [])
    assert text_of(reply) is None and reply["choices"][0]["finish_reason"] == "stop"
    assert reply["model"] == "first"
    assert seen(first_log) == before_first + 1 and seen(up_log) == before_up


def test_abort_stops_the_fallback(servers: Callable[..., Server]) -> None:
    down_url, _ = servers(status=503)
    up_url, up_log = servers(model="backup")
    before = seen(up_log)
    abort = threading.Event()
    primary = openai_chat(down_url, "primary", timeout_seconds=10)

    def aborting_primary(messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                         abort_event: threading.Event | None = None) -> dict[str, Any]:
        try:
            return primary(messages, tools, abort_event=abort_event)
        finally:
            abort.set()  # the run was aborted while the first provider was failing

    llm = fallback_llm(aborting_primary, openai_chat(up_url, "backup"))
    with pytest.raises(LLMError) as raised:
        llm(USER, [], abort_event=abort)
    assert raised.value.status_code == 503
    assert seen(up_log) == before


def test_streaming_through_the_fallback(servers: Callable[..., Server]) -> None:
    down_url, _ = servers(status=503)
    up_url, _ = servers(model="backup")
    deltas: list[tuple[str, str]] = []
    llm = fallback_llm(openai_chat(down_url, "primary", stream=True, timeout_seconds=10),
                       openai_chat(up_url, "backup", stream=True))
    reply = llm(USER, [], on_delta=lambda kind, delta, **_: deltas.append((kind, delta)))
    assert text_of(reply) == "You said: hello there"
    assert "".join(d for k, d in deltas if k == "text") == "You said: hello there"
    assert reply["model"] == "backup"


def test_agent_run_first_model_down_answers_from_the_second(servers: Callable[..., Server],
                                                            caplog: pytest.LogCaptureFixture) -> None:
    down_url, _ = servers(status=503)
    up_url, _ = servers(model="backup")
    events: list[Any] = []
    llm = fallback_llm(openai_chat(down_url, "primary", stream=True, timeout_seconds=10),
                       openai_chat(up_url, "backup", stream=True))
    agent = Agent(llm, event_sink=events.append)
    with caplog.at_level(logging.WARNING, logger="yiemagent.models.fallback"):
        answer = agent.ask("hello there", timeout_seconds=30)
    assert answer["content"] == "You said: hello there" and answer["status"] == "completed"
    assert any(getattr(e, "type", "") == "message_update" for e in events)
    ends = [e.message for e in events if e.type == "message_end" and getattr(e.message, "role", "") == "assistant"]
    assert [m.model for m in ends] == ["backup"]  # the event names the model that answered
    assert agent.history[-1].model == "backup"
    assert any("primary failed" in r.getMessage() and "backup" in r.getMessage() and "503" in r.getMessage()
               for r in caplog.records)


def test_harper_1537_primary_error_is_surfaced_when_the_chain_fails(servers: Callable[..., Server]) -> None:
    """HarperFast/harper #1537 (and Helicone PR #4254's review): a chain that fails must not hide the
    first model's error behind the last one's. Here the primary is down (503) and the backup refuses
    the request (400): the 400 is raised (a bad request is not fallen back past) and names the 503.
    """
    down_url, _ = servers(status=503)
    bad_url, _ = servers(status=400)
    with pytest.raises(LLMError) as raised:
        fallback_llm(openai_chat(down_url, "primary", timeout_seconds=10), openai_chat(bad_url, "backup"))(USER, [])
    assert raised.value.status_code == 400
    assert "primary" in str(raised.value) and "503" in str(raised.value)


def test_harper_1537_deterministic_error_does_not_walk_the_chain(servers: Callable[..., Server]) -> None:
    """HarperFast/harper #1537: an input/validation error fails identically on every candidate, so the
    chain stops at once (openclaw PR #9427 went the other way, falling back on every 4xx).
    """
    bad_url, bad_log = servers(status=400)
    up_url, up_log = servers(model="backup")
    before_bad, before_up = seen(bad_log), seen(up_log)
    started = time.monotonic()
    with pytest.raises(LLMError):
        fallback_llm(openai_chat(bad_url, "primary"), openai_chat(up_url, "backup"), openai_chat(up_url, "c"))(
            USER, [])
    assert seen(bad_log) == before_bad + 1 and seen(up_log) == before_up
    assert time.monotonic() - started < 5


def test_agentskit_1007_leading_stream_error_event_falls_back(servers: Callable[..., Server]) -> None:
    """AgentsKit-io/agentskit PR #1007: OpenRouter reports a rate limit (or a stale model) as a first SSE
    ``error`` event after HTTP 200, so a fallback chain that only looks at HTTP statuses never moves on.
    ``openai_chat`` gives such a leading event's ``error.code`` as ``status_code``: 429 falls back.
    """
    limited_url, limited_log = servers(status=429, in_stream=True)
    up_url, _ = servers(model="backup")
    before = seen(limited_log)
    primary = openai_chat(limited_url, "primary", stream=True, timeout_seconds=10)
    with pytest.raises(LLMError) as raised:
        primary(USER, [])
    assert raised.value.status_code == 429 and seen(limited_log) == before + 1
    reply = fallback_llm(primary, openai_chat(up_url, "backup", stream=True))(USER, [])
    assert text_of(reply) == "You said: hello there" and reply["model"] == "backup"


def test_agentskit_1007_leading_stream_error_400_is_raised(servers: Callable[..., Server]) -> None:
    """The same leading error event with a client error (400) is raised, not fallen back."""
    bad_url, _ = servers(status=400, in_stream=True)
    up_url, up_log = servers(model="backup")
    before = seen(up_log)
    with pytest.raises(LLMError) as raised:
        fallback_llm(openai_chat(bad_url, "primary", stream=True), openai_chat(up_url, "backup", stream=True))(
            USER, [])
    assert raised.value.status_code == 400 and seen(up_log) == before


def test_openai_sdk_connection_refused_falls_back(servers: Callable[..., Server]) -> None:
    """The ``openai`` SDK adapter: its ``APIConnectionError`` becomes ``LLMConnectionError``, so it falls back."""
    openai = pytest.importorskip("openai")
    from yiemagent import openai_client_chat

    up_url, _ = servers(model="backup")
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{free_port()}/v1", api_key="none", max_retries=0, timeout=5)
    dead = openai_client_chat(client, "primary")
    with pytest.raises(LLMConnectionError, match="APIConnectionError"):
        dead(USER, [])
    assert text_of(fallback_llm(dead, openai_chat(up_url, "backup"))(USER, [])) == "You said: hello there"


def test_timeout_falls_back(servers: Callable[..., Server]) -> None:
    """The primary streams too slowly for its ``timeout_seconds`` (``LLMTimeoutError``): the backup answers."""
    slow_url, _ = servers(model="slowpoke")
    up_url, _ = servers(model="backup")
    llm = fallback_llm(openai_chat(slow_url, "primary", stream=True, timeout_seconds=1),
                       openai_chat(up_url, "backup"))
    started = time.monotonic()
    reply = llm([{"role": "user", "content": "slow"}], [])
    assert reply["model"] == "backup" and text_of(reply).startswith("word1 word2")
    assert time.monotonic() - started < 8


def test_cancel_during_a_failure_stops_the_fallback(servers: Callable[..., Server]) -> None:
    """``cancel()`` (what ``Agent.abort()`` calls) while the first model fails: no further model is asked."""
    up_url, up_log = servers(model="backup")
    before = seen(up_log)
    holder: list[Any] = []

    def cut_primary(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        holder[0].cancel()
        raise LLMConnectionError("cut (cancelled)")

    llm = fallback_llm(cut_primary, openai_chat(up_url, "backup"))
    holder.append(llm)
    with pytest.raises(LLMConnectionError):
        llm(USER, [])
    assert seen(up_log) == before
    assert text_of(fallback_llm(openai_chat(up_url, "backup"), cut_primary)(USER, [])) == "You said: hello there"


def test_usage_limit_cost_prices_the_model_that_answered(servers: Callable[..., Server]) -> None:
    """Usage limits behind a fallback: the reply is priced as the model that answered (``AssistantMessage.model``),
    not as the ``llm_call`` (a ``FallbackLLM`` has no single model).
    """
    from yiemagent import UsageLimits

    down_url, _ = servers(status=503)
    up_url, _ = servers(model="backup")
    prices = {"primary": {"input_per_million": 1000.0, "output_per_million": 1000.0},
              "backup": {"input_per_million": 1.0, "output_per_million": 2.0}}
    llm = fallback_llm(openai_chat(down_url, "primary", timeout_seconds=10), openai_chat(up_url, "backup"))
    agent = Agent(llm, usage_limits=UsageLimits(cost=1.0, prices=prices))
    answer = agent.ask("hello there", timeout_seconds=30)
    assert answer["status"] == "completed", answer
    assert agent.usage["cost"] == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)


def test_praisonai_3820_a_fallback_is_an_event_of_the_run_and_of_its_stream(servers: Callable[..., Server]) -> None:
    """PraisonAI #3820 (and openclaw #5816): switching to a backup model emitted no hook and no stream
    event. Here each move is a ``fallback`` event (which model failed, why, which is asked next) in the
    run's event sink and in ``stream()``, with the run id, before the reply's ``message_end``.
    """
    down_url, _ = servers(status=503)
    limited_url, _ = servers(status=429)
    up_url, _ = servers(model="backup")
    llm = fallback_llm(openai_chat(down_url, "primary", timeout_seconds=10),
                       openai_chat(limited_url, "second", timeout_seconds=10), openai_chat(up_url, "backup"))
    events: list[Any] = []
    agent = Agent(llm, event_sink=events.append)
    streamed = list(agent.stream("hello there"))
    moves = [e for e in events if isinstance(e, FallbackEvent)]
    assert [(e.model, e.status_code, e.next_model) for e in moves] == [("primary", 503, "second"),
                                                                       ("second", 429, "backup")]
    assert "HTTP 503" in moves[0].error and "HTTP 429" in moves[1].error
    run_id = events[0].run_id
    assert all(e.run_id == run_id and e.type == "fallback" for e in moves)
    types = [e.type for e in events]
    last_end = max(i for i, e in enumerate(events) if e.type == "message_end")
    assert types.index("fallback") < last_end
    assert [e.model for e in streamed if isinstance(e, FallbackEvent)] == ["primary", "second"]
    assert streamed[-1]["model"] == "backup"


def test_openclaw_39818_the_answer_names_the_model_that_answered(servers: Callable[..., Server]) -> None:
    """Openclaw #39818 (and odysseus PR #868): after a silent fallback the reply was shown under the
    model that was asked. Here the answer dict carries ``model``: the one that answered.
    """
    down_url, _ = servers(status=503)
    up_url, _ = servers(model="backup")
    agent = Agent(fallback_llm(openai_chat(down_url, "primary", timeout_seconds=10), openai_chat(up_url, "backup")))
    answer = agent.ask("hello there", timeout_seconds=30)
    assert answer["model"] == "backup" and answer["content"] == "You said: hello there"
    plain = Agent(openai_chat(up_url, "backup")).ask("hi", timeout_seconds=30)
    assert plain["model"] == "backup"  # the reply's model, also without a fallback


def test_a_fallback_llm_called_outside_an_agent_sends_no_event_and_still_answers(
        servers: Callable[..., Server]) -> None:
    down_url, _ = servers(status=503)
    up_url, _ = servers(model="backup")
    assert report(FallbackEvent()) is False  # no run on this thread: nothing to send to
    reply = fallback_llm(openai_chat(down_url, "primary", timeout_seconds=10), openai_chat(up_url, "backup"))(USER, [])
    assert reply["model"] == "backup"


@pytest.mark.parametrize("status", [500, 504, 408])
def test_docker_agent_2095_one_5xx_from_the_model_is_sent_again_not_a_failed_input(
        servers: Callable[..., Server], status: int) -> None:
    """docker-agent #2095 (and issue 27): one HTTP 500 or 504 failed the input; the OpenAI SDK retries 408, 409,
    429 and 5xx. The model client now sends the request again and the agent answers.
    """
    url, log = servers(status=status, first=1, model=f"flaky{status}")
    answer = Agent(openai_chat(url, "m", timeout_seconds=20)).ask("hello there")
    assert answer["status"] == "completed" and answer["content"] == "You said: hello there"
    assert seen(log) == 2  # the failed request and the one that answered


def test_gajae_code_5396_a_long_retry_after_is_not_waited_the_fallback_model_is_asked_at_once(
        servers: Callable[..., Server]) -> None:
    """gajae-code #5396 (and issue 27): ``Retry-After: 8259`` made the first model wait its own retries (~20 s)
    before the backup was asked. A wait over 10 s is not waited: one request, then the backup answers.
    """
    down_url, down_log = servers(status=429, retry_after="8259")
    up_url, _ = servers(model="backup")
    before = seen(down_log)
    started = time.monotonic()
    reply = fallback_llm(openai_chat(down_url, "primary", timeout_seconds=60), openai_chat(up_url, "backup"))(USER, [])
    assert reply["model"] == "backup" and text_of(reply) == "You said: hello there"
    assert seen(down_log) == before + 1
    assert time.monotonic() - started < 10  # generous: the point is that 8259 s (or 10 s of retries) is not waited
    with pytest.raises(LLMError, match="not waited") as raised:
        openai_chat(down_url, "primary")(USER, [])
    assert raised.value.status_code == 429


def test_a_client_error_is_not_sent_again(servers: Callable[..., Server]) -> None:
    """400/401/404/422 are the request's fault: raised at once, sent once (the peers' rule too)."""
    url, log = servers(status=422, first=1, model="strict")
    before = seen(log)
    with pytest.raises(LLMError) as raised:
        openai_chat(url, "m")(USER, [])
    assert raised.value.status_code == 422 and seen(log) == before + 1
