"""Cases N02, N03, N04 and N09 (../shared/cases/README.md) and the formatter cache of issue 8, point 2.

Each request the scripted model receives is checked by the strict validator
(``tests/strict_openai.py``), the request guard's oracle.
"""

import sys
from pathlib import Path

import pytest

from yiemagent import Agent, tool
from yiemagent.messages import TextContent, ToolResultMessage
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply

from .. import strict_openai

SERVERS = Path(__file__).resolve().parent.parent / "servers"


def _calls_reply(*calls):
    return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
                       for call_id, name, args in calls]}}]}


def _all_valid(llm):
    for sent in llm.calls:
        strict_openai.validate_request(sent["messages"], sent["tools"])


def test_N02_mcp_array_without_items_at_any_depth_is_given_items(stdio_client):
    """N02 (mark3labs/mcphost #35; ogx-ai/ogx #3004 "array schema missing items"): a real SDK server lists
    ``tagger`` with ``{"type": "array"}`` at the top and nested under ``meta``; every array the model is
    offered has ``items``, the call still validates and the server answers ``tagged 2``.
    """
    client = stdio_client([sys.executable, str(SERVERS / "loose_schema_server.py")])
    llm = ScriptedLLM([
        tool_call_reply("tagger", {"tags": ["red", "blue"], "meta": {"ids": [7]}}, call_id="c1"),
        text_reply("done"),
    ])
    events = EventRecorder()
    agent = Agent(llm, mcp_servers=[client], event_sink=events)
    answer = agent.ask("tag it")
    assert answer["status"] == "completed"
    _all_valid(llm)
    params = next(t["function"]["parameters"] for t in llm.calls[0]["tools"] if "tagger" in t["function"]["name"])
    assert params["properties"]["tags"]["items"] == {}
    assert params["properties"]["meta"]["properties"]["ids"]["items"] == {}
    tool_message = llm.calls[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "tagged 2"
    # MCP schemas are normalised when listed (normalize_input_schema); the guard checks them again per request
    assert "items" not in client.list_tools()[0]["inputSchema"]["properties"]["tags"]


def test_N02_local_tool_nested_array_without_items():
    """N02 for local tools: a hand-written ``input_schema`` with an array inside ``anyOf`` under ``$defs``."""
    from yiemagent import AgentTool

    schema = {"type": "object", "properties": {"q": {"$ref": "#/$defs/Q"}},
              "$defs": {"Q": {"anyOf": [{"type": "array"}, {"type": "string"}]}}}
    loose = AgentTool("loose", "Loose.", schema, lambda call_id, arguments, event: "ok")
    llm = ScriptedLLM([text_reply("hi")])
    Agent(llm, tools=[loose]).ask("x")
    _all_valid(llm)
    assert llm.calls[0]["tools"][0]["function"]["parameters"]["$defs"]["Q"]["anyOf"][0]["items"] == {}
    assert "items" not in schema["$defs"]["Q"]["anyOf"][0]  # the tool's own schema is not changed


@tool
def search(q: str) -> str:
    """Search."""
    return f"found {q}"


def test_N03_hallucinated_invalid_tool_names_never_reach_the_next_request():
    """N03 (mcp-use/mcp-use #90, PR #94; gptscript-ai/gptscript PR #656): a reply calls ``web.search``,
    ``get weather now`` and ``search``; ``search`` runs once, the next request carries only valid names,
    every call is answered, and ``web.search`` is still named in the feedback the model reads.
    """
    ran = []

    @tool(name="search")
    def tracked(q: str) -> str:
        """Search."""
        ran.append(q)
        return f"found {q}"

    llm = ScriptedLLM([
        _calls_reply(("c1", "web.search", '{"q": "tides"}'), ("c2", "get weather now", "{}"),
                     ("c3", "search", '{"q": "tides"}')),
        text_reply("done"), text_reply("again"),
    ])
    agent = Agent(llm, tools=[tracked])
    assert agent.ask("tides?")["status"] == "completed"
    assert agent.ask("more")["status"] == "completed"
    assert ran == ["tides"]
    _all_valid(llm)
    for sent in llm.calls[1:]:
        names = [c["function"]["name"] for m in sent["messages"] for c in m.get("tool_calls") or []]
        assert names and all(strict_openai.NAME.match(n) for n in names)
        feedback = " ".join(m["content"] for m in sent["messages"] if m["role"] == "tool")
        assert "web.search" in feedback and "get weather now" in feedback


def test_N04_sliding_window_cutting_a_tool_result_from_its_call_sends_a_valid_request():
    """N04 (langchain-ai/langchain #33245, PR #35313; BerriAI/litellm #4931; cline/cline PR #7225):
    ``prepare_context=lambda h: h[-3:]`` sends ``[tool, assistant, user]`` on run 2; the request is valid
    (the orphaned tool message is not sent), the new user message is last, and the history keeps everything.
    """

    @tool
    def lookup(key: str) -> str:
        """Look up."""
        return f"{key} is known"

    llm = ScriptedLLM([tool_call_reply("lookup", {"key": "alpha"}, call_id="c1"), text_reply("alpha is known"),
                       text_reply("nothing new")])
    events = EventRecorder()
    agent = Agent(llm, tools=[lookup], prepare_context=lambda h: h[-3:], event_sink=events)
    agent.ask("alpha?")
    answer = agent.ask("and now?")
    assert answer["status"] == "completed"
    _all_valid(llm)
    last = llm.calls[-1]["messages"]
    assert last[-1] == {"role": "user", "content": "and now?"}
    assert all(m["role"] != "tool" for m in last)
    assert len(agent.history) == 6  # nothing was removed from the history itself
    assert any("c1" in line for e in events.of_type("request_repaired") for line in e.repairs)


def test_N04_window_starting_after_the_assistant_call_of_two_results():
    """N04, other cut: the window starts between two results of one call batch; both halves stay valid."""

    @tool
    def lookup(key: str) -> str:
        """Look up."""
        return f"{key} is known"

    llm = ScriptedLLM([_calls_reply(("c1", "lookup", '{"key": "a"}'), ("c2", "lookup", '{"key": "b"}')),
                       text_reply("ok"), text_reply("fine")])
    agent = Agent(llm, tools=[lookup], prepare_context=lambda h: h[-4:])
    agent.ask("go")
    assert agent.ask("next")["status"] == "completed"
    _all_valid(llm)


def test_N09_answer_cut_by_max_tokens_is_truncated_not_completed():
    """N09 (openai/openai-agents-python #4510; aebrer/dreb #240; cline/cline PR #12166): ``finish_reason:
    "length"`` with empty content and reasoning only gives status ``truncated`` and ``finish_reason``
    ``length`` in the answer; the partial text is kept; the ``stop`` control stays ``completed``.
    """
    cut = {"choices": [{"index": 0, "finish_reason": "length", "message": {
        "role": "assistant", "content": "", "reasoning_content": "First, list the chapters. Then..."}}]}
    agent = Agent(ScriptedLLM([cut, text_reply("Once upon", finish_reason="length"), text_reply("The end.")]))
    first = agent.ask("story")
    assert first["status"] == "truncated" and first["finish_reason"] == "length"
    assert first["reasoning_content"] == "First, list the chapters. Then..."
    second = agent.ask("again")
    assert second["status"] == "truncated" and second["content"] == "Once upon"
    control = agent.ask("short")
    assert control["status"] == "completed" and control["finish_reason"] == "stop"


def test_N09_incomplete_stream_is_truncated_and_its_cut_call_never_runs():
    """N09 / issue 8 point 4: ``finish_reason: "incomplete"`` (a stream that ended without ``[DONE]``) is
    treated like ``length``: the cut arguments ``{"path": "/data"`` are not repaired, the tool never runs
    with defaults, the call gets an error result; a cut text answer is ``truncated``.
    """
    ran = []

    @tool
    def delete(path: str, dry_run: bool = False) -> str:
        """Delete."""
        ran.append((path, dry_run))
        return "deleted"

    cut_call = {"choices": [{"index": 0, "finish_reason": "incomplete", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "delete", "arguments": '{"path": "/data"'}}]}}]}
    llm = ScriptedLLM([cut_call, text_reply("I will", finish_reason="incomplete")])
    answer = Agent(llm, tools=[delete]).ask("clean up")
    assert ran == []
    assert answer["status"] == "truncated" and answer["finish_reason"] == "incomplete"
    result = llm.calls[1]["messages"][-1]
    assert result["role"] == "tool" and "cut off" in result["content"]
    _all_valid(llm)


