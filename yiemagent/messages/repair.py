"""Message repair: the request guard's checks of one OpenAI chat message on its own.

``_check_message(message, index)`` gives the message in a form a strict
OpenAI endpoint accepts (the same dict when nothing needed repair, else a new
one), one line per repair (naming ``messages[index]``) and the tool calls
whose names were replaced. Per message: keys a strict endpoint does not know
are dropped, except the fields a provider attached and needs back
(``yiemagent.formats.dialects``: ``reasoning_details``, ``thinking_blocks``; a tool
call's ``extra_content`` and ``thought_signature``), kept as strict JSON;
``content`` becomes text or valid parts (``image_url`` parts in user messages
only); each tool call gets exactly ``{"id", "type":
"function", "function": {"name", "arguments": "<JSON object text>"}}``, its
name made to match ``NAME_PATTERN`` (``valid_name``); a message ``name`` is
made valid or dropped; text JSON cannot carry is fixed (``yiemagent.textpolicy``).

What needs the whole request (the order of calls and results, unique and
short ids, the note on a renamed call's result) is ``RequestGuard``'s, in
``yiemagent.messages.guard``, whose module docstring lists every repair.

Spec: OpenAI Chat Completions ``messages``; RFC 8259.
"""

from __future__ import annotations

import operator
import re
from typing import Any

from ..exceptions import InvalidRequestError
from ..formats.dialects import MESSAGE_FIELDS, TOOL_CALL_FIELDS
from ..textpolicy import dumps_strict, is_clean_text, json_safe, loads_strict

