"""A quick validity check for the plain schemas most tools have, before ``jsonschema``.

Most tools take a flat object of strings, numbers and booleans
(``{"type": "object", "properties": {"city": {"type": "string"}}, "required":
["city"]}``). ``jsonschema`` checks such arguments through its general
machinery (tens of microseconds a call, issue 26). ``quick_check(schema)``
compiles a schema of that plain kind into a function that answers True only
when ``jsonschema`` (Draft 2020-12, the default of
``yiemagent.tools.schema_checks``) would find the arguments valid; on False,
or for any schema outside the plain kind, ``jsonschema`` decides as before and
writes the error messages. So the quick check never loosens validation: it
only skips the general machinery for arguments that are plainly valid.

The plain kind: a top-level ``{"type": "object"}`` with ``properties`` whose
schemas have only a ``type`` among ``string``, ``integer``, ``number``,
``boolean``, ``null`` (or a list of those) and annotations (``description``,
``title``, ``default``, ``examples``), ``required`` (names) and
``additionalProperties`` (a boolean). Anything else, ``$schema`` included
(another draft's rules), is not plain.

Spec: JSON Schema 2020-12 validation (``type``: ``integer`` is a number with
no fractional part, booleans are not numbers), ``properties``, ``required``,
``additionalProperties``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["quick_check"]

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly"})
_TOP_KEYS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}
_PROPERTY_KEYS = _ANNOTATIONS | {"type"}


def _integer(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer())


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": _integer,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _property_check(schema: Any) -> Callable[[Any], bool] | None:
    if not isinstance(schema, dict) or set(schema) - _PROPERTY_KEYS:
        return None
    kind = schema.get("type")
    if kind is None:
        return lambda v: True
    names = [kind] if isinstance(kind, str) else kind
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n in _TYPES for n in names):
        return None
    checks = tuple(_TYPES[n] for n in names)
    if len(checks) == 1:
        return checks[0]
    return lambda v: any(check(v) for check in checks)


def quick_check(schema: Any) -> Callable[[Any], bool] | None:
    """A function ``check(arguments) -> bool`` (True: valid for sure) for a plain ``schema``; None otherwise."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or set(schema) - _TOP_KEYS:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list) or not isinstance(extra, bool) \
            or not all(isinstance(name, str) for name in required):
        return None
    checks: dict[str, Callable[[Any], bool]] = {}
    for name, sub in properties.items():
        check = _property_check(sub)
        if check is None:
            return None
        checks[name] = check
    needed = tuple(required)

    def plainly_valid(arguments: Any) -> bool:
        if type(arguments) is not dict:
            return False
        for name in needed:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            check = checks.get(name)
            if check is None:
                if not extra:
                    return False
            elif not check(value):
                return False
        return True

    return plainly_valid
