"""Request-validity cases from public reports of peer projects (issue 8, point 8).

Each test names its source, the symptom and the correct behaviour. Every request the scripted model
receives is checked by the strict validator (``tests/strict_openai.py``).
"""

import json
import sys
from pathlib import Path

from yiemagent import Agent, AgentTool, tool
from yiemagent.mcp import normalize_input_schema
from yiemagent.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage, message_to_dict
from yiemagent.messages.formatting import OpenAIFormatter
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply

from .. import strict_openai

SERVERS = Path(__file__).resolve().parent.parent / "servers"


@tool
def get_time() -> str:
    """Time."""
    return "12:00"


@tool
def get_weather(city: str) -> str:
    """Weather."""
    return f"sunny in {city}"


def _valid(llm):
    for sent in llm.calls:
        strict_openai.validate_request(sent["messages"], sent["tools"])


def _state(history):
    return json.dumps({"version": 1, "history": [message_to_dict(m) for m in history], "usage": {},
                       "system_prompt": None})


def _calls(message):
    return [c for m in message for c in m.get("tool_calls") or []]


def test_autogen_6377_tool_call_id_longer_than_40_characters():
    """microsoft/autogen #6377, langgenius/dify #28987, Portkey-AI/gateway #1062: ids minted by another
    provider (``ws_689e...``, 51 characters) were sent back and OpenAI answered "Invalid
    'messages[3].tool_calls[0].id': string too long. Expected ... maximum length 40". Correct: the id sent is
    at most 40 characters, its result answers that id, and the tool ran once.
    """
    long_id = "ws_689e2d4880a0819d98acca37694989b00b15d90494fc6b87"
    llm = ScriptedLLM([tool_call_reply("get_time", {}, call_id=long_id), text_reply("noon")])
    assert Agent(llm, tools=[get_time]).ask("time?")["status"] == "completed"
    _valid(llm)
    sent = llm.calls[1]["messages"]
    (call,) = _calls(sent)
    assert len(call["id"]) <= 40 and sent[-1] == {"role": "tool", "tool_call_id": call["id"], "content": "12:00"}


def test_sentry_mcp_106_tool_description_longer_than_1024_characters():
    """getsentry/sentry-mcp #106, OpenHands/OpenHands #4838, microsoft/genaiscript #1381: a tool description
    of 1103 characters made OpenAI reject every request ("Invalid 'tools[13].function.description': string
    too long"). Correct: the description offered is cut to 1024 characters and the request is accepted.
    """
    wordy = AgentTool("wordy", "Explains. " * 110, {"type": "object", "properties": {}},
                      lambda call_id, arguments, event: "ok")
    llm = ScriptedLLM([text_reply("hi")])
    events = EventRecorder()
    Agent(llm, tools=[wordy], event_sink=events).ask("x")
    _valid(llm)
    description = llm.calls[0]["tools"][0]["function"]["description"]
    assert len(description) == 1024 and description.startswith("Explains. Explains.")
    assert any("description cut" in line for e in events.of_type("request_repaired") for line in e.repairs)


def test_hermes_agent_11722_call_id_reused_in_a_later_turn():
    """NousResearch/hermes-agent PR #11722: mistral-small regenerated the same 9-character id for a call in
    a later turn, which was never answered; Mistral rejected every later request ("Not the same number of
    function calls and responses"). Here the history comes from a saved state. Correct: ids are unique in
    the request and every call has one result.
    """
    history = [UserMessage("time?"), AssistantMessage(tool_calls=[ToolCall("b9mgIC84m", "get_time")]),
               ToolResultMessage("b9mgIC84m", "12:00"),
               AssistantMessage(tool_calls=[ToolCall("b9mgIC84m", "get_time")]),
               UserMessage("still there?")]
    llm = ScriptedLLM([text_reply("yes")])
    agent = Agent.from_state(_state(history), llm, tools=[get_time])
    assert agent.ask("hello")["status"] == "completed"
    _valid(llm)
    ids = [c["id"] for c in _calls(llm.calls[0]["messages"])]
    assert len(ids) == len(set(ids)) == 2


