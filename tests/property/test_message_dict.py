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
