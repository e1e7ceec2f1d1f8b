"""Wild inputs for the request guard: replies, histories, raw message dicts and saved states, tampered too.

Used by ``tests/property/test_guard.py`` (a few thousand examples in CI) and by
``scripts/fuzz_requests.py`` (100,000 and more). ``check_one(case)`` runs one
generated case through the agent loop and the guard and returns the list of
problems found (empty when all is well): an undocumented exception, a request
the strict validator rejects, an input without an answer.
"""

import concurrent.futures
import json
import math
import threading

from hypothesis import strategies as st

from yiemagent import Agent, AgentTool, FormatError, InvalidRequestError, YiemagentError
from yiemagent.loop import LoopConfig, run_turns
from yiemagent.messages import (
    AssistantMessage,
    ImageContent,
    ReasoningContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_to_dict,
)
from yiemagent.messages.guard import RequestGuard
from yiemagent.messages.tool_calls import parse_response
from yiemagent.tools import ToolRegistry

from .. import strict_openai
from .strategies import assistant_messages, json_values, messages

odd_floats = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0])
odd_scalars = (json_values | odd_floats | st.binary(max_size=6) | st.sampled_from(["\ud800", "a\udfffb", "", " "])
               | st.integers())
odd_values = st.recursive(odd_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.one_of(st.text(max_size=4), st.integers(-3, 3)), inner, max_size=3) | st.tuples(inner), max_leaves=8)
tool_names = st.sampled_from(["get_weather", "get_time", "web.search", "get weather now", "", "x" * 70,
                              "ünïcode", "search", None, 7])
ids = st.sampled_from(["c1", "c2", "call_1", "", None, "dup", "dup", 3, "\ud800"])


@st.composite
def raw_calls(draw):
    call = {}
    if draw(st.booleans()):
        call["id"] = draw(ids)
    if draw(st.booleans()):
        call["type"] = draw(st.sampled_from(["function", "tool", None]))
    fn = {"name": draw(tool_names)}
    choice = draw(st.integers(0, 5))
    if choice == 0:
        fn["arguments"] = draw(st.dictionaries(st.text(max_size=5), odd_values, max_size=3))
    elif choice == 1:
        fn["arguments"] = draw(st.sampled_from(['{"city": "Lima"}', "", "null", '{"a": NaN}', '{"a":', "[1]",
                                                '{"city": "Li', '{"a":1}{"a":2}', "{" * 3000, '"x"']))
    elif choice == 2:
        fn["arguments"] = draw(odd_values)
    if draw(st.booleans()):
        call["function"] = fn
    else:
        call.update(fn)
    if draw(st.integers(0, 9)) == 0:
        call["extra"] = draw(odd_values)
    return call


@st.composite
def raw_replies(draw):
    """A reply of any shape a server (or a broken proxy) might return."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(odd_values)
    if kind == 1:
        return {"choices": draw(st.sampled_from([[], None, [None], "x", [{"message": None}]]))}
    message = {"role": "assistant"}
    if draw(st.booleans()):
        message["content"] = draw(st.one_of(st.text(max_size=30), st.none(), odd_values, st.sampled_from([
            "[" * 5000, "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
            "<think>hm</think>ok", '{"name": "get_weather", "arguments": {"city": "Lima"}}',
            [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t1", "name": "get_time", "input": {}}]])))
    if draw(st.booleans()):
        message["tool_calls"] = draw(st.one_of(st.lists(raw_calls(), max_size=4), odd_values))
    for key in draw(st.lists(st.sampled_from(["score", "refusal", "audio", "reasoning_content", "annotations",
                                              "function_call"]), max_size=2)):
        message[key] = draw(odd_values)
    finish = draw(st.sampled_from(["stop", "tool_calls", "length", "incomplete", None, 5]))
    if kind == 2:
        return message
    reply = {"choices": [{"index": 0, "finish_reason": finish, "message": message}]}
    if draw(st.booleans()):
        reply["usage"] = draw(st.one_of(st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens"]),
                                                        st.integers(0, 100)), odd_values))
    return reply


@st.composite
def tampered_messages(draw):
    """Yiemagent messages with values a history should never hold, but a user's code or a state might."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        calls = [ToolCall(draw(st.sampled_from(["c1", "c2", "", "dup"])), draw(st.text(max_size=8)),
                          draw(st.dictionaries(st.text(max_size=4), odd_values, max_size=2)))
                 for _ in range(draw(st.integers(0, 3)))]
        return AssistantMessage([TextContent(draw(st.text(max_size=10)))], tool_calls=calls,
                                extra=draw(st.dictionaries(st.text(max_size=5), odd_values, max_size=2)))
    if kind == 1:
        return ToolResultMessage(draw(st.sampled_from(["c1", "c2", "dup", "zz"])),
                                 [TextContent(draw(st.text(max_size=10)))])
    if kind == 2:
        return UserMessage([TextContent(draw(st.sampled_from(["\ud800", "", "hi"])))],
                           name=draw(st.sampled_from([None, "bad name!", "ok_name", ""])))
    if kind == 3:
        return AssistantMessage([ReasoningContent("r")], tool_calls=[])
    return UserMessage([ImageContent(draw(st.sampled_from(["https://example.org/a.png", ""])))])


