"""Issue 33, point 4: what callers and peers send fails closed.

* Every option of the public API given as a string or a name is checked against its documented set when
  it is given, with the nearest valid name in the error (``yiemagent._internal.checks.one_of``): a typo
  is never a silent default (cross-seed #478: ``action: "injest"`` silently became ``save``; here
  ``branch_input(store, id, "edti")`` was a rewind that deleted the last answer, and
  ``Guardrail(check, stages=("tool-input",))`` never ran).
* Every number a peer reports that counts or prices is read by one reader (``yiemagent._internal.numbers``):
  a negative or non-finite count is unknown, never lowering a total or a cost (async-openai #404: o3
  reported ``completion_tokens: -35``; litellm #38010: a negative completion count credited the budget).
  A price table is checked when it is made (earendil-works/pi #8875: negative prices made a session's cost
  -$142,066), and the llm_call's model must be priced before the first paid call.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, wait_for_port
from yiemagent import Agent, ConfigError, UsageLimits
from yiemagent._internal.numbers import peer_usage
from yiemagent.models.openai_chat import openai_chat
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply
from yiemagent.tools.guardrails import Guardrail, GuardrailVerdict


def _check(ctx: Any) -> None:
    return None


def _ui_streams() -> Any:
    import yiemagent.agent.ui_streams

    return yiemagent.agent.ui_streams


def _enqueue_reply_to(reply_to: str) -> Any:
    import tempfile

    from yiemagent.store.sqlite import SQLiteStore

    with tempfile.TemporaryDirectory() as directory:
        store = SQLiteStore(f"{directory}/s.db")
        try:
            return store.enqueue("c", "hi", reply_to=reply_to)  # type: ignore[arg-type]
        finally:
            store.close()


def _options() -> list[tuple[str, Callable[[], Any], str]]:
    """``(name, a call giving the option with a typo, the nearest valid name)`` for every option found."""
    from yiemagent import sse_events
    from yiemagent.agent.streaming import AgentStream
    from yiemagent.context.compaction import compact
    from yiemagent.mcp.auth.oauth import OAuth
    from yiemagent.mcp.client import MCPClient
    from yiemagent.mcp.config import parse_mcp_servers
    from yiemagent.messages.formatting import OpenAIFormatter
    from yiemagent.output.typed_output import output_spec
    from yiemagent.store.faults import Fault
    from yiemagent.store.sqlite import SQLiteStore
    from yiemagent.testing import EventRecorder
    from yiemagent.tools.guardrail_kinds import pii_guardrail

    def agent(**kwargs: Any) -> Any:
        return Agent(ScriptedLLM([]), **kwargs)

    return [
        ("guardrail stage", lambda: Guardrail(_check, stages=("tool-input",)), "tool_input"),
        ("guardrail stage spelled like the event", lambda: Guardrail(_check, stages=("tool_inputs",)),
         "tool_input"),
        ("pii guardrail action", lambda: pii_guardrail(action="tripwre"), "tripwire"),
        ("pii guardrail stages", lambda: pii_guardrail(stages=("tool_ouput",)), "tool_output"),
        ("verdict kind", lambda: GuardrailVerdict("retyr"), "retry"),
        ("tool_execution", lambda: agent(tool_execution="paralel"), "parallel"),
        ("output_mode (Agent)", lambda: agent(output_mode="promted"), "prompted"),
        ("output_mode (output_spec)", lambda: output_spec(dict, mode="respons_format"), "response_format"),
        ("shutdown mode", lambda: agent().shutdown(mode="drian"), "drain"),
        ("stream on_close", lambda: AgentStream("i", lambda: True, on_close="abrot"), "abort"),  # type: ignore[arg-type]
        ("compaction on_failure", lambda: compact([], None, None, on_failure="leave-out"),  # type: ignore[arg-type]
         "leave_out"),
        ("tool_images", lambda: OpenAIFormatter(tool_images="placehodler"), "placeholder"),  # type: ignore[arg-type]
        ("sqlite synchronous", lambda: SQLiteStore(":memory:", synchronous="FUL"), "FULL"),  # type: ignore[arg-type]
        ("oauth grant_type", lambda: OAuth(grant_type="client_credential"),  # type: ignore[arg-type]
         "client_credentials"),
        ("oauth token_endpoint_auth_method", lambda: OAuth(token_endpoint_auth_method="client_secret_bsic"),
         "client_secret_basic"),
        ("oauth signing_algorithm", lambda: OAuth(signing_algorithm="ES265"), "ES256"),
        ("mcp protocol_version", lambda: MCPClient("http://127.0.0.1:1/mcp", protocol_version="2025-11-52"),
         "2025-11-25"),
        ("mcp config type", lambda: parse_mcp_servers({"mcpServers": {"x": {"type": "stdoi", "command": "x"}}}),
         "stdio"),
        ("openai tool_choice", lambda: openai_chat("http://127.0.0.1:1/v1", "m", tool_choice="requried"),
         "required"),
        ("usage price rate", lambda: UsageLimits(cost=1.0, prices={"m": {"input_per_milion": 1.0}}),
         "input_per_million"),
        ("sse_events types", lambda: sse_events([], types=["message_updte"]), "message_update"),
        ("EventRecorder.of_type", lambda: EventRecorder().of_type("agent_edn"), "agent_end"),
        ("store fault kind", lambda: Fault(1, "fial"), "fail"),  # type: ignore[arg-type]
        ("store fault methods", lambda: Fault(1, only=("comit",)), "commit"),
        ("postgres reply_to (the store API)", lambda: _enqueue_reply_to("output-queue"), "output_queue"),
        ("run_turns tool_execution (LoopConfig)", lambda: _loop_config(tool_execution="paralel"), "parallel"),
        ("OutputSpec mode", lambda: _output_spec_class()("o", {"type": "object"}, mode="promted"), "prompted"),
        ("jwt verifier algorithms", lambda: _server_auth().JWTVerifier(key="k" * 32, algorithms=["HS265"]), "HS256"),
        ("guardrail context stage", lambda: __import__("yiemagent").GuardrailContext("tool-input", "x"), "tool_input"),
        ("system message role", lambda: __import__("yiemagent").SystemMessage(content="x", role="developr"),
         "developer"),
        ("local model name", lambda: __import__("yiemagent.models.local", fromlist=["x"]).LocalModel(
            model="smollm2-135"), "smollm2-135m"),
    ]


def _loop_config(**kwargs: Any) -> Any:
    """A ``LoopConfig`` as ``run_turns`` callers make it (no ``Agent`` checks in between)."""
    from yiemagent import LoopConfig

    return LoopConfig(ScriptedLLM([text_reply("hi")]), **kwargs)


def _server_auth() -> Any:
    from yiemagent.mcp.server import auth

    return auth


def _output_spec_class() -> Any:
    from yiemagent.output.typed_output import OutputSpec

    return OutputSpec


@pytest.mark.parametrize("name,give,nearest", _options(), ids=[o[0] for o in _options()])
def test_cross_seed_478_an_option_with_a_typo_is_an_error_naming_the_nearest(
        name: str, give: Callable[[], Any], nearest: str) -> None:
    with pytest.raises(ConfigError, match=f"did you mean {nearest!r}"):
        give()


def test_a_guardrail_with_a_stage_typo_never_waits_silently_while_the_tool_runs() -> None:
    """The issue's case: ``stages=("tool-input",)`` was accepted and the destructive tool ran."""
    with pytest.raises(ConfigError, match="tool_input"):
        Guardrail(_check, stages=("tool-input",))
    with pytest.raises(ConfigError, match="list of names"):
        Guardrail(_check, stages="tool_input")  # type: ignore[arg-type]  # one str: read a letter at a time
    with pytest.raises(ConfigError, match="at least one"):
        Guardrail(_check, stages=())
    assert Guardrail(_check, stages=["tool_output"]).stages == ("tool_output",)


