"""``Agent`` made of parts (issue 25 point 2): what the mixins did for free, the parts must keep.

Each case here was found by a fresh user's trial of the refactor (yiemagent-defined behaviour that held
before the parts and broke in the first draft of them).
"""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from yiemagent import Agent, tool
from yiemagent.exceptions import ConfigError
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply


def _slow_tool(gate: threading.Event):
    @tool
    def slow() -> str:
        """Wait for the gate."""
        assert gate.wait(30)
        return "ok"

    return slow


def test_a_started_agent_nobody_keeps_serves_its_input_to_the_end():
    """``Agent(...).start().submit(...)`` with no reference kept: the agent thread keeps the agent (and its
    pool) alive until it stops; the first draft let the finalizer shut the pool under the run
    ("cannot schedule new futures after shutdown").
    """
    gate = threading.Event()
    agent = Agent(ScriptedLLM([tool_call_reply("slow", {}), text_reply("done")]), tools=[_slow_tool(gate)],
                  name="unkept").start()
    alive = weakref.ref(agent)
    future = agent.submit("go")
    del agent
    gc.collect()
    gate.set()
    answer = future.result(timeout=60)
    assert (answer["status"], answer["content"]) == ("completed", "done")
    kept = alive()
    assert kept is not None  # the running thread holds it
    kept.shutdown()
    assert not kept.is_running


def test_a_stream_of_an_agent_nobody_keeps_runs_to_its_answer():
    """``Agent(...).stream(...)`` before ``start()``, the agent dropped: the run's thread holds it."""
    gate = threading.Event()
    stream = Agent(ScriptedLLM([tool_call_reply("slow", {}), text_reply("done")]),
                   tools=[_slow_tool(gate)]).stream("go")
    gc.collect()
    gate.set()
    items = list(stream)
    assert items[-1]["content"] == "done" and items[-1]["status"] == "completed"


def test_approve_and_reject_go_through_decide_so_a_subclass_sees_every_decision():
    """A subclass overriding ``decide`` (to audit decisions) sees ``approve`` and ``reject`` too, as with
    the mixins.
    """
    seen = []

    class AuditedAgent(Agent):
        def decide(self, decisions, *, timeout_seconds=None):
            seen.append(dict(decisions))
            return super().decide(decisions, timeout_seconds=timeout_seconds)

    @tool(needs_approval=True)
    def delete(name: str) -> str:
        """Delete a file."""
        return f"deleted {name}"

    replies = [tool_call_reply("delete", {"name": "a"}, call_id="c1"), text_reply("first"),
               tool_call_reply("delete", {"name": "b"}, call_id="c2"), text_reply("second")]
    agent = AuditedAgent(ScriptedLLM(replies), tools=[delete])
    assert agent.ask("remove a", timeout_seconds=30)["status"] == "awaiting_approval"
    assert agent.approve("c1", timeout_seconds=30)["content"] == "first"
    assert agent.ask("remove b", timeout_seconds=30)["status"] == "awaiting_approval"
    assert agent.reject("c2", "no", timeout_seconds=30)["content"] == "second"
    assert seen == [{"c1": True}, {"c2": "no"}]
    agent.shutdown()


def test_event_sink_and_emit_intermediate_set_later_are_checked_as_in_the_constructor():
    """``agent.event_sink = "x"`` is a ``ConfigError`` naming it, as ``Agent(event_sink="x")`` is; the
    value stays what it was.
    """
    agent = Agent(ScriptedLLM([text_reply("hi")]))
    with pytest.raises(ConfigError, match="event_sink"):
        agent.event_sink = "x"  # type: ignore[assignment]
    with pytest.raises(ConfigError, match="emit_intermediate"):
        agent.emit_intermediate = "no"  # type: ignore[assignment]
    assert agent.event_sink is None and agent.emit_intermediate is False
    events = []
    agent.event_sink = events.append
    assert agent.ask("x", timeout_seconds=30)["content"] == "hi"
    assert any(event.type == "agent_end" for event in events)
    agent.shutdown()


def test_an_agent_dropped_after_ask_ends_its_workers_without_waiting_for_the_cycle_collector():
    """No part holds the agent (they hold one another and weak references to it), so ``del agent`` after
    ``ask()`` runs the finalizer at once and the worker threads end; with the mixins a reference cycle
    kept them until ``gc.collect()``.
    """
    gc.disable()
    try:
        agent = Agent(ScriptedLLM([text_reply("hi")]), name="dropped-parts")
        assert agent.ask("x", timeout_seconds=30)["content"] == "hi"
        workers = [t for t in threading.enumerate() if t.name.startswith("yiemagent-dropped-parts-worker")]
        assert workers
        del agent
        for worker in workers:
            worker.join(30)
        assert not any(worker.is_alive() for worker in workers)
    finally:
        gc.enable()
