"""Elicitation: a server's ``elicitation/create`` answered by a plain sync handler.

::

    def ask(server_name: str, request: dict) -> dict:
        # request: {"mode": "form", "message": str, "requestedSchema": {...}}
        return {"action": "accept", "content": {"name": "octocat"}}

    client = MCPClient(url, callbacks=ClientCallbacks(elicitation=ask))

A handler gets ``(server_name, request)`` and returns ``{"action": "accept"
| "decline" | "cancel", "content"?: {...}}`` (``ElicitResult``). Form mode
(``mode`` absent or ``"form"``) goes to the ``form`` handler, URL mode
(``mode: "url"``, with ``url`` and ``elicitationId``) to the ``url``
handler; the client declares ``elicitation: {"form": {}, "url": {}}`` for
the modes that have a handler, and a request for another mode is refused
with -32602. A URL handler shows the URL (with its host) and asks consent;
yiemagent never opens it (the spec: consent before navigation).

What ``answer_elicitation`` does with the handler's answer, before sending:

- ``accept`` in form mode: a field the handler left out, ``None`` or ``""``
  takes the schema's ``default`` (SEP-1034); a left-out optional field with
  no default is not sent; then the content is checked against
  ``requestedSchema`` (``jsonschema``, formats included) and content that
  does not match is never sent: the server gets -32603 naming the field;
- ``decline`` / ``cancel``: any ``content`` is dropped;
- anything else (no dict, an unknown action) is a handler bug: -32603.

``form_fields(schema)`` lists the fields of a form schema for a UI (type,
title, description, default, the choices of a plain or titled enum, SEP-1330
single and multi select) and ``coerce_field`` turns a typed string into the
field's type; the chat CLI's prompt uses both.

Spec: MCP 2025-11-25 "Client Features / Elicitation" (form and URL mode,
SEP-1034 defaults, SEP-1330 enums) and 2026-07-28 (the same ``ElicitRequest``
as an input request).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from .server_messages import RequestRefused, call_with_abort

__all__ = [
    "ElicitationHandler",
    "answer_elicitation",
    "coerce_field",
    "elicitation_errors",
    "form_fields",
    "with_defaults",
]

logger = logging.getLogger("yiemagent.mcp")

ElicitationHandler = Callable[[str, dict[str, Any]], dict[str, Any]]
"""``handler(server_name, request) -> {"action": "accept"|"decline"|"cancel", "content"?: {...}}``."""

_ACTIONS = ("accept", "decline", "cancel")


def form_fields(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields of a form ``requestedSchema``, in order, for a UI.

    Returns:
        One dict per field,
        ``[{"name", "type", "title", "description", "required": bool,
        "default"?: value, "choices"?: [(value, title), ...], "multiple": bool}]``;
        ``choices`` come from ``enum`` (title = value), ``oneOf``/``anyOf`` of
        ``{"const", "title"}`` (SEP-1330), the deprecated ``enumNames``, and
        ``items`` of an array (``multiple`` True).
    """
    properties = schema.get("properties") if isinstance(schema, dict) else None
    required = set(schema.get("required") or []) if isinstance(schema, dict) else set()
    fields = []
    for name, spec in (properties or {}).items():
        if not isinstance(spec, dict):
            continue
        multiple = spec.get("type") == "array"
        items = spec.get("items")
        source: dict[str, Any] = items if multiple and isinstance(items, dict) else spec
        field: dict[str, Any] = {"name": name, "type": spec.get("type", "string"), "title": spec.get("title") or name,
                                 "description": spec.get("description") or "", "required": name in required,
                                 "multiple": multiple}
        if "default" in spec:
            field["default"] = spec["default"]
        choices = _choices(source)
        if choices:
            field["choices"] = choices
        fields.append(field)
    return fields


def _choices(spec: dict[str, Any]) -> list[tuple[Any, str]]:
    options = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(options, list) and all(isinstance(o, dict) and "const" in o for o in options):
        return [(o["const"], str(o.get("title") or o["const"])) for o in options]
    if isinstance(spec.get("enum"), list):
        names = spec.get("enumNames") if isinstance(spec.get("enumNames"), list) else None
        if names is not None and len(names) == len(spec["enum"]):
            return [(value, str(title)) for value, title in zip(spec["enum"], names, strict=True)]
        return [(value, str(value)) for value in spec["enum"]]
    return []