def test_branch_input_with_a_typo_of_edit_changes_nothing(sqlite_store_factory: Any) -> None:
    """The issue's case: ``branch_input(store, id, "edti", ...)`` was planned as a rewind (and, served,
    deleted the last stored answer). Now it is refused when given: nothing is planned or enqueued.
    """
    from yiemagent.store.branching import branch_input

    store = sqlite_store_factory()
    with Agent(ScriptedLLM([text_reply("first answer")]), store=store, conversation_id="c") as agent:
        agent.ask("hello")
        before = [m.to_dict() for m in agent.history]
    version = store.load("c").version
    with pytest.raises(ConfigError, match="did you mean 'edit'"):
        branch_input(store, "c", "edti", index=0, text="changed")  # type: ignore[arg-type]
    with Agent(ScriptedLLM([]), store=store, conversation_id="c") as agent:
        assert [m.to_dict() for m in agent.history] == before
    assert store.load("c").version == version


# ------------------------------------------------------------------ numbers


@pytest.fixture(scope="module")
def broken_usage_model(
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[dict[str, Any]], tuple[str, Path]]]:
    """``start(usage) -> (base_url, log)``: the scripted model server reporting ``usage`` in every reply."""
    started: dict[str, tuple[tuple[str, Path], Any]] = {}

    def start(usage: dict[str, Any]) -> tuple[str, Path]:
        key = json.dumps(usage, sort_keys=True)
        if key not in started:
            log = tmp_path_factory.mktemp("usage") / "requests.jsonl"
            log.write_text("", encoding="utf-8")
            port = free_port()
            process = start_process([PYTHON, str(SERVERS / "scripted_openai_server.py"), "--port", str(port),
                                     "--log", str(log), "--usage", key])
            wait_for_port(port, timeout_seconds=20, process=process)
            started[key] = ((f"http://127.0.0.1:{port}/v1", log), process)
        return started[key][0]

    try:
        yield start
    finally:
        for _, process in started.values():
            stop_process(process)


