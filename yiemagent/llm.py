"""LLM calls: the ``llm_call`` contract and a ``requests`` adapter for OpenAI-compatible servers.

Contract of an ``llm_call``::

    llm_call(messages: list[dict], tools: list[dict]) -> dict

``messages`` are OpenAI chat messages, system first; ``tools`` are OpenAI
function tools (maybe empty: then the model must answer in text). It returns a
chat-completions reply (or any shape ``yiemagent.tool_calls`` reads). It is
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

Incomplete streams: a streamed reply whose stream ended (or broke) after some
chunks, without ``data: [DONE]`` and without any ``finish_reason``, comes
back merged with ``finish_reason: "incomplete"`` (yiemagent's own value):
the loop treats it like ``"length"`` (cut arguments are not repaired, the run
ends ``truncated``).

Spec: OpenAI Chat Completions, ``POST /chat/completions``.
"""

from __future__ import annotations

import codecs
import inspect
import json
import logging
import time
from collections.abc import Iterator
from typing import Any, Literal, Protocol

import requests

from .__version__ import __version__
from ._checks import check_number, check_str
from ._http import CancellableSession
from ._retry import RETRY_STATUS, make_retrying, never_sent, retry_after_seconds
from .exceptions import ConfigError, LLMError, LLMTimeoutError
from .mcp._secrets import Secret, register_log_secrets, scrub, scrub_exception, secrets_of
from .mcp.sse import SSEParser

__all__ = ["ChunkDeltas", "LLMCall", "OnDelta", "OpenAIChat", "accepts_on_delta", "merge_chunks", "openai_chat"]

logger = logging.getLogger("yiemagent.llm")

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

    Spec: OpenAI Chat Completions streaming, ``choices[].delta``.
    """

    def __init__(self, on_delta: OnDelta | None) -> None:
        self.on_delta = on_delta
        self._calls: dict[int, tuple[str | None, str | None]] = {}

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
                if isinstance(delta.get(key), str) and delta[key]:
                    on_delta("reasoning", delta[key])
            if isinstance(delta.get("content"), str) and delta["content"]:
                on_delta("text", delta["content"])
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


def accepts_on_delta(llm_call: Any) -> bool:
    """True if ``llm_call`` has a keyword parameter named ``on_delta`` (a streaming ``llm_call``)."""
    try:
        parameter = inspect.signature(llm_call).parameters.get("on_delta")
    except (TypeError, ValueError):  # no signature (some builtins and C callables)
        return False
    return parameter is not None and parameter.kind in (
        inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class _RetryableStatus(LLMError):
    """Internal: 429/502/503, worth one more try after ``retry_after`` seconds."""

    retry_after: float | None = None


class _StreamMerger:
    """Assembles ``chat.completion.chunk`` dicts, fed one at a time, into one ``chat.completion`` reply.

    Tool-call deltas are merged by ``index``, except that a delta bringing a
    new ``id`` at an index whose call already has another id starts a new call
    (Ollama through LiteLLM streams every parallel call at ``index: 0``; source:
    smolagents #1569, vercel/ai #14277). Calls keep the order they first
    appeared in, by index. ``usage`` is the last one reported, kept whole
    (nested ``prompt_tokens_details`` / ``completion_tokens_details`` too).
    Only choice ``index`` 0 is read; malformed pieces (a delta or call that is
    not an object, a non-integer index) are skipped, never raised on.
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

    def feed(self, chunk: dict[str, Any]) -> None:
        """Merge one chunk."""
        if self.first is None:
            self.first = chunk
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
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
            if isinstance(delta.get(key), str):
                self.reasoning[key] = self.reasoning.get(key, "") + delta[key]
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                self._tool_call(call)

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

    def reply(self, finish_reason: str | None = None) -> dict[str, Any]:
        """The merged reply; ``finish_reason`` replaces a missing one (e.g. ``"incomplete"``)."""
        first = self.first or {}
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.texts) if self.texts else None,
                                   **self.reasoning}
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


def _merge_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Assemble streamed ``chat.completion.chunk`` deltas into one ``chat.completion`` reply."""
    merger = _StreamMerger()
    for chunk in chunks:
        if isinstance(chunk, dict):
            merger.feed(chunk)
    return merger.reply()


def merge_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Assemble ``chat.completion.chunk`` dicts (in order) into one ``chat.completion`` reply dict.

    For adapters of other client libraries that stream; the result has the
    shape ``parse_response`` reads. Parallel calls sharing one ``index`` with
    different ids stay separate calls; nested ``usage`` details are kept.
    Spec: OpenAI Chat Completions streaming.
    """
    return _merge_chunks(chunks)


