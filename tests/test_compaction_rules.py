"""Issue 19 points 1-2: token estimates, pi's cut rules, the compacted view and the prepare_context strategies.

Pure functions on yiemagent messages; the loop's use of them is in ``tests/test_compaction.py``.
"""

from __future__ import annotations

import itertools
import json

import pytest

from yiemagent.context.compaction import (
    Compaction,
    compacted_view,
    find_cut,
    is_compaction,
    latest_compaction,
    summarise,
    summary_message,
)
from yiemagent.context.strategies import chain, drop_old_tool_results, keep_last_turns
from yiemagent.context.token_budget import IMAGE_TOKENS, MESSAGE_TOKENS, estimate_tokens, tiktoken_counter
from yiemagent.exceptions import ConfigError, LLMError
from yiemagent.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from yiemagent.messages.dicts import message_from_dict, message_to_dict
from yiemagent.messages.guard import RequestGuard
from yiemagent.messages.openai import to_openai
from yiemagent.testing import ScriptedLLM, text_reply


def turn(i: int, *, calls: int = 1, result_chars: int = 40) -> list:
    """One turn: a user question, ``calls`` tool calls with results, a final answer."""
    out: list = [UserMessage(f"question {i}: what is fact {i}?")]
    if calls:
        tool_calls = [ToolCall(f"c{i}_{k}", "lookup", {"key": f"fact {i}.{k}"}) for k in range(calls)]
        out.append(AssistantMessage([], tool_calls=tool_calls))
        out += [ToolResultMessage(c.id, [TextContent(f"value {i}.{k} " + "x" * result_chars)], tool_name="lookup")
                for k, c in enumerate(tool_calls)]
    out.append(AssistantMessage([TextContent(f"fact {i} is {i * 7}")]))
    return out


def history_of(turns: int, **kw) -> list:
    return [m for i in range(turns) for m in turn(i, **kw)]


def tokens(message) -> int:
    return estimate_tokens([to_openai(message)])


