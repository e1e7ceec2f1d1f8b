"""A strict validator of OpenAI chat requests that the tests carry: the request guard's oracle.

Stricter than most servers: what passes here is accepted by OpenAI, vLLM,
llama.cpp and LM Studio alike. ``validate(messages)`` checks the messages,
``validate_tools(tools)`` the function tools and ``validate_request(messages,
tools)`` both; each raises ``AssertionError`` naming the first problem.

Rules (each one a 400 from some real endpoint):

* provider fields (``reasoning_details``, ``thinking_blocks``; a call's
  ``extra_content``, ``thought_signature``) only with ``dialects=True``: a
  provider reads back what it attached, no other endpoint is asked to;
* the body is RFC 8259 JSON: no ``NaN``/``Infinity``, only string keys, no
  lone surrogates (``json.dumps(..., allow_nan=False)`` and UTF-8 encodable);
* at least one message in a request (``validate`` also takes an empty history);
  each has a known role and only the keys its role allows;
* user content: a string or a non-empty list of ``text``/``image_url`` parts;
  system/developer/tool content: a string or a non-empty list of text parts;
  ``name`` matches ``^[a-zA-Z0-9_-]{1,64}$``;
* assistant: ``content`` null only with ``tool_calls``; ``tool_calls`` a
  non-empty list of exactly ``{id, type: "function", function: {name,
  arguments}}``, ids non-empty, at most 40 characters and unique in the request, names matching the
  pattern, arguments a JSON object text;
* tool messages come right after the assistant message with their call, one
  per call, in the order of the calls; no call is left unanswered;
* tools: ``{"type": "function", "function": {"name", "description"?,
  "parameters"?, "strict"?}}``, unique names matching the pattern, parameters
  an object schema (``"type": "object"``) in which every array schema, at any
  depth, has ``items``, ``required`` is a list of names and every property is a
  schema; descriptions of at most 1024 characters.
"""

import json
import math
import re

ROLES = {"system", "developer", "user", "assistant", "tool"}
KEYS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "tool_calls", "name", "refusal", "reasoning_content", "reasoning"},
    "tool": {"role", "tool_call_id", "content"},
}
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
DIALECT_MESSAGE_KEYS = {"reasoning_details", "thinking_blocks"}
"""With ``dialects=True``: provider fields (yiemagent.formats.dialects) a provider attached and reads back."""
DIALECT_CALL_KEYS = {"extra_content", "thought_signature"}


def _no_constant(name):
    raise AssertionError(f"{name} is not JSON")


def strict_json(value, where="request"):
    """The value is RFC 8259 JSON: no NaN/Infinity, string keys only, UTF-8 encodable."""
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"{where}: not JSON: {exc}") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise AssertionError(f"{where}: not UTF-8 encodable: {exc}") from None

    def keys(node):
        if isinstance(node, dict):
            for k, v in node.items():
                assert isinstance(k, str), f"{where}: non-string key {k!r}"
                keys(v)
        elif isinstance(node, list):
            for v in node:
                keys(v)
        elif isinstance(node, float):
            assert math.isfinite(node), f"{where}: {node} is not JSON"
    keys(value)


def _text_parts(content, where):
    assert isinstance(content, list) and content, f"{where}: content must be a string or a non-empty list of parts"
    for part in content:
        assert isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str) \
            and set(part) == {"type", "text"}, f"{where}: only text parts allowed here, got {part!r:.80}"