histories = st.lists(st.one_of(messages, tampered_messages(), assistant_messages(unique_ids=False)), max_size=10)

windows = st.one_of(
    st.just(None),
    st.integers(0, 6).map(lambda k: (lambda h: h[-k:] if k else h)),
    st.integers(1, 6).map(lambda k: (lambda h: h[k:])),
    st.integers(2, 3).map(lambda k: (lambda h: h[::k])),
    st.just(lambda h: list(reversed(h))),
)

raw_message_dicts = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "developer", "assistant", "tool"])},
                          optional={"content": odd_values, "tool_calls": st.one_of(st.lists(raw_calls(), max_size=3),
                                                                                   odd_values),
                                    "tool_call_id": ids, "name": st.one_of(st.text(max_size=8), odd_values),
                                    "refusal": odd_values, "extra": odd_values}),
    st.fixed_dictionaries({"role": st.just("user"), "content": st.lists(st.one_of(
        st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "input_audio", "refusal"])},
                              optional={"text": odd_values, "image_url": odd_values}), odd_values), max_size=3)}),
)


@st.composite
def schemas(draw):
    leaf = st.one_of(st.just({"type": "array"}), st.just({"type": ["array", "null"]}), st.just({"type": "string"}),
                     st.just({"type": "number", "default": math.nan}), st.just({}), st.just(True))
    tree = st.recursive(leaf, lambda inner: st.one_of(
        st.builds(lambda p: {"type": "object", "properties": p}, st.dictionaries(st.text(max_size=4), inner,
                                                                                  max_size=3)),
        st.builds(lambda i: {"type": "array", "items": i}, inner),
        st.builds(lambda a: {"anyOf": a}, st.lists(inner, max_size=2)),
    ), max_leaves=8)
    top = draw(st.one_of(tree, st.none(), st.just([]), st.just("x"), st.just({"type": "string"})))
    if isinstance(top, dict) and draw(st.booleans()):
        top = {"type": "object", "properties": {"a": top}, "$defs": {"D": {"type": "array"}}}
    return top


states = st.one_of(
    odd_values.map(lambda v: json.dumps(v, default=repr)),
    st.text(max_size=20),
    st.builds(lambda h, u, s: json.dumps({"version": 1, "history": h, "usage": u, "system_prompt": s},
                                         default=repr),
              st.one_of(st.lists(st.one_of(raw_message_dicts, odd_values), max_size=4),
                        histories.map(lambda h: [message_to_dict(m) for m in h]), odd_values),
              st.one_of(st.dictionaries(st.text(max_size=5), st.integers()), odd_values),
              st.one_of(st.none(), st.text(max_size=5), odd_values)),
)

cases = st.fixed_dictionaries({
    "history": histories,
    "replies": st.lists(raw_replies(), min_size=1, max_size=4),
    "window": windows,
    "raw": st.lists(raw_message_dicts, max_size=6),
    "schema": schemas(),
    "state": states,
})


def _tool(name, schema=None):
    return AgentTool(name, f"{name}.", schema if schema is not None else {"type": "object", "properties": {}},
                     lambda call_id, arguments, event: f"{name} ok")


TOOLS = ToolRegistry([_tool("get_weather", {"type": "object", "properties": {"city": {"type": "string"}}}),
                      _tool("get_time"), _tool("search")])
EXECUTOR = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="fuzz")
STATUSES = {"completed", "truncated", "terminated", "max_turns", "repeated_call", "aborted", "error"}


