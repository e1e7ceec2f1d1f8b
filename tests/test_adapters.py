"""Model adapters (yiemagent.models.adapters): the real ``openai`` SDK client and LiteLLM against the local
llama.cpp server (``local_model``, marked ``model``), streaming included; and their contract offline.
"""

import json
import os
import time

import pytest
import requests

from yiemagent import Agent, AssistantMessage, ConfigError, LLMError
from yiemagent.models.adapters import litellm_chat, openai_client_chat
from yiemagent.testing import EventRecorder

from . import strict_openai

MODEL = "gemma3-270m"
BROKEN_HISTORY = [  # PEERS.md: a cut-off call sent back makes llama.cpp answer HTTP 500
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"city": "Pa'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "x"},
]


def _client(base_url, **kwargs):
    import openai

    return openai.OpenAI(base_url=base_url, api_key="none", max_retries=0, **kwargs)


def _text_deltas(recorder):
    return "".join(e.delta for e in recorder.of_type("message_update") if e.delta_type == "text")


# --------------------------------------------------------------------------- offline contract


def test_openai_client_chat_refuses_an_object_that_is_not_a_client():
    """A clear ConfigError at construction, not an AttributeError in the first call."""
    with pytest.raises(ConfigError, match=r"openai\.OpenAI"):
        openai_client_chat(object(), MODEL)


def test_openai_client_chat_reports_connection_refused_as_llm_error(free_port):
    """The SDK's APIConnectionError becomes LLMError, and the agent answers with an error."""
    llm_call = openai_client_chat(_client(f"http://127.0.0.1:{free_port}/v1", timeout=5), MODEL)
    with pytest.raises(LLMError, match="APIConnectionError"):
        llm_call([{"role": "user", "content": "hi"}], [])
    answer = Agent(llm_call).ask("hi")
    assert answer["status"] == "error" and "APIConnectionError" in answer["error"]


