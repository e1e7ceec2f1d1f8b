"""JSON Schema of a Python type annotation: what ``@tool`` parameters and ``output_type`` answers are described by.

``type_schema(tp)`` covers ``str``, ``int``, ``float``, ``bool``, ``None``,
``Any``, ``list``/``tuple``/``set``/``Sequence``/``Iterable`` of a type,
``dict[str, T]``, ``Optional``/``Union``, ``Literal``, ``Annotated[T, "description"]``
and ``Enum``; with ``structured=True`` also dataclasses, ``TypedDict`` and pydantic
models (nested), as objects with ``additionalProperties: false``.

Spec: JSON Schema 2020-12.
"""

from __future__ import annotations

import dataclasses
import enum
import threading
import types
import typing
from collections.abc import Iterable, Sequence
from typing import Any, Union

from ..exceptions import ConfigError

__all__ = ["is_pydantic", "type_schema"]

_SIMPLE: dict[Any, dict[str, Any]] = {
    str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"}, bool: {"type": "boolean"},
    type(None): {"type": "null"}, dict: {"type": "object"}, list: {"type": "array"}, Any: {},
}


def is_pydantic(tp: Any) -> bool:
    """Whether ``tp`` is a pydantic model class (pydantic is never imported here)."""
    return isinstance(tp, type) and callable(getattr(tp, "model_json_schema", None)) and callable(
        getattr(tp, "model_validate", None))


class _Refs:
    """The dataclasses and TypedDicts being described (a type met again inside itself is a ``$ref``)."""

    def __init__(self) -> None:
        self.building: dict[Any, str] = {}  # type -> its name under ``$defs``
        self.recursive: set[Any] = set()
        self.defs: dict[str, dict[str, Any]] = {}

    def name(self, tp: Any) -> str:
        base = getattr(tp, "__name__", "Type")
        taken = set(self.building.values()) | set(self.defs)
        name, n = base, 2
        while name in taken:
            name, n = f"{base}{n}", n + 1
        return name


_local = threading.local()  # ``refs``: the description in progress on this thread's call stack
MAX_DEPTH = 32
"""Nested dataclasses / TypedDicts deeper than this (not recursive, just deep) are a ``ConfigError``."""


def _fields_schema(hints: dict[str, Any], required: Iterable[str], what: str) -> dict[str, Any]:
    properties = {k: type_schema(v, structured=True, what=what) for k, v in hints.items()}
    schema: dict[str, Any] = {"type": "object", "properties": properties,
                              "additionalProperties": False}
    needed = [k for k in hints if k in set(required)]
    if needed:
        schema["required"] = needed
    return schema


def type_schema(tp: Any, *, structured: bool = False, what: str = "this") -> dict[str, Any]:
    """JSON Schema of the type annotation ``tp`` (a new dict).

    Args:
        tp: the annotation.
        structured: also describe dataclasses, TypedDicts and pydantic models
            (``output_type``); ``@tool`` parameters leave them out, since the
            function would get a dict where it expects the object.
        what: names the caller in the error (``"@tool"``, ``"output_type"``).

    Raises:
        ConfigError: a type that has no JSON Schema here.
    """
    if tp in _SIMPLE:
        return dict(_SIMPLE[tp])
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        inner = type_schema(args[0], structured=structured, what=what)
        for meta in args[1:]:
            if isinstance(meta, str):
                inner["description"] = meta
        return inner
    if origin in (Union, types.UnionType):
        options = [type_schema(a, structured=structured, what=what) for a in args]
        return options[0] if len(options) == 1 else {"anyOf": options}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset, Sequence, Iterable):
        array: dict[str, Any] = {"type": "array"}
        if args and args[-1] is not Ellipsis:
            array["items"] = type_schema(args[0], structured=structured, what=what)
        return array
    if origin is dict:
        if len(args) != 2:
            return {"type": "object"}
        return {"type": "object", "additionalProperties": type_schema(args[1], structured=structured, what=what)}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if not structured:
        raise ConfigError(f"{what} cannot describe the type {tp!r} as JSON Schema")
    if (dataclasses.is_dataclass(tp) and isinstance(tp, type)) or typing.is_typeddict(tp):
        return _named(tp, what)
    if is_pydantic(tp):
        return dict(tp.model_json_schema())
    raise ConfigError(f"{what}: cannot describe {tp!r} as JSON Schema (use a dataclass, a TypedDict, "
                      "a pydantic model or a JSON Schema dict)")


def _named(tp: Any, what: str) -> dict[str, Any]:
    """A dataclass or TypedDict: its object schema; met again inside itself, a ``$ref`` to ``$defs``.

    The outermost call adds ``$defs`` (JSON Schema 2020-12) when some type refers to itself.
    """
    refs: _Refs | None = getattr(_local, "refs", None)
    top = refs is None
    if refs is None:
        refs = _local.refs = _Refs()
    try:
        if tp in refs.building:  # a tree: the type inside itself
            refs.recursive.add(tp)
            return {"$ref": f"#/$defs/{refs.building[tp]}"}
        if len(refs.building) >= MAX_DEPTH:
            raise ConfigError(f"{what}: {tp!r} is nested more than {MAX_DEPTH} levels deep")
        refs.building[tp] = name = refs.name(tp)
        try:
            schema = _object_schema(tp, what)
        finally:
            del refs.building[tp]
        if tp in refs.recursive:
            refs.defs[name] = schema
            if not top:
                return {"$ref": f"#/$defs/{name}"}
        if top and refs.defs:
            schema = {**schema, "$defs": refs.defs}
        return schema
    finally:
        if top:
            _local.refs = None


def _object_schema(tp: Any, what: str) -> dict[str, Any]:
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp, include_extras=True)
        fields = [f for f in dataclasses.fields(tp) if f.init]
        required = [f.name for f in fields if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING]
        schema = _fields_schema({f.name: hints[f.name] for f in fields}, required, what)
        if tp.__doc__ and not tp.__doc__.startswith(f"{tp.__name__}("):  # not the generated signature
            schema["description"] = " ".join(tp.__doc__.split())
        return schema
    return _fields_schema(typing.get_type_hints(tp, include_extras=True), tp.__required_keys__, what)
