"""The kit shared by the durable-conversation test apps (gunicorn, plain workers, DBOS, Celery).

Everything here runs in *other processes* (gunicorn workers, worker scripts), configured by
environment variables, so that the tests can kill those processes with ``kill -9``:

    YIEMAGENT_TEST_DSN            PostgreSQL DSN of the store (else YIEMAGENT_TEST_SQLITE: a file path)
    YIEMAGENT_TEST_TABLE_PREFIX   the store's table prefix (one per test)
    YIEMAGENT_TEST_COUNTER        the file the tools append one JSON line to per execution (the
                                  "server-side counter": outside the store, written before a kill)
    YIEMAGENT_TEST_KILL_DIR       where the test arms kill points and the app says it reached one
    YIEMAGENT_TEST_LEASE_TTL      lease TTL in seconds (short, so a killed holder is replaced fast)

The model (``instant_model``) is instant and deterministic: a user message is the JSON text
``{"text": LABEL, "calls": [[tool_name, call_label], ...]}`` (``instruction()`` builds it). On
the first model call after it, the model asks for those calls (one batch, call ids
``call_<call_label>``); once the results are there (or when there are no calls) it answers
``"LABEL #k: <tool results joined by ' | '>"`` where ``k`` is the number of user messages it saw,
so an answer proves that the whole history up to it reached the model.

Kill points (``kill_point(name)``): when the test created ``<KILL_DIR>/arm-<name>``, the first
process to reach the point renames it to ``fired-<name>`` (atomic, so only one process fires),
writes its pid to ``ready-<name>`` and sleeps until it is killed. Points: ``model1-LABEL`` (the
model call that asks for the tools), ``model2-LABEL`` (the model call after the tool results),
``tool-CALL_LABEL`` (inside ``record``, after its side effect, before it returns) and
``after-CALL_LABEL`` (in ``after_tool_call``: the result is journaled, the run not committed).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from yiemagent import Agent, tool
from yiemagent.testing import text_reply
from yiemagent.tools.hooks import AfterToolCallResult, ToolCallContext

_KILL_WAIT_SECONDS = 120.0


# --------------------------------------------------------------------------- kill points


def kill_point(name: str) -> None:
    """Stop here until killed if the test armed ``name`` (see the module docstring).

    Armed with ``mode="hold"``, wait instead until the test calls ``release(name)``, then go on.
    """
    kill_dir = os.environ.get("YIEMAGENT_TEST_KILL_DIR")
    if not kill_dir:
        return
    fired = os.path.join(kill_dir, f"fired-{name}")
    try:
        os.rename(os.path.join(kill_dir, f"arm-{name}"), fired)
    except FileNotFoundError:
        return
    ready = os.path.join(kill_dir, f"ready-{name}")
    with open(ready + ".tmp", "w") as handle:
        handle.write(str(os.getpid()))
    os.rename(ready + ".tmp", ready)
    with open(fired) as handle:
        hold = handle.read() == "hold"
    deadline = time.monotonic() + _KILL_WAIT_SECONDS
    while time.monotonic() < deadline:
        if hold and os.path.exists(os.path.join(kill_dir, f"release-{name}")):
            return
        time.sleep(0.02)
    raise RuntimeError(f"kill point {name} was armed but nobody killed (or released) pid {os.getpid()}")


def arm(kill_dir: Path, name: str, mode: str = "kill") -> None:
    """Arm point ``name`` (test side): ``"kill"`` waits to be killed, ``"hold"`` until ``release``."""
    (kill_dir / f"arm-{name}").write_text(mode)


def release(kill_dir: Path, name: str) -> None:
    """Let a process held at point ``name`` go on (test side)."""
    (kill_dir / f"release-{name}").write_text("go")


def wait_ready(kill_dir: Path, name: str, timeout_seconds: float = 30.0) -> int:
    """Wait until a process reached kill point ``name``; return its pid (test side). At least 90 s: a worker
    starts and gets there in seconds, in tens of seconds on a loaded 2-core machine.
    """
    ready = kill_dir / f"ready-{name}"
    timeout_seconds = max(timeout_seconds, 90)
    deadline = time.monotonic() + timeout_seconds
    while not ready.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no process reached kill point {name} within {timeout_seconds}s")
        time.sleep(0.02)
    return int(ready.read_text())


# --------------------------------------------------------------------------- the model


def instruction(text: str, calls: Iterable[tuple[str, str]] = ()) -> str:
    """The user message telling ``instant_model`` what to do (``calls``: ``(tool_name, call_label)``)."""
    return json.dumps({"text": text, "calls": [list(call) for call in calls]})


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def instant_model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """An instant, deterministic ``llm_call`` driven by the last user message (module docstring)."""
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    last_user = users[-1]
    spec = json.loads(_content_text(messages[last_user]["content"]))
    label = spec["text"]
    after = messages[last_user + 1:]
    if not after and spec.get("calls"):
        kill_point(f"model1-{label}")
        calls = [{"id": f"call_{call_label}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps({"label": call_label})}}
                 for name, call_label in spec["calls"]]
        return {"choices": [{"index": 0, "finish_reason": "tool_calls",
                             "message": {"role": "assistant", "content": None, "tool_calls": calls}}]}
    kill_point(f"model2-{label}")
    results = [_content_text(m.get("content")) for m in after if m["role"] == "tool"]
    return text_reply(f"{label} #{len(users)}: " + " | ".join(results))


# --------------------------------------------------------------------------- tools with a counter


_counter_lock = threading.Lock()


def _effect(tool_name: str, label: str) -> None:
    """Append one line to the counter file: the side effect the tests count."""
    from yiemagent import current_idempotency_key

    path = os.environ["YIEMAGENT_TEST_COUNTER"]
    line = json.dumps({"tool": tool_name, "label": label, "key": current_idempotency_key(),
                       "pid": os.getpid()}) + "\n"
    with _counter_lock:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


@tool
def record(label: str) -> str:
    """Record ``label`` in the counter file (a side effect: not safe to repeat)."""
    _effect("record", label)
    kill_point(f"tool-{label}")
    return f"recorded {label}"


@tool(idempotent=True)
def lookup(label: str) -> str:
    """Look ``label`` up (recorded in the counter file too; safe to repeat)."""
    _effect("lookup", label)
    kill_point(f"tool-{label}")
    return f"looked up {label}"


@tool(needs_approval=True)
def guarded(label: str) -> str:
    """Record ``label`` in the counter file, once a person approved the call (``yiemagent.tools.approvals``)."""
    _effect("guarded", label)
    kill_point(f"tool-{label}")
    return f"guarded {label}"


def after_hook(ctx: ToolCallContext) -> AfterToolCallResult | None:
    """``after_tool_call``: only a kill point (the result is journaled, the run not committed)."""
    label = ctx.tool_call.arguments.get("label") if isinstance(ctx.tool_call.arguments, dict) else None
    if label:
        kill_point(f"after-{label}")
    return None


def read_counter(path: Path) -> list[dict[str, Any]]:
    """The counter file's lines (test side)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --------------------------------------------------------------------------- store and agents