__all__ = ["NAME_PATTERN", "valid_name"]

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""Function names OpenAI accepts, in ``tools`` and in ``tool_calls``."""
_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]+")
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_KEYS = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset({"role", "content", "tool_calls", "name", "refusal"}) | MESSAGE_FIELDS,
    "tool": frozenset({"role", "tool_call_id", "content"}),
}


def valid_name(name: Any) -> str:
    """A name matching ``NAME_PATTERN`` made from ``name`` (bad characters become ``_``, cut to 64)."""
    text = _BAD_CHARS.sub("_", name if isinstance(name, str) else str(name)).strip("_")[:64]
    return text or "unnamed_tool"


def _text(value: Any) -> str:
    """``value`` as text JSON can carry: a string fixed if need be, None as ``""``, anything else as JSON."""
    if isinstance(value, str):
        return value if is_clean_text(value) else str(json_safe(value))
    if value is None:
        return ""
    return value if isinstance(value, str) else dumps_strict(value)


def _parts(content: list[Any], allow_images: bool, where: str, repairs: list[str]) -> str | list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    changed = False
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str) and set(part) == {"type", "text"} \
                and is_clean_text(part["text"]):
            out.append(part)
        elif kind == "text" and isinstance(part, dict):
            out.append({"type": "text", "text": _text(part.get("text"))})
            changed = True
        elif allow_images and kind == "image_url" and isinstance(part.get("image_url"), dict) \
                and isinstance(part["image_url"].get("url"), str) and part["image_url"]["url"]:
            image = {"url": _text(part["image_url"]["url"])}
            if part["image_url"].get("detail") in ("low", "high", "auto"):
                image["detail"] = part["image_url"]["detail"]
            out.append({"type": "image_url", "image_url": image})
            changed = changed or image != part["image_url"] or set(part) != {"type", "image_url"}
        elif isinstance(part, str):
            out.append({"type": "text", "text": _text(part)})
            changed = True
        else:
            text = part.get("text") if isinstance(part, dict) and isinstance(part.get("text"), str) else None
            out.append({"type": "text", "text": _text(text) if text is not None else f"[{kind or 'part'} omitted]"})
            changed = True
    if not out:
        repairs.append(f"{where}: empty content list replaced by ''")
        return ""
    if changed:
        repairs.append(f"{where}: content parts made valid")
    if not allow_images:  # system, assistant and tool content: plain text is accepted everywhere
        return "".join(p["text"] for p in out)
    return out if changed else content


def _content(message: dict[str, Any], role: str, where: str, repairs: list[str]) -> Any:
    content = message.get("content")
    if isinstance(content, str):
        if is_clean_text(content):
            return content
        repairs.append(f"{where}: text JSON cannot carry fixed")
        return _text(content)
    if content is None:
        if role == "assistant":
            return None
        repairs.append(f"{where}: content missing or null replaced by ''")
        return ""
    if isinstance(content, list):
        if role == "assistant" and all(isinstance(p, dict) and p.get("type") == "refusal" for p in content) \
                and content:
            return content
        return _parts(content, role == "user", where, repairs)
    repairs.append(f"{where}: content {type(content).__name__} replaced by its text")
    return _text(content)


def _call(call: Any, index: int, where: str, repairs: list[str]) -> tuple[dict[str, Any], str | None]:
    """One tool call in exact form; returns (call, original name if it was replaced)."""
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        fn = call if isinstance(call, dict) else {}
    call_id = call.get("id") if isinstance(call, dict) else None
    if not isinstance(call_id, str) or not call_id or not is_clean_text(call_id):
        repairs.append(f"{where}: tool call {index} without a usable id given one")
        call_id = ""  # filled in by the order pass (it must be unique in the request)
    name = fn.get("name")
    renamed = None
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        renamed = name if isinstance(name, str) else str(name)
        name = valid_name(name)
        repairs.append(f"{where}: tool call name {renamed!r} is not valid; sent as {name!r}")
    arguments = fn.get("arguments")
    if isinstance(arguments, str):
        try:
            ok = isinstance(loads_strict(arguments), dict) and is_clean_text(arguments)
        except ValueError:
            ok = False
        if not ok:
            repairs.append(f"{where}: tool call {name!r} arguments are not a JSON object; sent as '{{}}'")
            arguments = "{}"
    elif isinstance(arguments, dict):
        arguments = dumps_strict(arguments)
        repairs.append(f"{where}: tool call {name!r} arguments object serialised")
    else:
        if arguments is not None:
            repairs.append(f"{where}: tool call {name!r} arguments {type(arguments).__name__} sent as '{{}}'")
        arguments = "{}"
    provider = {k: _json(v) for k, v in call.items() if k in TOOL_CALL_FIELDS} if isinstance(call, dict) else {}
    if isinstance(call, dict) and call_id and renamed is None and arguments is fn.get("arguments") \
            and call.get("type") == "function" and len(call) == 3 + len(provider) and len(fn) == 2 \
            and all(v is call[k] for k, v in provider.items()):
        return call, None  # already exact: the same object (keeps the identity fast paths)
    out = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}, **provider}
    if isinstance(call, dict) and (call.get("type") != "function" or set(call) != {"id", "type", "function",
                                                                                    *provider}
                                   or set(fn) != {"name", "arguments"}) and call_id:
        repairs.append(f"{where}: tool call {call_id!r} put in exact form")
    return out, renamed


def _json(value: Any) -> Any:
    """A provider field as strict JSON (the same object when it already is)."""
    try:
        dumps = dumps_strict(value)
        return value if loads_strict(dumps) == value else json_safe(value)
    except (ValueError, RecursionError):
        return json_safe(value)


class _Checked:
    """One message after the per-message checks."""

    __slots__ = ("message", "renamed", "repairs")

    def __init__(self, message: dict[str, Any], repairs: list[str], renamed: dict[int, str]) -> None:
        self.message = message
        self.repairs = repairs
        self.renamed = renamed
        """Call index -> original name, for calls whose name was replaced."""


def _plain_text(value: Any) -> bool:
    return type(value) is str and is_clean_text(value)


def _plain_call(call: Any) -> bool:
    """``{"id", "type": "function", "function": {"name", "arguments"}}`` exactly, every value valid."""
    if type(call) is not dict or len(call) != 3 or call.get("type") != "function":
        return False
    call_id, fn = call.get("id"), call.get("function")
    if type(call_id) is not str or not call_id or not is_clean_text(call_id) or type(fn) is not dict or len(fn) != 2:
        return False
    name, arguments = fn.get("name"), fn.get("arguments")
    if type(name) is not str or not NAME_PATTERN.match(name) or type(arguments) is not str \
            or not is_clean_text(arguments):
        return False
    try:
        return type(loads_strict(arguments)) is dict
    except ValueError:
        return False


def _plain(message: dict[str, Any], role: str) -> bool:
    """True for the shapes a formatter makes (and most histories hold) when nothing in them needs repair.

    The same verdict as the full checks below, reached with a few lookups: such
    a message goes out as the same dict, with no repair.
    """
    size = len(message)
    if role in ("user", "system", "developer", "tool"):
        if role == "tool":
            return size == 3 and type(message.get("tool_call_id")) is str and _plain_text(message.get("content"))
        return size == 2 and _plain_text(message.get("content"))
    if role != "assistant" or "content" not in message:
        return False
    content = message["content"]
    if size == 2:
        return _plain_text(content)
    calls = message.get("tool_calls")
    return size == 3 and type(calls) is list and bool(calls) and (content is None or _plain_text(content)) \
        and all(_plain_call(call) for call in calls)


def _check_message(message: Any, index: int) -> _Checked:
    """The checks of one message: plain ones (``_plain``) at once, any other through ``_check_full``."""
    if type(message) is dict:
        role = message.get("role")
        if role in _ROLES and _plain(message, role):
            return _Checked(message, [], {})
    return _check_full(message, index)


def _check_full(message: Any, index: int) -> _Checked:
    where = f"messages[{index}]"
    if not isinstance(message, dict):
        raise InvalidRequestError(f"{where}: a message must be a dict, not {type(message).__name__}")
    role = message.get("role")
    if role not in _ROLES:
        raise InvalidRequestError(f"{where}: unknown role {role!r} (expected one of {sorted(_ROLES)})")
    repairs: list[str] = []
    out: dict[str, Any] = {"role": role}
    dropped = sorted(str(k) for k in message if k not in _KEYS[role])
    if dropped:
        repairs.append(f"{where}: unknown keys {', '.join(dropped)} not sent")
    renamed: dict[int, str] = {}
    if role == "tool":
        call_id = message.get("tool_call_id")
        out["tool_call_id"] = call_id if isinstance(call_id, str) else ""
    out["content"] = _content(message, role, where, repairs)
    if "name" in message and role != "tool":
        name = message["name"]
        if isinstance(name, str) and NAME_PATTERN.match(name):
            out["name"] = name
        elif name is not None:
            fixed = _BAD_CHARS.sub("_", str(name)).strip("_")[:64]
            repairs.append(f"{where}: name {name!r} " + (f"sent as {fixed!r}" if fixed else "not sent"))
            if fixed:
                out["name"] = fixed
    if role == "assistant":
        for key in ("reasoning_content", "reasoning", "refusal"):
            value = message.get(key)
            if isinstance(value, str) and is_clean_text(value):
                out[key] = value
            elif value is not None:
                repairs.append(f"{where}: {key} that is not text not sent")
        for key in sorted(MESSAGE_FIELDS - {"reasoning_content", "reasoning"}):  # providers' blocks, as they came
            value = message.get(key)
            if isinstance(value, list):
                out[key] = _json(value)
            elif value is not None:
                repairs.append(f"{where}: {key} that is not a list not sent")
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            fixed_calls = []
            for i, call in enumerate(calls):
                fixed_call, original = _call(call, i, where, repairs)
                if original is not None:
                    renamed[i] = original
                fixed_calls.append(fixed_call)
            out["tool_calls"] = calls if all(map(operator.is_, fixed_calls, calls)) else fixed_calls
        elif calls is not None:
            repairs.append(f"{where}: empty or invalid tool_calls removed")
        if out["content"] is None and "tool_calls" not in out:
            out["content"] = ""
    same = not repairs and len(out) == len(message) and all(message.get(k) is v for k, v in out.items())
    return _Checked(message if same else out, repairs, renamed)
