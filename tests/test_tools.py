"""Tools, @tool and the registry (yiemagent.tools)."""

import enum
import json
import threading
from typing import Annotated, Literal

import pytest

from yiemagent import (
    AgentTool,
    AgentToolResult,
    ConfigError,
    ToolArgumentsError,
    ToolExecutionError,
    ToolNotFoundError,
    ToolRegistry,
    tool,
)
from yiemagent.messages import ImageContent, TextContent
from yiemagent.tools import to_result


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


@tool
def forecast(city: str, days: int = 1, unit: Unit = Unit.C, tags: list[str] | None = None,
             mode: Literal["short", "long"] = "short") -> dict:
    """Get the forecast for a city.

    Longer text that is part of the description.

    Args:
        city: Name of the city,
            e.g. Paris.
        days: How many days ahead.
        unit: Celsius or Fahrenheit.
        tags: Optional labels.
        mode: Short or long text.
    """
    return {"city": city, "days": days}


def test_tool_decorator_builds_name_description_and_schema_from_the_function():
    """Name from the function, description before Args:, schema from annotations."""
    assert forecast.name == "forecast"
    assert forecast.description == "Get the forecast for a city.\n\nLonger text that is part of the description."
    schema = forecast.input_schema
    assert schema["required"] == ["city"]
    assert schema["properties"]["city"] == {"type": "string", "description": "Name of the city, e.g. Paris."}
    assert schema["properties"]["days"] == {"type": "integer", "description": "How many days ahead.", "default": 1}
    assert schema["properties"]["unit"] == {"enum": ["celsius", "fahrenheit"], "description": "Celsius or Fahrenheit."}
    assert schema["properties"]["tags"]["description"] == "Optional labels."
    assert schema["properties"]["tags"]["anyOf"] == [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
    assert schema["properties"]["mode"]["enum"] == ["short", "long"]


def test_annotated_description_and_abort_event_parameter():
    """Annotated[X, "text"] describes a parameter; abort_event is injected, not in the schema."""
    seen = {}

    @tool(name="wait_for", description="Wait.")
    def waiter(seconds: Annotated[float, "How long, in seconds."], abort_event: threading.Event) -> str:
        seen["event"] = abort_event
        return "ok"

    assert waiter.name == "wait_for" and waiter.description == "Wait."
    seconds = {"type": "number", "description": "How long, in seconds."}
    assert waiter.input_schema == {"type": "object", "required": ["seconds"], "properties": {"seconds": seconds},
                                   "additionalProperties": False}
    event = threading.Event()
    assert ToolRegistry([waiter]).call("wait_for", {"seconds": 1}, abort_event=event).text == "ok"
    assert seen["event"] is event


def test_unsupported_annotation_is_a_config_error():
    """A type with no JSON Schema equivalent is refused at decoration time."""
    with pytest.raises(ConfigError):
        @tool
        def bad(x: object) -> None:
            """Bad."""


def test_dict_and_list_results_become_json_text_with_characters_kept():
    """The contract: dict/list -> JSON text without \\u escapes."""
    assert to_result({"city": "Zürich", "temp": 3}).text == '{"city": "Zürich", "temp": 3}'
    assert to_result(["ä", 1]).text == '["ä", 1]'
    assert to_result("plain").text == "plain"
    assert to_result(None).text == ""
    image = ImageContent.from_base64("AAAA")
    assert to_result([TextContent("a"), image]).content == [TextContent("a"), image]


def test_registry_validates_arguments_with_jsonschema_before_running():
    """Validation failure is ToolArgumentsError with JSON paths; the tool does not run."""
    ran = []
    t = AgentTool("add", "Add.", {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                  lambda call_id, args, ev: ran.append(args) or args["a"])
    registry = ToolRegistry([t])
    with pytest.raises(ToolArgumentsError) as info:
        registry.call("add", {"a": "one"})
    assert info.value.errors == ["$.a: 'one' is not of type 'integer'"]
    assert info.value.tool_name == "add"
    assert ran == []
    assert registry.call("add", {"a": 2}).text == "2"


def test_registry_resolves_defs_and_refs_when_validating():
    """$defs/$ref schemas validate (C20 kind)."""
    schema = {"type": "object", "required": ["q"], "properties": {"q": {"$ref": "#/$defs/Query"}},
              "$defs": {"Query": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}}
    registry = ToolRegistry([AgentTool("find", "Find.", schema, lambda i, a, e: a["q"]["id"])])
    assert registry.call("find", {"q": {"id": 7}}).text == "7"
    with pytest.raises(ToolArgumentsError):
        registry.call("find", {"q": {}})


def test_unknown_tool_and_raising_tool_raise_documented_errors():
    """Public API raises; the loop turns these into error results."""
    def boom(call_id, args, event):
        raise RuntimeError("disk full")

    registry = ToolRegistry([AgentTool("boom", "Fails.", {"type": "object"}, boom)])
    with pytest.raises(ToolNotFoundError) as missing:
        registry.call("nope", {})
    assert "boom" in str(missing.value)
    with pytest.raises(ToolExecutionError) as failed:
        registry.call("boom", {}, tool_call_id="c9")
    assert isinstance(failed.value.__cause__, RuntimeError) and failed.value.tool_call_id == "c9"


def test_registration_is_idempotent_and_name_clashes_are_refused():
    """Same tool twice: no change; another tool under the same name: ConfigError."""
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    registry = ToolRegistry()
    first = registry.add(add)
    assert registry.add(add) is first and registry.add(first) is first
    assert registry.add(tool(add)) is first  # a fresh wrapper of the same function
    assert len(registry) == 1
    other = AgentTool("add", "Other.", {"type": "object"}, lambda i, a, e: 0)
    with pytest.raises(ConfigError):
        registry.add(other)
    assert registry.add(other, replace=True) is other


def test_invalid_input_schema_is_refused_at_construction():
    """A schema jsonschema cannot use is a ConfigError, not a failure at call time."""
    with pytest.raises(ConfigError):
        AgentTool("t", "T.", {"type": "objekt"}, lambda i, a, e: None)


def test_tools_convert_to_openai_function_tools():
    """OpenAI function-tool format."""
    assert json.loads(json.dumps(ToolRegistry([forecast]).to_openai()))[0]["function"]["name"] == "forecast"
    assert forecast.to_openai()["type"] == "function"
    assert forecast.to_openai()["function"]["parameters"] is forecast.input_schema


def test_agent_tool_result_accepts_a_string():
    """AgentToolResult("text") is one text part."""
    result = AgentToolResult("done", terminate=True)
    assert result.content == [TextContent("done")] and result.terminate and not result.is_error


def test_enum_and_int_parameters_arrive_as_the_annotation_promises():
    """An Enum parameter gets the member, not its value; an int parameter gets an int for 1.0."""
    seen = {}

    @tool
    def convert(unit: Unit, count: int, maybe: Unit | None = None) -> str:
        """Convert."""
        seen.update(unit=unit, count=count, maybe=maybe)
        return "ok"

    ToolRegistry([convert]).call("convert", {"unit": "fahrenheit", "count": 2.0, "maybe": None})
    assert seen == {"unit": Unit.F, "count": 2, "maybe": None}
    assert type(seen["count"]) is int


def test_extra_arguments_are_refused_before_the_function_runs():
    """@tool schemas have additionalProperties: false: an unknown argument is a validation error."""
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(ToolArgumentsError) as info:
        ToolRegistry([add]).call("add", {"a": 1, "b": 2, "c": 3})
    assert "'c' was unexpected" in str(info.value)


def test_names_openai_refuses_are_refused_at_construction():
    """A lambda's "<lambda>" (or any name outside [a-zA-Z0-9_-]{1,64}) is a ConfigError, with a hint."""
    with pytest.raises(ConfigError) as info:
        tool(lambda x: x)
    assert "name=" in str(info.value)
    assert tool(lambda x: x, name="identity").name == "identity"


def test_odd_return_values_become_valid_json_text():
    """Sets -> lists, bytes -> text, NaN -> null, enums -> values; never invalid JSON."""
    import json as _json

    assert _json.loads(to_result({"s": {3, 1, 2}, "u": Unit.C, "n": float("nan"), "t": (1, 2)}).text) == {
        "s": [1, 2, 3], "u": "celsius", "n": None, "t": [1, 2]}
    assert to_result(b"caf\xc3\xa9").text == "café"
    assert to_result(b"\xff\x00").text == "[2 bytes of binary data]"


def test_cap_result_cuts_long_results_with_a_visible_note():
    """Local tool results are capped like MCP ones (LoopConfig.max_result_chars)."""
    from yiemagent.tools import cap_result

    capped = cap_result(AgentToolResult("x" * 50), 10)
    assert capped.content[0].text == "x" * 10
    assert "50 characters; the first 10 are shown" in capped.text
    assert capped.details == {"truncated": {"chars": 50, "max_chars": 10}}
    assert cap_result(AgentToolResult("short"), 10).text == "short"


def test_issue_27_new_user_a_tool_without_docstring_or_annotations_is_not_accepted_silently(caplog):
    """Issue 27, a new user's first hour: a tool function without a docstring or annotations was accepted
    silently (the model then sees a bare name and may send anything). It still works, with a WARNING naming
    what is missing; a documented, typed tool logs nothing.
    """
    import logging

    from yiemagent import tool

    with caplog.at_level(logging.WARNING, logger="yiemagent.tools"):
        @tool
        def lookup(city):
            return city

        @tool
        def typed(city: str) -> str:
            """Look a city up."""
            return city

    texts = [r.getMessage() for r in caplog.records if r.name == "yiemagent.tools"]
    assert any("'lookup' has no docstring" in t for t in texts)
    assert any("'lookup': parameter(s) city have no type annotation" in t for t in texts)
    assert not any("'typed'" in t for t in texts)
    assert lookup.input_schema["properties"] == {"city": {}}