RATE = 100_000.0
"""Per million tokens: 0.1 per token, so 10 tokens cost 1.0 (exactly, in floats)."""

BROKEN_USAGE = {
    "openai negative completion (the issue)": {"prompt_tokens": 10, "completion_tokens": -1e9,
                                               "total_tokens": -999999990},
    "async-openai 404 o3 negative completion": {"prompt_tokens": 10, "completion_tokens": -35, "total_tokens": -25},
    "anthropic negative input_tokens": {"input_tokens": -1000000000, "output_tokens": 10},
    "NaN completion": {"prompt_tokens": 10, "completion_tokens": math.nan},
    "negative numeric strings": {"prompt_tokens": "10", "completion_tokens": "-1e9"},
    "llama.cpp negative cached tokens": {"prompt_tokens": 10, "completion_tokens": 0,
                                         "prompt_tokens_details": {"cached_tokens": -1000000000}},
    "negative reported cost": {"prompt_tokens": 10, "completion_tokens": 0, "cost": -1e9},
}


def _no_negative(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_no_negative(v) for v in value.values())
    return not isinstance(value, (int, float)) or (math.isfinite(value) and value >= 0)


@pytest.mark.slow
@pytest.mark.parametrize("usage", list(BROKEN_USAGE.values()), ids=list(BROKEN_USAGE))
def test_litellm_38010_negative_usage_never_lowers_the_cost_the_limit_still_stops_the_conversation(
        usage: dict[str, Any], broken_usage_model: Callable[[dict[str, Any]], tuple[str, Path]]) -> None:
    """A model server reporting negative or NaN usage: each reply still costs what its sound counts say
    (1.0), the conversation's cost limit (3.0) stops it after 3 asks, the 4th is refused with no request.
    """
    url, log = broken_usage_model(usage)
    prices = {"scripted": {"input_per_million": RATE, "output_per_million": RATE}}
    limits = UsageLimits(cost=3.0, prices=prices)
    with Agent(openai_chat(url, "scripted"), conversation_usage_limits=limits) as agent:
        statuses = [agent.ask(f"question {n}", timeout_seconds=60)["status"] for n in range(6)]
        assert statuses == ["completed"] * 3 + ["usage_limit"] * 3
        assert len(log.read_text(encoding="utf-8").splitlines()) == 3
        assert _no_negative(agent.usage), agent.usage
        for message in agent.history:
            assert _no_negative(getattr(message, "usage", None) or {})