def test_agno_5116_duplicate_tool_result_for_one_call():
    """agno-agi/agno #5116 (also NousResearch/hermes-agent PR #54594): two tool messages answered one call
    and OpenAI said "Duplicate value for 'tool_call_id' of 'call_gmd4...' in messages[7] and messages[8]".
    Correct: one result per call is sent (the first), the request is accepted.
    """
    history = [UserMessage("time?"), AssistantMessage(tool_calls=[ToolCall("call_gmd4", "get_time")]),
               ToolResultMessage("call_gmd4", "12:00"), ToolResultMessage("call_gmd4", "12:00 (replayed)"),
               AssistantMessage("noon")]
    llm = ScriptedLLM([text_reply("ok")])
    Agent.from_state(_state(history), llm, tools=[get_time]).ask("thanks")
    _valid(llm)
    results = [m for m in llm.calls[0]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in results] == ["12:00"]


def test_openclaw_47136_two_calls_share_one_id_in_a_saved_turn():
    """openclaw/openclaw PR #47136, can1357/oh-my-pi #2055: two calls of one assistant message carried the
    same id (``edit:22``); the request failed with "duplicate tool_call_id" or a result went to the wrong
    call. Correct: each call gets a unique id, the results stay with their calls by position.
    """
    history = [UserMessage("both"),
               AssistantMessage(tool_calls=[ToolCall("edit:22", "get_time"), ToolCall("edit:22", "get_weather",
                                                                                     {"city": "Lima"})]),
               ToolResultMessage("edit:22", "12:00"), ToolResultMessage("edit:22", "sunny in Lima")]
    llm = ScriptedLLM([text_reply("done")])
    Agent.from_state(_state(history), llm, tools=[get_time, get_weather]).ask("and?")
    _valid(llm)
    sent = llm.calls[0]["messages"]
    calls = _calls(sent)
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert len({c["id"] for c in calls}) == 2
    assert [results[c["id"]] for c in calls] == ["12:00", "sunny in Lima"]


def test_sap_ai_sdk_js_2188_tool_content_empty_list_from_a_custom_formatter():
    """SAP/ai-sdk-js PR #2188: an MCP tool returned ``content: []``, the tool message was sent with
    ``content: []`` and the endpoint said "[] is not of type 'string'", so the tool was uncallable. Here a
    user's ``format_messages`` does the same. Correct: the tool message content sent is a string.
    """
    base = OpenAIFormatter()

    def formatter(history):
        return [{**m, "content": []} if m["role"] == "tool" and m["content"] == "" else m for m in base(history)]

    empty = AgentTool("empty", "Returns nothing.", {"type": "object", "properties": {}},
                      lambda call_id, arguments, event: "")
    llm = ScriptedLLM([tool_call_reply("empty", {}, call_id="c1"), text_reply("nothing there")])
    assert Agent(llm, tools=[empty], format_messages=formatter).ask("go")["status"] == "completed"
    _valid(llm)
    assert llm.calls[1]["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": ""}


def test_sap_ai_sdk_js_2188_real_server_empty_result(stdio_client):
    """SAP/ai-sdk-js PR #2188 against a real SDK server whose tool answers ``content: []``: the model gets a
    string result for the call and the run goes on.
    """
    client = stdio_client([sys.executable, str(SERVERS / "loose_schema_server.py")])
    llm = ScriptedLLM([tool_call_reply("nothing", {}, call_id="c1"), text_reply("ok")])
    assert Agent(llm, mcp_servers=[client]).ask("go")["status"] == "completed"
    _valid(llm)
    result = llm.calls[1]["messages"][-1]
    assert result["role"] == "tool" and isinstance(result["content"], str)


