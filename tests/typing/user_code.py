"""A user's file: the documented uses of yiemagent, checked with ``mypy --strict`` by tests/test_typing.py.

Never imported by the tests themselves; it only has to type-check (and it also runs: see the test).
"""

from __future__ import annotations

from yiemagent import (
    Agent,
    AgentToolResult,
    Answer,
    AnswerStatus,
    AssistantMessage,
    FunctionTool,
    ToolResultMessage,
    UserMessage,
    tool,
)
from yiemagent.testing import ScriptedLLM


@tool
def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@tool(name="get_weather", description="Weather of a city.")
def weather(city: str) -> AgentToolResult:
    return AgentToolResult(f"Sunny in {city}")


def check() -> Answer:
    total: int = add(2, 3)  # the decorated function keeps its signature
    named: FunctionTool[[str], AgentToolResult] = weather
    assert total == 5 and named.name == "get_weather" and add.input_schema["required"] == ["a"]
    hello = UserMessage("hello")
    reply = AssistantMessage("hi")
    result = ToolResultMessage("call_1", "12:00")
    assert hello.text == "hello" and reply.text == "hi" and result.text == "12:00"
    llm = ScriptedLLM([{"choices": [{"message": {"role": "assistant", "content": "done"}}]}])
    with Agent(llm_call=llm, tools=[add, weather]) as agent:
        answer: Answer = agent.ask("hi", timeout_seconds=10)
    status: AnswerStatus = answer["status"]  # a Literal: a typo in a status compared to it is an error
    input_ids: list[str] = answer["input_ids"]
    assert status == "completed" and len(input_ids) == 1 and answer.get("error") is None
    streamed = Agent(ScriptedLLM([{"choices": [{"message": {"role": "assistant", "content": "hey"}}]}],
                     delta_chars=1))
    text = ""
    for item in streamed.stream("hello"):  # events (a union told apart by ``type``), then the answer
        if isinstance(item, dict):
            last: Answer = item
        elif item.type == "message_update" and item.delta_type == "text":
            text += item.delta
    assert text == "hey" and last["content"] == "hey"
    return answer


if __name__ == "__main__":
    print(check()["content"])
