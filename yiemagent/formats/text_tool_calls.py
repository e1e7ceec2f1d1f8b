"""Tool calls written inside the reply text, and the JSON repairs they need.

Many local servers (llama.cpp without a parser, vLLM without
``--tool-call-parser``, LM Studio, Ollama with some templates) hand the
model's tool-call markup back as plain ``content``. ``find_text_calls`` reads
it, one small recogniser per dialect, and returns the text with the markup
removed::

    <tool_call>{"name": "f", "arguments": {...}}</tool_call>        Hermes / Qwen (several allowed)
    <tool_call><function=f><parameter=p>v</parameter></function></tool_call>   Qwen3-coder XML
    [TOOL_CALLS][{"name": "f", "arguments": {...}}]                 Mistral, JSON-array dialect
    [TOOL_CALLS]f[ARGS]{...}                                        Mistral, v11+ dialect
    <|python_tag|>{"name": "f", "parameters": {...}}; {...}         Llama 3.x
    {"name": "f", "parameters": {...}}                              Llama 3.x JSON, trailing prose kept
    [f(a=1), g(b="x")]                                              pythonic (Llama 3.2, Llama 4)
    [TOOL_REQUEST]{"name": "f", "arguments": {...}}[END_TOOL_REQUEST]    LM Studio
    ```json {"name": "f", "arguments": {...}} ```                   fenced JSON

Gating: explicit markup (tags, ``[TOOL_CALLS]``, ``[TOOL_REQUEST]``) is a call
even for an unknown name (the model then learns the name is wrong); bare JSON,
fenced JSON and pythonic lists count only when every name is registered, so
prose that merely looks like JSON stays text. ``<think>...</think>`` is
reasoning and is never searched.

Quoted markup is text: explicit markup inside Markdown inline code or a fenced
block (``yiemagent.formats.markdown_code``) is a reply showing the format, never a
call, for every format (harmony too, ``yiemagent.formats.harmony``). A model's real
call is written in its format's own markup, never wrapped in code; the one
format whose markup is a fence (fenced JSON) is gated by registered names.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from .._internal.jsonload import DEFAULT_MAX_DEPTH, JSONDepthError, loads_bounded, nesting_exceeds
from .markdown_code import CodeRanges, code_ranges

__all__ = ["TextCall", "find_text_calls", "repair_json_object", "split_reasoning"]

_decoder = json.JSONDecoder()


@dataclass
class TextCall:
    """A call found in text, before ids are given."""

    name: str
    arguments: Any = None
    """A dict, a JSON string, or None (no arguments)."""
    id: str | None = None
    error: str | None = None
    """Why the call cannot run (broken markup or JSON)."""
    note: str | None = None
    """An unambiguous repair that was applied."""
    extra: dict[str, Any] | None = None
    """Unknown keys of a structured call (a provider's, e.g. Gemini's ``extra_content``)."""


# --------------------------------------------------------------------------- JSON helpers


def repair_json_object(text: str) -> tuple[dict[str, Any], str] | None:
    """Apply only unambiguous repairs to a JSON object text; return (object, note) or None.

    Repairs: a trailing comma before ``}``/``]``; missing closing braces or
    brackets at the very end when the text stops after a complete value.
    A text cut inside a string, or after ``:``/``,``, is not repaired.
    """
    stack: list[str] = []
    out: list[str] = []
    notes: list[str] = []
    in_string = escape = False
    pending_comma: int | None = None  # index in out of a comma not yet followed by a value
    for char in text:
        if in_string:
            out.append(char)
            if escape:
                escape = False
            elif char == "\\":
                escape = True
            elif char == '"':
                in_string = False
            continue
        if char.isspace():
            out.append(char)
            continue
        if char in "}]":
            if pending_comma is not None:
                del out[pending_comma]
                notes.append("removed a trailing comma")
            pending_comma = None
            if not stack or stack.pop() != char:
                return None
            out.append(char)
            continue
        if pending_comma is not None:
            pending_comma = None
        if char == ",":
            pending_comma = len(out)
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char == '"':
            in_string = True
        out.append(char)
    if in_string or pending_comma is not None:
        return None
    stripped = "".join(out).rstrip()
    if stack:
        if not stripped or stripped[-1] in ":,{[":
            return None
        notes.append(f"added {len(stack)} missing closing {'brace' if len(stack) == 1 else 'braces'}")
        stripped += "".join(reversed(stack))
    if not notes:
        return None
    try:
        value = loads_bounded(stripped)
    except (ValueError, RecursionError):
        return None
    return (value, "; ".join(notes)) if isinstance(value, dict) else None


def _object_at(text: str, pos: int, *, repair: bool, stop: str | None = None) -> tuple[Any, int, str | None] | None:
    """Decode a JSON value at ``pos``; with ``repair``, try repairs up to ``stop`` (or the end)."""
    try:
        value, end = _decoder.raw_decode(text, pos)
        if nesting_exceeds(value, DEFAULT_MAX_DEPTH):  # under the decoder's stack but past the one bound
            raise JSONDepthError(DEFAULT_MAX_DEPTH)
        return value, end, None
    except (ValueError, RecursionError):
        if not repair:
            return None
    end = text.find(stop, pos) if stop else -1
    end = len(text) if end == -1 else end
    repaired = repair_json_object(text[pos:end].rstrip())
    if repaired is None:
        return None
    return repaired[0], end, repaired[1]


def _call_from_object(obj: Any) -> TextCall | None:
    """``{"name", "arguments"|"parameters"}`` (or OpenAI's ``{"function": {...}}``) as a call."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):
        obj = {**obj["function"], "id": obj.get("id")}
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    for key in ("arguments", "parameters", "args", "input"):
        if key in obj:
            return TextCall(name, obj[key], obj.get("id") if isinstance(obj.get("id"), str) else None)
    return TextCall(name, None, obj.get("id") if isinstance(obj.get("id"), str) else None)


def _has_arguments_key(obj: Any) -> bool:
    target = obj.get("function") if isinstance(obj, dict) and isinstance(obj.get("function"), dict) else obj
    return isinstance(target, dict) and any(k in target for k in ("arguments", "parameters"))


# --------------------------------------------------------------------------- reasoning

_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)


