"""Streaming to the caller (issue 11, point 4): message_update deltas, Agent.stream, sse_events.

Scripted models stream with ``ScriptedLLM(delta_chars=...)``; the real one is the local llama.cpp
server (``local_model``, marked ``model``), whose SSE stream ``openai_chat(stream=True)`` reads.
"""

import json
import threading
import time

import pytest

from yiemagent import SSE_HEADERS, Agent, AssistantMessage, MessageUpdateEvent, event_to_dict, sse_events, tool
from yiemagent.formats.llm import ChunkDeltas, accepts_on_delta, merge_chunks
from yiemagent.formats.sse import SSEParser
from yiemagent.messages.tool_calls import parse_response
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply


@tool
def get_weather(city: str) -> str:
    """Get the weather in a city."""
    return f"Sunny in {city}"


def _updates(items):
    return [i for i in items if not isinstance(i, dict) and i.type == "message_update"]


def _parse_sse(text):
    parser = SSEParser()
    return [(e.event, json.loads(e.data)) for e in parser.feed(text)]


# --------------------------------------------------------------------------- deltas -> events


def test_text_deltas_arrive_as_message_updates_between_message_start_and_end_on_the_loop_thread():
    """Deltas from a worker thread reach the sink on the run's thread, in order, before message_end."""
    threads = []
    recorder = EventRecorder()

    def sink(event):
        threads.append((event.type, threading.get_ident()))
        recorder(event)

    agent = Agent(ScriptedLLM([text_reply("Hello world")], delta_chars=3), event_sink=sink)
    answer = agent.ask("hi")
    types = recorder.types()
    start = types.index("message_start", types.index("turn_start"))
    end = types.index("message_end", start)
    updates = recorder.of_type("message_update")
    assert [u.delta for u in updates] == ["Hel", "lo ", "wor", "ld"]
    assert set(types[start + 1:end]) == {"message_update"} and len(types[start + 1:end]) == 4
    assert "".join(u.delta for u in updates) == answer["content"] == "Hello world"
    assert {ident for _, ident in threads} == {threading.get_ident()}  # ask() before start: this thread
    assert all(u.run_id == recorder.of_type("agent_start")[0].run_id for u in updates)


def test_reasoning_and_tool_call_argument_deltas_name_their_call():
    """Reasoning, then a call's arguments in pieces, each piece with the call's index, id and name."""
    reply = tool_call_reply("get_weather", {"city": "Paris"}, call_id="call_w")
    reply["choices"][0]["message"]["reasoning_content"] = "need weather"
    recorder = EventRecorder()
    agent = Agent(ScriptedLLM([reply, text_reply("Sunny.")], delta_chars=5), tools=[get_weather],
                  event_sink=recorder)
    agent.ask("weather?")
    updates = recorder.of_type("message_update")
    assert "".join(u.delta for u in updates if u.delta_type == "reasoning") == "need weather"
    calls = [u for u in updates if u.delta_type == "tool_call"]
    assert json.loads("".join(u.delta for u in calls)) == {"city": "Paris"}
    assert {(u.tool_call_index, u.tool_call_id, u.tool_name) for u in calls} == {(0, "call_w", "get_weather")}


def test_a_plain_llm_call_without_on_delta_still_works_and_sends_no_updates():
    """The simple contract llm_call(messages, tools) -> dict is untouched: no on_delta passed, no deltas."""
    seen = []

    def llm_call(messages, tools):
        seen.append(len(messages))
        return text_reply("plain")

    recorder = EventRecorder()
    assert not accepts_on_delta(llm_call) and accepts_on_delta(ScriptedLLM([]))
    answer = Agent(llm_call, event_sink=recorder).ask("hi")
    assert answer["content"] == "plain" and seen == [1] and not recorder.of_type("message_update")


