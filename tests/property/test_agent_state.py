"""A hypothesis state machine over submit / put / abort / shutdown (issue 5 point 13, issue 8 point 6).

Checked after every sequence: each accepted input gets exactly one answer or
is returned by ``shutdown`` as not served; each tool call in the history has
exactly one result right after its assistant message; no agent thread is left
alive. Issue 8 added the races: ``submit()`` and raw ``put()`` blocked on a full
input queue while ``shutdown()`` runs (they must resolve: accepted and then
answered or returned, or refused with ``AgentClosedError``), ``put(None)``
(answered), puts after shutdown (refused), and a shutdown while nobody reads
the output queue (answers kept in ``undelivered``, never a blocked thread).
"""

import queue
import threading
import time

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from yiemagent import Agent, AgentClosedError, AgentTool
from yiemagent.testing import text_reply

from .. import strict_openai


def model(messages, tools):
    """Asks for 1-3 tools of random-ish delay on a user turn; answers after tool results."""
    last = messages[-1]
    if last["role"] == "tool" or not tools:
        return text_reply("done")
    text = last["content"] if isinstance(last["content"], str) else "x"
    count = 1 + len(text) % 3
    calls = [{"id": f"c{i}", "type": "function",
              "function": {"name": "work", "arguments": f'{{"ms": {(len(text) * (i + 3)) % 15}}}'}}
             for i in range(count)]
    return {"choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": None, "tool_calls": calls}}]}


def work(call_id, arguments, abort_event):
    abort_event.wait(arguments["ms"] / 1000)
    return "worked"


WORK = AgentTool("work", "Works a little.", {"type": "object", "properties": {"ms": {"type": "integer"}}}, work)


class AgentMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.agent = Agent(model, tools=[WORK], max_repeated_calls=None).start()
        self.futures = []
        self.raw = 0
        self.answers = []
        self.closed = False
        self.count = 0
        self.lock = threading.Lock()
        self.blocked = []  # threads of blocking submit()/put() calls

    def _text(self):
        self.count += 1
        return f"input {self.count}" + "!" * (self.count % 4)

    @precondition(lambda self: not self.closed)
    @rule()
    def submit(self):
        try:
            self.futures.append(self.agent.submit(self._text(), timeout_seconds=0))
        except queue.Full:
            pass  # not accepted: not an input

    @precondition(lambda self: not self.closed and self.raw < 12)
    @rule(follow_up=st.booleans())
    def put(self, follow_up):
        target = self.agent.follow_up_queue if follow_up else self.agent.input_queue
        try:
            target.put_nowait(self._text())
            self.raw += 1
        except queue.Full:
            pass

    @precondition(lambda self: not self.closed and len(self.blocked) < 4)
    @rule(raw=st.booleans())
    def blocking_put(self, raw):
        """A put that waits for room without limit (the queue may be full): must resolve at shutdown."""
        text = self._text()

        def put():
            try:
                if raw:
                    self.agent.input_queue.put(text)
                    with self.lock:
                        self.raw += 1
                else:
                    future = self.agent.submit(text)
                    with self.lock:
                        self.futures.append(future)
            except AgentClosedError:
                pass  # refused: not an input

        thread = threading.Thread(target=put, daemon=True)
        thread.start()
        self.blocked.append(thread)

    @precondition(lambda self: not self.closed)
    @rule()
    def fill_input_queue(self):
        while True:
            try:
                self.agent.input_queue.put_nowait(self._text())
            except queue.Full:
                return
            with self.lock:
                self.raw += 1

    @precondition(lambda self: not self.closed and self.raw < 12)
    @rule()
    def put_none(self):
        try:
            self.agent.input_queue.put_nowait(None)  # a bad input: answered with an error
        except queue.Full:
            return
        with self.lock:
            self.raw += 1

    @precondition(lambda self: not self.closed)
    @rule()
    def abort(self):
        self.agent.abort()

    @precondition(lambda self: not self.closed)
    @rule()
    def read_output(self):
        try:
            self.answers.append(self.agent.output_queue.get(timeout=0.05))
        except queue.Empty:
            pass

    @precondition(lambda self: not self.closed)
    @rule(mode=st.sampled_from(["drain", "after_turn", "now"]), reading=st.booleans())
    def shutdown(self, mode, reading):
        self.close(mode, reading=reading)

    @precondition(lambda self: self.closed)
    @rule()
    def use_after_shutdown_is_refused(self):
        try:
            self.agent.submit("late")
        except Exception as exc:
            assert type(exc).__name__ == "AgentClosedError"
        else:
            raise AssertionError("submit after shutdown was accepted")
        for target in (self.agent.input_queue, self.agent.follow_up_queue):
            try:
                target.put_nowait("late raw")
            except AgentClosedError:
                pass
            else:
                raise AssertionError("a raw put after shutdown was kept")

    def close(self, mode, reading=True):
        self.closed = True
        done = threading.Event()
        result = {}

        def stop():
            result["left"] = self.agent.shutdown(timeout_seconds=2 if not reading else 10, mode=mode)
            done.set()

        threading.Thread(target=stop, daemon=True).start()
        if not reading:  # nobody reads: shutdown must still return; answers kept in undelivered
            assert done.wait(10), "shutdown blocked on a full output queue"
        while not done.is_set():  # keep draining so the agent never blocks on a full output queue
            try:
                self.answers.append(self.agent.output_queue.get(timeout=0.02))
            except queue.Empty:
                pass
        for thread in self.blocked:
            thread.join(5)
            assert not thread.is_alive(), "a blocked put/submit never resolved"
        self.answers.extend(self.agent.undelivered)
        while True:
            try:
                self.answers.append(self.agent.output_queue.get_nowait())
            except queue.Empty:
                break
        self.left = result["left"]
        self.check_final()

    def check_final(self):
        assert not self.agent.is_running
        left_raw = list(self.left)  # originals: str, or None for put(None)
        answered = [f for f in self.futures if f.done() and f.exception() is None]
        failed = [f for f in self.futures if f.done() and f.exception() is not None]
        assert all(f.done() for f in self.futures), "a submitted input got neither answer nor failure"
        assert len(answered) + len(failed) == len(self.futures)
        assert len(self.answers) + len(left_raw) - len(failed) == self.raw
        ids = [i for a in self.answers for i in a["input_ids"]] + [f.result()["input_ids"][0] for f in answered]
        assert len(ids) == len(set(ids)), "an input was answered twice"
        strict_openai.validate(self.agent.openai_messages())
        deadline = time.monotonic() + 5
        prefix = f"yiemagent-{self.agent.name}-"
        while any(t.name.startswith(prefix) for t in threading.enumerate()):
            assert time.monotonic() < deadline, "agent thread still alive"
            time.sleep(0.01)

    @invariant()
    def history_stays_valid(self):
        if not self.agent.is_running:
            return
        # a run may be mid-turn; the history only ever gains complete (assistant + results) groups
        strict_openai.validate(self.agent.openai_messages())

    def teardown(self):
        if not self.closed:
            self.close("drain")


AgentMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=20, deadline=None, derandomize=True)
TestAgentStateMachine = AgentMachine.TestCase