def split_reasoning(text: str) -> tuple[str, str]:
    """Move ``<think>...</think>`` blocks (an unclosed one runs to the end) out of ``text``.

    A leading ``</think>`` without an opening tag (the opening was in the
    prompt) makes everything before it reasoning.
    """
    reasoning: list[str] = []
    if "</think>" in text and "<think>" not in text.split("</think>", 1)[0]:
        before, text = text.split("</think>", 1)
        reasoning.append(before)
    if "<think>" in text:
        def keep(match: re.Match[str]) -> str:
            reasoning.append(match.group(1))
            return ""

        text = _THINK.sub(keep, text)
    return text, "".join(reasoning).strip()


# --------------------------------------------------------------------------- recognisers
# Each: (text, names, truncated) -> (remaining text, calls) or None when not its shape.

Names = Collection[str] | None


def _find_markup(text: str, marker: str, start: int = 0, codes: CodeRanges | None = None) -> int:
    """The first ``marker`` at or after ``start`` not quoted in Markdown code (``markdown_code``); -1 if none."""
    codes = code_ranges(text) if codes is None else codes
    pos = text.find(marker, start)
    while pos != -1 and pos in codes:
        pos = text.find(marker, pos + len(marker))
    return pos


def _tagged_json_calls(text: str, opener: str, closer: str, truncated: bool) -> tuple[str, list[TextCall]] | None:
    """Blocks ``opener {json} closer``; the JSON is decoded string-aware (C05). Quoted blocks are text."""
    if opener not in text:
        return None
    codes = code_ranges(text)
    if _find_markup(text, opener, 0, codes) == -1:
        return None
    calls: list[TextCall] = []
    kept: list[str] = []
    pos = 0
    while True:
        start = _find_markup(text, opener, pos, codes)
        if start == -1:
            kept.append(text[pos:])
            break
        kept.append(text[pos:start])
        body = start + len(opener)
        while body < len(text) and text[body].isspace():
            body += 1
        if text.startswith("<function=", body):  # Qwen3-coder XML inside the tag
            end = text.find(closer, body)
            end = len(text) if end == -1 else end
            xml = _qwen_xml_calls(text[body:end], None, truncated)
            calls.extend(xml[1] if xml else [TextCall("", error="the <function=...> block does not parse")])
            pos = end + len(closer) if end < len(text) else end
            continue
        decoded = _object_at(text, body, repair=not truncated, stop=closer) if text[body:body + 1] in "{[" else None
        if decoded is None:
            end = text.find(closer, body)
            inner = text[body:end if end != -1 else len(text)].strip()
            name = inner if re.fullmatch(r"[\w.-]{1,64}", inner) else ""
            reason = "cut off by the token limit" if truncated and end == -1 else "is not valid JSON"
            calls.append(TextCall(name, error=f"the {opener} block {reason}: {inner[:80]!r}"))
            pos = len(text) if end == -1 else end + len(closer)
            continue
        value, end, note = decoded
        items = value if isinstance(value, list) else [value]
        for item in items:
            call = _call_from_object(item)
            calls.append(call if call is not None else TextCall("", error=f"{opener} holds no call: {item!r:.80}"))
            if call is not None and note:
                call.note = note
        while end < len(text) and text[end].isspace():
            end += 1
        if text.startswith(closer, end):
            end += len(closer)
        pos = end
    return "".join(kept), calls