def test_yomo_860_required_null_in_a_server_schema():
    """yomorun/yomo PR #860: a function schema with ``"required": null`` was rejected ("Invalid schema for
    function 'ai-sfn': None is not of type 'array'"); nested, it also broke local validation. Correct:
    ``normalize_input_schema`` (what MCP tools are offered with) fixes it at any depth, the tool can be built
    and validates arguments, and the strict validator accepts it.
    """
    schema = {"type": "object", "required": None, "properties": {
        "where": {"type": "object", "properties": {"field": {"type": "string"}}, "required": None}}}
    fixed = normalize_input_schema(schema)
    assert "required" not in fixed and "required" not in fixed["properties"]["where"]
    filt = AgentTool("filter", "Filter.", fixed, lambda call_id, arguments, event: "ok")
    filt.validate({"where": {"field": "x"}})
    strict_openai.validate_tools([filt.to_openai()])


def test_openmanus_1162_property_that_is_not_a_schema():
    """FoundationAgents/OpenManus #1162: an MCP tool's schema held ``[]`` where a schema belongs and the
    request failed ("[] is not of type 'object', 'boolean'", code invalid_function_parameters), and with it
    every tool of the run. Correct: that property becomes "anything", the rest of the schema is kept.
    """
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "view_range": []},
              "required": ["path"]}
    fixed = normalize_input_schema(schema)
    assert fixed["properties"] == {"path": {"type": "string"}, "view_range": {}}
    assert fixed["required"] == ["path"]
    strict_openai.validate_tools([AgentTool("editor", "Edit.", fixed, lambda c, a, e: "ok").to_openai()])


def test_spring_ai_4776_local_tool_schema_without_properties_or_type():
    """spring-projects/spring-ai #4776 ("object schema missing properties" for a tool without parameters) and
    livekit/agents #4610 ("'required' present but 'properties' is missing", Groq): a parameterless tool's
    schema lacked ``type``/``properties``. Correct: it is offered as ``{"type": "object", "properties": {}}``
    (plus what it had) and the request is accepted.
    """
    bare = AgentTool("health", "Health.", {"required": []}, lambda call_id, arguments, event: "OK")
    llm = ScriptedLLM([text_reply("fine")])
    Agent(llm, tools=[bare]).ask("x")
    _valid(llm)
    params = llm.calls[0]["tools"][0]["function"]["parameters"]
    assert params["type"] == "object" and params["properties"] == {}


def test_litellm_6505_window_keeping_only_user_and_assistant_messages():
    """BerriAI/litellm #6505 (Azure: "Expected last role to be one of: [tool, user] but got assistant") and
    langchain-ai/langchain #29637 ("tool_use ids were found without tool_result blocks"): trimming that
    keeps only user and assistant messages left calls without results and ended on an assistant message.
    Correct: every call in the request is answered and the request ends with the new user message.
    """
    llm = ScriptedLLM([tool_call_reply("get_time", {}, call_id="c1"), text_reply("noon"), text_reply("ok")])
    agent = Agent(llm, tools=[get_time],
                  prepare_context=lambda h: [m for m in h if not isinstance(m, ToolResultMessage)])
    agent.ask("time?")
    assert agent.ask("thanks")["status"] == "completed"
    _valid(llm)
    assert llm.calls[-1]["messages"][-1] == {"role": "user", "content": "thanks"}


