"""``openai_chat(stream=True)`` shows the server's error body when the stream has no event (issue 20, point 6).

The server is tests/servers/scripted_openai_server.py with ``--status 400 --status-body-as CONTENT_TYPE``:
a streamed request gets HTTP 200 and the bare error JSON as its body, without ``data:`` framing. Before,
the error read "the stream ended without any chunk"; now it carries the server's body, and the error's
``code`` as ``status_code``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import PYTHON, SERVERS, free_port, start_process, stop_process, wait_for_port
from yiemagent import Agent, LLMError, openai_chat


def _server(tmp_path_factory: pytest.TempPathFactory, *args: str) -> Iterator[str]:
    log = tmp_path_factory.mktemp("scripted") / "requests.jsonl"
    port = free_port()
    process = start_process([PYTHON, str(SERVERS / "scripted_openai_server.py"), "--port", str(port),
                             "--log", str(log), *args])
    try:
        wait_for_port(port, timeout_seconds=20, process=process)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_process(process)


@pytest.fixture(scope="module")
def event_stream_error_body(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _server(tmp_path_factory, "--status", "400", "--status-body-as", "text/event-stream")


@pytest.fixture(scope="module")
def no_streaming(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _server(tmp_path_factory, "--ignore-stream")


@pytest.fixture(scope="module")
def json_error_body(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _server(tmp_path_factory, "--status", "429", "--status-body-as", "application/json")


def test_lemonade_2826_an_error_body_without_sse_framing_is_shown_with_its_code(event_stream_error_body: str) -> None:
    """lemonade-sdk/lemonade#2826: llama.cpp's error JSON forwarded as a 200 ``text/event-stream`` body
    without ``data:``: every SSE parser sees no event. The LLMError names the status, the content type
    and the body, and takes the error's code (400) as ``status_code``.
    """
    llm = openai_chat(event_stream_error_body, "scripted", stream=True, timeout_seconds=10)
    with pytest.raises(LLMError) as caught:
        llm([{"role": "user", "content": "hi"}], [])
    text = str(caught.value)
    assert "without any chunk" not in text
    assert "HTTP 200 text/event-stream body: " in text and "scripted HTTP 400" in text, text
    assert caught.value.status_code == 400


def test_ggcode_446_a_200_json_error_to_a_streamed_request_is_an_error_with_its_body(json_error_body: str) -> None:
    """topcheer/ggcode#446 (the same kind in an A2A client): a 200 ``application/json`` error body to a
    streaming request was parsed as SSE and became a silent empty stream. Here it is an ``LLMError``
    with the body; through an Agent, the answer is ``status: "error"`` naming it.
    """
    llm = openai_chat(json_error_body, "scripted", stream=True, timeout_seconds=10)
    with pytest.raises(LLMError) as caught:
        llm([{"role": "user", "content": "hi"}], [])
    assert "application/json body: " in str(caught.value) and "scripted HTTP 429" in str(caught.value)
    assert caught.value.status_code == 429
    answer = Agent(llm).ask("hi", timeout_seconds=30)
    assert answer["status"] == "error" and "scripted HTTP 429" in answer["error"], answer


def test_a_server_that_ignores_stream_and_answers_plain_json_is_read_as_the_reply(no_streaming: str) -> None:
    """A server without streaming answers ``stream: true`` with one ``chat.completion`` JSON: that is the
    reply (no deltas), not an error.
    """
    reply = openai_chat(no_streaming, "scripted", stream=True, timeout_seconds=10)(
        [{"role": "user", "content": "hello there"}], [])
    assert reply["choices"][0]["message"]["content"] == "You said: hello there"
