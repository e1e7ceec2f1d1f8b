"""Sampling: a server's ``sampling/createMessage`` answered by an ``llm_call`` (the agent's own model).

::

    sampler = LLMSampler(llm_call, approve=lambda server, params: True)
    client = MCPClient(url, callbacks=ClientCallbacks(sampling=sampler))

``LLMSampler(server_name, params) -> CreateMessageResult`` converts the
request into the OpenAI chat request ``llm_call(messages, tools)`` takes:

- ``systemPrompt`` -> a ``system`` message first;
- ``text`` / ``image`` / ``audio`` content -> a text part, an ``image_url``
  part (``data:<mimeType>;base64,<data>``), an ``input_audio`` part
  (``format`` from the ``mimeType``: wav, mp3, ...); a message of text only
  becomes a plain string;
- ``tool_use`` blocks of an assistant message -> its ``tool_calls``
  (``arguments`` = the ``input`` as a JSON string); ``tool_result`` blocks of
  a user message -> one ``{"role": "tool", "tool_call_id": toolUseId}``
  message each (its text content joined; ``isError`` prefixes "Error: ");
- ``tools`` (MCP ``Tool``) -> OpenAI function tools; ``toolChoice.mode``
  (auto / required / none) -> ``tool_choice``; ``maxTokens`` ->
  ``max_tokens``, ``temperature``, ``stopSequences`` -> ``stop``. These
  request fields reach an ``llm_call`` that takes a ``request_fields``
  keyword or ``**kwargs`` (``yiemagent.models.openai_chat`` does); others
  get the messages and tools only (the spec leaves the final say to the
  client). An ``llm_call`` (or ``approve``) that takes ``abort_event`` (or
  ``**kwargs``) gets the client's abort event, set when the request is cut
  (``cancel_in_flight``, ``close``, ``Agent.abort``). One signature check
  for all: ``yiemagent.formats.llm.accepts_keyword``.

The reply (any shape ``yiemagent.messages.tool_calls.parse_response`` reads) becomes
``{"role": "assistant", "content", "model", "stopReason"}``: one ``text``
block, or a list of ``tool_use`` blocks (with the text first, when there is
some); ``stopReason`` from ``finish_reason``: stop -> ``endTurn``, length ->
``maxTokens``, tool_calls (or any tool call) -> ``toolUse``, content_filter
-> ``refusal``, others kept as they are; ``model`` is the reply's ``model``,
else the ``llm_call``'s ``model`` attribute, else ``"unknown"``.

Bounds and cost (``yiemagent.mcp.limits``): a request over the call's or the
run's bound (``max_sampling_per_call`` 16, ``max_sampling_per_run`` 64), or
one the paying run's ``UsageLimits`` forbid (``meter``, given by ``Agent``),
is refused with -1 before anyone is asked; ``max_tokens`` is at most
``max_sampling_tokens`` (4,096); each reply's ``usage`` goes to the run
(``agent.usage``, and one ``requests`` under its limits).

Approval: ``approve(server_name, params)`` runs first and may return True
(go on), False (refused: JSON-RPC error -1 "User rejected sampling
request", the spec's code) or a dict of changed params (e.g. a smaller
``maxTokens``). The default approves: the sampler is something the
application chose to give its servers (pydantic-ai's ``allow_sampling``
defaults to True for the same reason); an application with a person at
hand passes an ``approve`` that asks (the spec SHOULD: "a human in the loop
with the ability to deny"). A request that breaks the spec's content rules
(a ``tool_result`` mixed with other content, a ``tool_use`` without its
result, tools sent while this sampler declines tools) is refused with
-32602.

Spec: MCP 2025-11-25 "Client Features / Sampling" (incl. "Tools in Sampling",
SEP-1577) and 2026-07-28 (the same ``CreateMessageRequest`` as an input
request); OpenAI Chat Completions (``messages``, ``tools``, ``tool_choice``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from .._internal.checks import check_int
from .._internal.numbers import peer_count, peer_number
from ..exceptions import ToolCallFormatError
from ..formats.llm import accepts_keyword
from . import call_scope
from .limits import MCPLimits
from .server_messages import RequestRefused, call_with_abort

__all__ = [
    "USER_REJECTED",
    "LLMSampler",
    "SamplingApproval",
    "SamplingMeter",
    "sampling_request_to_chat",
    "sampling_result_from_reply",
]

logger = logging.getLogger("yiemagent.mcp")

USER_REJECTED = -1
"""JSON-RPC error code for a refused sampling request (MCP 2025-11-25, "Sampling", Error Handling)."""

class SamplingMeter(Protocol):
    """The run that pays for sampling (``yiemagent.loop.spend.RunSpend`` is one)."""

    def reserve(self, max_calls: int | None = None) -> str | None:
        """Count one more request, or the text saying why not."""

    def record(self, reply_usage: dict[str, Any] | None, model: str | None = None) -> None:
        """Add a reply's usage to the run."""


