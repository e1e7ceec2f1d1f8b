"""Usage limits (``yiemagent.context.usage_limits``): requests, tool calls, tokens and cost, per run and conversation.

Each limit ends the run with status ``usage_limit`` and the figures in the answer's ``usage_limit``;
the history stays a valid OpenAI chat (``tests.strict_openai.validate``); the next input works, or is
refused at once when a per-conversation limit is spent. The HTTP test uses the scripted
OpenAI-compatible server (tests/servers/scripted_openai_server.py: usage 10/5/15 per reply).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests import strict_openai
from yiemagent import Agent, ConfigError, UsageLimits, tool
from yiemagent.models.openai_chat import openai_chat
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply

USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


def with_usage(reply: dict[str, Any], usage: dict[str, Any] = USAGE) -> dict[str, Any]:
    return {**reply, "usage": dict(usage)}


def weather_call(n: int) -> dict[str, Any]:
    return with_usage(tool_call_reply("get_weather", {"city": f"C{n}"}, call_id=f"call_{n}"))


def many_calls(count: int) -> dict[str, Any]:
    return with_usage({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": f"m{i}", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "X"}'}}
            for i in range(count)]}}]})


def valid(agent: Agent) -> list[dict[str, Any]]:
    messages = agent.openai_messages()
    strict_openai.validate(messages)
    return messages


def test_request_limit_stops_before_the_request_that_would_exceed_it() -> None:
    llm = ScriptedLLM([weather_call(1), weather_call(2), text_reply("done")])
    with Agent(llm, tools=[get_weather], usage_limits=UsageLimits(requests=2)) as agent:
        answer = agent.ask("weather?")
        assert answer["status"] == "usage_limit"
        assert answer["usage_limit"] == {"limit": "requests", "maximum": 2, "value": 2, "scope": "run"}
        assert len(llm.calls) == 2  # the third request was never sent
        valid(agent)
        assert agent.ask("again")["status"] == "completed"  # per run: the next run starts from zero
        assert len(llm.calls) == 3
        valid(agent)


def test_pydantic_ai_2593_tool_calls_of_one_reply_are_counted_exactly() -> None:
    """pydantic-ai #2593: a reply with many calls was not bounded by any limit; here none of them runs."""
    ran: list[str] = []

    @tool
    def count(city: str) -> str:
        """Counts its runs."""
        ran.append(city)
        return "ok"

    reply = with_usage({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": f"m{i}", "type": "function", "function": {"name": "count", "arguments": '{"city": "X"}'}}
            for i in range(3)]}}]})
    llm = ScriptedLLM([with_usage(tool_call_reply("count", {"city": "A"}, call_id="a1")), reply, text_reply("x")])
    with Agent(llm, tools=[count], usage_limits=UsageLimits(tool_calls=3)) as agent:
        answer = agent.ask("go")
        assert answer["status"] == "usage_limit"
        assert answer["usage_limit"]["limit"] == "tool_calls" and answer["usage_limit"]["value"] == 4
        assert ran == ["A"]  # 1 + 3 > 3: the batch of three did not run


def test_agno_3408_calls_refused_by_a_limit_get_results_and_the_history_stays_valid() -> None:
    """Agno #3408: a tool-call limit left the model's calls unanswered, which models reject."""
    llm = ScriptedLLM([many_calls(2), text_reply("next answer")])
    with Agent(llm, tools=[get_weather], usage_limits=UsageLimits(tool_calls=1)) as agent:
        assert agent.ask("go")["status"] == "usage_limit"
        messages = valid(agent)
        results = [m for m in messages if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in results] == ["m0", "m1"]
        assert all("was not run" in str(m["content"]) for m in results)
        answer = agent.ask("next")
        assert answer["status"] == "completed" and answer["content"] == "next answer"
        strict_openai.validate(llm.calls[-1]["messages"])


@pytest.mark.parametrize("limit,maximum,value", [
    ("input_tokens", 150, 200), ("output_tokens", 30, 40), ("total_tokens", 200, 240)])
def test_token_limits_are_checked_after_each_reply(limit: str, maximum: int, value: int) -> None:
    llm = ScriptedLLM([weather_call(1), weather_call(2), text_reply("done")])
    with Agent(llm, tools=[get_weather], usage_limits=UsageLimits(**{limit: maximum})) as agent:
        answer = agent.ask("weather?")
        assert answer["status"] == "usage_limit"
        assert answer["usage_limit"] == {"limit": limit, "maximum": maximum, "value": value, "scope": "run"}
        assert len(llm.calls) == 2
        valid(agent)


