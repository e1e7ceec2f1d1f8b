"""``openai_chat``: an ``llm_call`` for any OpenAI-compatible server, over HTTP with ``requests``.

The ``llm_call`` contract (and streaming with ``on_delta``) is written in
``yiemagent.formats.llm``; this module is one implementation of it.

Spec: OpenAI Chat Completions, ``POST /chat/completions`` (and its SSE stream).
"""

from __future__ import annotations

import codecs
import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import requests

from ..__version__ import __version__
from .._internal.checks import check_bool, check_number, check_request_fields, check_str
from .._internal.http import CancellableSession, connection_problem
from .._internal.jsonload import JSONDepthError, loads_bounded
from .._internal.retry import (
    MAX_RETRY_AFTER_SECONDS,
    RetryPause,
    make_retrying,
    model_retry_status,
    never_sent,
    retry_after_seconds,
)
from .._internal.secrets import Secret, register_log_secrets, scrub, scrub_exception, secrets_of
from ..exceptions import ConfigError, LLMConnectionError, LLMError, LLMTimeoutError
from ..formats.llm import INCOMPLETE, ChunkDeltas, OnDelta, StreamMerger
from ..formats.sse import SSEParser
from ..textpolicy import boundary, json_text

__all__ = ["OpenAIChat", "openai_chat"]

logger = logging.getLogger("yiemagent.models.openai_chat")

class _RetryableStatus(LLMError):
    """Internal: 408/409/429/5xx (``model_retry_status``), worth one more try after ``retry_after`` seconds."""

    retry_after: float | None = None



def _stream_chunk(data: str, url: str, first: bool = False) -> dict[str, Any] | None:
    """One SSE event's data as a chunk dict (None for a non-object); raises ``LLMError`` on bad JSON or an error.

    An error event that comes ``first`` (before any chunk: OpenRouter sends a rate limit or an unavailable
    model this way, after HTTP 200) gets its ``error.code`` as ``status_code`` when that is an HTTP status,
    so it reads as the status would have (``fallback_llm``); a later one has none (the reply had begun).
    """
    try:
        chunk = loads_bounded(data)
    except JSONDepthError as exc:
        raise LLMError(f"POST {url}: a stream event is {exc}", response=data[:200]) from None
    except ValueError as exc:
        raise LLMError(f"POST {url}: a stream event is not JSON: {data[:200]!r}", response=data) from exc
    if isinstance(chunk, dict) and "error" in chunk:
        error = chunk["error"]
        code = error.get("code") if isinstance(error, dict) else None
        if isinstance(code, str) and code.isdigit():
            code = int(code)
        status = code if first and isinstance(code, int) and not isinstance(code, bool) and 400 <= code < 600 else None
        raise LLMError(f"POST {url}: the stream reported an error: {error}", response=chunk, status_code=status)
    return chunk if isinstance(chunk, dict) else None


_BODY_KEPT_CHARS = 2000
"""Characters of a streamed body kept to explain a stream without any event (its error body)."""


MAX_REPLY_BYTES = 16 * 1024 * 1024
"""The largest model reply read (its body, streamed or not); past it the reply is refused with ``LLMError``:
a reply that size would be sent back with every later request of the conversation."""


def _capped(response: requests.Response, url: str, max_bytes: int) -> Iterator[bytes]:
    """The body as it arrives; ``LLMError`` (the connection closed) once it passes ``max_bytes``."""
    read = 0
    for raw in response.iter_content(chunk_size=None):
        read += len(raw)
        if read > max_bytes:
            response.close()
            raise LLMError(f"POST {url}: the reply is larger than {max_bytes} bytes; not read further "
                           "(OpenAIChat.max_reply_bytes)")
        yield raw


def _stream_events(response: requests.Response, seen: list[str] | None = None, url: str = "",
                   max_bytes: int = MAX_REPLY_BYTES) -> Iterator[str]:
    """The ``data`` of each SSE event of ``response`` as it arrives (UTF-8, bad bytes replaced).

    ``seen`` gets the first ``_BODY_KEPT_CHARS`` characters of the body, as read.

    Raises:
        LLMError: the body passed ``max_bytes``.
    """
    parser = SSEParser()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    kept = 0
    for raw in _capped(response, url, max_bytes):
        text = decoder.decode(raw)
        if seen is not None and kept < _BODY_KEPT_CHARS:
            seen.append(text[: _BODY_KEPT_CHARS - kept])
            kept += len(seen[-1])
        for event in parser.feed(text):
            yield event.data


