"""The request guard: every request sent to a model is one a strict OpenAI endpoint accepts.

``RequestGuard()(messages, tools) -> (messages, tools, repairs)`` runs in the
agent loop right before each ``llm_call``, on exactly what goes out (after
``prepare_context``, ``format_messages`` and the system prompt, user versions
included). It checks the request, repairs what it can and lists every repair
(the loop reports them in a ``request_repaired`` event); what it cannot repair
raises ``InvalidRequestError`` before anything is sent. The input dicts are
never changed: a repaired message is a new dict.

Repairs, message by message:

* keys a strict endpoint does not know are dropped (assistant: only
  ``role, content, tool_calls, name, refusal, reasoning_content, reasoning``;
  user/system: ``role, content, name``; tool: ``role, tool_call_id, content``),
  except the fields a provider attached to its own reply and needs back
  (``yiemagent.formats.dialects``: ``reasoning_details`` and ``thinking_blocks``
  lists, a tool call's ``extra_content`` / ``thought_signature``): they go
  back unchanged (as strict JSON), since they are in a history only when
  the provider that reads them put them there;
* ``content``: ``None`` where text is required becomes ``""``; a list of
  parts keeps text parts (and ``image_url`` parts in user messages) and an
  empty list becomes ``""``; anything else becomes its text; assistant
  ``content: null`` stays only with ``tool_calls``;
* ``tool_calls``: an empty list is removed; each call gets exactly
  ``{"id", "type": "function", "function": {"name", "arguments"}}`` (and its
  provider fields); a
  missing or empty id gets one; ``arguments`` becomes a JSON object text
  (an object is serialised, anything else is ``"{}"``);
* a tool-call id longer than 40 characters is shortened (stable: a prefix
  and a hash), with its result, unless it carries a provider's signature
  (LiteLLM's ``call_x__thought__<signature>`` for Gemini 3: sent unchanged);
* a tool-call name breaking ``^[a-zA-Z0-9_-]{1,64}$`` (``web.search``,
  ``get weather now``) is replaced by a valid one (bad characters become
  ``_``) and the call's result text starts with a note naming the original,
  so the model still learns which name was wrong;
* strings that JSON cannot carry (lone surrogates) are fixed
  (``yiemagent.textpolicy``); a message ``name`` is made valid or dropped.

Repairs of the order (only a tool message right after the assistant message
that called it is valid, and every call needs its result):

* a tool message whose call is not in the assistant message right before its
  block (orphaned, e.g. by a sliding window) is dropped; a result found later
  in the request is moved to its call;
* a call without a result gets one saying no result is in the context;
* results are put in the order of the calls; a second result for one call is
  dropped; an id used twice in the request is renamed (with its result).

Tools: a parameters schema that is not an object schema becomes
``{"type": "object", "properties": {}}``; an array schema without ``items``
at any depth gets ``"items": {}`` (OpenAI: "array schema missing items");
``required`` that is not a list of names and ``properties`` entries that are
not schemas are fixed; values JSON cannot carry are replaced; a description
longer than 1024 characters is cut (OpenAI's limit). A tool name breaking the pattern, two
tools with one name, or a tool that is not a function object cannot be
repaired (the model's call could not be mapped back) and raise.

Cost: a message dict is checked once (the guard remembers dicts by identity,
like the formatter); a request that only grew since the previous one is
checked from where the previous one ended.

Code: the checks of one message on its own are in ``yiemagent.messages.repair``,
``fix_schema`` in ``yiemagent.formats.schema_repair``; this module keeps ``RequestGuard``.

Spec: OpenAI Chat Completions ``messages`` and ``tools``; RFC 8259.
"""

from __future__ import annotations

import hashlib
import logging
import operator
from typing import Any

from ..exceptions import InvalidRequestError
from ..formats.dialects import SIGNED_ID_MARKERS
from ..formats.schema_repair import fix_schema
from .history import History, Mark, grew_from, mark
from .repair import NAME_PATTERN, _check_message, _Checked, _text, valid_name

__all__ = ["NAME_PATTERN", "RequestGuard", "fix_schema", "valid_name"]

logger = logging.getLogger(__name__)

MAX_ID_CHARS = 40
"""OpenAI: ``tool_calls[].id`` "string too long. Expected a string with maximum length 40"."""
MAX_DESCRIPTION_CHARS = 1024
"""OpenAI: ``tools[].function.description`` "Expected a string with maximum length 1024"."""
_NO_RESULT = ("No result of this call is in the context (it was trimmed or lost); "
              "call the tool again if you still need it.")


