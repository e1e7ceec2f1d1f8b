"""LLM calls: the ``llm_call`` contract, streaming deltas and chunk merging (no HTTP here).

Contract of an ``llm_call``::

    llm_call(messages: list[dict], tools: list[dict]) -> dict

``messages`` are OpenAI chat messages, system first; ``tools`` are OpenAI
function tools (maybe empty: then the model must answer in text). It returns a
chat-completions reply (or any shape ``yiemagent.messages.tool_calls`` reads). It is
called on a worker thread, one call at a time per agent. It may raise; the run
then ends with an error answer. It must not change ``messages``.

Streaming (optional): an ``llm_call`` that has a keyword parameter named
``on_delta`` gets one from the loop (detected once per callable with
``inspect.signature``) and may call it, from any thread, while the reply is
being written::

    on_delta("text", "Hel")                       # answer text
    on_delta("reasoning", "I should")             # thinking text
    on_delta("tool_call", '{"city": "Pa', tool_call_index=0, tool_call_id="call_1",
             tool_name="get_weather")             # a piece of a call's arguments

Each becomes a ``MessageUpdateEvent`` delivered to the event sink on the
loop's thread, in order, before the assistant's ``message_end``. The return
value is still the whole reply: deltas are a preview, never the record.
Callables without ``on_delta`` work as before.

Abort (optional): an ``llm_call`` with a keyword parameter named
``abort_event`` gets the run's ``threading.Event``; once it is set the call
should send nothing more and drop a reply that arrives (``openai_chat`` does).
``cancel()``, when the callable has one, cuts what is already connected.

Incomplete streams: a streamed reply whose stream ended (or broke) after some
chunks, without ``data: [DONE]`` and without any ``finish_reason``, comes
back merged with ``finish_reason: "incomplete"`` (yiemagent's own value):
the loop treats it like ``"length"`` (cut arguments are not repaired, the run
ends ``truncated``).

Spec: OpenAI Chat Completions (chunks and replies). The HTTP client for
OpenAI-compatible servers is ``yiemagent.models.openai_chat``.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any, Literal, Protocol

from ..exceptions import FormatError
from .dialects import merge_field
from .harmony import split_harmony

__all__ = ["INCOMPLETE", "ChunkDeltas", "LLMCall", "OnDelta", "StreamMerger", "accepts_keyword", "accepts_on_delta",
           "merge_chunks"]

logger = logging.getLogger("yiemagent.formats.llm")

INCOMPLETE = "incomplete"
"""``finish_reason`` of a streamed reply that ended without ``[DONE]`` and without a ``finish_reason``."""


class LLMCall(Protocol):
    """``llm_call(messages, tools) -> reply`` (see the module docstring)."""

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """Return the model's reply to ``messages`` with ``tools`` offered."""
        ...


class OnDelta(Protocol):
    """``on_delta(delta_type, delta, *, tool_call_index=None, tool_call_id=None, tool_name=None)``.

    The callback a streaming ``llm_call`` reports pieces of its reply to (see
    the module docstring). Safe to call from any thread; it returns at once.
    """

    def __call__(
        self,
        delta_type: Literal["text", "reasoning", "tool_call"],
        delta: str,
        *,
        tool_call_index: int | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
    ) -> None:
        """Report one piece of the reply."""
        ...


