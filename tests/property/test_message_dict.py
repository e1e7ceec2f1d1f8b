"""message_to_dict (the fast path used for state and the durable journal) equals dataclasses-json's to_dict."""

import json

from hypothesis import given

from yiemagent.messages import ToolResultMessage, message_from_dict, message_to_dict

from .strategies import messages


@given(messages)
def test_message_to_dict_is_exactly_dataclasses_json_to_dict(message):
    """Same keys, order, values; and it survives JSON text and message_from_dict."""
    fast = message_to_dict(message)
    assert fast == message.to_dict(encode_json=True)
    assert list(fast) == list(message.to_dict(encode_json=True))
    assert message_from_dict(json.loads(json.dumps(fast, ensure_ascii=False))) == message


def test_details_that_are_not_json_are_kept_as_their_repr():
    """Tool-result details keep JSON values; other objects become {"repr": ...}, as before."""
    error = ValueError("boom")
    message = ToolResultMessage("c1", "failed", details={"exception": error, "n": (1, 2)})
    assert message_to_dict(message)["details"] == message.to_dict(encode_json=True)["details"]
    assert message_to_dict(message)["details"]["exception"] == {"repr": "ValueError('boom')"}


@given(messages)
def test_message_from_dict_is_exactly_dataclasses_json_from_dict(message):
    """The fast reader builds what dataclasses-json's from_dict builds, field by field."""
    data = json.loads(json.dumps(message.to_dict(encode_json=True), ensure_ascii=False))
    fast = message_from_dict(data)
    slow = type(message).from_dict(data)
    assert type(fast) is type(slow)
    assert message_to_dict(fast) == message_to_dict(slow)
    assert fast == slow


def test_message_from_dict_refuses_what_is_not_a_saved_message():
    import pytest

    from yiemagent.exceptions import FormatError

    for bad in ({"role": "user", "content": [{"type": "video"}]}, {"role": "tool"}, {"role": "x"}, [1],
                {"role": "assistant", "tool_calls": [{"name": "no id"}]}):
        with pytest.raises(FormatError):
            message_from_dict(bad)
