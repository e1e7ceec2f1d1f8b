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
    assert waiter.input_schema == {"type": "object", "required": ["seconds"], "properties": {"seconds": seconds}}
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