def test_neuron_ai_204_window_removing_one_result_from_the_middle():
    """neuron-core/neuron-ai #204: ``cutHistoryToContextWindow`` removed a tool message from the middle of
    the history and OpenAI answered "messages with role 'tool' must be a response to a preceeding message
    with 'tool_calls'" on the next call. Correct: the call whose result was removed gets one saying it is
    not in the context; the other result is kept with its call.
    """
    llm = ScriptedLLM([{"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]}}]},
        text_reply("done"), text_reply("ok")])

    def cut(history):
        results = [m for m in history if isinstance(m, ToolResultMessage)]
        return [m for m in history if not (results and m is results[0])]

    agent = Agent(llm, tools=[get_time, get_weather], prepare_context=cut)
    agent.ask("both")
    assert agent.ask("next")["status"] == "completed"
    _valid(llm)
    results = {m["tool_call_id"]: m["content"] for m in llm.calls[-1]["messages"] if m["role"] == "tool"}
    assert results["c2"] == "sunny in Oslo" and "is in the context" in results["c1"]


def test_aider_3693_lone_surrogate_in_a_tool_result():
    """Aider-AI/aider #3693 (PR #4987), NousResearch/hermes-agent PR #3624, microsoft/debug-gym #128: text
    with a lone surrogate (``\\udce2`` from a file or a paste) made every request fail before it was sent
    ("'utf-8' codec can't encode characters ...: surrogates not allowed"). Correct: the request is UTF-8
    encodable (the surrogate becomes U+FFFD) and the rest of the text is kept.
    """
    reader = AgentTool("read", "Read.", {"type": "object", "properties": {}},
                       lambda call_id, arguments, event: "caf\udce9 menu")
    llm = ScriptedLLM([tool_call_reply("read", {}, call_id="c1"), text_reply("read it"), text_reply("ok")])
    agent = Agent(llm, tools=[reader])
    agent.ask("read")
    assert agent.ask("again")["status"] == "completed"
    _valid(llm)
    for sent in llm.calls:
        json.dumps(sent["messages"], ensure_ascii=False).encode("utf-8")
    assert llm.calls[1]["messages"][-1]["content"] == "caf\ufffd menu"


def test_ida_pro_mcp_129_mcp_tool_name_longer_than_64_characters(stdio_client):
    """mrexodia/ida-pro-mcp #129, microsoft/vscode #243602: an MCP tool name of 71 characters made every
    request fail ("Invalid 'tools[43].function.name': string too long ... maximum length 64"). Correct: the
    name offered is at most 64 characters and a call under it reaches the server's tool.
    """
    client = stdio_client([sys.executable, str(SERVERS / "loose_schema_server.py")])
    probe = ScriptedLLM([text_reply("x")])
    Agent(probe, mcp_servers=[client]).ask("list")
    names = [t["function"]["name"] for t in probe.calls[0]["tools"]]
    long_name = next(n for n in names if n.startswith("fetch_quarterly"))
    assert len(long_name) <= 64
    llm = ScriptedLLM([tool_call_reply(long_name, {}, call_id="c1"), text_reply("ok")])
    assert Agent(llm, mcp_servers=[client]).ask("go")["status"] == "completed"
    _valid(llm)
    assert llm.calls[1]["messages"][-1]["content"] == "long ok"


def test_copilotkit_529_request_with_no_messages_is_refused_before_sending():
    """CopilotKit/CopilotKit #529: a request went out with ``messages: []`` and OpenAI answered "Invalid
    'messages': empty array. Expected an array with minimum length 1" (code ``empty_array``). Here a
    ``prepare_context`` returns nothing. Correct: nothing is sent; the answer is an error naming the
    problem (``InvalidRequestError``), and an error event says ``where="request"``.
    """
    llm = ScriptedLLM([text_reply("never")])
    events = EventRecorder()
    answer = Agent(llm, prepare_context=lambda h: [], event_sink=events).ask("hi")
    assert llm.calls == []
    assert answer["status"] == "error" and "at least one message" in answer["error"]
    assert [e.where for e in events.of_type("error")] == ["request"]


def test_copilotkit_529_user_message_with_an_empty_content_list():
    """CopilotKit/CopilotKit #529, same error for one message's content (``content: []`` is an "empty
    array"): a user message whose parts are all gone. Correct: it is sent as ``""``, the request is
    accepted and answered.
    """
    llm = ScriptedLLM([text_reply("hm?")])
    answer = Agent(llm).ask(UserMessage([]))
    assert answer["status"] == "completed"
    _valid(llm)
    assert llm.calls[0]["messages"] == [{"role": "user", "content": ""}]
