"""Random histories, windows, replies, raw message dicts, schemas and saved states through the guard (issue 8).

Every request the loop sends passes the strict validator (``tests/strict_openai.py``), nothing undocumented
is raised, every input is answered. ``scripts/fuzz_requests.py`` runs the same check (``wild.check_one``)
on 100,000 and more cases; CI runs the profile's count here.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from yiemagent import InvalidRequestError
from yiemagent.messages.formatting import OpenAIFormatter
from yiemagent.messages.guard import RequestGuard, fix_schema

from .. import strict_openai
from .wild import cases, check_one, histories, raw_message_dicts, schemas, windows


@settings(max_examples=60)  # drawing a whole case costs ~0.1 s; the fast engine below runs 2,000 more
@given(cases)
def test_any_case_gives_valid_requests_documented_errors_and_an_answer(case):
    """The fuzz script's check on generated cases: no problem of any kind."""
    assert check_one(case) == []


@given(histories, windows, st.booleans())
def test_any_history_and_window_formats_to_a_request_the_guard_makes_valid(history, window, extra):
    """prepare_context (any window) + format_messages + guard: the strict validator accepts the request."""
    context = window(history) if window else history
    messages = OpenAIFormatter(send_extra=extra)(context)
    try:
        sent, tools, repairs = RequestGuard()([{"role": "system", "content": "s"}, *messages], [])
    except InvalidRequestError:
        assert not messages or not all(isinstance(m, dict) for m in messages)
        return
    strict_openai.validate_request(sent, tools)
    if not repairs:
        assert sent[1:] == messages  # a valid request is sent as it was


@given(st.lists(raw_message_dicts, min_size=1, max_size=8))
def test_raw_dicts_are_made_valid_or_refused_with_invalid_request_error(raw):
    """What a user's format_messages returns: repaired, or InvalidRequestError; never anything else."""
    guard = RequestGuard()
    try:
        sent, tools, _ = guard(raw, [])
    except InvalidRequestError:  # only when nothing valid is left: every message was an orphaned result
        assert all(m.get("role") == "tool" for m in raw)
        return
    strict_openai.validate_request(sent, tools)
    again, _, _ = guard(raw, [])  # the second time (cache hits) gives the same request
    assert again == sent


@given(st.lists(raw_message_dicts, min_size=1, max_size=6), st.lists(raw_message_dicts, min_size=1, max_size=4))
def test_a_growing_request_checked_incrementally_equals_a_full_check(first, more):
    """The guard's incremental path (only the new tail is checked) gives what a fresh guard gives."""
    guard = RequestGuard()
    try:
        guard(first, [])
    except InvalidRequestError:
        pass
    incremental = guard([{"role": "user", "content": "x"}, *first, *more], [])
    guard([{"role": "user", "content": "x"}, *first], [])
    incremental = guard([{"role": "user", "content": "x"}, *first, *more], [])
    assert incremental[0] == RequestGuard()([{"role": "user", "content": "x"}, *first, *more], [])[0]
    strict_openai.validate_request(incremental[0], [])


@given(schemas())
def test_any_schema_becomes_parameters_openai_accepts(schema):
    """Arrays without items at any depth, non-object tops, NaN defaults: all normalised."""
    fixed, _ = fix_schema(schema)
    strict_openai.validate_tools([{"type": "function", "function": {"name": "t", "parameters": fixed}}])


def test_two_thousand_fast_random_cases_have_no_problem():
    """The fuzz script's fast engine (``wild.random_case``), seeded, 2,000 cases: every check passes.

    ``scripts/fuzz_requests.py --examples 100000`` runs the same with more cases.
    """
    import logging
    import random

    from .wild import random_case

    rng = random.Random(8)
    logging.disable(logging.CRITICAL)
    try:
        problems = [p for _ in range(2000) for p in check_one(random_case(rng))]
    finally:
        logging.disable(logging.NOTSET)
    assert problems == []
