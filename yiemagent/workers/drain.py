"""Draining a conversation's inbox: the one operation every worker recipe performs.

A *drain* lets the agent of one conversation (``make_agent(conversation_id)``: an ``Agent``
with ``store=`` and ``conversation_id=``) serve every pending input of that conversation under
the store's lease: interrupted runs first, from the journal, then the inbox in sequence order.
Two drains of one conversation never serve at the same time: the loser finds the lease held
and returns ``[]`` at once.

``AgentPool`` keeps the agents of a process, one per conversation (least recently used ones
are shut down): a drain then reads the history from the store only when another process
committed meanwhile, instead of parsing the whole conversation for every input.
``serve_input`` drains until one given input has its answer (the web pattern: served
in-process, or by whoever holds the lease, or, if that holder died, here once its lease
expired). ``PollingWorker`` is a worker without any engine: it polls
``store.pending_conversations()`` and drains each.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from .._internal.checks import check_int, check_number
from ..agent import Agent
from ..exceptions import StoreError
from ..output.answers import Answer
from ..store.approvals import waiting_answer
from ..store.base import ConversationStore
from .faults import FaultTracker

__all__ = ["AgentFactory", "AgentPool", "PollingWorker", "serve_input"]

logger = logging.getLogger(__name__)

AgentFactory = Callable[[str], Agent]
"""``make_agent(conversation_id) -> Agent`` built with ``store=`` and ``conversation_id=``."""


class AgentPool:
    """The agents of this process, one per conversation, made on first use by ``make_agent``.

    Args:
        make_agent: ``make_agent(conversation_id) -> Agent`` (with ``store=`` and ``conversation_id=``).
        max_agents: agents kept at most; the least recently used is shut down beyond that.

    Drains of one conversation run one at a time in this process (a lock per conversation);
    drains of different conversations run in parallel. Safe after ``fork`` only if empty.
    """

    def __init__(self, make_agent: AgentFactory, *, max_agents: int = 64) -> None:
        check_int("max_agents", max_agents, minimum=1)  # a negative bound is a mistake, not "1" (issue 33)
        self.make_agent = make_agent
        self.max_agents = max_agents
        self._agents: collections.OrderedDict[str, Agent] = collections.OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._agents)

    def __contains__(self, conversation_id: object) -> bool:
        return conversation_id in self._agents

    def drain(self, conversation_id: str) -> list[Answer]:
        """Serve every pending input of ``conversation_id``; return their answers.

        Returns:
            The answer dicts (as on ``output_queue``, with ``seq``: the inbox seqs answered), in
            inbox order; ``[]`` when nothing was pending or another process holds the lease.

        Raises:
            StoreError: the store failed (the inputs stay in the inbox; drain again later).
        """
        with self._lock:
            lock = self._locks.setdefault(conversation_id, threading.Lock())
        with lock:
            with self._lock:
                agent = self._agents.pop(conversation_id, None)
            if agent is None:
                agent = self.make_agent(conversation_id)
            try:
                answers = agent.drain()
            except StoreError:  # the store failed, not the agent: kept, with the results it could not record
                with self._lock:
                    self._agents[conversation_id] = agent
                raise
            except BaseException:
                agent.shutdown(timeout_seconds=1.0)  # a failed agent is not kept
                raise
            with self._lock:
                self._agents[conversation_id] = agent
                evicted = []
                while len(self._agents) > self.max_agents:
                    old_id, old = self._agents.popitem(last=False)
                    self._locks.pop(old_id, None)
                    evicted.append(old)
        for old in evicted:
            old.shutdown(timeout_seconds=1.0)
        return answers

    def decide(self, conversation_id: str, decisions: dict[str, bool | str], *,
               timeout_seconds: float | None = 60.0) -> Answer:
        """``Agent.decide`` on the conversation's agent (one drain or decision at a time per conversation here).

        The decision is recorded in the store; once the run has no call left undecided, it resumes
        in this process (waiting for the lease if another process holds it).

        Raises:
            ApprovalError: see ``Agent.decide`` (nothing decided). TimeoutError: the resumed run gave no
                answer in ``timeout_seconds`` (the decisions stand; any drain finishes the run).
            StoreError: the store failed.
        """
        with self._lock:
            lock = self._locks.setdefault(conversation_id, threading.Lock())
        with lock:
            with self._lock:
                agent = self._agents.get(conversation_id)
            if agent is None:
                agent = self.make_agent(conversation_id)
                with self._lock:
                    self._agents[conversation_id] = agent
            return agent.decide(decisions, timeout_seconds=timeout_seconds)

    def close(self) -> None:
        """Shut every agent down."""
        with self._lock:
            agents = list(self._agents.values())
            self._agents.clear()
        for agent in agents:
            agent.shutdown(timeout_seconds=1.0)


def serve_input(
    agents: AgentPool,
    store: ConversationStore,
    conversation_id: str,
    seq: int,
    *,
    timeout_seconds: float | None = 60.0,
    poll_seconds: float = 0.05,
) -> dict[str, Any]:
    """Drain ``conversation_id`` until input ``seq`` has its answer; return that answer.

    The answer may come from this process (it took the lease) or from another one that held the
    lease; if that one died, its lease expires and the next drain here finishes its run from the
    journal. While the input's run waits for approval, its ``awaiting_approval`` answer is returned
    (``yiemagent.store.approvals.waiting_answer``); ``AgentPool.decide`` resumes it.

    Args:
        agents: the process's ``AgentPool``.
        store: the store those agents use.
        conversation_id: the conversation.
        seq: the inbox sequence number ``store.enqueue()`` returned.
        timeout_seconds: seconds to wait in all; None waits without limit.
        poll_seconds: seconds between two tries while another process holds the lease.

    Raises:
        KeyError: the conversation has no input ``seq``.
        TimeoutError: no answer within ``timeout_seconds`` (the input stays in the inbox and is
            served later: its answer will be in the store).
        StoreError: the store failed.
    """
    deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
    while True:
        entry = store.get_input(conversation_id, seq)
        if entry is None:
            raise KeyError(f"conversation {conversation_id!r} has no input {seq}")
        if entry.answer is not None:
            return entry.answer
        agents.drain(conversation_id)
        entry = store.get_input(conversation_id, seq)
        if entry is not None and entry.answer is not None:
            return entry.answer
        waiting = waiting_answer(store, conversation_id, seq)
        if waiting is not None:  # its run waits for a person's decision (yiemagent.tools.approvals)
            return waiting
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"input {seq} of {conversation_id!r} has no answer after {timeout_seconds}s")
        time.sleep(poll_seconds)


class PollingWorker:
    """A worker without an engine: poll the store for pending conversations and drain them.

    Args:
        store: the store to poll (the agents ``make_agent`` builds use the same database).
        make_agent: ``make_agent(conversation_id) -> Agent``.
        concurrency: conversations drained at once (threads of this process).
        poll_seconds: seconds between two polls when nothing is pending.
        max_agents: agents kept between drains (``AgentPool``).
        faults: backoff, quarantine and log rate limit of failing drains and polls
            (``yiemagent.workers.faults.FaultTracker``); None: the defaults (0.1 s doubling to
            30 s, quarantined after 8 failures in a row: tried every 300 s).

    A conversation whose drain fails waits (exponential backoff, bounded), then is quarantined
    if it keeps failing (``faults.quarantined``), with one log line per fault; the others go on.
    Run any number of these, in any number of processes or hosts on one database: the lease
    keeps each conversation to one of them at a time, and a conversation whose holder died is
    taken over once its lease expired. ``run()`` blocks until ``stop()``.
    """

    def __init__(
        self, store: ConversationStore, make_agent: AgentFactory, *, concurrency: int = 1,
        poll_seconds: float = 0.05, max_agents: int = 64, faults: FaultTracker | None = None,
    ) -> None:
        check_int("concurrency", concurrency, minimum=1)
        check_number("poll_seconds", poll_seconds)
        self.store = store
        self.agents = AgentPool(make_agent, max_agents=max_agents)
        self.concurrency = concurrency
        self.poll_seconds = poll_seconds
        self.served = 0
        """Answers produced by this worker so far."""
        self.faults = faults if faults is not None else FaultTracker(logger)
        self._stop = threading.Event()

    def stop(self) -> None:
        """Make ``run()`` return after the drains in progress."""
        self._stop.set()

    def _drain(self, conversation_id: str) -> int:
        try:
            served = len(self.agents.drain(conversation_id))
        except Exception as exc:  # it stays pending; tried again after a backoff (see faults)
            self.faults.failed(conversation_id, exc)
            return 0
        self.faults.succeeded(conversation_id)
        return served

    def run(self) -> None:
        """Poll and drain until ``stop()`` (store errors are logged and retried); then shut the agents down."""
        busy: dict[str, concurrent.futures.Future[int]] = {}
        not_before: dict[str, float] = {}  # a conversation whose drain served nothing waits one poll
        first_seen: dict[str, float] = {}  # affinity: a conversation whose agent is elsewhere waits one poll
        with concurrent.futures.ThreadPoolExecutor(self.concurrency, thread_name_prefix="yiemagent-drain") as pool:
            while not self._stop.is_set():
                now = time.monotonic()
                for cid, future in list(busy.items()):
                    if future.done():
                        served = future.result()
                        self.served += served
                        del busy[cid]
                        if not served:
                            not_before[cid] = now + self.poll_seconds
                if len(busy) < self.concurrency:
                    pending = []
                    if self.faults.ready("<poll>", now):
                        try:
                            pending = self.store.pending_conversations(limit=100)
                            self.faults.succeeded("<poll>")
                        except Exception as exc:
                            self.faults.failed("<poll>", exc, "polling the store")
                    for cid in [c for c in first_seen if c not in pending]:
                        del first_seen[cid]
                    for cid in pending:
                        first_seen.setdefault(cid, now)
                    # a conversation this process served last goes first; others wait one poll, so
                    # that the worker that has its agent (and history) in memory takes it, if alive
                    ready = [c for c in pending if c not in busy and not_before.get(c, 0.0) <= now
                             and self.faults.ready(c, now)
                             and (c in self.agents or first_seen[c] + self.poll_seconds <= now)]
                    random.shuffle(ready)  # several workers polling at once spread over the conversations
                    ready.sort(key=lambda c: c not in self.agents)
                    for cid in ready[: self.concurrency - len(busy)]:
                        busy[cid] = pool.submit(self._drain, cid)
                    for cid in [c for c, t in not_before.items() if t <= now]:
                        del not_before[cid]
                if busy:
                    concurrent.futures.wait(list(busy.values()), timeout=self.poll_seconds,
                                            return_when=concurrent.futures.FIRST_COMPLETED)
                else:
                    self._stop.wait(self.poll_seconds)
            for future in busy.values():
                self.served += future.result()
        self.agents.close()