def test_the_estimate_is_a_quarter_of_the_characters_plus_framing_and_images():
    assert estimate_tokens([{"role": "user", "content": "a" * 400}]) == 100 + MESSAGE_TOKENS
    image = {"role": "user", "content": [{"type": "text", "text": "abcd"},
                                         {"type": "image_url", "image_url": {"url": "data:..."}}]}
    assert estimate_tokens([image]) == 1 + MESSAGE_TOKENS + IMAGE_TOKENS
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f" * 8, "arguments": "{}" * 4}}]}
    assert estimate_tokens([call]) == 4 + MESSAGE_TOKENS
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert estimate_tokens([], tools) == -(-len(json.dumps(tools)) // 4)
    assert estimate_tokens([None, 3, {"role": "user", "content": [None, {"type": "x"}]}]) >= 0  # never raises


def test_tiktoken_counts_close_to_the_estimate_or_says_why_it_cannot():
    pytest.importorskip("tiktoken", reason="the tiktoken extra is not installed")
    try:
        count = tiktoken_counter("o200k_base")
    except ConfigError as exc:  # the encoding file is fetched once from the network: offline, a clear error
        assert "o200k_base" in str(exc) and "network" in str(exc)
        return
    text = "The weather in Paris is sunny with a high of 21 degrees and light wind from the west. " * 20
    real = count([{"role": "user", "content": text}], [])
    guess = estimate_tokens([{"role": "user", "content": text}])
    assert 0.7 * real <= guess <= 1.5 * real


def test_the_cut_keeps_recent_tokens_and_lands_on_a_user_message():
    history = history_of(10)
    cut = find_cut(history, 0, keep_recent_tokens=60, tokens=tokens)
    assert cut is not None and isinstance(history[cut], UserMessage)
    assert sum(tokens(m) for m in history[cut:]) <= 60  # moved forward from the reach: at most what was asked
    previous_turn = max(i for i in range(cut) if isinstance(history[i], UserMessage))
    assert sum(tokens(m) for m in history[previous_turn:]) >= 60  # one turn earlier would keep more


def test_a_turn_longer_than_keep_recent_is_split_at_an_assistant_message_never_at_a_tool_result():
    history = [*history_of(2), UserMessage("do many things")]
    for k in range(6):  # one long turn: six calls, each with a big result
        call = ToolCall(f"long{k}", "lookup", {"k": k})
        history += [AssistantMessage([], tool_calls=[call]),
                    ToolResultMessage(call.id, [TextContent("y" * 400)], tool_name="lookup")]
    history.append(AssistantMessage([TextContent("all done")]))
    cut = find_cut(history, 0, keep_recent_tokens=250, tokens=tokens)
    assert cut is not None and cut > len(history_of(2))  # inside the long turn: a split turn
    assert isinstance(history[cut], AssistantMessage)
    for i, message in enumerate(history[cut:], start=cut):  # every kept result has its call kept
        if isinstance(message, ToolResultMessage):
            assert any(isinstance(m, AssistantMessage) and message.tool_call_id in {c.id for c in m.tool_calls}
                       for m in history[cut:i])


def test_nothing_is_cut_when_everything_fits_in_keep_recent():
    assert find_cut(history_of(2), 0, keep_recent_tokens=10_000, tokens=tokens) is None


def test_the_view_is_the_summary_then_the_kept_messages_and_the_guard_accepts_it():
    history = history_of(6)
    cut = find_cut(history, 0, keep_recent_tokens=80, tokens=tokens)
    history.append(summary_message("Facts: fact 0 is 0, fact 1 is 7.", cut, tokens_before=500, tokens_after=90))
    history += turn(6)
    view = compacted_view(history)
    assert view[0].text.startswith("The conversation so far, summarised") and "fact 1 is 7" in view[0].text
    kept = [m for m in history[cut:] if not is_compaction(m)]
    assert isinstance(kept[0], UserMessage)  # a cut at a turn boundary: the first kept question joins the summary
    assert view[0].text.endswith("\n\n" + kept[0].text)
    assert view[1:] == kept[1:]
    assert not view[0].excluded and view[0].compaction is None  # sent as a plain user message
    messages = [to_openai(m) for m in view]
    _guarded, _, repairs = RequestGuard()(messages, [])
    assert repairs == []  # already valid: no call without its result


def test_iterative_compactions_use_only_the_latest_summary():
    history = history_of(4)
    history.append(summary_message("first summary", 4))
    history += turn(4) + turn(5)
    history.append(summary_message("second summary (updates the first)", len(history) - 4))
    assert latest_compaction(history) == (len(history) - 1, len(history) - 5)
    view = compacted_view(history)
    assert "second summary" in view[0].text
    assert not any("first summary" in m.text for m in view if isinstance(m, UserMessage))


def test_a_compaction_survives_the_saved_state():
    message = summary_message("the summary", 3, tokens_before=1000, tokens_after=200)
    back = message_from_dict(json.loads(json.dumps(message_to_dict(message))))
    assert is_compaction(back) and back.compaction == {"first_kept": 3, "tokens_before": 1000, "tokens_after": 200}
    assert back.excluded and back.text == message.text
    with pytest.raises(Exception, match="compaction must be an object"):
        message_from_dict({**message_to_dict(message), "compaction": "forged"})


def test_a_first_kept_out_of_range_is_clamped_to_the_summary_itself():
    history = history_of(2)
    history.append(summary_message("s", 10_000))
    assert latest_compaction(history) == (len(history) - 1, len(history) - 1)
    assert compacted_view(history)[0].text.endswith("</summary>")


def test_summarise_updates_the_previous_summary_in_chunks_that_fit_the_window():
    config = Compaction(context_window=1200, reserve_tokens=200, keep_recent_tokens=200, max_summary_tokens=100)
    llm = ScriptedLLM([text_reply(f"summary {i}") for i in range(1, 20)])
    summary = summarise(config, llm, "earlier summary", history_of(12, result_chars=300))
    assert len(llm.calls) >= 2  # more than one chunk
    assert "earlier summary" in llm.calls[0]["messages"][1]["content"]
    assert "summary 1" in llm.calls[1]["messages"][1]["content"]  # the next chunk updates the last summary
    assert summary == f"summary {len(llm.calls)}"
    for call in llm.calls:
        assert estimate_tokens(call["messages"]) <= config.budget


def test_a_summariser_that_fails_or_answers_nothing_is_an_llm_error():
    config = Compaction(context_window=4000)
    with pytest.raises(LLMError, match="no text"):
        summarise(config, ScriptedLLM([text_reply("  ")]), None, history_of(2))

    def broken(messages, tools):
        raise RuntimeError("down")

    with pytest.raises(LLMError, match="down"):
        summarise(config, broken, None, history_of(2))


@pytest.mark.parametrize("kwargs", [{"context_window": 0}, {"context_window": "4k"}, {"context_window": True},
                                    {"context_window": 1000, "reserve_tokens": 600, "keep_recent_tokens": 400}])
def test_compaction_settings_are_checked(kwargs):
    with pytest.raises(ConfigError):
        Compaction(**kwargs)


def test_defaults_follow_pi_and_shrink_with_the_window():
    big = Compaction(context_window=128_000)
    assert (big.reserve_tokens, big.keep_recent_tokens, big.budget) == (16_384, 20_000, 128_000 - 16_384)
    small = Compaction(context_window=4096)
    assert small.reserve_tokens == 1024 and small.keep_recent_tokens == 1365


def test_keep_last_turns_starts_at_a_user_message():
    history = history_of(5)
    kept = keep_last_turns(2)(history)
    assert isinstance(kept[0], UserMessage) and kept == history[-len(turn(0)) * 2:]
    assert keep_last_turns(10)(history) == history
    RequestGuard()([to_openai(m) for m in kept], [])


def test_drop_old_tool_results_keeps_every_message_and_pair():
    history = history_of(4, calls=2, result_chars=500)
    out = drop_old_tool_results(keep_last=2)(history)
    assert len(out) == len(history)
    results = [m for m in out if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == [r.tool_call_id for r in history if isinstance(r, ToolResultMessage)]
    assert all("left out to save room" in r.text for r in results[:-2])
    assert all("left out" not in r.text for r in results[-2:])
    assert history[2].text.startswith("value")  # the history itself is unchanged
    both = chain(drop_old_tool_results(1), keep_last_turns(1))(history)
    assert isinstance(both[0], UserMessage) and len(both) == len(turn(0, calls=2))


@pytest.mark.parametrize("bad", [0, -1, 1.5, "3", True])
def test_strategy_arguments_are_checked(bad):
    with pytest.raises(ConfigError):
        keep_last_turns(bad)
    with pytest.raises(ConfigError):
        drop_old_tool_results(bad)


@pytest.mark.model
def test_llamacpp_counter_counts_with_the_local_models_tokenizer_and_falls_back_when_it_is_gone(local_model, caplog):
    from yiemagent.context.token_budget import llamacpp_counter

    text = "The weather in Paris is sunny with a high of 21 degrees and light wind from the west. " * 10
    messages = [{"role": "user", "content": text}]
    count = llamacpp_counter(local_model.base_url)
    real = count(messages, [])
    assert real != estimate_tokens(messages)  # the server's tokenizer, not the estimate
    assert 0.5 * estimate_tokens(messages) <= real <= 2 * estimate_tokens(messages)
    gone = llamacpp_counter("http://127.0.0.1:9/v1", timeout_seconds=2)
    assert gone(messages, []) == estimate_tokens(messages)  # falls back, never raises
    assert "using the estimate" in caplog.text


def batch_history() -> list:
    """Turns with a batch of 10 tool calls each (langchain 34282's "read these 10 files"), then an answer."""
    history: list = []
    for t in range(4):
        history.append(UserMessage(f"read these 10 files, round {t}"))
        calls = [ToolCall(f"r{t}_{k}", "read_file", {"path": f"file{k}.txt"}) for k in range(10)]
        history.append(AssistantMessage([TextContent("I'll read all 10 files")], tool_calls=calls))
        history += [ToolResultMessage(c.id, [TextContent(f"contents of {c.arguments['path']} " + "z" * 120)],
                                      tool_name="read_file") for c in calls]
        history.append(AssistantMessage([TextContent(f"summary of round {t}")]))
    return history


@pytest.mark.parametrize("case", ["langchain_34282_keep_last_messages_inside_a_batch",
                                  "letta_935_summary_then_a_tool_response_first",
                                  "deepagents_270_ai_message_removed_tool_responses_left"])
def test_no_cut_leaves_a_tool_result_without_its_call_whatever_the_kept_size(case):
    """Every keep_recent_tokens from 1 token to the whole history, and the forced cut: each view is valid.

    The three public reports are one fault: a cut inside a run of tool results kept results whose call
    was summarised away, and the provider answered 400 ("No tool call found for function call output").
    """
    from tests.strict_openai import validate

    history = batch_history()
    total = sum(tokens(m) for m in history)
    for keep in [*range(1, total + 40, 37), 1]:
        cut = find_cut(history, 0, keep, tokens)
        if cut is None:
            continue
        assert not isinstance(history[cut], ToolResultMessage), (keep, cut)
        view = compacted_view([*history, summary_message("earlier rounds summarised", cut)])
        validate([to_openai(m) for m in view])  # raises on an orphaned tool result or an unanswered call


def test_issue_27_the_compacted_request_keeps_user_assistant_alternation():
    """Issue 27 point 7: a cut at a turn boundary sent the summary (a user message) then the kept question (a
    second user message in a row), which chat templates that require alternation refuse (Gemma's and Mistral's in
    llama.cpp and vLLM: "Conversation roles must alternate user/assistant/user/assistant"). The question is joined
    to the summary, in the view the loop sends (``HistoryIndex``) and in ``compacted_view`` alike; a cut inside a
    turn (the kept part starts with an assistant message) is sent as it was.
    """
    from yiemagent.context.history_index import HistoryIndex
    from yiemagent.messages.history import History

    def roles(view):
        return [m.role for m in view]

    for keep in (80, 1):
        history = history_of(6)
        cut = find_cut(history, 0, keep_recent_tokens=keep, tokens=tokens)
        history.append(summary_message("Facts so far.", cut))
        history += turn(6)
        view = compacted_view(history)
        sent = roles(view)
        assert all(a != b or a == "tool" for a, b in itertools.pairwise(sent)), sent
        assert sent[0] == "user" and "Facts so far." in view[0].text
        index, kept = HistoryIndex(), History(history)
        index.sync(kept)
        indexed = index.view(kept)
        assert [to_openai(m) for m in indexed] == [to_openai(m) for m in view]
