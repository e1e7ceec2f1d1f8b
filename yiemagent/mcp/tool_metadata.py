"""Tool metadata of MCP put to use: definitions checked one by one, annotations, icons, ``outputSchema``.

``tool_problem(spec)`` says why one ``tools/list`` entry is malformed (the
bridge then skips that tool only, with a WARNING, and lists it in
``MCPToolset.skipped``); ``tool_annotations`` / ``tool_icons`` keep what is
usable; ``OutputCheck`` validates a result's ``structuredContent`` against
the tool's ``outputSchema`` as the spec says: a result of a tool with an
``outputSchema`` must carry ``structuredContent`` conforming to it; an
``isError`` result is never validated. Validation runs with the bounded
checks of ``yiemagent.tools.schema_checks`` (server regexes cannot stall the
process; a schema the validator cannot evaluate is reported, never raised).

Spec: MCP 2025-11-25, "Tools" (Tool: ``name``, ``title``, ``inputSchema``,
``outputSchema``, ``annotations``, ``icons``; Structured Content, Output
Schema); schema ``ToolAnnotations``.
"""

from __future__ import annotations

import logging
from typing import Any

import jsonschema.exceptions

from ..tools.schema_checks import foreign_failure, pattern_budget, safe_validator_class
from .limits import MCPLimits
from .schema import schema_problem

__all__ = ["HINTS", "OutputCheck", "tool_annotations", "tool_icons", "tool_problem"]

logger = logging.getLogger("yiemagent.mcp")

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
"""The boolean hints of ``ToolAnnotations``."""

MAX_ERRORS_SHOWN = 5
"""Schema errors named in the error result of a non-conforming ``structuredContent``."""


def tool_problem(spec: Any, limits: MCPLimits) -> str | None:
    """Why the ``tools/list`` entry ``spec`` cannot be offered to the model, or None.

    Malformed: not an object; ``name`` not a non-empty string; ``inputSchema``
    present but not an object (a missing one is loosened to "any object",
    ``normalize_input_schema``); ``outputSchema`` present but not a JSON
    object, too large, or not a valid JSON Schema (2025-11-25 asks for
    ``"type": "object"``, 2026-07-28 allows any schema: both are accepted);
    ``annotations`` not an object, a hint that is not a boolean, or a
    ``title`` (of the tool or its annotations) that is not a string.
    """
    if not isinstance(spec, dict):
        return "not an object"
    if not (isinstance(spec.get("name"), str) and spec["name"]):
        return "no string 'name'"
    if "inputSchema" in spec and spec["inputSchema"] is not None and not isinstance(spec["inputSchema"], dict):
        return f"inputSchema is a {type(spec['inputSchema']).__name__}, not an object"
    if spec.get("title") is not None and not isinstance(spec["title"], str):
        return "title is not a string"
    annotations = spec.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, dict):
            return f"annotations is a {type(annotations).__name__}, not an object"
        for hint in HINTS:
            if hint in annotations and annotations[hint] is not None and not isinstance(annotations[hint], bool):
                return f"annotations.{hint} is {annotations[hint]!r:.40}, not a boolean"
        if annotations.get("title") is not None and not isinstance(annotations["title"], str):
            return "annotations.title is not a string"
    output_schema = spec.get("outputSchema")
    if output_schema is not None:
        if not isinstance(output_schema, dict):
            return f"outputSchema is a {type(output_schema).__name__}, not a JSON Schema object"
        problem = schema_problem(output_schema, limits)
        if problem is not None:
            return "output" + problem[5:] if problem.startswith("input") else problem
        try:
            safe_validator_class(output_schema).check_schema(output_schema)
        except jsonschema.exceptions.SchemaError as exc:
            return f"outputSchema is not a valid JSON Schema: {exc.message[:200]}"
        except BaseException as exc:  # a dependency's RecursionError, referencing error or Rust panic
            if not foreign_failure(exc):
                raise
            return f"outputSchema cannot be used: {type(exc).__name__}: {str(exc)[:200]}"
    return None


def tool_annotations(spec: dict[str, Any]) -> dict[str, Any]:
    """The ``annotations`` of a well-formed tool (``tool_problem`` is None): a copy, ``{}`` when absent.

    ``title`` of the tool itself is added as ``annotations["title"]`` when the
    annotations have none (the spec's display-name precedence: ``title``,
    then ``annotations.title``, then ``name``).
    """
    found = spec.get("annotations")
    annotations = {k: v for k, v in found.items() if v is not None} if isinstance(found, dict) else {}
    if isinstance(spec.get("title"), str) and spec["title"]:
        annotations["title"] = spec["title"]
    return annotations


def tool_icons(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``icons`` of a tool that have a string ``src`` (others dropped, logged at DEBUG)."""
    icons = spec.get("icons")
    kept = [icon for icon in icons if isinstance(icon, dict) and isinstance(icon.get("src"), str)] \
        if isinstance(icons, list) else []
    if icons is not None and (not isinstance(icons, list) or len(kept) != len(icons)):
        logger.debug("tool %r: malformed icons dropped", spec.get("name"))
    return kept


class OutputCheck:
    """Validates ``structuredContent`` against one tool's ``outputSchema`` (checked by ``tool_problem``).

    The schema's draft is its ``$schema``, JSON Schema 2020-12 without one (as 2026-07-28 says).

    Args:
        tool_name: the tool's name, for the messages.
        output_schema: the tool's ``outputSchema`` (an object schema).
    """

    def __init__(self, tool_name: str, output_schema: dict[str, Any]) -> None:
        self.tool_name = tool_name
        self.output_schema = output_schema
        self._validator = safe_validator_class(output_schema)(output_schema)

    def problem(self, result: dict[str, Any]) -> str | None:
        """Why ``result`` (a ``tools/call`` result) breaks the ``outputSchema`` contract, or None.

        None for an ``isError`` result (never validated, as the spec says).
        Otherwise ``structuredContent`` must be present (2026-07-28: any JSON
        value, ``null`` included when the schema allows it) and conform; the
        text names at most ``MAX_ERRORS_SHOWN`` errors (``<json path>: <message>``).
        """
        if result.get("isError"):
            return None
        if "structuredContent" not in result:
            return "the result has no structuredContent, but the tool declares an outputSchema"
        try:
            with pattern_budget():
                errors = sorted(self._validator.iter_errors(result["structuredContent"]),
                                key=lambda e: list(e.absolute_path))
        except BaseException as exc:  # RecursionError on a $ref cycle, referencing errors, a Rust panic
            if not foreign_failure(exc):
                raise
            return f"its outputSchema cannot be evaluated ({type(exc).__name__}: {str(exc)[:200]})"
        if not errors:
            return None
        shown = "; ".join(f"{e.json_path}: {e.message[:200]}" for e in errors[:MAX_ERRORS_SHOWN])
        more = f" (and {len(errors) - MAX_ERRORS_SHOWN} more)" if len(errors) > MAX_ERRORS_SHOWN else ""
        return f"structuredContent does not conform to the outputSchema: {shown}{more}"

