"""The saved form of a conversation: ``state_to_json()`` text and back (``Conversation``, the stores).

Shape: ``{"version": 1, "history": [<message dict>, ...], "usage": {...}, "system_prompt": str | null}``,
message dicts as ``yiemagent.messages.dicts`` writes them (lossless).
"""

from __future__ import annotations

from typing import Any

from .._internal.jsonload import loads_bounded
from ..exceptions import FormatError
from ..messages import Message, messages_from_dicts
from ..textpolicy import boundary, json_text

__all__ = ["parse_state", "saved_state_text"]


def parse_state(state: str) -> tuple[list[Message], dict[str, Any], str | None]:
    """``(history, usage, system_prompt)`` of ``state_to_json()`` text.

    Raises:
        FormatError: ``state`` is not a saved state (also a tampered message); the
            only exception, for any input (a property test checks it).
    """
    try:
        return _parse_state(state)
    except FormatError:
        raise
    except (RecursionError, MemoryError) as exc:  # nesting a message's repr cannot follow
        raise FormatError(f"not a saved agent state: nested too deeply ({type(exc).__name__})") from None
    except Exception as exc:  # a shape no check above expects: still not a saved state
        raise FormatError(f"not a saved agent state: {type(exc).__name__}: {exc}") from exc


def _parse_state(state: str) -> tuple[list[Message], dict[str, Any], str | None]:
    try:
        data = loads_bounded(state)
    except (ValueError, TypeError, RecursionError) as exc:
        raise FormatError(f"not a saved agent state: {exc}", raw=state) from exc
    if not isinstance(data, dict) or "history" not in data:
        raise FormatError("not a saved agent state: no history", raw=state)
    history = messages_from_dicts(data["history"])  # FormatError for anything tampered
    usage = data.get("usage") or {}
    system_prompt = data.get("system_prompt")
    if not isinstance(usage, dict) or not isinstance(system_prompt, (str, type(None))):
        raise FormatError("not a saved agent state: usage must be an object, system_prompt a string", raw=state)
    return history, dict(usage), system_prompt


@boundary("saved_state", "json")
def saved_state_text(state: dict[str, Any]) -> str:
    """The text of a saved state (``state_to_json``: ``/save``, the durable store's commit).

    The outbound text policy's ``json`` rule (``yiemagent.textpolicy``): a
    lone surrogate in a tool result becomes U+FFFD, NaN null, C1 controls are
    escaped, known secrets ``***``; never raises.
    """
    return json_text(state)

