"""Issue 27's rule: *every numeric field a peer sends may come as a string, a float or nonsense*.

One reader (``yiemagent._internal.numbers``) at each boundary where a peer's number enters: a model reply's
``usage`` (counted in ``agent.usage``, by usage limits and by compaction), the ``Retry-After`` header, OAuth
``expires_in``, MCP ``notifications/progress``. Before, ``"12"`` tokens were not counted at all, ``12.0`` was
skipped by compaction's count, and ``Retry-After: 1e999`` was a wait of infinity.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import pytest

from yiemagent import Agent, UsageLimits, tool
from yiemagent._internal.numbers import peer_count, peer_number, peer_numbers
from yiemagent._internal.retry import retry_after_seconds
from yiemagent.mcp.auth.tokens import seconds_field
from yiemagent.mcp.server_messages import handle_server_message
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply


@tool
def echo(text: str) -> str:
    """Return ``text``."""
    return text

NONSENSE = ["abc", "", "  ", True, False, None, float("nan"), float("inf"), "NaN", "Infinity", "-inf", "1e999",
            [1], {"n": 1}, "1" * 100]


@pytest.mark.parametrize("value", NONSENSE, ids=repr)
def test_nonsense_is_no_number_and_never_raises(value: Any) -> None:
    assert peer_number(value) is None
    assert peer_count(value) is None
    assert seconds_field(value) is None


@pytest.mark.parametrize(("value", "number"), [(12, 12), (12.0, 12), ("12", 12), (" 12 ", 12), ("12.0", 12),
                                               ("1e3", 1000), (2.5, 2.5), ("2.5", 2.5), (-3, -3)])
def test_numbers_come_as_numbers_floats_or_strings(value: Any, number: float) -> None:
    read = peer_number(value)
    assert read == number and type(read) is type(number)


def test_a_count_is_a_whole_number_not_below_zero() -> None:
    assert [peer_count(v) for v in (7, "7", 7.0, 7.5, -1, "-1")] == [7, 7, 7, None, None, None]


def test_peer_numbers_reads_nested_strings_and_copies_only_when_something_changes() -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 2}
    assert peer_numbers(usage) is usage
    odd = {"prompt_tokens": "10", "prompt_tokens_details": {"cached_tokens": "4"}, "service_tier": "default",
           "cost": float("nan")}
    assert peer_numbers(odd) == {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 4},
                                 "service_tier": "default", "cost": None}
    assert odd["prompt_tokens"] == "10"  # the peer's object is not changed


def _reply(text: str, usage: dict[str, Any]) -> dict[str, Any]:
    reply = text_reply(text)
    reply["usage"] = usage
    return reply


def test_a_reply_whose_usage_numbers_are_strings_or_floats_is_counted() -> None:
    """The model boundary: ``agent.usage`` sums them, and so do the usage limits."""
    llm = ScriptedLLM([_reply("one", {"prompt_tokens": "12", "completion_tokens": 7.0, "total_tokens": "x"}),
                       _reply("two", {"prompt_tokens": 30.0, "completion_tokens": "5"})])
    agent = Agent(llm)
    agent.ask("first")
    agent.ask("second")
    assert agent.usage["prompt_tokens"] == 42 and agent.usage["completion_tokens"] == 12
    assert isinstance(agent.usage["prompt_tokens"], int)
    assert agent.history[-1].usage == {"prompt_tokens": 30, "completion_tokens": 5}
    calling = tool_call_reply("echo", {"text": "x"})
    calling["usage"] = {"prompt_tokens": "500", "completion_tokens": "1"}
    limited = Agent(ScriptedLLM([calling, text_reply("never asked")]), tools=[echo],
                    usage_limits=UsageLimits(input_tokens=100))
    answer = limited.ask("hi")
    assert answer["status"] == "usage_limit" and answer["usage_limit"]["value"] == 500


@pytest.mark.parametrize(("header", "seconds"), [("7", 7.0), (" 7 ", 7.0), ("2.5", 2.5), ("1e999", None),
                                                 ("inf", None), ("nan", None), ("soon", None), ("-5", 0.0)])
def test_retry_after_is_read_by_the_same_rule(header: str, seconds: float | None) -> None:
    assert retry_after_seconds(header) == seconds


def test_progress_numbers_reach_the_callback_as_numbers() -> None:
    """The MCP boundary: ``notifications/progress`` with ``"2"`` of ``"5"`` (as some servers write them) reaches
    the tool's progress callback as 2 of 5; a nonsense ``total`` is left out rather than passed on. A raw message:
    the SDK servers validate progress as a number before sending, so no real program sends this shape.
    """
    got: list[dict[str, Any]] = []

    class Client:
        name = "peer"
        request_handlers: ClassVar[dict[str, Any]] = {}
        tools_changed = threading.Event()

    progress = {"tok": got.append}
    for params in ({"progressToken": "tok", "progress": "2", "total": "5"},
                   {"progressToken": "tok", "progress": 3.0, "total": "lots", "message": "going"}):
        assert handle_server_message(Client(), progress, {"jsonrpc": "2.0", "method": "notifications/progress",
                                                          "params": params}) is None
    assert got == [{"progressToken": "tok", "progress": 2, "total": 5},
                   {"progressToken": "tok", "progress": 3, "message": "going"}]


@pytest.mark.parametrize(("max_tokens", "temperature", "fields"), [
    ("256", "0.5", {"max_tokens": 256, "temperature": 0.5}),
    (256.0, 1, {"max_tokens": 256, "temperature": 1}),
    ("lots", "hot", {}), (0, -1, {}), (True, float("nan"), {}), (2.5, None, {}),
])
def test_sampling_numbers_are_read_by_the_same_rule(max_tokens: Any, temperature: Any, fields: dict[str, Any]) -> None:
    """The MCP sampling boundary: ``maxTokens`` and ``temperature`` of ``sampling/createMessage``."""
    from yiemagent.mcp.sampling import sampling_request_to_chat

    params = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": max_tokens,
              "temperature": temperature}
    _, _, got = sampling_request_to_chat(params)
    assert got == fields
