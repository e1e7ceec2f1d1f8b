"""Conversation store: the protocol a backend implements, and its records.

A store keeps, per conversation id:

* the **state**: the JSON text of ``Agent.state_to_json()``, and a
  **version** (0 for a conversation never committed, +1 per commit);
* an **inbox**: the inputs, each with a sequence number the store assigns
  (1, 2, 3, ... per conversation, in the order ``enqueue`` returned) and, once
  served, its **answer** (the dict the agent puts on ``output_queue``);
* a **journal** of the run in progress: steps keyed by ``(run key, step
  key)``, first write wins;
* a **lease**: at most one owner serves a conversation at a time; each new
  holder gets a larger fencing ``token``, checked by ``commit``.

``commit`` is the only write that moves a conversation forward. It is atomic
and refused (``StaleStateError``, nothing written) when the version moved or
the lease was taken by someone else, so a stale or zombie process can never
overwrite newer state.

Backends: ``yiemagent.SQLiteStore`` (one host, several processes) and
``yiemagent.PostgresStore`` (several hosts). A third-party backend is any
object with these methods that passes ``tests/store/contract.py``; deriving
from ``StoreBase`` gives it ``wait_answer``.

Keys (see ``run_key`` and ``idempotency_key``): a run is named after the
first inbox seq it serves (``"seq-7"``); its steps are ``model/<turn>``,
``started/<tool_call_id>``, ``tool/<tool_call_id>`` and ``steer/<turn>``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ..exceptions import FormatError, StoreError
from ..textpolicy import boundary, json_text

__all__ = [
    "MAX_LEASE_SECONDS",
    "ConversationRecord",
    "ConversationStore",
    "CorruptRowError",
    "InboxEntry",
    "Lease",
    "ReplyTo",
    "ServedInput",
    "StoreBase",
    "find_input",
    "idempotency_key",
    "normalize_input",
    "run_key",
]

ReplyTo = Literal["store", "output_queue"]

MAX_LEASE_SECONDS = 3600.0
"""The longest lease ``acquire``/``renew`` grant; a stored lease expiring further ahead is corrupt (expired)."""


class CorruptRowError(StoreError):
    """A stored row is not what the store wrote (not JSON, wrong shape, a tampered column).

    The store's decode path raises only this (a ``StoreError``) for such rows,
    never ``json.JSONDecodeError`` or ``AssertionError``.
    """

    def __init__(self, message: str, *, conversation_id: str = "", step_keys: Sequence[str] = (),
                 column: str = "") -> None:
        super().__init__(message)
        self.conversation_id = conversation_id
        self.step_keys = list(step_keys)
        """From ``steps()``: the keys of every step of the run, readable or not."""
        self.column = column
        """The unreadable column when known: ``"state"`` for a saved state that is not one; else ``""``."""


@dataclass(frozen=True)
class ConversationRecord:
    """A conversation's committed state."""

    conversation_id: str
    version: int
    """0 when never committed; +1 per ``commit``."""
    state: str | None
    """``Agent.state_to_json()`` text of the last commit, None when never committed."""
    updated_at: float | None = None
    """Unix seconds of the last commit."""


@dataclass(frozen=True)
class InboxEntry:
    """One input of a conversation's inbox."""

    conversation_id: str
    seq: int
    """1, 2, 3, ... per conversation, assigned by ``enqueue``."""
    input_id: str
    """The caller's id (idempotent enqueue) or a random one; in the answer's ``input_ids``."""
    message: dict[str, Any]
    """OpenAI user message: ``{"role": "user", "content": str | [parts]}``."""
    reply_to: str
    """``"output_queue"`` (a queued input: its answer also goes to the output queue of the
    agent that serves it after a restart) or ``"store"`` (read it with ``get_input``)."""
    enqueued_at: float
    """Unix seconds."""
    served_at: float | None = None
    """Unix seconds of the commit that served it; None while pending."""
    answer: dict[str, Any] | None = None
    """The answer dict (OpenAI assistant message + ``status``, ``input_ids``, ``seq``), once served."""
    run_key: str | None = None
    """The run that served it."""
    error: str | None = None
    """Why the stored row could not be read (corrupt, tampered); ``message`` is then ``{}``. The
    conversation answers such an input with this error instead of running it (quarantine)."""

    @property
    def served(self) -> bool:
        """True once a commit answered it."""
        return self.served_at is not None


@dataclass(frozen=True)
class Lease:
    """The right to serve one conversation until ``expires_at``, fenced by ``token``."""

    conversation_id: str
    owner: str
    token: int
    """Grows with each new holder; ``commit`` refuses a lease whose token is no longer current."""
    expires_at: float
    """Unix seconds by this process's clock, for display only: the store decides expiry on its own
    single clock (the database's, or the host's boot clock for SQLite), never on this value."""