def test_peer_usage_drops_what_cannot_be_a_count_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="yiemagent.numbers")
    odd = {"prompt_tokens": "10", "completion_tokens": -5, "total_tokens": math.inf, "service_tier": "default",
           "prompt_tokens_details": {"cached_tokens": "NaN", "audio_tokens": 0}, "zz_unique_field": -1}
    assert peer_usage(odd) == {"prompt_tokens": 10, "service_tier": "default",
                               "prompt_tokens_details": {"audio_tokens": 0}}
    peer_usage({"zz_unique_field": -2})
    assert len([r for r in caplog.records if "zz_unique_field" in r.getMessage()]) == 1
    sound = {"prompt_tokens": 3, "completion_tokens": 2}
    assert peer_usage(sound) is sound


@pytest.mark.parametrize("prices", [
    {"m": {"input_per_million": -1.0}}, {"m": {"output_per_million": math.nan}},
    {"m": {"input_per_million": math.inf}}, {"m": {"input_per_million": True}}, {"m": 1.0}, ["m"]],
    ids=["negative", "nan", "inf", "bool", "not a dict", "a list"])
def test_pi_8875_a_price_table_is_checked_when_made(prices: Any) -> None:
    with pytest.raises(ConfigError, match="prices"):
        UsageLimits(cost=1.0, prices=prices)


def test_an_unpriced_model_is_refused_before_the_first_paid_call(scripted_model: tuple[str, Path]) -> None:
    """The price table is checked before the first paid call, not after it: nothing reaches the server."""
    url, log = scripted_model
    before = len(log.read_text(encoding="utf-8").splitlines())
    limits = UsageLimits(cost=1.0, prices={"other-model": {"input_per_million": 1.0}})
    with Agent(openai_chat(url, "scripted"), usage_limits=limits) as agent:
        answer = agent.ask("hello", timeout_seconds=30)
        assert answer["status"] == "error" and "no price" in answer["error"] and "'scripted'" in answer["error"]
    assert len(log.read_text(encoding="utf-8").splitlines()) == before


