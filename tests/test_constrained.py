"""Constrained tool calls (yiemagent.models.constrained) and the demo that uses them (issue 11 point 1).

The unit tests drive ``ConstrainedToolCalls`` with a recording ``llm_call`` (what a server would be
sent is what is asserted); the ``model`` tests run SmolLM2-135M-Instruct in the real llama.cpp server
against the real example MCP server.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from tests import strict_openai
from yiemagent import Agent, ConfigError, tool
from yiemagent.models.constrained import (
    ANSWER_INSTRUCTION,
    ANSWER_TOOL,
    DIRECT_INSTRUCTION,
    ConstrainedToolCalls,
    tool_call_schema,
)

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Lima"]}},
                   "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Get the time.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


class Recorder:
    """An ``llm_call`` that records each request (messages, tools, keywords) and answers from a script."""

    def __init__(self, *contents: str) -> None:
        self.contents = list(contents)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        self.requests.append({"messages": messages, "tools": tools, **kwargs})
        return {"choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": self.contents.pop(0)}}]}


def test_schema_offers_exactly_one_call_of_each_tool_with_its_own_parameters():
    schema = tool_call_schema([WEATHER, TIME])
    assert [o["properties"]["name"] for o in schema["anyOf"]] == [{"const": "get_weather"}, {"const": "get_time"}]
    assert schema["anyOf"][0]["properties"]["arguments"] == WEATHER["function"]["parameters"]
    assert all(o["required"] == ["name", "arguments"] and o["additionalProperties"] is False for o in schema["anyOf"])


def test_call_turn_sends_no_tools_but_the_schema_and_the_reply_becomes_tool_calls():
    inner = Recorder('{"name": "get_weather", "arguments": {"city": "Lima"}}')
    llm = ConstrainedToolCalls(inner, examples=[("Time in Rome?", "get_time", {"city": "Rome"})])
    reply = llm([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Lima?"}],
                [WEATHER, TIME], on_delta=lambda *a, **k: None)
    sent = inner.requests[0]
    assert sent["tools"] == [] and "on_delta" not in sent  # the JSON is not streamed to the user as text
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == tool_call_schema([WEATHER, TIME])
    system = sent["messages"][0]["content"]
    assert "Be brief." not in system and 'Call: {"name": "get_time", "arguments": {"city": "Rome"}}' in system
    call = reply["choices"][0]["message"]["tool_calls"][0]
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    assert call["function"]["name"] == "get_weather" and json.loads(call["function"]["arguments"]) == {"city": "Lima"}


def test_after_one_round_the_answer_turn_carries_the_question_with_the_tool_result():
    inner = Recorder("It is overcast in Lima.")
    llm = ConstrainedToolCalls(inner)
    history = [{"role": "user", "content": "Weather in Lima?"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Lima"}'}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "Overcast, 18 °C"}]
    deltas: list[Any] = []
    reply = llm(history, [WEATHER], on_delta=lambda *a, **k: deltas.append(a))
    sent = inner.requests[0]
    assert "response_format" not in sent and sent["tools"] == [] and sent["on_delta"] is not None
    assert sent["messages"] == [
        {"role": "system", "content": ANSWER_INSTRUCTION},
        {"role": "user", "content": "Question: Weather in Lima?\nTool get_weather answered: Overcast, 18 °C"}]
    assert reply["choices"][0]["message"]["content"] == "It is overcast in Lima."


def test_max_tool_rounds_two_allows_a_second_call_and_a_reply_that_is_not_json_is_left_to_the_loop():
    inner = Recorder('{"name": "get_time", "arguments": {"city": "Lima"}}', '{"name": "get_wea')
    llm = ConstrainedToolCalls(inner, max_tool_rounds=2)
    first = [{"role": "user", "content": "Weather and time in Lima?"}]
    assert llm(first, [WEATHER, TIME])["choices"][0]["message"]["tool_calls"]
    second = [*first, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "10:00"}]
    cut = llm(second, [WEATHER, TIME])
    assert "response_format" in inner.requests[1]
    assert inner.requests[1]["messages"][-1] == {"role": "user", "content": "Tool get_time answered: 10:00"}
    assert cut["choices"][0]["message"] == {"role": "assistant", "content": '{"name": "get_wea'}


def test_schema_with_answer_offers_final_answer_last_unless_a_tool_has_that_name():
    options = tool_call_schema([WEATHER], answer=True)["anyOf"]
    assert [o["properties"]["name"] for o in options] == [{"const": "get_weather"}, {"const": ANSWER_TOOL}]
    assert options[1]["properties"]["arguments"] == {"type": "object", "properties": {},
                                                    "additionalProperties": False}
    own = {"type": "function", "function": {"name": ANSWER_TOOL, "parameters": {"type": "object"}}}
    assert len(tool_call_schema([WEATHER, own], answer=True)["anyOf"]) == 2


def test_unsloth_5052_final_answer_is_answered_in_words_with_the_system_prompt_and_streamed():
    """unsloth/unsloth#5052: small models forced towards tools call one for questions they can answer.
    Here the schema lets the model choose ``final_answer``; the answer is then written in a plain turn
    that carries the system prompt and is streamed; no tool call reaches the agent.
    """
    inner = Recorder(json.dumps({"name": ANSWER_TOOL, "arguments": {}}), "2 + 2 = 4.")
    deltas: list[Any] = []
    llm = ConstrainedToolCalls(inner, examples=[("Hi!", ANSWER_TOOL, {})])
    reply = llm([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2 + 2?"}],
                [WEATHER, TIME], on_delta=lambda *a, **k: deltas.append(a))
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": "2 + 2 = 4."}
    assert inner.requests[1]["messages"] == [{"role": "system", "content": f"Be brief.\n{DIRECT_INSTRUCTION}"},
                                             {"role": "user", "content": "What is 2 + 2?"}]
    assert "response_format" not in inner.requests[1] and inner.requests[1]["on_delta"] is not None
    assert ANSWER_TOOL in json.dumps(inner.requests[0]["response_format"])
    without = Recorder('{"name": "get_weather", "arguments": {"city": "Lima"}}')
    ConstrainedToolCalls(without)([{"role": "user", "content": "Lima?"}], [WEATHER])  # no example shows it
    assert ANSWER_TOOL not in json.dumps(without.requests[0])


def test_a_call_whose_enum_value_is_not_in_the_question_is_not_made():
    """SmolLM2-135M answered "What is 2 + 2?" with get_time(city="London") (issue 20): valid for the enum,
    not grounded in the question. Such a call becomes an answer without a tool; a grounded one is made.
    """
    ungrounded = Recorder('{"name": "get_weather", "arguments": {"city": "Lima"}}', "4")
    reply = ConstrainedToolCalls(ungrounded)([{"role": "user", "content": "What is 2 + 2?"}], [WEATHER])
    assert reply["choices"][0]["message"]["content"] == "4" and len(ungrounded.requests) == 2
    grounded = Recorder('{"name": "get_weather", "arguments": {"city": "Lima"}}')
    reply = ConstrainedToolCalls(grounded)([{"role": "user", "content": "Is it raining in lima?"}], [WEATHER])
    assert reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    forced = Recorder('{"name": "get_weather", "arguments": {"city": "Lima"}}')
    reply = ConstrainedToolCalls(forced, allow_answer=False)([{"role": "user", "content": "Hi"}], [WEATHER])
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    assert ANSWER_TOOL not in json.dumps(forced.requests[0]["response_format"])


def test_home_assistant_178795_system_prompt_stays_out_of_call_and_tool_answer_turns():
    """home-assistant/core#178795: a system prompt made a small model skip the tool call or not use its
    result. The system prompt goes only into answers without a tool, unless system_prompt_everywhere.
    """
    history = [{"role": "system", "content": "You are a pirate."}, {"role": "user", "content": "Weather in Lima?"}]
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Lima"}'}}
    after = [*history, {"role": "assistant", "content": None, "tool_calls": [call]},
             {"role": "tool", "tool_call_id": "c1", "content": "Overcast, 18 °C"}]
    llm = ConstrainedToolCalls(Recorder())
    assert "pirate" not in json.dumps(llm.call_messages(history, [WEATHER]))
    assert llm.answer_messages(after)[0] == {"role": "system", "content": ANSWER_INSTRUCTION}
    everywhere = ConstrainedToolCalls(Recorder(), system_prompt_everywhere=True)
    assert everywhere.call_messages(history, [WEATHER])[0]["content"].startswith("You are a pirate.")
    assert everywhere.answer_messages(after)[0]["content"] == f"You are a pirate.\n{ANSWER_INSTRUCTION}"


@pytest.mark.parametrize("kwargs", [{"max_tool_rounds": 0}, {"max_tool_rounds": True}, {"examples": [("q", "t")]},
                                    {"examples": [("q", "t", "{}")]}])
def test_bad_arguments_are_config_errors(kwargs):
    with pytest.raises(ConfigError):
        ConstrainedToolCalls(Recorder(), **kwargs)


def test_through_the_agent_one_call_then_a_plain_answer_and_a_valid_history():
    @tool
    def get_weather(city: str) -> str:
        """Get the weather."""
        return f"Sunny in {city}"

    inner = Recorder('{"name": "get_weather", "arguments": {"city": "Paris"}}', "It is sunny in Paris.")
    with Agent(ConstrainedToolCalls(inner), tools=[get_weather]) as agent:
        answer = agent.ask("Weather in Paris?", timeout_seconds=10)
        messages = agent.openai_messages()
    assert answer["status"] == "completed" and answer["content"] == "It is sunny in Paris."
    assert len(inner.requests) == 2 and "response_format" not in inner.requests[1]
    strict_openai.validate(messages)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]


@pytest.mark.model
def test_smollm2_picks_the_right_tool_and_city_and_answers_with_the_result(monkeypatch):
    """Real SmolLM2-135M in llama.cpp + the real example MCP server: two demo questions, each one call
    of the right tool with the right city, and an answer that states the tool's result.

    The server's clock is fixed: with the real one the 135M model's answer depended on the time of day
    (at 02:01 in Tokyo it answered the date instead of the time; a CI run of issue 15 failed so).
    """
    monkeypatch.setenv("YIEMAGENT_EXAMPLE_NOW", "2026-12-01T16:30:00+00:00")
    from yiemagent.cli.demo import DEMO_QUESTIONS, demo_model, demo_server, run_demo
    from yiemagent.mcp import MCPClient

    lines: list[str] = []
    with demo_server() as url, MCPClient(url, name="weather") as client, \
            demo_model(out=lines.append) as llm_call:
        for question, tool_name, city in (DEMO_QUESTIONS[1], DEMO_QUESTIONS[2]):
            run = run_demo(question, llm_call, client, out=lines.append)
            assert run.calls == [(tool_name, {"city": city})], lines
            assert run.status == "completed", lines
            fact = re.search(r"-?\d+ °C|\d\d:\d\d", run.results[0])
            assert fact is not None and fact.group(0).split()[0] in run.answer, lines


@pytest.mark.model
def test_demo_command_is_a_correct_conversation():
    """`yiemagent demo`: one call get_weather({"city": "Paris"}), the real server's result, and a final
    answer in words that states it (21 °C), exit 0.
    """
    done = subprocess.run([sys.executable, "-m", "yiemagent.cli", "demo"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "user> What is the weather in Paris?" in out
    assert out.count("assistant> calls ") == 1 and 'assistant> calls get_weather({"city": "Paris"})' in out
    assert "tool get_weather> Weather in Paris: Sunny, 21 °C" in out
    final = [line for line in out.splitlines() if line.startswith("assistant> ") and "calls" not in line]
    assert final and "21" in final[-1] and "<" not in final[-1], out
    assert "status completed" in out


@pytest.mark.model
@pytest.mark.timeout(900)
def test_issue_29_the_demo_states_no_fact_that_no_tool_or_user_gave(monkeypatch):
    """Issue 29 point 2: the demo's embedded model, asked questions of a new user (Kyiv in Fahrenheit, Madrid's
    people, Cairo or Berlin), stated numbers and names nobody gave (Kyiv's -3 °C as "27.8 °F", invented
    demographics) with status ``completed``. With the grounding guardrail on (the demo's default), every answer
    states only what a tool result or the question gave, or says it does not know.
    """
    monkeypatch.setenv("YIEMAGENT_EXAMPLE_NOW", "2026-12-01T16:30:00+00:00")
    from yiemagent.cli.demo import demo_model, demo_server, run_demo
    from yiemagent.mcp import MCPClient
    from yiemagent.tools.grounding import unsupported_claims

    questions = ["What is the weather in Kyiv in Fahrenheit?", "How many people live in Madrid?",
                 "Is it warmer in Cairo or in Berlin?", "What is the weather in Paris?"]
    lines: list[str] = []
    with demo_server() as url, MCPClient(url, name="weather") as client, \
            demo_model(out=lines.append) as llm_call:
        for question in questions:
            run = run_demo(question, llm_call, client, out=lines.append)
            sources = "\n".join([question, *run.results])
            assert run.answer.startswith("I do not know") or unsupported_claims(run.answer, sources) == [], lines
            assert run.status in ("completed", "guardrail_tripped", "truncated", "max_turns"), lines
