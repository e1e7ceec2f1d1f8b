"""Model adapters: an ``llm_call`` from an ``openai.OpenAI`` client, or from LiteLLM's ``completion``.

::

    import openai
    llm_call = openai_client_chat(openai.OpenAI(base_url=..., api_key=...), "gpt-4o-mini", stream=True)

    llm_call = litellm_chat("openai/my-model", api_base="http://127.0.0.1:8080/v1", api_key="none",
                            stream=True)

Both follow the ``llm_call(messages, tools) -> reply`` contract of
``yiemagent.formats.llm``: the library's reply object becomes a chat-completions dict
(``model_dump()``). With ``stream=True`` they read the library's chunks, report
each text, reasoning and tool-call argument delta to ``on_delta`` (the agent
turns them into ``message_update`` events) and merge the chunks with
yiemagent's own merger (``yiemagent.formats.llm.merge_chunks``; LiteLLM's
``stream_chunk_builder`` is not used). ``tool_choice`` and
``parallel_tool_calls`` are left out of calls that offer no tools.

The libraries are optional extras (``pip install -e ".[openai]"``,
``".[litellm]"`` in the checkout), imported only when an adapter is used. Every failure
of a call becomes ``LLMError`` (``status_code`` from the library's error when
it has one); retries are the library's own (``max_retries`` of the OpenAI
client, ``num_retries`` of LiteLLM).

Spec: OpenAI Chat Completions (``POST /chat/completions``, streaming chunks).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .._internal.checks import install_hint
from ..exceptions import ConfigError, LLMConnectionError, LLMError, LLMTimeoutError
from ..formats.llm import ChunkDeltas, OnDelta, merge_chunks

__all__ = ["LiteLLMChat", "OpenAIClientChat", "litellm_chat", "openai_client_chat"]

logger = logging.getLogger("yiemagent.models.adapters")


def _as_dict(item: Any) -> dict[str, Any]:
    """A library reply or chunk as a plain dict, without null fields.

    Nulls (``audio: null`` and the like) would otherwise travel back into the
    history. From pydantic ``model_dump``, ``to_dict`` or a dict.
    """
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        value = dump(exclude_none=True)
        if isinstance(value, dict):
            return value
    for method in ("to_dict", "dict"):
        dump = getattr(item, method, None)
        if callable(dump):
            value = dump()
            if isinstance(value, dict):
                return value
    raise LLMError(f"the library returned {type(item).__name__}, not a chat completion", response=item)


def _request(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
             options: dict[str, Any]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"model": model, "messages": messages, **options}
    if tools:
        kwargs["tools"] = tools
    else:
        kwargs.pop("tool_choice", None)
        kwargs.pop("parallel_tool_calls", None)
    if kwargs.get("stream") and "stream_options" not in kwargs:
        kwargs["stream_options"] = {"include_usage": True}  # token usage in the last chunk
    return kwargs


def _read_chunks(chunks: Iterable[Any], on_delta: OnDelta | None, where: str) -> dict[str, Any]:
    """Merge a library's stream of chunks into one reply, reporting deltas as they come."""
    deltas = ChunkDeltas(on_delta)
    got: list[dict[str, Any]] = []
    for item in chunks:
        chunk = _as_dict(item)
        if chunk.get("error"):
            raise LLMError(f"{where}: the stream reported an error: {chunk['error']}", response=chunk)
        got.append(chunk)
        deltas.feed(chunk)
    if not got:
        raise LLMError(f"{where}: the stream ended without any chunk")
    return merge_chunks(got)


def _llm_error(where: str, exc: BaseException) -> LLMError:
    """``LLMError`` for a library's error.

    Its connection errors and timeouts (``openai.APIConnectionError``,
    ``openai.APITimeoutError``, LiteLLM's subclasses of them, or built-in ones) keep that kind
    (``LLMConnectionError``, ``LLMTimeoutError``: ``fallback_llm`` moves on after them).
    """
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None) or getattr(exc, "message", None)
    kinds = {c.__name__ for c in type(exc).__mro__}
    status_code = status if isinstance(status, int) and not isinstance(status, bool) else None
    kind: type[LLMError] = LLMError
    if status_code is None and ("APITimeoutError" in kinds or isinstance(exc, TimeoutError)):
        kind = LLMTimeoutError
    elif status_code is None and ("APIConnectionError" in kinds or isinstance(exc, ConnectionError)):
        kind = LLMConnectionError
    return kind(f"{where} failed: {type(exc).__name__}: {exc}", status_code=status_code, response=body)