def test_a_custom_streaming_llm_call_gets_on_delta_by_keyword():
    """Any callable with an on_delta keyword streams; deltas sent from another thread still arrive in order."""
    def llm_call(messages, tools, *, on_delta=None):
        def write():
            for piece in ("a", "b", "c"):
                on_delta("text", piece)
        worker = threading.Thread(target=write)
        worker.start()
        worker.join()
        return text_reply("abc")

    recorder = EventRecorder()
    Agent(llm_call, event_sink=recorder).ask("hi")
    assert [u.delta for u in recorder.of_type("message_update")] == ["a", "b", "c"]


# --------------------------------------------------------------------------- Agent.stream


@pytest.mark.parametrize("started", [False, True])
def test_stream_yields_the_runs_events_then_the_answer_with_the_agent_started_or_not(started):
    """Same sequence either way; the last item is the answer dict, equal to what went into the history."""
    agent = Agent(ScriptedLLM([tool_call_reply("get_weather", {"city": "Oslo"}), text_reply("Sunny in Oslo.")],
                              delta_chars=4), tools=[get_weather])
    if started:
        agent.start()
    try:
        items = list(agent.stream("weather in Oslo?"))
    finally:
        agent.shutdown()
    answer = items[-1]
    assert isinstance(answer, dict) and answer["content"] == "Sunny in Oslo." and answer["status"] == "completed"
    assert all(not isinstance(i, dict) for i in items[:-1])
    types = [i.type for i in items[:-1]]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    assert "tool_execution_start" in types and "tool_execution_end" in types
    assert "".join(u.delta for u in _updates(items) if u.delta_type == "text") == "Sunny in Oslo."
    assert isinstance(agent.history[-1], AssistantMessage) and agent.history[-1].text == "Sunny in Oslo."
    assert len({i.run_id for i in items[:-1]}) == 1


def test_two_streams_on_a_started_agent_each_get_only_their_own_run():
    """Inputs queued together: each stream sees its own run's events and its own answer."""
    llm = ScriptedLLM([text_reply("one"), text_reply("two")], delta_chars=1)
    agent = Agent(llm).start()
    try:
        first, second = agent.stream("1"), agent.stream("2")
        items_2 = list(second)  # read the second first: the first run's events must not leak in
        items_1 = list(first)
    finally:
        agent.shutdown()
    assert items_1[-1]["content"] == "one" and items_2[-1]["content"] == "two"
    assert "".join(u.delta for u in _updates(items_1)) == "one"
    assert "".join(u.delta for u in _updates(items_2)) == "two"
    assert items_1[-1]["input_ids"] == [first.input_id] and items_2[-1]["input_ids"] == [second.input_id]
    assert {i.run_id for i in items_1[:-1]}.isdisjoint({i.run_id for i in items_2[:-1]})


def test_a_consumer_that_stops_early_leaves_the_run_to_finish_and_the_answer_in_the_history():
    """on_close="continue" (default): break + close(); the run ends normally; nothing lost."""
    llm = ScriptedLLM([text_reply("a long answer")], delta_chars=1, delta_delay_seconds=0.01)
    agent = Agent(llm)
    stream = agent.stream("hi")
    for item in stream:
        if getattr(item, "type", "") == "message_update":
            break
    stream.close()
    answer = stream.future.result(timeout=10)
    assert answer["status"] == "completed" and answer["content"] == "a long answer"
    assert agent.history[-1].text == "a long answer"
    assert list(stream) == []  # closed: iteration ends


def test_on_close_abort_aborts_the_run_and_keeps_the_history_valid():
    """on_close="abort": closing after the first delta aborts the run serving this input."""
    llm = ScriptedLLM([text_reply("x" * 200)], delta_chars=1, delta_delay_seconds=0.01)
    agent = Agent(llm).start()
    try:
        stream = agent.stream("hi", on_close="abort")
        next(i for i in stream if getattr(i, "type", "") == "message_update")
        stream.close()
        answer = stream.future.result(timeout=10)
        follow = agent.ask("again?", timeout_seconds=10)  # the agent goes on with the next input
    finally:
        agent.shutdown()
    assert answer["status"] == "aborted"
    assert follow["status"] == "error"  # the script is exhausted: proves a new run really happened
    assert [m.role for m in agent.history[:2]] == ["user", "user"]  # no half-written assistant message