@pytest.mark.parametrize("make", [
    lambda: __import__("yiemagent").mcp.limits.MCPLimits(max_tools=-1),
    lambda: __import__("yiemagent").mcp.limits.MCPLimits(max_structured_chars=-1),
    lambda: __import__("yiemagent").mcp.limits.MCPLimits(max_schema_depth=math.nan),
    lambda: Agent(ScriptedLLM([])).shutdown(timeout_seconds=math.nan),
    lambda: openai_chat("http://127.0.0.1:1/v1", "m", max_tokens=-1),
    lambda: openai_chat("http://127.0.0.1:1/v1", "m", temperature=math.nan),
    lambda: openai_chat("http://127.0.0.1:1/v1", "m", timeout_seconds=-1),
    lambda: UsageLimits(cost=-1.0, prices={"m": {}}),
    lambda: UsageLimits(requests=math.nan),
    lambda: __import__("yiemagent.mcp.auth", fromlist=["OAuth"]).OAuth(timeout_seconds=math.inf),
    lambda: __import__("yiemagent.mcp.auth", fromlist=["OAuth"]).OAuth(refresh_margin_seconds=-1),
    lambda: __import__("yiemagent.mcp.auth.loopback", fromlist=["x"]).loopback_redirect_handler(
        timeout_seconds=math.nan),
    lambda: __import__("yiemagent.mcp.auth.storage_file", fromlist=["x"]).FileTokenStorage(
        "/tmp/never-written.json", lock_timeout_seconds=-3),
    lambda: __import__("yiemagent").sse_events([], heartbeat_seconds=math.nan),
    lambda: _ui_streams().ag_ui_events([], thread_id="t", heartbeat_seconds=-1),
    lambda: _ui_streams().vercel_ai_events([], heartbeat_seconds=math.inf),
    lambda: __import__("yiemagent.mcp.http", fromlist=["x"]).HTTPTransport("http://127.0.0.1:1/mcp",
                                                                           max_body_bytes=-1),
    lambda: __import__("yiemagent.mcp.stdio", fromlist=["x"]).StdioTransport("x", timeout_seconds=math.nan),
    lambda: __import__("yiemagent.workers.drain", fromlist=["x"]).AgentPool(lambda c: None, max_agents=-1),
    lambda: __import__("yiemagent.formats.sse", fromlist=["x"]).SSEParser(max_event_chars=0),
    lambda: _loop_config(max_turns=-1),
    lambda: _loop_config(max_tool_calls_per_turn=-1),
    lambda: _loop_config(max_result_chars=math.nan),
    lambda: _loop_config(max_parallel_tools=True),
    lambda: _output_spec_class()("o", {"type": "object"}, retries=-1),
    lambda: __import__("yiemagent.tools.hooks", fromlist=["x"]).ask_user("? ", timeout_seconds=math.nan),
    lambda: __import__("yiemagent.mcp", fromlist=["x"]).MCPToolExecutor(None, "t", timeout_seconds=-1),
    lambda: __import__("yiemagent.mcp", fromlist=["x"]).MCPToolExecutor(None, "t", max_result_chars=math.inf),
    lambda: __import__("yiemagent", fromlist=["x"]).MCPServerConfig(command="x", timeout_seconds=math.nan),
    lambda: __import__("yiemagent.store", fromlist=["x"]).PostgresStore("postgresql://x",
                                                                        connect_timeout_seconds=math.inf),
    lambda: __import__("yiemagent.store", fromlist=["x"]).PostgresStore("postgresql://x", lock_timeout_seconds=True),
    lambda: _server_auth().IntrospectionVerifier("http://127.0.0.1:1/introspect", timeout_seconds=math.nan),
    lambda: __import__("yiemagent.tools", fromlist=["x"]).cap_result(
        __import__("yiemagent.tools", fromlist=["x"]).to_result("x" * 50), -1),
    lambda: __import__("yiemagent.tools", fromlist=["x"]).cap_result(
        __import__("yiemagent.tools", fromlist=["x"]).to_result("x" * 50), math.nan),
], ids=["MCPLimits negative", "MCPLimits negative optional", "MCPLimits nan", "shutdown nan", "max_tokens -1",
        "temperature nan", "model timeout -1", "cost -1", "requests nan", "oauth timeout inf",
        "oauth refresh margin -1", "loopback timeout nan", "token file lock -3", "sse heartbeat nan",
        "ag-ui heartbeat -1", "vercel heartbeat inf", "http transport body -1", "stdio timeout nan",
        "agent pool -1", "sse parser 0", "run_turns max_turns -1", "run_turns calls per turn -1",
        "run_turns result chars nan", "run_turns parallel True", "OutputSpec retries -1", "ask_user timeout nan",
        "mcp executor timeout -1", "mcp executor result chars inf", "mcp server config timeout nan",
        "postgres connect timeout inf", "postgres lock timeout True", "introspection timeout nan", "cap_result -1",
        "cap_result nan"])
def test_a_negative_or_non_finite_number_given_by_a_caller_is_an_error_when_given(make: Callable[[], Any]) -> None:
    with pytest.raises(ConfigError):
        make()


@pytest.mark.parametrize("limit", [-1, True, 2.5])
def test_a_store_read_limit_that_is_not_a_count_is_an_error_not_every_row(
        sqlite_store_factory: Any, limit: Any) -> None:
    """SQLite reads ``LIMIT -1`` as no limit: a -1 given as a limit returned every pending input."""
    store = sqlite_store_factory()
    for text in ("a", "b", "c"):
        store.enqueue("c1", {"role": "user", "content": text})
    assert len(store.pending("c1", limit=2)) == 2
    with pytest.raises(ConfigError, match="limit"):
        store.pending("c1", limit=limit)
    with pytest.raises(ConfigError, match="limit"):
        store.pending_conversations(limit=limit)