@dataclass(frozen=True)
class ServedInput:
    """An input a commit answers: its ``seq`` and the ``answer`` dict."""

    seq: int
    answer: dict[str, Any]


def run_key(first_seq: int) -> str:
    """The run key of the run that serves inbox entry ``first_seq`` first: ``"seq-<n>"``."""
    return f"seq-{first_seq}"


def idempotency_key(conversation_id: str, run: str, tool_call_id: str) -> str:
    """The stable key of one tool call: ``"<conversation_id>:<run key>:<tool_call_id>"``.

    The same call replayed after a crash, in any process, has the same key;
    pass it to external APIs that deduplicate (``Idempotency-Key`` headers).
    """
    return f"{conversation_id}:{run}:{tool_call_id}"


def normalize_input(message: Any) -> dict[str, Any]:
    """``message`` as an OpenAI user-message dict (what the inbox stores).

    Accepts a ``str``, an OpenAI user-message dict, or a ``UserMessage``.

    Raises:
        FormatError: anything else, or a dict whose role is not ``user``.
    """
    if isinstance(message, str):
        return {"role": "user", "content": message}
    to_openai = getattr(message, "role", None) == "user" and getattr(message, "content", None) is not None
    if to_openai and not isinstance(message, dict):
        from ..messages import to_openai as convert

        return convert(message)
    if isinstance(message, dict) and message.get("role") == "user" and "content" in message:
        try:
            json.dumps(message)
        except (TypeError, ValueError) as exc:
            raise FormatError(f"an inbox message must be JSON: {exc}", raw=message) from exc
        return dict(message)
    raise FormatError(
        f"an inbox message must be a str or an OpenAI user-message dict, not {message!r:.100}", raw=message
    )


@runtime_checkable
class ConversationStore(Protocol):
    """What the agent needs from a store; every method is sync and thread-safe.

    Errors: backends raise ``StoreError`` (original in ``__cause__``) when the
    database fails, ``StaleStateError`` where stated, ``FormatError`` for a
    bad input message.
    """

    def load(self, conversation_id: str) -> ConversationRecord:
        """The committed state; version 0 and state None for an unknown id (never raises for it)."""
        ...

    def enqueue(
        self, conversation_id: str, message: Any, *, input_id: str | None = None, reply_to: ReplyTo = "store"
    ) -> int:
        """Append an input to the inbox; return its seq.

        Args:
            conversation_id: any string naming the conversation.
            message: ``str`` or OpenAI user-message dict (see ``normalize_input``).
            input_id: the same ``(conversation_id, input_id)`` again returns the
                existing seq and stores nothing; None: a random id.
            reply_to: ``"store"`` or ``"output_queue"`` (see ``InboxEntry.reply_to``).
        """
        ...

    def pending(self, conversation_id: str, *, limit: int | None = None) -> list[InboxEntry]:
        """Inputs not served yet, seq ascending (at most ``limit``)."""
        ...

    def get_input(self, conversation_id: str, seq: int) -> InboxEntry | None:
        """One inbox entry (with its answer once served), or None."""
        ...

    def pending_conversations(self, *, limit: int = 100) -> list[str]:
        """Ids having pending inputs, the one with the oldest pending input first."""
        ...

    def put_step(self, conversation_id: str, run: str, step: str, value: Any, *, lease: Lease | None = None) -> Any:
        """Record a journal step unless it exists; return the value stored (the first writer's).

        ``value`` is written by the outbound text policy (``store_row_text``): what JSON
        cannot carry is replaced (NaN -> null, a lone surrogate -> U+FFFD, another
        object -> its text), never refused; callers must go on with the returned value.
        ``lease``: write only while it is the current lease of the conversation
        (checked in the same transaction, as ``commit`` does).

        Raises:
            StaleStateError: ``lease`` is no longer current (reason ``"lease"``; nothing written), or
                the run was committed meanwhile (``"version"``).
            CorruptRowError: the stored value is not JSON.
        """
        ...

    def steps(self, conversation_id: str, run: str) -> dict[str, Any]:
        """Every journal step of run ``run``: ``{step key: value}``.

        Raises:
            CorruptRowError: a stored step is not JSON.
        """
        ...

    def acquire(self, conversation_id: str, owner: str, *, ttl_seconds: float = 30.0) -> Lease | None:
        """Take the lease if free, expired or already ``owner``'s (then extended); else None.

        Non-blocking. A new holder gets a larger token than any before it.
        Expiry is judged on the store's one clock, never on the callers' clocks.

        Raises:
            ConfigError: ``ttl_seconds`` not in (0, ``MAX_LEASE_SECONDS``].
        """
        ...

    def renew(self, lease: Lease, *, ttl_seconds: float = 30.0) -> Lease:
        """Extend ``lease`` by ``ttl_seconds`` from now.

        Raises:
            StaleStateError: someone else holds the lease now (reason ``"lease"``).
        """
        ...

    def release(self, lease: Lease) -> None:
        """Give the lease up; nothing happens if it is no longer ours."""
        ...

    def commit(
        self,
        lease: Lease,
        *,
        expected_version: int,
        state: str,
        served: Sequence[ServedInput] = (),
        run: str | None = None,
    ) -> int:
        """Write ``state``, mark ``served`` inputs answered and drop their runs' journals, atomically.

        The journal rows dropped: run ``run``'s and those under the run key of
        each served input (left there by a zombie).

        Returns:
            The new version, ``expected_version + 1``.

        Raises:
            StaleStateError: the lease's token is no longer current (reason
                ``"lease"``), the version is not ``expected_version``
                (``"version"``), or a served seq is unknown or already served
                (``"served"``). Nothing is written.
        """
        ...

    def wait_answer(
        self, conversation_id: str, seq: int, *, timeout_seconds: float | None = None, poll_seconds: float = 0.05
    ) -> dict[str, Any]:
        """Block until input ``seq`` is served; return its answer dict.

        Raises:
            TimeoutError: not served within ``timeout_seconds`` (None: no limit; 0: looked once).
            StoreError: no such input.
            ConfigError: ``timeout_seconds`` negative or not finite, ``poll_seconds`` not a finite number > 0.
        """
        ...

    def close(self) -> None:
        """Close the connection (the object reconnects if used again)."""
        ...


