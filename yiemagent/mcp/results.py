"""Results: an MCP ``tools/call`` result as an ``AgentToolResult`` the model can read.

``isError`` -> ``is_error``; text -> text; images of a type a model takes
(``MODEL_IMAGE_TYPES``: png, jpeg, gif, webp) -> image parts, other image
types (SVG, TIFF...) -> a line naming type and size; embedded
resources -> their text (text, or a text-type blob) or an image part (an
image blob) under a line naming their URI; resource links -> a line naming
URI, type, title and description; audio and other blobs -> short
placeholders (never base64 inlined as text); ``structuredContent`` alone ->
its JSON text; a size cap with a visible truncation note. What is kept in
``details`` is capped too (``MCPLimits.max_structured_chars``,
``max_meta_chars``): a 50 MB ``structuredContent`` is never kept whole in the
history or the saved state.

Spec: MCP 2025-11-25, "Tools" ("Tool Result"). Cases C16, C17, C18.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import email.message
import json
import re
from typing import Any

from ..messages import ImageContent, TextContent
from ..messages.types import MODEL_IMAGE_TYPES, is_model_image_type
from ..tools import AgentToolResult, cap_result
from .limits import MCPLimits, truncate_text

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "content_part",
    "header_field",
    "resource_link_text",
    "resource_part",
    "result_to_tool_result",
]

DEFAULT_MAX_RESULT_CHARS = 100_000
"""Characters of a tool result the model sees by default (text plus image data)."""

PREVIEW_CHARS = 1000
"""Characters of a value too large for ``details`` kept as its ``preview``."""

_DEFAULT_LIMITS = MCPLimits()


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # not from JSON after all: keep something readable
        return repr(value)


def _kept(value: Any, text: str, max_chars: int | None) -> Any:
    """``value`` if its JSON ``text`` fits ``max_chars``, else a visible stand-in with a preview."""
    if max_chars is None or len(text) <= max_chars:
        return value
    return {"truncated": True, "chars": len(text), "max_chars": max_chars,
            "preview": truncate_text(text, min(PREVIEW_CHARS, max_chars))}


def _size_of(data: Any) -> int:
    """Decoded bytes of base64 ``data`` (approximate: 3/4 of its length)."""
    return len(data) * 3 // 4 - (data.endswith("=") + data.endswith("==")) if isinstance(data, str) else 0


_LINE_BREAKING = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def header_field(value: Any) -> str:
    """``value`` as one field of a ``[resource ...]`` line: control characters and line breaks escaped.

    A server's URI, name, title, mimeType or description with a newline (or
    ``\\r``, U+2028...) could otherwise start a line of its own that looks like
    one the client wrote (``[resource file:///etc/passwd]``); each such
    character becomes its Python escape (``\\n``, ``\\x1b``, ``\\u2028``).
    """
    return _LINE_BREAKING.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(value))


def _label(*parts: Any) -> str:
    """The inside of a ``[...]`` line the client writes: the given fields, escaped (``header_field``)."""
    return " ".join(header_field(p) for p in parts if p not in (None, ""))


_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+)?(?:;[\w=.+-]+)*;base64,", re.ASCII)


def _image_part(data: str, mime: Any) -> TextContent | ImageContent:
    """An image block as an ``ImageContent`` a strict model API accepts, else a placeholder saying why.

    MCP ``data`` is bare base64, but servers also send a whole ``data:`` URL
    (it was prefixed twice), base64 with line breaks, or text that is not
    base64 at all, and a ``mimeType`` that is not an image: a provider
    rejects the whole request for one such image, so it is normalised
    (prefix dropped, its MIME type used when ``mimeType`` is missing,
    whitespace removed) or left out with a note.
    """
    found = _DATA_URL.match(data)
    if found is not None:
        data = data[found.end():]
        mime = mime or found.group(1)
    mime = str(mime or "image/png")
    if any(space in data for space in (" ", "\n", "\r", "\t")):  # base64 wrapped at 76 columns (RFC 2045)
        data = "".join(data.split())
    if not mime.lower().startswith("image/"):
        return TextContent(f"[image left out: mimeType {mime[:60]!r} is not an image type]")
    if not is_model_image_type(mime):  # e.g. SVG: one would make every later model request fail
        return TextContent(f"[image {header_field(mime[:60])}, {_size_of(data)} bytes, left out: the model takes "
                           f"{', '.join(sorted(t[6:] for t in MODEL_IMAGE_TYPES))} images only]")
    mime = mime.split(";", 1)[0].strip().lower().replace("image/jpg", "image/jpeg")
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return TextContent(
            f"[image {header_field(mime[:60])} left out: its data ({len(data):,} characters) is not base64]")
    return ImageContent.from_base64(data, mime)


_TEXT_MIME = re.compile(r"text/|application/([\w.+-]*\+)?(json|xml|yaml|x-yaml|javascript|ecmascript|toml|"
                        r"x-sh|x-python|sql|graphql|csv|markdown)\b", re.ASCII | re.IGNORECASE)


def _charset(mime: str) -> str:
    """The ``charset`` parameter of a Content-Type (``text/plain; charset=latin-1`` -> ``latin-1``), else UTF-8.

    Parsed by the standard library's ``email.message`` (RFC 2045 parameters, quoting); an unknown charset
    name gives UTF-8.
    """
    message = email.message.Message()
    message["Content-Type"] = mime
    charset = message.get_content_charset("utf-8") or "utf-8"
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return "utf-8"


def _decoded_text(blob: str, mime: str = "") -> str | None:
    """The text of base64 ``blob`` in ``mime``'s charset (default UTF-8), or None when it does not decode."""
    try:
        return base64.b64decode("".join(blob.split()), validate=True).decode(_charset(mime))
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return None


def resource_part(resource: Any) -> TextContent | ImageContent:
    """One resource's contents (``resources/read`` item, or the ``resource`` of an embedded resource) as a part.

    ``{"uri", "mimeType"?, "text"}`` -> its text under a ``[resource <uri>
    <mimeType>]`` line; ``{"uri", "mimeType"?, "blob"}`` (base64) by
    ``mimeType``: a model image type (``MODEL_IMAGE_TYPES``: png, jpeg, gif,
    webp) -> an ``ImageContent`` (normalised as tool images are), a text type
    (``text/*``, JSON, XML, YAML...) that decodes in its ``charset`` parameter
    (default UTF-8; ``text/plain; charset=latin-1`` is Latin-1) -> its text
    under the same line, anything else (SVG and other ``image/*`` too) ->
    ``[resource <uri> <mimeType>, N bytes]`` (binary data is never inlined as
    text). URI and mimeType are escaped in the ``[...]`` line (``header_field``).

    Spec: MCP 2025-11-25, "Resources" (Resource Contents), "Tools" (Embedded Resources).
    """
    if not isinstance(resource, dict):
        return TextContent(f"[unsupported resource contents {type(resource).__name__}]")
    uri, mime = resource.get("uri", ""), resource.get("mimeType", "")
    label = _label("resource", uri, mime)
    if isinstance(resource.get("text"), str):
        return TextContent(f"[{label}]\n{resource['text']}")
    blob = resource.get("blob")
    if isinstance(blob, str) and is_model_image_type(mime):
        return _image_part(blob, mime)
    if isinstance(blob, str) and isinstance(mime, str) and _TEXT_MIME.match(mime):
        text = _decoded_text(blob, mime)
        if text is not None:
            return TextContent(f"[{label}]\n{text}")
    return TextContent(f"[{label}, {_size_of(blob)} bytes]")


def resource_link_text(block: dict[str, Any]) -> str:
    """The line a ``resource_link`` becomes: ``[resource link <uri> <mimeType> <title or name>] <description>``.

    One line whatever the server sent: every field is escaped (``header_field``).
    """
    title = block.get("title") or block.get("name") or ""
    text = f"[{_label('resource link', block.get('uri', ''), block.get('mimeType'), title)}]"
    description = block.get("description")
    return f"{text} {header_field(description)}" if isinstance(description, str) and description else text


def content_part(block: Any) -> TextContent | ImageContent:
    """One MCP content block (``text``, ``image``, ``audio``, ``resource``, ``resource_link``) as text or image.

    No base64 is ever inlined as text (C18); embedded resources go through
    ``resource_part``, resource links become ``resource_link_text``; unknown
    types become ``[unsupported content type '<type>']``.

    Spec: MCP 2025-11-25, "Tools" (Tool Result content), "Prompts" (PromptMessage content).
    """
    if not isinstance(block, dict):
        return TextContent(f"[unsupported content {type(block).__name__}]")
    kind = block.get("type")
    if kind == "text":
        return TextContent(str(block.get("text", "")))
    if kind == "image" and isinstance(block.get("data"), str):
        return _image_part(block["data"], block.get("mimeType"))
    if kind == "audio":
        mime = block.get("mimeType") or "unknown"
        return TextContent(f"[{_label('audio', mime)}, {_size_of(block.get('data'))} bytes]")
    if kind == "resource" and isinstance(block.get("resource"), dict):
        return resource_part(block["resource"])
    if kind == "resource_link":
        return TextContent(resource_link_text(block))
    return TextContent(f"[unsupported content type {kind!r}]")


def result_to_tool_result(
    result: dict[str, Any], *, max_chars: int | None = DEFAULT_MAX_RESULT_CHARS, limits: MCPLimits | None = None
) -> AgentToolResult:
    """Turn an MCP ``tools/call`` result into an ``AgentToolResult``.

    ``isError`` -> ``is_error`` (C16); text blocks -> text; images -> image
    parts (a short placeholder in ``.text``); embedded resources ->
    ``resource_part`` (text under a ``[resource <uri> <mime>]`` line, image
    blobs as images); resource links -> ``resource_link_text``; audio and
    binary blobs -> short placeholders naming URI, type and size (C18); an empty
    ``content`` with ``structuredContent`` -> its JSON text (C17).

    Args:
        result: ``{"content": [...], "isError"?: bool, "structuredContent"?: {...}, "_meta"?: {...}}``.
        max_chars: characters (text plus image base64) the model may see;
            beyond it text is cut, images are left out, and a last text part
            says ``[truncated: the tool result has N characters; the first
            M are shown]``. None: no cap.
        limits: caps of what ``details`` keeps (``max_structured_chars``,
            ``max_meta_chars``); None uses ``MCPLimits()`` (1,000,000 and
            100,000 characters of JSON).

    Returns:
        ``AgentToolResult``; ``details`` keeps ``structuredContent`` and
        ``_meta`` (each replaced by ``{"truncated": True, "chars": N,
        "max_chars": M, "preview": "<first 1,000 chars>…[truncated K
        chars]"}`` when over its cap, and then the model's text says so),
        plus ``{"truncated": {"chars": N, "max_chars": M}}`` when the text was cut.

    Spec: MCP 2025-11-25, "Tools" ("Tool Result").
    """
    limits = limits or _DEFAULT_LIMITS
    content = result.get("content")
    blocks: list[Any] = content if isinstance(content, list) else []
    parts = [content_part(b) for b in blocks]
    details: dict[str, Any] = {}
    if "structuredContent" in result:
        structured = result["structuredContent"]
        text = _json_text(structured)
        details["structuredContent"] = _kept(structured, text, limits.max_structured_chars)
        if structured is not None and not any(
            isinstance(p, ImageContent) or (isinstance(p, TextContent) and p.text) for p in parts
        ):
            parts = [TextContent(text)]
        elif details["structuredContent"] is not structured:
            parts.append(TextContent(
                f"[structuredContent of {len(text):,} characters left out: over the "
                f"{limits.max_structured_chars:,} character cap]"))
    if "_meta" in result:
        meta = result["_meta"]
        details["_meta"] = _kept(meta, _json_text(meta), limits.max_meta_chars)
    converted = AgentToolResult(parts, is_error=bool(result.get("isError")), details=details or None)
    return cap_result(converted, max_chars)
