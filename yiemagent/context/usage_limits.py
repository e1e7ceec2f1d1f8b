"""Usage limits: model requests, tool calls, tokens and cost, per run and per conversation.

``UsageLimits(requests=, tool_calls=, input_tokens=, output_tokens=,
total_tokens=, cost=, prices=)`` is given as ``Agent(usage_limits=...)`` (each
run) or ``Agent(conversation_usage_limits=...)`` (the conversation's summed
``usage``, which a store keeps, plus the run in progress).

When a limit is reached the run ends with status ``usage_limit`` and the answer
dict carries ``usage_limit``: ``{"limit": <name>, "maximum": <limit>, "value":
<figure that reached it>, "scope": "run" | "conversation"}``. When checks happen:

* ``requests``: before each model request; the request that would be number
  ``requests + 1`` is not sent;
* ``tool_calls``: before each tool batch; a batch that would take the count
  over the limit is not run (each of its calls gets a "not run" error result,
  the same way as at the turn limit, so the history stays a valid OpenAI chat);
* tokens and ``cost``: after each reply (a reply's size is known only once it
  arrived, so a reply can overshoot a token or cost limit by its own size),
  and before each request (a limit already reached sends no request). A reply
  without tool calls is the answer: it is kept and the run is ``completed``.

Tokens are read from the replies' OpenAI ``usage`` (``prompt_tokens``,
``completion_tokens``, ``total_tokens``; ``input_tokens`` / ``output_tokens``
too). With limits set, a run's ``usage`` also counts ``requests``,
``tool_calls`` (calls that ran) and ``cost`` (with ``prices``). Per
conversation, the figures before the run are read from the history itself
(each assistant message's ``usage``; each tool result counts as a tool call,
"not run" ones included), so they survive a store round-trip and hold across
processes.

What tools spend on models counts too: a result's ``AgentToolResult.usage``
(an agent used as a tool, ``Agent.as_tool``: the sub-run's tokens,
``requests``, ``tool_calls`` and, when the sub-agent prices its replies,
``cost``) is added to the run's usage after the batch, so the checks before
the next request see it; per conversation, a tool result whose ``details``
name an ``agent`` and carry its ``usage`` counts it from the history.

``cost`` is in the currency of ``prices``: ``{model: {"input_per_million": x,
"output_per_million": y, "cached_input_per_million"?: r, "cache_write_per_million"?: w}}``.
With the cache rates, the input tokens read from the provider's prompt cache are priced at
``r`` and those written to it at ``w``, the rest at ``x`` (``cache_tokens`` reads them: OpenAI and
llama.cpp ``prompt_tokens_details.cached_tokens``, Anthropic ``cache_read_input_tokens`` /
``cache_creation_input_tokens``, OpenRouter ``prompt_tokens_details.cache_write_tokens``); without
them every input token is priced at ``x``. The model is the reply's ``model`` when the
table prices it (the model that answered, e.g. behind ``fallback_llm``), else
the ``llm_call``'s ``model`` attribute (``openai_chat`` has one); a table of one entry prices an
``llm_call`` without a model. A model with no price makes ``reply_cost``
raise ``ConfigError`` and the run end with status ``error`` (a cost is never
silently 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._internal.checks import one_of
from .._internal.numbers import count_value
from ..exceptions import ConfigError
from ..messages import AssistantMessage, Message, ToolResultMessage

__all__ = ["PRICE_KEYS", "LimitReached", "UsageGuard", "UsageLimits", "cache_tokens", "check_prices", "price_of",
           "reply_cost", "tokens"]


@dataclass(frozen=True)
class LimitReached:
    """Which limit ended a run, and the figure that reached it."""

    limit: str
    maximum: float
    value: float
    scope: str = "run"

    def as_dict(self) -> dict[str, Any]:
        """``{"limit", "maximum", "value", "scope"}``: the answer's ``usage_limit``."""
        return {"limit": self.limit, "maximum": self.maximum, "value": self.value, "scope": self.scope}

    def message(self) -> str:
        """The run's closing text, naming the limit and the figures."""
        return (f"Stopped: the {self.scope} usage limit on {self.limit} ({self.maximum:g}) was reached "
                f"({self.value:g}).")