def coerce_field(field: dict[str, Any], text: str) -> Any:
    """``text`` typed by a person as the value of ``field`` (from ``form_fields``).

    integer / number -> int / float; boolean -> True for y, yes, true, 1 (False
    for n, no, false, 0); a choice -> its value, by number (1-based), value or
    title; multiple choices -> a list, comma-separated.

    Raises:
        ValueError: the text is not of the field's type, or no such choice.
    """
    text = text.strip()
    if field.get("multiple"):
        return [_choice(field, piece.strip()) for piece in text.split(",") if piece.strip()]
    if field.get("choices"):
        return _choice(field, text)
    kind = field.get("type")
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("a whole number, please") from None
    if kind == "number":
        try:
            value = float(text)
        except ValueError:
            raise ValueError("a number, please") from None
        return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer yes or no")
    return text


def _choice(field: dict[str, Any], text: str) -> Any:
    choices = field.get("choices") or []
    if text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1][0]
    for value, title in choices:
        if text in (str(value), title):
            return value
    if not choices:
        return text
    raise ValueError("choose one of: " + ", ".join(title for _, title in choices))


def elicitation_errors(schema: dict[str, Any], content: dict[str, Any]) -> list[str]:
    """Why ``content`` does not match ``requestedSchema`` (``[]`` when it does), one text per problem.

    Uses ``jsonschema`` with the schema's own draft (2020-12 when it names
    none) and its format checker (``email``, ``uri``, ``date``, ``date-time``).
    """
    import jsonschema  # here, not at import: most clients never answer an elicitation

    try:
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
        found = sorted(validator.iter_errors(content), key=lambda e: list(e.absolute_path))
    except jsonschema.exceptions.SchemaError as exc:
        return [f"the requestedSchema is not a valid JSON Schema: {exc.message}"]
    return [(".".join(str(p) for p in error.absolute_path) + ": " if error.absolute_path else "") + error.message
            for error in found]


def with_defaults(schema: dict[str, Any], content: dict[str, Any]) -> dict[str, Any]:
    """``content`` where a field left out, ``None`` or ``""`` takes its ``default`` (SEP-1034), or is dropped."""
    out = dict(content)
    for name, spec in (schema.get("properties") or {}).items():
        if out.get(name) is None or out.get(name) == "":
            if isinstance(spec, dict) and "default" in spec:
                out[name] = spec["default"]
            else:
                out.pop(name, None)
    return out


def answer_elicitation(
    handlers: dict[str, ElicitationHandler], server_name: str, params: dict[str, Any],
    abort_event: threading.Event | None = None,
) -> dict[str, Any]:
    """The ``ElicitResult`` to send for one ``elicitation/create`` (see the module).

    Args:
        handlers: ``{"form": handler, "url": handler}`` (either may be absent).
        server_name: the server's short name, passed to the handler.
        params: the request's params.
        abort_event: given to a handler that takes an ``abort_event`` keyword
            (set when the client cuts the request: ``cancel_in_flight``, ``close``, ``Agent.abort``).

    Raises:
        RequestRefused: -32602 for a mode without a handler or a malformed
            request; -32603 for an answer of no known shape or content that
            does not match ``requestedSchema``.
        Exception: whatever the handler raises (the server gets -32603).
    """
    mode = params.get("mode") or "form"
    handler = handlers.get(str(mode))
    if handler is None:
        raise RequestRefused(-32602, f"elicitation mode {str(mode)[:20]!r} is not supported by this client")
    if mode == "url" and (not isinstance(params.get("url"), str) or not params.get("elicitationId")):
        raise RequestRefused(-32602, "a URL elicitation needs url and elicitationId")
    schema = params.get("requestedSchema") if mode == "form" else None
    if mode == "form" and not isinstance(schema, dict):
        raise RequestRefused(-32602, "a form elicitation needs a requestedSchema object")
    answer = call_with_abort(handler, server_name, params, abort_event=abort_event)
    if not isinstance(answer, dict) or answer.get("action") not in _ACTIONS:
        raise RequestRefused(-32603, "the client's elicitation handler gave no action (accept, decline, cancel)")
    result: dict[str, Any] = {"action": answer["action"]}
    if answer["action"] == "accept" and schema is not None:
        content = answer.get("content") or {}
        if not isinstance(content, dict):
            raise RequestRefused(-32603, "the client's elicitation answer has content that is not an object")
        content = with_defaults(schema, content)
        problems = elicitation_errors(schema, content)
        if problems:
            logger.warning("%s: elicitation answer does not match requestedSchema: %s", server_name, problems[0])
            raise RequestRefused(-32603, "the client's answer does not match requestedSchema: " + "; ".join(
                problems[:3]))
        result["content"] = content
    return result
