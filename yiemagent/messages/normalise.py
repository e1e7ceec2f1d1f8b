"""Replies normalised at the entry: whatever the agent accepts can be saved and loaded again.

``storable_reply(message)`` is applied by ``parse_response`` to every reply it
reads, before the agent sees it: every value becomes strict JSON (the rules
of ``yiemagent.textpolicy.json_safe``: NaN and Infinity, lone surrogates,
bytes, non-string keys, tuples and other objects replaced; values already
strict are kept as they are), and ``finish_reason`` becomes text
(``finish_reason_text``: ``7`` -> ``"7"``, an object -> its JSON text), and
numeric strings in ``usage`` become numbers (``yiemagent._internal.numbers``:
``"12"`` tokens count as 12, ``12.0`` as 12). So a
reply answered ``completed`` round-trips through ``state_to_json``,
``Agent.from_state`` and both stores (issue 15: one reply with
``finish_reason: 7`` made every later agent on its conversation fail).

Spec: RFC 8259 (JSON); yiemagent's saved message form (``yiemagent.messages.dicts``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from .._internal.numbers import peer_usage
from ..textpolicy import MAX_DEPTH, is_clean_text, json_safe
from .types import AssistantMessage

__all__ = ["finish_reason_text", "storable_reply"]


def finish_reason_text(value: Any) -> str | None:
    """A reply's finish reason as text: a string kept, None kept, anything else as its JSON text (7 -> "7")."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _json_text(value)[:200]
    return _json_text(value)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(json_safe(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):  # pragma: no cover - json_safe leaves only JSON
        return type(value).__name__


def _strict(value: Any, depth: int = 0) -> bool:
    """True when ``value`` is JSON that loads back equal: UTF-8 text, finite numbers, lists, string keys."""
    if value is None or isinstance(value, (bool, int)):
        return True
    if isinstance(value, str):
        return is_clean_text(value)
    if isinstance(value, float):
        return math.isfinite(value)
    if depth > MAX_DEPTH:
        return False
    if type(value) is list:
        return all(_strict(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(isinstance(k, str) and is_clean_text(k) and _strict(v, depth + 1) for k, v in value.items())
    return False


def _clean(value: Any) -> Any:
    """``value`` unchanged when it is strict JSON (``_strict``), else made so by ``json_safe``."""
    if value is None or (type(value) is str and value.isascii()):  # most fields: no walk needed
        return value
    return value if _strict(value) else json_safe(value)


def storable_reply(message: AssistantMessage) -> AssistantMessage:
    """Normalise a reply at the entry so that whatever is accepted can be saved and loaded again.

    Every value becomes strict JSON (``yiemagent.textpolicy.json_safe``: NaN, lone
    surrogates, bytes, odd keys and objects replaced); ``finish_reason`` is text.
    """
    for part in message.content:
        part.text = _clean(part.text)
    for call in message.tool_calls:
        call.id, call.name = _clean(call.id), _clean(call.name)
        call.arguments = _clean(call.arguments)
        call.extra = _clean(call.extra)
        call.error, call.raw_arguments, call.note = _clean(call.error), _clean(call.raw_arguments), _clean(call.note)
    message.extra = _clean(message.extra)
    message.usage = _clean(peer_usage(message.usage))  # "12" tokens are 12; -1e9 or NaN tokens are unknown
    message.finish_reason = _clean(message.finish_reason)
    message.model = _clean(message.model)
    return message
