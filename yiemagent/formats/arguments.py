"""Tool-call ``arguments``: what servers send (a JSON string, an object, nothing) to a dict.

Spec: OpenAI Chat Completions ``tool_calls[].function.arguments`` (a JSON
object text); Ollama and Anthropic send an object; RFC 8259 (no ``NaN``).
"""

from __future__ import annotations

import json
from typing import Any

from .._internal.jsonload import DEFAULT_MAX_DEPTH, depth_exceeds
from ..textpolicy import loads_strict
from .text_tool_calls import repair_json_object

__all__ = ["parse_arguments", "parse_arguments_noted"]


def parse_arguments(raw: Any, *, repair: bool = True) -> tuple[dict[str, Any], str | None]:
    """Parse tool-call ``arguments`` as a server sent them.

    Args:
        raw: a JSON object (dict), a JSON string, or None / ``""`` / whitespace /
            ``"null"`` (no arguments). A string holding a JSON object string
            (double-encoded) is decoded twice.
        repair: apply unambiguous repairs (trailing comma, missing final braces).

    Returns:
        ``(arguments, error)``: a dict and None, or ``{}`` and a one-line reason.
        Use ``parse_arguments_noted`` to learn whether a repair was applied.
    """
    arguments, error, _ = parse_arguments_noted(raw, repair=repair)
    return arguments, error


def parse_arguments_noted(raw: Any, *, repair: bool = True) -> tuple[dict[str, Any], str | None, str | None]:
    """Like ``parse_arguments``, plus a note naming any repair applied."""
    if raw is None:
        return {}, None, None
    if isinstance(raw, dict):
        return raw, None, None
    if not isinstance(raw, str):
        return {}, f"arguments must be a JSON object, got {type(raw).__name__}", None
    text = raw.strip()
    if not text or text == "null":
        return {}, None, None
    if depth_exceeds(text, DEFAULT_MAX_DEPTH):  # the one bound; the decoder alone took 900 levels
        return {}, f"arguments are not valid JSON (nested deeper than {DEFAULT_MAX_DEPTH} levels)", None
    try:
        value = loads_strict(text)
    except json.JSONDecodeError as exc:
        repaired = repair_json_object(text) if repair else None
        if repaired is not None:
            return repaired[0], None, repaired[1]
        return {}, f"arguments are not valid JSON ({exc.msg} at position {exc.pos})", None
    except ValueError as exc:  # NaN / Infinity, or nested too deeply
        return {}, f"arguments are not valid JSON ({exc})", None
    if isinstance(value, str):  # double-encoded: "\"{\\\"a\\\": 1}\""
        if value.strip()[:1] == "{":
            return parse_arguments_noted(value, repair=repair)
        return {}, "arguments must be a JSON object, got a JSON string", None
    if value is None:
        return {}, None, None
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got JSON {type(value).__name__}", None
    return value, None, None