def test_on_close_abort_of_a_queued_input_aborts_its_run_when_it_starts_not_the_one_before():
    """Closing a stream whose input still waits must not abort another input's run."""
    llm = ScriptedLLM([text_reply("first answer"), text_reply("never")], delta_chars=1, delta_delay_seconds=0.02)
    agent = Agent(llm).start()
    try:
        first = agent.submit("first")
        second = agent.stream("second", on_close="abort")
        second.close()
        assert first.result(timeout=10)["status"] == "completed"
        assert second.future.result(timeout=10)["status"] == "aborted"
    finally:
        agent.shutdown()
    assert len(llm.calls) == 1  # the second run was aborted before its model call


def test_a_stream_nobody_reads_still_runs_and_answers():
    """stream() submits at once; the answer is in .future and the history even if never iterated."""
    agent = Agent(ScriptedLLM([text_reply("done")], delta_chars=2)).start()
    try:
        stream = agent.stream("go")
        assert stream.future.result(timeout=10)["content"] == "done"
    finally:
        agent.shutdown()
    assert agent.history[-1].text == "done"


def test_stream_text_returns_the_answer_text():
    """AgentStream.text() consumes the stream and returns the answer's content."""
    assert Agent(ScriptedLLM([text_reply("forty-two")])).stream("?").text() == "forty-two"


# --------------------------------------------------------------------------- SSE


def test_sse_events_are_valid_server_sent_events_ending_with_the_answer():
    """Parsed back with our SSE parser: JSON data, message_update fields as specified, the answer last."""
    agent = Agent(ScriptedLLM([text_reply("Hi there")], delta_chars=3))
    text = "".join(sse_events(agent.stream("hello")))
    events = _parse_sse(text)
    assert events[-1][0] == "answer" and events[-1][1]["content"] == "Hi there"
    updates = [data for name, data in events if name == "message_update"]
    assert "".join(u["delta"] for u in updates) == "Hi there"
    assert set(updates[0]) == {"type", "run_id", "timestamp", "delta_type", "delta", "tool_call_index",
                               "tool_call_id", "tool_name"}
    end = next(data for name, data in events if name == "message_end" and data["message"]["role"] == "assistant")
    assert end["message"]["content"] == "Hi there"
    assert SSE_HEADERS["Content-Type"].startswith("text/event-stream")


def test_sse_events_types_filter_keeps_the_answer():
    """types= keeps only the named events; the answer is always sent."""
    agent = Agent(ScriptedLLM([text_reply("ok")], delta_chars=1))
    names = [name for name, _ in _parse_sse("".join(sse_events(agent.stream("x"), types={"message_update"})))]
    assert names == ["input", "message_update", "message_update", "answer"]


def test_event_to_dict_makes_every_event_of_a_tool_run_json():
    """Tool calls, results, errors and messages all serialize."""
    recorder = EventRecorder()

    def broken(city: str) -> str:
        """Fails."""
        raise ValueError("no such city")

    agent = Agent(ScriptedLLM([tool_call_reply("broken", {"city": "X"}), text_reply("sorry")]), tools=[broken],
                  event_sink=recorder)
    agent.ask("?")
    dumped = [json.loads(json.dumps(event_to_dict(e))) for e in recorder.events]
    end = next(d for d in dumped if d["type"] == "tool_execution_end")
    assert end["tool_call"]["name"] == "broken" and end["result"]["is_error"]
    assert "no such city" in end["result"]["text"]
    assert any(d["type"] == "error" and "ValueError" in d["error"] for d in dumped)


def test_closing_the_sse_generator_closes_the_stream():
    """A WSGI server closes the response iterable when the client goes away: the AgentStream is closed."""
    llm = ScriptedLLM([text_reply("abcdef")], delta_chars=1, delta_delay_seconds=0.01)
    agent = Agent(llm)
    stream = agent.stream("hi", on_close="abort")
    body = sse_events(stream)
    next(body)
    body.close()
    assert stream.future.result(timeout=10)["status"] == "aborted"


# --------------------------------------------------------------------------- peers' reports


