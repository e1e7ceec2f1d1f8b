"""Typed final answers (issue 18 point 1): ``output_type=`` on Agent / ask / submit / stream.

Logic with scripted models (``yiemagent.testing.ScriptedLLM``; ``FormatLLM`` below is the same
model taking ``response_format=`` as ``OpenAIChat`` does), and the real local model (llama.cpp +
Gemma 3 270M, marked ``model``) for typed answers through ``response_format``. Tests named after a
public report reproduce the shape of that report.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import threading
from typing import Any, TypedDict

import pytest

from tests.strict_openai import validate
from yiemagent import Agent, ConfigError, ModelRetry, tool
from yiemagent.output.typed_output import OutputInvalid, output_spec, parse_json_text, schema_of
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply


@dataclasses.dataclass
class Weather:
    city: str
    temperature_c: int


class Sky(enum.Enum):
    CLEAR = "clear"
    RAIN = "rain"


@dataclasses.dataclass
class Report:
    """A weather report."""

    weather: Weather
    sky: Sky
    notes: list[str] = dataclasses.field(default_factory=list)
    date: str | None = None


class WeatherDict(TypedDict):
    city: str
    temperature_c: int


PARIS = '{"city": "Paris", "temperature_c": 21}'


class FormatLLM:
    """A scripted model that takes ``response_format=`` (as ``OpenAIChat`` does) and records it."""

    def __init__(self, responses: list[Any]) -> None:
        self.scripted = ScriptedLLM(responses)
        self.formats: list[dict[str, Any] | None] = []

    @property
    def calls(self) -> list[dict[str, Any]]:
        return self.scripted.calls

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 response_format: dict[str, Any] | None = None) -> dict[str, Any]:
        self.formats.append(response_format)
        return self.scripted(messages, tools)


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"21 C in {city}"


def valid_history(agent: Agent) -> None:
    """Every request the agent would send now is valid (each tool call answered, in order)."""
    validate(agent.openai_messages())


# ---------------------------------------------------------------------------- schemas


def test_schema_of_a_nested_dataclass_with_enum_list_and_optional() -> None:
    name, schema = schema_of(Report)
    assert name == "Report" and schema["description"] == "A weather report."
    assert schema["required"] == ["weather", "sky"] and schema["additionalProperties"] is False
    assert schema["properties"]["weather"]["required"] == ["city", "temperature_c"]
    assert schema["properties"]["sky"] == {"enum": ["clear", "rain"]}
    assert schema["properties"]["notes"] == {"type": "array", "items": {"type": "string"}}
    assert schema["properties"]["date"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    spec = output_spec(Report)
    parsed = spec.parse({"weather": {"city": "Oslo", "temperature_c": -3}, "sky": "rain"})
    assert parsed == Report(Weather("Oslo", -3), Sky.RAIN)
    assert spec.response_format()["json_schema"]["strict"] is False  # optional fields: not strict-compatible
    assert output_spec(Weather).response_format()["json_schema"]["strict"] is True


def test_parse_json_text_tolerates_fences_and_prose_and_says_what_it_saw() -> None:
    assert parse_json_text('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_text('Here it is: {"a": [1, 2]} - done') == {"a": [1, 2]}
    with pytest.raises(OutputInvalid, match=r"not JSON.*Sunny"):
        parse_json_text("Sunny and warm")


def test_bad_settings_are_refused_at_once() -> None:
    with pytest.raises(ConfigError, match="output_type"):
        Agent(ScriptedLLM([]), output_type=threading.Lock)
    with pytest.raises(ConfigError, match="output_mode"):
        Agent(ScriptedLLM([]), output_type=Weather, output_mode="json")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="output_retries"):
        Agent(ScriptedLLM([]), output_type=Weather, output_retries=-1)
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        Agent(ScriptedLLM([]), output_type={"type": "objekt"})
    answer = Agent(ScriptedLLM([text_reply(PARIS)]), output_type=Weather, output_mode="response_format").ask("x")
    assert answer["status"] == "error" and "response_format" in answer["error"]  # this llm_call cannot take it


# ---------------------------------------------------------------------------- response_format


def test_a_dataclass_answer_through_response_format() -> None:
    llm = FormatLLM([text_reply(PARIS)])
    answer = Agent(llm, output_type=Weather).ask("It is 21 degrees in Paris.")
    assert answer["status"] == "completed" and answer["output"] == Weather("Paris", 21)
    assert llm.formats[0] == {"type": "json_schema", "json_schema": {
        "name": "Weather", "schema": schema_of(Weather)[1], "strict": True}}
    assert llm.calls[0]["messages"] == [{"role": "user", "content": "It is 21 degrees in Paris."}]  # no extra words


def test_openai_agents_3709_response_format_is_not_sent_while_tools_are_offered() -> None:
    """openai-agents #3709: output_type sent as response_format on every turn; a server that constrains
    every token (vLLM guided decoding) then never calls a tool. Here (auto) a request offering tools goes
    without it. ``strict_server`` is a raw fake of such a server (no real program sends this shape here).
    """
    formats: list[Any] = []

    def strict_server(messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                      response_format: dict[str, Any] | None = None) -> dict[str, Any]:
        formats.append((bool(tools), response_format is not None))
        if response_format is not None:  # constrained from the first token: no tool call possible
            return text_reply('{"city": "unknown", "temperature_c": 0}')
        if not any(m["role"] == "tool" for m in messages):
            return tool_call_reply("get_weather", {"city": "Paris"})
        return text_reply(PARIS)

    agent = Agent(strict_server, tools=[get_weather], output_type=Weather)
    answer = agent.ask("Weather in Paris?")
    assert answer["output"] == Weather("Paris", 21) and formats == [(True, False), (True, False)]
    assert [m["role"] for m in agent.openai_messages()] == ["user", "assistant", "tool", "assistant"]
    formats.clear()  # the documented explicit mode sends it on every request, as OpenAI's hosted API allows
    forced = Agent(strict_server, tools=[get_weather], output_type=Weather, output_mode="response_format")
    assert forced.ask("Weather in Paris?")["output"] == Weather("unknown", 0) and formats == [(True, True)]


def test_llamacpp_24097_schema_not_enforced_the_answer_is_validated_and_retried_without_tools() -> None:
    """llama.cpp #24097 / #19051: the server accepts json_schema with HTTP 200 and does not enforce it.
    The answer is validated here; the error goes back and the retry is sent with tools off, schema on.
    """
    llm = FormatLLM([text_reply("It is 21 degrees in Paris."), text_reply(PARIS)])
    agent = Agent(llm, tools=[get_weather], output_type=Weather)
    answer = agent.ask("Weather in Paris?")
    assert answer["status"] == "completed" and answer["output"] == Weather("Paris", 21)
    assert llm.formats[0] is None and llm.calls[0]["tools"]  # tools offered: no response_format
    assert llm.formats[1] is not None and llm.calls[1]["tools"] == []  # the retry: constrained, no tools
    retry = llm.calls[1]["messages"][-1]
    assert retry["role"] == "user" and "not JSON" in retry["content"] and "Weather" in retry["content"]
    valid_history(agent)


def test_pydantic_ai_200_retries_exhausted_end_the_run_output_invalid_not_an_exception() -> None:
    """pydantic-ai #200: "Exceeded maximum retries (1) for result validation" raised out of the run.
    Here the run ends with status output_invalid, the error says why, the history stays valid.
    """
    llm = FormatLLM([text_reply('{"city": "Paris"}')] * 3 + [text_reply(PARIS)])
    agent = Agent(llm, output_type=Weather, output_retries=2)
    answer = agent.ask("Weather in Paris?")
    assert answer["status"] == "output_invalid" and "output" not in answer
    assert "'temperature_c' is a required property" in answer["error"] and len(llm.calls) == 3
    valid_history(agent)
    assert agent.ask("And now?")["output"] == Weather("Paris", 21)  # the agent goes on


def test_omlx_2990_json_padded_with_whitespace_to_the_token_limit_is_retried_with_the_reason() -> None:
    """The omlx #2990 case (also xgrammar #412, seen here on llama.cpp + Gemma): constrained JSON padded
    with whitespace until max_tokens, finish_reason "length". The model is told why; the retry's answer counts.
    """
    runaway = text_reply('{\n  \t  \t  \t  "city"\n  \t  \t  \t  :\n  \t  \t', finish_reason="length")
    llm = FormatLLM([runaway, text_reply(PARIS)])
    answer = Agent(llm, output_type=Weather).ask("It is 21 degrees in Paris.")
    assert answer["status"] == "completed" and answer["output"] == Weather("Paris", 21)
    assert "cut by the token limit" in llm.calls[1]["messages"][-1]["content"]
    exhausted = Agent(FormatLLM([runaway]), output_type=Weather, output_retries=0).ask("x")
    assert exhausted["status"] == "output_invalid" and "cut by the token limit" in exhausted["error"]


def test_fallback_llm_passes_response_format_only_to_models_that_take_it() -> None:
    """A typed answer through fallback_llm(openai_chat-like, plain): the plain backup gets no keyword it
    cannot take (before: TypeError, the run ended in error), and its answer is still validated.
    """
    from yiemagent import LLMError, fallback_llm

    down = FormatLLM([LLMError("overloaded", status_code=503)])
    backup = ScriptedLLM([text_reply(PARIS)])
    answer = Agent(fallback_llm(down, backup), output_type=Weather).ask("x")
    assert answer["status"] == "completed" and answer["output"] == Weather("Paris", 21)
    assert down.formats[0] is not None and len(backup.calls) == 1


# ---------------------------------------------------------------------------- the final_answer tool


def test_langchain_36349_a_model_that_forgets_the_answer_tool_is_told_to_call_it() -> None:
    """LangChain #36349: structured responses silently missing when the model forgets the tool call.
    Here the text is sent back naming the tool, and the model's next call gives the output.
    """
    llm = ScriptedLLM([text_reply("It is warm in Paris."), tool_call_reply("final_answer", json.loads(PARIS))])
    agent = Agent(llm, tools=[get_weather], output_type=Weather)  # ScriptedLLM takes no response_format: tool mode
    answer = agent.ask("Weather in Paris?")
    assert answer["output"] == Weather("Paris", 21) and json.loads(answer["content"]) == json.loads(PARIS)
    assert [t["function"]["name"] for t in llm.calls[0]["tools"]] == ["get_weather", "final_answer"]
    assert "calling the tool final_answer" in llm.calls[1]["messages"][-1]["content"]
    assert "final_answer" not in agent.tools  # added for the run only
    valid_history(agent)


def test_final_answer_called_with_another_tool_in_one_reply_answers_every_call() -> None:
    """pydantic-ai's output tool called alongside a function tool: the run ends, no call is left unanswered."""
    calls = [{"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
             {"id": "b", "type": "function", "function": {"name": "final_answer", "arguments": PARIS}}]
    reply = {"choices": [{"index": 0, "finish_reason": "tool_calls",
                          "message": {"role": "assistant", "content": None, "tool_calls": calls}}]}
    agent = Agent(ScriptedLLM([reply]), tools=[get_weather], output_type=Weather)
    answer = agent.ask("Weather in Paris?")
    assert answer["status"] == "completed" and answer["output"] == Weather("Paris", 21)
    assert [m.get("tool_call_id") for m in agent.openai_messages() if m["role"] == "tool"] == ["a", "b"]
    valid_history(agent)


def test_invalid_final_answer_arguments_get_the_validation_error_as_the_tool_result() -> None:
    llm = ScriptedLLM([tool_call_reply("final_answer", {"city": "Paris", "temperature_c": "warm"}),
                       tool_call_reply("final_answer", json.loads(PARIS), call_id="call_2")])
    agent = Agent(llm, output_type=Weather)
    assert agent.ask("x")["output"] == Weather("Paris", 21)
    result = llm.calls[1]["messages"][-1]
    assert result["role"] == "tool" and "'warm' is not of type 'integer'" in result["content"]
    valid_history(agent)


def test_final_answer_calls_that_keep_failing_end_output_invalid_with_every_call_answered() -> None:
    bad = [tool_call_reply("final_answer", {"city": "Paris", "temperature_c": f"warm {n}"}, call_id=f"c{n}")
           for n in range(3)]
    llm = ScriptedLLM(bad)
    agent = Agent(llm, tools=[get_weather], output_type=Weather, output_retries=1)
    answer = agent.ask("x")
    assert answer["status"] == "output_invalid" and len(llm.calls) == 2 and "tool_calls" not in answer
    assert "did not match Weather after 2 attempts" in answer["content"] and "is not of type" in answer["error"]
    assert [m["tool_call_id"] for m in agent.openai_messages() if m["role"] == "tool"] == ["c0", "c1"]
    valid_history(agent)


def test_a_schema_that_is_not_an_object_is_wrapped_in_the_tool_and_unwrapped_in_the_output() -> None:
    schema = {"type": "array", "items": {"type": "string"}, "title": "Cities"}
    llm = ScriptedLLM([tool_call_reply("final_answer", {"response": ["Paris", "Oslo"]})])
    answer = Agent(llm, output_type=schema).ask("Two cities?")
    assert answer["output"] == ["Paris", "Oslo"]
    assert llm.calls[0]["tools"][0]["function"]["parameters"]["properties"]["response"]["type"] == "array"


# ---------------------------------------------------------------------------- validators


def test_pydantic_ai_3000_an_output_validator_rejects_with_model_retry_in_both_paths() -> None:
    """pydantic-ai #3000 (ModelRetry from a validator): the message goes back and the model tries again."""
    seen: list[Weather] = []

    def plausible(output: Weather) -> None:
        seen.append(output)
        if output.temperature_c > 60:
            raise ModelRetry("temperature_c above 60 is not plausible; read the sentence again")

    text = FormatLLM([text_reply('{"city": "Paris", "temperature_c": 210}'), text_reply(PARIS)])
    assert Agent(text, output_type=Weather, output_validators=[plausible]).ask("x")["output"] == Weather("Paris", 21)
    assert "not plausible" in text.calls[1]["messages"][-1]["content"]
    calls = ScriptedLLM([tool_call_reply("final_answer", {"city": "Paris", "temperature_c": 210}),
                         tool_call_reply("final_answer", json.loads(PARIS), call_id="call_2")])
    agent = Agent(calls, output_type=Weather, output_validators=[plausible])
    assert agent.ask("x")["output"] == Weather("Paris", 21)
    error = calls.calls[1]["messages"][-1]
    assert error["role"] == "tool" and "not plausible" in error["content"] and len(seen) == 4
    valid_history(agent)


def test_pydantic_model_output_and_its_field_validator_error_is_sent_back() -> None:
    pydantic = pytest.importorskip("pydantic")

    class City(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        name: str

        @pydantic.field_validator("name")  # type: ignore[misc]
        @classmethod
        def capitalised(cls, value: str) -> str:
            if not value[:1].isupper():
                raise ValueError("the city name must start with a capital letter")
            return value

    llm = FormatLLM([text_reply('{"name": "paris"}'), text_reply('{"name": "Paris"}')])
    answer = Agent(llm, output_type=City).ask("Which city?")
    assert isinstance(answer["output"], City) and answer["output"].name == "Paris"
    assert "capital letter" in llm.calls[1]["messages"][-1]["content"]
    assert llm.formats[0]["json_schema"]["name"] == "City"  # type: ignore[index]


# ---------------------------------------------------------------------------- types, modes, entry points


def test_typeddict_and_schema_dict_give_dicts_and_prompted_mode_reads_the_text() -> None:
    llm = ScriptedLLM([text_reply(f"Sure:\n```json\n{PARIS}\n```")] * 2)
    agent = Agent(llm, output_type=WeatherDict, output_mode="prompted")
    assert agent.ask("x")["output"] == {"city": "Paris", "temperature_c": 21}
    assert llm.calls[0]["tools"] == [] and "JSON Schema (WeatherDict)" in llm.calls[0]["messages"][0]["content"]
    schema = {"title": "T", "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    assert agent.ask("y", output_type=schema)["output"] == json.loads(PARIS)


def test_per_input_output_type_overrides_the_agents_and_submit_and_stream_carry_output() -> None:
    @dataclasses.dataclass
    class City:
        city: str

    llm = FormatLLM([text_reply(PARIS), text_reply('{"city": "Oslo"}'), text_reply(PARIS)])
    agent = Agent(llm, output_type=Weather)
    with agent:
        assert agent.submit("a").result(timeout=10)["output"] == Weather("Paris", 21)
        assert agent.submit("b", output_type=City).result(timeout=10)["output"] == City("Oslo")
        items = list(agent.stream("c"))
    assert llm.formats[1]["json_schema"]["name"] == "City"  # type: ignore[index]
    assert items[-1]["output"] == Weather("Paris", 21) and items[-1]["status"] == "completed"


# ---------------------------------------------------------------------------- the real local model


@pytest.mark.model
def test_local_model_typed_answer_through_response_format(local_model: Any) -> None:
    """llama.cpp constrains Gemma 3 270M to the schema: the answer parses into the dataclass."""
    agent = Agent(local_model.llm_call(max_tokens=60), output_type=Weather)
    answer = agent.ask("It is 21 degrees in Paris today. Extract the city and temperature as JSON.")
    assert answer["status"] == "completed" and answer["output"] == Weather("Paris", 21)


@pytest.mark.model
def test_local_model_llamacpp_11847_json_schema_on_a_tools_request_blocks_tool_calls(local_model: Any) -> None:
    """llama.cpp #11847 / openai-agents #3709 on the real server: with response_format on a request that
    offers tools, Gemma can only write the schema's JSON, so the tool is never called. ``auto`` sends the
    tools request without it; the typed answer still comes (the retry carries the schema).
    """
    ran: list[str] = []
    sent: list[tuple[int, bool]] = []
    chat = local_model.llm_call(max_tokens=40)

    def recording(messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                  response_format: dict[str, Any] | None = None) -> dict[str, Any]:
        sent.append((len(tools), response_format is not None))
        return chat(messages, tools, response_format=response_format)

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        ran.append(city)
        return f"Sunny, 21 C in {city}."

    forced = Agent(recording, tools=[get_weather], output_type=Weather, output_mode="response_format")
    answer = forced.ask("What is the weather in Paris?")
    assert isinstance(answer["output"], Weather) and ran == [] and sent == [(1, True)]
    sent.clear()
    auto = Agent(recording, tools=[get_weather], output_type=Weather, max_turns=4)
    answer = auto.ask("What is the weather in Paris?")
    assert answer["status"] == "completed" and isinstance(answer["output"], Weather)
    assert sent[0] == (1, False) and sent[-1] == (0, True)  # tools without the schema; the answer constrained
    valid_history(auto)


def test_trial_2026_12_01_output_type_str_says_the_answer_is_text_already() -> None:
    """A fresh user's trial: ``output_type=str`` made a plain "hi" invalid (the model had to answer ``"\\"hi\\""``)."""
    from yiemagent import Agent
    from yiemagent.exceptions import ConfigError
    from yiemagent.testing import ScriptedLLM, text_reply

    with pytest.raises(ConfigError, match="text already"):
        Agent(ScriptedLLM([text_reply("hi")]), output_type=str)
    with pytest.raises(ConfigError, match="text already"):
        Agent(ScriptedLLM([text_reply("hi")])).ask("hi", output_type=str)


@dataclasses.dataclass
class _Node:
    """A tree: each node names its children (the type refers to itself)."""

    name: str
    children: list[_Node]


def test_issue_27_a_recursive_output_type_is_described_with_defs_and_answers_as_nested_objects() -> None:
    """Issue 27: a recursive ``output_type`` (a dataclass tree) raised ``RecursionError`` from the constructor.
    It is described once under ``$defs`` and referred to by ``$ref``; answers validate and come back nested.
    """
    tree = '{"name": "root", "children": [{"name": "leaf", "children": []}]}'
    agent = Agent(ScriptedLLM([text_reply(tree)]), output_type=_Node)
    answer = agent.ask("the tree?")
    assert answer["status"] == "completed", answer
    assert answer["output"] == _Node("root", [_Node("leaf", [])])
    from yiemagent.tools.type_schema import type_schema

    schema = type_schema(_Node, structured=True)
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/_Node"} and "_Node" in schema["$defs"]


def test_issue_27_an_output_validator_that_hangs_is_cut_by_the_asks_deadline() -> None:
    """Issue 27: an output validator sleeping 20 s ignored ``ask(timeout_seconds=8)``. Validators of a text
    answer run where an abort cuts the wait: the deadline's ``TimeoutError`` comes at the deadline, the run aborted.
    """
    import time

    release = threading.Event()

    def slow_check(weather: Weather) -> None:
        release.wait(20)

    agent = Agent(ScriptedLLM([text_reply(PARIS)]), output_type=Weather, output_validators=[slow_check])
    started = time.monotonic()
    try:
        with pytest.raises(TimeoutError, match="aborted"):  # ask's documented deadline error
            agent.ask("x", timeout_seconds=1)
        assert time.monotonic() - started < 6  # generous: the validator alone would take 20 s
    finally:
        release.set()
    assert agent.history[-1].role == "assistant"  # the history stays valid: the run ended, aborted
