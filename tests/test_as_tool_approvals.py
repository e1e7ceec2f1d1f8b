"""Approvals in nested runs reach the top run (issue 27 point 9: *a pause, an approval or a limit anywhere in
a nested run reaches the top run*; ``yiemagent.agent.as_tool``, ``yiemagent.tools.approvals.AwaitingApproval``).

Real agents on both sides with scripted models (``ScriptedLLM``), a real ``@tool(needs_approval=True)``
that counts its runs, and a real SQLite store for the durable parent. Tests named after a public report
reproduce what that report describes for a peer's agents-as-tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from yiemagent import Agent, tool
from yiemagent.loop import events as ev
from yiemagent.testing import EventRecorder, ScriptedLLM, text_reply, tool_call_reply
from yiemagent.tools import AgentTool


class Files:
    """A sub-agent's tool that needs approval; ``deleted`` lists each run (a second run of one call shows)."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

        @tool(needs_approval=True)
        def delete(path: str) -> str:
            """Delete the file at ``path``."""
            self.deleted.append(path)
            return f"deleted {path}"

        self.tool: AgentTool = delete


def sub_agent(files: Files, *replies: dict[str, Any], name: str = "sub") -> tuple[Agent, ScriptedLLM]:
    llm = ScriptedLLM(list(replies) or [tool_call_reply("delete", {"path": "/tmp/x"}), text_reply("deleted it")])
    return Agent(llm, tools=[files.tool], name=name), llm


