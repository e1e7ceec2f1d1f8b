"""Results: an MCP ``tools/call`` result as an ``AgentToolResult`` the model can read.

``isError`` -> ``is_error``; text -> text; images -> image parts; embedded
resources, resource links, audio and blobs -> readable text or short
placeholders (never base64 inlined as text); ``structuredContent`` alone ->
its JSON text; a size cap with a visible truncation note.

Spec: MCP 2025-11-25, "Tools" ("Tool Result"). Cases C16, C17, C18.
"""

from __future__ import annotations

import json
from typing import Any

from ..messages import ImageContent, TextContent
from ..tools import AgentToolResult, cap_result

__all__ = ["DEFAULT_MAX_RESULT_CHARS", "result_to_tool_result"]

DEFAULT_MAX_RESULT_CHARS = 100_000
"""Characters of a tool result the model sees by default (text plus image data)."""


def _size_of(data: Any) -> int:
    """Decoded bytes of base64 ``data`` (approximate: 3/4 of its length)."""
    return len(data) * 3 // 4 - (data.endswith("=") + data.endswith("==")) if isinstance(data, str) else 0


def _label(*parts: Any) -> str:
    return " ".join(str(p) for p in parts if p not in (None, ""))


def _content_part(block: Any) -> TextContent | ImageContent:
    """One MCP content block as text or image (C18: no base64 inlined as text)."""
    if not isinstance(block, dict):
        return TextContent(f"[unsupported content {type(block).__name__}]")
    kind = block.get("type")
    if kind == "text":
        return TextContent(str(block.get("text", "")))
    if kind == "image" and isinstance(block.get("data"), str):
        return ImageContent.from_base64(block["data"], str(block.get("mimeType") or "image/png"))
    if kind == "audio":
        mime = block.get("mimeType") or "unknown"
        return TextContent(f"[{_label('audio', mime)}, {_size_of(block.get('data'))} bytes]")
    if kind == "resource" and isinstance(block.get("resource"), dict):
        resource = block["resource"]
        uri, mime = resource.get("uri", ""), resource.get("mimeType", "")
        if isinstance(resource.get("text"), str):
            return TextContent(f"[{_label('resource', uri, mime)}]\n{resource['text']}")
        return TextContent(f"[{_label('resource', uri, mime)}, {_size_of(resource.get('blob'))} bytes]")
    if kind == "resource_link":
        title = block.get("title") or block.get("name") or ""
        text = f"[{_label('resource link', block.get('uri', ''), block.get('mimeType'), title)}]"
        description = block.get("description")
        return TextContent(f"{text} {description}" if isinstance(description, str) and description else text)
    return TextContent(f"[unsupported content type {kind!r}]")


def result_to_tool_result(
    result: dict[str, Any], *, max_chars: int | None = DEFAULT_MAX_RESULT_CHARS
) -> AgentToolResult:
    """Turn an MCP ``tools/call`` result into an ``AgentToolResult``.

    ``isError`` -> ``is_error`` (C16); text blocks -> text; images -> image
    parts (a short placeholder in ``.text``); embedded text resources -> their
    text under a ``[resource <uri> <mime>]`` line; blobs, audio and resource
    links -> short placeholders naming URI, type and size (C18); an empty
    ``content`` with ``structuredContent`` -> its JSON text (C17).

    Args:
        result: ``{"content": [...], "isError"?: bool, "structuredContent"?: {...}, "_meta"?: {...}}``.
        max_chars: characters (text plus image base64) the model may see;
            beyond it text is cut, images are left out, and a last text part
            says ``[truncated: the tool result has N characters; the first
            M are shown]``. None: no cap.

    Returns:
        ``AgentToolResult``; ``details`` keeps ``structuredContent`` and
        ``_meta``, plus ``{"truncated": {"chars": N, "max_chars": M}}`` when cut.

    Spec: MCP 2025-11-25, "Tools" ("Tool Result").
    """
    blocks: list[Any] = result["content"] if isinstance(result.get("content"), list) else []
    parts = [_content_part(b) for b in blocks]
    structured = result.get("structuredContent")
    if structured is not None and not any(
        isinstance(p, ImageContent) or (isinstance(p, TextContent) and p.text) for p in parts
    ):
        parts = [TextContent(json.dumps(structured, ensure_ascii=False))]
    details = {k: result[k] for k in ("structuredContent", "_meta") if k in result}
    converted = AgentToolResult(parts, is_error=bool(result.get("isError")), details=details or None)
    return cap_result(converted, max_chars)