def test_pydantic_ai_375_assistant_message_in_history_after_streaming_deltas():
    """pydantic/pydantic-ai#375 (and #177): after streaming text deltas, new_messages() lacked the
    model's response. Here the streamed answer is in the history and in the answer dict.
    """
    agent = Agent(ScriptedLLM([text_reply("Yes, ready.")], delta_chars=2))
    items = list(agent.stream("Are you ready to help me?"))
    assert [m.role for m in agent.history] == ["user", "assistant"]
    assert agent.history[-1].text == items[-1]["content"] == "Yes, ready."


def test_agno_10460_a_failed_streamed_run_still_ends_with_its_answer():
    """agno-agi/agno#10460: a streamed run that fails yields only an error event and no final output.
    Here the model raises: the stream has the error event, agent_end, then an error answer, last.
    """
    agent = Agent(ScriptedLLM([RuntimeError("boom")]))
    items = list(agent.stream("hi"))
    answer = items[-1]
    assert isinstance(answer, dict) and answer["status"] == "error" and "boom" in answer["error"]
    types = [i.type for i in items[:-1]]
    assert "error" in types and types[-1] == "agent_end"


def test_openai_agents_js_371_a_streamed_run_reports_agent_end_to_the_sink_and_the_stream():
    """openai/openai-agents-js#371: streamed runs never called the agent_end hook. Here agent_end,
    with the run's usage, reaches both the event sink and the stream, before the answer.
    """
    reply = text_reply("ok")
    reply["usage"] = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    recorder = EventRecorder()
    items = list(Agent(ScriptedLLM([reply], delta_chars=1), event_sink=recorder).stream("hi"))
    ends = [i for i in items[:-1] if i.type == "agent_end"]
    assert len(ends) == 1 and ends[0].usage["total_tokens"] == 4 and items[-2] is ends[0]
    assert recorder.of_type("agent_end") == ends


def test_openai_agents_2427_the_answer_is_sent_once_and_last_even_after_tool_turns():
    """openai/openai-agents-python#2427: several response.completed per streamed run, so a client
    cannot tell the end. Here a 3-turn run has 3 assistant message_end events but one answer, last.
    """
    llm = ScriptedLLM([tool_call_reply("get_weather", {"city": "A"}, call_id="c1"),
                       tool_call_reply("get_weather", {"city": "B"}, call_id="c2"), text_reply("done")],
                      delta_chars=4)
    events = _parse_sse("".join(sse_events(Agent(llm, tools=[get_weather]).stream("go"))))
    names = [name for name, _ in events]
    assert names.count("answer") == 1 and names[-1] == "answer"
    assistant_ends = [d for n, d in events if n == "message_end" and d["message"]["role"] == "assistant"]
    assert len(assistant_ends) == 3


def test_llamacpp_13774_a_tool_name_repeated_in_every_chunk_is_not_concatenated():
    """ggml-org/llama.cpp#13774: llama.cpp repeated the full tool name in every tool-call delta and
    pydantic-ai concatenated it ("final_resultfinal_result..."). Recorded shape (that server version
    is not the one here): deltas and the merged reply keep the name once.
    """
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c1" if i == 0 else None, "type": "function",
         "function": {"name": "final_result", "arguments": piece}}]}}]}
        for i, piece in enumerate(['{"a"', ': 1', '}'])]
    got = []
    deltas = ChunkDeltas(lambda kind, delta, **kw: got.append((kind, delta, kw)))
    for chunk in chunks:
        deltas.feed(chunk)
    assert [kw["tool_name"] for _, _, kw in got] == ["final_result"] * 3
    assert [kw["tool_call_id"] for _, _, kw in got] == ["c1"] * 3
    call = parse_response(merge_chunks(chunks)).tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("c1", "final_result", {"a": 1})


