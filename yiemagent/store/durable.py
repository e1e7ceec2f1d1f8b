"""Durable conversations: an ``Agent`` whose conversation lives in a ``ConversationStore``.

``Agent(llm_call, store=store, conversation_id="c-42")`` drives a
``DurableConversation``: the contract of a conversation
(``yiemagent.loop.conversation``) kept over a ``ConversationStore``. The rules:

* every input the agent accepts is first added to the conversation's inbox
  (``store.enqueue``) and stays there until the run that answers it commits;
* serving takes the conversation's lease (waiting while another process holds
  it), loads the committed state if it moved, then serves the pending inputs
  in inbox order up to the one asked for, each as one run journaled under the
  run key ``seq-<n>`` (``yiemagent.store.journal.StoreJournal``): an interrupted run
  is finished from its journal (recorded replies and results are not redone);
* after each run, one atomic ``commit`` writes the state, the answer of the
  inputs it served and drops the run's journal; it is fenced by the lease and
  the version, so a process that lost its lease writes nothing;
* a run that waits for approval (``yiemagent.tools.approvals``) is not committed: its
  input stays first in the inbox, its journal holds the waiting calls and the
  decisions, and it is served again (replayed, then resumed) once all are decided;
  a later input rejects its undecided calls first. ``drain`` does not return it;
* with ``steering``, the inputs that joined the inbox during a run join it
  after a tool batch; which ones is journaled (``steer/<n>``) so a replay takes
  the same, and the commit answers them all with the run's answer;
* the answer goes where it would without a store (the caller's future or the
  output queue) and is readable from the store by seq. An agent started with
  ``start()`` first serves what is pending; answers of inputs that were queued
  (``reply_to="output_queue"``) by an agent that died go to its output queue.

The lease is renewed every third of ``lease_seconds`` by a heartbeat thread
while the agent serves; if it is lost, the current run is aborted and its
commit refused. Every journal write is fenced by the lease too (a holder
paused past its lease writes nothing and starts no tool once another took
over).

Store failures never hide a call that ran: a run during which a journal write
failed is not committed (the input stays pending; the next run of its key
replays what was recorded, records a result this process still holds, or
reports the call "interrupted, effect unknown"). A commit whose outcome is
unknown (the connection cut during it) is checked by reading the input back,
and releasing the lease never fails a served input. ``serve`` retries a
failing store with backoff for up to ``lease_seconds`` before raising.

Bad rows never stall a conversation: an input whose inbox row or journal
cannot be read (``CorruptRowError``, not a user message) is quarantined: its
answer is an error naming the reason (``status: "error"``,
``quarantined: true``), committed, and the inputs after it are served.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
import uuid
from typing import Any

from ..exceptions import AgentClosedError, ConfigError, FormatError, StaleStateError, StoreError, YiemagentError
from ..loop import LoopConfig
from ..loop.branching import BRANCH_KEY, Branch
from ..loop.conversation import Conversation, Input, RunHost, ToolServers
from ..loop.tracing import TRACE_KEY, inbox_fields, note_input
from ..messages import UserMessage, from_openai, to_openai
from ..output.typed_output import INBOX_KEY, OutputSpec, inbox_message, restore_output, storable_answer
from . import approvals as store_approvals
from .base import (
    MAX_LEASE_SECONDS,
    ConversationStore,
    CorruptRowError,
    InboxEntry,
    Lease,
    ReplyTo,
    ServedInput,
    run_key,
)
from .heartbeat import _Heartbeat
from .journal import StoreJournal

__all__ = ["DurableConversation"]

logger = logging.getLogger("yiemagent.store.durable")

_POLL_SECONDS = 0.05
_BACKOFF_MAX_SECONDS = 1.0


class DurableConversation(Conversation):
    """A conversation kept in a ``ConversationStore`` (the contract: ``yiemagent.loop.conversation``; the rules above).

    Args:
        config: model, tools, hooks and limits of every run (as ``Conversation``).
        store: the conversation store.
        conversation_id: the conversation.
        lease_seconds: lease time-to-live; renewed every third of it.
        servers, mcp_required, steering: as ``Conversation``.

    Raises:
        ConfigError: ``lease_seconds`` not in (0, ``MAX_LEASE_SECONDS``].
        StoreError: the store could not be read.
        CorruptRowError: the stored state (the ``state`` column of the
            conversation's row) is not a saved state; the message names the
            conversation, the store and the fix (restore the state from a
            backup, or clear it: the conversation then starts with an empty
            history; its inbox is kept), and quotes at most the first 40
            characters of the row. A ``StoreError``.
    """

    durable = True
    """True: the conversation and its inputs live in the store and survive this process."""

    def __init__(self, config: LoopConfig, store: ConversationStore, conversation_id: str, *,
                 lease_seconds: float = 30.0, servers: ToolServers | None = None, mcp_required: bool = False,
                 steering: bool = False) -> None:
        if (isinstance(lease_seconds, bool) or not isinstance(lease_seconds, (int, float))
                or not 0 < lease_seconds <= MAX_LEASE_SECONDS):
            raise ConfigError(f"lease_seconds must be a number in (0, {MAX_LEASE_SECONDS:.0f}], "
                              f"not {lease_seconds!r:.40}")
        super().__init__(config, servers=servers, mcp_required=mcp_required, steering=steering)
        self.store = store
        self.conversation_id = conversation_id
        self.lease_seconds = lease_seconds
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        """Lease owner name: host, pid and a random part (one per conversation object)."""
        self.version = -1
        """Version of the state in ``history``; -1: not loaded."""
        self._local: dict[str, tuple[Input, bool]] = {}  # input id -> (entry, deliver) of our own waiting inputs
        self._recovered: set[int] = set()  # seqs pending when the agent thread started
        self._lock = threading.Lock()
        self._journal: StoreJournal | None = None  # of the run being served
        self._run_seqs: list[int] = []  # inbox seqs the current run answers (steered ones too)
        self._polls = 0
        self._sent: set[tuple[int, ...]] = set()  # answers of several inputs already put on the output queue
        self._lease_lost = False  # the heartbeat aborted the run (not the user)
        self._delivered: set[int] = set()  # seqs whose answers recover() put on the output queue
        self._unrecorded: dict[tuple[str, str], dict[str, Any]] = {}  # results ran here, not yet journaled
        self.load()

    def __repr__(self) -> str:
        return f"<DurableConversation {self.conversation_id!r} v{self.version} owner {self.owner!r}>"

    # ------------------------------------------------------------------ state

    def load(self) -> None:
        """Replace the history with the committed state if it moved (or was never loaded)."""
        record = self.store.load(self.conversation_id)
        if record.version == self.version:
            return
        try:
            self.load_state(record.state)
        except FormatError as exc:
            raise corrupt_state_error(self.store, self.conversation_id, record.version, record.state, exc) from None
        logger.debug("%r: loaded version %d (%d messages)", self, record.version, len(self.history))
        self.version = record.version

    # ------------------------------------------------------------------ serving

    def recover(self, host: RunHost) -> list[dict[str, Any]]:
        """At thread start: serve every pending input, interrupted runs first; return the answers."""
        self._recovered = {e.seq for e in self.store.pending(self.conversation_id)}
        while self._recovered and host.stop_mode is None:
            answers = self._drain(host, until_seq=None)
            if answers is not None:
                return answers
            time.sleep(_POLL_SECONDS)  # another process holds the lease (or a dead one, until it expires)
        return []

    def accept(self, entry: Input) -> int:
        """Add an input put on a queue to the inbox at once (so a crash cannot lose it); return its seq.

        Idempotent by ``entry.id``: the same input again returns the seq it has.
        """
        reply_to: ReplyTo = "store" if entry.future is not None else "output_queue"
        return self.store.enqueue(self.conversation_id, self._inbox_message(entry), input_id=entry.id,
                                  reply_to=reply_to)

    def serve(self, entry: Input, host: RunHost, *, deliver: bool) -> dict[str, Any]:
        """Add ``entry`` to the inbox, serve the inbox up to it, deliver and return its answer.

        Raises:
            StoreError: the store kept failing for ``lease_seconds`` (the input stays in the inbox
                if it got there; its answer, once served, is readable there).
        """
        host.abort_event.clear()  # as a run without a store does when it starts
        reply_to: ReplyTo = "output_queue" if deliver and entry.future is None else "store"
        failing_since: float | None = None
        pause = _POLL_SECONDS
        seq: int | None = None
        while True:
            try:
                if seq is None:
                    seq = self.store.enqueue(self.conversation_id, self._inbox_message(entry), input_id=entry.id,
                                             reply_to=reply_to)
                    with self._lock:
                        self._local[entry.id] = (entry, deliver)
                done = self.store.get_input(self.conversation_id, seq)
                if done is not None and done.answer is not None:  # served, maybe by another process
                    if self.version < 0:  # our half-run was dropped: the history is the committed one
                        self.load()
                    if seq in self._delivered:  # recover() served it and put it on the output queue already
                        with self._lock:
                            self._local.pop(entry.id, None)
                            self._delivered.discard(seq)
                        return restore_output(done.answer, entry.output or self.config.output)
                    return self._deliver(host, done, restore_output(done.answer, entry.output or self.config.output))
                if self._lease_lost and host.abort_event.is_set():  # our abort, not the user's: serve on
                    self._lease_lost = False
                    host.abort_event.clear()
                if host.stop_mode == "now" or host.abort_event.is_set():
                    with self._lock:
                        self._local.pop(entry.id, None)
                    exc = AgentClosedError(f"input {seq} was not served yet; it stays in the inbox of "
                                           f"{self.conversation_id!r} and its answer will be readable there")
                    answer = self.error_answer([entry.id], exc)
                    answer["status"] = "aborted"
                    host.deliver(answer, [entry], False)
                    return answer
                answers = self._drain(host, until_seq=seq)
                failing_since, pause = None, _POLL_SECONDS
                if answers is None:  # another process holds the lease
                    time.sleep(_POLL_SECONDS)
                mine = [a for a in answers or () if seq in (a.get("seq") or ())]
                if mine:  # committed and delivered here: no read-back that a failing store could refuse
                    return mine[-1]
            except StoreError as exc:
                now = time.monotonic()
                failing_since = now if failing_since is None else failing_since
                corrupt_state = isinstance(exc, CorruptRowError) and exc.column == "state"  # no retry mends it
                if corrupt_state or now - failing_since >= self.lease_seconds or host.stop_mode == "now":
                    with self._lock:
                        self._local.pop(entry.id, None)
                    raise
                logger.warning("%r: the store failed (%s); trying again in %.2fs", self, exc, pause)
                time.sleep(pause)
                pause = min(pause * 2, _BACKOFF_MAX_SECONDS)

    def drain(self, host: RunHost) -> list[dict[str, Any]]:
        """Serve every pending input (lease held); return their answers; [] if another process serves.

        After releasing the lease it looks at the inbox again, so an input that
        arrived while another drain was giving up is not left without a server.
        """
        answers: list[dict[str, Any]] = []
        while True:
            served = self._drain(host, until_seq=None) or []
            waiting = bool(served) and served[-1].get("status") == "awaiting_approval"
            answers += served[:-1] if waiting else served  # a run waiting for approval is not served
            if not served or waiting:  # lease held elsewhere (its holder serves the rest), no progress, or waiting
                return answers
            if not self.store.pending(self.conversation_id, limit=1):
                return answers

    def _drain(self, host: RunHost, until_seq: int | None) -> list[dict[str, Any]] | None:
        lease = self.store.acquire(self.conversation_id, self.owner, ttl_seconds=self.lease_seconds)
        if lease is None:
            return None
        answers = []
        self._lease_lost = False
        heartbeat = _Heartbeat(self.store, lease, self.lease_seconds, lambda: self._lost_lease(host))
        try:
            self.load()
            while not heartbeat.lost:
                pending = self.store.pending(self.conversation_id, limit=1)
                if not pending or (until_seq is not None and pending[0].seq > until_seq):
                    break
                answers.append(self._serve_one(host, pending[0], lease))
                if answers[-1].get("status") == "awaiting_approval":  # the inbox waits for a decision
                    break
        except StaleStateError as exc:
            logger.warning("%r: commit refused (%s); reloading", self, exc)
            self.version = -1
        except BaseException:
            self.version = -1  # the history in memory may hold half a run: reload next time
            raise
        finally:
            heartbeat.stop()
            try:
                self.store.release(lease)
            except StoreError as exc:  # what was committed stays committed; the lease expires by itself
                logger.warning("%r: releasing the lease failed (%s); it expires in %ss", self, exc,
                               self.lease_seconds)
        return answers

    def pending_approvals(self) -> list[dict[str, Any]]:
        """The calls the conversation's waiting run waits on, read from the store (``store.approvals``)."""
        return store_approvals.pending_approvals(self.store, self.conversation_id)

    def decide(self, decisions: dict[str, bool | str]) -> tuple[list[dict[str, Any]], Input | None]:
        """Record decisions in the store (any process); see ``yiemagent.store.approvals.decide``."""
        return store_approvals.decide(self.store, self.conversation_id, decisions)

    def _lost_lease(self, host: RunHost) -> None:
        """The heartbeat found the lease taken: abort the run (its commit would be refused anyway)."""
        self._lease_lost = True
        host.abort()

    def _serve_one(self, host: RunHost, inbox: InboxEntry, lease: Lease) -> dict[str, Any]:
        with self._lock:
            local, deliver = self._local.get(inbox.input_id, (None, False))
        run = run_key(inbox.seq)
        try:
            message, branch = self._message(inbox), Branch.from_inbox(inbox.message)
            journal = StoreJournal(self.store, self.conversation_id, run, lease=lease, unrecorded=self._unrecorded)
        except (CorruptRowError, FormatError) as exc:
            return self._quarantine(host, inbox, lease, run, exc)
        entry = local if local is not None else Input(message=message, id=inbox.input_id)
        entry.id, entry.branch = inbox.input_id, branch
        note_input(entry.id, inbox.message.get(TRACE_KEY) if isinstance(inbox.message, dict) else None)
        if local is None:  # recovered: the typed answer asked for it was stored with it
            stored = inbox.message.get(INBOX_KEY) if isinstance(inbox.message, dict) else None
            entry.output = OutputSpec.from_inbox(stored, self.config.output)
        if journal.recorded:
            logger.info("%r: finishing interrupted run %s from %d journaled steps", self, run, len(journal.recorded))
            store_approvals.supersede(self.store, self.conversation_id, inbox.seq, journal)  # a new input came
            waiting = store_approvals.still_waiting(journal, inbox)  # undecided: not run again until decided
            if waiting is not None:
                return self._park(host, inbox, waiting, waiting["seq"])
        self._journal, self._run_seqs, self._polls = journal, [inbox.seq], 0
        steered: list[InboxEntry] = []
        try:
            try:
                answer, _ = self.run(entry, host, deliver=deliver, journal=journal)
            finally:
                self._flush(journal)
            if isinstance(journal.failed, CorruptRowError):
                self.version = -1
                return self._quarantine(host, inbox, lease, run, journal.failed)
            if journal.failed is not None:  # a journal write failed: committing would hide what ran
                raise journal.failed
            if answer.get("status") == "awaiting_approval":  # not committed: served again once decided
                return self._park(host, inbox, answer, list(self._run_seqs))
            seqs = list(self._run_seqs)
            steered = [e for q in seqs[1:] if (e := self.store.get_input(self.conversation_id, q)) is not None]
        finally:
            self._journal = None
        answer["seq"] = seqs
        self._commit(lease, run, [ServedInput(q, storable_answer(answer)) for q in seqs], inbox.seq)
        for each in steered:
            self._deliver(host, each, answer)
        return self._deliver(host, inbox, answer)

    def _flush(self, journal: StoreJournal) -> None:
        """Journal a model reply still held back by ``journal`` (none of its calls started).

        A failure is kept in ``journal.failed``: the run is not committed.
        """
        try:
            journal.flush()
        except StoreError as exc:
            logger.warning("%r: journaling the last model reply of %s failed: %s", self, journal.run, exc)

    def _park(self, host: RunHost, inbox: InboxEntry, answer: dict[str, Any], seqs: list[int]) -> dict[str, Any]:
        """A run waiting for approval: not committed; its answer reaches its input and those steered into it."""
        answer["seq"] = seqs
        for each in [e for q in seqs[1:] if (e := self.store.get_input(self.conversation_id, q))]:
            self._deliver(host, each, answer)
        return self._deliver(host, inbox, answer)

    def _commit(self, lease: Lease, run: str, served: list[ServedInput], seq: int) -> None:
        """Commit the run; a commit whose outcome is unknown (a cut connection) is checked by reading back."""
        try:
            self.version = self.store.commit(lease, expected_version=self.version, state=self.state_to_json(),
                                             served=served, run=run)
        except StaleStateError:
            self.version = -1
            raise
        except StoreError as exc:
            self.version = -1
            try:
                done = self.store.get_input(self.conversation_id, seq)
            except StoreError:
                raise exc from None
            if done is None or done.answer is None or done.run_key != run:
                raise
            logger.warning("%r: the commit of %s reported %s, yet it is committed", self, run, exc)

    def _quarantine(self, host: RunHost, inbox: InboxEntry, lease: Lease, run: str,
                    error: YiemagentError) -> dict[str, Any]:
        """Answer an input that cannot be served (a corrupt row) with an error, so the rest goes on."""
        try:
            keys = list(self.store.steps(self.conversation_id, run))
        except CorruptRowError as exc:
            keys = exc.step_keys or ["started/(unreadable journal)"]
        except StoreError:
            keys = ["started/(unreadable journal)"]
        started = sorted(k[len("started/"):] for k in keys if k.startswith("started/"))
        if started:  # a run that had started tools: their effect is unknown, and the answer says so
            error = CorruptRowError(f"{error}; tool calls it had started, whose effect is unknown: "
                                    f"{', '.join(started)}", conversation_id=self.conversation_id)
        logger.warning("%r: input %d is quarantined: %s", self, inbox.seq, error)
        answer = self.error_answer([inbox.input_id], error)
        answer.update(seq=[inbox.seq], quarantined=True)
        self.load()
        self._commit(lease, run, [ServedInput(inbox.seq, answer)], inbox.seq)
        return self._deliver(host, inbox, answer)

    def _poll_steering(self) -> list[tuple[UserMessage, str]]:
        """Inputs that joined the inbox during the run (``steering=True``), recorded so a replay takes the same."""
        journal = self._journal
        if journal is None:
            return []
        self._polls += 1
        key = f"steer/{self._polls}"
        seqs = journal.recorded.get(key)
        if seqs is None:
            fresh = [e.seq for e in self.store.pending(self.conversation_id) if e.seq > self._run_seqs[-1]]
            seqs = journal.put(key, fresh)
        if not isinstance(seqs, list) or not all(isinstance(q, int) and not isinstance(q, bool) for q in seqs):
            exc = CorruptRowError(f"journal step {journal.run}/{key} of {self.conversation_id!r} is corrupt: "
                                  f"{seqs!r:.100}", conversation_id=self.conversation_id)
            journal.failed = journal.failed or exc  # the run is not committed: its input is quarantined
            raise exc
        taken = []
        for seq in seqs:
            entry = self.store.get_input(self.conversation_id, seq)
            if entry is None or entry.served:
                continue
            self._run_seqs.append(seq)
            taken.append((self._message(entry), entry.input_id))
        return taken

    def _inbox_message(self, entry: Input) -> dict[str, Any]:
        """What the inbox keeps of ``entry``: its message, the typed answer's schema, the trace context."""
        branch = {BRANCH_KEY: entry.branch.to_dict()} if entry.branch is not None else {}
        return {**inbox_message(to_openai(entry.message), entry.output or self.config.output), **inbox_fields(),
                **branch}

    def _message(self, inbox: InboxEntry) -> UserMessage:
        if inbox.error is not None:
            raise CorruptRowError(f"inbox entry {inbox.seq} of {self.conversation_id!r} cannot be read: "
                                  f"{inbox.error}", conversation_id=self.conversation_id)
        try:
            message = from_openai(inbox.message)
        except FormatError:
            raise
        except Exception as exc:  # a dict the converter chokes on
            raise FormatError(f"inbox entry {inbox.seq} cannot be read: {type(exc).__name__}: {exc}",
                              raw=inbox.message) from exc
        if not isinstance(message, UserMessage):
            raise FormatError(f"inbox entry {inbox.seq} is not a user message", raw=inbox.message)
        return message

    def _deliver(self, host: RunHost, inbox: InboxEntry, answer: dict[str, Any]) -> dict[str, Any]:
        """Send ``answer`` where the input's original answer would have gone."""
        with self._lock:
            local, deliver = self._local.pop(inbox.input_id, (None, False))
        if local is not None:
            if local.future is not None:
                host.deliver(answer, [local], False)
            elif deliver:
                self._to_output(host, answer)
        elif inbox.seq in self._recovered and inbox.reply_to == "output_queue":
            self._to_output(host, answer)
            with self._lock:
                self._delivered.add(inbox.seq)
        return answer

    def _to_output(self, host: RunHost, answer: dict[str, Any]) -> None:
        """Put ``answer`` on the output queue once, even when it answers several queued inputs (steering)."""
        seqs = tuple(answer.get("seq") or ())
        if len(seqs) > 1:
            with self._lock:
                if seqs in self._sent:
                    return
                self._sent.add(seqs)
        host.deliver(answer, [], True)


def corrupt_state_error(store: ConversationStore, conversation_id: str, version: int, state: str | None,
                        problem: FormatError) -> CorruptRowError:
    """The ``CorruptRowError`` for a stored state that is not a saved state: who, where, and what to do.

    The row is quoted only by its first 40 characters and the problem by its
    first 80 (a state holds the conversation: tool results, user text).
    """
    table = getattr(store, "conversations_table", "the conversations table")
    quoted_id = conversation_id.replace("'", "''")
    reason = _QUOTE_START.split(str(problem), maxsplit=1)[0].strip().rstrip(":")[:80]  # not the row's content
    return CorruptRowError(
        f"the saved state of conversation {conversation_id!r} in {store!r} (version {version}) cannot be read "
        f"({reason}); the row begins {(state or '')[:40]!r}. Restore that state from a backup, or clear it "
        f"(UPDATE {table} SET state = NULL WHERE conversation_id = '{quoted_id}'): the conversation then starts "
        "with an empty history (its inbox is kept)", conversation_id=conversation_id, column="state")


_QUOTE_START = re.compile(r"""[{\[('"]""")