def store_from_env() -> Any:
    """The store the environment names (PostgreSQL DSN or SQLite file)."""
    prefix = os.environ.get("YIEMAGENT_TEST_TABLE_PREFIX", "yiemagent_")
    dsn = os.environ.get("YIEMAGENT_TEST_DSN")
    if dsn:
        from yiemagent import PostgresStore

        return PostgresStore(dsn, table_prefix=prefix)
    from yiemagent import SQLiteStore

    return SQLiteStore(os.environ["YIEMAGENT_TEST_SQLITE"], table_prefix=prefix)


def make_agent(store: Any, conversation_id: str) -> Agent:
    """The agent of one conversation: instant model, the counting tools, the kill-point hook."""
    return Agent(
        instant_model, tools=[record, lookup, guarded], after_tool_call=after_hook, store=store,
        conversation_id=conversation_id, lease_seconds=float(os.environ.get("YIEMAGENT_TEST_LEASE_TTL", "2")),
    )


def env_for(store_env: dict[str, str], counter: Path, kill_dir: Path | None = None,
            lease_ttl_seconds: float = 2.0) -> dict[str, str]:
    """Environment variables for an app process (test side)."""
    env = dict(store_env)
    env["YIEMAGENT_TEST_COUNTER"] = str(counter)
    env["YIEMAGENT_TEST_LEASE_TTL"] = str(lease_ttl_seconds)
    if kill_dir is not None:
        env["YIEMAGENT_TEST_KILL_DIR"] = str(kill_dir)
    return env


def final_answers(history: Sequence[dict[str, Any]]) -> list[str]:
    """Text of each assistant message without tool calls, in order (from OpenAI messages)."""
    return [_content_text(m.get("content")) for m in history if m["role"] == "assistant" and not m.get("tool_calls")]


def user_labels(history: Sequence[dict[str, Any]]) -> list[str]:
    """The label of each user message, in order (from OpenAI messages)."""
    return [json.loads(_content_text(m["content"]))["text"] for m in history if m["role"] == "user"]
