"""openai_chat's stream merger, whole-request deadline and key scrubbing (issue 8, point 4; cases N01, N05).

The wire shapes come from tests/servers/raw_llm_peer.py, a raw peer: no real server sends them
on purpose (a stream cut before ``[DONE]`` and any ``finish_reason``, parallel calls sharing
``index: 0`` as Ollama does behind LiteLLM, a body dripped a byte every 0.5 s, an error body
echoing the caller's key). The real llama.cpp server (``local_model``) checks usage details.
"""

import json
import logging
import threading
import time
import traceback

import pytest

from yiemagent import Agent, LLMError, LLMTimeoutError, openai_chat, tool
from yiemagent.testing import EventRecorder

from .helpers import get_weather
from .servers.raw_llm_peer import ECHO_AUTH, Reply, chunk


@tool
def get_time(zone: str) -> str:
    """Time in a zone."""
    return f"12:00 {zone}"


def call_delta(index, name=None, arguments="", call_id=None):
    entry = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        entry["id"] = call_id
        entry["type"] = "function"
    if name:
        entry["function"]["name"] = name
    return {"tool_calls": [entry]}


def text_stream(text="done", usage=None):
    events = [chunk({"role": "assistant", "content": text}), chunk(finish_reason="stop")]
    if usage:
        events.append(chunk(usage=usage, choices=False))
    return Reply(sse=events)