def check_one(case):
    """Run one case; return the problems found as ``[(kind, detail)]``.

    kinds: ``undocumented`` (an exception that is not a documented yiemagent
    error, or any exception out of ``run_turns``), ``rejected`` (a request the
    strict validator refuses), ``unanswered`` (an input without an answer).
    """
    problems = []
    rejected = []

    replies = iter(case["replies"])

    def llm_call(messages, tools):
        try:
            strict_openai.validate_request(messages, tools)
        except AssertionError as exc:
            rejected.append(str(exc))
        try:
            return next(replies)
        except StopIteration:
            return {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                                                                                  "content": "done"}}]}

    # 1. the loop on a generated history, a generated window and generated replies
    history = list(case["history"])
    config = LoopConfig(llm_call=llm_call, tools=TOOLS, prepare_context=case["window"], max_turns=4,
                        system_prompt="be brief", executor=EXECUTOR)
    try:
        result = run_turns(history, [UserMessage("go")], config, threading.Event())
        if result.status not in STATUSES or not isinstance(result.answer, AssistantMessage):
            problems.append(("unanswered", f"status {result.status!r}"))
    except BaseException as exc:
        problems.append(("undocumented", f"run_turns raised {type(exc).__name__}: {exc}"))
    problems.extend(("rejected", r) for r in rejected)

    # 2. the guard alone on raw message dicts (what a user's format_messages might return)
    guard = RequestGuard()
    tools = [{"type": "function", "function": {"name": "t", "parameters": case["schema"]}}]
    try:
        sent, sent_tools, _ = guard([{"role": "system", "content": "s"}, *case["raw"]], tools)
        strict_openai.validate_request(sent, sent_tools)
    except InvalidRequestError:
        pass
    except AssertionError as exc:
        problems.append(("rejected", f"guard output: {exc}"))
    except Exception as exc:
        problems.append(("undocumented", f"guard raised {type(exc).__name__}: {exc}"))

    # 3. the public parser on each reply
    for reply in case["replies"]:
        try:
            parse_response(reply, tool_names=TOOLS.names())
        except FormatError:
            pass
        except Exception as exc:
            problems.append(("undocumented", f"parse_response raised {type(exc).__name__}: {exc}"))

    # 4. a saved state, possibly tampered: FormatError or an agent whose next request is valid
    try:
        agent = Agent.from_state(case["state"], llm_call, tools=list(TOOLS))
    except FormatError:
        agent = None
    except Exception as exc:
        problems.append(("undocumented", f"from_state raised {type(exc).__name__}: {exc}"))
        agent = None
    if agent is not None:
        rejected.clear()
        try:
            answer = agent.ask("next", timeout_seconds=30)
            if answer.get("status") not in STATUSES:
                problems.append(("unanswered", f"state: status {answer.get('status')!r}"))
        except YiemagentError as exc:
            problems.append(("unanswered", f"state: ask raised {type(exc).__name__}: {exc}"))
        except Exception as exc:
            problems.append(("undocumented", f"state: ask raised {type(exc).__name__}: {exc}"))
        finally:
            agent.shutdown()
        problems.extend(("rejected", f"state: {r}") for r in rejected)
    return problems


# --------------------------------------------------------------------------- a fast generator for the fuzz script
#
# Hypothesis spends most of its time drawing these nested structures (tens of ms per case on a shared
# machine); ``random_case(rng)`` draws cases of the same kinds with ``random`` so that the fuzz script can run
# 100,000 and more in minutes. Same ``check_one``.

_ODD_SCALARS = [None, True, False, 0, -1, 10**20, 1.5, math.nan, math.inf, -math.inf, "", " ", "hi", "\ud800",
                "a\udfffb", "ünï", b"\x00\xff", "[" * 50, '{"a": NaN}']
_NAMES = ["get_weather", "get_time", "search", "web.search", "get weather now", "", "x" * 70, None, 7, "ünïcode"]
_IDS = ["c1", "c2", "call_1", "", None, "dup", 3, "\ud800", "x" * 60, "edit:22"]
_ARGS = ['{"city": "Lima"}', "", "null", '{"a": NaN}', '{"a":', "[1]", '{"city": "Li', '{"a":1}{"a":2}',
         "{" * 3000, '"x"', '{"city": "Oslo"}', "{}"]
_CONTENTS = ["", "hi", None, "[" * 5000, "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
             "<think>hm</think>ok", '{"name": "get_weather", "arguments": {"city": "Lima"}}',
             [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t1", "name": "get_time", "input": {}}],
             [{"type": "text", "text": "a"}], [], [{"type": "image_url", "image_url": {"url": ""}}], 5, {"a": 1}]


def _odd(rng, depth=2):
    roll = rng.random()
    if depth <= 0 or roll < 0.6:
        return rng.choice(_ODD_SCALARS)
    if roll < 0.8:
        return [_odd(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "b", 1, "c"]): _odd(rng, depth - 1) for _ in range(rng.randint(0, 3))}


def _raw_call(rng):
    fn = {"name": rng.choice(_NAMES)}
    roll = rng.random()
    if roll < 0.5:
        fn["arguments"] = rng.choice(_ARGS)
    elif roll < 0.7:
        fn["arguments"] = {"city": _odd(rng)}
    elif roll < 0.8:
        fn["arguments"] = _odd(rng)
    call = {"function": fn} if rng.random() < 0.8 else dict(fn)
    if rng.random() < 0.8:
        call["id"] = rng.choice(_IDS)
    if rng.random() < 0.5:
        call["type"] = rng.choice(["function", "tool", None])
    return call