class ChunkDeltas:
    """Turns ``chat.completion.chunk`` dicts into ``on_delta`` calls, one chunk at a time.

    Remembers each tool call's id and name by ``index`` so that every
    ``tool_call`` delta names its call, even when the id and name came only
    in the call's first chunk (OpenAI) or in every chunk (llama.cpp). A new
    id at an index already used is a new call (some servers stream every
    parallel call at ``index`` 0): its deltas carry the new id, so a call is
    told apart by ``(tool_call_index, tool_call_id)``. Only choice ``index`` 0
    is read, as ``_merge_chunks`` does.

    Content that starts with gpt-oss harmony markup (``<|channel|>``,
    ``<|start|>``: a server without a harmony parser) is not shown raw: the
    analysis channel is reported as ``reasoning``, the answer channels as
    ``text``, calls not at all (``yiemagent.formats.harmony``). A reasoning text a
    server mirrors in ``reasoning_content`` and ``reasoning`` is reported once.

    Spec: OpenAI Chat Completions streaming, ``choices[].delta``.
    """

    def __init__(self, on_delta: OnDelta | None) -> None:
        self.on_delta = on_delta
        self._calls: dict[int, tuple[str | None, str | None]] = {}
        self._harmony: bool | None = None  # None: not known yet
        self._content = ""  # held back (not known yet) or the whole harmony text so far
        self._shown = {"text": "", "reasoning": ""}

    def feed(self, chunk: dict[str, Any]) -> None:
        """Report the deltas in one chunk (nothing when ``on_delta`` is None)."""
        on_delta = self.on_delta
        if on_delta is None:
            return
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            for key in ("reasoning_content", "reasoning"):
                if isinstance(delta.get(key), str) and delta[key] and not (
                        key == "reasoning" and delta[key] == delta.get("reasoning_content")):  # mirrored: once
                    on_delta("reasoning", delta[key])
            if isinstance(delta.get("content"), str) and delta["content"]:
                self._text(delta["content"], on_delta)
            for call in delta.get("tool_calls") or []:
                if not isinstance(call, dict):
                    continue
                index = call.get("index", len(self._calls))
                index = index if isinstance(index, int) else len(self._calls)
                known_id, known_name = self._calls.get(index, (None, None))
                fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
                call_id = call["id"] if isinstance(call.get("id"), str) and call["id"] else known_id
                name = fn["name"] if isinstance(fn.get("name"), str) and fn["name"] else known_name
                new_id = call_id is not None and known_id is not None and call_id != known_id
                if new_id:  # a new call at a used index (parallel calls all at index 0): its own name
                    name = fn.get("name") if isinstance(fn.get("name"), str) and fn.get("name") else None
                first = index not in self._calls or new_id
                self._calls[index] = (call_id, name)
                piece: str = fn["arguments"] if isinstance(fn.get("arguments"), str) else ""
                if piece or first:
                    on_delta("tool_call", piece, tool_call_index=index, tool_call_id=call_id, tool_name=name)


    def _text(self, piece: str, on_delta: OnDelta) -> None:
        """Report a content piece: as it came, or read as harmony channels (see the class docstring)."""
        if self._harmony is False:
            on_delta("text", piece)
            return
        self._content += piece
        if self._harmony is None:
            start = self._content.lstrip()
            if start.startswith(_HARMONY_STARTS):
                self._harmony = True
            elif any(marker.startswith(start) for marker in _HARMONY_STARTS):
                return  # maybe the start of a marker: wait for more
            else:
                self._harmony = False
                on_delta("text", self._content)
                self._content = ""
                return
        text = self._content
        cut = text.rfind("<|")
        if cut != -1 and "|>" not in text[cut:]:  # a token cut between chunks: wait for its end
            text = text[:cut]
        reply = split_harmony(text)
        if reply is None:
            return
        for kind, now in (("reasoning", reply.reasoning), ("text", reply.text)):
            shown = self._shown[kind]
            if len(now) > len(shown) and now.startswith(shown):
                on_delta("reasoning" if kind == "reasoning" else "text", now[len(shown):])
                self._shown[kind] = now


_HARMONY_STARTS = ("<|channel|>", "<|start|>")


