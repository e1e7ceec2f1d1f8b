"""Issue 19 point 3: the context-overflow answers of real servers are told from other failures.

Each body is the one quoted in a public report (named in the test); the LLMError is what ``openai_chat``
raises for it (``status_code`` and the body's text). The loop's retry is in ``tests/test_compaction.py``.
"""

from __future__ import annotations

import json

import pytest

from yiemagent.context.overflow import is_context_overflow
from yiemagent.exceptions import LLMConnectionError, LLMError


def http_error(status: int, body: object) -> LLMError:
    text = body if isinstance(body, str) else json.dumps(body)
    return LLMError(f"the model server answered HTTP {status}: {text}", status_code=status, response=body)


OVERFLOWS = {
    "mckaywrigley_chatbot_ui_102_openai": (400, {"error": {
        "message": "This model's maximum context length is 4097 tokens. However, you requested 4120 tokens "
                   "(3120 in the messages, 1000 in the completion). Please reduce the length of the messages or "
                   "completion.", "type": "invalid_request_error", "param": "messages",
        "code": "context_length_exceeded"}}),
    "webtimemachine_wtm2_579_openai_resulted_in": (400, "This model's maximum context length is 128000 tokens. "
                                                   "However, your messages resulted in 204308 tokens."),
    "vllm_20409": (400, {"object": "error", "message": "This model's maximum context length is 16384 tokens. "
                         "However, you requested 122946 tokens (112946 in the messages, 10000 in the completion).",
                         "type": "BadRequestError", "param": None, "code": 400}),
    "llama_cpp_15780_exceed_context_size_error": (500, {"error": {
        "code": 500, "message": "the request exceeds the available context size. try increasing the context size "
        "or enable context shift", "type": "exceed_context_size_error", "n_prompt_tokens": 1407, "n_ctx": 256}}),
    "oobabooga_textgen_7257_llama_server_400": (400, {"error": {
        "code": 400, "message": "the request exceeds the available context size. try increasing the context size "
        "or enable context shift", "type": "exceed_context_size_error", "n_prompt_tokens": 14429, "n_ctx": 8192}}),
    "llama_cpp_19774_500_context_size_exceeded": (500, {"error": {
        "code": 500, "message": "Context size has been exceeded.", "type": "server_error"}}),
    "llama_cpp_19774_400_request_exceeds": (400, {"error": {
        "code": 400, "message": "request (4390 tokens) exceeds the available context size (4096 tokens), try "
        "increasing it", "type": "exceed_context_size_error"}}),
    "logdetective_193_llama_cpp_python": (400, "Requested tokens (2285) exceed context window of 2048"),
    "ai_automation_suggester_37_ollama": (500, "input exceeds context length"),
}

NOT_OVERFLOWS = {
    "vllm_4667_max_tokens_negative": (400, {"object": "error", "message": "max_tokens must be at least 1, got -186.",
                                            "type": "BadRequestError", "param": None, "code": 400}),
    "rate_limited": (429, {"error": {"message": "Rate limit reached: maximum context length is fine",
                                     "code": "rate_limit_exceeded"}}),
    "bad_tool_schema": (400, {"error": {"message": "Invalid schema for function 'f': 'object' is not valid",
                                        "code": "invalid_function_parameters"}}),
    "unauthorized": (401, {"error": {"message": "Incorrect API key provided"}}),
    "overloaded": (503, "the model is overloaded: context length exceeded elsewhere"),
}


@pytest.mark.parametrize("case", sorted(OVERFLOWS))
def test_a_context_overflow_answer_is_recognised(case):
    status, body = OVERFLOWS[case]
    assert is_context_overflow(http_error(status, body)), case


@pytest.mark.parametrize("case", sorted(NOT_OVERFLOWS))
def test_other_failures_are_not_taken_for_an_overflow(case):
    status, body = NOT_OVERFLOWS[case]
    assert not is_context_overflow(http_error(status, body)), case


def test_an_overflow_raised_by_a_library_is_seen_through_the_cause_chain():
    class ContextWindowExceededError(Exception):  # litellm's class name, raised by the litellm adapter's call
        pass

    try:
        try:
            raise ContextWindowExceededError("litellm.ContextWindowExceededError: BadRequestError")
        except ContextWindowExceededError as inner:
            raise LLMError("llm_call raised ContextWindowExceededError") from inner
    except LLMError as exc:
        assert is_context_overflow(exc)
    assert not is_context_overflow(LLMConnectionError("connection refused"))


def test_a_hostile_exception_is_never_an_overflow_and_never_raises():
    class Hostile(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert is_context_overflow(Hostile()) is False
