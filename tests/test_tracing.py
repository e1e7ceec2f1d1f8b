"""Issue 19 point 4: OpenTelemetry spans of every run, built from the event stream (``yiemagent.loop.tracing``).

The spans are read with the OpenTelemetry SDK's in-memory exporter; the MCP tests use the real mcp SDK
server (``sdk_server``), whose ``trace_context`` tool answers the ``traceparent`` it received.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="the otel test extra (opentelemetry-sdk) is not installed")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from yiemagent import Agent, tool
from yiemagent.exceptions import ConfigError, LLMError
from yiemagent.loop import events, tracing
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        tracing.uninstrument()


def two_calls(first: str, second: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    import json

    calls = [{"id": f"call_{i}", "type": "function",
              "function": {"name": name, "arguments": json.dumps(args or {"a": i, "b": 1})}}
             for i, name in enumerate((first, second))]
    return {"model": "gpt-test-2026", "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": None, "tool_calls": calls}}]}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def boom(a: int, b: int) -> int:
    """Always fails."""
    raise RuntimeError("tool broke")


def by_name(spans: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for span in spans:
        out.setdefault(span.name, []).append(span)
    return out


def test_a_run_with_two_tool_calls_is_one_agent_span_with_two_chat_and_two_tool_children(exporter):
    llm = ScriptedLLM([two_calls("add", "add"), text_reply("Done: 1 and 2.")])
    llm.model = "gpt-test"  # type: ignore[attr-defined]
    answer = Agent(llm, tools=[add]).ask("add twice")
    assert answer["status"] == "completed"
    spans = by_name(exporter.get_finished_spans())
    (run,) = spans["invoke_agent"]
    chats = spans["chat gpt-test"]
    tools = spans["execute_tool add"]
    assert len(chats) == 2 and len(tools) == 2
    for child in chats + tools:
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
    assert run.kind == SpanKind.INTERNAL and chats[0].kind == SpanKind.CLIENT
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["yiemagent.run.status"] == "completed"
    first = min(chats, key=lambda s: s.start_time)
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.request.model"] == "gpt-test"
    assert first.attributes["gen_ai.response.model"] == "gpt-test-2026"
    assert first.attributes["gen_ai.usage.input_tokens"] == 12
    assert first.attributes["gen_ai.usage.output_tokens"] == 7
    assert tuple(first.attributes["gen_ai.response.finish_reasons"]) == ("tool_calls",)
    assert {t.attributes["gen_ai.tool.call.id"] for t in tools} == {"call_0", "call_1"}
    assert all(t.attributes["gen_ai.tool.name"] == "add" and t.attributes["gen_ai.operation.name"] == "execute_tool"
               for t in tools)
    # the spans nest in time too: tools after the first model call, inside the run
    assert all(first.end_time <= t.start_time <= t.end_time <= run.end_time for t in tools)
    # no content unless asked
    assert not any(k.startswith("gen_ai.tool.call.arguments") for t in tools for k in t.attributes)


def test_content_is_recorded_only_when_asked_and_goes_through_the_text_policy(exporter):
    from yiemagent.textpolicy import register_secrets

    secret = "sk-span-secret-0123456789"
    register_secrets([secret])
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.instrument(tracer_provider=provider, capture_content=True)
    llm = ScriptedLLM([two_calls("add", "add"), text_reply(f"key {secret} and \ud800 done")])
    Agent(llm, tools=[add]).ask("add")
    spans = by_name(exporter.get_finished_spans())
    tool_span = spans["execute_tool add"][0]
    assert '"a"' in tool_span.attributes["gen_ai.tool.call.arguments"]
    assert tool_span.attributes["gen_ai.tool.call.result"] in ("1", "2")
    last_chat = max(spans["chat"], key=lambda s: s.start_time)
    output = last_chat.attributes["gen_ai.output.messages"]
    assert "done" in output and secret not in output
    output.encode("utf-8")  # the lone surrogate did not reach the exporter


def test_a_failing_tool_and_a_failing_model_mark_their_spans_as_errors(exporter):
    class Broken(ScriptedLLM):
        def __call__(self, messages: Any, tools: Any) -> Any:
            if len(self.calls) == 1:
                self.calls.append({"messages": messages, "tools": tools})
                raise LLMError("provider down")
            return super().__call__(messages, tools)

    llm = Broken([two_calls("boom", "add")])
    answer = Agent(llm, tools=[add, boom]).ask("go")
    assert answer["status"] == "error"
    spans = by_name(exporter.get_finished_spans())
    (failed_tool,) = spans["execute_tool boom"]
    assert failed_tool.status.status_code == StatusCode.ERROR
    assert failed_tool.attributes["error.type"] == "tool_error"
    assert spans["execute_tool add"][0].status.status_code != StatusCode.ERROR
    failed_chat = max(spans["chat"], key=lambda s: s.start_time)
    assert failed_chat.status.status_code == StatusCode.ERROR
    assert failed_chat.attributes["error.type"] == "LLMError"
    (run,) = spans["invoke_agent"]
    assert run.status.status_code == StatusCode.ERROR and run.attributes["yiemagent.run.status"] == "error"


def test_agent_framework_3778_an_mcp_tool_call_carries_the_tool_spans_traceparent_to_a_real_server(
        exporter, sdk_server, open_client):
    client = open_client(sdk_server)
    llm = ScriptedLLM([tool_call_reply("trace_context", {}), text_reply("ok")])
    agent = Agent(llm, mcp_servers=[client], builtin_list_tools=False)
    agent.ask("trace")
    spans = by_name(exporter.get_finished_spans())
    (tool_span,) = spans["execute_tool trace_context"]
    received = next(m for m in agent.history if getattr(m, "tool_name", None) == "trace_context").text
    version, trace_id, span_id, flags = received.split("-")
    assert version == "00" and int(flags, 16) & 1  # sampled
    assert int(trace_id, 16) == tool_span.context.trace_id  # the server is in the run's trace,
    assert int(span_id, 16) == tool_span.context.span_id    # as a child of the tool's span


def test_without_instrument_nothing_observes_and_no_traceparent_is_sent(sdk_server, open_client):
    assert not tracing.is_instrumented() and events._observers == ()
    client = open_client(sdk_server)
    llm = ScriptedLLM([tool_call_reply("trace_context", {}), text_reply("ok")])
    agent = Agent(llm, mcp_servers=[client], builtin_list_tools=False)
    agent.ask("trace")
    received = next(m for m in agent.history if getattr(m, "tool_name", None) == "trace_context").text
    assert received == "none"


def test_uninstrument_stops_new_spans_and_instrument_twice_keeps_one_observer(exporter):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.instrument(tracer_provider=provider)
    tracing.instrument(tracer_provider=provider)
    assert len(events._observers) == 1
    Agent(ScriptedLLM([text_reply("hi")])).ask("hello")
    assert len(by_name(exporter.get_finished_spans())["invoke_agent"]) == 1
    tracing.uninstrument()
    exporter.clear()
    Agent(ScriptedLLM([text_reply("hi")])).ask("hello")
    assert exporter.get_finished_spans() == ()


def test_runs_of_two_agents_at_once_get_separate_traces(exporter):
    import threading

    results = []

    def run(name: str) -> None:
        llm = ScriptedLLM([two_calls("add", "add"), text_reply(name)])
        results.append(Agent(llm, tools=[add]).ask(name)["content"])

    threads = [threading.Thread(target=run, args=(f"agent {i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results) == [f"agent {i}" for i in range(4)]
    spans = exporter.get_finished_spans()
    runs = [s for s in spans if s.name == "invoke_agent"]
    assert len(runs) == 4 and len({r.context.trace_id for r in runs}) == 4
    for r in runs:
        children = [s for s in spans if s.parent is not None and s.parent.span_id == r.context.span_id]
        assert sorted(s.name for s in children) == ["chat", "chat", "execute_tool add", "execute_tool add"]


def test_a_run_on_the_agent_thread_is_a_child_of_the_span_that_queued_its_input(exporter):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("web")
    with Agent(ScriptedLLM([text_reply("one"), text_reply("two")])) as agent:  # started: its own thread
        with tracer.start_as_current_span("POST /chat") as request:
            assert agent.ask("first", timeout_seconds=30)["content"] == "one"
        assert agent.ask("second", timeout_seconds=30)["content"] == "two"  # no span current: a root
    runs = sorted((s for s in exporter.get_finished_spans() if s.name == "invoke_agent"), key=lambda s: s.start_time)
    assert runs[0].parent is not None and runs[0].parent.span_id == request.get_span_context().span_id
    assert runs[0].context.trace_id == request.get_span_context().trace_id
    assert runs[1].parent is None


def test_a_sub_agent_run_is_a_child_of_the_parent_tool_call_that_asked_it(exporter):
    sub = Agent(ScriptedLLM([text_reply("It is in Paris.")]), name="geo")
    parent = Agent(ScriptedLLM([tool_call_reply("ask_geo", {"input": "Where is the Louvre?"}), text_reply("Paris.")]),
                   tools=[sub.as_tool("ask_geo", "Ask the geography agent.")])
    assert parent.ask("where?", timeout_seconds=60)["content"] == "Paris."
    spans = exporter.get_finished_spans()
    (tool_span,) = [s for s in spans if s.name == "execute_tool ask_geo"]
    runs = [s for s in spans if s.name == "invoke_agent"]
    assert len(runs) == 2
    sub_run = next(s for s in runs if s.parent is not None and s.parent.span_id == tool_span.context.span_id)
    assert sub_run.context.trace_id == tool_span.context.trace_id  # one trace: parent run > tool > sub-run


def test_the_trace_context_goes_with_the_input_through_the_store_to_the_worker_that_serves_it(
        exporter, sqlite_store_factory):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.instrument(tracer_provider=provider)
    web = Agent(ScriptedLLM([]), store=sqlite_store_factory(), conversation_id="traced")  # never serves
    with provider.get_tracer("web").start_as_current_span("POST /chat") as request:
        web.input_queue.put("hello from the web process")  # stored in the inbox with its trace context
    tracing.instrument(tracer_provider=provider)  # a fresh tracer: another process remembers nothing
    worker = Agent(ScriptedLLM([text_reply("hi")]), store=sqlite_store_factory(), conversation_id="traced")
    assert [a["content"] for a in worker.drain()] == ["hi"]
    (run,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    assert run.parent is not None and run.parent.span_id == request.get_span_context().span_id
    assert run.context.trace_id == request.get_span_context().trace_id
    web.shutdown()
    worker.shutdown()



def test_fastmcp_3998_and_aws_otel_826_every_request_carries_the_trace_context_in_meta_and_headers(
        exporter, sdk_server):
    """FastMCP 3998: initialize and the list methods went without ``_meta.traceparent``; aws-otel 826: servers
    and gateways reading the HTTP ``traceparent`` header saw none. Here every request made inside a span
    carries it in ``params._meta`` and as a header, the same value (the real SDK server, a recording session).
    """
    from tests.helpers import RecordingSession
    from yiemagent.mcp import HTTPTransport, MCPClient

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.instrument(tracer_provider=provider)
    session = RecordingSession()
    client = MCPClient(transport=HTTPTransport(sdk_server, session=session, timeout_seconds=10),
                       protocol_version="2025-11-25")
    try:
        with provider.get_tracer("app").start_as_current_span("outer") as outer:
            client.list_tools()
            client.call_tool("echo", {"text": "hi"})
    finally:
        client.close()
    trace_id = format(outer.get_span_context().trace_id, "032x")
    posts = [r for r in session.sent if r.rpc_method in ("initialize", "tools/list", "tools/call")]
    assert {r.rpc_method for r in posts} == {"initialize", "tools/list", "tools/call"}
    for record in posts:
        body = record.message["params"]["_meta"]["traceparent"]
        assert body.split("-")[1] == trace_id, record.rpc_method
        assert record.headers["traceparent"] == body, record.rpc_method
    outside = MCPClient(transport=HTTPTransport(sdk_server, session=(quiet := RecordingSession()),
                                                timeout_seconds=10), protocol_version="2025-11-25")
    try:
        outside.list_tools()  # no span current: nothing is added
    finally:
        outside.close()
    assert all("traceparent" not in r.headers and "_meta" not in (r.message or {}).get("params", {})
               for r in quiet.sent if r.message)


def test_issue_27_with_content_capture_off_no_error_text_a_model_or_tool_wrote_reaches_a_span(exporter):
    """Issue 27's rule: with content capture off, nothing a user, a tool or a model wrote reaches a span, error
    texts included (a server's error body, a tool's error message).
    """
    @tool
    def leaky(a: int, b: int) -> int:
        """Fails with what it read."""
        raise RuntimeError("zq-tool-secret from the record")

    class Broken(ScriptedLLM):
        def __call__(self, messages: Any, tools: Any) -> Any:
            if len(self.calls) == 1:
                self.calls.append({"messages": messages, "tools": tools})
                raise LLMError("the server said: zq-model-secret in its body")
            return super().__call__(messages, tools)

    answer = Agent(Broken([two_calls("leaky", "leaky")]), tools=[leaky]).ask("zq-user-secret")
    assert answer["status"] == "error"
    spans = exporter.get_finished_spans()
    assert any(s.status.status_code == StatusCode.ERROR for s in spans)
    for span in spans:
        seen = f"{span.name} {span.status.description} {dict(span.attributes or {})} {list(span.events)}"
        assert "zq-" not in seen, seen


def test_issue_27_capture_content_records_the_input_messages_the_guide_promises(exporter):
    """Issue 27 (a new user's first hour): ``capture_content=True`` recorded the model's answers but not the
    messages it was asked with, although docs/guides/long_conversations.rst says message contents are recorded.
    Each ``chat`` span now carries ``gen_ai.input.messages`` (the request as ``llm_call`` got it, through the text
    policy); without content capture it carries none.
    """
    from yiemagent.textpolicy import register_secrets

    secret = "sk-input-secret-0123456789"
    register_secrets([secret])
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.instrument(tracer_provider=provider, capture_content=True)
    llm = ScriptedLLM([two_calls("add", "add"), text_reply("done")])
    Agent(llm, tools=[add], system_prompt="You add numbers.").ask(f"add please, key {secret}")
    chats = sorted(by_name(exporter.get_finished_spans())["chat"], key=lambda s: s.start_time)
    assert len(chats) == 2
    first, last = (json.loads(c.attributes["gen_ai.input.messages"]) for c in chats)
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[1]["content"].startswith("add please") and secret not in chats[0].attributes["gen_ai.input.messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "tool"]
    tracing.uninstrument()
    exporter.clear()
    tracing.instrument(tracer_provider=provider)
    Agent(ScriptedLLM([text_reply("ok")])).ask("hello")
    (chat,) = by_name(exporter.get_finished_spans())["chat"]
    assert "gen_ai.input.messages" not in chat.attributes


def test_spans_nobody_records_get_no_content_made(monkeypatch):
    """Issue 34 point 3: a sampled-out run (``ALWAYS_OFF``) makes no attribute text nobody reads.

    Counted, not timed: with ``capture_content=True`` the request's JSON, the reply's and each result's were
    made for spans that drop them. What the sampler may read (the start attributes) is still made.
    """
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    made: list[Any] = []
    real = tracing._attribute

    def counted(value: Any) -> str:
        made.append(value)
        return real(value)

    monkeypatch.setattr(tracing, "_attribute", counted)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.instrument(tracer_provider=provider, capture_content=True)
    try:
        llm = ScriptedLLM([two_calls("add", "add"), text_reply("done")])
        answer = Agent(llm, tools=[add]).ask("add twice")
    finally:
        tracing.uninstrument()
    assert answer["content"] == "done"
    assert exporter.get_finished_spans() == ()
    # per call: its name and id (start attributes, for the sampler), the span's name, its arguments; nothing else
    assert sorted(map(repr, made)) == sorted(map(repr, ["add", "call_0", "add", {"a": 0, "b": 1},
                                                       "add", "call_1", "add", {"a": 1, "b": 1}])), made


def test_without_an_sdk_no_child_span_is_started(monkeypatch):
    """Issue 34 point 3: the API alone (no SDK) gives the invalid span; its children are not asked for."""
    from opentelemetry import trace

    started: list[str] = []
    real = trace.NoOpTracer.start_span

    def counted(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        started.append(name)
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(trace.NoOpTracer, "start_span", counted)
    tracing.instrument(tracer_provider=trace.NoOpTracerProvider())
    try:
        answer = Agent(ScriptedLLM([two_calls("add", "add"), text_reply("done")]), tools=[add]).ask("add twice")
    finally:
        tracing.uninstrument()
    assert answer["content"] == "done"
    assert started == ["invoke_agent"]


def test_tracing_alone_makes_only_the_events_it_reads(monkeypatch, exporter):
    """Issue 34 point 3: without a sink, the loop makes only the event types the tracer reads (counted).

    Before, an observer made the loop build every frequent event (``message_start``, ``turn_end``...) for a
    tracer that dropped them. The spans are the same (the other tests of this file).
    """
    made: list[str] = []
    real = events.observe

    def counted(event: Any) -> None:
        made.append(event.type)
        real(event)

    monkeypatch.setattr(events, "observe", counted)
    answer = Agent(ScriptedLLM([two_calls("add", "add"), text_reply("done")]), tools=[add]).ask("add twice")
    assert answer["content"] == "done"
    assert "message_start" not in made and made.count("turn_end") == 1, made  # the last turn's: always made
    assert made.count("tool_execution_start") == 2 and made.count("turn_start") == 2, made
    names = sorted(span.name for span in exporter.get_finished_spans())
    assert names == ["chat", "chat", "execute_tool add", "execute_tool add", "invoke_agent"], names
    with pytest.raises(ConfigError, match="tool_execution_start"):
        events.add_observer(print, types=["tool_execution_strat"])


def test_a_sink_beside_tracing_still_gets_every_event(exporter):
    got: list[str] = []
    agent = Agent(ScriptedLLM([two_calls("add", "add"), text_reply("done")]), tools=[add],
                  event_sink=lambda event: got.append(event.type))
    assert agent.ask("add twice")["content"] == "done"
    assert "message_start" in got and "turn_end" in got and got.count("tool_execution_end") == 2
