"""The request metadata headers of a 2026-07-28 Streamable HTTP POST, and ``x-mcp-header`` tool parameters.

Every modern POST carries ``Mcp-Method: <method>``; ``tools/call`` and
``prompts/get`` carry ``Mcp-Name: <params.name>``, ``resources/read``
``Mcp-Name: <params.uri>``. A tool whose ``inputSchema`` marks a property
``"x-mcp-header": "Region"`` gets ``Mcp-Param-Region: <value>`` on its
``tools/call`` when the arguments hold a value there (absent or null: no
header). Values: strings as-is, integers in decimal, booleans ``true`` /
``false``; a value that is not plain visible ASCII (non-ASCII, control
characters, leading or trailing whitespace) or that looks like the sentinel
is sent as ``=?base64?<Base64 of its UTF-8>?=``.

A tool with an invalid ``x-mcp-header`` (empty, not an RFC 9110 token,
duplicated case-insensitively, on a non-primitive or ``number`` property, or
not reachable from the root through ``properties`` alone) is rejected:
``tool_header_problem`` names the reason and ``MCPClient.list_tools`` leaves
the tool out (logged at WARNING), so one malformed tool never hides the
valid ones.

Spec: MCP 2026-07-28, "Transports", Streamable HTTP, "Request Metadata"
(Standard Request Headers, Custom Headers from Tool Parameters, Value Encoding).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["decode_header_value", "encode_header_value", "header_paths", "message_headers", "param_headers",
           "request_headers",
           "tool_header_problem"]

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
"""RFC 9110 ``token`` (``1*tchar``)."""
_SAFE = re.compile(r"^[\x20-\x7e]*$")
_MAX_SAFE_INTEGER = 2**53 - 1
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_NOT_PLAIN_KEYWORDS = ("items", "prefixItems", "additionalProperties", "patternProperties", "oneOf", "anyOf",
                       "allOf", "not", "if", "then", "else", "$defs", "definitions", "dependentSchemas",
                       "contains", "unevaluatedProperties", "unevaluatedItems", "propertyNames")


def encode_header_value(value: str) -> str:
    """``value`` as a header value: itself when plain visible ASCII, else ``=?base64?...?=`` (UTF-8)."""
    sentinel = value.startswith("=?base64?") and value.endswith("?=")
    if _SAFE.match(value) and value == value.strip(" \t") and not sentinel:
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def decode_header_value(value: str) -> str:
    """What a header value carries: ``encode_header_value`` reversed (the server side of the same codec).

    Leading and trailing whitespace is dropped first (RFC 9110 5.5: OWS is not part of the value). A value
    ``=?base64?<data>?=`` is the UTF-8 text of ``<data>`` decoded as strict Base64 (RFC 4648 alphabet, correct
    padding); any other value is itself, literally (``=?base64?abc`` without the ``?=`` too).

    Raises:
        ValueError: a ``=?base64?...?=`` value whose data is not valid Base64 or not UTF-8.
    """
    text = value.strip(" \t")
    if not (text.startswith("=?base64?") and text.endswith("?=") and len(text) >= len("=?base64??=")):
        return text
    data = text[len("=?base64?"):-2]
    try:
        return base64.b64decode(data.encode("ascii"), validate=True).decode("utf-8")
    except (ValueError, UnicodeError) as exc:  # binascii.Error is a ValueError
        raise ValueError(f"invalid Base64 header value: {exc}") from None


def request_headers(method: str, params: Mapping[str, Any] | None) -> dict[str, str]:
    """``Mcp-Method`` and, for ``tools/call``/``prompts/get``/``resources/read``, ``Mcp-Name``."""
    headers = {"Mcp-Method": method}
    field = _NAMED.get(method)
    if field is not None and params is not None and isinstance(params.get(field), str):
        headers["Mcp-Name"] = encode_header_value(params[field])
    return headers


def _walk(schema: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any, bool]]:
    """Every ``(path, subschema, plain)``: ``plain`` when reached from the root through ``properties`` only."""
    if not isinstance(schema, Mapping):
        return
    yield path, schema, True
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            yield from _walk(sub, (*path, str(name)))
    for keyword in _NOT_PLAIN_KEYWORDS:
        value = schema.get(keyword)
        subs = value if isinstance(value, list) else value.values() if (
            isinstance(value, Mapping) and keyword in ("$defs", "definitions", "patternProperties",
                                                       "dependentSchemas")) else [value]
        for sub in subs:
            for sub_path, node, _plain in _walk(sub, path):
                yield sub_path, node, False


def tool_header_problem(input_schema: Any) -> str | None:
    """Why the tool's ``x-mcp-header`` declarations are invalid, or None when they are valid (or absent)."""
    seen: set[str] = set()
    for path, node, plain in _walk(input_schema, ()):
        if "x-mcp-header" not in node:
            continue
        name = node["x-mcp-header"]
        where = "/".join(path) or "(root)"
        if not plain or not path:
            return f"x-mcp-header on {where!r} is not reachable through 'properties' alone"
        if not isinstance(name, str) or not name:
            return f"x-mcp-header on {where!r} is empty or not a string"
        if not _TOKEN.match(name):
            return f"x-mcp-header {name!r} on {where!r} is not an HTTP field-name token"
        if name.lower() in seen:
            return f"x-mcp-header {name!r} is declared twice (case-insensitively)"
        seen.add(name.lower())
        kind = node.get("type")
        if kind not in ("string", "integer", "boolean"):
            return f"x-mcp-header {name!r} is on a property of type {kind!r} (only string, integer, boolean)"
    return None