def _not_a_stream(response: requests.Response, url: str, body: str) -> dict[str, Any]:
    """A streamed request answered without any SSE event: the server's own reply, or its error.

    A complete ``chat.completion`` JSON (a server that ignores ``stream``) is the reply. Anything
    else is an ``LLMError`` with the body and the HTTP status (lemonade-sdk/lemonade#2826 forwarded
    llama.cpp's error JSON as a 200 ``text/event-stream`` body without ``data:`` framing; other
    servers answer a 200 ``application/json`` error): the error's ``code`` when it is an HTTP status.

    Raises:
        LLMError: the body is not a reply (its text, cut, in the message).
    """
    content_type = response.headers.get("Content-Type", "?")
    try:
        data = loads_bounded(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("choices"), list) and data["choices"] and "error" not in data:
        return data
    status: int | None = None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        code = data["error"].get("code")
        if isinstance(code, int) and not isinstance(code, bool) and 400 <= code < 600:
            status = code
    shown = body.strip() or "(an empty body)"
    raise LLMError(f"POST {url}: the stream ended without any event; HTTP {response.status_code} "
                   f"{content_type} body: {shown[:_BODY_KEPT_CHARS]}", response=body, status_code=status)


def _read_stream(
    response: requests.Response, url: str, on_delta: OnDelta | None = None, deadline: float | None = None,
    max_bytes: int = MAX_REPLY_BYTES,
) -> dict[str, Any]:
    """Read an SSE chat-completion stream to its end (``data: [DONE]``) and merge it.

    Each chunk's deltas go to ``on_delta`` as they arrive. A stream that ends
    (or breaks) after some chunks but without ``[DONE]`` and without any
    ``finish_reason`` is not complete: the merged reply gets ``finish_reason:
    "incomplete"`` (the loop then treats it like ``"length"``).
    """
    deltas = ChunkDeltas(on_delta)
    merger = StreamMerger()
    broken: requests.RequestException | None = None
    seen: list[str] = []
    try:
        with response:
            for data in _stream_events(response, seen, url, max_bytes):
                if data.strip() == "[DONE]":
                    return merger.reply()
                chunk = _stream_chunk(data, url, first=merger.first is None)
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
        return _not_a_stream(response, url, "".join(seen))
    if merger.finish_reason is None:
        logger.warning("POST %s: the stream ended without [DONE] or finish_reason%s; the reply is incomplete",
                       url, " (the connection broke)" if broken is not None else "")
    return merger.reply(INCOMPLETE)


