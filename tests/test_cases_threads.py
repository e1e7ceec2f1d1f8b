"""Real cases from peers' public reports: streams, usage, threads (issue 8, point 8; the threads area).

Each test names its source. Stream shapes come from tests/servers/raw_llm_peer.py, a raw peer,
because the servers that sent them did so by accident (a gateway or a proxy), not on demand.
"""

import gc
import json
import threading
import time

import pytest

from yiemagent import Agent, AgentTool, LLMError, openai_chat
from yiemagent.formats.llm import merge_chunks
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply

from .helpers import get_weather
from .servers.raw_llm_peer import Reply, chunk


def call_delta(index, name=None, arguments="", call_id=None):
    entry = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        entry["id"] = call_id
    if name:
        entry["function"]["name"] = name
    return {"tool_calls": [entry]}


def ask(peer, *replies, **kwargs):
    peer.script(*replies)
    agent = Agent(openai_chat(peer.base_url, "m", stream=True, timeout_seconds=10), tools=[get_weather], **kwargs)
    return agent, agent.ask("go", timeout_seconds=20)


def done_text(text="done"):
    return Reply(sse=[chunk({"content": text}), chunk(finish_reason="stop")])


def test_vllm_mlx_672_done_without_any_finish_reason_still_runs_the_calls(peer):
    """waybarrios/vllm-mlx #672: a tool_calls chunk, then `data: [DONE]`, no chunk ever has finish_reason.

    [DONE] says the stream is whole: the call runs (strict clients aborted and retried the turn).
    """
    _agent, answer = ask(peer, Reply(sse=[chunk(call_delta(0, "get_weather", '{"city": "Paris"}', "call_1"))]),
                        done_text())
    assert answer["content"] == "done"
    assert [m["content"] for m in peer.requests[1]["body"]["messages"] if m["role"] == "tool"] == ["sunny in Paris"]


def test_claux_43_argument_deltas_after_the_finish_reason_chunk_are_kept():
    """ducks/claux #43: a gateway may send finish_reason before trailing argument deltas; merge to [DONE]."""
    reply = merge_chunks([
        chunk(call_delta(0, "get_weather", '{"city": ', "call_1")),
        chunk(finish_reason="tool_calls"),
        chunk(call_delta(0, None, '"Oslo"}')),
    ])
    call = reply["choices"][0]["message"]["tool_calls"][0]
    assert (call["id"], json.loads(call["function"]["arguments"])) == ("call_1", {"city": "Oslo"})
    assert reply["choices"][0]["finish_reason"] == "tool_calls"


def test_openai_workflow_52_usage_repeated_in_every_chunk_is_counted_once(peer):
    """alfredapp/openai-workflow #52: a server puts cumulative usage in every chunk; the last one counts."""
    chunks = [chunk({"content": piece}, usage={"prompt_tokens": 1061, "completion_tokens": n,
                                                "total_tokens": 1061 + n})
              for n, piece in ((22, "I can"), (24, " help"), (26, " you"))]
    agent, answer = ask(peer, Reply(sse=[*chunks, chunk(finish_reason="stop")]))
    assert answer["content"] == "I can help you"
    assert agent.usage == {"prompt_tokens": 1061, "completion_tokens": 26, "total_tokens": 1087}


def test_symfony_ai_2178_cumulative_cache_counts_in_two_events_are_not_doubled(peer):
    """symfony/ai PR #2178: usage repeated cumulatively in two stream events was summed, doubling cache counts."""
    first = {"prompt_tokens": 47121, "completion_tokens": 4, "total_tokens": 47125,
             "prompt_tokens_details": {"cached_tokens": 47119}}
    last = {**first, "completion_tokens": 64, "total_tokens": 47185}
    agent, _ = ask(peer, Reply(sse=[chunk({"content": "x"}, usage=first), chunk(finish_reason="stop"),
                                    chunk(usage=last, choices=False)]))
    assert agent.usage["completion_tokens"] == 64 and agent.usage["prompt_tokens"] == 47121
    assert agent.usage["prompt_tokens_details"] == {"cached_tokens": 47119}


