"""Guardrails (issue 29 point 2): input, output and tool guardrails, tripwires, retries, streaming, durability.

The model is ``ScriptedLLM`` (what it says is the test's); tests named after a peer's report say which
one. Durable runs use a real SQLite store and a real crash (``SimulatedCrash`` raised by the event
sink after the tripwire was journaled, before the run committed).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from yiemagent import Agent, ConfigError, Guardrail, GuardrailVerdict, tool
from yiemagent.testing import EventRecorder, ScriptedLLM, SimulatedCrash, text_reply, tool_call_reply
from yiemagent.tools.guardrails import GuardrailContext


class Counted:
    """A guardrail that trips on ``word`` (or sends back, ``kind="retry"``) and counts its runs."""

    def __init__(self, word: str, kind: str = "tripwire", delay: float = 0.0) -> None:
        self.word, self.kind, self.delay, self.seen = word, kind, delay, []
        self.__name__ = f"no_{word}"

    def __call__(self, ctx: GuardrailContext) -> GuardrailVerdict | None:
        self.seen.append((ctx.stage, ctx.text))
        time.sleep(self.delay)
        if self.word not in ctx.text:
            return None
        if self.kind == "retry":
            return GuardrailVerdict.retry(f"do not say {self.word}")
        return GuardrailVerdict.tripwire(f"mentions {self.word}", {"word": self.word})


def tripped(recorder: EventRecorder) -> list[Any]:
    return [e for e in recorder.events if e.type == "guardrail_tripped"]


def test_an_input_tripwire_ends_the_run_before_the_model_is_asked_and_the_next_input_goes_on_without_it():
    llm, recorder, guard = ScriptedLLM([text_reply("fine")]), EventRecorder(), Counted("password")
    agent = Agent(llm, input_guardrails=[guard], event_sink=recorder)
    answer = agent.ask("my password is hunter2")
    assert answer["status"] == "guardrail_tripped" and llm.calls == []
    assert answer["guardrail"]["stage"] == "input" and answer["guardrail"]["guardrail"] == "no_password"
    assert answer["guardrail"]["info"] == {"word": "password"} and "mentions password" in answer["content"]
    (event,) = tripped(recorder)
    assert (event.stage, event.outcome, event.replayed) == ("input", "ended", False)
    assert [e.type for e in recorder.events][-2:] == ["guardrail_tripped", "agent_end"]
    assert agent.ask("hello")["content"] == "fine"
    sent = [m.get("content") for m in llm.calls[0]["messages"]]
    assert "my password is hunter2" not in sent and "hello" in sent  # the tripped input is left out


def test_input_tripwire_with_a_tool_reply_runs_no_tool_openai_agents_991():
    """openai-agents #991/#889: a parallel input guardrail tripped, yet the first reply's tools ran.

    Here the guardrail runs beside the model call (``parallel=True``), the model answers first with a
    tool call, and the guardrail trips later: the tool must not run.
    """
    ran = []

    @tool
    def delete_all() -> str:
        """Delete everything."""
        ran.append(1)
        return "deleted"

    llm = ScriptedLLM([tool_call_reply("delete_all", {}), text_reply("done")])
    guard = Counted("delete", delay=0.3)
    answer = Agent(llm, tools=[delete_all], input_guardrails=[Guardrail(guard, parallel=True)]).ask("delete it all")
    assert answer["status"] == "guardrail_tripped" and ran == [] and len(llm.calls) == 1


def test_a_parallel_input_tripwire_cuts_a_slow_model_call():
    started = threading.Event()

    def slow(messages: Any, tools: Any) -> dict[str, Any]:
        started.set()
        time.sleep(3)
        return text_reply("too late")

    recorder = EventRecorder()
    agent = Agent(ScriptedLLM([slow]), input_guardrails=[Guardrail(Counted("bomb", delay=0.2), parallel=True)],
                  event_sink=recorder)
    began = time.monotonic()
    answer = agent.ask("how to build a bomb")
    assert time.monotonic() - began < 2 and started.is_set()
    assert answer["status"] == "guardrail_tripped" and "too late" not in answer["content"]
    assert "aborted" not in [e.type for e in recorder.events]
    passing = Agent(ScriptedLLM([text_reply("hi")]), input_guardrails=[Guardrail(Counted("bomb"), parallel=True)])
    assert passing.ask("hello")["status"] == "completed"


def test_an_output_retry_sends_the_answer_back_and_the_next_one_is_accepted():
    llm, recorder = ScriptedLLM([text_reply("darn it"), text_reply("all good")]), EventRecorder()
    answer = Agent(llm, output_guardrails=[Counted("darn", "retry")], event_sink=recorder).ask("hi")
    assert answer["status"] == "completed" and answer["content"] == "all good"
    assert llm.calls[1]["messages"][-1] == {"role": "user", "content": "do not say darn"}
    assert [(e.stage, e.outcome) for e in tripped(recorder)] == [("output", "retried")]


def test_an_output_retry_on_the_last_turn_ends_the_run_as_a_tripwire():
    llm = ScriptedLLM([text_reply("darn")], repeat_last=True)
    answer = Agent(llm, output_guardrails=[Counted("darn", "retry")], max_turns=2).ask("hi")
    assert answer["status"] == "guardrail_tripped" and len(llm.calls) == 2


def test_streamed_text_that_trips_the_output_guardrail_is_replaced_openai_agents_495():
    """openai-agents #495/#300: what do users see of a streamed answer an output guardrail rejects?

    Policy: the deltas already sent stay sent; a ``guardrail_tripped`` event (``outcome="ended"``)
    tells the UI to replace them, and the answer (the stream's last item) carries the replacement.
    """
    llm = ScriptedLLM([text_reply("call me at ann@example.com")], delta_chars=5)
    from yiemagent.tools.guardrail_kinds import minimal_pii_detector, pii_guardrail

    agent = Agent(llm, output_guardrails=[pii_guardrail(detector=minimal_pii_detector)])
    items = list(agent.stream("how do I reach you?"))
    kinds = [getattr(i, "type", "answer") for i in items]
    shown = "".join(i.delta for i in items if getattr(i, "type", "") == "message_update")
    assert shown == "call me at ann@example.com"  # shown before the check could run
    assert kinds.index("guardrail_tripped") < kinds.index("agent_end") < kinds.index("answer")
    answer = items[-1]
    assert answer["status"] == "guardrail_tripped" and "ann@example.com" not in answer["content"]
    assert "e-mail address" in answer["content"] and "ann@example.com" not in str(answer["guardrail"])


def test_tool_guardrails_reject_a_call_or_end_the_run_and_withhold_a_result():
    ran: list[int] = []

    @tool
    def pay(amount: int) -> str:
        """Pay."""
        ran.append(amount)
        return f"paid {amount}; receipt to bob@example.com"

    def limit(ctx: GuardrailContext) -> GuardrailVerdict | None:
        if '"amount": 500' in ctx.text:
            return GuardrailVerdict.retry("at most 100 per payment")
        if '"amount": 900' in ctx.text:
            return GuardrailVerdict.tripwire("a payment this large needs a person")
        return None

    llm = ScriptedLLM([tool_call_reply("pay", {"amount": 500}), text_reply("sorry, too much")])
    recorder = EventRecorder()
    answer = Agent(llm, tools=[pay], tool_guardrails=[Guardrail(limit, stages=("tool_input",))],
                   event_sink=recorder).ask("pay 500")
    assert answer["status"] == "completed" and ran == []
    assert "at most 100 per payment" in llm.calls[1]["messages"][-1]["content"]
    assert [(e.stage, e.outcome, e.tool_call_id) for e in tripped(recorder)] == [("tool_input", "rejected", "call_1")]

    two = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "pay", "arguments": '{"amount": 900}'}},
        {"id": "b", "type": "function", "function": {"name": "pay", "arguments": '{"amount": 5}'}}]}}]}
    llm = ScriptedLLM([two, text_reply("never")])
    answer = Agent(llm, tools=[pay], tool_guardrails=[limit], tool_execution="sequential").ask("pay")
    assert answer["status"] == "guardrail_tripped" and ran == [] and len(llm.calls) == 1
    assert answer["guardrail"]["stage"] == "tool_input"

    from yiemagent.tools.guardrail_kinds import minimal_pii_detector, pii_guardrail

    llm = ScriptedLLM([tool_call_reply("pay", {"amount": 5}), text_reply("never")])
    agent = Agent(llm, tools=[pay], tool_guardrails=[pii_guardrail(detector=minimal_pii_detector)])
    answer = agent.ask("pay 5")
    assert answer["status"] == "guardrail_tripped" and ran == [5] and len(llm.calls) == 1  # it ran: result withheld
    assert answer["guardrail"]["stage"] == "tool_output"
    assert not any("bob@example.com" in str(m.get("content")) for m in agent.openai_messages())


def test_a_raising_guardrail_is_a_tripwire_and_bad_arguments_are_config_errors():
    def broken(ctx: GuardrailContext) -> GuardrailVerdict | None:
        raise RuntimeError("service down")

    answer = Agent(ScriptedLLM([text_reply("x")]), input_guardrails=[broken]).ask("hi")
    assert answer["status"] == "guardrail_tripped" and "service down" in answer["guardrail"]["reason"]
    with pytest.raises(ConfigError, match="input_guardrails"):
        Agent(ScriptedLLM([]), input_guardrails=["nope"])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="output_guardrails"):
        Agent(ScriptedLLM([]), output_guardrails=broken)  # type: ignore[arg-type]


class Crash(SimulatedCrash):
    """Stands for the process dying after the tripwire was journaled, before the run committed."""


@pytest.mark.parametrize("stage", ["input", "output"])
def test_a_durable_run_that_crashed_after_a_tripwire_ends_the_same_way_without_asking_again(
        sqlite_store_factory: Any, stage: str) -> None:
    guard = Counted("secret")
    llm = ScriptedLLM([text_reply("the secret is 42")] if stage == "output" else [text_reply("never")])
    kwargs = {f"{stage}_guardrails": [guard]}

    def crash(event: Any) -> None:
        if event.type == "agent_end":
            raise Crash()

    victim = Agent(llm, store=sqlite_store_factory(), conversation_id="c", event_sink=crash, **kwargs)
    with pytest.raises(Crash):
        victim.ask("tell me the secret" if stage == "input" else "tell me")
    calls, checks = len(llm.calls), len(guard.seen)
    recorder = EventRecorder()
    later = Agent(llm, store=sqlite_store_factory(), conversation_id="c", event_sink=recorder, **kwargs)
    (answer,) = later.drain()
    assert answer["status"] == "guardrail_tripped" and answer["guardrail"]["stage"] == stage
    assert len(llm.calls) == calls and len(guard.seen) == checks  # neither the model nor the guardrail again
    assert [(e.stage, e.replayed) for e in tripped(recorder)] == [(stage, True)]
    later.shutdown()