def with_cache_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of ``messages`` whose system message and newest message carry Anthropic's cache mark.

    The mark, ``"cache_control": {"type": "ephemeral"}``, goes on the last text part (a ``str``
    content becomes one text part); the input dicts are not changed. At most these two marks of the
    four Anthropic allows. Spec: Anthropic "Prompt caching" (``cache_control`` on content blocks).
    """
    marked = list(messages)
    targets = [0] if marked and marked[0].get("role") in ("system", "developer") else []
    targets += [len(marked) - 1] if marked else []
    for index in dict.fromkeys(targets):
        message = marked[index]
        content = message.get("content")
        parts: Any = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(parts, list) or not parts:
            continue
        texts = [i for i, part in enumerate(parts) if isinstance(part, dict) and part.get("type") == "text"]
        if not texts:
            continue
        parts = [dict(part) if isinstance(part, dict) else part for part in parts]
        parts[texts[-1]]["cache_control"] = {"type": "ephemeral"}
        marked[index] = {**message, "content": parts}
    return marked


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
            request. ``prompt_cache_key="..."`` (OpenAI) routes requests that share
            a prefix to the same cache.
        cache_breakpoints: mark the system message and the newest message with
            ``cache_control: {"type": "ephemeral"}`` on their last text part (Anthropic's
            prompt caching, which LiteLLM, OpenRouter and Anthropic's OpenAI-compatible
            endpoint pass on): the request's prefix up to each mark is cached. Servers
            that cache by themselves (OpenAI, llama.cpp with ``cache_prompt``) need none.

    Connection failures before the request was sent, and HTTP 408, 409, 429
    and 5xx (honouring ``Retry-After`` up to 10 s; a longer one is not waited,
    so that a fallback model is asked at once), are tried up to 3 times in
    all, within ``timeout_seconds``; see ``docs/guides/models.rst`` for the
    table beside the peers.

    Raises:
        LLMError: (from a call) HTTP error (``.status_code``, the body in the message), a reply
            that is not JSON.
        LLMConnectionError: a connection failure (an ``LLMError``).
        LLMTimeoutError: no complete reply within ``timeout_seconds``.

    Thread safety: safe to call from several threads; ``cancel()`` from another
    thread cuts the requests in flight.
    """

    max_reply_bytes = MAX_REPLY_BYTES
    """Replies larger than this are refused (``LLMError``); set it on the instance for another bound."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_seconds: float = 120.0,
        cache_breakpoints: bool = False,
        **extra_body: Any,
    ) -> None:
        check_str("base_url", base_url, empty=False)
        check_str("model", model, empty=False)
        check_str("api_key", api_key, optional=True)
        check_number("timeout_seconds", timeout_seconds)
        if "stream" in extra_body and not isinstance(extra_body["stream"], bool):
            raise ConfigError(f"stream must be True or False, not {extra_body['stream']!r:.50}")
        check_bool("cache_breakpoints", cache_breakpoints)
        check_request_fields(extra_body)
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.extra_body = extra_body
        self.cache_breakpoints = bool(cache_breakpoints)
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
        self._pause = RetryPause()  # a retry's wait, ended by cancel(), the abort event and the deadline

    def __repr__(self) -> str:
        return f"OpenAIChat(url={self.url!r}, model={self.model!r})"

    def request_body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The JSON body for one call."""
        if self.cache_breakpoints:
            messages = with_cache_breakpoints(messages)
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.extra_body}
        if body.get("stream") and "stream_options" not in body:
            body["stream_options"] = {"include_usage": True}  # token usage arrives in the last chunk
        if tools:
            body["tools"] = tools
        else:
            body.pop("tool_choice", None)
            body.pop("parallel_tool_calls", None)
        return body

    def _post(self, body: dict[str, Any], on_delta: OnDelta | None, deadline: float,
              abort_event: threading.Event | None = None) -> dict[str, Any]:
        if abort_event is not None and abort_event.is_set():
            raise LLMError(f"POST {self.url}: not sent (the run was aborted)")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LLMTimeoutError(f"POST {self.url}: no complete reply within {self.timeout_seconds}s")
        try:
            response = self._session.post(  # the body read as it comes, up to max_reply_bytes
                self.url, data=model_request_body(body), headers=self._headers, timeout=remaining, stream=True,
            )
        except requests.RequestException as exc:
            if time.monotonic() >= deadline:
                raise LLMTimeoutError(f"POST {self.url}: no complete reply within {self.timeout_seconds}s") from exc
            problem = connection_problem(exc, self.url)
            if problem is not None:  # one line says it all; urllib3's chain only in debug
                logger.debug("POST %s: %r", self.url, exc)
                raise LLMConnectionError(f"POST {self.url}: {problem}") from None
            if isinstance(exc, requests.ConnectionError):  # reset or dropped before any reply
                raise LLMConnectionError(f"POST {self.url} failed: {exc}") from exc
            raise LLMError(f"POST {self.url} failed: {exc}") from exc
        if abort_event is not None and abort_event.is_set():  # aborted while sending: stop the generation
            response.close()
            raise LLMError(f"POST {self.url}: cut (the run was aborted)")
        if response.status_code >= 400:
            with response:
                text = b"".join(_capped(response, self.url, max(self.max_reply_bytes, 1))).decode(
                    "utf-8", "replace")[:2000]
            message = f"POST {self.url} answered HTTP {response.status_code}: {text}"
            if model_retry_status(response.status_code):
                wait = retry_after_seconds(response.headers.get("Retry-After"))
                if wait is not None and wait > MAX_RETRY_AFTER_SECONDS:  # not waited: a fallback is asked now
                    message += f" (Retry-After {wait:g} s: more than {MAX_RETRY_AFTER_SECONDS:g} s, not waited)"
                error = _RetryableStatus(message, status_code=response.status_code, response=text)
                error.retry_after = wait
                raise error
            raise LLMError(message, status_code=response.status_code, response=text)
        if body.get("stream"):
            return _read_stream(response, self.url, on_delta, deadline, self.max_reply_bytes)
        with response:
            try:
                data = b"".join(_capped(response, self.url, self.max_reply_bytes))
            except requests.RequestException as exc:
                if time.monotonic() >= deadline:
                    raise LLMTimeoutError(f"POST {self.url}: no complete reply within {self.timeout_seconds}s") \
                        from exc
                raise LLMConnectionError(f"POST {self.url}: the reply broke off: {exc}") from exc
        text = data.decode("utf-8", "replace")
        try:
            reply = loads_bounded(text)
        except JSONDepthError as exc:
            raise LLMError(f"POST {self.url} answered {exc}", response=text[:200]) from None
        except ValueError as exc:
            raise LLMError(f"POST {self.url} answered non-JSON: {text[:200]!r}", response=text) from exc
        if not isinstance(reply, dict):
            raise LLMError(f"POST {self.url} answered JSON that is not an object", response=reply)
        return reply

    def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, on_delta: OnDelta | None = None,
        response_format: dict[str, Any] | None = None, abort_event: threading.Event | None = None,
        request_fields: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """POST one chat completion; return the reply dict (raises ``LLMError``).

        With ``stream=True``, each text, reasoning and tool-call argument delta
        goes to ``on_delta`` as it arrives (the agent passes one; see the module
        docstring). Without streaming, ``on_delta`` is not called.
        ``response_format`` (e.g. ``{"type": "json_schema", ...}``) is sent with
        this request only (``yiemagent.models.constrained`` uses it).
        ``abort_event`` (the agent passes its run's): once it is set, nothing
        more is sent, and a reply that arrives anyway is closed at once
        (``LLMError``), so a request that raced ``Agent.abort()`` does not keep
        the server generating (``cancel()`` alone cuts only requests already
        connected).
        ``request_fields`` (e.g. ``{"max_tokens": 100, "temperature": 0.2,
        "stop": ["END"], "tool_choice": "required"}``) are top-level fields
        for this request only, over the ones given at construction (MCP
        sampling passes the server's ``maxTokens`` and the rest this way).
        """
        body = self.request_body(messages, tools)
        if request_fields:
            body.update(request_fields)
            if not tools:
                body.pop("tool_choice", None)
        if response_format is not None:
            body["response_format"] = response_format
        logger.debug("POST %s: %d messages, %d tools", self.url, len(messages), len(tools))
        deadline = time.monotonic() + self.timeout_seconds

        def retryable(exc: BaseException) -> bool:
            if time.monotonic() >= deadline or isinstance(exc, LLMTimeoutError):
                return False
            if isinstance(exc, _RetryableStatus):
                return exc.retry_after is None or exc.retry_after <= MAX_RETRY_AFTER_SECONDS
            return never_sent(exc)

        def cut_wait(why: str) -> LLMError:
            if why == "deadline":  # waiting would pass it: the status that asked for the wait is the answer
                return LLMTimeoutError(f"POST {self.url}: no complete reply within {self.timeout_seconds:g}s "
                                       f"(a retry would have to wait past the deadline)")
            return LLMError(f"POST {self.url}: cut while waiting to send it again ({why})")

        sleep = self._pause.sleeper(until=deadline, abort_event=abort_event, error=cut_wait)
        try:
            with self._session.deadline(deadline):  # the whole request, however slowly the bytes come
                for attempt in make_retrying(retryable, sleep=sleep):
                    with attempt:
                        return self._post(body, on_delta, deadline, abort_event)
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

        ``Agent.abort()`` calls this. Safe from any thread. A call waiting to
        send a request again (``Retry-After``) ends at once too.
        """
        self._pause.cut()
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


@boundary("model_request", "json")
def model_request_body(body: dict[str, Any]) -> bytes:
    """The UTF-8 JSON body of a Chat Completions request (the ``model_request`` boundary).

    The request guard has already made the messages valid; this writes them by
    the outbound text policy's ``json`` rule (``yiemagent.textpolicy``): what
    JSON cannot carry is replaced (NaN -> null, lone surrogate -> U+FFFD),
    known secrets (MCP tokens, ``${VAR}`` credentials) become ``***``.
    """
    return json_text(body).encode("utf-8")