def _stream_chunk(data: str, url: str) -> dict[str, Any] | None:
    """One SSE event's data as a chunk dict (None for a non-object); raises ``LLMError`` on bad JSON or an error."""
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        raise LLMError(f"POST {url}: a stream event is not JSON: {data[:200]!r}", response=data) from exc
    except RecursionError as exc:
        raise LLMError(f"POST {url}: a stream event is nested too deeply", response=data[:200]) from exc
    if isinstance(chunk, dict) and "error" in chunk:
        raise LLMError(f"POST {url}: the stream reported an error: {chunk['error']}", response=chunk)
    return chunk if isinstance(chunk, dict) else None


def _stream_events(response: requests.Response) -> Iterator[str]:
    """The ``data`` of each SSE event of ``response`` as it arrives (UTF-8, bad bytes replaced)."""
    parser = SSEParser()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for raw in response.iter_content(chunk_size=None):
        for event in parser.feed(decoder.decode(raw)):
            yield event.data


def _read_stream(
    response: requests.Response, url: str, on_delta: OnDelta | None = None, deadline: float | None = None
) -> dict[str, Any]:
    """Read an SSE chat-completion stream to its end (``data: [DONE]``) and merge it.

    Each chunk's deltas go to ``on_delta`` as they arrive. A stream that ends
    (or breaks) after some chunks but without ``[DONE]`` and without any
    ``finish_reason`` is not complete: the merged reply gets ``finish_reason:
    "incomplete"`` (the loop then treats it like ``"length"``).
    """
    deltas = ChunkDeltas(on_delta)
    merger = _StreamMerger()
    broken: requests.RequestException | None = None
    try:
        with response:
            for data in _stream_events(response):
                if data.strip() == "[DONE]":
                    return merger.reply()
                chunk = _stream_chunk(data, url)
                if chunk is not None:
                    merger.feed(chunk)
                    deltas.feed(chunk)
    except requests.RequestException as exc:
        broken = exc
    if deadline is not None and time.monotonic() >= deadline:  # the watchdog cut it: a timeout, not an end
        raise LLMTimeoutError(f"POST {url}: no complete reply within the deadline (the stream was cut)")
    if merger.first is None:
        if broken is not None:
            raise LLMError(f"POST {url}: the stream broke: {broken}") from broken
        raise LLMError(f"POST {url}: the stream ended without any chunk")
    if merger.finish_reason is None:
        logger.warning("POST %s: the stream ended without [DONE] or finish_reason%s; the reply is incomplete",
                       url, " (the connection broke)" if broken is not None else "")
    return merger.reply(INCOMPLETE)


