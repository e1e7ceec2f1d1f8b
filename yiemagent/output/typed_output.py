"""Typed final answers: ``agent.ask(text, output_type=T)`` gives ``answer["output"]``, an instance of ``T``.

``T`` is a dataclass (parsed with ``dataclasses-json``: nested dataclasses,
``Enum``, ``Optional``, ``list``), a ``TypedDict`` (a ``dict``), a JSON Schema
``dict`` (a JSON value, usually a ``dict``) or a pydantic ``BaseModel`` when
pydantic is installed (``model_json_schema`` / ``model_validate``; pydantic is
imported only when such a type is given). ``output_spec(T)`` makes the
``OutputSpec``: the JSON Schema, its name and how to parse.

How the model is asked (``output_mode``):

* ``"response_format"``: every request carries the server's structured-output
  field ``response_format: {"type": "json_schema", "json_schema": {"name",
  "schema", "strict"}}`` (OpenAI Chat Completions; vLLM, llama.cpp constrain
  decoding to it), tools or not: OpenAI lets a tool call bypass it, but a
  server that constrains every token (vLLM, llama.cpp) then cannot call tools
  (openai-agents issue #3709). Needs an ``llm_call`` that takes
  ``response_format=`` (``yiemagent.formats.llm.accepts_keyword``): ``OpenAIChat``,
  ``fallback_llm``.
* ``"tool"``: a tool ``final_answer`` (``output_tool_name``; ``final_answer_2``
  ... when a tool of that name exists) whose ``inputSchema`` is the output
  schema (wrapped as ``{"response": <schema>}`` when the schema is not an
  object) is offered with the agent's tools; the run ends when it is called
  with valid arguments (the other calls of that reply run and are answered
  too). A text answer that parses as valid JSON is accepted as well; other text
  gets a retry message asking for the tool. On the last turn (sent without
  tools) the model answers in JSON text.
* ``"prompted"``: the schema goes into the system message and the JSON is read
  from the text answer (Markdown ``json`` code fences and prose around one object tolerated).
* ``"auto"`` (the default): when the ``llm_call`` takes ``response_format``,
  requests that offer no tools carry it (no tools at all, the last turn, a
  retry); requests that offer tools go without it, with the schema in the
  system message, so tools stay callable on any server; a text answer that
  fails validation is retried with tools off and ``response_format`` on. When
  the ``llm_call`` does not take it: ``"tool"``.

In every mode the answer is validated with ``jsonschema``, converted to ``T``
and given to each of ``output_validators`` (``fn(output) -> None``, raising
``yiemagent.ModelRetry("why")`` to reject it). A failure is sent back to the
model (a user message after a text answer; the error result of the
``final_answer`` call) and the model tries again, up to ``output_retries``
times; after that the run ends with status ``output_invalid`` and the answer
dict's ``error`` says why. The history stays valid either way (every tool call
answered).

Durable runs: the spec's JSON form (``to_inbox``) is stored with the input in
the store's inbox; a worker that recovers the input validates against that
schema and returns ``T`` when its own agent has the same schema, else the
validated JSON (a ``dict``). Stored answers keep ``output`` as JSON.

Peers: pydantic-ai ``output_type``/``ModelRetry``, openai-agents ``output_type``,
LangChain ``response_format`` (``ToolStrategy``/``ProviderStrategy``). Spec:
JSON Schema 2020-12; OpenAI structured outputs (``response_format``).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import typing
from collections.abc import Callable, Iterable
from typing import Any, Literal

import jsonschema

from .._internal.checks import check_int, one_of
from .._internal.jsonload import DEFAULT_MAX_DEPTH, check_schema_depth, loads_bounded, nesting_exceeds
from ..exceptions import ConfigError, ModelRetry
from ..tools.schema_checks import pattern_budget, safe_validator_class
from ..tools.type_schema import is_pydantic, type_schema

__all__ = ["INBOX_KEY", "OUTPUT_MODES", "OutputInvalid", "OutputMode", "OutputSpec", "inbox_message", "output_spec",
           "parse_json_text", "restore_output", "schema_of", "storable_answer", "to_json_value"]

OutputMode = Literal["auto", "response_format", "tool", "prompted"]
OUTPUT_MODES: tuple[str, ...] = ("auto", "response_format", "tool", "prompted")
INBOX_KEY = "yiemagent_output"
"""Key of the output spec in an inbox message dict (the store keeps it with the input)."""


class OutputInvalid(Exception):
    """An answer that does not validate; ``str(exc)`` is the message sent back to the model."""


def schema_of(output_type: Any) -> tuple[str, dict[str, Any]]:
    """``(name, JSON Schema)`` of ``output_type`` (see the module docstring for what it may be).

    Raises:
        ConfigError: a type with no JSON Schema, or a schema dict that is not a valid JSON Schema.
    """
    if output_type is str:  # the answer is text already; a JSON string would be asked of the model
        raise ConfigError("output_type=str: every answer is text already (``answer['content']``); leave "
                          "output_type out, or give a dataclass, TypedDict, JSON Schema dict or pydantic model")
    if isinstance(output_type, dict):
        schema = output_type
        name = str(schema.get("title") or "output")
    else:
        schema = type_schema(output_type, structured=True, what="output_type")
        name = str(getattr(output_type, "__name__", "output"))
    check_schema_depth(schema, "output_type's JSON Schema")  # ConfigError, never RecursionError
    try:
        safe_validator_class(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise ConfigError(f"output_type: not a valid JSON Schema: {exc.message}") from exc
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "output", schema


def _strict_ok(schema: Any) -> bool:
    """True when OpenAI's ``strict`` structured outputs accept ``schema`` (every object closed, all required)."""
    if isinstance(schema, list):
        return all(_strict_ok(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or set(schema.get("required") or ()) != set(properties):
            return False
    return all(_strict_ok(v) for k, v in schema.items() if k not in ("enum", "const", "default", "examples"))


def to_json_value(value: Any) -> Any:
    """``value`` (a dataclass or pydantic instance, a dict, ...) as plain JSON data (Enum -> value)."""
    if is_pydantic(type(value)):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)

    def default(item: Any) -> Any:
        if isinstance(item, enum.Enum):
            return item.value
        if isinstance(item, (set, frozenset, tuple)):
            return list(item)
        isoformat = getattr(item, "isoformat", None)
        return isoformat() if callable(isoformat) else str(item)

    return json.loads(json.dumps(value, default=default))


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def parse_json_text(text: str) -> Any:
    """The JSON value of a text answer: the whole text, a ``json`` fence, or the first ``{...}``/``[...]`` in it.

    Raises:
        OutputInvalid: no JSON value found (the message says so).
    """
    candidates = [text.strip(), *(m.strip() for m in _FENCE.findall(text))]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            return loads_bounded(candidate)
        except ValueError:
            pass
    for index, char in enumerate(text):
        if char in "{[":
            try:
                value = decoder.raw_decode(text, index)[0]
            except RecursionError:  # prose, then a value nested past the decoder's stack
                raise OutputInvalid(f"the answer's JSON is nested deeper than {DEFAULT_MAX_DEPTH} levels") from None
            except ValueError:
                continue
            if nesting_exceeds(value, DEFAULT_MAX_DEPTH):
                raise OutputInvalid(f"the answer's JSON is nested deeper than {DEFAULT_MAX_DEPTH} levels")
            return value
    preview = " ".join(text.split())[:120]
    raise OutputInvalid(f"the answer is not JSON (it begins {preview!r})" if preview else "the answer is empty")


@dataclasses.dataclass(frozen=True)
class OutputSpec:
    """What a typed run must answer and how (made by ``output_spec``)."""

    name: str
    """The schema's name (``json_schema.name``; the type's ``__name__``)."""
    schema: dict[str, Any]
    """The JSON Schema the answer must match."""
    output_type: Any = None
    """What ``parse`` returns: an instance of it; None (a schema only, e.g. recovered from a store): the JSON."""
    mode: OutputMode = "auto"
    retries: int = 2
    """Answers that fail validation sent back to the model, at most, before ``output_invalid``."""
    validators: tuple[Callable[[Any], object], ...] = ()

    def __post_init__(self) -> None:
        """``mode`` and ``retries`` checked when given (fail closed), as ``output_spec`` checks them."""
        one_of("output_mode", self.mode, OUTPUT_MODES)
        check_int("output_retries", self.retries, minimum=0)

    @property
    def wrapped(self) -> bool:
        """True when the tool form needs ``{"response": ...}`` around the answer (a schema that is not an object)."""
        return self.schema.get("type") != "object"

    def tool_schema(self) -> dict[str, Any]:
        """``inputSchema`` of the ``final_answer`` tool."""
        if not self.wrapped:
            return self.schema
        return {"type": "object", "properties": {"response": self.schema}, "required": ["response"],
                "additionalProperties": False}

    def response_format(self) -> dict[str, Any]:
        """The request's ``response_format`` (OpenAI structured outputs; ``strict`` when the schema allows it)."""
        return {"type": "json_schema", "json_schema": {"name": self.name, "schema": self.schema,
                                                         "strict": _strict_ok(self.schema)}}

    def instruction(self, *, tool_name: str | None = None) -> str:
        """The system-message text that asks for the answer (the schema, or the tool to call)."""
        if tool_name is not None:
            return f"When you have the final answer (after the tool calls you need), call the tool {tool_name} with it."
        return (f"When you have the final answer (after the tool calls you need), give it as one JSON value (no "
                f"other text) matching this JSON Schema ({self.name}):\n{json.dumps(self.schema, ensure_ascii=False)}")

    def parse(self, value: Any, *, run_validators: bool = True,
              runner: Callable[[Callable[[], object]], object] | None = None) -> Any:
        """Validate the JSON ``value``; return it as ``output_type`` (run the validators first).

        ``runner``: runs each validator call (the loop passes one that an abort, and so a
        deadline, cuts); None: here.

        Raises:
            OutputInvalid: the schema's errors, the type's own validation error, or a
                validator's ``ModelRetry`` message.
        """
        validator = safe_validator_class(self.schema)(self.schema)
        try:
            with pattern_budget():
                errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        except RecursionError as exc:
            raise OutputInvalid(f"the schema cannot be evaluated: {exc}") from None
        if errors:
            raise OutputInvalid("; ".join(f"{e.json_path}: {e.message}" for e in errors[:8]))
        output = self._convert(value)
        if run_validators:
            for check in self.validators:
                try:
                    if runner is None:
                        check(output)
                    else:
                        runner(lambda check=check: check(output))  # type: ignore[misc]
                except ModelRetry as exc:
                    raise OutputInvalid(str(exc) or "the output validator rejected the answer") from None
        return output

    def _convert(self, value: Any) -> Any:
        tp = self.output_type
        try:
            if tp is None or isinstance(tp, dict) or typing.is_typeddict(tp):
                return value
            if is_pydantic(tp):
                return tp.model_validate(value)
            if dataclasses.is_dataclass(tp):
                from dataclasses_json import DataClassJsonMixin

                return DataClassJsonMixin.from_dict.__func__(tp, value)  # type: ignore[attr-defined]
        except ModelRetry as exc:
            raise OutputInvalid(str(exc)) from None
        except Exception as exc:  # pydantic's ValidationError, a dataclass __post_init__ check
            raise OutputInvalid(f"{type(exc).__name__}: {exc}"[:1000]) from None
        return value

    def with_type(self, output_type: Any) -> OutputSpec:
        """The same settings for another ``output_type`` (``ask(..., output_type=T)`` over the agent's)."""
        name, schema = schema_of(output_type)
        return dataclasses.replace(self, name=name, schema=schema, output_type=output_type)

    def to_inbox(self) -> dict[str, Any]:
        """JSON form kept with a stored input (``INBOX_KEY``): name, schema, mode, retries."""
        return {"name": self.name, "schema": self.schema, "mode": self.mode, "retries": self.retries}

    @classmethod
    def from_inbox(cls, data: Any, known: OutputSpec | None = None) -> OutputSpec | None:
        """The spec stored with an input (``to_inbox``), or None when ``data`` is not one.

        ``known`` (the recovering agent's spec) when its schema is the same, else a
        schema-only spec (answers are the validated JSON).
        """
        if not isinstance(data, dict) or not isinstance(data.get("schema"), dict):
            return None
        if known is not None and known.schema == data["schema"]:
            return known
        mode = data.get("mode") if data.get("mode") in OUTPUT_MODES else "auto"
        stored = data.get("retries")
        retries = max(0, stored) if isinstance(stored, int) and not isinstance(stored, bool) else 2
        return cls(name=str(data.get("name") or "output"), schema=data["schema"], mode=mode,  # type: ignore[arg-type]
                   retries=retries)


def output_spec(
    output_type: Any, *, mode: OutputMode = "auto", retries: int = 2,
    validators: Iterable[Callable[[Any], object]] = (),
) -> OutputSpec:
    """The ``OutputSpec`` of ``output_type`` (a dataclass, TypedDict, JSON Schema dict or pydantic model).

    Raises:
        ConfigError: a type with no JSON Schema, ``str`` (the answer is text already), an unknown
            ``mode``, ``retries`` not an int >= 0, a validator that is not callable.
    """
    one_of("output_mode", mode, OUTPUT_MODES)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"output_retries must be an int >= 0, not {retries!r}")
    checks = tuple(validators)
    for check in checks:
        if not callable(check):
            raise ConfigError(f"each of output_validators must be callable, not {check!r:.60}")
    name, schema = schema_of(output_type)
    return OutputSpec(name=name, schema=schema, output_type=output_type, mode=mode, retries=retries,
                      validators=checks)


def storable_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` as a store keeps it: ``output`` as plain JSON (a dataclass or model becomes a dict)."""
    if "output" not in answer:
        return answer
    return {**answer, "output": to_json_value(answer["output"])}


def restore_output(answer: dict[str, Any], spec: OutputSpec | None) -> dict[str, Any]:
    """A stored answer with ``output`` as ``spec``'s type again (its validators are not run again)."""
    if spec is None or spec.output_type is None or "output" not in answer:
        return answer
    try:
        return {**answer, "output": spec.parse(answer["output"], run_validators=False)}
    except OutputInvalid:  # stored under another schema: left as JSON
        return answer


def inbox_message(message: dict[str, Any], spec: OutputSpec | None) -> dict[str, Any]:
    """An inbox message dict carrying ``spec`` (``INBOX_KEY``), so a recovering worker knows the schema."""
    return message if spec is None else {**message, INBOX_KEY: spec.to_inbox()}
