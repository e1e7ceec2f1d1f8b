"""LLM calls: the ``llm_call`` contract and a ``requests`` adapter for OpenAI-compatible servers.

Contract of an ``llm_call``::

    llm_call(messages: list[dict], tools: list[dict]) -> dict

``messages`` are OpenAI chat messages, system first; ``tools`` are OpenAI
function tools (maybe empty: then the model must answer in text). It returns a
chat-completions reply (or any shape ``yiemagent.tool_calls`` reads). It is
called on a worker thread, one call at a time per agent. It may raise; the run
then ends with an error answer. It must not change ``messages``.

Spec: OpenAI Chat Completions, ``POST /chat/completions``.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import requests

from .__version__ import __version__
from ._http import CancellableSession
from ._retry import RETRY_STATUS, make_retrying, never_sent, retry_after_seconds
from .exceptions import LLMError

__all__ = ["LLMCall", "OpenAIChat", "openai_chat"]

logger = logging.getLogger("yiemagent.llm")


class LLMCall(Protocol):
    """``llm_call(messages, tools) -> reply`` (see the module docstring)."""

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """Return the model's reply to ``messages`` with ``tools`` offered."""
        ...


class _RetryableStatus(LLMError):
    """Internal: 429/502/503, worth one more try after ``retry_after`` seconds."""

    retry_after: float | None = None


class OpenAIChat:
    """An ``llm_call`` that POSTs to ``{base_url}/chat/completions`` with ``requests``.

    Args:
        base_url: e.g. ``"https://api.openai.com/v1"`` or ``"http://127.0.0.1:8080/v1"``.
        model: the ``model`` field of each request.
        api_key: sent as ``Authorization: Bearer <api_key>``; None sends none.
            Never logged, never in ``repr``.
        timeout_seconds: connect and read timeout of each request, in seconds.
        extra_body: more top-level request fields, e.g. ``temperature=0``,
            ``max_tokens=256``, ``tool_choice="auto"``. ``tool_choice`` is left
            out of requests that carry no tools.

    Connection failures before the request was sent, and HTTP 429/502/503
    (honouring ``Retry-After``), are retried up to 3 times in all.

    Raises (from a call):
        LLMError: HTTP error (``.status_code``, the body in the message), a reply
            that is not JSON, or a connection failure.

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
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.extra_body = extra_body
        self._headers = {"Content-Type": "application/json", "User-Agent": f"yiemagent/{__version__}"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._session = CancellableSession()

    def __repr__(self) -> str:
        return f"OpenAIChat(url={self.url!r}, model={self.model!r})"

    def request_body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The JSON body for one call."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.extra_body}
        if tools:
            body["tools"] = tools
        else:
            body.pop("tool_choice", None)
            body.pop("parallel_tool_calls", None)
        return body

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = self._session.post(
                self.url, json=body, headers=self._headers, timeout=self.timeout_seconds
            )
        except requests.RequestException as exc:
            raise LLMError(f"POST {self.url} failed: {exc}") from exc
        if response.status_code >= 400:
            text = response.text[:2000]
            message = f"POST {self.url} answered HTTP {response.status_code}: {text}"
            if response.status_code in RETRY_STATUS:
                error = _RetryableStatus(message, status_code=response.status_code, response=text)
                error.retry_after = retry_after_seconds(response.headers.get("Retry-After"))
                raise error
            raise LLMError(message, status_code=response.status_code, response=text)
        try:
            reply = response.json()
        except ValueError as exc:
            raise LLMError(
                f"POST {self.url} answered non-JSON: {response.text[:200]!r}", response=response.text
            ) from exc
        if not isinstance(reply, dict):
            raise LLMError(f"POST {self.url} answered JSON that is not an object", response=reply)
        return reply

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """POST one chat completion; return the reply dict (raises ``LLMError``)."""
        body = self.request_body(messages, tools)
        logger.debug("POST %s: %d messages, %d tools", self.url, len(messages), len(tools))

        def retryable(exc: BaseException) -> bool:
            return isinstance(exc, _RetryableStatus) or never_sent(exc)

        for attempt in make_retrying(retryable):
            with attempt:
                return self._post(body)
        raise AssertionError("unreachable")  # pragma: no cover

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
