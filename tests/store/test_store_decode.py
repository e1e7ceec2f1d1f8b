"""The store's decode path under any corrupt row: only documented exceptions, never JSONDecodeError.

Hypothesis writes any value (text, numbers of any size, NaN, bytes, JSON of the wrong shape) into
any column of a real SQLite database (its columns take any type, as a tampered or corrupt file
can hold), then every store method and a durable agent's drain run on it. The documented
exceptions are the ``StoreError`` family (``CorruptRowError`` for a row that is not what the
store wrote, a saved state that is not a saved state among them).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from yiemagent import Agent, FormatError, StoreError
from yiemagent.store import ServedInput, SQLiteStore
from yiemagent.testing import text_reply

_COLUMNS = [
    ("inbox", "message"), ("inbox", "answer"), ("inbox", "reply_to"), ("inbox", "input_id"),
    ("inbox", "enqueued_at"), ("inbox", "served_at"), ("inbox", "seq"), ("journal", "value"),
    ("journal", "step_key"), ("conversations", "version"), ("conversations", "next_seq"),
    ("conversations", "lease_token"), ("conversations", "lease_expires_at"), ("conversations", "lease_owner"),
    ("conversations", "lease_clock"), ("conversations", "state"),
]

_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                         max_size=3), max_leaves=8)
_values = st.one_of(
    st.text(max_size=40), st.integers(min_value=-(2**63), max_value=2**63 - 1), st.floats(), st.binary(max_size=20),
    _json_values.map(json.dumps), st.sampled_from(['{"role": "user"}', '{"role": "user", "content": 7}', "[]",
                                                   '{"version": 1, "history": [{"role": "x"}]}', "1e999", "null"]),
)


def _echo(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    return text_reply("ok")


@pytest.mark.slow  # hypothesis, 250 examples on a real store
@settings(max_examples=250, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(column=st.sampled_from(_COLUMNS), value=_values)
def test_any_corrupt_column_raises_only_documented_exceptions(column: tuple[str, str], value: Any) -> None:
    path = Path(tempfile.mkdtemp()) / "c.db"
    store = SQLiteStore(str(path))
    store.enqueue("c", "one")
    store.enqueue("c", "two")
    lease = store.acquire("c", "w", ttl_seconds=30)
    store.put_step("c", "seq-1", "model/1", {"role": "assistant", "content": "x"})
    store.commit(lease, expected_version=0, state=Agent(_echo).state_to_json(),
                 served=[ServedInput(1, {"role": "assistant", "content": "a"})])
    store.put_step("c", "seq-2", "model/1", {"role": "assistant", "content": "y"})
    table, name = column
    try:
        with store._use() as conn, store._transaction(conn) as cur:
            cur.execute(f"UPDATE yiemagent_{table} SET {name} = ?", (value,))
    except StoreError:  # NOT NULL / UNIQUE: the database itself refuses this corruption
        store.close()
        return
    calls = [
        lambda: store.load("c"), lambda: store.pending("c"), lambda: store.get_input("c", 1),
        lambda: store.get_input("c", 2), lambda: store.steps("c", "seq-2"), lambda: store.pending_conversations(),
        lambda: store.put_step("c", "seq-2", "model/1", {"x": 1}), lambda: store.enqueue("c", "three"),
        lambda: store.wait_answer("c", 1, timeout_seconds=0),
        lambda: store.acquire("c", "other", ttl_seconds=30),
        lambda: Agent(_echo, store=store, conversation_id="c").drain(),
    ]
    for call in calls:
        try:
            call()
        except (StoreError, FormatError, TimeoutError):
            pass  # documented (FormatError: a stored state that is not a saved state)
    store.close()


def test_hermes_agent_99529_a_corrupt_saved_state_is_a_corrupt_row_error_naming_the_conversation_and_the_fix(store):
    """NousResearch/hermes-agent PR #99529 (a corrupt session store must be reported as corruption, with
    what to do). A saved state that is not a saved state (a message of role ``robot``, as a hand edit
    leaves it), on SQLite and PostgreSQL. Before: ``Agent(store=, conversation_id=)``
    raised ``FormatError`` (not a ``StoreError``) quoting the row's messages, naming neither the
    conversation nor a fix. After: ``CorruptRowError`` naming both and the fix, one line, at most 40
    characters of the row; following the fix (clear the state) the conversation loads empty.
    """
    from yiemagent.store import CorruptRowError

    private = "PRIVATE-TOOL-RESULT-0123456789"
    state = json.dumps({"version": 1, "history": [
        {"role": "user", "content": [{"type": "text", "text": "hello there, this is the user"}]},
        {"role": "robot", "content": [], "tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": private}}]}]})
    lease = store.acquire("conv-7", "w", ttl_seconds=30)
    store.commit(lease, expected_version=0, state=state)
    store.release(lease)
    with pytest.raises(StoreError) as caught:
        Agent(_echo, store=store, conversation_id="conv-7")
    error = caught.value
    text = str(error)
    assert isinstance(error, CorruptRowError) and (error.conversation_id, error.column) == ("conv-7", "state")
    assert "'conv-7'" in text and repr(store) in text and "backup" in text and "SET state = NULL" in text
    assert private not in text and "\n" not in text and len(text) < 600
    assert state[:40] in text and state[:41] not in text
    lease = store.acquire("conv-7", "w", ttl_seconds=30)  # the fix, through the store: an empty state
    store.commit(lease, expected_version=1, state=Agent(_echo).state_to_json())
    store.release(lease)
    agent = Agent(_echo, store=store, conversation_id="conv-7")
    try:
        assert agent.history == []
    finally:
        agent.shutdown()
