"""Schedule exploration of durable runs: a fault at each write of a run, then the promises are checked.

Used by ``tests/store/test_schedules.py`` (a few dozen schedules) and
``scripts/explore_schedules.py`` (hundreds). One *schedule* is: a forked
process A asks a durable agent one input whose run calls one non-idempotent
tool (``charge``: it appends a line with its pid to an effects file, the
"server-side counter"); A's store is a ``FaultyStore`` injecting one fault at
write number ``at``:

* ``fail`` / ``fail_after`` / ``cut``: see ``yiemagent.store.faults`` (disk
  full, a connection cut after the commit, a real connection cut);
* ``pause``: A stops itself (SIGSTOP) before the write; the test waits past
  the lease, lets process B (a fresh agent in this process) take the
  conversation over and finish it, then SIGCONTs A, which wakes up as a zombie;
* ``skew``: A stops itself for a third of the lease; meanwhile B, whose
  ``time.time()`` is one hour ahead, tries to take over (it must not); then
  A goes on.

Afterwards a finisher drains what is pending, and the outcome counts: the
non-idempotent call run twice, the input lost (never answered), the call
hidden (it ran, but the committed history has no result for it that the model
sees), the committed history not whole (``history_faults``: what a strict
provider would refuse, or an input left out under a kept answer: issue 27's
PostgreSQL cut), ``ask()`` raising although the answer was committed, and B
taking a lease A still held.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from yiemagent import Agent, tool
from yiemagent.loop.conversation import parse_state
from yiemagent.messages import AssistantMessage, SystemMessage, ToolResultMessage, UserMessage
from yiemagent.store.faults import Fault, FaultyStore
from yiemagent.testing import text_reply

Factory = Callable[[], Any]
KINDS = ("fail", "fail_after", "cut", "pause", "skew")
_WAIT_SECONDS = 30.0


def _llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """Stateless (any process can serve any turn): a user message asks for charge; a tool result ends."""
    last = messages[-1]
    if last["role"] == "tool":
        return text_reply(f"done: {last['content']}")
    return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "charge", "arguments": '{"amount": 5}'}}]}}]}


def _tools(effects: str) -> list[Any]:
    @tool
    def charge(amount: int) -> str:
        """Charge the card (not safe to repeat)."""
        fd = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"call_1 {os.getpid()}\n".encode())
        finally:
            os.close(fd)
        return f"charged {amount}"

    return [charge]


def make_agent(store: Any, cid: str, effects: str, lease_seconds: float) -> Agent:
    return Agent(_llm, tools=_tools(effects), store=store, conversation_id=cid, lease_seconds=lease_seconds,
                 tool_execution="sequential")


def count_writes(factory: Factory, workdir: Path, lease_seconds: float) -> list[tuple[int, str, str]]:
    """The writes of one run without a fault (the schedule space)."""
    store = FaultyStore(factory())
    cid = f"c-count-{time.monotonic_ns()}"
    make_agent(store, cid, str(workdir / f"{cid}.effects"), lease_seconds).ask("pay")
    store.store.close()
    return store.writes


def _child(factory: Factory, cid: str, effects: str, fault: Fault, lease_seconds: float, paused: str,
           out: Any) -> None:
    def pause(number: int) -> None:
        Path(paused).write_text(str(number))
        os.kill(os.getpid(), signal.SIGSTOP)

    inner = factory()
    store = FaultyStore(inner, fault, on_pause=pause)
    try:
        answer = make_agent(store, cid, effects, lease_seconds).ask("pay")
        out.put(("answer", answer.get("status"), time.time()))
    except BaseException as exc:
        out.put(("raised", f"{type(exc).__name__}: {exc}", time.time()))
    finally:
        inner.close()


@dataclass
class Outcome:
    kind: str
    at: int
    write: str
    ran: int = 0
    lost: bool = False
    hidden: bool = False
    broken: list[str] = field(default_factory=list)
    ask_raised_committed: bool = False
    lease_stolen: bool = False
    child: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.ran <= 1 and not (self.lost or self.hidden or self.broken or self.ask_raised_committed
                                      or self.lease_stolen)


def history_faults(history: list[Any]) -> list[str]:
    """Why a committed history is not whole ([] when it is): what the model would be sent from it.

    Checked on the messages that are not ``excluded`` (what every later request holds), as a strict
    provider checks a request (Anthropic, Mistral, chat templates that require alternation): the first
    message after the system prompt is the user's; every tool result answers a call of the assistant
    message before it, and every call of a kept assistant message has its result before the next
    user or assistant message. Also: no input the user gave is left out (``excluded``) while an
    answer to it is kept (issue 27: a PostgreSQL cut left the question out and kept the answer).
    """
    faults: list[str] = []
    kept = [m for m in history if not getattr(m, "excluded", None) and not isinstance(m, SystemMessage)]
    if kept and not isinstance(kept[0], UserMessage):
        faults.append(f"the first message sent is a {type(kept[0]).__name__}, not the user's")
    open_calls: set[str] = set()
    for message in kept:
        if isinstance(message, ToolResultMessage):
            if message.tool_call_id not in open_calls:
                faults.append(f"tool result {message.tool_call_id} answers no open call")
            open_calls.discard(message.tool_call_id)
            continue
        if open_calls:
            faults.append(f"calls {sorted(open_calls)} have no result before the next {type(message).__name__}")
        open_calls = {c.id for c in message.tool_calls} if isinstance(message, AssistantMessage) else set()
    input_left_out = False
    for message in history:
        if isinstance(message, UserMessage):
            input_left_out = bool(getattr(message, "excluded", None))
        elif input_left_out and not getattr(message, "excluded", None):
            faults.append(f"an excluded input is under a kept {type(message).__name__}")
            break
    return faults


def _drain_until_answered(factory: Factory, cid: str, effects: str, lease_seconds: float,
                          timeout_seconds: float = _WAIT_SECONDS) -> None:
    store = factory()
    try:
        agent = make_agent(store, cid, effects, lease_seconds)
        deadline = time.monotonic() + timeout_seconds
        while store.pending(cid) and time.monotonic() < deadline:
            if not agent.drain():
                time.sleep(0.05)
        agent.shutdown(timeout_seconds=1.0)
    finally:
        store.close()


def _lease_held(store: Any, cid: str) -> bool:
    """True while a lease of ``cid`` is unexpired by the store's own clock."""
    with store._use() as conn, store._cursor(conn) as cur:
        cur.execute(store._sql(f"SELECT lease_owner, lease_clock, lease_expires_at FROM {store.conversations_table} "
                               "WHERE conversation_id = ?"), (cid,))
        row = cur.fetchone()
        return row is not None and not store._expired(row[0], row[1], row[2], store._now(cur) + 0.05)