def test_pixeltable_1234_a_usage_only_chunk_without_choices_is_read_not_crashed_on(peer):
    """pixeltable/pixeltable PR #1234, XSpoonAi/spoon-core PR #179: the usage-only chunk has empty or no `choices`."""
    no_choices = {"id": "c", "object": "chat.completion.chunk", "usage": {"prompt_tokens": 5,
                                                                          "completion_tokens": 2, "total_tokens": 7}}
    agent, answer = ask(peer, Reply(sse=[chunk({"content": "hi"}), chunk(finish_reason="stop"), no_choices]))
    assert answer["content"] == "hi" and agent.usage["total_tokens"] == 7


def test_haystack_12721_a_stream_with_no_chunk_is_a_clear_answer_not_an_index_error(peer):
    """deepset-ai/haystack PR #12721: a provider closed a stream without a single chunk; IndexError followed.

    With [DONE] it is an empty reply; without anything it is an LLMError naming the cause.
    """
    llm = openai_chat(peer.base_url, "m", stream=True, timeout_seconds=10)
    peer.script(Reply(sse=[]))
    reply = llm([{"role": "user", "content": "q"}], [])
    assert reply["choices"][0]["message"]["content"] is None
    peer.script(Reply(sse=[], done=False))
    with pytest.raises(LLMError, match=r"the stream ended without any event; HTTP 200 .*body: \(an empty body\)"):
        llm([{"role": "user", "content": "q"}], [])


def test_swarms_2159_streamed_runs_ask_for_usage_and_report_it(peer):
    """kyegomez/swarms #2159 (PR #2190): streamed runs reported zero usage (no include_usage asked)."""
    usage = {"prompt_tokens": 55, "completion_tokens": 23, "total_tokens": 78,
             "completion_tokens_details": {"reasoning_tokens": 11}}
    recorder = EventRecorder()
    agent, _ = ask(peer, Reply(sse=[chunk({"content": "5 cents"}), chunk(finish_reason="stop"),
                                    chunk(usage=usage, choices=False)]), event_sink=recorder)
    assert peer.requests[0]["body"]["stream_options"] == {"include_usage": True}
    assert agent.usage == usage
    assert all(e.delta for e in recorder.of_type("message_update"))  # the usage chunk is no empty delta


def test_cuga_agent_625_exit_in_a_tool_does_not_end_the_agent():
    """cuga-project/cuga-agent #625: code run by a tool called exit(); SystemExit passed `except Exception`
    and killed the whole process. Here it is the call's error result and the agent serves on.
    """
    def runs_code(call_id, arguments, abort_event):
        exit()  # what generated code did

    llm = ScriptedLLM([tool_call_reply("run", {}), text_reply("the code exited"), text_reply("still here")])
    agent = Agent(llm, tools=[AgentTool("run", "Runs code.", {"type": "object"}, runs_code)]).start()
    try:
        assert agent.ask("run it", timeout_seconds=10)["content"] == "the code exited"
        assert "SystemExit" in llm.calls[1]["messages"][-1]["content"]
        assert agent.ask("again", timeout_seconds=10)["content"] == "still here"
    finally:
        agent.shutdown(timeout_seconds=5)


def _yiemagent_threads():
    return {t for t in threading.enumerate() if t.name.startswith("yiemagent-") and t.is_alive()}


def test_more_executors_87_agents_dropped_without_shutdown_leak_no_threads():
    """rohanpm/more-executors #87: wrappers of a thread pool leaked its threads unless shut down.

    Ten agents used through ask() and dropped: their worker threads end (before: 1-2 per agent stayed).
    """
    before = _yiemagent_threads()
    for _ in range(10):
        agent = Agent(ScriptedLLM([tool_call_reply("t", {}), text_reply("ok")]),
                      tools=[AgentTool("t", "T.", {"type": "object"}, lambda call_id, arguments, abort_event: "r")])
        assert agent.ask("x")["content"] == "ok"
        del agent
    gc.collect()
    deadline = time.monotonic() + 5
    while _yiemagent_threads() - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _yiemagent_threads() - before


def test_hiero_sdk_java_1084_closing_agents_in_a_loop_does_not_grow_threads():
    """hiero-ledger/hiero-sdk-java #1084: close() did not shut the client's executor; threads grew per client."""
    before = _yiemagent_threads()
    for _ in range(10):
        with Agent(ScriptedLLM([text_reply("ok")])) as agent:
            assert agent.ask("x", timeout_seconds=5)["content"] == "ok"
        assert not _yiemagent_threads() - before  # gone when shutdown() returns, not later
