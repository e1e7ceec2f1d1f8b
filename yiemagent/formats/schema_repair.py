"""Schema repair: ``fix_schema`` makes a tool's ``parameters`` an object schema OpenAI accepts.

``fix_schema(schema) -> (schema, repairs)`` returns a new schema (the input is
never changed) and one line per repair: not an object schema -> ``{"type":
"object", "properties": {}}``; an array schema without ``items`` at any depth
gets ``"items": {}`` (OpenAI: "array schema missing items"); ``required``
that is not a list of names and ``properties`` entries that are not schemas
are fixed; values JSON cannot carry are replaced (``yiemagent.textpolicy``).
Paths in the repairs are JSON-pointer-like (``/properties/x/items``).

Used by the request guard (``yiemagent.messages.guard``, which re-exports it) on the
tools of every request, and by the MCP bridge on servers' ``inputSchema``.

Spec: OpenAI function tools ``parameters``; JSON Schema (2020-12 keywords,
draft-4 tuple ``items``); RFC 8259.
"""

from __future__ import annotations

import json
from typing import Any

from ..textpolicy import json_safe

__all__ = ["fix_schema"]

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
               "additionalItems", "unevaluatedItems", "unevaluatedProperties")


def fix_schema(schema: Any) -> tuple[dict[str, Any], list[str]]:
    """Return an OpenAI-acceptable ``parameters`` object schema and the repairs made.

    ``schema`` is not changed. Rules: not an object schema -> ``{"type":
    "object", "properties": {}}``; ``type`` other than ``"object"`` at the top
    -> object; every array schema without ``items`` at any depth (under
    ``properties``, ``items``, ``anyOf``..., ``$defs``) gets ``"items": {}``;
    values JSON cannot carry are replaced (``yiemagent.textpolicy``).
    """
    repairs: list[str] = []
    if not isinstance(schema, dict):
        what = type(schema).__name__
        return {"type": "object", "properties": {}}, [f"parameters {what} replaced by an object schema"]
    try:
        json.dumps(schema, allow_nan=False)
        out: dict[str, Any] = json.loads(json.dumps(schema))
    except (TypeError, ValueError, RecursionError):
        out = json_safe(schema)
        repairs.append("values JSON cannot carry replaced in parameters")
    kind: Any = out.get("type")
    if kind != "object":
        if not (isinstance(kind, list) and "object" in kind) and kind is not None:
            out = {k: v for k, v in out.items() if k in ("description", "title", "$defs", "definitions")}
        repairs.append(f"parameters type {kind!r} replaced by 'object'")
        out["type"] = "object"
    if not isinstance(out.get("properties"), dict):
        if "properties" in out:
            repairs.append("parameters properties that is not an object replaced by {}")
        out["properties"] = {}
    stack: list[tuple[Any, str]] = [(out, "")]
    while stack:  # iterative: deep schemas cannot exhaust the Python stack
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        if (kind == "array" or (isinstance(kind, list) and "array" in kind)) and "items" not in node:
            node["items"] = {}
            repairs.append(f"array schema at {path or '/'} given items {{}}")
        if "required" in node and not (isinstance(node["required"], list)
                                       and all(isinstance(r, str) for r in node["required"])):
            required = node.pop("required")
            if isinstance(required, list) and any(isinstance(r, str) for r in required):
                node["required"] = [r for r in required if isinstance(r, str)]
            repairs.append(f"required at {path or '/'} that is not a list of names fixed")
        for key in _SCHEMA_MAPS:
            if key in node and not isinstance(node[key], dict):
                del node[key]
                if key == "properties":
                    node["properties"] = {}
                repairs.append(f"{key} at {path or '/'} that is not an object fixed")
            sub = node.get(key)
            if isinstance(sub, dict):
                for name, value in list(sub.items()):
                    if not isinstance(value, (dict, bool)):
                        sub[name] = {}
                        repairs.append(f"schema at {path}/{key}/{name} that is not a schema replaced by {{}}")
        for key in (*_SCHEMA_LISTS, "items"):
            sub = node.get(key)
            if isinstance(sub, list):
                for index, value in enumerate(sub):
                    if not isinstance(value, (dict, bool)):
                        sub[index] = {}
                        repairs.append(f"schema at {path}/{key}/{index} that is not a schema replaced by {{}}")
        for key in _SCHEMA_MAPS:
            sub = node.get(key)
            if isinstance(sub, dict):
                stack.extend((v, f"{path}/{key}/{k}") for k, v in sub.items())
        for key in _SCHEMA_LISTS:
            sub = node.get(key)
            if isinstance(sub, list):
                stack.extend((v, f"{path}/{key}/{i}") for i, v in enumerate(sub))
        for key in _SCHEMA_ONE:
            sub = node.get(key)
            if isinstance(sub, dict):
                stack.append((sub, f"{path}/{key}"))
            elif isinstance(sub, list) and key == "items":  # draft-4 tuple form
                stack.extend((v, f"{path}/items/{i}") for i, v in enumerate(sub))
    return out, repairs
