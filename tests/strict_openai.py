"""A strict validator of OpenAI chat ``messages`` that the tests carry.

Stricter than most servers: what passes here is accepted by OpenAI, vLLM,
llama.cpp and LM Studio alike. ``validate(messages)`` raises ``AssertionError``
naming the first problem.
"""

import json

ROLES = {"system", "developer", "user", "assistant", "tool"}
ASSISTANT_KEYS = {"role", "content", "tool_calls", "name", "refusal", "reasoning_content", "reasoning",
                  "annotations", "audio"}


def _text_parts(content, where):
    assert isinstance(content, list), f"{where}: content must be a list of parts"
    for part in content:
        assert isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str), \
            f"{where}: only text parts allowed here, got {part!r:.80}"


def validate(messages):
    assert isinstance(messages, list), "messages must be a list"
    json.dumps(messages)  # plain JSON only
    seen_ids = set()
    pending = []  # ids the next messages must answer, in order
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        assert isinstance(message, dict), f"{where}: not an object"
        role = message.get("role")
        assert role in ROLES, f"{where}: bad role {role!r}"
        if pending:
            assert role == "tool", f"{where}: {role} message while tool calls {pending} are unanswered"
        if role in ("system", "developer"):
            content = message.get("content")
            assert isinstance(content, str) or _text_parts(content, where) is None
        elif role == "user":
            content = message.get("content")
            if not isinstance(content, str):
                assert isinstance(content, list) and content, f"{where}: user content must be a string or parts"
                for part in content:
                    kind = part.get("type")
                    assert kind in ("text", "image_url"), f"{where}: bad part type {kind!r}"
                    if kind == "text":
                        assert isinstance(part.get("text"), str)
                    else:
                        assert isinstance(part["image_url"].get("url"), str) and part["image_url"]["url"]
        elif role == "assistant":
            assert set(message) <= ASSISTANT_KEYS, f"{where}: unknown keys {set(message) - ASSISTANT_KEYS}"
            content = message.get("content")
            calls = message.get("tool_calls")
            if calls is not None:
                assert isinstance(calls, list) and calls, f"{where}: tool_calls must be a non-empty list"
            if content is None:
                assert calls, f"{where}: content null needs tool_calls"
            elif not isinstance(content, str):
                _text_parts(content, where)
            for call in calls or []:
                assert set(call) == {"id", "type", "function"}, f"{where}: tool call keys {set(call)}"
                assert isinstance(call["id"], str) and call["id"], f"{where}: empty tool call id"
                assert call["id"] not in seen_ids, f"{where}: duplicate tool call id {call['id']!r}"
                seen_ids.add(call["id"])
                assert call["type"] == "function"
                fn = call["function"]
                assert set(fn) == {"name", "arguments"} and isinstance(fn["name"], str)
                assert isinstance(fn["arguments"], str), f"{where}: arguments must be a JSON string"
                assert isinstance(json.loads(fn["arguments"]), dict), f"{where}: arguments must be a JSON object"
                pending.append(call["id"])
        elif role == "tool":
            assert pending, f"{where}: tool message without a preceding tool call"
            assert message.get("tool_call_id") == pending[0], \
                f"{where}: answers {message.get('tool_call_id')!r}, expected {pending[0]!r}"
            pending.pop(0)
            content = message.get("content")
            assert isinstance(content, str) or _text_parts(content, where) is None
    assert not pending, f"tool calls {pending} are never answered"