def validate(messages, dialects=False):
    """``dialects=True`` also accepts the provider fields of ``DIALECT_*_KEYS`` (sent back to the provider
    that attached them: Gemini's ``extra_content``, OpenRouter's ``reasoning_details``...).
    """
    assert isinstance(messages, list), "messages must be a list"
    strict_json(messages, "messages")
    seen_ids = set()
    pending = []  # ids the next messages must answer, in order
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        assert isinstance(message, dict), f"{where}: not an object"
        role = message.get("role")
        assert role in ROLES, f"{where}: bad role {role!r}"
        allowed = KEYS[role] | (DIALECT_MESSAGE_KEYS if dialects and role == "assistant" else set())
        assert set(message) <= allowed, f"{where}: unknown keys {set(message) - allowed}"
        if pending:
            assert role == "tool", f"{where}: {role} message while tool calls {pending} are unanswered"
        if "name" in message:
            assert isinstance(message["name"], str) and NAME.match(message["name"]), \
                f"{where}: bad name {message['name']!r}"
        content = message.get("content")
        if role in ("system", "developer"):
            assert isinstance(content, str) or _text_parts(content, where) is None
        elif role == "user":
            if not isinstance(content, str):
                assert isinstance(content, list) and content, f"{where}: user content must be a string or parts"
                for part in content:
                    assert isinstance(part, dict), f"{where}: part must be an object"
                    kind = part.get("type")
                    assert kind in ("text", "image_url"), f"{where}: bad part type {kind!r}"
                    if kind == "text":
                        assert isinstance(part.get("text"), str) and set(part) == {"type", "text"}
                    else:
                        assert set(part) == {"type", "image_url"} and isinstance(part["image_url"], dict)
                        assert isinstance(part["image_url"].get("url"), str) and part["image_url"]["url"]
                        assert set(part["image_url"]) <= {"url", "detail"}
                        assert part["image_url"].get("detail", "auto") in ("low", "high", "auto")
        elif role == "assistant":
            calls = message.get("tool_calls")
            if calls is not None:
                assert isinstance(calls, list) and calls, f"{where}: tool_calls must be a non-empty list"
            assert "content" in message or calls, f"{where}: content is required without tool_calls"
            if content is None:
                assert calls, f"{where}: content null needs tool_calls"
            elif not isinstance(content, str):
                _text_parts(content, where)
            for key in ("reasoning_content", "reasoning", "refusal"):
                assert message.get(key) is None or isinstance(message[key], str), f"{where}: {key} must be text"
            for call in calls or []:
                call_keys = {"id", "type", "function"}
                assert isinstance(call, dict) and call_keys <= set(call) <= call_keys | (
                    DIALECT_CALL_KEYS if dialects else set()), \
                    f"{where}: tool call keys {set(call) if isinstance(call, dict) else call!r}"
                assert isinstance(call["id"], str) and call["id"], f"{where}: empty tool call id"
                assert len(call["id"]) <= 40 or (dialects and "__thought__" in call["id"]), \
                    f"{where}: tool call id longer than 40 characters"
                assert call["id"] not in seen_ids, f"{where}: duplicate tool call id {call['id']!r}"
                seen_ids.add(call["id"])
                assert call["type"] == "function"
                fn = call["function"]
                assert isinstance(fn, dict) and set(fn) == {"name", "arguments"}, f"{where}: function keys"
                assert isinstance(fn["name"], str) and NAME.match(fn["name"]), \
                    f"{where}: tool call name {fn['name']!r} does not match {NAME.pattern}"
                assert isinstance(fn["arguments"], str), f"{where}: arguments must be a JSON string"
                parsed = json.loads(fn["arguments"], parse_constant=_no_constant)
                assert isinstance(parsed, dict), f"{where}: arguments must be a JSON object"
                pending.append(call["id"])
        elif role == "tool":
            assert pending, f"{where}: tool message without a preceding tool call"
            assert message.get("tool_call_id") == pending[0], \
                f"{where}: answers {message.get('tool_call_id')!r}, expected {pending[0]!r}"
            pending.pop(0)
            assert isinstance(content, str) or _text_parts(content, where) is None
    assert not pending, f"tool calls {pending} are never answered"


_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
        "additionalItems", "unevaluatedItems", "unevaluatedProperties")


def _schema_arrays_have_items(schema, where):
    """Walk the schema as JSON Schema (subschemas only, never data such as enum or default)."""
    stack = [(schema, where)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, bool):
            continue
        assert isinstance(node, dict), f"{path}: not a schema: {node!r:.60}"
        kind = node.get("type")
        if kind == "array" or (isinstance(kind, list) and "array" in kind):
            assert "items" in node, f"{path}: array schema missing items"
        if "required" in node:
            assert isinstance(node["required"], list) and all(isinstance(r, str) for r in node["required"]), \
                f"{path}: required must be a list of names"
        for key in _MAPS:
            if key in node:
                assert isinstance(node[key], dict), f"{path}/{key}: must be an object"
                stack.extend((v, f"{path}/{key}/{k}") for k, v in node[key].items())
        for key in _LISTS:
            if isinstance(node.get(key), list):
                stack.extend((v, f"{path}/{key}/{i}") for i, v in enumerate(node[key]))
        for key in _ONE:
            sub = node.get(key)
            if isinstance(sub, (dict, bool)):
                stack.append((sub, f"{path}/{key}"))
            elif isinstance(sub, list) and key == "items":
                stack.extend((v, f"{path}/items/{i}") for i, v in enumerate(sub))


def validate_tools(tools):
    assert isinstance(tools, list), "tools must be a list"
    strict_json(tools, "tools")
    names = set()
    for index, spec in enumerate(tools):
        where = f"tools[{index}]"
        assert isinstance(spec, dict) and spec.get("type") == "function" and set(spec) == {"type", "function"}, \
            f"{where}: not a function tool"
        fn = spec["function"]
        assert isinstance(fn, dict) and set(fn) <= {"name", "description", "parameters", "strict"}, \
            f"{where}: function keys {set(fn) if isinstance(fn, dict) else fn!r}"
        assert isinstance(fn.get("name"), str) and NAME.match(fn["name"]), f"{where}: bad name {fn.get('name')!r}"
        assert fn["name"] not in names, f"{where}: duplicate tool name {fn['name']!r}"
        names.add(fn["name"])
        assert "description" not in fn or (isinstance(fn["description"], str) and len(fn["description"]) <= 1024), \
            f"{where}: description must be text of at most 1024 characters"
        if "parameters" in fn:
            params = fn["parameters"]
            assert isinstance(params, dict) and params.get("type") == "object", \
                f"{where}: parameters must be an object schema"
            _schema_arrays_have_items(params, f"{where}.parameters")


def validate_request(messages, tools=(), dialects=False):
    assert isinstance(messages, list) and messages, "a request needs at least one message"
    validate(messages, dialects=dialects)
    validate_tools(list(tools or []))