def tokens(usage: dict[str, Any]) -> tuple[int, int, int]:
    """``(input, output, total)`` tokens of an OpenAI ``usage`` dict (missing counts are 0)."""
    def num(*keys: str) -> int:
        for key in keys:
            value = count_value(usage.get(key), key)  # a negative or non-finite count is unknown (issue 33)
            if value is not None:
                return int(value)
        return 0
    given_in, given_out = num("prompt_tokens", "input_tokens"), num("completion_tokens", "output_tokens")
    return given_in, given_out, num("total_tokens") or given_in + given_out


@dataclass(frozen=True)
class UsageLimits:
    """Limits on one run or one conversation; None: no limit on that figure.

    Raises ``ConfigError`` for a negative or non-finite limit, or a ``cost``
    limit without ``prices``.
    """

    requests: int | None = None
    tool_calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None
    prices: dict[str, dict[str, float]] = field(default_factory=dict)
    """``{model: {"input_per_million": x, "output_per_million": y}}``, and optionally the prompt cache's
    ``"cached_input_per_million"`` and ``"cache_write_per_million"`` (module docstring)."""

    def __post_init__(self) -> None:
        for name in ("requests", "tool_calls", "input_tokens", "output_tokens", "total_tokens", "cost"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value) or value < 0):
                raise ConfigError(f"UsageLimits {name} must be a number >= 0 or None, not {value!r:.40}")
        if self.cost is not None and not self.prices:
            raise ConfigError("UsageLimits cost needs prices={model: {'input_per_million': x, "
                              "'output_per_million': y}}")
        check_prices(self.prices)

    def before_request(self, usage: dict[str, Any], scope: str = "run") -> LimitReached | None:
        """The limit that forbids one more request after ``usage`` (counts and tokens so far), or None."""
        requests = int(usage.get("requests", 0) or 0)
        if self.requests is not None and requests + 1 > self.requests:
            return LimitReached("requests", self.requests, requests, scope)
        return self.after_reply(usage, scope)

    def before_tools(self, usage: dict[str, Any], calls: int, scope: str = "run") -> LimitReached | None:
        """The limit that forbids running ``calls`` more tool calls, or None."""
        done = int(usage.get("tool_calls", 0) or 0)
        if self.tool_calls is not None and done + calls > self.tool_calls:
            return LimitReached("tool_calls", self.tool_calls, done + calls, scope)
        return None

    def after_reply(self, usage: dict[str, Any], scope: str = "run") -> LimitReached | None:
        """The token or cost limit that ``usage`` reached (``>=``), or None."""
        given_in, given_out, total = tokens(usage)
        for name, value in (("input_tokens", given_in), ("output_tokens", given_out), ("total_tokens", total)):
            maximum = getattr(self, name)
            if maximum is not None and value >= maximum:
                return LimitReached(name, maximum, value, scope)
        if self.cost is not None:
            spent = float(usage.get("cost", 0.0) or 0.0)
            if spent >= self.cost:
                return LimitReached("cost", self.cost, round(spent, 9), scope)
        return None


def cache_tokens(usage: dict[str, Any]) -> tuple[int, int]:
    """``(read, written)``: input tokens a reply read from the provider's prompt cache, and wrote to it.

    Read: ``prompt_tokens_details.cached_tokens`` (OpenAI, llama.cpp, vLLM) or ``cache_read_input_tokens``
    (Anthropic); written: ``cache_creation_input_tokens`` (Anthropic) or ``prompt_tokens_details.
    cache_write_tokens`` (OpenRouter). Missing or nonsense: 0.
    """
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}

    def count(value: Any) -> int:
        return int(count_value(value) or 0)

    read = count(details.get("cached_tokens")) or count(usage.get("cache_read_input_tokens"))
    written = count(usage.get("cache_creation_input_tokens")) or count(details.get("cache_write_tokens"))
    return read, written


PRICE_KEYS = ("input_per_million", "output_per_million", "cached_input_per_million", "cache_write_per_million")
"""The rates a price may name (per million tokens)."""