def _hermes(text: str, names: Names, truncated: bool) -> tuple[str, list[TextCall]] | None:
    return _tagged_json_calls(text, "<tool_call>", "</tool_call>", truncated)


def _lmstudio(text: str, names: Names, truncated: bool) -> tuple[str, list[TextCall]] | None:
    return _tagged_json_calls(text, "[TOOL_REQUEST]", "[END_TOOL_REQUEST]", truncated)


_XML_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|$)", re.DOTALL)
_XML_MARKUP = re.compile(_XML_FUNCTION.pattern + "|</?tool_call>", re.DOTALL)
_XML_PARAMETER = re.compile(r"<parameter=([^>\s]+)>(.*?)(?:</parameter>|(?=<parameter=)|$)", re.DOTALL)


def _xml_value(raw: str) -> Any:
    value = raw[1:] if raw.startswith("\n") else raw
    value = value[:-1] if value.endswith("\n") else value
    try:
        return loads_bounded(value)
    except (ValueError, RecursionError):
        return value


def _qwen_xml_calls(text: str, names: Names, truncated: bool) -> tuple[str, list[TextCall]] | None:
    """Qwen3-coder: ``<function=name><parameter=p>value</parameter></function>``."""
    if "<function=" not in text:
        return None
    codes = code_ranges(text)
    found = [m for m in _XML_FUNCTION.finditer(text) if m.start() not in codes]  # quoted blocks are text
    if not found:
        return None
    calls = []
    for match in found:
        arguments = {m.group(1): _xml_value(m.group(2)) for m in _XML_PARAMETER.finditer(match.group(2))}
        closed = match.group(0).endswith("</function>")
        error = None if closed or not truncated else "the <function=...> block was cut off by the token limit"
        calls.append(TextCall(match.group(1), arguments, error=error))
    remaining = _XML_MARKUP.sub(lambda m: m.group(0) if m.start() in codes else "", text)
    return remaining, calls


def _mistral(text: str, names: Names, truncated: bool) -> tuple[str, list[TextCall]] | None:
    """``[TOOL_CALLS]`` followed by a JSON array, or by ``name[ARGS]{...}`` (repeated)."""
    marker = "[TOOL_CALLS]"
    start = _find_markup(text, marker) if marker in text else -1
    if start == -1:
        return None
    kept, rest = text[:start], text[start:]
    calls: list[TextCall] = []
    pos = 0
    while rest.startswith(marker, pos):
        pos += len(marker)
        while pos < len(rest) and rest[pos].isspace():
            pos += 1
        if rest[pos:pos + 1] in "[{":
            decoded = _object_at(rest, pos, repair=not truncated, stop=marker)
            if decoded is None:
                calls.append(TextCall("", error="the [TOOL_CALLS] JSON does not parse"))
                pos = len(rest)
                break
            value, pos, note = decoded
            for item in value if isinstance(value, list) else [value]:
                call = _call_from_object(item)
                if call is not None:
                    call.note = note
                calls.append(call or TextCall("", error=f"[TOOL_CALLS] holds no call: {item!r:.80}"))
        else:
            match = re.match(r"([\w.-]+)(?:\[CALL_ID\]([\w-]+))?\[ARGS\]", rest[pos:])
            if match is None:
                calls.append(TextCall("", error="[TOOL_CALLS] is not followed by a call"))
                pos = len(rest)
                break
            pos += match.end()
            decoded = _object_at(rest, pos, repair=not truncated, stop=marker)
            if decoded is None:
                end = rest.find(marker, pos)
                calls.append(TextCall(match.group(1), error="the [ARGS] JSON does not parse" +
                                      (" (cut off by the token limit)" if truncated else "")))
                pos = len(rest) if end == -1 else end
                continue
            value, pos, note = decoded
            calls.append(TextCall(match.group(1), value, match.group(2), note=note))
        while pos < len(rest) and rest[pos].isspace():
            pos += 1
    return kept + rest[pos:], calls


