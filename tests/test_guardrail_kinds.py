"""The ready guardrails: grounding (issue 29's demo failures), PII, and a real moderation endpoint.

Grounding cases are the ones issue 29 reports of the demo's embedded model: Kyiv's "-3 °C" given as
"27.8 °F", and Madrid answered with invented demographics and no tool call. The moderation guardrail
talks HTTP to tests/servers/scripted_openai_server.py (``POST /v1/moderations``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import free_port
from yiemagent import Agent, tool
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply
from yiemagent.tools.grounding import claims, grounding_guardrail, unsupported_claims
from yiemagent.tools.guardrail_kinds import minimal_pii_detector, moderation_guardrail, pii_guardrail


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return {"Kyiv": "Weather in Kyiv: Snow, -3 °C (demo data)."}.get(city, f"No weather data for {city!r}.")


def test_grounding_sends_back_kyiv_in_fahrenheit_and_accepts_the_tool_s_number():
    """Issue 29: the demo model turned the tool's "-3 °C" into "27.8 °F"."""
    llm = ScriptedLLM([tool_call_reply("get_weather", {"city": "Kyiv"}), text_reply("It is 27.8 °F in Kyiv."),
                       text_reply("It snows in Kyiv, -3 °C.")])
    recorder = EventRecorder()
    answer = Agent(llm, tools=[get_weather], output_guardrails=[grounding_guardrail()],
                   event_sink=recorder).ask("What is the weather in Kyiv?")
    assert answer["status"] == "completed" and answer["content"] == "It snows in Kyiv, -3 °C."
    feedback = llm.calls[2]["messages"][-1]["content"]
    assert "'27.8 °F'" in feedback and "do not know" in feedback
    (event,) = [e for e in recorder.events if e.type == "guardrail_tripped"]
    assert event.outcome == "retried" and event.info == {"unsupported": ["27.8 °F"]}


def test_grounding_ends_madrid_s_invented_demographics_with_i_do_not_know():
    """Issue 29: Madrid answered with invented demographics and no tool call, twice and again."""
    invented = "Madrid has 3.3 million inhabitants; most are Catholic and the median age is 44."
    llm = ScriptedLLM([text_reply(invented)], repeat_last=True)
    agent = Agent(llm, tools=[get_weather], output_guardrails=[grounding_guardrail(retries=2)])
    answer = agent.ask("Tell me about Madrid.")
    assert answer["status"] == "guardrail_tripped" and len(llm.calls) == 3  # the answer and 2 retries
    assert answer["content"].startswith("I do not know") and "'3.3 million'" in answer["content"]
    assert "Catholic" in answer["content"] and "44" in answer["content"]
    assert invented not in [m.get("content") for m in agent.openai_messages()]  # left out of later requests


def test_grounding_claims_and_their_sources():
    source = "What is the weather in Kyiv?\nWeather in Kyiv: Snow, -3 °C (demo data)."
    assert [c.text for c in claims("1. Snow\n2. It is 27.8 °F in Kyiv, Ukraine.")] == ["27.8 °F", "Kyiv", "Ukraine"]
    assert unsupported_claims("It is \u22123°C in Kyiv's snow.", source) == []  # Unicode minus, no space
    assert [c.text for c in unsupported_claims("It is -3 °F in Kyiv.", source)] == ["-3 °F"]  # the wrong unit
    assert [c.text for c in unsupported_claims("Berlin has fog.", source)] == []  # a sentence's first word
    assert [c.text for c in unsupported_claims("It snows in Berlin.", source)] == ["Berlin"]


def test_minimal_pii_detector_finds_emails_phones_and_luhn_valid_cards_only():
    text = ("mail ann@example.com, call +1 415 555 0132 or (415) 555-0132, card 4111 1111 1111 1111, "
            "not 4111 1111 1111 1112, in 2024 at -3 °C")
    found = [(f.entity, text[f.start:f.end]) for f in minimal_pii_detector(text)]
    assert found == [("EMAIL_ADDRESS", "ann@example.com"), ("PHONE_NUMBER", "+1 415 555 0132"),
                     ("PHONE_NUMBER", "(415) 555-0132"), ("CREDIT_CARD", "4111 1111 1111 1111")]


def test_pii_input_guardrail_with_retry_action_and_positions_only_in_info():
    guard = pii_guardrail(detector=minimal_pii_detector)
    answer = Agent(ScriptedLLM([text_reply("x")]), input_guardrails=[guard]).ask("card 4111 1111 1111 1111")
    assert answer["status"] == "guardrail_tripped"
    assert answer["guardrail"]["info"] == {"found": [{"entity": "CREDIT_CARD", "start": 5, "end": 24, "score": 1.0}]}
    assert "4111" not in json.dumps(answer["guardrail"])


def test_pii_guardrail_on_presidio_when_installed():
    pytest.importorskip("presidio_analyzer")
    from yiemagent.tools.guardrail_kinds import presidio_detector

    text = "write to ann@example.com, card 4111 1111 1111 1111, IBAN GB82 WEST 1234 5698 7654 32"
    kinds = {f.entity for f in presidio_detector()(text)}
    assert {"EMAIL_ADDRESS", "CREDIT_CARD", "IBAN_CODE"} <= kinds
    verdict = pii_guardrail().check  # the default detector is Presidio's here
    from yiemagent.tools.guardrails import GuardrailContext

    result = verdict(GuardrailContext("output", text))
    assert result is not None and result.kind == "tripwire" and "card number" in result.reason


def test_moderation_guardrail_against_an_openai_compatible_endpoint(scripted_model: tuple[str, Path]) -> None:
    base_url, log = scripted_model  # the scripted OpenAI-compatible server answers /v1/moderations too
    guard = moderation_guardrail(base_url, api_key="sk-test", model="omni-moderation-latest")
    llm = ScriptedLLM([text_reply("hello!")])
    agent = Agent(llm, input_guardrails=[guard])
    answer = agent.ask("I will hurt you")
    assert answer["status"] == "guardrail_tripped" and llm.calls == []
    assert answer["guardrail"]["info"]["categories"] == ["violence"]
    assert agent.ask("good morning")["content"] == "hello!"
    requests_seen: list[dict[str, Any]] = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["input"], r["authorization"], r["model"]) for r in requests_seen if r.get("moderation")] == [
        ("I will hurt you", "Bearer sk-test", "omni-moderation-latest"),
        ("good morning", "Bearer sk-test", "omni-moderation-latest")]


def test_moderation_endpoint_that_cannot_be_reached_fails_closed():
    guard = moderation_guardrail(f"http://127.0.0.1:{free_port()}/v1", timeout_seconds=2)
    llm = ScriptedLLM([text_reply("hello!")])
    answer = Agent(llm, input_guardrails=[guard]).ask("good morning")
    assert answer["status"] == "guardrail_tripped" and llm.calls == []
    assert "the guardrail failed" in answer["guardrail"]["reason"]


def test_issue_29_a_small_invented_number_is_a_claim_and_a_list_marker_is_not():
    """The demo's SmolLM2 answered "How many people live in Madrid?" with "The answer is 10." and no tool call;
    small numbers were exempt (as list markers), so the guardrail let it through. Only list markers are now.
    """
    from yiemagent.tools.grounding import unsupported_claims

    assert [c.text for c in unsupported_claims("The answer is 10.", "How many people live in Madrid?")] == ["10"]
    assert unsupported_claims("1. Paris: sunny\n2) 21 °C", "Weather in Paris: Sunny, 21 °C") == []
    assert unsupported_claims("It takes 2 steps.", "Do it in 2 steps.") == []