SamplingApproval = Callable[[str, dict[str, Any]], "bool | dict[str, Any]"]
"""``approve(server_name, params) -> True | False | changed params``."""

_STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "incomplete": "maxTokens", "tool_calls": "toolUse",
                 "function_call": "toolUse", "content_filter": "refusal"}
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3",
                  "audio/mp3": "mp3", "audio/ogg": "ogg", "audio/flac": "flac", "audio/webm": "webm"}


def _blocks(content: Any) -> list[dict[str, Any]]:
    blocks = content if isinstance(content, list) else [content]
    if not all(isinstance(block, dict) for block in blocks):
        raise RequestRefused(-32602, "a sampling message's content must be a content block or a list of them")
    return blocks


def _part(block: dict[str, Any]) -> dict[str, Any]:
    from ..messages.types import is_model_image_type  # here: the message types load with the first request
    from .results import header_field

    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind == "image":
        mime = block.get("mimeType", "image/png")
        if not is_model_image_type(mime):  # e.g. SVG: a model request carrying it would be refused
            return {"type": "text", "text": f"[image {header_field(str(mime)[:60])} left out: not a type the "
                                            f"model accepts ({len(str(block.get('data', ''))):,} base64 characters)]"}
        return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{block.get('data', '')}"}}
    if kind == "audio":
        mime = str(block.get("mimeType", "audio/wav")).lower()
        return {"type": "input_audio", "input_audio": {"data": str(block.get("data", "")),
                                                       "format": _AUDIO_FORMATS.get(mime, mime.split("/")[-1])}}
    raise RequestRefused(-32602, f"unsupported content type in a sampling message: {str(kind)[:40]!r}")