def run_schedule(factory: Factory, workdir: Path, kind: str, at: int, write: str, *,
                 lease_seconds: float = 0.6) -> Outcome:
    """Run one schedule (see the module docstring); return what it counted."""
    cid = f"c-{kind}-{at}-{time.monotonic_ns()}"
    effects = str(workdir / f"{cid}.effects")
    paused = str(workdir / f"{cid}.paused")
    outcome = Outcome(kind, at, write)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    fault = Fault(at, "pause" if kind in ("pause", "skew") else kind)  # type: ignore[arg-type]
    child = ctx.Process(target=_child, args=(factory, cid, effects, fault, lease_seconds, paused, out))
    child.start()
    try:
        deadline = time.monotonic() + _WAIT_SECONDS
        result = None
        while result is None and time.monotonic() < deadline:
            if os.path.exists(paused):
                break
            try:
                result = out.get(timeout=0.02)
            except Exception:
                continue
        if result is None and os.path.exists(paused):
            if kind == "pause":
                time.sleep(lease_seconds * 1.6)  # A's lease expires while it is stopped
                _drain_until_answered(factory, cid, effects, lease_seconds)
            else:  # skew: A holds an unexpired lease; B, one hour ahead, must not take it
                store = factory()
                try:
                    with mock.patch("time.time", lambda real=time.time: real() + 3600.0):
                        held = _lease_held(store, cid)  # by the store's clock (under load it may expire)
                        agent = make_agent(store, cid, effects, lease_seconds)
                        took = agent.drain()
                    agent.shutdown(timeout_seconds=1.0)
                    outcome.lease_stolen = bool(took) and held
                finally:
                    store.close()
            os.kill(child.pid, signal.SIGCONT)
        if result is None:
            result = out.get(timeout=_WAIT_SECONDS)
    finally:
        child.join(timeout=_WAIT_SECONDS)
        if child.is_alive():
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
            outcome.notes.append("child killed")
    outcome.child = f"{result[0]}: {result[1]}"
    _drain_until_answered(factory, cid, effects, lease_seconds)  # the finisher
    store = factory()
    try:
        entry = store.get_input(cid, 1)
        record = store.load(cid)
        leftover = store.steps(cid, "seq-1")
    finally:
        store.close()
    lines = Path(effects).read_text().splitlines() if os.path.exists(effects) else []
    outcome.ran = len(lines)
    outcome.lost = entry is None or entry.answer is None
    if leftover:
        outcome.notes.append(f"journal rows left: {sorted(leftover)}")
    if outcome.ran and record.state is not None:
        history, _, _ = parse_state(record.state)
        seen = [m for m in history if isinstance(m, ToolResultMessage) and m.tool_name == "charge"
                and not getattr(m, "excluded", None)]
        outcome.hidden = not seen
    if record.state is not None:
        outcome.broken = history_faults(parse_state(record.state)[0])
    if outcome.ran and record.state is None:
        outcome.hidden = True
    if result[0] == "raised" and entry is not None and entry.served_at is not None and entry.served_at <= result[2]:
        outcome.ask_raised_committed = True
    return outcome


def explore(factory: Factory, workdir: Path, kinds: tuple[str, ...] = KINDS,
            writes: Callable[[tuple[int, str, str]], bool] = lambda w: True, *,
            lease_seconds: float = 0.6) -> list[Outcome]:
    """Every kind at every write (filtered by ``writes``); one ``Outcome`` each."""
    space = [w for w in count_writes(factory, workdir, lease_seconds) if writes(w)]
    outcomes = []
    for kind in kinds:
        for number, method, detail in space:
            outcomes.append(run_schedule(factory, workdir, kind, number, f"{method} {detail}".strip(),
                                         lease_seconds=lease_seconds))
    return outcomes


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    return {
        "schedules": len(outcomes),
        "pauses": sum(o.kind == "pause" for o in outcomes),
        "skews": sum(o.kind == "skew" for o in outcomes),
        "cuts": sum(o.kind == "cut" for o in outcomes),
        "failures": sum(o.kind in ("fail", "fail_after") for o in outcomes),
        "tool_effects": sum(o.ran for o in outcomes),
        "run_twice": sum(o.ran > 1 for o in outcomes),
        "lost": sum(o.lost for o in outcomes),
        "hidden": sum(o.hidden for o in outcomes),
        "broken": sum(bool(o.broken) for o in outcomes),
        "ask_raised_committed": sum(o.ask_raised_committed for o in outcomes),
        "lease_stolen": sum(o.lease_stolen for o in outcomes),
        "bad": [json.dumps(o.__dict__) for o in outcomes if not o.ok],
    }