def tool_texts(call: dict[str, Any]) -> list[str]:
    """The tool results a model request carried."""
    return [m["content"] for m in call["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("started", [False, True])
def test_openai_agents_js_243_a_sub_agents_approval_reaches_the_parent_and_resumes_once(started: bool) -> None:
    """openai/openai-agents-js #243 (and sagents-ai/sagents #7): an agent used as a tool whose tool needs
    approval gave the orchestrator no interruption; here the parent's model read the sub-agent's "stopped
    early" text and answered ``completed``, the call never asked. Now the parent's run stops
    ``awaiting_approval`` naming the sub-agent's call (namespaced by the parent's call id: both models use
    ``call_1``), and its approval runs the tool once and gives the parent's model the sub-agent's answer.
    """
    files = Files()
    sub, sub_llm = sub_agent(files)
    if started:
        sub.start()
    parent_llm = ScriptedLLM([tool_call_reply("ask_sub", {"input": "clean up"}), text_reply("all clean")])
    recorder = EventRecorder()
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Cleans up.")], event_sink=recorder)
    answer = parent.ask("go", timeout_seconds=10)
    assert answer["status"] == "awaiting_approval", answer
    want = {"tool_call_id": "call_1/call_1", "name": "delete", "arguments": {"path": "/tmp/x"}, "agent": "sub",
            "via": ["ask_sub"]}
    assert [{k: c[k] for k in want} for c in answer["pending_approvals"]] == [want]
    assert [{k: c[k] for k in want} for c in parent.pending_approvals()] == [want]
    [requested] = [e for e in recorder.events if isinstance(e, ev.ApprovalRequestedEvent)]
    assert [{k: c[k] for k in want} for c in requested.pending] == [want]
    assert files.deleted == [] and len(parent_llm.calls) == 1
    assert "delete" in answer["content"]

    done = parent.approve("call_1/call_1", timeout_seconds=10)
    assert done["status"] == "completed" and done["content"] == "all clean"
    assert files.deleted == ["/tmp/x"]  # ran once, after the approval
    assert len(parent_llm.calls) == 2  # the turn that called the sub-agent was not asked again
    assert tool_texts(parent_llm.calls[1]) == ["deleted it"]  # the sub-agent's answer is the call's result
    assert len(sub_llm.calls) == 2 and parent.pending_approvals() == []
    sub.shutdown()


def test_a_rejection_reaches_the_sub_agents_model_as_its_reason() -> None:
    files = Files()
    sub, sub_llm = sub_agent(files, tool_call_reply("delete", {"path": "/etc"}), text_reply("I left /etc alone"))
    parent_llm = ScriptedLLM([tool_call_reply("ask_sub", {"input": "clean up"}), text_reply("nothing deleted")])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Cleans up.")])
    assert parent.ask("go", timeout_seconds=10)["status"] == "awaiting_approval"
    done = parent.reject("call_1/call_1", "never touch /etc", timeout_seconds=10)
    assert done["content"] == "nothing deleted" and files.deleted == []
    [reason] = tool_texts(sub_llm.calls[1])
    assert "never touch /etc" in reason  # the person's reason, read by the sub-agent's model
    assert tool_texts(parent_llm.calls[1]) == ["I left /etc alone"]


def test_openai_agents_js_680_a_durable_parent_resumes_the_sub_agent_from_another_agent_object(
        sqlite_store_factory: Callable[[], Any]) -> None:
    """openai/openai-agents-js #680: after approving a nested interruption restored from stored state, the
    orchestrator ended without resuming the sub-agent's tool call. Here the parent is durable (SQLite): a
    second parent object on the store sees the waiting call, approves it, and the run resumes: the tool
    runs once, neither model is asked again for a turn it answered.
    """
    files = Files()
    sub, sub_llm = sub_agent(files)
    parent_llm = ScriptedLLM([tool_call_reply("ask_sub", {"input": "clean up"})])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Cleans up.")], store=sqlite_store_factory(),
                   conversation_id="p-1")
    assert parent.ask("go", timeout_seconds=10)["status"] == "awaiting_approval"
    parent.shutdown()

    llm2 = ScriptedLLM([text_reply("all clean")])
    again = Agent(llm2, tools=[sub.as_tool("ask_sub", "Cleans up.")], store=sqlite_store_factory(),
                  conversation_id="p-1")
    [pending] = again.pending_approvals()
    assert (pending["tool_call_id"], pending["name"], pending["agent"]) == ("call_1/call_1", "delete", "sub")
    done = again.approve("call_1/call_1", timeout_seconds=10)
    assert done["status"] == "completed" and done["content"] == "all clean"
    assert files.deleted == ["/tmp/x"] and len(sub_llm.calls) == 2
    assert len(parent_llm.calls) == 1 and len(llm2.calls) == 1  # turn 1 replayed from the store
    assert tool_texts(llm2.calls[0]) == ["deleted it"]
    assert sqlite_store_factory().pending("p-1") == []  # committed


def test_sagents_7_an_approval_two_agents_deep_reaches_the_top_run() -> None:
    """sagents-ai/sagents #7: a sub-agent's interrupt did not propagate to the parent. Two levels: top ->
    middle -> leaf; the leaf's call is the top run's pending approval, named through both tools.
    """
    files = Files()
    leaf, _ = sub_agent(files, name="leaf")
    middle_llm = ScriptedLLM([tool_call_reply("ask_leaf", {"input": "clean"}), text_reply("leaf says: deleted it")])
    middle = Agent(middle_llm, tools=[leaf.as_tool("ask_leaf", "Leaf.")], name="middle")
    top_llm = ScriptedLLM([tool_call_reply("ask_middle", {"input": "clean"}), text_reply("done at the top")])
    top = Agent(top_llm, tools=[middle.as_tool("ask_middle", "Middle.")])
    answer = top.ask("go", timeout_seconds=10)
    [pending] = answer["pending_approvals"]
    assert (pending["tool_call_id"], pending["agent"], pending["via"]) == (
        "call_1/call_1/call_1", "leaf", ["ask_middle", "ask_leaf"])
    assert top.approve("call_1/call_1/call_1", timeout_seconds=10)["content"] == "done at the top"
    assert files.deleted == ["/tmp/x"]
    assert len(middle_llm.calls) == 2 and len(top_llm.calls) == 2
    assert tool_texts(top_llm.calls[1]) == ["leaf says: deleted it"]


def test_langgraph_4796_the_other_calls_of_the_parents_batch_are_not_run_again() -> None:
    """langchain-ai/langgraph #4796: resuming an interrupted subgraph re-ran the nodes before the interrupt.
    The parent's reply asks for the sub-agent and another tool at once: on resume the other call's result is
    replayed from the journal, not run a second time.
    """
    files = Files()
    sub, _ = sub_agent(files)
    noted: list[str] = []

    @tool
    def note(text: str) -> str:
        """Write a note."""
        noted.append(text)
        return "noted"

    both = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in (("c1", "ask_sub", {"input": "clean"}), ("c2", "note", {"text": "cleaning"}))]}}]}
    parent_llm = ScriptedLLM([both, text_reply("ok")])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Cleans."), note])
    assert parent.ask("go", timeout_seconds=10)["status"] == "awaiting_approval"
    assert noted == ["cleaning"]
    assert parent.approve("c1/call_1", timeout_seconds=10)["content"] == "ok"
    assert noted == ["cleaning"] and files.deleted == ["/tmp/x"]  # each once
    assert tool_texts(parent_llm.calls[1]) == ["deleted it", "noted"]  # in the order the model asked