def test_litellm_2716_text_before_tool_calls_keeps_both_in_deltas_and_reply():
    """BerriAI/litellm#2716: stream_chunk_builder dropped tool_calls that followed content. Recorded
    OpenAI shape: the text deltas, then the call's; the merged reply has the text and the call.
    """
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me check."}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                             "function": {"name": "get_weather", "arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ' "SF"}'}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    got = []
    deltas = ChunkDeltas(lambda kind, delta, **kw: got.append((kind, delta)))
    for chunk in chunks:
        deltas.feed(chunk)
    assert got == [("text", "Let me check."), ("tool_call", ""), ("tool_call", '{"city":'), ("tool_call", ' "SF"}')]
    message = parse_response(merge_chunks(chunks))
    assert message.text == "Let me check." and message.tool_calls[0].arguments == {"city": "SF"}


def test_pydantic_ai_8208_text_after_a_tool_call_is_streamed_in_arrival_order():
    """pydantic/pydantic-ai#8208: text, a tool call, then more text gave deltas for an ended part.
    Here deltas are flat and ordered as they came; the final text has both pieces.
    """
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": "Checking"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                             "function": {"name": "query", "arguments": "{}"}}]}}]},
        {"choices": [{"index": 0, "delta": {"content": "\n"}}]},
    ]
    got = []
    deltas = ChunkDeltas(lambda kind, delta, **kw: got.append((kind, delta)))
    for chunk in chunks:
        deltas.feed(chunk)
    assert got == [("text", "Checking"), ("tool_call", "{}"), ("text", "\n")]
    assert parse_response(merge_chunks(chunks)).text == "Checking\n"


def test_message_update_event_has_the_specified_fields():
    """The contract ux-cli builds against."""
    event = MessageUpdateEvent(delta_type="tool_call", delta='{"a', tool_call_index=0, tool_call_id="c",
                               tool_name="f")
    assert event.type == "message_update" and event.timestamp > 0
    assert (event.delta_type, event.delta, event.tool_call_index, event.tool_call_id, event.tool_name) == (
        "tool_call", '{"a', 0, "c", "f")


# --------------------------------------------------------------------------- the real local model


@pytest.mark.model
def test_openai_chat_streams_real_llamacpp_deltas_that_add_up_to_the_reply(local_model, weather_server):
    """Real SSE from llama.cpp: text and tool-call deltas arrive before message_end and add up to it."""
    recorder = EventRecorder()
    agent = Agent(local_model.llm_call(max_tokens=40), mcp_servers=[weather_server], event_sink=recorder,
                  max_turns=1, builtin_list_tools=False)
    started = time.monotonic()
    items = list(agent.stream("What is the weather in Paris?"))
    assert time.monotonic() - started < 120
    reply = next(e.message for e in recorder.of_type("message_end") if isinstance(e.message, AssistantMessage))
    updates = _updates(items)
    assert len(updates) >= 3
    calls = [u for u in updates if u.delta_type == "tool_call"]
    assert calls, f"the model called no tool: {reply!r}"
    first = reply.tool_calls[0]
    raw = "".join(u.delta for u in calls if u.tool_call_index == calls[0].tool_call_index)
    assert json.loads(raw) == first.arguments and calls[0].tool_name == first.name
    assert calls[-1].tool_call_id  # llama.cpp sends ids
    types = recorder.types()
    assert types.index("message_update") < types.index("message_end", types.index("turn_start"))


def test_sse_events_send_keep_alive_comments_while_a_tool_runs_quietly():
    """A quiet stretch (a slow tool) gets ``: keep-alive`` comments, which SSE clients ignore."""
    release = threading.Event()

    @tool
    def slow() -> str:
        """Waits until released."""
        release.wait(10)
        return "done"

    agent = Agent(ScriptedLLM([tool_call_reply("slow", {}), text_reply("ok")]), tools=[slow])
    chunks = []
    for chunk in sse_events(agent.stream("go"), heartbeat_seconds=0.01):
        chunks.append(chunk)
        if chunk.startswith(": keep-alive") and not release.is_set():
            release.set()  # one heartbeat seen during the tool: let it finish
    assert ": keep-alive\n\n" in chunks
    events = _parse_sse("".join(chunks))
    assert events[-1][0] == "answer" and events[-1][1]["content"] == "ok"
    assert all(name != "message" for name, _ in events)  # the comments made no events