def _random_reply(rng):
    roll = rng.random()
    if roll < 0.05:
        return _odd(rng)
    if roll < 0.1:
        return {"choices": rng.choice([[], None, [None], "x", [{"message": None}]])}
    message = {"role": "assistant"}
    if rng.random() < 0.8:
        message["content"] = rng.choice(_CONTENTS)
    if rng.random() < 0.6:
        message["tool_calls"] = [_raw_call(rng) for _ in range(rng.choice([0, 1, 1, 2, 3, 20]))] \
            if rng.random() < 0.9 else _odd(rng)
    for key in rng.sample(["score", "refusal", "audio", "reasoning_content", "annotations", "function_call"],
                          rng.randint(0, 2)):
        message[key] = _odd(rng)
    if roll < 0.15:
        return message
    reply = {"choices": [{"index": 0, "message": message,
                          "finish_reason": rng.choice(["stop", "tool_calls", "length", "incomplete", None, 5])}]}
    if rng.random() < 0.3:
        reply["usage"] = rng.choice([{"prompt_tokens": 3, "completion_tokens": 2}, _odd(rng)])
    return reply


def _random_message(rng):
    roll = rng.random()
    text = rng.choice(["hi", "", "\ud800", "ok", "x" * 30])
    if roll < 0.25:
        return UserMessage([TextContent(text)], name=rng.choice([None, "ok_name", "bad name!", ""]))
    if roll < 0.55:
        calls = [ToolCall(rng.choice(["c1", "c2", "dup", "", "x" * 50]), rng.choice(["get_time", "web.search", ""]),
                          rng.choice([{}, {"q": math.nan}, {"b": b"\x01"}, {"city": "Lima"}]))
                 for _ in range(rng.choice([0, 1, 2]))]
        content = [TextContent(text)] if rng.random() < 0.5 else []
        if rng.random() < 0.2:
            content.insert(0, ReasoningContent("r"))
        return AssistantMessage(content, tool_calls=calls,
                                extra=rng.choice([{}, {"score": math.nan}, {"refusal": None}, {"audio": b"x"}]))
    if roll < 0.85:
        return ToolResultMessage(rng.choice(["c1", "c2", "dup", "zz"]), [TextContent(text)])
    if roll < 0.93:
        return UserMessage([ImageContent(rng.choice(["https://example.org/a.png", "data:image/png;base64,AAAA"]))])
    from yiemagent.messages import SystemMessage

    return SystemMessage(text)


def _random_schema(rng, depth=3):
    roll = rng.random()
    if depth <= 0 or roll < 0.3:
        return rng.choice([{"type": "array"}, {"type": ["array", "null"]}, {"type": "string"}, {},
                           {"type": "number", "default": math.nan}, True, [], None, {"required": None}])
    if roll < 0.6:
        return {"type": "object", "properties": {rng.choice("abcd"): _random_schema(rng, depth - 1)
                                                 for _ in range(rng.randint(0, 3))},
                "required": rng.choice([["a"], None, [1], "a"])}
    if roll < 0.8:
        return {"type": "array", "items": _random_schema(rng, depth - 1)}
    return {"anyOf": [_random_schema(rng, depth - 1) for _ in range(rng.randint(0, 2))]}


_WINDOWS = [None, lambda h: h[-3:], lambda h: h[-1:], lambda h: h[2:], lambda h: h[::2],
            lambda h: list(reversed(h)), lambda h: [m for m in h if not isinstance(m, ToolResultMessage)]]


def random_case(rng):
    """One case for ``check_one``, drawn with ``rng`` (a ``random.Random``)."""
    history = [_random_message(rng) for _ in range(rng.randint(0, 8))]
    raw = []
    for _ in range(rng.randint(0, 5)):
        message = {"role": rng.choice(["user", "system", "developer", "assistant", "tool"])}
        for key in rng.sample(["content", "tool_calls", "tool_call_id", "name", "refusal", "extra"], rng.randint(0, 4)):
            message[key] = {"content": lambda: rng.choice(_CONTENTS), "tool_calls": lambda: [_raw_call(rng)],
                            "tool_call_id": lambda: rng.choice(_IDS)}.get(key, lambda: _odd(rng))()
        raw.append(message)
    roll = rng.random()
    if roll < 0.4:
        state = json.dumps({"version": 1, "history": [message_to_dict(m) for m in history], "usage": {},
                            "system_prompt": None}, default=repr)
    elif roll < 0.7:
        state = json.dumps({"version": 1, "history": raw, "usage": rng.choice([{}, {"a": 1}, [], None]),
                            "system_prompt": rng.choice([None, "s", 5])}, default=repr)
    else:
        state = json.dumps(_odd(rng), default=repr)
    return {"history": history, "replies": [_random_reply(rng) for _ in range(rng.randint(1, 4))],
            "window": rng.choice(_WINDOWS), "raw": raw, "schema": _random_schema(rng), "state": state}