class OpenAIChat:
    """An ``llm_call`` that POSTs to ``{base_url}/chat/completions`` with ``requests``.

    Args:
        base_url: e.g. ``"https://api.openai.com/v1"`` or ``"http://127.0.0.1:8080/v1"``.
        model: the ``model`` field of each request.
        api_key: sent as ``Authorization: Bearer <api_key>``; None sends none.
            Never logged, never in ``repr``; a server that echoes it in an
            error body has it replaced by ``***`` in the error's message,
            ``response``, chained exceptions and log lines.
        timeout_seconds: the whole call's deadline, in seconds: connecting,
            retries and reading the reply (streamed or not, however slowly
            the bytes come) end by then with ``LLMTimeoutError``.
        extra_body: more top-level request fields, e.g. ``temperature=0``,
            ``max_tokens=256``, ``tool_choice="auto"``. ``tool_choice`` is left
            out of requests that carry no tools. ``stream=True`` reads the reply
            as server-sent events and merges the deltas into one reply (same
            shape) and reports each delta to ``on_delta`` (the agent turns
            them into ``message_update`` events); servers stop generating
            when ``cancel()`` cuts a stream, which they may not do for a plain
            request.

    Connection failures before the request was sent, and HTTP 429/502/503
    (honouring ``Retry-After``), are retried up to 3 times in all.

    Raises (from a call):
        LLMError: HTTP error (``.status_code``, the body in the message), a reply
            that is not JSON, or a connection failure.
        LLMTimeoutError: no complete reply within ``timeout_seconds``.

    Thread safety: safe to call from several threads; ``cancel()`` from another
    thread cuts the requests in flight.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_seconds: float = 120.0,
        **extra_body: Any,
    ) -> None:
        check_str("base_url", base_url, empty=False)
        check_str("model", model, empty=False)
        check_str("api_key", api_key, optional=True)
        check_number("timeout_seconds", timeout_seconds)
        if "stream" in extra_body and not isinstance(extra_body["stream"], bool):
            raise ConfigError(f"stream must be True or False, not {extra_body['stream']!r:.50}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.extra_body = extra_body
        self._headers: dict[str, str] = {"Content-Type": "application/json", "User-Agent": f"yiemagent/{__version__}"}
        secrets = secrets_of({}, self.url)
        if api_key:
            self._headers["Authorization"] = Secret(f"Bearer {api_key}")
            secrets += secrets_of({"Authorization": f"Bearer {api_key}"}, "")
            if len(api_key.strip()) >= 4:
                secrets.append(Secret(api_key.strip()))
        self._secrets = sorted(set(secrets), key=len, reverse=True)
        register_log_secrets(self._secrets)
        self._session = CancellableSession()

    def __repr__(self) -> str:
        return f"OpenAIChat(url={self.url!r}, model={self.model!r})"

    def request_body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The JSON body for one call."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.extra_body}
        if body.get("stream") and "stream_options" not in body:
            body["stream_options"] = {"include_usage": True}  # token usage arrives in the last chunk
        if tools:
            body["tools"] = tools
        else:
            body.pop("tool_choice", None)
            body.pop("parallel_tool_calls", None)
        return body

    def _post(self, body: dict[str, Any], on_delta: OnDelta | None, deadline: float) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LLMTimeoutError(f"POST {self.url}: no complete reply within {self.timeout_seconds}s")
        try:
            response = self._session.post(
                self.url, json=body, headers=self._headers, timeout=remaining,
                stream=bool(body.get("stream")),
            )
        except requests.RequestException as exc:
            if time.monotonic() >= deadline:
                raise LLMTimeoutError(f"POST {self.url}: no complete reply within {self.timeout_seconds}s") from exc
            raise LLMError(f"POST {self.url} failed: {exc}") from exc
        if response.status_code >= 400:
            text = response.text[:2000]
            message = f"POST {self.url} answered HTTP {response.status_code}: {text}"
            if response.status_code in RETRY_STATUS:
                error = _RetryableStatus(message, status_code=response.status_code, response=text)
                error.retry_after = retry_after_seconds(response.headers.get("Retry-After"))
                raise error
            raise LLMError(message, status_code=response.status_code, response=text)
        if body.get("stream"):
            return _read_stream(response, self.url, on_delta, deadline)
        try:
            reply = response.json()
        except ValueError as exc:
            raise LLMError(
                f"POST {self.url} answered non-JSON: {response.text[:200]!r}", response=response.text
            ) from exc
        if not isinstance(reply, dict):
            raise LLMError(f"POST {self.url} answered JSON that is not an object", response=reply)
        return reply

    def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, on_delta: OnDelta | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """POST one chat completion; return the reply dict (raises ``LLMError``).

        With ``stream=True``, each text, reasoning and tool-call argument delta
        goes to ``on_delta`` as it arrives (the agent passes one; see the module
        docstring). Without streaming, ``on_delta`` is not called.
        ``response_format`` (e.g. ``{"type": "json_schema", ...}``) is sent with
        this request only (``yiemagent.constrained`` uses it).
        """
        body = self.request_body(messages, tools)
        if response_format is not None:
            body["response_format"] = response_format
        logger.debug("POST %s: %d messages, %d tools", self.url, len(messages), len(tools))
        deadline = time.monotonic() + self.timeout_seconds

        def retryable(exc: BaseException) -> bool:
            if time.monotonic() >= deadline or isinstance(exc, LLMTimeoutError):
                return False
            return isinstance(exc, _RetryableStatus) or never_sent(exc)

        try:
            with self._session.deadline(deadline):  # the whole request, however slowly the bytes come
                for attempt in make_retrying(retryable):
                    with attempt:
                        return self._post(body, on_delta, deadline)
        except LLMError as exc:
            self._scrub(exc)
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _scrub(self, exc: LLMError) -> None:
        """Replace the API key (and URL secrets) by ``***`` in ``exc``'s text, body and chain, in place."""
        if not self._secrets:
            return
        scrub_exception(exc, self._secrets)
        if isinstance(exc.response, (dict, list)):
            try:
                exc.response = json.loads(scrub(json.dumps(exc.response), self._secrets))
            except ValueError:
                exc.response = None

    def cancel(self) -> None:
        """Cut every request in flight (it fails with ``LLMError``); later calls work as usual.

        ``Agent.abort()`` calls this. Safe from any thread.
        """
        self._session.cancel()

    def close(self) -> None:
        """Close the connections."""
        self._session.close()


def openai_chat(
    base_url: str, model: str, *, api_key: str | None = None, timeout_seconds: float = 120.0, **extra_body: Any
) -> OpenAIChat:
    """Return an ``llm_call`` for any OpenAI-compatible server (see ``OpenAIChat``).

    Example:
        >>> llm_call = openai_chat("http://127.0.0.1:8080/v1", "my-model", temperature=0)
        >>> llm_call.request_body([{"role": "user", "content": "hi"}], [])["temperature"]
        0
    """
    return OpenAIChat(base_url, model, api_key=api_key, timeout_seconds=timeout_seconds, **extra_body)