def find_input(store: ConversationStore, conversation_id: str, input_id: str) -> InboxEntry | None:
    """The inbox entry of ``input_id`` in ``conversation_id`` (``store.find_input``), or None when unknown.

    ``SQLiteStore`` and ``PostgresStore`` have ``find_input``; the ``ConversationStore`` protocol
    does not require it (a store of your own without it makes this raise).

    Raises:
        ConfigError: ``store`` has no ``find_input`` method.
        StoreError: the store failed.
    """
    from ..exceptions import ConfigError

    find = getattr(store, "find_input", None)
    if not callable(find):
        raise ConfigError(f"{type(store).__name__} has no find_input(conversation_id, input_id): "
                          "look the input up by its seq (get_input) instead")
    entry = find(conversation_id, input_id)
    return entry if isinstance(entry, InboxEntry) else None


class StoreBase:
    """Helpers for a backend: ``wait_answer`` on top of ``get_input``, ids, JSON."""

    def get_input(self, conversation_id: str, seq: int) -> InboxEntry | None:  # pragma: no cover - abstract
        """One inbox entry, or None (backends implement it)."""
        raise NotImplementedError

    def wait_answer(
        self, conversation_id: str, seq: int, *, timeout_seconds: float | None = None, poll_seconds: float = 0.05
    ) -> dict[str, Any]:
        """Block until input ``seq`` is served; return its answer (see ``ConversationStore``)."""
        from .._internal.checks import check_number
        from ..exceptions import StoreError

        # 0: look once, never wait; NaN, inf or below 0 never passes or never came: it waited for ever
        check_number("timeout_seconds", timeout_seconds, positive=False, optional=True)
        check_number("poll_seconds", poll_seconds)
        deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
        while True:
            entry = self.get_input(conversation_id, seq)
            if entry is None:
                raise StoreError(f"conversation {conversation_id!r} has no input {seq}")
            if entry.answer is not None:
                return entry.answer
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"input {seq} of {conversation_id!r} not served within {timeout_seconds}s")
            time.sleep(poll_seconds)

    @staticmethod
    def _new_input_id() -> str:
        return uuid.uuid4().hex[:12]

    @staticmethod
    def _dumps(value: Any) -> str:
        """A row's JSON text: the outbound text policy's ``store_row`` boundary (``yiemagent.textpolicy``)."""
        return store_row_text(value)


@boundary("store_row", "json")
def store_row_text(value: Any) -> str:
    """The JSON text stored for an inbox message, an answer or a journal value (both SQL stores).

    Lone surrogates (a file name from ``os.listdir``) become U+FFFD and NaN
    becomes null, as in model requests, so a value the agent accepted can
    always be stored; known secrets are ``***`` (``yiemagent.textpolicy``).
    """
    return json_text(value)