def test_tool_calls_per_turn_are_capped_and_the_rest_answered():
    """Issue 8 point 4: one reply with 127 calls (a local server with no ``max_tokens``) runs only
    ``max_tool_calls_per_turn`` (default 16); the rest get an error result the model can read.
    """
    ran = []

    @tool
    def step(i: int) -> str:
        """Step."""
        ran.append(i)
        return "ok"

    reply = _calls_reply(*((f"c{i}", "step", f'{{"i": {i}}}') for i in range(127)))
    llm = ScriptedLLM([reply, text_reply("done")])
    agent = Agent(llm, tools=[step], max_repeated_calls=None)
    assert agent.ask("go")["status"] == "completed"
    assert sorted(ran) == list(range(16))
    results = [m for m in llm.calls[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 127
    assert all("at most 16 tool calls" in m["content"] for m in results[16:])
    _all_valid(llm)


def test_formatter_cache_never_hides_what_prepare_context_returned():
    """Issue 8 point 2: a ``prepare_context`` that replaces old tool results with new (redacted) message
    objects has them sent, also when the last message is the same object as the previous call's.
    """
    llm = ScriptedLLM([tool_call_reply("search", {"q": "secret"}, call_id="c1"), text_reply("ok"),
                       text_reply("again"), text_reply("and again")])

    def redact(history):
        return [ToolResultMessage(m.tool_call_id, [TextContent("[redacted]")], tool_name=m.tool_name)
                if isinstance(m, ToolResultMessage) else m for m in history]

    redacting = [False]
    agent = Agent(llm, tools=[search], prepare_context=lambda h: redact(h) if redacting[0] else h)
    agent.ask("find secret")
    redacting[0] = True
    agent.ask("next")
    sent = [m for m in llm.calls[-1]["messages"] if m["role"] == "tool"]
    assert sent and all(m["content"] == "[redacted]" for m in sent)
    redacting[0] = False
    agent.ask("unredacted again")
    assert [m["content"] for m in llm.calls[-1]["messages"] if m["role"] == "tool"] == ["found secret"]


def test_a_failed_run_does_not_poison_the_next_input_scripted():
    """Issue 8 point 3: a context overflow (HTTP 400 from llama.cpp) fails run 1; its input stays in the
    history marked ``excluded`` and is not sent again, so run 2 is answered; the failed run's tool turn,
    if any, is left out as well and the request stays valid.
    """
    from yiemagent import LLMError

    overflow = LLMError("HTTP 400: request (5016 tokens) exceeds the available context size (4096 tokens)",
                        status_code=400)
    llm = ScriptedLLM([tool_call_reply("search", {"q": "x" * 50}, call_id="c1"), overflow, text_reply("hi")])
    agent = Agent(llm, tools=[search])
    first = agent.ask("long " * 2000)
    assert first["status"] == "error" and "exceeds" in first["error"]
    assert [bool(m.excluded) for m in agent.history] == [True, True, True]
    second = agent.ask("short?")
    assert second["status"] == "completed" and second["content"] == "hi"
    assert llm.calls[-1]["messages"] == [{"role": "user", "content": "short?"}]
    assert agent.history[-1].excluded is None
    _all_valid(llm)


def test_a_reply_that_cannot_be_read_does_not_poison_the_next_input():
    """Issue 8 point 3: a reply of an unknown shape fails run 1; run 2 is served without it."""
    llm = ScriptedLLM([{"unexpected": True}, text_reply("fine")])
    agent = Agent(llm)
    assert agent.ask("one")["status"] == "error"
    assert agent.ask("two")["content"] == "fine"
    assert llm.calls[-1]["messages"] == [{"role": "user", "content": "two"}]


def test_a_reply_value_json_cannot_carry_is_never_sent_back():
    """Issue 8 point 1: ``"score": NaN`` in an unknown reply key and NaN inside object arguments made every
    later request fail before it was sent; now the key is not sent back and the arguments are valid JSON.
    """
    reply = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "score": float("nan"), "provider_data": b"\x00\x01",
        "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "search", "arguments": {"q": "a", "w": float("inf")}}}]}}]}
    llm = ScriptedLLM([reply, text_reply("ok"), text_reply("again")])
    agent = Agent(llm, tools=[search])
    agent.ask("go")
    assert agent.ask("more")["status"] == "completed"
    _all_valid(llm)
    assert "score" not in llm.calls[1]["messages"][1]


@pytest.mark.model
def test_real_model_overflowing_its_context_then_a_short_input_is_answered(local_model):
    """Issue 8 point 3 against llama.cpp: an input longer than the 4096-token context gets an error answer
    (HTTP 400 "exceeds the available context size"); the next short input of the same agent is answered.
    """
    agent = Agent(local_model.llm_call(max_tokens=16))
    first = agent.ask("tide " * 6000)
    assert first["status"] == "error", first
    assert "context" in first["error"]
    second = agent.ask("Say hello.")
    assert second["status"] in ("completed", "truncated"), second
    assert second["content"]


@pytest.mark.model
def test_N09_real_model_cut_by_max_tokens_is_truncated(local_model):
    """N09 against llama.cpp: ``max_tokens=4`` on a prompt asking for a long story; the server answers
    ``finish_reason: "length"``; the answer has status ``truncated``, ``finish_reason`` ``length`` and the
    partial text.
    """
    answer = Agent(local_model.llm_call(max_tokens=4)).ask("Tell me a very long story about a ship.")
    assert answer["status"] == "truncated", answer
    assert answer["finish_reason"] == "length"
    assert answer["content"]