class OpenAIClientChat:
    """An ``llm_call`` over an ``openai.OpenAI`` client's ``chat.completions.create``.

    Args:
        client: an ``openai.OpenAI`` (or ``AzureOpenAI``) client, or anything
            with ``chat.completions.create(**kwargs)`` of the same shape.
        model: the ``model`` of each request.
        create_kwargs: more arguments of ``create``, e.g. ``temperature=0``,
            ``max_tokens=256``, ``stream=True``; fields the SDK does not know
            (a server's own, e.g. llama.cpp's ``cache_prompt``) go in
            ``extra_body={...}``, as the SDK wants.

    ``cancel()`` (``Agent.abort()`` calls it) closes the streams in flight; a
    call without ``stream=True`` cannot be cut short and ends in the background.

    Raises (from a call):
        LLMError: any error of the SDK (``openai.APIError`` and the rest), with
            ``status_code`` for HTTP errors; a reply that is not a completion.

    Thread safety: safe to call from several threads if the client is (the
    OpenAI client is).
    """

    def __init__(self, client: Any, model: str, **create_kwargs: Any) -> None:
        create = getattr(getattr(getattr(client, "chat", None), "completions", None), "create", None)
        if not callable(create):
            raise ConfigError("client must be an openai.OpenAI client (client.chat.completions.create)")
        self.client = client
        self.model = model
        self.create_kwargs = create_kwargs
        self._open: set[Any] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIClientChat(model={self.model!r})"

    def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, on_delta: OnDelta | None = None
    ) -> dict[str, Any]:
        """One ``chat.completions.create`` call; the reply as a dict (deltas to ``on_delta`` when streaming)."""
        kwargs = _request(self.model, messages, tools, self.create_kwargs)
        where = f"openai chat.completions.create(model={self.model!r})"
        try:
            result = self.client.chat.completions.create(**kwargs)
            if not kwargs.get("stream"):
                return _as_dict(result)
            with self._lock:
                self._open.add(result)
            try:
                return _read_chunks(result, on_delta, where)
            finally:
                with self._lock:
                    self._open.discard(result)
                close = getattr(result, "close", None)
                if callable(close):
                    close()
        except LLMError:
            raise
        except Exception as exc:  # the SDK's errors (openai.APIError, httpx errors) and anything else
            raise _llm_error(where, exc) from exc

    def cancel(self) -> None:
        """Close every stream in flight (their calls fail with ``LLMError``). Safe from any thread."""
        with self._lock:
            streams = list(self._open)
        for stream in streams:
            try:
                stream.close()
            except Exception:
                logger.debug("closing an OpenAI stream raised; ignored", exc_info=True)


def openai_client_chat(client: Any, model: str, **create_kwargs: Any) -> OpenAIClientChat:
    """Return an ``llm_call`` over an ``openai.OpenAI`` client (see ``OpenAIClientChat``)."""
    return OpenAIClientChat(client, model, **create_kwargs)


def _litellm_completion() -> Callable[..., Any]:
    # Importing litellm fetches a model price list over the network unless told not to; a
    # library import should not reach the network, so default to its bundled copy.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:
        raise ConfigError(f"litellm_chat needs LiteLLM: {install_hint('litellm')}") from exc
    return litellm.completion  # type: ignore[no-any-return]


class LiteLLMChat:
    """An ``llm_call`` over LiteLLM's ``completion`` (any provider LiteLLM supports).

    Args:
        model: a LiteLLM model name, e.g. ``"openai/gpt-4o-mini"``,
            ``"anthropic/claude-..."``, ``"ollama/llama3"``.
        completion: the function to call; None imports ``litellm.completion``
            on the first call (setting ``LITELLM_LOCAL_MODEL_COST_MAP=True``
            unless already set, so the import does not fetch a price list
            over the network).
        completion_kwargs: more arguments of ``completion``, e.g.
            ``api_base=...``, ``api_key=...``, ``temperature=0``,
            ``stream=True``, ``num_retries=2``.

    ``Agent.abort()`` ends the run at once, but a LiteLLM call in flight is not
    cut: it finishes in the background (LiteLLM has no cancel).

    Raises (from a call):
        LLMError: any error LiteLLM raises, with ``status_code`` when it has one.
        ConfigError: LiteLLM is not installed.

    Thread safety: safe to call from several threads.
    """

    def __init__(self, model: str, *, completion: Callable[..., Any] | None = None,
                 **completion_kwargs: Any) -> None:
        self.model = model
        self.completion = completion
        self.completion_kwargs = completion_kwargs

    def __repr__(self) -> str:
        return f"LiteLLMChat(model={self.model!r})"

    def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, on_delta: OnDelta | None = None
    ) -> dict[str, Any]:
        """One ``completion`` call; the reply as a dict (deltas to ``on_delta`` when streaming)."""
        if self.completion is None:
            self.completion = _litellm_completion()
        kwargs = _request(self.model, messages, tools, self.completion_kwargs)
        where = f"litellm.completion(model={self.model!r})"
        try:
            result = self.completion(**kwargs)
            if kwargs.get("stream"):
                return _read_chunks(result, on_delta, where)
            return _as_dict(result)
        except LLMError:
            raise
        except Exception as exc:  # LiteLLM's exceptions (litellm.exceptions.*) and anything else
            raise _llm_error(where, exc) from exc


def litellm_chat(model: str, *, completion: Callable[..., Any] | None = None,
                 **completion_kwargs: Any) -> LiteLLMChat:
    """Return an ``llm_call`` over LiteLLM's ``completion`` (see ``LiteLLMChat``)."""
    return LiteLLMChat(model, completion=completion, **completion_kwargs)
