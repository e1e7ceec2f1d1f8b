"""The ``@tool`` decorator: a typed, documented function made into a ``FunctionTool``.

The arguments' JSON Schema comes from the type hints: ``str`` -> ``{"type":
"string"}``, ``int`` -> ``"integer"``, ``float`` -> ``"number"``, ``bool`` ->
``"boolean"``, ``list[X]`` (and ``tuple``, ``set``) -> ``"array"`` with
``items``, ``dict[str, X]`` -> ``"object"`` with ``additionalProperties``,
``Literal`` and ``Enum`` -> ``enum``, ``X | None`` -> ``anyOf``,
``Annotated[X, "text"]`` -> X with a description. The tool's description and
the parameters' descriptions come from a Google-style docstring (``Args:``).
Validated arguments are converted back where the annotation asks (an
``Enum`` parameter gets the member, an ``int`` one an int).

``AgentTool`` is in ``yiemagent.tools.agent_tool``; ``yiemagent.tools`` gathers these names.

Spec: JSON Schema 2020-12; Google Python style docstrings.
"""

from __future__ import annotations

import enum
import inspect
import logging
import re
import threading
import types
import typing
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar, Union, overload

from .agent_tool import AgentTool
from .type_schema import type_schema

__all__ = ["FunctionTool", "tool"]

logger = logging.getLogger("yiemagent.tools")


def _schema_for(annotation: Any) -> dict[str, Any]:
    """JSON Schema for a parameter's annotation (none: any value)."""
    if annotation is inspect.Parameter.empty:
        return {}
    return type_schema(annotation, what="@tool")


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
    idempotent: bool = False, needs_approval: bool = False, inline: bool = False,
) -> FunctionTool[_P, _R]: ...


@overload
def tool(
    fn: None = None, *, name: str | None = None, description: str | None = None, sequential: bool = False,
    idempotent: bool = False, needs_approval: bool = False, inline: bool = False,
) -> Callable[[Callable[_P, _R]], FunctionTool[_P, _R]]: ...


def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None,
    sequential: bool = False, idempotent: bool = False, needs_approval: bool = False,
    inline: bool = False,
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
    it (see ``AgentTool.idempotent``); ``sequential=True`` one that runs alone;
    ``needs_approval=True`` one that runs only once a person approved the call
    (the run stops with status ``awaiting_approval``: ``yiemagent.tools.approvals``);
    ``inline=True`` one that returns at once and runs on the loop's own thread
    (``AgentTool.inline``: no hand-off; an abort is seen when it returns).

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

        tool_name = name or str(getattr(func, "__name__", ""))
        if description is None and not text:
            logger.warning("@tool %r has no docstring and no description=: the model sees only its name",
                           tool_name)
        untyped = [p for p in properties if signature.parameters[p].annotation is inspect.Parameter.empty
                   and p not in hints]
        if untyped:
            logger.warning("@tool %r: parameter(s) %s have no type annotation: the model may send any JSON value "
                           "for them", tool_name, ", ".join(untyped))
        made: FunctionTool[_P, _R] = FunctionTool(
            name=tool_name,
            description=description if description is not None else text,
            input_schema=input_schema,
            execute=_FunctionExecutor(func, wants_abort, converters),
            sequential=sequential,
            idempotent=idempotent,
            needs_approval=needs_approval,
            inline=inline,
        )
        made.fn = func
        return made

    return wrap(fn) if fn is not None else wrap
