"""``fallback_llm``: an ``llm_call`` that asks the next model when one is down or overloaded.

::

    llm_call = fallback_llm(openai_chat(PRIMARY, "big"), openai_chat(BACKUP, "small"))

Each call tries the ``llm_call`` functions in order and returns the first reply. It goes
on to the next one only when the error says the *provider* failed, so that the
same request may well succeed elsewhere (``provider_down``):

* ``LLMError`` with ``status_code`` 429 (rate limited), 500, 502, 503, 504 or
  529 (Anthropic's "overloaded");
* a connection failure or a timeout: ``LLMConnectionError``,
  ``LLMTimeoutError``, the built-in ``ConnectionError``/``TimeoutError``, and
  ``requests``' ``ConnectionError``/``Timeout`` (for hand-written calls).

Everything else is raised at once, from the model that raised it: a valid
reply is returned whatever it says (empty text, ``finish_reason: "length"``,
a refusal: another model would not make the request better); HTTP 400, 401,
403, 404 and 422 (a bad request, a bad key, an unknown model: the next model
would not help and the bug would hide); an ``LLMError`` without a status
(a reply that is not JSON, an error event inside a stream); any other
exception. When every model failed, the *last* error is raised, with the
earlier ones chained (``__context__``) and listed in its message.

Optional keywords (``yiemagent.formats.llm``): ``on_delta``, ``abort_event`` and
``request_fields`` are passed to each inner ``llm_call`` that accepts them
(``yiemagent.formats.llm.accepts_keyword``); so is ``response_format`` (a typed answer's schema,
``yiemagent.output.typed_output``: a model that cannot take it answers unconstrained, and the answer is
still validated).
Once ``abort_event`` is set, or ``cancel()`` was called during the call, no
further model is asked: the error is raised. Streaming through a fallback:
a model that failed before the reply began sent no deltas, so the deltas the
agent shows are the answering model's.

Which model answered: the reply's ``model`` field (set to the inner call's
``.model`` when the reply has none; the agent keeps it as ``AssistantMessage.model``,
on the ``message_end`` event and the answer dict's ``model``), a ``fallback`` event
(``yiemagent.loop.events.FallbackEvent``: the failed model, why, the model asked next) sent
to the agent's event sink at each move, a log line at WARNING naming the failed model and
why, and ``on_fallback(failed, error, next)`` when given. The event reaches the sink
because the loop runs every ``llm_call`` with a channel for events on its worker thread
(``yiemagent.loop.events.report``); a ``FallbackLLM`` called outside an agent sends none.

Source: issue 18 point 4; peers: pydantic-ai ``FallbackModel``, LangChain
``ModelFallbackMiddleware``, LiteLLM ``fallbacks``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import requests

from ..exceptions import ConfigError, LLMError
from ..formats.llm import OnDelta, accepts_keyword
from ..loop import events as ev

__all__ = ["FALLBACK_STATUS", "FallbackLLM", "fallback_llm", "provider_down"]

logger = logging.getLogger("yiemagent.models.fallback")

FALLBACK_STATUS = frozenset({429, 500, 502, 503, 504, 529})
"""HTTP statuses after which the next model is asked: rate limited, server error, bad gateway, unavailable,
gateway timeout, overloaded (529: Anthropic)."""

_KEYWORDS = ("on_delta", "abort_event", "request_fields", "response_format")


def provider_down(exc: BaseException) -> bool:
    """True if ``exc`` says the model's provider is down or overloaded (see the module docstring).

    Source of the statuses: RFC 9110 (429 is RFC 6585), 529 Anthropic's "overloaded_error".
    """
    if isinstance(exc, LLMError) and exc.status_code is not None:
        return exc.status_code in FALLBACK_STATUS
    return isinstance(exc, (ConnectionError, TimeoutError, requests.ConnectionError, requests.Timeout))


def _name(llm_call: Any) -> str:
    model = getattr(llm_call, "model", None)
    return model if isinstance(model, str) and model else repr(llm_call)


class FallbackLLM:
    """An ``llm_call`` over several, asked in order while the provider is down (see the module docstring).

    Args:
        llm_calls: two or more ``llm_call`` functions, the preferred first.
        on_fallback: called as ``on_fallback(failed, error, next)`` (the two
            ``llm_call`` functions and the error) before the next one is asked, on the
            calling thread; if it raises, the error is logged and ignored.

    Raises (from a call): the error of the model that failed in a way that is
    not ``provider_down``, else the last model's error (see the module docstring).

    Thread safety: as safe as the inner calls; ``cancel()`` from another thread
    cuts every inner call that has a ``cancel()``.
    """

    def __init__(self, *llm_calls: Any,
                 on_fallback: Callable[[Any, BaseException, Any], object] | None = None) -> None:
        if len(llm_calls) < 2 or not all(callable(c) for c in llm_calls):
            raise ConfigError("fallback_llm needs two or more llm_calls (callables)")
        self.llm_calls = llm_calls
        self.on_fallback = on_fallback
        self._accepts = [{k for k in _KEYWORDS if accepts_keyword(c, k)} for c in llm_calls]
        self._cancelled = 0  # counts cancel() calls; a change during a call stops the fallback

    def __repr__(self) -> str:
        return f"FallbackLLM({', '.join(_name(c) for c in self.llm_calls)})"

    def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, on_delta: OnDelta | None = None,
        abort_event: threading.Event | None = None, request_fields: dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Return the first reply of ``llm_calls`` tried in order (see the class docstring)."""
        given: dict[str, Any] = {"on_delta": on_delta, "abort_event": abort_event, "request_fields": request_fields,
                                 "response_format": response_format}
        cancelled = self._cancelled
        errors: list[str] = []
        for index, llm_call in enumerate(self.llm_calls):
            keywords = {k: v for k, v in given.items() if v is not None and k in self._accepts[index]}
            try:
                reply: dict[str, Any] = llm_call(messages, tools, **keywords)
            except Exception as exc:
                stopped = (abort_event is not None and abort_event.is_set()) or self._cancelled != cancelled
                last = index == len(self.llm_calls) - 1
                if stopped or last or not provider_down(exc):
                    if errors and isinstance(exc, LLMError):
                        exc.args = (f"{exc} (after: {'; '.join(errors)})", *exc.args[1:])
                    raise
                following = self.llm_calls[index + 1]
                errors.append(f"{_name(llm_call)}: {exc}")
                logger.warning("model %s failed (%s: %s); asking %s", _name(llm_call), type(exc).__name__,
                               str(exc)[:300], _name(following))
                ev.report(ev.FallbackEvent(
                    model=_name(llm_call), error=f"{type(exc).__name__}: {str(exc)[:300]}", next_model=_name(following),
                    status_code=exc.status_code if isinstance(exc, LLMError) else None))
                if self.on_fallback is not None:
                    try:
                        self.on_fallback(llm_call, exc, following)
                    except Exception:
                        logger.exception("on_fallback raised; ignored")
                continue
            if isinstance(reply, dict) and not reply.get("model") and isinstance(getattr(llm_call, "model", None), str):
                reply["model"] = llm_call.model
            if index:
                logger.info("model %s answered (after %d failed)", _name(llm_call), index)
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    def cancel(self) -> None:
        """Cut the requests in flight of every inner call with a ``cancel()``; the call asks no further model."""
        self._cancelled += 1
        for llm_call in self.llm_calls:
            cancel = getattr(llm_call, "cancel", None)
            if callable(cancel):
                cancel()

    def close(self) -> None:
        """Close every inner call that has a ``close()``."""
        for llm_call in self.llm_calls:
            close = getattr(llm_call, "close", None)
            if callable(close):
                close()


def fallback_llm(*llm_calls: Any, on_fallback: Callable[[Any, BaseException, Any], object] | None = None
                 ) -> FallbackLLM:
    """Return an ``llm_call`` that asks the next of ``llm_calls`` when one's provider is down (see ``FallbackLLM``).

    Example:
        >>> from yiemagent import openai_chat
        >>> llm = fallback_llm(openai_chat("http://127.0.0.1:9/v1", "main"), openai_chat("http://127.0.0.1:9/v1", "b"))
        >>> llm
        FallbackLLM(main, b)
    """
    return FallbackLLM(*llm_calls, on_fallback=on_fallback)
