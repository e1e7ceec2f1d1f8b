"""Tools: ``AgentTool``, the ``@tool`` decorator, results and the registry.

A tool is a name, a description, a JSON Schema for its arguments
(``input_schema``, MCP's ``inputSchema``) and an ``execute`` callable::

    execute(tool_call_id: str, arguments: dict, abort_event: threading.Event)
        -> AgentToolResult | str | dict | list | None

``ToolRegistry.call`` validates the arguments with ``jsonschema`` before
``execute`` runs, and turns whatever ``execute`` returns into an
``AgentToolResult``: a ``str`` becomes text, a ``dict``/``list`` becomes JSON
text written with the characters themselves (no ``\\u`` escapes).

Spec: OpenAI function tools (``{"type": "function", "function": {...}}``);
JSON Schema 2020-12 (``jsonschema`` picks the draft from ``$schema``).
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import logging
import math
import re
import threading
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, Union, overload

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from .exceptions import ConfigError, ToolArgumentsError, ToolExecutionError, ToolNotFoundError
from .messages import ImageContent, TextContent

__all__ = ["AgentTool", "AgentToolResult", "ToolRegistry", "cap_result", "report_progress", "to_result", "tool"]

logger = logging.getLogger("yiemagent.tools")

Execute = Callable[[str, dict[str, Any], threading.Event], Any]

_VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass
class AgentToolResult:
    """What a tool gives back to the model.

    ``content`` may be given as a string (one text part) or a list of
    ``TextContent`` / ``ImageContent``.
    """

    content: list[TextContent | ImageContent] = field(default_factory=list)
    """What the model sees."""
    is_error: bool = False
    """True when the tool failed; the model sees the content as an error report."""
    terminate: bool = False
    """True asks the run to end after this batch (only if every result of the batch asks)."""
    details: Any = None
    """Data for the application (hooks, events, state); never sent to the model."""

    if TYPE_CHECKING:  # the generated __init__ also takes a str (one text part); tell type checkers so

        def __init__(
            self, content: str | Sequence[TextContent | ImageContent] = ..., is_error: bool = False,
            terminate: bool = False, details: Any = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        if isinstance(self.content, str):
            self.content = [TextContent(self.content)]

    @property
    def text(self) -> str:
        """Text parts joined by newlines; images as short placeholders."""
        return "\n".join(c.text if isinstance(c, TextContent) else c.placeholder() for c in self.content)

    @classmethod
    def error(cls, message: str, details: Any = None) -> AgentToolResult:
        """An error result with one text part."""
        return cls([TextContent(message)], is_error=True, details=details)


_running = threading.local()


class _progress_reporter:
    """Context manager: while a tool runs on this thread, ``report_progress`` goes to ``callback``."""

    def __init__(self, callback: Callable[[Any], None]) -> None:
        self.callback = callback

    def __enter__(self) -> None:
        self.previous = getattr(_running, "report", None)
        _running.report = self.callback

    def __exit__(self, *exc: object) -> None:
        _running.report = self.previous


def report_progress(progress: Any) -> None:
    """Report progress from inside a running tool.

    Call it from a tool's ``execute`` (on the thread the agent runs it on);
    the agent sends a ``tool_execution_update`` event carrying ``progress``
    (any value, e.g. ``{"progress": 2, "total": 5}``). Outside a tool it does
    nothing. MCP tools forward the server's ``notifications/progress`` this way.
    """
    report = getattr(_running, "report", None)
    if report is not None:
        report(progress)


def to_result(value: Any) -> AgentToolResult:
    """Turn what ``execute`` returned into an ``AgentToolResult``.

    ``AgentToolResult`` passes through; ``str`` -> text; ``dict``/``list``/numbers
    -> JSON text (``ensure_ascii=False``); ``TextContent``/``ImageContent`` -> one
    part; ``None`` -> empty text.
    """
    if isinstance(value, AgentToolResult):
        return value
    if value is None:
        return AgentToolResult([TextContent("")])
    if isinstance(value, str):
        return AgentToolResult([TextContent(value)])
    if isinstance(value, (TextContent, ImageContent)):
        return AgentToolResult([value])
    if isinstance(value, list) and value and all(isinstance(v, (TextContent, ImageContent)) for v in value):
        return AgentToolResult(list(value))
    if isinstance(value, (bytes, bytearray)):
        return AgentToolResult([TextContent(_bytes_text(bytes(value)))])
    return AgentToolResult([TextContent(json.dumps(_jsonable(value), ensure_ascii=False, allow_nan=False))])


def _bytes_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"[{len(data)} bytes of binary data]"


def _jsonable(value: Any) -> Any:
    """``value`` made plain for JSON.

    Sets and tuples become lists, bytes text, enums their value, dataclasses
    dicts, NaN and infinity None, other objects ``str``.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [_jsonable(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, (bytes, bytearray)):
        return _bytes_text(bytes(value))
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    return str(value)


def cap_result(result: AgentToolResult, max_chars: int | None) -> AgentToolResult:
    """``result`` cut to ``max_chars`` characters (text plus image data), with a visible note.

    Beyond the cap, text is cut, images are replaced by their placeholder, and
    a last text part says ``[truncated: the tool result has N characters; the
    first M are shown]``; ``details`` gets ``{"truncated": {"chars": N,
    "max_chars": M}}`` when it is a dict or None. None: no cap.
    """
    if max_chars is None:
        return result
    parts = result.content
    total = sum(len(p.text) if isinstance(p, TextContent) else len(p.data or p.url) for p in parts)
    if total <= max_chars:
        return result
    budget = max(0, max_chars)
    kept: list[TextContent | ImageContent] = []
    for part in parts:
        if isinstance(part, TextContent):
            if budget > 0:
                kept.append(TextContent(part.text[:budget]))
            budget -= len(part.text)
        else:
            size = len(part.data or part.url)
            kept.append(part if size <= budget else TextContent(f"{part.placeholder()} (left out: over the size cap)"))
            budget -= size
    note = f"[truncated: the tool result has {total:,} characters; the first {max_chars:,} are shown]"
    kept.append(TextContent(note))
    details = result.details
    if details is None or isinstance(details, dict):
        details = {**(details or {}), "truncated": {"chars": total, "max_chars": max_chars}}
    return AgentToolResult(kept, is_error=result.is_error, terminate=result.terminate, details=details)


@dataclass
class AgentTool:
    """A tool the model can call.

    Contract of ``execute``: called on a worker thread with the call id, the
    validated arguments and the run's abort ``threading.Event`` (long tools
    should check it and return early). It may return an ``AgentToolResult``,
    ``str``, ``dict``, ``list`` or None; if it raises, the model gets an error
    result naming the exception and the run goes on.
    """

    name: str
    """``^[a-zA-Z0-9_-]{1,64}$`` is what OpenAI accepts."""
    description: str
    input_schema: dict[str, Any]
    """JSON Schema of the arguments object (MCP ``inputSchema``)."""
    execute: Execute = field(repr=False, compare=False)
    sequential: bool = False
    """True when this tool must not run at the same time as other tools."""
    idempotent: bool = False
    """True when running it again with the same arguments does no harm (a read, an upsert): a call
    interrupted by a crash is then run again on replay; else the model is told its effect is unknown."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _VALID_NAME.match(self.name):
            raise ConfigError(
                f"tool name {self.name!r} is not accepted by OpenAI-compatible servers: use 1-64 of "
                "a-z, A-Z, 0-9, _ and - (for @tool on a lambda, pass name=...)"
            )
        if self.input_schema is None:
            self.input_schema = {"type": "object", "properties": {}}
        if not isinstance(self.input_schema, dict):
            raise ConfigError(f"tool {self.name!r}: input_schema must be a dict")
        cls = jsonschema.validators.validator_for(self.input_schema)
        try:
            cls.check_schema(self.input_schema)
        except jsonschema.exceptions.SchemaError as exc:
            raise ConfigError(f"tool {self.name!r}: invalid input_schema: {exc.message}") from exc
        self._validator = cls(self.input_schema)

    def validate(self, arguments: dict[str, Any], tool_call_id: str = "") -> None:
        """Check ``arguments`` against ``input_schema``.

        Raises:
            ToolArgumentsError: with ``.errors`` = ``["<json path>: <message>", ...]``.
        """
        errors = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if errors:
            messages = [f"{e.json_path}: {e.message}" for e in errors]
            raise ToolArgumentsError(
                f"invalid arguments for tool {self.name!r}: " + "; ".join(messages),
                tool_name=self.name,
                tool_call_id=tool_call_id,
                errors=messages,
            )

    def to_openai(self) -> dict[str, Any]:
        """Return ``{"type": "function", "function": {"name", "description", "parameters"}}``."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema},
        }


