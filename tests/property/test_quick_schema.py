"""Quick verdicts never differ from the full checks they skip (issue 26).

The quick argument check never says "valid" where jsonschema says "invalid"; the guard's quick verdict on a
plain message is the full checks' verdict.

``yiemagent.tools.quick_schema.quick_check`` lets plainly valid arguments skip jsonschema; this draws plain
schemas (and some that are not plain) and JSON-like arguments, and compares with jsonschema's own verdict.
"""

import jsonschema
from hypothesis import example, given
from hypothesis import strategies as st

from yiemagent import AgentTool, ToolArgumentsError
from yiemagent.messages import repair
from yiemagent.tools.quick_schema import quick_check

from .wild import raw_message_dicts

TYPES = ["string", "integer", "number", "boolean", "null"]
NAMES = st.sampled_from(["a", "b", "city", "n", "x"])
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False),
                   st.sampled_from([1.0, 2.5, -0.0, 3.0]), st.text(max_size=3), st.lists(st.integers(), max_size=2),
                   st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
PROPERTY = st.one_of(
    st.builds(lambda t: {"type": t}, st.sampled_from(TYPES)),
    st.builds(lambda ts: {"type": ts, "description": "d"}, st.lists(st.sampled_from(TYPES), min_size=1, max_size=3)),
    st.just({}),
    st.just({"type": "string", "enum": ["x"]}),  # not plain: jsonschema decides
    st.just({"type": "integer", "minimum": 0}),  # not plain
)
SCHEMAS = st.builds(
    lambda props, required, extra: {"type": "object", "properties": props, "required": required,
                                    **({} if extra is None else {"additionalProperties": extra})},
    st.dictionaries(NAMES, PROPERTY, max_size=4), st.lists(NAMES, max_size=3, unique=True),
    st.one_of(st.none(), st.booleans()))


@given(SCHEMAS, st.one_of(st.dictionaries(NAMES, VALUES, max_size=4), VALUES))
def test_quick_check_agrees_with_jsonschema_whenever_it_says_valid(schema, arguments):
    check = quick_check(schema)
    valid = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    if check is not None and check(arguments):
        assert valid, (schema, arguments)
    if check is not None and valid and isinstance(arguments, dict):
        assert check(arguments), (schema, arguments)  # plain schemas: the quick check is exact


def test_integers_written_as_floats_and_booleans_are_told_apart_as_jsonschema_does():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
              "additionalProperties": False}
    check = quick_check(schema)
    assert check is not None
    assert check({"n": 3}) and check({"n": 3.0})
    assert not check({"n": True}) and not check({"n": 2.5}) and not check({"n": 1, "m": 2}) and not check({})


def test_schemas_outside_the_plain_kind_get_no_quick_check_and_errors_still_name_the_path():
    assert quick_check({"type": "object", "properties": {"q": {"type": "string", "pattern": "^a"}}}) is None
    assert quick_check({"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"}) is None
    tool = AgentTool("t", "d", {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
                     lambda call_id, arguments, event: "ok")
    tool.validate({"n": 1})
    try:
        tool.validate({"n": "one"})
    except ToolArgumentsError as exc:
        assert exc.errors == ["$.n: 'one' is not of type 'integer'"]
    else:
        raise AssertionError("invalid arguments passed")


@example({"role": "user", "content": "hi"})
@example({"role": "tool", "tool_call_id": "c1", "content": "ok"})
@example({"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "noop", "arguments": '{"i": 1}'}}]})
@example({"role": "assistant", "content": "", "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "bad.name", "arguments": "{}"}}]})
@example({"role": "assistant", "content": "x", "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "[1]"}}]})
@example({"role": "user", "content": "\ud800"})
@given(raw_message_dicts)
def test_the_guards_quick_verdict_on_a_plain_message_is_the_full_checks_verdict(message):
    """``repair._plain`` lets a message the formatter made skip the full checks: it must pass them unchanged."""
    if not isinstance(message, dict) or message.get("role") not in repair._ROLES or not repair._plain(
            message, message["role"]):
        return
    full = repair._check_full(message, 0)
    assert full.message is message and full.repairs == [] and full.renamed == {}
