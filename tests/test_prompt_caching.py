"""Prompt caching (issue 29 point 3): cache marks, a byte-stable prefix, cached tokens in ``usage``, cache prices.

The real check is against the embedded llama.cpp server, which reports ``usage.prompt_tokens_details.cached_tokens``
(and ``timings.cache_n``) when ``cache_prompt`` is on: a conversation's cached tokens rise input after input, and a
conversation cost limit priced with a cache rate stops it.
"""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pytest

from yiemagent import Agent, UsageLimits
from yiemagent.context.compaction import Compaction
from yiemagent.context.usage_limits import cache_tokens, reply_cost
from yiemagent.models.openai_chat import OpenAIChat, with_cache_breakpoints
from yiemagent.testing import ScriptedLLM, text_reply


def test_cache_breakpoints_mark_the_system_message_and_the_newest_message_without_changing_the_input() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}]
    before = copy.deepcopy(messages)
    body = OpenAIChat("http://127.0.0.1:9/v1", "m", cache_breakpoints=True).request_body(messages, [])
    assert messages == before
    sent = body["messages"]
    assert sent[0]["content"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert sent[1] == messages[1] and sent[2] == messages[2]
    assert sent[3]["content"][0] == {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}}
    assert "cache_control" not in sent[3]["content"][1]
    plain = OpenAIChat("http://127.0.0.1:9/v1", "m", prompt_cache_key="conv-1").request_body(messages, [])
    assert plain["messages"] == messages and plain["prompt_cache_key"] == "conv-1"
    assert with_cache_breakpoints([{"role": "user", "content": "only"}])[0]["content"][0]["cache_control"]


def test_cache_rates_price_read_and_written_tokens_in_both_usage_shapes() -> None:
    prices = {"m": {"input_per_million": 1.0, "output_per_million": 2.0, "cached_input_per_million": 0.1,
                    "cache_write_per_million": 1.25}}
    openai_style = {"prompt_tokens": 1000, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 800}}
    assert cache_tokens(openai_style) == (800, 0)
    assert reply_cost(prices, "m", openai_style) == pytest.approx((200 * 1.0 + 800 * 0.1 + 10 * 2.0) / 1e6)
    anthropic = {"input_tokens": 200, "cache_read_input_tokens": 800, "cache_creation_input_tokens": 100,
                 "output_tokens": 10}
    assert cache_tokens(anthropic) == (800, 100)
    assert reply_cost(prices, "m", anthropic) == pytest.approx((200 + 80 + 125 + 20) / 1e6)
    no_rates = {"m": {"input_per_million": 1.0, "output_per_million": 2.0}}
    assert reply_cost(no_rates, "m", openai_style) == pytest.approx((1000 + 20) / 1e6)  # all input at full price
    assert cache_tokens({"prompt_tokens_details": {"cached_tokens": "nonsense"}}) == (0, 0)


@pytest.mark.parametrize("compaction", [None, Compaction(context_window=10**9)], ids=["plain", "compaction"])
def test_the_request_prefix_stays_byte_stable_from_one_model_call_to_the_next(compaction: Any) -> None:
    """A provider's prompt cache reuses only an identical prefix: each request begins with the previous one,
    byte for byte (system prompt, earlier messages), compaction on or off.
    """
    llm = ScriptedLLM([text_reply(f"answer {n}") for n in range(6)])
    agent = Agent(llm, system_prompt="You answer questions.", compaction=compaction)
    for n in range(6):
        assert agent.ask(f"question {n}")["status"] == "completed"
    requests = [json.dumps(call["messages"]) for call in llm.calls]
    for before, after in itertools.pairwise(requests):
        assert after.startswith(before[:-1]), "a request changed the prefix of the one before"


@pytest.mark.model
@pytest.mark.timeout(600)
def test_cached_tokens_rise_on_the_local_server_and_the_cost_limit_stops_the_conversation(local_model: Any) -> None:
    """Against the embedded llama.cpp server with ``cache_prompt``: each input after the first reads the
    conversation so far from the server's cache (``prompt_tokens_details.cached_tokens``), summed in
    ``agent.usage``; a conversation cost limit priced with the cache rate ends the conversation ``usage_limit``.
    """
    llm = local_model.llm_call(cache_prompt=True, max_tokens=16)
    price = {"input_per_million": 100.0, "output_per_million": 400.0, "cached_input_per_million": 10.0}
    limits = UsageLimits(cost=0.06, prices={llm.model: price})
    agent = Agent(llm, system_prompt="You are a helpful assistant. " * 20, conversation_usage_limits=limits)
    cached: list[int] = []
    statuses: list[str] = []
    for n in range(12):
        answer = agent.ask(f"Say a short sentence about the number {n}.", timeout_seconds=300)
        statuses.append(answer["status"])
        if answer["status"] not in ("completed", "truncated"):  # truncated: the 16-token answer was cut
            break
        cached.append(cache_tokens(agent.history[-1].usage or {})[0])
    # the first input finds at most a few tokens of an earlier request (the server is shared by the session's
    # model tests); each later one reads the conversation so far from the cache, more at every input
    assert len(cached) >= 3 and cached[0] < 50 and cached[1] > cached[0], cached
    assert all(b > a for a, b in itertools.pairwise(cached[1:])), cached  # the cached prefix grows
    assert agent.usage["prompt_tokens_details"]["cached_tokens"] == sum(cached)
    assert statuses[-1] == "usage_limit", statuses  # the cost limit stopped the conversation
    assert len(cached) >= 3 and agent.usage["cost"] < 0.06 + 0.05
