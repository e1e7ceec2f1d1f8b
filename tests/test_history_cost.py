"""Work per input does not grow with the history: counted, not timed (issue 26 point 6).

An input at 10,000 messages must read, convert, check and count exactly as many messages as an input at
100: the loop's index of the history (``yiemagent.context.history_index``) reads each message once, the
formatter converts only new messages and the request guard checks only new dicts. Counted with compaction
off and on (replies with and without ``usage``), after a compaction, after a failed run and with a sliding
window. The counters wrap the real functions; nothing is stubbed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from yiemagent import Agent
from yiemagent.context.compaction import Compaction
from yiemagent.messages import formatting, guard
from yiemagent.messages.types import AssistantMessage, UserMessage
from yiemagent.testing import text_reply


def history(n: int) -> list[Any]:
    out: list[Any] = []
    for i in range(n // 2):
        out += [UserMessage(f"question {i}"), AssistantMessage(f"answer {i}")]
    return out


class Counted:
    """How many messages the formatter converted and the guard checked (wrapping the real functions)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.converted = self.checked = 0
        real_convert, real_check = formatting.to_openai, guard._check_message

        def convert(message: Any) -> dict[str, Any]:
            self.converted += 1
            return real_convert(message)

        def check(message: Any, index: int) -> Any:
            self.checked += 1
            return real_check(message, index)

        monkeypatch.setattr(formatting, "to_openai", convert)
        monkeypatch.setattr(guard, "_check_message", check)


def reply(usage: bool) -> Any:
    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        answer = text_reply("ok")
        if usage:
            answer["usage"] = {"prompt_tokens": 10 * len(messages), "completion_tokens": 2}
        return answer
    return model


def work_of_one_input(monkeypatch: pytest.MonkeyPatch, n: int, **options: Any) -> dict[str, int]:
    usage = options.pop("usage", False)
    agent = Agent(reply(usage), **options)
    agent.history = history(n)
    for _ in range(3):  # the first inputs read the history once
        assert agent.ask("warm up")["status"] == "completed"
    counted = Counted(monkeypatch)
    index, config = agent.conversation.index, agent.conversation.config
    reads, tokens = index.reads, index.tokens_counted
    formatted, guarded = config.format_messages.visited, config.request_guard.visited
    answer = agent.ask("one more")
    assert answer["status"] == "completed", answer
    monkeypatch.undo()
    return {"messages read": index.reads - reads, "tokens counted": index.tokens_counted - tokens,
            "converted": counted.converted, "checked": counted.checked,
            "formatter looked at": config.format_messages.visited - formatted,
            "guard looked at": config.request_guard.visited - guarded}


@pytest.mark.parametrize("options", [
    {}, {"usage": True},
    {"compaction": Compaction(context_window=10**9)},
    {"compaction": Compaction(context_window=10**9), "usage": True},
    {"system_prompt": "Be brief.", "compaction": Compaction(context_window=10**9)},
], ids=["plain", "usage", "compaction", "compaction-usage", "system-compaction"])
def test_one_input_does_the_same_work_at_100_and_at_10000_messages(monkeypatch, options):
    small = work_of_one_input(monkeypatch, 100, **dict(options))
    large = work_of_one_input(monkeypatch, 10_000, **dict(options))
    assert small == large
    assert max(small.values()) <= 2, small  # this input's message and the previous answer, nothing older
    if "compaction" in options:
        assert 1 <= small["tokens counted"] <= 2  # the messages of this input, nothing older


def test_after_a_failed_run_and_after_a_compaction_only_new_messages_are_read_again(monkeypatch):
    calls = {"n": 0}

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("the model is down")
        return text_reply("ok")

    agent = Agent(model, compaction=Compaction(context_window=10**9))
    agent.history = history(10_000)
    assert agent.ask("one")["status"] == "completed"
    assert agent.ask("two")["status"] == "error"  # its messages are marked excluded at its end
    index = agent.conversation.index
    reads = index.reads
    assert agent.ask("three")["status"] == "completed"
    assert index.reads - reads <= 4  # the failed run's input again, then this run's two messages
    sent = agent.openai_messages()
    assert [m["content"] for m in sent[-2:]] == ["three", "ok"] and "two" not in [m["content"] for m in sent]


def test_a_sliding_window_converts_and_checks_only_the_new_messages(monkeypatch):
    def window(messages: list[Any]) -> list[Any]:
        return messages[-20:]

    for n in (100, 10_000):
        agent = Agent(reply(False), prepare_context=window)
        agent.history = history(n)
        for _ in range(3):
            agent.ask("warm up")
        counted = Counted(monkeypatch)
        agent.ask("one more")
        monkeypatch.undo()
        assert counted.converted <= 2 and counted.checked <= 2, (n, counted.converted, counted.checked)
        looked_at = agent.conversation.config.request_guard.visited
        assert looked_at <= 4 * 21, (n, looked_at)  # each request looks at the window only, never the history


def test_an_edited_history_is_read_again_and_the_edit_is_sent(monkeypatch):
    agent = Agent(reply(False))
    agent.history = history(1_000)
    agent.ask("warm up")
    agent.history[0] = UserMessage("edited first question")  # an edit in the middle: counted by History
    sent: list[Any] = []

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        sent.append(messages)
        return text_reply("ok")

    agent.conversation.config = dataclasses.replace(agent.conversation.config, llm_call=model)
    reads = agent.conversation.index.reads
    agent.ask("after the edit")
    assert sent[0][0]["content"] == "edited first question"
    assert agent.conversation.index.reads - reads >= 1_000  # read again in full, once


def test_a_model_that_keeps_or_changes_the_request_list_it_got_never_sees_it_change_or_corrupts_the_next():
    """The guard lends its own request list to llm_call (no copy of a long request): a list kept by the model
    is never changed afterwards, and a list the model changed (against the contract) is not sent again.
    """
    kept: list[list[dict[str, Any]]] = []
    snapshots: list[list[dict[str, Any]]] = []

    def keeping(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        kept.append(messages)
        snapshots.append(list(messages))
        if len(kept) == 2:
            messages.append({"role": "user", "content": "junk the model added"})
            messages[0] = {"role": "user", "content": "junk in place"}
        return text_reply("ok")

    agent = Agent(keeping, system_prompt="Be brief.")
    agent.history = history(200)
    for text in ("one", "two", "three", "four"):
        assert agent.ask(text)["status"] == "completed"
    assert [m for m in kept[0]] == snapshots[0]  # the first list is as the model got it, three inputs later
    assert kept[2] is not kept[1] and kept[3] is not kept[2]
    for request in kept[2:]:
        assert request[0] == {"role": "system", "content": "Be brief."}
        assert all("junk" not in str(m.get("content")) for m in request)
    assert [m["content"] for m in kept[3][-3:]] == ["three", "ok", "four"]


@pytest.mark.skipif(not __import__("yiemagent.loop.model_turn", fromlist=["HAND_OVER"]).HAND_OVER,
                    reason="the hand-over needs CPython's reference counts")
def test_a_model_that_does_not_keep_the_list_gets_the_same_list_grown_no_copy(monkeypatch):
    seen: list[tuple[int, int]] = []

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        seen.append((id(messages), len(messages)))
        return text_reply("ok")

    agent = Agent(model)
    agent.history = history(10_000)
    for text in ("one", "two", "three"):
        agent.ask(text)
    guard = agent.conversation.config.request_guard
    assert guard._prev is not None and id(guard._prev[1]) == seen[-1][0]  # what the model got is the guard's own
    assert [n for _, n in seen] == [10_001, 10_003, 10_005]