def _result_text(block: dict[str, Any]) -> str:
    pieces = []
    for item in block.get("content") or []:
        if isinstance(item, dict) and item.get("type") == "text":
            pieces.append(str(item.get("text", "")))
        elif isinstance(item, dict):
            pieces.append(f"[{item.get('type')} content]")
    if isinstance(block.get("structuredContent"), dict) and not pieces:
        pieces.append(json.dumps(block["structuredContent"], ensure_ascii=False))
    text = "\n".join(pieces)
    return f"Error: {text}" if block.get("isError") else text


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if all(part["type"] == "text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return parts


def sampling_request_to_chat(
    params: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """``(messages, tools, request_fields)`` for ``llm_call`` from ``CreateMessageRequest`` params (see the module).

    Raises:
        RequestRefused: -32602 for a request that breaks the spec's rules
            (no messages, an unknown role or content type, a ``tool_result``
            mixed with other content, a ``tool_use`` not answered by the
            next message).
    """
    raw_messages = params.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise RequestRefused(-32602, "sampling/createMessage needs a non-empty messages list")
    messages: list[dict[str, Any]] = []
    if isinstance(params.get("systemPrompt"), str) and params["systemPrompt"]:
        messages.append({"role": "system", "content": params["systemPrompt"]})
    open_calls: set[str] = set()
    for message in raw_messages:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise RequestRefused(-32602, "a sampling message needs role 'user' or 'assistant'")
        blocks = _blocks(message.get("content"))
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if open_calls and (not results or {str(b.get("toolUseId")) for b in results} != open_calls):
            raise RequestRefused(-32602, "Tool result missing in request")
        open_calls = set()
        if results:
            if len(results) != len(blocks) or message["role"] != "user":
                raise RequestRefused(-32602, "Tool results mixed with other content")
            messages.extend({"role": "tool", "tool_call_id": str(b.get("toolUseId")), "content": _result_text(b)}
                            for b in results)
            continue
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        if uses and message["role"] == "assistant":
            text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            calls = [{"id": str(b.get("id")), "type": "function",
                      "function": {"name": str(b.get("name")),
                                   "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False)}}
                     for b in uses]
            messages.append({"role": "assistant", "content": text or None, "tool_calls": calls})
            open_calls = {str(b.get("id")) for b in uses}
            continue
        parts = [_part(b) for b in blocks]
        if message["role"] == "assistant":
            parts = [p for p in parts if p["type"] == "text"]  # the chat format has no assistant images
        messages.append({"role": message["role"], "content": _content(parts)})
    if open_calls:
        raise RequestRefused(-32602, "Tool result missing in request")
    tools = [{"type": "function", "function": {"name": str(t.get("name")), "description": str(t.get("description")
             or ""), "parameters": t.get("inputSchema") or {"type": "object", "properties": {}}}}
             for t in params.get("tools") or [] if isinstance(t, dict) and t.get("name")]
    fields: dict[str, Any] = {}
    max_tokens, temperature = peer_count(params.get("maxTokens")), peer_number(params.get("temperature"))
    if max_tokens:  # a peer's numbers: "256" and 256.0 are 256; nonsense, 0 and fractions are left out
        fields["max_tokens"] = max_tokens
    if temperature is not None and temperature >= 0:
        fields["temperature"] = temperature
    if isinstance(params.get("stopSequences"), list) and params["stopSequences"]:
        fields["stop"] = [str(s) for s in params["stopSequences"]]
    mode = (params.get("toolChoice") or {}).get("mode") if isinstance(params.get("toolChoice"), dict) else None
    if tools and mode in ("auto", "required", "none"):
        fields["tool_choice"] = mode
    return messages, tools, fields


def sampling_result_from_reply(reply: Any, default_model: str = "unknown") -> dict[str, Any]:
    """``CreateMessageResult`` (``{"role", "content", "model", "stopReason"}``) from an ``llm_call`` reply.

    Raises:
        ToolCallFormatError: the reply is not a shape ``parse_response`` reads.
    """
    from ..messages.tool_calls import parse_response  # here: the reply parser loads with the first request

    message = parse_response(reply)
    text = message.text
    uses = [{"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
            for call in message.tool_calls if call.error is None]
    finish = message.finish_reason or "stop"
    stop_reason = "toolUse" if uses else _STOP_REASONS.get(finish, finish)
    if stop_reason == "toolUse" and not uses:
        stop_reason = "endTurn"
    content: dict[str, Any] | list[dict[str, Any]]
    if uses:
        content = ([{"type": "text", "text": text}] if text else []) + uses
    else:
        content = {"type": "text", "text": text}
    model = reply.get("model") if isinstance(reply, dict) and isinstance(reply.get("model"), str) else None
    return {"role": "assistant", "content": content, "model": model or default_model, "stopReason": stop_reason}


class LLMSampler:
    """Answers ``sampling/createMessage`` with an ``llm_call`` (see the module).

    Args:
        llm_call: ``llm_call(messages, tools) -> reply`` (``yiemagent.formats.llm``);
            given ``request_fields=`` and ``abort_event=`` when it takes
            those keywords (or ``**kwargs``).
        approve: ``approve(server_name, params) -> True | False | params``;
            None approves every request.
        tools: declare ``sampling.tools`` and pass a request's ``tools`` on
            (True); False declares plain sampling and refuses a request with
            tools (-32602).
        max_tokens: the cap on the ``max_tokens`` sent (a request's
            ``maxTokens`` above it is lowered, a missing one set to it);
            None: ``limits.max_sampling_tokens`` (4,096).
        model: the ``model`` reported when the reply names none; None: the
            ``llm_call``'s ``model`` attribute, else ``"unknown"``.
        limits: ``max_sampling_per_call``, ``max_sampling_per_run`` and
            ``max_sampling_tokens`` (``yiemagent.mcp.limits``); None: ``MCPLimits()``.
        meter: the run that pays (``yiemagent.loop.spend.RunSpend``, given by
            ``Agent``): asked before each request (its usage limits, the
            per-run bound), told each reply's usage; None: no run counts.

    Raises:
        ConfigError: ``max_tokens`` not an int >= 1.

    Thread safety: as safe as ``llm_call`` and ``approve`` (called on the
    thread that reads the server's request).
    """

    def __init__(self, llm_call: Callable[..., Any], *, approve: SamplingApproval | None = None, tools: bool = True,
                 max_tokens: int | None = None, model: str | None = None, limits: MCPLimits | None = None,
                 meter: SamplingMeter | None = None) -> None:
        if not callable(llm_call):
            raise TypeError("llm_call must be callable: llm_call(messages, tools) -> reply")
        check_int("max_tokens", max_tokens, minimum=1, optional=True)
        self.llm_call = llm_call
        self.approve = approve
        self.tools = tools
        self.limits = limits or MCPLimits()
        self.max_tokens = self.limits.max_sampling_tokens if max_tokens is None else max_tokens
        self.meter = meter
        self.model = model or str(getattr(llm_call, "model", "") or "unknown")
        self._fields = accepts_keyword(llm_call, "request_fields")
        self._abort = accepts_keyword(llm_call, "abort_event")

    def __repr__(self) -> str:
        return f"LLMSampler(model={self.model!r}, tools={self.tools})"

    @property
    def capability(self) -> dict[str, Any]:
        """The ``sampling`` client capability: ``{"tools": {}}`` or ``{}``."""
        return {"tools": {}} if self.tools else {}

    def __call__(self, server_name: str, params: dict[str, Any],
                 abort_event: threading.Event | None = None) -> dict[str, Any]:
        """Approve, call the model, return the ``CreateMessageResult``.

        ``abort_event`` (set when the client cuts the request) is passed on
        to ``approve`` and ``llm_call`` when they take it.

        Raises:
            RequestRefused: -1 when ``approve`` says no; -32602 for a request
                the spec forbids, or with tools while ``tools`` is False.
            Exception: whatever ``llm_call`` or ``approve`` raises (the
                server gets -32603); ``ToolCallFormatError`` for a reply of
                no known shape.
        """
        if params.get("tools") and not self.tools:
            raise RequestRefused(-32602, "this client does not support tools in sampling")
        refusal = self._bounds()
        if refusal is not None:
            logger.warning("%s: sampling/createMessage refused: %s", server_name, refusal)
            raise RequestRefused(USER_REJECTED, f"Sampling request refused: {refusal}")
        if self.approve is not None:
            verdict = call_with_abort(self.approve, server_name, params, abort_event=abort_event)
            if verdict is False or verdict is None:
                raise RequestRefused(USER_REJECTED, "User rejected sampling request")
            if isinstance(verdict, dict):
                params = verdict
        messages, tools, fields = sampling_request_to_chat(params)
        fields["max_tokens"] = min(fields.get("max_tokens", self.max_tokens), self.max_tokens)
        if fields.get("tool_choice") == "none" and not self._fields:
            tools = []  # no way to say "none" to this llm_call: offer no tools
        logger.info("%s: sampling/createMessage: %d messages, %d tools", server_name, len(messages), len(tools))
        keywords: dict[str, Any] = {"request_fields": fields} if self._fields else {}
        if self._abort and abort_event is not None:
            keywords["abort_event"] = abort_event
        reply = self.llm_call(messages, tools, **keywords)
        if self.meter is not None and isinstance(reply, dict):  # its tokens (and the request) are the run's
            usage, model = reply.get("usage"), reply.get("model")
            self.meter.record(usage if isinstance(usage, dict) else None, model if isinstance(model, str) else None)
        try:
            return sampling_result_from_reply(reply, self.model)
        except ToolCallFormatError:
            logger.warning("%s: the model's reply to a sampling request has no known shape", server_name)
            raise

    def _bounds(self) -> str | None:
        """Why one more request may not be answered (the call's bound, then the run's), else None (counted)."""
        per_call = self.limits.max_sampling_per_call
        if call_scope.take("sampling", per_call) is not None:
            return f"this call's bound on sampling requests ({per_call}, max_sampling_per_call) was reached"
        if self.meter is not None:
            return self.meter.reserve(self.limits.max_sampling_per_run)
        return None
