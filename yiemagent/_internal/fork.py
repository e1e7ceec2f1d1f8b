"""After ``fork()``: what a child process inherits from yiemagent and must not use as it is.

``fork()`` (gunicorn ``--preload``, multiprocessing's ``fork`` start method, Celery's prefork
pool) copies the parent's memory but only the thread that called it: every other thread is
gone in the child, locks they held stay held, and sockets and pipes are shared with the
parent. Objects that own threads, locks or connections register a callback here; it runs in
the child right after the fork (``os.register_at_fork(after_in_child=...)``), in the order of
registration. What each does (see the callers):

* the HTTP deadline watchdog forgets the parent's thread and starts a new one when armed;
* a ``CancellableSession`` drops its connection pools (their sockets are the parent's);
* the agent queues get fresh locks;
* an ``Agent`` whose thread had started refuses every later use at once with
  ``AgentClosedError`` saying why (it would wait for a thread that does not exist); one that
  was not started gets a fresh worker pool and works in the child;
* a stdio ``MCPClient`` whose server was started refuses with ``MCPTransportError`` (its server
  process and pipes belong to the parent).

Sources: langfuse-python PRs #1654/#1658 and posthog-python #290 (a client's consumer thread
lost across gunicorn's ``--preload`` fork: events silently never sent, calls waiting forever).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["fork_note", "fresh_queue_locks", "on_fork_in_child"]

logger = logging.getLogger("yiemagent.fork")

_callbacks: list[weakref.WeakMethod[Callable[[], Any]]] = []
_parent_pid = os.getpid()


def on_fork_in_child(method: Callable[[], Any]) -> None:
    """Call the bound ``method`` in a child right after ``fork()``, while its object lives.

    Only a weak reference is kept: registering never keeps an object alive. Appending is
    atomic under the GIL, so no lock is taken (a lock could be held across the fork).
    """
    _callbacks.append(weakref.WeakMethod(method))
    if len(_callbacks) > 256 and len(_callbacks) & (len(_callbacks) - 1) == 0:  # now and then: drop dead ones
        _callbacks[:] = [ref for ref in list(_callbacks) if ref() is not None]


def fresh_queue_locks(target: queue.Queue[Any]) -> None:
    """Give a ``queue.Queue`` new locks (in a child: one a parent thread held would stay held)."""
    target.mutex = threading.Lock()
    target.not_empty = threading.Condition(target.mutex)
    target.not_full = threading.Condition(target.mutex)
    target.all_tasks_done = threading.Condition(target.mutex)


def fork_note(what: str) -> str:
    """The sentence errors in a forked child use: what was made before the fork, and the fix.

    Call it inside an after-fork callback (it names the parent's pid, known only then).
    """
    return (f"{what} was started in process {_parent_pid} before fork() (gunicorn --preload, multiprocessing's "
            f"fork start method, a prefork pool); process {os.getpid()} is the child. Make and start it after "
            "the fork (gunicorn: in a post_fork hook or without --preload), or only create it before")


def _after_fork_in_child() -> None:
    global _parent_pid
    alive = []
    for ref in list(_callbacks):
        method = ref()
        if method is None:
            continue
        alive.append(ref)
        try:
            method()
        except Exception:  # one object's trouble must not keep the others broken in the child
            logger.exception("after-fork reset of %r failed", getattr(method, "__self__", method))
    _callbacks[:] = alive
    _parent_pid = os.getpid()


def _before_fork() -> None:
    global _parent_pid
    _parent_pid = os.getpid()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