def test_a_sub_agent_asking_again_after_its_approval_makes_the_parent_wait_again() -> None:
    files = Files()
    sub, _ = sub_agent(files, tool_call_reply("delete", {"path": "/a"}),
                       tool_call_reply("delete", {"path": "/b"}, call_id="call_2"), text_reply("both gone"))
    parent_llm = ScriptedLLM([tool_call_reply("ask_sub", {"input": "clean"}), text_reply("ok")])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Cleans.")])
    assert parent.ask("go", timeout_seconds=10)["pending_approvals"][0]["arguments"] == {"path": "/a"}
    second = parent.approve("call_1/call_1", timeout_seconds=10)
    assert second["status"] == "awaiting_approval", second
    assert [(c["tool_call_id"], c["arguments"]) for c in second["pending_approvals"]] == [
        ("call_1/call_2", {"path": "/b"})]
    assert files.deleted == ["/a"]
    assert parent.approve("call_1/call_2", timeout_seconds=10)["content"] == "ok"
    assert files.deleted == ["/a", "/b"] and len(parent_llm.calls) == 2
    assert tool_texts(parent_llm.calls[1]) == ["both gone"]


def test_a_new_input_to_the_parent_rejects_the_nested_call_with_the_superseded_reason() -> None:
    files = Files()
    sub, sub_llm = sub_agent(files, tool_call_reply("delete", {"path": "/a"}), text_reply("not deleted"))
    parent_llm = ScriptedLLM([tool_call_reply("ask_sub", {"input": "clean"}), text_reply("first ended"),
                              text_reply("second answered")])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Cleans.")])
    assert parent.ask("go", timeout_seconds=10)["status"] == "awaiting_approval"
    assert parent.ask("something else", timeout_seconds=10)["content"] == "second answered"
    assert files.deleted == [] and parent.pending_approvals() == []
    assert "new message instead of deciding" in tool_texts(sub_llm.calls[1])[0]
    assert tool_texts(parent_llm.calls[1]) == ["not deleted"]


def test_a_sub_agent_whose_waiting_run_ended_elsewhere_is_not_asked_again() -> None:
    """The sub-agent's waiting run is finished by a decision made on it directly: the parent's resume gets an
    error result for its call (the input is never served a second time) and goes on.
    """
    files = Files()
    sub, sub_llm = sub_agent(files)
    parent_llm = ScriptedLLM([tool_call_reply("ask_sub", {"input": "clean"}), text_reply("noted the failure")])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Cleans.")])
    assert parent.ask("go", timeout_seconds=10)["status"] == "awaiting_approval"
    assert sub.approve("call_1", timeout_seconds=10)["content"] == "deleted it"  # decided on the sub directly
    assert parent.approve("call_1/call_1", timeout_seconds=10)["content"] == "noted the failure"
    assert files.deleted == ["/tmp/x"] and len(sub_llm.calls) == 2  # once, by the direct decision
    [result] = tool_texts(parent_llm.calls[1])
    assert "no longer waits" in result


