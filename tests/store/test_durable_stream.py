"""``Agent.stream`` on a store (issue 20, point 3): the input is in the inbox before the first event, the
stream names it (``input_id``, ``seq``), ``find_input`` finds it by id, and the same ``input_id`` again is
stored once and answered from the store without a second run. Both backends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from yiemagent import Agent, ConfigError, sse_events
from yiemagent.formats.sse import SSEParser
from yiemagent.store.base import find_input
from yiemagent.testing import ScriptedLLM, text_reply


@pytest.mark.parametrize("started", [False, True])
def test_a_durable_stream_names_its_input_first_and_a_repeated_input_id_is_answered_from_the_store(
        store: Any, started: bool) -> None:
    llm = ScriptedLLM([text_reply("first answer"), text_reply("second answer")], delta_chars=3)
    agent = Agent(llm, store=store, conversation_id="c-1")
    if started:
        agent.start()
    try:
        stream = agent.stream("hello", input_id="req-1")
        assert (stream.input_id, stream.seq) == ("req-1", 1)
        entry = find_input(store, "c-1", "req-1")
        assert entry is not None and entry.seq == 1  # in the inbox before anyone read an event
        events = [(e.event, json.loads(e.data)) for e in SSEParser().feed("".join(sse_events(stream)))]
        assert events[0] == ("input", {"input_id": "req-1", "seq": 1})
        assert events[-1][0] == "answer" and events[-1][1]["content"] == "first answer"
        assert find_input(store, "c-1", "req-1").answer["content"] == "first answer"  # type: ignore[union-attr]

        again = agent.stream("hello", input_id="req-1")  # a client retrying after a cut connection
        assert again.seq == 1
        assert again.text() == "first answer" and len(llm.calls) == 1  # not run twice
        assert [m["role"] for m in agent.openai_messages()] == ["user", "assistant"]
        assert find_input(store, "c-1", "nope") is None
        with pytest.raises(ConfigError, match="input_id"):
            agent.stream("x", input_id="")
    finally:
        agent.shutdown()


def test_find_input_of_a_store_without_it_says_what_to_use_instead() -> None:
    """A ``ConversationStore`` of one's own need not have ``find_input``: the error names ``get_input``."""
    with pytest.raises(ConfigError, match="get_input"):
        find_input(object(), "c", "i")  # type: ignore[arg-type]
