"""from_openai(to_openai(m)) == m for generated messages (issue 3, point 7)."""

import json

from hypothesis import given

from yiemagent.messages import from_openai, to_openai

from .strategies import messages


@given(messages)
def test_every_message_survives_a_round_trip_through_openai_format(message):
    """Lossless both ways, through real JSON text."""
    wire = json.loads(json.dumps(to_openai(message), ensure_ascii=False))
    assert from_openai(wire) == message


@given(messages)
def test_openai_form_is_stable(message):
    """Converting twice gives the same dict (normalisation is idempotent)."""
    once = to_openai(message)
    assert to_openai(from_openai(once)) == once