def test_litellm_chat_takes_a_completion_function_and_streams_its_chunks():
    """completion= is called with the request (no tool_choice without tools, usage asked for when
    streaming); its chunks become deltas and one reply.
    """
    seen = []

    def completion(**kwargs):
        seen.append(kwargs)
        return iter([
            {"choices": [{"index": 0, "delta": {"content": "Hel"}}]},
            {"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}},
        ])

    recorder = EventRecorder()
    llm_call = litellm_chat("openai/x", completion=completion, stream=True, tool_choice="auto")
    answer = Agent(llm_call, event_sink=recorder).ask("hi")
    assert answer["content"] == "Hello" and _text_deltas(recorder) == "Hello"
    assert "tool_choice" not in seen[0] and seen[0]["stream_options"] == {"include_usage": True}
    assert recorder.of_type("agent_end")[0].usage["total_tokens"] == 4


def test_litellm_chat_wraps_a_library_error_with_its_status_code():
    """An exception with status_code (as LiteLLM's are) becomes LLMError with that code."""
    class RateLimitError(Exception):
        status_code = 429

    def completion(**kwargs):
        raise RateLimitError("slow down")

    with pytest.raises(LLMError) as info:
        litellm_chat("openai/x", completion=completion)([{"role": "user", "content": "hi"}], [])
    assert info.value.status_code == 429 and "slow down" in str(info.value)


# --------------------------------------------------------------------------- the real local server


@pytest.mark.model
def test_openai_sdk_client_streams_a_real_tool_call_from_llamacpp(local_model, weather_server):
    """openai.OpenAI(base_url=<llama.cpp>) with stream=True: tool-call deltas add up to the call the
    agent runs against the real MCP server; the history stays valid for a strict endpoint.
    """
    recorder = EventRecorder()
    llm_call = openai_client_chat(_client(local_model.base_url), MODEL, temperature=0, max_tokens=40, stream=True,
                                  extra_body={"cache_prompt": False})
    agent = Agent(llm_call, mcp_servers=[weather_server], event_sink=recorder, max_turns=1,
                  builtin_list_tools=False)
    agent.ask("What is the weather in Paris?", timeout_seconds=120)
    reply = next(e.message for e in recorder.of_type("message_end") if isinstance(e.message, AssistantMessage))
    calls = [e for e in recorder.of_type("message_update") if e.delta_type == "tool_call"]
    assert reply.tool_calls and calls, f"no tool call: {reply!r}"
    first = reply.tool_calls[0]
    raw = "".join(e.delta for e in calls if e.tool_call_index == calls[0].tool_call_index)
    assert json.loads(raw) == first.arguments and calls[0].tool_name == first.name == "get_weather"
    strict_openai.validate(agent.openai_messages())
    agent.shutdown()


@pytest.mark.model
def test_openai_sdk_client_plain_reply_and_http_500_from_llamacpp(local_model):
    """Without streaming the reply is model_dump()ed without nulls; llama.cpp's HTTP 500 for a broken
    history is LLMError with status_code 500.
    """
    llm_call = openai_client_chat(_client(local_model.base_url), MODEL, temperature=0, max_tokens=8)
    reply = llm_call([{"role": "user", "content": "Say hello."}], [])
    message = reply["choices"][0]["message"]
    assert message["role"] == "assistant" and isinstance(message["content"], str) and message["content"]
    assert None not in message.values() and reply["usage"]["completion_tokens"] <= 8
    with pytest.raises(LLMError) as info:
        llm_call(BROKEN_HISTORY, [])
    assert info.value.status_code == 500


@pytest.mark.model
def test_openai_sdk_client_abort_closes_the_stream_and_llamacpp_stops(local_model):
    """Agent.abort() calls cancel(), which closes the SDK's stream: the run ends at once and the
    server's slot is free again (it stopped generating).
    """
    recorder = EventRecorder()
    llm_call = openai_client_chat(_client(local_model.base_url), MODEL, temperature=0, max_tokens=400, stream=True)
    agent = Agent(llm_call, event_sink=recorder).start()
    try:
        stream = agent.stream("Write a long story about a cat.")
        deadline = time.monotonic() + 60
        while len(recorder.of_type("message_update")) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        begun = time.monotonic()
        agent.abort()
        answer = stream.future.result(5)
        elapsed = time.monotonic() - begun
        slots_url = local_model.base_url.removesuffix("/v1") + "/slots"
        deadline = time.monotonic() + 5
        while any(slot["is_processing"] for slot in requests.get(slots_url, timeout=5).json()):
            assert time.monotonic() < deadline, "llama.cpp still generates after the abort"
            time.sleep(0.05)
    finally:
        agent.shutdown()
    assert answer["status"] == "aborted" and elapsed < 0.5
    assert list(stream)[-1]["status"] == "aborted"


@pytest.mark.model
def test_litellm_streams_real_llamacpp_deltas_and_maps_http_500(local_model, monkeypatch):
    """litellm.completion(model="openai/...", api_base=<llama.cpp>, stream=True): deltas add up to the
    answer; the broken history's HTTP 500 is LLMError with status_code 500.
    """
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price list
    options = {"api_base": local_model.base_url, "api_key": "none", "temperature": 0, "num_retries": 0}
    recorder = EventRecorder()
    answer = Agent(litellm_chat(f"openai/{MODEL}", max_tokens=16, stream=True, **options),
                   event_sink=recorder).ask("Say hello.", timeout_seconds=120)
    # Gemma writes to max_tokens: such an answer ends 'truncated' (issue 8)
    assert answer["status"] in ("completed", "truncated"), answer
    assert len(recorder.of_type("message_update")) >= 3 and _text_deltas(recorder) == answer["content"]
    with pytest.raises(LLMError) as info:
        litellm_chat(f"openai/{MODEL}", max_tokens=8, **options)(BROKEN_HISTORY, [])
    assert info.value.status_code == 500
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
