"""``inputSchema`` normalisation: from what MCP servers send to what OpenAI accepts and ``jsonschema`` validates.

Spec: MCP 2025-11-25, "Tools" (``inputSchema``); OpenAI function calling
(``parameters``); JSON Schema 2020-12 (``$ref``, ``$defs``).
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterator
from typing import Any

import jsonschema

from ..messages.guard import fix_schema
from ..tools.schema_checks import foreign_failure, json_pointer, safe_validator_class
from .limits import MCPLimits, nesting_exceeds

__all__ = ["normalize_input_schema", "schema_problem"]

logger = logging.getLogger("yiemagent.mcp")

_SCHEMA_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})
"""Keys whose values are data, not schemas: a ``"$ref"`` inside them is not a reference."""
_COMBINATORS = ("allOf", "anyOf", "oneOf")


def _target(root: dict[str, Any], ref: str) -> dict[str, Any] | None:
    """The schema ``ref`` ends at after following ref-only hops; None if dangling or a cycle."""
    seen: set[str] = set()
    while ref not in seen:
        seen.add(ref)
        try:
            node = json_pointer(root, ref)
        except LookupError:
            return None
        if isinstance(node, bool):
            return {} if node else {"not": {}}
        if not isinstance(node, dict):
            return None
        if isinstance(node.get("$ref"), str) and set(node) == {"$ref"}:
            ref = node["$ref"]
            continue
        return node
    return None  # $ref cycle without any schema in between: validating it would recurse forever


def _repair_refs(root: dict[str, Any]) -> list[str]:
    """Drop every ``$ref`` that cannot be resolved inside ``root`` (in place); return what was dropped.

    Dangling pointers, remote URLs and ref-only cycles (``A -> B -> A``) would
    make ``jsonschema`` raise or recurse forever at validation time; they
    become "anything" (``{}``). Resolvable refs, recursive ones included, are kept.
    """
    dropped = []
    stack: list[Any] = [root]
    while stack:  # iterative: a deeply nested schema cannot exhaust the Python stack
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref")
        if isinstance(ref, str) and _target(root, ref) is None:
            dropped.append(ref)
            del node["$ref"]
        stack.extend(v for k, v in node.items() if k not in _SCHEMA_DATA_KEYS)
    return dropped


_IN_PLACE = ("allOf", "anyOf", "oneOf")
"""Keywords whose subschemas apply to the same instance (no step down into it)."""
_IN_PLACE_ONE = ("not", "if", "then", "else")
_DYNAMIC = ("$dynamicRef", "$recursiveRef")


def _in_place_children(node: dict[str, Any]) -> Iterator[Any]:
    for key in _IN_PLACE:
        if isinstance(node.get(key), list):
            yield from node[key]
    for key in _IN_PLACE_ONE:
        yield node.get(key)
    if isinstance(node.get("dependentSchemas"), dict):
        yield from node["dependentSchemas"].values()


def _break_cycles(root: dict[str, Any], budget: int = 100_000) -> list[str]:
    """Drop (in place) each ``$ref`` that leads back to its own schema without a step into the instance.

    ``{"$defs": {"A": {"$ref": "#/$defs/B", "type": "string"}, "B": {"$ref": "#/$defs/A"}}}``
    (with a sibling keyword, so ``_repair_refs`` keeps it) makes every
    validator recurse forever: ``$ref`` and ``allOf``/``anyOf``/``oneOf``/``not``/
    ``if``/``then``/``else``/``dependentSchemas`` apply to the same instance. A
    ref through ``properties``/``items`` (a tree type) is kept. ``$dynamicRef`` and
    ``$recursiveRef`` are dropped (rarely sent by servers; unresolvable anchors raise).
    Visits at most ``budget`` nodes in all; past it, every remaining ref is dropped.
    """
    dropped: list[str] = []
    holders: list[dict[str, Any]] = []
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for key in _DYNAMIC:
                if key in node:
                    dropped.append(str(node.pop(key)))
            if isinstance(node.get("$ref"), str):
                holders.append(node)
            stack.extend(v for k, v in node.items() if k not in _SCHEMA_DATA_KEYS)
    for holder in holders:
        start = _target(root, holder["$ref"])
        seen: set[int] = set()
        todo: list[Any] = [start]
        cyclic = False
        while todo and not cyclic:
            node = todo.pop()
            if not isinstance(node, dict) or id(node) in seen:
                continue
            budget -= 1
            if node is holder or budget <= 0:
                cyclic = True
                break
            seen.add(id(node))
            if isinstance(node.get("$ref"), str):
                todo.append(_target(root, node["$ref"]))
            todo.extend(_in_place_children(node))
        if cyclic:
            dropped.append(holder.pop("$ref"))
    return dropped


def _merge_branches(schema: dict[str, Any], root: dict[str, Any]) -> None:
    """Fold top-level ``allOf``/``anyOf``/``oneOf`` into one object schema (in place), never stricter.

    ``allOf``: properties and ``required`` of every branch; ``anyOf``/``oneOf``:
    properties of every branch, ``required`` only where all branches agree.
    """
    for key in _COMBINATORS:
        branches = schema.pop(key, None)
        if not isinstance(branches, list):
            continue
        resolved = []
        for branch in branches:
            if isinstance(branch, dict) and isinstance(branch.get("$ref"), str):
                branch = {**(_target(root, branch["$ref"]) or {}), **{k: v for k, v in branch.items() if k != "$ref"}}
            if isinstance(branch, dict):
                resolved.append(branch)
        properties = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        schema["properties"] = properties
        required_sets = []
        for branch in resolved:
            if isinstance(branch.get("properties"), dict):
                for name, sub in branch["properties"].items():
                    properties.setdefault(name, sub)
            required_sets.append({r for r in branch.get("required") or [] if isinstance(r, str)})
        required = set(schema.get("required") or [])
        if key == "allOf":
            required |= set().union(*required_sets) if required_sets else set()
        elif required_sets:
            required |= set.intersection(*required_sets)
        if required:
            schema["required"] = sorted(required)


def schema_problem(schema: Any, limits: MCPLimits) -> str | None:
    """Why ``schema`` is too large to use (``max_schema_chars`` of JSON, ``max_schema_depth``), or None.

    Both checks are linear and iterative (a schema nested 10,000 deep cannot
    exhaust the stack); run it before ``normalize_input_schema``, which copies.
    """
    if nesting_exceeds(schema, limits.max_schema_depth):
        return f"inputSchema nests deeper than {limits.max_schema_depth} levels"
    try:
        size = len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")))
    except (TypeError, ValueError, RecursionError) as exc:
        return f"inputSchema is not JSON: {exc}"
    if size > limits.max_schema_chars:
        return f"inputSchema has {size:,} characters of JSON, over {limits.max_schema_chars:,}"
    return None


def normalize_input_schema(schema: Any) -> dict[str, Any]:
    """Return an ``inputSchema`` that OpenAI's function format accepts and ``jsonschema`` can validate.

    The server's object is not modified. Rules, in order:

    - missing or not an object -> ``{"type": "object", "properties": {}}`` (C20);
    - every ``$ref`` that does not resolve inside the schema (dangling,
      remote, or a ref-only cycle) becomes "anything"; ``$defs`` and
      resolvable refs, recursive ones included, are kept (C20);
    - a top-level ``$ref`` is replaced by its target (one level, so a
      recursive schema stays finite);
    - top-level ``allOf``/``anyOf``/``oneOf`` are folded into one object
      schema; ``not``/``enum``/``const`` at the top are dropped (OpenAI
      rejects them there);
    - ``type`` becomes ``"object"``: a list containing it is narrowed; any
      other type (a server bug: MCP requires an object) gives an empty
      object schema;
    - ``properties`` that is missing or not an object becomes ``{}``;
      ``required`` keeps only strings;
    - at any depth, what OpenAI rejects is repaired as the request guard does
      (``yiemagent.messages.guard.fix_schema``: arrays get ``items``, ``required: null``
      and properties that are not schemas fixed), and a subschema
      ``jsonschema`` still refuses becomes "anything", so one loose tool never
      makes a server's tools unusable. Never raises, for any input.

    Each rule loosens validation, never tightens it: what the server accepts
    still passes locally. Changes are logged at WARNING, except the usual
    ``properties`` fill-in.

    Args:
        schema: the ``inputSchema`` of a ``tools/list`` entry (any JSON value).

    Returns:
        A new JSON Schema dict with ``"type": "object"`` and ``"properties"``.

    Spec: MCP 2025-11-25, "Tools" (``inputSchema``); OpenAI function calling
    (``parameters`` must be an object schema); JSON Schema 2020-12 ``$ref``.
    """
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    try:
        return _normalize(schema)
    except BaseException as exc:  # nested deeper than Python can copy; a dependency's error or Rust panic
        if not foreign_failure(exc):
            raise
        logger.warning("inputSchema: %s; the tool takes any object",
                       "nested too deeply" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {exc}")
        return {"type": "object", "properties": {}}


def _normalize(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = copy.deepcopy(schema)
    dropped = _repair_refs(out) + _break_cycles(out)
    if dropped:
        logger.warning("inputSchema: unresolvable $ref %s treated as 'anything'", ", ".join(sorted(set(dropped))))
    ref = out.get("$ref")
    if isinstance(ref, str):
        target = _target(out, ref) or {}
        del out["$ref"]
        out = {**copy.deepcopy(target), **out}
    _merge_branches(out, out)
    for key in ("not", "enum", "const"):
        if out.pop(key, None) is not None:
            logger.warning("inputSchema: top-level %r dropped (OpenAI rejects it)", key)
    kind = out.get("type", "object")
    if isinstance(kind, list):
        kind = "object" if "object" in kind else (kind[0] if kind else "object")
    if kind != "object":
        logger.warning("inputSchema: top-level type %r is not 'object'; the tool takes any object", kind)
        kept = ("$schema", "$defs", "definitions", "description", "title")
        keep: dict[str, Any] = {k: out[k] for k in kept if k in out}
        return {**keep, "type": "object", "properties": {}}
    out["type"] = "object"
    if not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    if "required" in out:
        required = [r for r in out["required"] if isinstance(r, str)] if isinstance(out["required"], list) else []
        if required:
            out["required"] = required
        else:
            del out["required"]
    return _checkable(out)


def _checkable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with what OpenAI or ``jsonschema`` reject at any depth repaired (see ``fix_schema``).

    Nested subschemas ``jsonschema`` still refuses (a ``"type": "strnig"``)
    become "anything", one at a time; a schema that stays invalid becomes an
    empty object schema. Never raises.
    """
    fixed, repairs = fix_schema(schema)
    if repairs:
        logger.warning("inputSchema: %s", "; ".join(repairs))
    validator = safe_validator_class(fixed)
    for _ in range(64):
        try:
            validator.check_schema(fixed)
            return fixed
        except jsonschema.exceptions.SchemaError as exc:
            path = list(exc.path)
            if not path:
                break
            parent: Any = fixed
            for key in path[:-1]:
                parent = parent[key]
            logger.warning("inputSchema: %s at %s: treated as 'anything'", exc.message, "/".join(map(str, path)))
            if isinstance(parent, dict) and path[-1] in _KEYWORDS_WITH_SCHEMA_VALUES:
                del parent[path[-1]]
            else:
                parent[path[-1]] = {}
        except BaseException as exc:  # RecursionError, referencing errors, a Rust PanicException (BaseException)
            if not foreign_failure(exc):
                raise
            break
    logger.warning("inputSchema: not a schema jsonschema accepts; the tool takes any object")
    return {"type": "object", "properties": {}}


_KEYWORDS_WITH_SCHEMA_VALUES = frozenset({"required", "type", "enum", "const", "minimum", "maximum", "pattern",
                                          "format", "minLength", "maxLength", "minItems", "maxItems",
                                          "multipleOf", "uniqueItems", "$ref", "$schema", "$id"})
