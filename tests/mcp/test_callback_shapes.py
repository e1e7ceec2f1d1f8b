"""Shapes of the callbacks without a server: sampling conversion and its spec errors, form fields, the
pausable deadline clock. (Pure functions: the round trips with real servers are in test_callbacks.py.)
"""

from __future__ import annotations

import threading
import time

import pytest

from yiemagent._internal.deadlines import WATCHDOG, PausableClock, wait_until
from yiemagent.mcp import RequestRefused, answer_elicitation, coerce_field, form_fields, sampling_request_to_chat
from yiemagent.mcp.sampling import sampling_result_from_reply


def test_image_audio_and_text_content_become_chat_parts() -> None:
    messages, tools, fields = sampling_request_to_chat({"maxTokens": 9, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "data": "iVBO", "mimeType": "image/png"},
        {"type": "audio", "data": "UklG", "mimeType": "audio/wav"}]}]})
    assert messages == [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
        {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}]}]
    assert tools == [] and fields == {"max_tokens": 9}


def test_opencode_12519_a_sampled_image_the_model_cannot_take_becomes_a_line() -> None:
    """Opencode #12519: an SVG image sent on to the model broke every later request; sampling uses the same
    ``MODEL_IMAGE_TYPES`` as tool results and resources (png, jpeg, gif, webp).
    """
    messages, _, _ = sampling_request_to_chat({"maxTokens": 9, "messages": [{"role": "user", "content": [
        {"type": "image", "data": "PHN2Zz4=", "mimeType": "image/svg+xml"},
        {"type": "image", "data": "/9j/", "mimeType": "image/JPEG"}]}]})
    parts = messages[0]["content"]
    assert parts[0]["type"] == "text" and "image/svg+xml" in parts[0]["text"] and "left out" in parts[0]["text"]
    assert parts[1] == {"type": "image_url", "image_url": {"url": "data:image/JPEG;base64,/9j/"}}


@pytest.mark.parametrize(("messages", "problem"), [
    ([{"role": "user", "content": [{"type": "text", "text": "x"},
                                   {"type": "tool_result", "toolUseId": "a", "content": []}]}],
     "Tool results mixed with other content"),
    ([{"role": "user", "content": {"type": "text", "text": "x"}},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}},
                                        {"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
      {"role": "user", "content": {"type": "tool_result", "toolUseId": "a", "content": []}}],
     "Tool result missing in request"),
    ([], "non-empty messages"),
])
def test_requests_the_spec_forbids_are_refused_with_32602(messages: list, problem: str) -> None:
    with pytest.raises(RequestRefused) as caught:
        sampling_request_to_chat({"messages": messages, "maxTokens": 5})
    assert caught.value.code == -32602 and problem in caught.value.message


@pytest.mark.parametrize(("finish_reason", "stop_reason"), [
    ("stop", "endTurn"), ("length", "maxTokens"), ("content_filter", "refusal"), ("eos", "eos")])
def test_finish_reason_maps_to_stop_reason(finish_reason: str, stop_reason: str) -> None:
    reply = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": finish_reason}]}
    assert sampling_result_from_reply(reply, "m") == {"role": "assistant", "content": {"type": "text", "text": "hi"},
                                                      "model": "m", "stopReason": stop_reason}


def test_legacy_enum_names_show_titles_and_send_values() -> None:
    """modelcontextprotocol/inspector #1691: the everything server's legacyTitledEnum (enum + enumNames)."""
    schema = {"type": "object", "properties": {"pet": {"type": "string", "enum": ["pet-1", "pet-2"],
                                                       "enumNames": ["Cats", "Dogs"], "default": "pet-1"}}}
    [field] = form_fields(schema)
    assert field["choices"] == [("pet-1", "Cats"), ("pet-2", "Dogs")] and field["default"] == "pet-1"
    assert coerce_field(field, "Dogs") == "pet-2" and coerce_field(field, "1") == "pet-1"
    with pytest.raises(ValueError, match="choose one of: Cats, Dogs"):
        coerce_field(field, "Fish")


def test_a_paused_clock_holds_waiters_and_the_watchdog() -> None:
    clock = PausableClock()
    fired = threading.Event()
    handle = WATCHDOG.arm(clock.now() + 0.3, fired.set, clock)
    waiting = threading.Event()
    started = time.monotonic()
    with clock.pause():
        time.sleep(0.6)
        assert not fired.is_set()  # due at 0.3 s of clock time: the clock stood still
    assert fired.wait(2.0)
    assert time.monotonic() - started >= 0.85  # 0.6 paused + 0.3 after
    WATCHDOG.disarm(handle)
    assert clock.paused_seconds >= 0.6
    waiter = threading.Thread(target=lambda: waiting.set() if wait_until(threading.Event(), clock.now() + 0.3,
                                                                         clock) is False else None)
    with clock.pause():  # another thread's wait does not end while the clock stands still
        waiter.start()
        time.sleep(0.5)
        assert not waiting.is_set()
    waiter.join(2.0)
    assert waiting.is_set()  # and it ends (unset event: False) 0.3 s of clock time later


def test_python_sdk_1285_an_accept_without_fields_is_an_accept() -> None:
    """Source: modelcontextprotocol/python-sdk #1285 (elicitations accepted without content were refused):
    a confirmation with an empty schema is answered ``accept`` with empty content.
    """
    request = {"message": "Delete the draft?", "requestedSchema": {"type": "object", "properties": {}}}
    assert answer_elicitation({"form": lambda s, r: {"action": "accept"}}, "docs", request) == {
        "action": "accept", "content": {}}
