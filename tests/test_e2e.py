"""End to end: Agent + real MCP server (mcp SDK, subprocess) + scripted or real local model."""

import json

import pytest

from yiemagent import Agent, LLMError, MCPClient, ToolResultMessage, openai_chat
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply

from . import strict_openai


def test_agent_discovers_mcp_tools_at_run_time_and_calls_them(sdk_server):
    """The model sees the server's tools; its call goes over tools/call; the result comes back."""
    llm = ScriptedLLM([tool_call_reply("add", {"a": 2, "b": 40}), text_reply("42")])
    recorder = EventRecorder()
    agent = Agent(llm, mcp_servers=[sdk_server], event_sink=recorder).start()
    try:
        answer = agent.ask("2 + 40?", timeout_seconds=30)
    finally:
        agent.shutdown()
    assert answer["content"] == "42" and answer["status"] == "completed"
    offered = {t["function"]["name"] for t in llm.calls[0]["tools"]}
    assert {"add", "echo", "list_tools"} <= offered
    assert llm.calls[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    changed = recorder.of_type("tools_changed")
    assert changed and "add" in changed[0].added


def test_c16_an_mcp_is_error_result_reaches_the_model_as_an_error_tool_result(sdk_server):
    """C16: isError true -> tool message with the text, marked as failure, loop continues."""
    llm = ScriptedLLM([tool_call_reply("fail", {"message": "unknown city"}), text_reply("sorry")])
    agent = Agent(llm, mcp_servers=[MCPClient(sdk_server)])
    answer = agent.ask("weather in Atlantis?")
    result = next(m for m in agent.history if isinstance(m, ToolResultMessage))
    assert answer["content"] == "sorry"
    assert result.is_error and "unknown city" in result.text
    agent.shutdown()


def test_c16_a_json_rpc_error_from_tools_call_becomes_an_error_tool_result(sdk_server):
    """C16 contrast: a JSON-RPC error object is an error tool message, not an exception."""
    client = MCPClient(sdk_server)
    agent = Agent(ScriptedLLM([tool_call_reply("echo", {"text": "hi"}), text_reply("ok")]), mcp_servers=[client])
    agent.mcp.refresh()
    # The server forgets the tool between discovery and the call: tools/call for a name it does not know.
    agent.tools.get("echo").execute.tool_name = "no_such_tool"
    agent.ask("echo hi")
    result = next(m for m in agent.history if isinstance(m, ToolResultMessage))
    assert result.is_error and "no_such_tool" in result.text
    agent.shutdown()
    client.close()


def test_builtin_list_tools_rediscovers_and_lists_every_tool(sdk_server):
    """FR-004: the model can ask for the tool list; it gets every tool, local and MCP."""
    def local_tool() -> str:
        """A local tool."""
        return "local"

    llm = ScriptedLLM([tool_call_reply("list_tools", {}), text_reply("listed")])
    agent = Agent(llm, tools=[local_tool], mcp_servers=[sdk_server])
    agent.ask("what can you do?")
    listing = json.loads(llm.calls[1]["messages"][-1]["content"])
    names = {item["name"] for item in listing}
    assert {"local_tool", "add", "echo", "list_tools"} <= names
    agent.shutdown()


def test_an_unreachable_mcp_server_is_an_error_event_and_the_agent_still_answers(free_port):
    """A dead server never kills a run: error event, other tools still work."""
    recorder = EventRecorder()
    llm = ScriptedLLM([text_reply("no tools needed")])
    agent = Agent(llm, mcp_servers=[f"http://127.0.0.1:{free_port}/mcp"], event_sink=recorder)
    assert agent.ask("hi")["content"] == "no tools needed"
    assert any(e.type == "error" and e.where == "mcp" for e in recorder.events)
    agent.shutdown()


@pytest.mark.model
def test_local_model_calls_a_real_mcp_tool_and_a_cut_off_last_call_is_answered_not_run(local_model, weather_server):
    """Real model, real server: 2 calls with the 2nd cut by max_tokens; the 1st runs, the 2nd gets an
    error result, and the next model call succeeds (a broken call in the history would get HTTP 500).
    """
    recorder = EventRecorder()
    agent = Agent(local_model.llm_call(max_tokens=40), mcp_servers=[weather_server], event_sink=recorder,
                  max_turns=2, builtin_list_tools=False)
    answer = agent.ask("What is the weather in Paris?", timeout_seconds=120)
    assert answer["status"] in ("max_turns", "truncated"), answer  # turn 2, the final tool-free call, succeeded
    first = next(e.message for e in recorder.of_type("message_end") if getattr(e.message, "tool_calls", None))
    assert first.finish_reason == "length"
    assert [c.name for c in first.tool_calls] == ["get_weather", "get_time"]
    assert first.tool_calls[0].error is None and first.tool_calls[1].error and "cut off" in first.tool_calls[1].error
    results = [m for m in agent.history if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [False, True]
    assert results[0].text.startswith("Weather in Paris: Sunny")  # answered by the real server
    messages = agent.openai_messages()
    strict_openai.validate(messages)
    assert messages[1]["tool_calls"][1]["function"]["arguments"] == "{}"
    agent.shutdown()


@pytest.mark.model
def test_local_server_answers_http_500_for_a_cut_off_call_and_openai_chat_reports_it(local_model):
    """PEERS.md: a cut-off call sent back makes llama.cpp answer 500; LLMError carries status and body."""
    llm_call = openai_chat(local_model.base_url, "gemma3-270m", max_tokens=8)
    broken = [{"role": "user", "content": "hi"},
              {"role": "assistant", "content": None, "tool_calls": [
                  {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"city": "Pa'}}]},
              {"role": "tool", "tool_call_id": "c1", "content": "x"}]
    with pytest.raises(LLMError) as info:
        llm_call(broken, [])
    assert info.value.status_code is not None and info.value.status_code >= 400
    assert str(info.value.status_code) in str(info.value)


def test_openai_chat_reports_connection_refused_as_llm_error(free_port):
    """No server: LLMError after the retries for never-sent requests."""
    llm_call = openai_chat(f"http://127.0.0.1:{free_port}/v1", "m", timeout_seconds=2)
    with pytest.raises(LLMError) as info:
        llm_call([{"role": "user", "content": "hi"}], [])
    assert "Connection refused" in str(info.value) or "Max retries" in str(info.value)


@pytest.mark.model
def test_abort_cuts_a_streaming_generation_and_the_server_stops_generating(local_model):
    """abort() during a long generation: "aborted" at once, and llama.cpp frees its slot (stream cut)."""
    import time

    import requests

    recorder = EventRecorder()
    agent = Agent(local_model.llm_call(max_tokens=400), event_sink=recorder).start()
    try:
        future = agent.submit("Write a long story about a cat.")
        deadline = time.monotonic() + 10
        while not recorder.of_type("message_start") and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)  # let the generation run
        begun = time.monotonic()
        agent.abort()
        answer = future.result(5)
        elapsed = time.monotonic() - begun
        slots_url = local_model.base_url.removesuffix("/v1") + "/slots"
        deadline = time.monotonic() + 5
        while any(slot["is_processing"] for slot in requests.get(slots_url, timeout=5).json()):
            assert time.monotonic() < deadline, "llama.cpp still generates after the abort"
            time.sleep(0.05)
    finally:
        agent.shutdown()
    # The outcome: aborted (not the story) and llama.cpp stopped. The bound is generous on purpose: under load
    # (issue 15: this test failed beside another suite) a starved thread, not the product, set the pace.
    assert answer["status"] == "aborted" and elapsed < 5
    assert [m["role"] for m in agent.openai_messages()] == ["user"]


def test_issue15_a_model_request_that_races_abort_does_not_leave_llama_cpp_generating(local_model):
    """Issue 15 (the e2e abort test failed under load): a request whose worker thread was late, so that it
    connected only after ``abort()`` had run ``cancel()`` (which cuts connections already made), went on
    generating on the server after the run was aborted. ``openai_chat`` now takes the run's
    ``abort_event``: nothing is sent once it is set, and a reply that arrives anyway is closed at once.
    The late thread is made certain here by a wrapper that waits 0.5 s before sending.
    """
    import time

    import requests

    chat = local_model.llm_call(max_tokens=400)

    def late(messages, tools, *, on_delta=None, abort_event=None):
        time.sleep(0.5)  # the worker thread is starved: abort() and cancel() run before the request is made
        return chat(messages, tools, on_delta=on_delta, abort_event=abort_event)

    recorder = EventRecorder()
    agent = Agent(late, event_sink=recorder).start()
    try:
        future = agent.submit("Write a long story about a cat.")
        deadline = time.monotonic() + 10
        while not recorder.of_type("message_start") and time.monotonic() < deadline:
            time.sleep(0.01)
        agent.abort()
        assert future.result(30)["status"] == "aborted"
        slots_url = local_model.base_url.removesuffix("/v1") + "/slots"
        watched_until = time.monotonic() + 3.0  # the late request starts 0.5 s in; 400 tokens take longer
        while time.monotonic() < watched_until:
            busy = any(slot["is_processing"] for slot in requests.get(slots_url, timeout=5).json())
            assert not busy, "llama.cpp generates for a run that was aborted"
            time.sleep(0.02)
    finally:
        agent.shutdown()