def test_agent_stream_next_with_a_timeout_raises_timeout_error_and_goes_on():
    """stream.next(timeout_seconds) waits a bounded time; the stream still ends with the answer."""
    release = threading.Event()

    def llm_call(messages, tools):
        release.wait(10)
        return text_reply("late")

    stream = Agent(llm_call).stream("hi")
    items = [stream.next()]  # no limit: the run has started
    with pytest.raises(TimeoutError):
        while True:  # the model call blocks, so a wait of 0.05 s runs out at the latest there
            items.append(stream.next(timeout_seconds=0.05))
    release.set()
    assert items[0].type == "agent_start"
    rest = list(stream)
    assert rest[-1]["content"] == "late" and rest[-2].type == "agent_end"


def test_a_steered_input_streams_from_where_it_joined_the_run():
    """steering=True: an input streamed during a run joins it; its stream gets the rest and the shared answer."""
    release = threading.Event()

    @tool
    def wait_a_bit() -> str:
        """Waits until released."""
        release.wait(10)
        return "waited"

    llm = ScriptedLLM([tool_call_reply("wait_a_bit", {}), text_reply("both answered")])
    recorder = EventRecorder()
    agent = Agent(llm, tools=[wait_a_bit], steering=True, event_sink=recorder).start()
    try:
        first = agent.stream("first")
        next(e for e in first if getattr(e, "type", "") == "tool_execution_start")
        second = agent.stream("second")
        release.set()
        items = list(second)
        first_items = list(first)
    finally:
        agent.shutdown()
    assert items[-1]["content"] == first_items[-1]["content"] == "both answered"
    assert sorted(items[-1]["input_ids"]) == sorted([first.input_id, second.input_id])
    assert items[0].type != "agent_start" and items[-2].type == "agent_end"  # joined mid-run
    assert "".join(m.role for m in agent.history) == "userassistanttooluserassistant"


def test_litellm_7621_parallel_calls_streamed_at_one_index_keep_their_own_ids_and_names():
    """BerriAI/litellm#7621 (and #10034): Groq streams each parallel call whole, all at index 0, and
    stream_chunk_builder glued their arguments into one call. Here each call's deltas carry its own id
    and name, so a UI keyed by (tool_call_index, tool_call_id) shows three calls.
    """
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": f"call_{city}", "type": "function",
         "function": {"name": name, "arguments": f'{{"city": "{city}"}}'}}]}}]}
        for city, name in (("SF", "get_weather"), ("Tokyo", "get_weather"), ("Paris", "get_time"))]
    got = []
    deltas = ChunkDeltas(lambda kind, delta, **kw: got.append((kw["tool_call_id"], kw["tool_name"], delta)))
    for chunk in chunks:
        deltas.feed(chunk)
    assert got == [("call_SF", "get_weather", '{"city": "SF"}'), ("call_Tokyo", "get_weather", '{"city": "Tokyo"}'),
                   ("call_Paris", "get_time", '{"city": "Paris"}')]


def test_issue_27_a_stream_nobody_reads_stops_growing_deltas_are_dropped_the_message_and_answer_kept():
    """Issue 27: an ``AgentStream`` whose reader stopped kept queuing (172,762 events, +46 MB). Past
    ``max_buffered`` waiting items the deltas (a preview) are dropped and counted; message_end and the
    answer still arrive, whole.
    """
    pieces = 5_000

    def llm_call(messages, tools, *, on_delta=None):
        for _ in range(pieces):
            on_delta("text", "x")
        return text_reply("x" * pieces)

    agent = Agent(llm_call).start()
    try:
        stream = agent.stream("write a lot")
        stream.max_buffered = 100
        answer = stream.future.result(timeout=60)  # the run ends while nobody reads
        assert stream._queue.qsize() <= 100 + 20  # the deltas past the bound were not kept
        assert stream.dropped >= pieces - 100
        items = list(stream)
        assert items[-1]["content"] == "x" * pieces == answer["content"]
        ends = [i for i in items[:-1] if i.type == "message_end" and i.message.role == "assistant"]
        assert ends and ends[-1].message.text == "x" * pieces
    finally:
        agent.shutdown()