def test_pydantic_ai_1794_a_final_reply_that_overshoots_a_token_limit_is_kept() -> None:
    """pydantic-ai #1794: the token limit was checked after the reply and the reply, already paid, was lost."""
    llm = ScriptedLLM([with_usage(text_reply("the answer"))])
    with Agent(llm, usage_limits=UsageLimits(total_tokens=50)) as agent:
        answer = agent.ask("q")
        assert answer["status"] == "completed" and answer["content"] == "the answer"


def test_cost_from_a_price_table_and_a_missing_price_is_an_error() -> None:
    prices = {"m": {"input_per_million": 1000.0, "output_per_million": 5000.0}}  # 0.1 + 0.1 per reply
    llm = ScriptedLLM([weather_call(1), weather_call(2), weather_call(3), text_reply("done")])
    with Agent(llm, tools=[get_weather], usage_limits=UsageLimits(cost=0.35, prices=prices)) as agent:
        answer = agent.ask("q")
        assert answer["status"] == "usage_limit"
        assert answer["usage_limit"]["limit"] == "cost" and answer["usage_limit"]["value"] == pytest.approx(0.4)
        assert agent.usage["cost"] == pytest.approx(0.4)
        valid(agent)
    with pytest.raises(ConfigError):
        UsageLimits(cost=1.0)


def test_conversation_limit_refuses_the_next_input_at_once_and_survives_a_store(
        sqlite_store_factory: Any) -> None:
    store = sqlite_store_factory()
    limits = UsageLimits(requests=2)
    llm = ScriptedLLM([weather_call(1), text_reply("one")])
    with Agent(llm, tools=[get_weather], store=store, conversation_id="c1",
               conversation_usage_limits=limits) as agent:
        assert agent.ask("first")["status"] == "completed"
    llm2 = ScriptedLLM([text_reply("never")])
    with Agent(llm2, tools=[get_weather], store=sqlite_store_factory(), conversation_id="c1",
               conversation_usage_limits=limits) as agent:
        answer = agent.ask("second")
        assert answer["status"] == "usage_limit"
        assert answer["usage_limit"] == {"limit": "requests", "maximum": 2, "value": 2, "scope": "conversation"}
        assert llm2.calls == []
        valid(agent)


def test_http_model_tool_call_limit_and_cost(scripted_model: tuple[str, Path]) -> None:
    url, log = scripted_model
    prices = {"scripted": {"input_per_million": 1.0, "output_per_million": 2.0}}
    limits = UsageLimits(tool_calls=0, prices=prices)
    before = len(log.read_text(encoding="utf-8").splitlines())
    with Agent(openai_chat(url, "scripted"), tools=[get_weather], usage_limits=limits) as agent:
        answer = agent.ask("weather in Paris")
        assert answer["status"] == "usage_limit" and answer["usage_limit"]["limit"] == "tool_calls"
        assert agent.usage["cost"] == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)
        valid(agent)
        seen = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()[before:]]
        assert len(seen) == 1
        assert agent.ask("hello")["status"] == "completed"
        valid(agent)


def test_alpha_loop_424_an_unpriced_model_is_an_error_not_a_free_reply() -> None:
    """alpha-loop #424 (and codeburn #638): a model missing from the price table (there: an empty model
    key) was priced 0, so a cost limit never tripped; here the run ends with an error naming the price.
    """
    prices = {"a": {"input_per_million": 1.0}, "b": {"input_per_million": 2.0}}
    llm = ScriptedLLM([weather_call(1), text_reply("done")])
    with Agent(llm, tools=[get_weather], usage_limits=UsageLimits(cost=1.0, prices=prices)) as agent:
        answer = agent.ask("q")
        assert answer["status"] == "error" and "no price" in answer["error"]
        valid(agent)


def test_usage_limits_must_be_usage_limits_and_figures_valid() -> None:
    with pytest.raises(ConfigError, match="usage_limits"):
        Agent(ScriptedLLM([]), usage_limits={"requests": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="requests"):
        UsageLimits(requests=-1)