def check_prices(prices: Any) -> None:
    """``ConfigError`` unless ``prices`` is ``{model: {rate: number}}``: rates among ``PRICE_KEYS``, finite, >= 0.

    Checked when ``UsageLimits`` is made, before the first paid call: a typo in a rate's name
    (``"input_per_milion"``, the nearest named) would price every token at 0, a negative or NaN
    rate would lower or poison the cost.
    """
    if not isinstance(prices, Mapping):
        raise ConfigError(f"UsageLimits prices must be a dict {{model: {{rate: number}}}}, not {prices!r:.60}")
    for model, price in prices.items():
        if not isinstance(model, str) or not isinstance(price, Mapping):
            raise ConfigError(f"UsageLimits prices: {model!r:.40} must map a model name to "
                              f"{{'input_per_million': x, 'output_per_million': y}}, not {price!r:.60}")
        for rate, value in price.items():
            one_of(f"UsageLimits prices[{model!r:.40}] rate", rate, PRICE_KEYS)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise ConfigError(f"UsageLimits prices[{model!r:.40}][{rate!r}] must be a finite number >= 0, "
                                  f"not {value!r:.40}")


def price_of(prices: dict[str, dict[str, float]], model: str | None) -> dict[str, float] | None:
    """The price ``reply_cost`` applies to ``model``, or None when the table has none for it."""
    price = prices.get(model or "")
    if price is None and not model and len(prices) == 1:
        price = next(iter(prices.values()), None)
    return price


def reply_cost(prices: dict[str, dict[str, float]], model: str | None, usage: dict[str, Any] | None) -> float:
    """Cost of one reply from its ``usage`` and the price of ``model`` (per million tokens).

    Cached and cache-written input tokens at their own rates when the price has them (module docstring).
    Raises ``ConfigError`` when no price applies to ``model``.
    """
    price = price_of(prices, model)
    if price is None:
        raise ConfigError(f"UsageLimits prices has no price for model {model!r}; priced: {sorted(prices)}")
    given_in, given_out, _ = tokens(usage or {})
    read, written = cache_tokens(usage or {})
    input_rate = float(price.get("input_per_million", 0.0))
    read_rate = float(price.get("cached_input_per_million", input_rate))
    write_rate = float(price.get("cache_write_per_million", input_rate))
    # OpenAI-style ``prompt_tokens`` (LiteLLM's too) count the cached tokens in; Anthropic's own
    # ``input_tokens`` leave both cache counts out
    plain = max(0, given_in - read - written) if "prompt_tokens" in (usage or {}) else given_in
    return (plain * input_rate + read * read_rate + written * write_rate
            + given_out * float(price.get("output_per_million", 0.0))) / 1_000_000


_COUNTS = ("requests", "tool_calls", "cost")


def _add_numbers(total: dict[str, Any], usage: Any) -> None:
    """Add the top-level numbers of ``usage`` (a dict, else nothing) into ``total``."""
    if isinstance(usage, dict):
        for key, value in usage.items():
            if count_value(value, key) is not None:  # never a negative or non-finite amount (issue 33)
                total[key] = (total.get(key, 0) or 0) + value


