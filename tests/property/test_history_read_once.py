"""The history read when it is set (issue 34 point 5) sends what the full path sends (property test).

``agent.history = [...]`` reads the history into the index, the formatter and the request guard at once
(``yiemagent.loop.model_turn.read_history``); the full path reads it at the first request. For any history
(orphan tool results, calls without results, excluded messages, blank texts) and system prompt, both send
the same request and report the same repairs.
"""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yiemagent import Agent
from yiemagent.loop import conversation
from yiemagent.messages import from_openai
from yiemagent.testing import ScriptedLLM, text_reply

ids = st.sampled_from(["call_1", "call_2", "dup"])
call = st.fixed_dictionaries({"id": ids, "type": st.just("function"), "function": st.fixed_dictionaries(
    {"name": st.sampled_from(["f", "g"]), "arguments": st.sampled_from(["{}", '{"a": 1}', "{bad"])})})
message = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": st.text(max_size=8)}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.one_of(st.none(), st.text(max_size=8))},
                          optional={"tool_calls": st.lists(call, min_size=1, max_size=2)}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": ids, "content": st.text(max_size=8)}),
)


def sent(history: list[dict[str, Any]], excluded: list[bool], system: str | None, read_at_set: bool,
         monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[Any]]:
    messages = [from_openai(m) for m in history]
    for m, out in zip(messages, excluded, strict=False):
        m.excluded = out
    with monkeypatch.context() as patch:
        if not read_at_set:  # the full path: nothing read before the first request
            patch.setattr(conversation, "read_history", lambda *args: None)
        repairs: list[Any] = []
        llm = ScriptedLLM([text_reply("ok")])
        agent = Agent(llm, system_prompt=system,
                      event_sink=lambda e: repairs.append(e.repairs) if e.type == "request_repaired" else None)
        agent.history = messages
    read = agent.conversation.config.request_guard.visited  # before any request: what the assignment read
    assert read == 0 if not read_at_set else read > 0 or all(m.excluded for m in messages), read
    answer = agent.ask("now")
    agent.shutdown()
    return (answer["status"], llm.calls[0]["messages"] if llm.calls else None), repairs


@settings(max_examples=60, deadline=None)
@given(st.lists(message, max_size=8), st.lists(st.booleans(), max_size=8), st.sampled_from([None, "Be brief."]))
def test_a_history_read_when_set_sends_what_the_full_path_sends(history, excluded, system):
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast = sent(history, excluded, system, True, monkeypatch)
        full = sent(history, excluded, system, False, monkeypatch)
    assert fast == full
