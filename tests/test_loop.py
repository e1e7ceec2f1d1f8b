"""The agent loop as a plain function (yiemagent.loop.run_turns), hooks included."""

import json
import threading

from yiemagent import AfterToolCallResult, AgentTool, AgentToolResult, BeforeToolCallResult, LLMError, tool
from yiemagent.loop import LoopConfig, run_turns
from yiemagent.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    messages_to_openai,
)
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply
from yiemagent.tools import ToolRegistry

from . import strict_openai


@tool
def get_time() -> str:
    """Current time."""
    return "12:00"


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


def calls_reply(*calls, finish_reason="tool_calls"):
    return {"choices": [{"index": 0, "finish_reason": finish_reason, "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]}}]}


def run(llm, tools=(), inputs=("hi",), history=None, **config):
    history = [] if history is None else history
    recorder = EventRecorder()
    result = run_turns(history, [UserMessage(t) for t in inputs], LoopConfig(llm, ToolRegistry(tools), **config),
                       emit=recorder)
    return result, history, recorder


def assert_every_call_answered_in_order(history):
    """Each assistant tool call is followed by exactly its tool messages, in order."""
    for index, message in enumerate(history):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            following = history[index + 1:index + 1 + len(message.tool_calls)]
            assert [m.tool_call_id for m in following] == [c.id for c in message.tool_calls]
            assert all(isinstance(m, ToolResultMessage) for m in following)


def test_a_reply_without_tool_calls_ends_the_run_after_one_model_call():
    """Rule: no tool calls -> completed."""
    llm = ScriptedLLM([text_reply("hello")])
    result, history, _ = run(llm, system_prompt="be brief")
    assert result.status == "completed" and result.answer.text == "hello" and result.turns == 1
    assert llm.calls[0]["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert llm.calls[0]["tools"] == []
    assert [m.role for m in history] == ["user", "assistant"]


def test_tool_calls_run_and_results_go_back_to_the_model():
    """The main path: model -> tools -> model, tools sent in OpenAI format."""
    llm = ScriptedLLM([calls_reply(("c1", "get_weather", '{"city": "Lima"}'), ("c2", "get_time", "")),
                       text_reply("done")])
    result, history, _ = run(llm, [get_weather, get_time])
    assert result.status == "completed" and result.answer.text == "done"
    second = llm.calls[1]["messages"]
    assert second[-2:] == [{"role": "tool", "tool_call_id": "c1", "content": "sunny in Lima"},
                           {"role": "tool", "tool_call_id": "c2", "content": "12:00"}]
    assert [t["function"]["name"] for t in llm.calls[0]["tools"]] == ["get_weather", "get_time"]
    assert_every_call_answered_in_order(history)


def test_unknown_tool_bad_arguments_and_raising_tool_become_error_results_and_the_run_goes_on():
    """Rule: tool failures are error results the model sees, never exceptions."""
    def boom(call_id, arguments, event):
        raise RuntimeError("disk full")

    llm = ScriptedLLM([calls_reply(("a", "nope", "{}"), ("b", "get_weather", '{"town": 1}'),
                                   ("c", "boom", "{}"), ("d", "get_weather", '{"city": "Li')),
                       text_reply("sorry")])
    result, history, _ = run(llm, [get_weather, AgentTool("boom", "Fails.", {"type": "object"}, boom)])
    assert result.status == "completed"
    results = {m.tool_call_id: m for m in history if isinstance(m, ToolResultMessage)}
    assert all(m.is_error for m in results.values())
    assert "Unknown tool 'nope'" in results["a"].text and "get_weather" in results["a"].text
    assert "'city' is a required property" in results["b"].text
    assert "RuntimeError: disk full" in results["c"].text
    assert "not valid JSON" in results["d"].text
    sent = llm.calls[1]["messages"]
    assert [json.loads(c["function"]["arguments"]) for c in sent[1]["tool_calls"]] == [{}, {"town": 1}, {}, {}]


def test_c22_a_cancelled_tool_still_gets_exactly_one_result_before_the_next_user_message():
    """C22: abort mid-batch -> get_time "12:00", slow_report "cancelled", then the next input."""
    started, release = threading.Event(), threading.Event()

    def slow_report(call_id, arguments, abort_event):
        started.set()
        release.wait(10)  # a tool that does not watch the abort event
        return "finished too late"

    abort = threading.Event()
    llm = ScriptedLLM([calls_reply(("call_1", "get_time", "{}"), ("call_2", "slow_report", "{}")), text_reply("ok")])
    config = LoopConfig(llm, ToolRegistry([get_time, AgentTool("slow_report", "Slow.", {"type": "object"},
                                                                slow_report)]))
    history = []
    threading.Thread(target=lambda: started.wait(5) and abort.set(), daemon=True).start()
    first = run_turns(history, [UserMessage("report")], config, abort)
    release.set()
    assert first.status == "aborted"
    second = run_turns(history, [UserMessage("thanks")], config, threading.Event())
    assert second.status == "completed"
    sent = llm.calls[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user"]
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "12:00"}
    assert sent[3]["tool_call_id"] == "call_2" and "cancelled" in sent[3]["content"]
    assert sent[4] == {"role": "user", "content": "thanks"}


def test_c22_a_raising_tool_gives_an_error_tool_message_in_place():
    """C22 variant: a tool that raises is answered the same way."""
    def slow_report(call_id, arguments, abort_event):
        raise RuntimeError("interrupted")

    llm = ScriptedLLM([calls_reply(("call_1", "get_time", "{}"), ("call_2", "slow_report", "{}")), text_reply("ok")])
    _, history, _ = run(llm, [get_time, AgentTool("slow_report", "Slow.", {"type": "object"}, slow_report)])
    wire = messages_to_openai(history)
    assert [m.get("tool_call_id") for m in wire if m["role"] == "tool"] == ["call_1", "call_2"]
    assert "interrupted" in wire[3]["content"]


def test_terminate_ends_the_run_only_when_every_result_of_the_batch_sets_it():
    """Rule: all results terminate -> no further model call."""
    done = AgentTool("done", "Finish.", {"type": "object"}, lambda i, a, e: AgentToolResult("bye", terminate=True))
    llm = ScriptedLLM([calls_reply(("a", "done", "{}"), ("b", "get_time", "{}")), calls_reply(("c", "done", "{}")),
                       text_reply("never")])
    result, history, _ = run(llm, [done, get_time])
    assert result.status == "terminated" and len(llm.calls) == 2
    assert_every_call_answered_in_order(history)


def test_c23_max_turns_bounds_model_calls_and_the_last_turn_has_no_tools():
    """C23: a model that repeats the same call forever is stopped after max_turns model calls."""
    llm = ScriptedLLM([calls_reply(("call_x", "get_time", "{}"))], repeat_last=True)
    result, history, events = run(llm, [get_time], max_turns=5, max_repeated_calls=None)
    assert len(llm.calls) == 5 and result.status == "max_turns" and result.turns == 5
    assert llm.calls[-1]["tools"] == [] and llm.calls[0]["tools"] != []
    ids = [c.id for m in history if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert len(ids) == len(set(ids)) == 5  # repeated "call_x" made unique
    assert_every_call_answered_in_order(history)
    assert "not run" in history[-1].text
    assert any(e.type == "error" and e.where == "max_turns" for e in events.events)


def test_llm_call_failure_ends_the_run_with_an_error_answer_and_event():
    """Rule: an exception in llm_call becomes status "error", an error answer and an error event."""
    result, history, events = run(ScriptedLLM([ConnectionError("refused")]))
    assert result.status == "error" and isinstance(result.error, LLMError)
    assert "refused" in result.answer.text
    assert [m.role for m in history] == ["user"]
    assert events.of_type("error")[0].where == "llm_call"
    assert events.types()[-1] == "agent_end" and events.of_type("agent_end")[0].status == "error"


def test_unusable_reply_shape_is_an_error_answer_not_an_exception():
    """A reply that is not a recognised shape becomes an error answer."""
    result, _, _ = run(ScriptedLLM([{"unexpected": True}]))
    assert result.status == "error" and "not a recognised model reply" in result.answer.text


def test_before_tool_call_can_block_with_a_reason_the_model_sees():
    """Hook contract: block=True -> tool not run, error result carries the reason."""
    ran = []

    @tool
    def delete_all() -> str:
        """Delete everything."""
        ran.append(1)
        return "deleted"

    seen = {}

    def before(ctx, abort_event):
        seen["ctx"] = ctx
        return BeforeToolCallResult(block=True, reason="needs approval")

    llm = ScriptedLLM([calls_reply(("c1", "delete_all", "{}")), text_reply("ok")])
    _, history, _ = run(llm, [delete_all], before_tool_call=before)
    assert ran == [] and history[2].is_error and "needs approval" in history[2].text
    assert seen["ctx"].tool_call.name == "delete_all" and seen["ctx"].tool is delete_all


def test_after_tool_call_replaces_fields_one_by_one():
    """Hook contract: non-None fields replace the result's fields; others stay."""
    def after(ctx):
        assert ctx.result.text == "sunny in Lima"
        return AfterToolCallResult(content="[redacted]")

    llm = ScriptedLLM([calls_reply(("c1", "get_weather", '{"city": "Lima"}')), text_reply("ok")])
    _, history, _ = run(llm, [get_weather], after_tool_call=after)
    assert history[2].text == "[redacted]" and not history[2].is_error


def test_a_raising_hook_gives_an_error_result_that_says_so():
    """Hook contract: before raising -> not run; after raising -> result withheld, tool not rerun."""
    ran = []

    @tool
    def count() -> str:
        """Count."""
        ran.append(1)
        return "secret"

    def before(ctx, abort_event):
        if ctx.tool_call.id == "c1":
            raise ValueError("policy down")
        return None

    def after(ctx):
        raise ValueError("redactor down")

    llm = ScriptedLLM([calls_reply(("c1", "count", "{}"), ("c2", "count", "{}")), text_reply("ok")])
    _, history, _ = run(llm, [count], before_tool_call=before, after_tool_call=after)
    assert ran == [1]
    assert "before_tool_call hook failed" in history[2].text and history[2].is_error
    assert "after_tool_call hook failed" in history[3].text and "secret" not in history[3].text
    assert history[3].details["original_result"].text == "secret"


def test_events_follow_the_documented_sequence_for_one_run_with_two_tools():
    """The sequence drawn in yiemagent.loop.events and the README."""
    llm = ScriptedLLM([calls_reply(("c1", "get_time", "{}"), ("c2", "get_time", "{}")), text_reply("done")])
    _, _, events = run(llm, [get_time], tool_execution="sequential")
    assert events.types() == [
        "agent_start", "message_start", "message_end",
        "turn_start", "message_start", "message_end",
        "tool_execution_start", "tool_execution_end", "tool_execution_start", "tool_execution_end",
        "message_start", "message_end", "message_start", "message_end",
        "turn_end",
        "turn_start", "message_start", "message_end", "turn_end",
        "agent_end",
    ]
    run_ids = {e.run_id for e in events.events}
    assert len(run_ids) == 1 and run_ids != {""}


def test_a_raising_event_sink_is_ignored():
    """Contract: a sink that raises is logged and ignored; the run completes."""
    def sink(event):
        raise RuntimeError("sink broke")

    result = run_turns([], [UserMessage("hi")], LoopConfig(ScriptedLLM([text_reply("ok")])), emit=sink)
    assert result.status == "completed" and result.answer.text == "ok"


def test_usage_is_summed_over_the_run():
    """Token usage from replies that report it is added up."""
    first = calls_reply(("c1", "get_time", "{}"))
    first["usage"] = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    second = text_reply("ok")
    second["usage"] = {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23}
    result, _, events = run(ScriptedLLM([first, second]), [get_time])
    assert result.usage == {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35}
    assert events.of_type("agent_end")[0].usage["total_tokens"] == 35


def test_messages_are_converted_once_and_reused_across_turns():
    """Default format_messages caches each message's OpenAI dict."""
    llm = ScriptedLLM([calls_reply(("c1", "get_time", "{}")), text_reply("ok")])
    config = LoopConfig(llm, ToolRegistry([get_time]))
    history = []
    run_turns(history, [UserMessage("hi")], config)
    first = config.format_messages(history)
    again = config.format_messages(history)
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_c23_the_same_call_three_times_in_a_row_is_refused_and_stops_the_run():
    """Repeated-call guard: the 3rd identical call gets an error result telling the model; run ends."""
    llm = ScriptedLLM([calls_reply(("call_x", "get_time", "{}"))], repeat_last=True)
    result, history, _ = run(llm, [get_time], max_turns=10)
    assert result.status == "repeated_call" and len(llm.calls) == 3
    results = [m for m in history if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [False, False, True]
    assert "3 times in a row" in results[-1].text
    assert_every_call_answered_in_order(history)


def test_different_arguments_reset_the_repeated_call_streak():
    """Only identical (name, canonical arguments) in a row count."""
    replies = [calls_reply((call_id, "get_weather", json.dumps({"city": city})))
               for call_id, city in (("a", "Lima"), ("b", "Lima"), ("c", "Kyiv"), ("d", "Kyiv"))]
    replies.append(text_reply("done"))
    result, _, _ = run(ScriptedLLM(replies), [get_weather])
    assert result.status == "completed"


def test_tool_result_images_follow_the_tool_messages_as_one_user_message():
    """OpenAI tool messages carry text only: a batch's images go in a user message after its tool messages."""
    from yiemagent.messages import ImageContent, TextContent
    from yiemagent.messages.formatting import OpenAIFormatter

    image = ImageContent.from_base64("iVBORw0KGgo=")
    history = [UserMessage("chart?"),
               AssistantMessage(tool_calls=[ToolCall("a", "chart", {}), ToolCall("b", "get_time", {})]),
               ToolResultMessage("a", [TextContent("chart ready"), image], tool_name="chart"),
               ToolResultMessage("b", [TextContent("12:00")], tool_name="get_time"),
               AssistantMessage([TextContent("here")])]
    out = OpenAIFormatter()(history)
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    assert out[2]["content"] == "chart ready\n[image image/png, 8 bytes]"
    assert out[4]["content"][1] == {"type": "image_url", "image_url": {"url": image.url}}
    assert "chart" in out[4]["content"][0]["text"] and "call a" in out[4]["content"][0]["text"]
    strict_openai.validate(out)
    assert OpenAIFormatter(tool_images="placeholder")(history)[4]["role"] == "assistant"


def test_formatter_reuses_the_prefix_only_while_the_history_just_grows():
    """Incremental formatting gives the same result as a fresh one, also after trimming."""
    from yiemagent.messages.formatting import OpenAIFormatter

    formatter = OpenAIFormatter()
    history = [UserMessage(f"m{i}") for i in range(5)]
    assert formatter(history) == OpenAIFormatter()(history)
    history.append(AssistantMessage([TextContent("a")]))
    assert formatter(history) == OpenAIFormatter()(history)
    trimmed = history[2:]
    assert formatter(trimmed) == OpenAIFormatter()(trimmed)
    replaced = [UserMessage("other"), *history[1:]]
    assert formatter(replaced)[0]["content"] == "other"


def test_reasoning_is_sent_back_unless_the_formatter_is_told_not_to():
    """send_reasoning=False leaves reasoning_content out, for servers that reject it in input."""
    from yiemagent.messages import ReasoningContent
    from yiemagent.messages.formatting import OpenAIFormatter

    history = [UserMessage("hi"), AssistantMessage([ReasoningContent("hmm"), TextContent("hello")])]
    assert OpenAIFormatter()(history)[1] == {"role": "assistant", "content": "hello", "reasoning_content": "hmm"}
    assert OpenAIFormatter(send_reasoning=False)(history)[1] == {"role": "assistant", "content": "hello"}


def test_local_tool_results_are_capped_with_a_visible_note():
    """max_result_chars applies to every tool result, local ones included."""
    @tool
    def big() -> str:
        """Big."""
        return "y" * 1000

    llm = ScriptedLLM([calls_reply(("c1", "big", "{}")), text_reply("ok")])
    _, history, _ = run(llm, [big], max_result_chars=100)
    assert history[2].text.startswith("y" * 100) and "1,000 characters; the first 100 are shown" in history[2].text