@pytest.mark.parametrize("options", [{"timeout_seconds": math.nan}, {"timeout_seconds": -1},
                                     {"timeout_seconds": 5, "poll_seconds": math.nan}],
                         ids=["timeout nan", "timeout -1", "poll nan"])
def test_wait_answer_with_a_bound_that_is_not_one_is_an_error_not_a_wait_for_ever(
        sqlite_store_factory: Any, options: dict[str, Any]) -> None:
    """A NaN ``timeout_seconds`` made a deadline that never passes: the wait for an unserved input never ended."""
    import threading

    store = sqlite_store_factory()
    seq = store.enqueue("c1", {"role": "user", "content": "never served"})
    outcome: list[BaseException] = []

    def wait() -> None:  # on a thread: before the fix the NaN case never returned
        try:
            store.wait_answer("c1", seq, **options)
        except BaseException as exc:  # the outcome is asserted below
            outcome.append(exc)

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    waiter.join(30)
    assert not waiter.is_alive(), "wait_answer still waiting after 30 s"
    assert isinstance(outcome[0], ConfigError) and "seconds" in str(outcome[0]), outcome
    with pytest.raises(ConfigError, match="ttl_seconds"):
        store.acquire("c1", "owner", ttl_seconds=True)
    with pytest.raises(TimeoutError):  # 0 stays what it was: look once, never wait
        store.wait_answer("c1", seq, timeout_seconds=0)


def test_a_tool_call_reply_with_negative_usage_counts_no_negative_tokens() -> None:
    reply = {**tool_call_reply("missing", {}), "usage": {"prompt_tokens": 5, "completion_tokens": -100}}
    with Agent(ScriptedLLM([reply, {**text_reply("done"), "usage": {"prompt_tokens": 7, "completion_tokens": 1}}])
               ) as agent:
        agent.ask("q")
        assert agent.usage.get("completion_tokens") == 1 and agent.usage.get("prompt_tokens") == 12


def test_negative_mcp_progress_is_left_out_not_passed_on() -> None:
    """MCP ``notifications/progress`` with a negative or infinite ``progress``/``total`` (a raw message: the SDK
    servers validate progress before sending, so no real program sends this shape): those fields are left out.
    """
    import threading
    from typing import ClassVar

    from yiemagent.mcp.server_messages import handle_server_message

    got: list[dict[str, Any]] = []

    class Client:
        name = "peer"
        request_handlers: ClassVar[dict[str, Any]] = {}
        tools_changed = threading.Event()

    params = {"progressToken": "tok", "progress": -5, "total": "1e999", "message": "odd"}
    handle_server_message(Client(), {"tok": got.append}, {"jsonrpc": "2.0", "method": "notifications/progress",
                                                          "params": params})
    assert got == [{"progressToken": "tok", "message": "odd"}]


def test_a_streams_retry_field_never_sets_a_wait_past_the_bound() -> None:
    """The SSE ``retry:`` field is the server's to set: ``retry: 999999999`` made the MCP client wait 11 days before
    reconnecting its standalone stream. One parser reads it for every stream (client listen and resume); a value
    past ``MAX_RETRY_MS`` (60 s) reads as the bound, a small one as given, and non-ASCII digits are not a number
    (the spec's field is ASCII digits).
    """
    from yiemagent.formats.sse import MAX_RETRY_MS, SSEParser

    for text, expected in (("999999999", MAX_RETRY_MS), ("99999999999999", MAX_RETRY_MS), ("1500", 1500),
                           ("\u0661\u0662", None), ("-5", None), ("1e9", None)):
        parser = SSEParser()
        events = parser.feed(f"retry: {text}\ndata: x\n\n")
        assert parser.retry_ms == expected, text
        assert events and events[0].retry == expected