def header_paths(input_schema: Any) -> list[tuple[tuple[str, ...], str]]:
    """``[(property path, header name)]`` of a valid schema's ``x-mcp-header`` declarations."""
    return [(path, str(node["x-mcp-header"])) for path, node, plain in _walk(input_schema, ())
            if plain and path and isinstance(node.get("x-mcp-header"), str)]


def param_headers(paths: list[tuple[tuple[str, ...], str]], arguments: Any) -> dict[str, str]:
    """``{"Mcp-Param-<name>": encoded value}`` for each declared path that holds a string, integer or boolean."""
    headers: dict[str, str] = {}
    for path, name in paths:
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int) and abs(value) <= _MAX_SAFE_INTEGER:
            text = str(value)
        elif isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
            text = str(int(value))
        elif isinstance(value, str):
            text = value
        else:
            continue  # absent, null, or not a primitive the header can carry
        headers[f"Mcp-Param-{name}"] = encode_header_value(text)
    return headers


def message_headers(message: dict[str, Any], tool_header_paths: dict[str, list[tuple[tuple[str, ...], str]]],
                    ) -> dict[str, str]:
    """The 2026-07-28 ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` headers of a POST of ``message``.

    ``tool_header_paths``: tool name -> its ``x-mcp-header`` declarations (``header_paths``).
    """
    if "method" not in message:
        return {}
    method = str(message["method"])
    params = message.get("params") if isinstance(message.get("params"), dict) else None
    headers = request_headers(method, params)
    if method == "tools/call" and params is not None:
        headers.update(param_headers(tool_header_paths.get(str(params.get("name")), []), params.get("arguments")))
    return headers


_TRACE_KEYS = ("traceparent", "tracestate", "baggage")
_HEADER_SAFE = re.compile(r"^[\x20-\x7e]{1,8192}$")


def trace_headers(message: dict[str, Any]) -> dict[str, str]:
    """The W3C trace context of a request's ``params._meta`` as HTTP headers, in both eras.

    ``traceparent``, ``tracestate`` and ``baggage`` (W3C Trace Context and
    Baggage; MCP 2026-07-28 "Base Protocol" ``_meta``) go in the body and, the
    same values, in headers: gateways and servers that read the HTTP headers
    (an OpenTelemetry-instrumented HTTP server, a proxy) join the trace too.
    Values that are not printable ASCII are left out of the headers.
    """
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return {}
    return {key: meta[key] for key in _TRACE_KEYS
            if isinstance(meta.get(key), str) and _HEADER_SAFE.match(meta[key])}