def _short_id(call_id: str) -> str:
    """A stable id of at most ``MAX_ID_CHARS`` characters for a longer one (prefix and a hash)."""
    digest = hashlib.sha1(call_id.encode("utf-8", "replace")).hexdigest()[:8]
    return f"{call_id[:MAX_ID_CHARS - 9]}_{digest}"


# --------------------------------------------------------------------------- the guard


class RequestGuard:
    """Checks and repairs each request right before it is sent (see the module docstring).

    One guard belongs to one agent (it remembers the dicts it checked, by
    identity, as the formatter does); it is not for use from several threads
    at once.
    """

    def __init__(self) -> None:
        self._checked: dict[int, Any] = {}  # id -> the message (valid as it was) or (message, its check)
        self._tools: dict[int, tuple[Any, Any, list[str]]] = {}
        self._last_tools: tuple[list[Any], int, tuple[Any, ...], list[dict[str, Any]], list[str]] | None = None
        # what the last request ended with, when its end can be extended: (a copy of the messages, or the
        # mark of a History; the dicts sent; the tool-call ids sent; the repairs)
        self._prev: tuple[list[Any] | Mark, list[dict[str, Any]], set[str], list[str]] | None = None
        self._joined: tuple[Any, Mark, History[Any]] | None = None  # (head, mark of the body, [head, *body])
        self._lent: Mark | None = None  # the mark of the list lent by check(lend=True), until it is returned
        self.visited = 0
        """Message dicts looked at so far (each request: those after the reused prefix), for complexity tests."""

    def _check(self, message: Any, index: int) -> _Checked:
        hit = self._checked.get(id(message))
        if hit is message:  # checked before and valid as it was
            return _Checked(hit, [], {})
        if type(hit) is tuple and hit[0] is message:
            # repairs name their position: redo them so the event says where they are now
            return _check_message(message, index)
        checked = _check_message(message, index)
        # a valid message is remembered as itself (small); one that needed repairs with its check
        self._checked[id(message)] = message if checked.message is message and not checked.repairs \
            and not checked.renamed else (message, checked)
        return checked

    def check_tools(self, tools: Any) -> tuple[list[dict[str, Any]], list[str]]:
        """Return valid OpenAI function tools and the repairs made.

        Raises:
            InvalidRequestError: ``tools`` is not a list of function tools, a
                name breaks ``^[a-zA-Z0-9_-]{1,64}$``, or two tools share a name.
        """
        if tools is None:
            return [], []
        if not isinstance(tools, list):
            raise InvalidRequestError(f"tools must be a list, not {type(tools).__name__}")
        last = self._last_tools
        if last is not None and last[0] is tools and len(tools) == last[1] \
                and all(map(operator.is_, tools, last[2])):  # the registry's own list again, unchanged
            return list(last[3]), list(last[4])
        out: list[dict[str, Any]] = []
        repairs: list[str] = []
        names: set[str] = set()
        for i, spec in enumerate(tools):
            fn = spec.get("function") if isinstance(spec, dict) else None
            if not isinstance(fn, dict) or spec.get("type", "function") != "function":
                raise InvalidRequestError(f"tools[{i}] is not a function tool "
                                          "({'type': 'function', 'function': {...}})")
            name = fn.get("name")
            if not isinstance(name, str) or not NAME_PATTERN.match(name):
                raise InvalidRequestError(f"tools[{i}]: function name {name!r} does not match "
                                          f"{NAME_PATTERN.pattern} (rename the tool)")
            if name in names:
                raise InvalidRequestError(f"tools[{i}]: two tools are named {name!r}")
            names.add(name)
            params = fn.get("parameters")
            hit: tuple[Any, Any, list[str]] | None = self._tools.get(id(params))
            if hit is None or hit[0] is not params:
                fixed, fixes = fix_schema(params)
                hit = (params, fixed if fixes or fixed != params else params, fixes)
                if len(self._tools) > 4096:
                    self._tools.clear()
                self._tools[id(params)] = hit
            repairs.extend(f"tool {name!r}: {r}" for r in hit[2])
            new_fn: dict[str, Any] = {"name": name, "parameters": hit[1]}
            description = fn.get("description")
            if description is not None:
                text = _text(description)
                if len(text) > MAX_DESCRIPTION_CHARS:
                    text = text[:MAX_DESCRIPTION_CHARS - 1] + "\u2026"
                    repairs.append(f"tool {name!r}: description cut to {MAX_DESCRIPTION_CHARS} characters")
                new_fn["description"] = text
            if isinstance(fn.get("strict"), bool):
                new_fn["strict"] = fn["strict"]
            if hit[2] or new_fn.get("description") is not description or set(fn) - set(new_fn) \
                    or set(spec) != {"type", "function"}:
                out.append({"type": "function", "function": new_fn})
            else:
                out.append(spec)
        self._last_tools = (tools, len(tools), tuple(tools), out, repairs)
        return list(out), list(repairs)

    def __call__(self, messages: Any, tools: Any = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                                  list[str]]:
        """Check and repair one request.

        Args:
            messages: the OpenAI chat messages about to be sent.
            tools: the OpenAI function tools about to be sent (or None).

        Returns:
            ``(messages, tools, repairs)``: what to send instead (new lists;
            unchanged dicts are the same objects) and one line per repair
            (``[]`` when the request was valid as it was).

        Raises:
            InvalidRequestError: the request cannot be repaired (no messages,
                or none left once orphaned tool messages are left out; a
                message that is not a dict or has an unknown role; an invalid
                or duplicate tool name).
        """
        return self.check(messages, tools)

    def check(self, messages: Any, tools: Any = None, *, head: dict[str, Any] | None = None, lend: bool = False
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
        """``__call__`` for ``[head, *messages]`` (the loop's system prompt first), without copying ``messages``.

        While ``messages`` is a ``History`` that only grows (the formatter's own
        list) and ``head`` is the same object, only what was added is looked at
        (O(1) to tell). Same returns and errors as ``__call__``.

        ``lend=True``: the messages returned may be the guard's own list (no
        copy); the caller hands it back with ``returned`` once the request was
        sent, saying whether anyone kept it.
        """
        if not isinstance(messages, list):
            raise InvalidRequestError(f"messages must be a list, not {type(messages).__name__}")
        if head is not None:
            messages = self._join(head, messages)
        if not messages:
            raise InvalidRequestError("a request needs at least one message")
        fixed_tools, tool_repairs = self.check_tools(tools)
        if self._lent is not None:  # lent and never returned: as if kept
            self.returned(self._lent[0], kept=True)
        prev = self._prev
        self._prev = None
        start = None
        if prev is not None:
            if type(prev[0]) is tuple:  # the mark of a History
                start = grew_from(messages, prev[0])
                if start != prev[0][2] or start == len(messages):
                    start = None  # edited (the dicts sent need not match one to one), or not grown: read again
            elif len(prev[0]) < len(messages) and prev[0] == messages[:len(prev[0])]:
                start = len(prev[0])
        if prev is not None and start is not None:
            out, seen, repairs = prev[1], prev[2], list(prev[3])  # out and seen are the guard's own: extended
        else:
            start, out, seen, repairs = 0, History(), set(), []
        self.visited += len(messages) - start
        clean_end = self._order(messages, start, out, seen, repairs)
        if not out:
            raise InvalidRequestError("no message is left to send: " + "; ".join(repairs))
        if len(self._checked) > 2 * len(messages) + 256:
            live = {id(m) for m in messages}
            self._checked = {k: v for k, v in self._checked.items() if k in live}
        if clean_end:
            self._prev = (mark(messages) or list(messages), out, seen, list(repairs))
        if repairs or tool_repairs:
            logger.info("request repaired: %s", "; ".join([*repairs, *tool_repairs]))
        if lend and clean_end:
            self._lent = mark(out)
            return out, fixed_tools, [*repairs, *tool_repairs]
        return list(out), fixed_tools, [*repairs, *tool_repairs]

    def lent(self, messages: list[dict[str, Any]]) -> bool:
        """Whether ``messages`` is the list ``check(lend=True)`` lent (and not yet returned)."""
        return self._lent is not None and self._lent[0] is messages

    def returned(self, messages: list[dict[str, Any]], kept: bool) -> None:
        """The list ``check(lend=True)`` gave is back: ``kept``, someone holds it still (it is theirs now).

        A list kept is replaced by a copy, so the guard never changes it again;
        a list changed (the contract says it must not be) is forgotten, and the
        next request is checked in full.
        """
        lent, self._lent = self._lent, None
        prev = self._prev
        if lent is None or prev is None or prev[1] is not messages or lent[0] is not messages:
            return
        if grew_from(messages, lent) != lent[2] or len(messages) != lent[2]:
            self._prev = None  # changed by its borrower: nothing of it is trusted
        elif kept:
            self._prev = (prev[0], History(messages), prev[2], prev[3])

    def _join(self, head: dict[str, Any], body: list[Any]) -> list[Any]:
        """``[head, *body]``, extended in place while ``body`` only grows (a ``History``: O(1) to tell)."""
        joined = self._joined
        if joined is not None and joined[0] is head:
            grown = grew_from(body, joined[1])
            if grown is not None:
                if len(joined[2]) > grown + 1:
                    del joined[2][grown + 1:]
                joined[2].extend(body[grown:])
                self._joined = (head, mark(body) or joined[1], joined[2])
                return joined[2]
        body_mark = mark(body)
        if body_mark is None:  # a plain list: the request is compared with the last one (C speed)
            self._joined = None
            return [head, *body]
        whole: History[Any] = History([head, *body])
        self._joined = (head, body_mark, whole)
        return whole
    def _order(self, messages: list[Any], start: int, out: list[dict[str, Any]], seen: set[str],
               repairs: list[str]) -> bool:
        """Append the messages from ``start`` to ``out`` in a valid order; True if the end can be extended."""
        n = len(messages)
        consumed: set[int] = set()
        clean_end = True
        i = start
        while i < n:
            if i in consumed:
                i += 1
                continue
            checked = self._check(messages[i], i)
            repairs.extend(checked.repairs)
            message = checked.message
            role = message["role"]
            if role == "tool":
                repairs.append(f"messages[{i}]: tool message for {message.get('tool_call_id')!r} has no call "
                               "right before it; not sent")
                i += 1
                continue
            if role != "assistant" or not message.get("tool_calls"):
                out.append(message)
                clean_end = True
                i += 1
                continue
            # an assistant message with calls, and the block of tool messages right after it
            j = i + 1
            block: list[tuple[int, dict[str, Any]]] = []
            while j < n and isinstance(messages[j], dict) and messages[j].get("role") == "tool":
                if j not in consumed:
                    tool_checked = self._check(messages[j], j)
                    repairs.extend(tool_checked.repairs)
                    block.append((j, tool_checked.message))
                j += 1
            calls = message["tool_calls"]
            new_calls = []
            results: list[dict[str, Any]] = []
            used: set[int] = set()
            picked: list[int] = []
            synthesized = False
            for k, call in enumerate(calls):
                original_id = call["id"]
                call_id = original_id
                if len(call_id) > MAX_ID_CHARS and not any(m in call_id for m in SIGNED_ID_MARKERS):
                    call_id = _short_id(call_id)
                    repairs.append(f"messages[{i}]: tool call id {original_id[:20]!r}... is longer than "
                                   f"{MAX_ID_CHARS} characters; sent as {call_id!r}")
                if not call_id or call_id in seen:
                    base = (call_id or f"call_{len(seen)}")[:MAX_ID_CHARS - 4]
                    n_try = 2
                    call_id = base if base not in seen else f"{base}_{n_try}"
                    while call_id in seen:
                        n_try += 1
                        call_id = f"{base}_{n_try}"
                    if original_id:
                        repairs.append(f"messages[{i}]: tool call id {original_id!r} used twice; "
                                       f"sent as {call_id!r}")
                seen.add(call_id)
                if call_id != original_id:
                    call = {**call, "id": call_id}
                new_calls.append(call)
                result = None
                for pos, (_, tool) in enumerate(block):
                    if pos not in used and original_id and tool["tool_call_id"] == original_id:
                        used.add(pos)
                        picked.append(pos)
                        result = tool
                        break
                if result is None and original_id:
                    for later in range(j, n):
                        candidate = messages[later]
                        if later not in consumed and isinstance(candidate, dict) and candidate.get("role") == "tool" \
                                and candidate.get("tool_call_id") == original_id:
                            consumed.add(later)
                            later_checked = self._check(candidate, later)
                            repairs.extend(later_checked.repairs)
                            result = later_checked.message
                            repairs.append(f"messages[{later}]: result of {original_id!r} moved to its call")
                            break
                if result is None:
                    synthesized = True
                    repairs.append(f"messages[{i}]: tool call {call_id!r} has no result; one was added")
                    result = {"role": "tool", "tool_call_id": call_id, "content": _NO_RESULT}
                if result["tool_call_id"] != call_id:
                    result = {**result, "tool_call_id": call_id}
                original_name = checked.renamed.get(k)
                if original_name is not None and original_name not in str(result["content"]):
                    note = (f"[The tool name {original_name!r} is not a valid tool name; it was sent back as "
                            f"{call['function']['name']!r}.] ")
                    content = result["content"]
                    result = {**result, "content": note + content if isinstance(content, str)
                              else [{"type": "text", "text": note}, *content]}
                results.append(result)
            if picked != sorted(picked):
                repairs.append(f"messages[{i}]: tool results put in the order of the calls")
            for pos, (index, tool) in enumerate(block):
                if pos not in used:
                    repairs.append(f"messages[{index}]: tool message for {tool['tool_call_id']!r} does not answer "
                                   "a call of the assistant message before it; not sent")
            if any(a is not b for a, b in zip(new_calls, calls, strict=True)):
                message = {**message, "tool_calls": new_calls}
            out.append(message)
            out.extend(results)
            clean_end = not synthesized
            i = j
        return clean_end