class ToolRegistry:
    """The tools of one agent, by name.

    Registration is idempotent: adding the same tool again (same name,
    description and schema) changes nothing; a different tool under a taken
    name raises ``ConfigError`` unless ``replace=True``.

    Thread safety: safe to call from any thread.
    """

    def __init__(self, tools: Iterable[AgentTool] = ()) -> None:
        self._tools: dict[str, AgentTool] = {}
        self._lock = threading.Lock()
        for t in tools:
            self.add(t)

    def add(self, new: AgentTool | Callable[..., Any], *, replace: bool = False) -> AgentTool:
        """Register a tool (an ``AgentTool`` or a plain function, wrapped with ``@tool``)."""
        added: AgentTool = new if isinstance(new, AgentTool) else tool(new)
        with self._lock:
            old = self._tools.get(added.name)
            if old is not None and not replace:
                same = old is added or (
                    old.description == added.description and old.input_schema == added.input_schema
                    and old.execute == added.execute
                )
                if same:
                    return old
                raise ConfigError(f"a different tool named {added.name!r} is already registered")
            self._tools[added.name] = added
            return added

    def remove(self, name: str) -> None:
        """Unregister ``name`` (no error when absent)."""
        with self._lock:
            self._tools.pop(name, None)

    def get(self, name: str) -> AgentTool | None:
        """The tool named ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._tools)

    def __iter__(self) -> Iterator[AgentTool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def to_openai(self) -> list[dict[str, Any]]:
        """All tools in OpenAI function-tool format."""
        return [t.to_openai() for t in self]

    def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        tool_call_id: str = "",
        abort_event: threading.Event | None = None,
    ) -> AgentToolResult:
        """Validate ``arguments`` and run the tool.

        Returns:
            The tool's result (an error result if the tool itself reported one).

        Raises:
            ToolNotFoundError: ``name`` is not registered.
            ToolArgumentsError: ``arguments`` fail the tool's ``input_schema``.
            ToolExecutionError: ``execute`` raised; the original is ``__cause__``.
        """
        found = self._tools.get(name)
        if found is None:
            known = ", ".join(self._tools) or "none"
            raise ToolNotFoundError(
                f"unknown tool {name!r}; available tools: {known}", tool_name=name, tool_call_id=tool_call_id
            )
        found.validate(arguments, tool_call_id)
        try:
            value = found.execute(tool_call_id, arguments, abort_event or threading.Event())
        except Exception as exc:
            raise ToolExecutionError(
                f"tool {name!r} raised {type(exc).__name__}: {exc}", tool_name=name, tool_call_id=tool_call_id
            ) from exc
        return to_result(value)


# --------------------------------------------------------------------------- @tool

_SIMPLE_TYPES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    dict: {"type": "object"},
    list: {"type": "array"},
    type(None): {"type": "null"},
    Any: {},
}


def _schema_for(annotation: Any) -> dict[str, Any]:
    """JSON Schema for a Python type annotation."""
    if annotation is inspect.Parameter.empty:
        return {}
    if annotation in _SIMPLE_TYPES:
        return dict(_SIMPLE_TYPES[annotation])
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        schema = _schema_for(args[0])
        for meta in args[1:]:
            if isinstance(meta, str):
                schema["description"] = meta
        return schema
    if origin in (Union, types.UnionType):
        options = [_schema_for(a) for a in args]
        return options[0] if len(options) == 1 else {"anyOf": options}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset, Iterable) or annotation in (tuple, set):
        array: dict[str, Any] = {"type": "array"}
        if args and args[-1] is not Ellipsis:
            array["items"] = _schema_for(args[0])
        return array
    if origin is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = _schema_for(args[1])
        return schema
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [m.value for m in annotation]}
    raise ConfigError(f"@tool cannot describe the type {annotation!r} as JSON Schema")


def _split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Return (description, {param: description}) of a Google-style docstring."""
    doc = inspect.cleandoc(doc or "")
    params: dict[str, str] = {}
    match = re.search(r"^(Args|Arguments|Parameters):\s*$", doc, flags=re.MULTILINE)
    if not match:
        return doc.strip(), params
    description = doc[: match.start()].strip()
    current = None
    for line in doc[match.end():].splitlines():
        if line and not line[0].isspace():  # next section (Returns:, Raises:)
            break
        item = re.match(r"^\s{2,8}(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", line)
        if item:
            current = item.group(1)
            params[current] = item.group(3).strip()
        elif current and line.strip():
            params[current] += " " + line.strip()
    return description, params