def accepts_keyword(func: Any, name: str, *, var_keyword: bool = True) -> bool:
    """True if ``func`` takes the keyword argument ``name`` (read from its signature).

    The one signature check for optional keywords handed to user code
    (``llm_call``'s ``on_delta``/``abort_event``/``request_fields``, MCP
    callbacks' ``abort_event``). ``var_keyword``: a ``**kwargs`` parameter
    counts too. A callable without a signature (some builtins) takes none.
    """
    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):  # no signature (some builtins and C callables)
        return False
    parameter = parameters.get(name)
    if parameter is not None and parameter.kind in (
            inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        return True
    return var_keyword and any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def accepts_on_delta(llm_call: Any, name: str = "on_delta") -> bool:
    """True if ``llm_call`` has a named keyword parameter ``name`` (``**kwargs`` does not count).

    ``on_delta``: a streaming ``llm_call``. ``abort_event``: the run's ``threading.Event``; an
    ``llm_call`` that takes it stops sending, and drops a reply that arrives, once the run is
    aborted (``openai_chat`` does).
    """
    return accepts_keyword(llm_call, name, var_keyword=False)



class StreamMerger:
    """Assembles ``chat.completion.chunk`` dicts, fed one at a time, into one ``chat.completion`` reply.

    Tool-call deltas are merged by ``index``, except that a delta bringing a
    new ``id`` at an index whose call already has another id starts a new call
    (Ollama through LiteLLM streams every parallel call at ``index: 0``; source:
    smolagents #1569, vercel/ai #14277). Calls keep the order they first
    appeared in, by index. ``usage`` is the last one reported, kept whole
    (nested ``prompt_tokens_details`` / ``completion_tokens_details`` too).
    Only choice ``index`` 0 is read; malformed pieces (a delta or call that is
    not an object, a non-integer index) are skipped, never raised on.

    Provider fields (``yiemagent.formats.dialects``): other keys of a delta
    (OpenRouter's ``reasoning_details``, LiteLLM's ``thinking_blocks``) and of
    a tool-call delta (Gemini's ``extra_content``) are merged with
    ``merge_field`` and come back on the message and on the call. A delta
    carrying one reasoning text under both ``reasoning_content`` and
    ``reasoning`` (a mirroring server) counts it once.
    """

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.reasoning: dict[str, str] = {}
        self.calls: list[tuple[int, dict[str, Any]]] = []
        """(index, call) in order of first appearance."""
        self.by_index: dict[int, dict[str, Any]] = {}
        """The call each index currently extends."""
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.first: dict[str, Any] | None = None
        self.extra: dict[str, Any] = {}
        """Other keys of the deltas (provider fields), merged."""

    def feed(self, chunk: dict[str, Any]) -> None:
        """Merge one chunk (a chunk that is not an object, or a malformed piece of one, is skipped)."""
        if not isinstance(chunk, dict):
            return
        if self.first is None:
            self.first = chunk
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._delta(delta)
            if isinstance(choice.get("finish_reason"), str) and choice["finish_reason"]:
                self.finish_reason = choice["finish_reason"]

    def _delta(self, delta: dict[str, Any]) -> None:
        if isinstance(delta.get("content"), str):
            self.texts.append(delta["content"])
        for key in ("reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str) and not (key == "reasoning" and delta[key] and delta[key] == delta.get(
                    "reasoning_content") and "reasoning" not in self.reasoning):  # mirrored: counted once
                self.reasoning[key] = self.reasoning.get(key, "") + delta[key]
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                self._tool_call(call)
        for key, value in delta.items():
            if key not in _DELTA_KEYS and isinstance(key, str) and value is not None:
                self.extra[key] = _merged(self.extra.get(key), value, key)

    def _tool_call(self, call: dict[str, Any]) -> None:
        index = call.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = len(self.calls)
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else None
        slot = self.by_index.get(index)
        if slot is None or (call_id is not None and slot["id"] is not None and slot["id"] != call_id):
            slot = {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            self.calls.append((index, slot))
            self.by_index[index] = slot
        if call_id is not None:
            slot["id"] = call_id
        fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
        if isinstance(fn.get("name"), str) and fn["name"] and not slot["function"]["name"]:
            slot["function"]["name"] = fn["name"]
        if isinstance(fn.get("arguments"), str):
            slot["function"]["arguments"] += fn["arguments"]
        for key, value in call.items():
            if key not in _CALL_DELTA_KEYS and isinstance(key, str) and value is not None:
                slot[key] = _merged(slot.get(key), value, key)

    def reply(self, finish_reason: str | None = None) -> dict[str, Any]:
        """The merged reply; ``finish_reason`` replaces a missing one (e.g. ``"incomplete"``)."""
        first = self.first or {}
        message: dict[str, Any] = {**self.extra, "role": "assistant",
                                   "content": "".join(self.texts) if self.texts else None, **self.reasoning}
        if self.calls:
            order = sorted(range(len(self.calls)), key=lambda i: (self.calls[i][0], i))
            message["tool_calls"] = [self.calls[i][1] for i in order]
        reply: dict[str, Any] = {
            "id": first.get("id"), "object": "chat.completion", "model": first.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason or finish_reason}],
        }
        if self.usage is not None:
            reply["usage"] = self.usage
        return reply


_DELTA_KEYS = frozenset({"role", "content", "reasoning_content", "reasoning", "tool_calls"})
_CALL_DELTA_KEYS = frozenset({"index", "id", "type", "function"})


def _merged(old: Any, new: Any, key: str) -> Any:
    """``merge_field`` that keeps ``old`` for a value it cannot merge (nesting too deep, an odd object)."""
    try:
        return merge_field(old, new, key)
    except (RecursionError, TypeError, ValueError, AttributeError):  # deepcopy of an odd object
        return old


def _merge_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Assemble streamed ``chat.completion.chunk`` deltas into one ``chat.completion`` reply."""
    merger = StreamMerger()
    for chunk in chunks:
        if isinstance(chunk, dict):
            merger.feed(chunk)
    return merger.reply()


def merge_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Assemble ``chat.completion.chunk`` dicts (in order) into one ``chat.completion`` reply dict.

    For adapters of other client libraries that stream; the result has the
    shape ``parse_response`` reads. Parallel calls sharing one ``index`` with
    different ids stay separate calls; nested ``usage`` details are kept;
    provider fields are merged (``StreamMerger``). Items that are not chunk
    objects, and malformed pieces of chunks, are skipped.

    Raises:
        FormatError: ``chunks`` is not a list or tuple (the only exception, for any input).

    Spec: OpenAI Chat Completions streaming.
    """
    if not isinstance(chunks, (list, tuple)):
        raise FormatError(f"chunks must be a list of chunk objects, not {type(chunks).__name__}", raw=chunks)
    return _merge_chunks(list(chunks))