def sent_calls(request):
    """(id, name, arguments) of the assistant tool calls in a recorded request."""
    return [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for m in request["body"]["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]


# --------------------------------------------------------------------------- N01


def test_smolagents_1569_parallel_calls_same_index(peer):
    """N01 (smolagents #1569, PR #1958; vercel/ai #14277): Ollama streams parallel calls all at index 0.

    A new id at a used index starts a new call: both tools run with their own arguments and the next
    request carries both calls, unglued.
    """
    peer.script(Reply(sse=[
        chunk(call_delta(0, "get_weather", '{"city": "Oslo"}', "call_a")),
        chunk(call_delta(0, "get_time", '{"zone": "UTC"}', "call_b")),
        chunk(finish_reason="tool_calls"),
    ]), text_stream())
    agent = Agent(openai_chat(peer.base_url, "m", stream=True, timeout_seconds=10), tools=[get_weather, get_time])
    answer = agent.ask("weather and time", timeout_seconds=20)
    assert answer["content"] == "done"
    assert sent_calls(peer.requests[1]) == [("call_a", "get_weather", {"city": "Oslo"}),
                                            ("call_b", "get_time", {"zone": "UTC"})]
    results = [m["content"] for m in peer.requests[1]["body"]["messages"] if m["role"] == "tool"]
    assert results == ["sunny in Oslo", "12:00 UTC"]


def test_smolagents_1569_same_tool_twice_at_index_0(peer):
    """N01 variant: get_weather twice (Oslo, Lima) at index 0 with different ids: two calls, two results."""
    peer.script(Reply(sse=[
        chunk(call_delta(0, "get_weather", '{"city": ', "call_a")),
        chunk(call_delta(0, None, '"Oslo"}')),
        chunk(call_delta(0, "get_weather", '{"city": "Lima"}', "call_b")),
        chunk(finish_reason="tool_calls"),
    ]), text_stream())
    agent = Agent(openai_chat(peer.base_url, "m", stream=True, timeout_seconds=10), tools=[get_weather])
    agent.ask("two cities", timeout_seconds=20)
    assert sent_calls(peer.requests[1]) == [("call_a", "get_weather", {"city": "Oslo"}),
                                            ("call_b", "get_weather", {"city": "Lima"})]


def test_openai_shape_indices_0_and_1_with_the_id_only_in_the_first_fragment_still_merge(peer):
    """N01 control: OpenAI's own shape, fragmented arguments, id and name only in each call's first delta."""
    peer.script(Reply(sse=[
        chunk(call_delta(0, "get_weather", "", "call_a")),
        chunk(call_delta(0, None, '{"ci')),
        chunk(call_delta(1, "get_time", "", "call_b")),
        chunk(call_delta(0, None, 'ty": "Oslo"}')),
        chunk(call_delta(1, None, '{"zone": "UTC"}')),
        chunk(finish_reason="tool_calls"),
    ]), text_stream())
    agent = Agent(openai_chat(peer.base_url, "m", stream=True, timeout_seconds=10), tools=[get_weather, get_time])
    agent.ask("both", timeout_seconds=20)
    assert sent_calls(peer.requests[1]) == [("call_a", "get_weather", {"city": "Oslo"}),
                                            ("call_b", "get_time", {"zone": "UTC"})]


def test_merge_chunks_never_raises_on_malformed_pieces():
    """A delta or call that is not an object, a non-integer index: skipped, the rest merged."""
    from yiemagent.formats.llm import merge_chunks

    reply = merge_chunks([
        {"choices": [{"index": 0, "delta": "oops"}]},
        {"choices": [{"index": 0, "delta": {"content": "hi", "tool_calls": ["x", {"index": None, "id": "c1",
                                                                                   "function": {"name": "f"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": {"not": "a list"}}, "finish_reason": "stop"}]},
    ])
    message = reply["choices"][0]["message"]
    assert message["content"] == "hi" and [c["id"] for c in message["tool_calls"]] == ["c1"]


# --------------------------------------------------------------------------- incomplete streams


def test_a_stream_without_done_or_finish_reason_is_incomplete(peer):
    """Cut after some chunks, no [DONE], no finish_reason: finish_reason "incomplete", partial text kept."""
    peer.script(Reply(sse=[chunk({"role": "assistant", "content": "The answer is"})], done=False))
    reply = openai_chat(peer.base_url, "m", stream=True, timeout_seconds=10)([{"role": "user", "content": "q"}], [])
    assert reply["choices"][0]["finish_reason"] == "incomplete"
    assert reply["choices"][0]["message"]["content"] == "The answer is"


def test_cut_tool_call_arguments_come_back_incomplete_not_repaired(peer):
    """The issue's case: `{"path": "/data"` cut; the reply says incomplete and keeps the raw arguments."""
    peer.script(Reply(sse=[chunk(call_delta(0, "delete", '{"path": "/data"', "call_1"))], done=False))
    reply = openai_chat(peer.base_url, "m", stream=True, timeout_seconds=10)([{"role": "user", "content": "q"}], [])
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "incomplete"
    assert choice["message"]["tool_calls"][0]["function"]["arguments"] == '{"path": "/data"'


def test_a_stream_with_finish_reason_but_no_done_is_complete(peer):
    """Some servers omit [DONE]: a finish_reason says the reply is whole."""
    peer.script(Reply(sse=[chunk({"content": "whole"}), chunk(finish_reason="stop")], done=False))
    reply = openai_chat(peer.base_url, "m", stream=True, timeout_seconds=10)([{"role": "user", "content": "q"}], [])
    assert reply["choices"][0]["finish_reason"] == "stop"


# --------------------------------------------------------------------------- N05 usage

TURN_1 = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
          "prompt_tokens_details": {"cached_tokens": 64}, "completion_tokens_details": {"reasoning_tokens": 12}}
TURN_2 = {"prompt_tokens": 150, "completion_tokens": 10, "total_tokens": 160,
          "prompt_tokens_details": {"cached_tokens": 128}, "completion_tokens_details": {"reasoning_tokens": 4}}


def nested(usage, group, key):
    """Accept nested usage[group][key] or a flattened "group.key"."""
    if isinstance(usage.get(group), dict):
        return usage[group].get(key)
    return usage.get(f"{group}.{key}")


def test_smolagents_2055_streamed_usage_keeps_cached_and_reasoning_tokens(peer):
    """N05 (smolagents #2055, PRs #2120/#2143): nested usage details summed per run and in total."""
    peer.script(
        Reply(sse=[chunk(call_delta(0, "get_time", '{"zone": "UTC"}', "call_1")), chunk(finish_reason="tool_calls"),
                   chunk(usage=TURN_1, choices=False)]),
        text_stream("noon", usage=TURN_2),
    )
    recorder = EventRecorder()
    agent = Agent(openai_chat(peer.base_url, "m", stream=True, timeout_seconds=10), tools=[get_time],
                  event_sink=recorder)
    assert agent.ask("time?", timeout_seconds=20)["content"] == "noon"
    end = recorder.of_type("agent_end")[-1].usage
    for usage in (agent.usage, end):
        assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (250, 30, 280)
        assert nested(usage, "prompt_tokens_details", "cached_tokens") == 192
        assert nested(usage, "completion_tokens_details", "reasoning_tokens") == 16
    assert peer.requests[0]["body"]["stream_options"] == {"include_usage": True}


def test_non_streamed_usage_details_are_summed_over_runs(peer):
    """The same for plain JSON replies, over two runs (agent.usage is the total)."""
    def reply(usage):
        return Reply(json_body={"choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": "ok"}}], "usage": usage})

    peer.script(reply(TURN_1), reply(TURN_2))
    agent = Agent(openai_chat(peer.base_url, "m", timeout_seconds=10))
    agent.ask("one", timeout_seconds=10)
    agent.ask("two", timeout_seconds=10)
    assert agent.usage["total_tokens"] == 280
    assert nested(agent.usage, "prompt_tokens_details", "cached_tokens") == 192
    assert json.loads(agent.state_to_json())["usage"]["completion_tokens_details"] == {"reasoning_tokens": 16}


@pytest.mark.model
def test_smolagents_2055_llama_cpp_streamed_cached_tokens_are_summed(local_model):
    """N05 against real llama.cpp, streaming, cache_prompt=True: its cached_tokens reach agent.usage summed."""
    replies = []
    agent = Agent(local_model.llm_call(cache_prompt=True, max_tokens=8), system_prompt="Answer in one word.",
                  event_sink=lambda e: replies.append(e.message.usage)
                  if e.type == "message_end" and getattr(e.message, "usage", None) else None)
    agent.ask("Say yes.", timeout_seconds=120)
    agent.ask("Say no.", timeout_seconds=120)
    reported = [nested(u, "prompt_tokens_details", "cached_tokens") for u in replies]
    assert len(reported) == 2 and all(isinstance(r, int) for r in reported), replies
    assert reported[1] > 0  # the second request reuses the cached prompt prefix
    assert nested(agent.usage, "prompt_tokens_details", "cached_tokens") == sum(reported)
    assert agent.usage["prompt_tokens"] == sum(u["prompt_tokens"] for u in replies)


# --------------------------------------------------------------------------- deadline


@pytest.mark.parametrize("stream", [False, True])
def test_a_server_dripping_a_byte_every_half_second_cannot_hold_the_call_past_timeout(peer, stream):
    """timeout_seconds=2 is the whole call: a byte every 0.5 s (headers sent) ends in LLMTimeoutError by ~2 s."""
    body = "data: " + json.dumps(chunk({"content": "x" * 40})) + "\n\n" if stream else json.dumps(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": "x" * 40}}]})
    peer.script(Reply(body=body, drip_seconds=0.5, headers={"Content-Type": "text/event-stream"} if stream else {}))
    llm = openai_chat(peer.base_url, "m", stream=stream, timeout_seconds=2)
    begun = time.monotonic()
    with pytest.raises(LLMTimeoutError):
        llm([{"role": "user", "content": "q"}], [])
    assert time.monotonic() - begun < 3.5


def test_cancel_still_cuts_a_dripping_call_before_its_deadline(peer):
    """abort() (cancel()) cuts the call at once even with a long deadline."""
    peer.script(Reply(body="x" * 200, drip_seconds=0.5))
    llm = openai_chat(peer.base_url, "m", timeout_seconds=60)
    threading.Timer(0.5, llm.cancel).start()
    begun = time.monotonic()
    with pytest.raises(LLMError):
        llm([{"role": "user", "content": "q"}], [])
    assert time.monotonic() - begun < 2.0


def test_abort_cuts_a_dripping_model_call_in_an_agent(peer):
    """Agent.abort() during a dripping call: the run ends aborted within a second."""
    peer.script(Reply(body="x" * 200, drip_seconds=0.5))
    agent = Agent(openai_chat(peer.base_url, "m", timeout_seconds=60)).start()
    try:
        future = agent.submit("q")
        deadline = time.monotonic() + 5
        while not peer.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        begun = time.monotonic()
        agent.abort()
        assert future.result(timeout=2)["status"] == "aborted"
        assert time.monotonic() - begun < 1.0
    finally:
        agent.shutdown(timeout_seconds=5)


# --------------------------------------------------------------------------- key scrubbing

KEY = "sk-live-0123456789abcdef"


def everything_said(exc):
    """The exception's text, repr, response, chain and formatted traceback, as one string."""
    parts = [str(exc), repr(exc), repr(getattr(exc, "response", None)), repr(exc.args),
             "".join(traceback.format_exception(exc))]
    cause = exc.__cause__ or exc.__context__
    while cause is not None:
        parts += [str(cause), repr(cause.args)]
        cause = cause.__cause__ or cause.__context__
    return "\n".join(parts)


@pytest.mark.parametrize("status", [401, 503])
def test_an_api_key_echoed_in_an_error_body_is_scrubbed_from_the_exception(peer, status, caplog):
    """401/503 bodies that echo the Authorization header: the key is nowhere in the error or the logs."""
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {ECHO_AUTH}"}})
    peer.script(*[Reply(status=status, body=body)] * 3)
    llm = openai_chat(peer.base_url, "m", api_key=KEY, timeout_seconds=10)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LLMError) as info:
        llm([{"role": "user", "content": "q"}], [])
    assert peer.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"  # the key was sent
    said = everything_said(info.value)
    assert "Incorrect API key" in said and "***" in said
    assert KEY not in said and KEY not in caplog.text


def test_an_api_key_echoed_in_a_stream_error_is_scrubbed(peer):
    """A stream error event quoting the key: scrubbed in the message and in .response (a dict)."""
    peer.script(Reply(sse=[{"error": {"message": f"key {KEY} is revoked"}}]))
    llm = openai_chat(peer.base_url, "m", api_key=KEY, stream=True, timeout_seconds=10)
    with pytest.raises(LLMError) as info:
        llm([{"role": "user", "content": "q"}], [])
    assert "revoked" in str(info.value) and KEY not in everything_said(info.value)
    assert info.value.response == {"error": {"message": "key *** is revoked"}}


def test_an_echoed_api_key_reaches_neither_the_answer_nor_events_nor_logs(peer, caplog):
    """Through the agent: the error answer, the error event and the WARNING line carry no key."""
    peer.script(Reply(status=401, body=f'{{"error": "bad key {ECHO_AUTH}"}}'))
    recorder = EventRecorder()
    agent = Agent(openai_chat(peer.base_url, "m", api_key=KEY, timeout_seconds=10), event_sink=recorder)
    caplog.set_level(logging.DEBUG)
    answer = agent.ask("q", timeout_seconds=10)
    assert answer["status"] == "error" and "bad key" in answer["error"]
    errors = recorder.of_type("error")
    assert errors and all(KEY not in e.message and KEY not in everything_said(e.error) for e in errors)
    assert KEY not in json.dumps(answer) and KEY not in caplog.text
    assert KEY not in repr(agent.config.llm_call) and KEY not in repr(agent.config.llm_call._headers)


@pytest.mark.parametrize("stream", [False, True])
def test_issue_27_a_huge_model_reply_is_refused_not_kept_and_resent(peer, stream):
    """Issue 27: a 50 MB model reply was accepted (and a 20 MB assistant message re-sent on every later call).
    Replies past ``max_reply_bytes`` are refused with ``LLMError`` without reading them to the end; a raw peer
    sends it (no real server answers that big on purpose).
    """
    from tests.servers.raw_llm_peer import Reply, chunk

    text = "x" * 3_000_000
    if stream:
        peer.script(Reply(sse=[chunk({"role": "assistant", "content": text}), chunk(finish_reason="stop")]))
    else:
        peer.script(Reply(json_body={"choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant", "content": text}}]}))
    llm = openai_chat(peer.base_url, "m", stream=stream)
    llm.max_reply_bytes = 1_000_000
    with pytest.raises(LLMError, match="larger than 1000000 bytes"):
        llm([{"role": "user", "content": "hi"}], [])
    peer.script(Reply(json_body={"choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": "ok"}}]}))
    answer = Agent(llm).ask("hi")  # the next request works as usual
    assert answer["status"] == "completed" and answer["content"] == "ok"