def _converter(annotation: Any) -> Callable[[Any], Any] | None:
    """How to turn a validated JSON value into what the annotation promises (Enum members, int)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _converter(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _converter(options[0]) if len(options) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return lambda value: annotation(value) if value is not None else None
    if annotation is int:  # JSON Schema counts 1.0 as an integer
        return lambda value: int(value) if isinstance(value, float) and value.is_integer() else value
    return None


class _FunctionExecutor:
    """``execute`` of a ``@tool`` function; equal when it wraps the same function.

    Validated arguments are passed as keyword arguments, converted where the
    annotation asks (an ``Enum`` parameter gets the member, an ``int`` one an int).
    """

    def __init__(
        self, func: Callable[..., Any], wants_abort: bool, converters: dict[str, Callable[[Any], Any]] | None = None
    ) -> None:
        self.func = func
        self.wants_abort = wants_abort
        self.converters = converters or {}

    def __call__(self, tool_call_id: str, arguments: dict[str, Any], abort_event: threading.Event) -> Any:
        kwargs = {k: self.converters[k](v) if k in self.converters else v for k, v in arguments.items()}
        if self.wants_abort:
            kwargs["abort_event"] = abort_event
        return self.func(**kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _FunctionExecutor) and other.func is self.func

    def __hash__(self) -> int:
        return hash(self.func)


_P = ParamSpec("_P")
_R = TypeVar("_R")


class FunctionTool(AgentTool, Generic[_P, _R]):
    """An ``AgentTool`` made by ``@tool`` from a function; calling it calls the function.

    Type checkers see the function's own signature: ``add(1, 2)`` still type-checks
    after ``@tool``, and ``add.input_schema`` is there too.
    """

    fn: Callable[_P, _R]
    """The decorated function."""

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """Call the decorated function directly (no validation, no hooks)."""
        return self.fn(*args, **kwargs)


@overload
def tool(
    fn: Callable[_P, _R], *, name: str | None = None, description: str | None = None, sequential: bool = False,
    idempotent: bool = False,
) -> FunctionTool[_P, _R]: ...


@overload
def tool(
    fn: None = None, *, name: str | None = None, description: str | None = None, sequential: bool = False,
    idempotent: bool = False,
) -> Callable[[Callable[_P, _R]], FunctionTool[_P, _R]]: ...


def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None,
    sequential: bool = False, idempotent: bool = False,
) -> Any:
    """Turn a typed, documented function into an ``AgentTool`` (a ``FunctionTool``).

    The name comes from the function, the description from its docstring (the
    part before ``Args:``), and ``input_schema`` from its annotations: ``str``,
    ``int``, ``float``, ``bool``, ``list[X]``, ``dict[str, X]``, ``Literal``,
    ``Enum``, ``X | None`` and ``Annotated[X, "description"]``. Parameters with
    defaults are optional; ``Args:`` entries become property descriptions. A
    parameter named ``abort_event`` receives the run's ``threading.Event`` and
    is not part of the schema.

    Usable bare (``@tool``) or with options (``@tool(name="x")``).
    ``idempotent=True`` marks a tool safe to run again after a crash interrupted
    it (see ``AgentTool.idempotent``); ``sequential=True`` one that runs alone.

    Raises:
        ConfigError: an annotation has no JSON Schema equivalent.

    Example:
        >>> @tool
        ... def add(a: int, b: int = 1) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> add.input_schema["required"]
        ['a']
    """

    def wrap(func: Callable[_P, _R]) -> FunctionTool[_P, _R]:
        signature = inspect.signature(func)
        hints = typing.get_type_hints(func, include_extras=True)
        text, param_docs = _split_docstring(func.__doc__ or "")
        properties: dict[str, Any] = {}
        required: list[str] = []
        wants_abort = False
        for pname, param in signature.parameters.items():
            if pname == "abort_event":
                wants_abort = True
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            schema = _schema_for(hints.get(pname, param.annotation))
            if pname in param_docs and "description" not in schema:
                schema["description"] = param_docs[pname]
            if param.default is inspect.Parameter.empty:
                required.append(pname)
            elif param.default is None or isinstance(param.default, (str, int, float, bool)):
                schema.setdefault("default", param.default)
            properties[pname] = schema
        input_schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
        if required:
            input_schema["required"] = required
        converters = {}
        for pname in properties:
            convert = _converter(hints.get(pname, signature.parameters[pname].annotation))
            if convert is not None:
                converters[pname] = convert

        made: FunctionTool[_P, _R] = FunctionTool(
            name=name or str(getattr(func, "__name__", "")),
            description=description if description is not None else text,
            input_schema=input_schema,
            execute=_FunctionExecutor(func, wants_abort, converters),
            sequential=sequential,
            idempotent=idempotent,
        )
        made.fn = func
        return made

    return wrap(fn) if fn is not None else wrap