def _python_tag(text: str, names: Names, truncated: bool) -> tuple[str, list[TextCall]] | None:
    """Llama 3.x ``<|python_tag|>{...}; {...}``."""
    marker = "<|python_tag|>"
    start = _find_markup(text, marker) if marker in text else -1
    if start == -1:
        return None
    body = text[start + len(marker):].replace("<|eom_id|>", "").replace("<|eot_id|>", "")
    found = _json_objects(body, names=None, require_arguments=False, truncated=truncated)
    if found is None:
        return text[:start], [TextCall("", error="<|python_tag|> is not followed by a JSON call")]
    remaining, calls = found
    return text[:start] + remaining, calls


def _json_objects(
    text: str, names: Names, *, require_arguments: bool, truncated: bool
) -> tuple[str, list[TextCall]] | None:
    """Leading JSON call objects separated by ``;`` or whitespace; the rest is kept as text."""
    pos = len(text) - len(text.lstrip())
    calls: list[TextCall] = []
    while pos < len(text) and text[pos] in "{[":
        decoded = _object_at(text, pos, repair=False)
        if decoded is None:
            break
        value, end, _ = decoded
        items = value if isinstance(value, list) else [value]
        found = [_call_from_object(item) for item in items]
        if not items or any(c is None for c in found):
            break
        if require_arguments and not all(_has_arguments_key(item) for item in items):
            break
        if names is not None and not all(c.name in names for c in found if c is not None):
            break
        calls.extend(c for c in found if c is not None)
        pos = end
        while pos < len(text) and (text[pos].isspace() or text[pos] == ";"):
            pos += 1
    if not calls:
        return None
    return text[pos:], calls


def _bare_json(text: str, names: Names, truncated: bool) -> tuple[str, list[TextCall]] | None:
    """Llama 3.x JSON as the whole reply (or its start); needs registered names and an arguments key."""
    if names is None:
        return None
    return _json_objects(text, names, require_arguments=True, truncated=truncated)


_FENCE = re.compile(r"```[ \t]*(?:json|tool_call|tool_code)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


def _fenced(text: str, names: Names, truncated: bool) -> tuple[str, list[TextCall]] | None:
    """Fenced ```json blocks whose content is a call (or a list of calls) with registered names."""
    if names is None or "```" not in text:
        return None
    calls: list[TextCall] = []

    def take(match: re.Match[str]) -> str:
        found = _json_objects(match.group(1), names, require_arguments=True, truncated=truncated)
        if found is None or found[0].strip():
            return match.group(0)
        calls.extend(found[1])
        return ""

    remaining = _FENCE.sub(take, text)
    return (remaining, calls) if calls else None


def _pythonic(text: str, names: Names, truncated: bool) -> tuple[str, list[TextCall]] | None:
    """``[f(a=1), g(b="x")]`` as the whole reply; every name must be registered."""
    stripped = text.strip()
    if names is None or not (stripped.startswith("[") and stripped.endswith(")]")):
        return None
    try:
        tree = ast.parse(stripped, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # deep nesting raises the last two
        return None
    if not isinstance(tree.body, ast.List):
        return None
    calls = []
    for node in tree.body.elts:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args):
            return None
        if node.func.id not in names:
            return None
        try:
            arguments = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return None
        calls.append(TextCall(node.func.id, arguments))
    return ("", calls) if calls else None


_RECOGNISERS: tuple[Callable[[str, Names, bool], tuple[str, list[TextCall]] | None], ...] = (
    _lmstudio,
    _mistral,
    _hermes,
    _qwen_xml_calls,
    _python_tag,
    _fenced,
    _pythonic,
    _bare_json,
)


def find_text_calls(text: str, names: Names = None, *, truncated: bool = False) -> tuple[str, list[TextCall]]:
    """Find tool calls written in ``text``.

    Args:
        text: the reply text, reasoning already removed (``split_reasoning``).
        names: registered tool names, for gating; None recognises only explicit markup.
        truncated: the reply was cut by the token limit (``finish_reason == "length"``):
            no repairs, and an unfinished call is reported as cut off.

    Returns:
        ``(text without the call markup, calls)``; ``calls`` is empty when the
        text holds none.
    """
    for recognise in _RECOGNISERS:
        try:
            found = recognise(text, names, truncated)
        except RecursionError:  # nesting deeper than any call: this shape does not hold a call
            continue
        if found is not None and found[1]:
            return found
    return text, []
