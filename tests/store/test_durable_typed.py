"""Typed answers of durable runs (issue 18 point 1): the typed answer survives a crash.

The crash is a ``SimulatedCrash`` raised by the event sink at ``agent_end``: the model's final reply
is in the journal, nothing is committed (as if the process died just before the commit). A new
agent on the conversation (another process, say) finishes the run from the journal, without asking
the model again. The schema asked for is stored with the input, so a worker that does not know the
type still validates against it and returns the JSON.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.strict_openai import validate
from yiemagent import Agent
from yiemagent.loop.events import Event
from yiemagent.testing import ScriptedLLM, SimulatedCrash, text_reply

Factory = Callable[[], Any]


class Crash(SimulatedCrash):
    """Stands for the process dying: nothing in yiemagent catches it."""


@dataclasses.dataclass
class Weather:
    city: str
    temperature_c: int


PARIS = {"city": "Paris", "temperature_c": 21}


def crash_at_the_end(event: Event) -> None:
    if event.type == "agent_end":  # the final reply is journaled; the commit has not happened
        raise Crash()


@pytest.fixture
def s(store_factory: Factory) -> Any:
    made = store_factory()
    yield made
    made.close()


def test_a_typed_answer_journaled_before_a_crash_is_recovered_as_the_type(s: Any, store_factory: Factory) -> None:
    llm = ScriptedLLM([text_reply(json.dumps(PARIS))])
    with pytest.raises(Crash):
        Agent(llm, store=s, conversation_id="c-7", output_type=Weather, event_sink=crash_at_the_end).ask("Paris, 21")
    assert [e.seq for e in s.pending("c-7")] == [1] and s.load("c-7").version == 0  # nothing committed
    stored = s.pending("c-7")[0].message["yiemagent_output"]
    assert stored["name"] == "Weather" and stored["schema"]["required"] == ["city", "temperature_c"]
    later = ScriptedLLM([])  # the model must not be asked again
    answers = Agent(later, store=store_factory(), conversation_id="c-7", output_type=Weather).drain()
    assert answers[0]["status"] == "completed" and answers[0]["output"] == Weather("Paris", 21)
    assert later.calls == []
    assert s.get_input("c-7", 1).answer["output"] == PARIS  # the store keeps JSON


def test_a_worker_without_the_type_validates_against_the_stored_schema(s: Any, store_factory: Factory) -> None:
    """The first process asked ask(..., output_type=Weather) and died after an invalid answer was journaled.
    A worker that knows no output type finishes the run with the stored schema: the invalid answer is sent
    back, the model's next answer is validated, and the output is the JSON (a dict).
    """
    first = ScriptedLLM([text_reply("It is 21 degrees in Paris."), text_reply("never asked")])

    def crash_on_retry(event: Event) -> None:
        if event.type == "message_start" and getattr(event, "role", None) == "user" and len(first.calls) == 1:
            raise Crash()  # the retry message is about to be added: the process dies

    agent = Agent(first, store=s, conversation_id="c-8", event_sink=crash_on_retry)
    with pytest.raises(Crash):
        agent.ask("Paris, 21", output_type=Weather)
    worker = ScriptedLLM([text_reply(json.dumps(PARIS))])
    recovering = Agent(worker, store=store_factory(), conversation_id="c-8")
    answers = recovering.drain()
    assert answers[0]["output"] == PARIS and len(first.calls) == 1 and len(worker.calls) == 1
    retry = worker.calls[0]["messages"][-1]
    assert retry["role"] == "user" and "not JSON" in retry["content"] and "Weather" in retry["content"]
    validate(recovering.openai_messages())


def test_an_input_served_by_another_worker_comes_back_as_the_type(s: Any, store_factory: Factory) -> None:
    """submit() puts the input in the inbox at once; a worker that knows no type serves it (a dict, from the
    stored schema); the submitting agent then finds it answered and its future gets the dataclass.
    """
    mine = ScriptedLLM([])
    agent = Agent(mine, store=s, conversation_id="c-9", output_type=Weather)
    future = agent.submit("Paris, 21")  # not started: only in the inbox
    worker = Agent(ScriptedLLM([text_reply(json.dumps(PARIS))]), store=store_factory(), conversation_id="c-9")
    assert worker.drain()[0]["output"] == PARIS
    with agent:
        assert future.result(timeout=30)["output"] == Weather("Paris", 21)
    assert mine.calls == [] and s.get_input("c-9", 1).answer["output"] == PARIS