class UsageGuard:
    """The checks of one run: its own ``usage`` and, per conversation, the conversation's before the run.

    The loop calls ``count_reply`` after each reply (adds ``requests`` and
    ``cost`` to the run's usage), ``before_request`` / ``after_reply`` /
    ``before_tools`` for the verdicts, and ``count_tools`` after a batch ran.
    """

    def __init__(self, run: UsageLimits | None, conversation: UsageLimits | None,
                 history: list[Message], model: str | None) -> None:
        self.run = run
        self.conversation = conversation
        self.model = model
        self.prices = {**(conversation.prices if conversation else {}), **(run.prices if run else {})}
        if self.prices and isinstance(model, str) and model and price_of(self.prices, model) is None:
            # before the first paid call, not after it: the llm_call's own model must have a price
            raise ConfigError(f"UsageLimits prices has no price for model {model!r} (the llm_call's model); "
                              f"priced: {sorted(self.prices)}: nothing was sent")
        self.base: dict[str, Any] = {}
        if conversation is not None:  # the conversation so far, from its history (kept by a store too)
            for message in history:
                if isinstance(message, AssistantMessage):
                    self.count_reply(self.base, message.usage, message.model)
                    _add_numbers(self.base, message.usage)
                elif isinstance(message, ToolResultMessage):
                    self.count_tools(self.base, 1)
                    details = message.details
                    if isinstance(details, dict) and isinstance(details.get("agent"), str):
                        _add_numbers(self.base, details.get("usage"))  # an agent used as a tool spent this

    @property
    def active(self) -> bool:
        """True when a run or conversation limit is set."""
        return self.run is not None or self.conversation is not None

    def _both(self, usage: dict[str, Any]) -> list[tuple[UsageLimits, dict[str, Any], str]]:
        checks = []
        if self.run is not None:
            checks.append((self.run, usage, "run"))
        if self.conversation is not None:
            merged = dict(self.base)
            _add_numbers(merged, usage)
            checks.append((self.conversation, merged, "conversation"))
        return checks

    def count_reply(self, usage: dict[str, Any], reply_usage: dict[str, Any] | None,
                    reply_model: str | None = None) -> None:
        """Add one request (and its cost, with prices) to ``usage``; its tokens are added by the loop.

        ``reply_model``: the reply's ``model`` (``AssistantMessage.model``); when ``prices`` has it, the
        reply is priced as that model (the one that answered, e.g. behind ``fallback_llm``), else as the
        ``llm_call``'s ``model``.
        """
        if not self.active:
            return
        usage["requests"] = int(usage.get("requests", 0) or 0) + 1
        if self.prices:
            model = reply_model if reply_model is not None and reply_model in self.prices else self.model
            usage["cost"] = float(usage.get("cost", 0.0) or 0.0) + reply_cost(self.prices, model, reply_usage)

    def tool_usage(self, results: Iterable[Any]) -> list[dict[str, Any]]:
        """What the results' tools spent on models (``AgentToolResult.usage``), to add to the run's usage.

        Without limits the counts (``requests``, ``tool_calls``, ``cost``) are left out: a run counts its
        own only when limits are set, and its usage must not show a part of a count as the whole.
        """
        spent = [r.usage for r in results if isinstance(getattr(r, "usage", None), dict)]
        if self.active:
            return spent
        return [{k: v for k, v in each.items() if k not in _COUNTS} for each in spent]

    def count_tools(self, usage: dict[str, Any], calls: int) -> None:
        """Add ``calls`` tool calls to the run's ``usage`` (only when limits are set)."""
        if self.active:
            usage["tool_calls"] = int(usage.get("tool_calls", 0) or 0) + calls

    @staticmethod
    def nested(results: Iterable[Any]) -> LimitReached | None:
        """The usage limit a sub-agent's run reached (a result of ``Agent.as_tool``), or None.

        A limit anywhere in a nested run reaches the top run: its ``details`` (``{"agent", "status":
        "usage_limit", "answer": {"usage_limit": {...}}}``) end this run with status ``usage_limit`` too, the
        scope naming the agent (``"agent 'sub' run"``), checked whether or not this run has limits.
        """
        for result in results:
            details = getattr(result, "details", None)
            if not (isinstance(details, dict) and isinstance(details.get("agent"), str)
                    and details.get("status") == "usage_limit"):
                continue
            answer = details.get("answer")
            limit = answer.get("usage_limit") if isinstance(answer, dict) else None
            limit = limit if isinstance(limit, dict) else {}
            figures = [value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
                       for value in (limit.get("maximum"), limit.get("value"))]
            return LimitReached(str(limit.get("limit", "unknown")), figures[0], figures[1],
                                f"agent {details['agent']!r} {limit.get('scope', 'run')}")
        return None

    def before_request(self, usage: dict[str, Any]) -> LimitReached | None:
        """The limit another model request would pass (run, then conversation), or None."""
        for limits, figures, scope in self._both(usage):
            reached = limits.before_request(figures, scope)
            if reached is not None:
                return reached
        return None

    def after_reply(self, usage: dict[str, Any]) -> LimitReached | None:
        """The token or cost limit the last reply reached, or None."""
        for limits, figures, scope in self._both(usage):
            reached = limits.after_reply(figures, scope)
            if reached is not None:
                return reached
        return None

    def before_tools(self, usage: dict[str, Any], calls: int) -> LimitReached | None:
        """The tool-call limit a batch of ``calls`` would pass, or None."""
        for limits, figures, scope in self._both(usage):
            reached = limits.before_tools(figures, calls, scope)
            if reached is not None:
                return reached
        return None