def test_two_waiting_calls_of_one_sub_agent_each_get_their_own_runs_answer() -> None:
    """Both calls of one batch delegate to one sub-agent (sequentially): the second input supersedes the
    first's waiting run (a sub-agent keeps one), so both parent calls wait, each on its own run's call. The
    decisions reach only the run that asked (``agent_input_id``): the first call gets an error result, not
    the second run's answer, /a is never deleted and /b once.
    """
    files = Files()

    def cleaner(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        last = messages[-1]
        if last["role"] == "tool":
            return text_reply(f"after: {last['content']}")
        return tool_call_reply("delete", {"path": last["content"]})

    sub = Agent(cleaner, tools=[files.tool], name="sub")
    both = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "ask_sub", "arguments": json.dumps({"input": p})}}
            for i, p in (("c1", "/a"), ("c2", "/b"))]}}]}
    parent_llm = ScriptedLLM([both, text_reply("ok")])
    parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Cleans.")], tool_execution="sequential")
    answer = parent.ask("go", timeout_seconds=10)
    pending = {c["arguments"]["path"]: c for c in answer["pending_approvals"]}
    assert sorted(pending) == ["/a", "/b"] and pending["/a"]["agent_input_id"] != pending["/b"]["agent_input_id"]
    assert pending["/a"]["tool_call_id"].startswith("c1/") and pending["/b"]["tool_call_id"].startswith("c2/")
    done = parent.decide({c["tool_call_id"]: True for c in pending.values()}, timeout_seconds=10)
    assert done["content"] == "ok"
    first, second = tool_texts(parent_llm.calls[1])
    assert "no longer waits" in first  # its run was superseded by the second input: /a was not deleted
    assert second == "after: deleted /b"
    assert files.deleted == ["/b"]


def test_a_durable_sub_agents_waiting_run_resumes_after_both_agents_are_made_again(tmp_path: Any) -> None:
    """Parent and sub-agent each with a SQLite store: new objects for both (a restarted process) see the
    waiting call and resume both runs from their stores; the tool runs once, no model answers a turn twice.
    """
    from yiemagent.store.sqlite import SQLiteStore

    files = Files()

    def agents(sub_replies: list[dict[str, Any]], parent_replies: list[dict[str, Any]]
               ) -> tuple[Agent, ScriptedLLM, ScriptedLLM]:
        sub_llm, parent_llm = ScriptedLLM(sub_replies), ScriptedLLM(parent_replies)
        sub = Agent(sub_llm, tools=[files.tool], name="sub", store=SQLiteStore(str(tmp_path / "sub.db")),
                    conversation_id="s")
        parent = Agent(parent_llm, tools=[sub.as_tool("ask_sub", "Cleans.")],
                       store=SQLiteStore(str(tmp_path / "parent.db")), conversation_id="p")
        return parent, sub_llm, parent_llm

    parent, _, _ = agents([tool_call_reply("delete", {"path": "/x"})], [tool_call_reply("ask_sub", {"input": "x"})])
    assert parent.ask("go", timeout_seconds=10)["status"] == "awaiting_approval"
    parent.shutdown()
    again, sub_llm, parent_llm = agents([text_reply("deleted it")], [text_reply("all clean")])
    [pending] = again.pending_approvals()
    assert again.approve(pending["tool_call_id"], timeout_seconds=10)["content"] == "all clean"
    assert files.deleted == ["/x"] and len(sub_llm.calls) == 1 and len(parent_llm.calls) == 1
    assert tool_texts(parent_llm.calls[0]) == ["deleted it"]
