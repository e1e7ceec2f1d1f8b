"""Hooks: ``before_tool_call`` and ``after_tool_call``, with their contracts.

``before_tool_call(ctx, abort_event) -> BeforeToolCallResult | None``

    Contract: called on the agent thread, once per tool call, in the order the
    model asked, after the arguments were validated and before the tool runs.
    Return None to let the call run, or ``BeforeToolCallResult(block=True,
    reason="...")`` to block it: the tool does not run and the model gets an
    error result carrying the reason. It may block (e.g. ask a human) but
    should watch ``abort_event`` (``ask_user(prompt, abort_event)`` is a
    terminal prompt that does; ``input()`` does not). If it raises, the call
    does not run and the model gets an error result saying the hook failed;
    Ctrl-C (``KeyboardInterrupt``) in the main thread, where ``ask()`` runs the
    loop before ``start()``, aborts the run instead.

``after_tool_call(ctx) -> AfterToolCallResult | None``

    Contract: called on the agent thread after the tool ran, with
    ``ctx.result`` set. Return None to keep the result, or an
    ``AfterToolCallResult`` whose non-None fields replace the result's fields
    one by one (no deep merge). If it raises, the model gets an error result
    saying the hook failed; the tool is not run again, and its original result
    is kept in ``details["original_result"]`` for the application.
"""

from __future__ import annotations

import json
import logging
import os
import select
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._internal.checks import check_timeout
from ..exceptions import SimulatedCrash
from ..messages import ImageContent, Message, TextContent, ToolCall
from ..textpolicy import boundary, terminal_text
from . import AgentTool, AgentToolResult

__all__ = [
    "AfterToolCall",
    "AfterToolCallResult",
    "BeforeToolCall",
    "BeforeToolCallResult",
    "ToolCallContext",
    "approve_destructive_tools",
    "ask_user",
    "is_destructive",
    "run_after_hook",
    "run_before_hook",
]

logger = logging.getLogger("yiemagent.tools.hooks")


@dataclass
class ToolCallContext:
    """What a hook knows about one tool call."""

    tool_call: ToolCall
    """The call (``id``, ``name``, ``arguments``)."""
    tool: AgentTool | None
    """The registered tool."""
    history: list[Message] = field(repr=False)
    """The conversation so far (read it, do not change it)."""
    result: AgentToolResult | None = None
    """The tool's result (``after_tool_call`` only)."""
    idempotency_key: str | None = None
    """The call's stable key when the agent has a store (``yiemagent.current_idempotency_key``), else None."""

    @property
    def annotations(self) -> dict[str, Any] | None:
        """The tool's ``AgentTool.annotations`` (MCP ``ToolAnnotations``), or None.

        Keys: ``title``, ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
        ``openWorldHint``. ``{}`` for an MCP tool that sent none, None for a tool
        that declares none (a local tool) or an unknown one.
        """
        return None if self.tool is None else self.tool.annotations


@dataclass
class BeforeToolCallResult:
    """Answer of ``before_tool_call``: ``block=True`` stops the call with ``reason``."""

    block: bool = False
    reason: str = ""


@dataclass
class AfterToolCallResult:
    """Answer of ``after_tool_call``: each non-None field replaces the result's field."""

    content: str | list[TextContent | ImageContent] | None = None
    is_error: bool | None = None
    terminate: bool | None = None
    details: Any = None


BeforeToolCall = Callable[[ToolCallContext, threading.Event], "BeforeToolCallResult | None"]
AfterToolCall = Callable[[ToolCallContext], "AfterToolCallResult | None"]


def _is_ctrl_c(exc: BaseException) -> bool:
    """A ``KeyboardInterrupt`` in the main thread: Ctrl-C in a cold ``ask()``.

    There ``ask()`` runs the loop before ``start()``; the interrupt aborts the run
    (``yiemagent.loop``) instead of being the hook's error.
    """
    return isinstance(exc, KeyboardInterrupt) and threading.current_thread() is threading.main_thread()


_typed_ahead = bytearray()
"""Terminal input read past the line ``ask_user`` returned: the next ``ask_user`` gets it first."""
_typed_ahead_lock = threading.Lock()


def ask_user(prompt: str, abort_event: threading.Event | None = None, *,
             timeout_seconds: float | None = None) -> str | None:
    """Ask a person on the terminal from a hook (an approval prompt); return the line typed, or None.

    ``input()`` cannot be interrupted on the agent's thread: after Ctrl-C the agent cannot stop
    and Python's exit fails on the locked stdin. This prompt watches ``abort_event`` (set by
    ``Agent.abort()``, by Ctrl-C in ``ask()``, by ``shutdown(mode="now")``) and returns None
    within 0.05 s of it, at the end of input, or after ``timeout_seconds``. The line is returned
    without its line end, decoded as UTF-8 (undecodable bytes replaced).

    On POSIX, from a terminal, it reads the terminal's file descriptor directly (``select``);
    lines typed ahead are kept for the next ``ask_user``. From a pipe or a file, and where the
    descriptor cannot be used (Windows, a replaced ``sys.stdin``), it reads as ``input()`` does
    (piped lines are all there, or the end of input is).

    >>> def approve(ctx, abort_event):  # doctest: +SKIP
    ...     if ask_user(f"run {ctx.tool_call.name}? [y/N] ", abort_event) != "y":
    ...         return BeforeToolCallResult(block=True, reason="the user said no")
    ...     return None
    """
    check_timeout(timeout_seconds)
    sys.stdout.write(prompt)
    sys.stdout.flush()
    try:
        fd = sys.stdin.fileno() if os.name != "nt" and sys.stdin is not None else None
    except (AttributeError, OSError, ValueError):
        fd = None
    if fd is None or not os.isatty(fd):  # a pipe or a file: read through sys.stdin, as input() does
        try:
            return input()
        except EOFError:
            return None
    deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
    with _typed_ahead_lock:
        while b"\n" not in _typed_ahead:
            if (abort_event is not None and abort_event.is_set()) or (
                    deadline is not None and time.monotonic() > deadline):
                sys.stdout.write("\n")
                return None
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:  # end of input
                    rest = bytes(_typed_ahead)
                    _typed_ahead.clear()
                    return rest.decode("utf-8", "replace") or None
                _typed_ahead.extend(chunk)
        line, _, rest = bytes(_typed_ahead).partition(b"\n")
        _typed_ahead[:] = rest  # lines typed ahead wait for the next prompt
    return line.decode("utf-8", "replace").rstrip("\r")


def run_before_hook(
    hook: BeforeToolCall | None, ctx: ToolCallContext, abort_event: threading.Event
) -> AgentToolResult | None:
    """Run ``before_tool_call``; return an error result if it blocks or raises, else None."""
    if hook is None:
        return None
    name = ctx.tool_call.name
    try:
        answer = hook(ctx, abort_event)
    except SimulatedCrash:
        raise
    except BaseException as exc:  # SystemExit/KeyboardInterrupt too: never out of the agent thread
        if _is_ctrl_c(exc):
            raise
        logger.warning("before_tool_call raised for %s: %r", name, exc)
        return AgentToolResult.error(
            f"Tool {name!r} was not run: the before_tool_call hook failed ({type(exc).__name__}: {exc}).",
            details={"hook_error": exc},
        )
    if answer is None:
        return None
    if not isinstance(answer, BeforeToolCallResult):
        return AgentToolResult.error(
            f"Tool {name!r} was not run: before_tool_call returned {type(answer).__name__}, "
            "expected BeforeToolCallResult or None."
        )
    if answer.block:
        reason = answer.reason or "blocked by before_tool_call"
        return AgentToolResult.error(f"Tool {name!r} was blocked: {reason}", details={"blocked": True})
    return None


def run_after_hook(hook: AfterToolCall | None, ctx: ToolCallContext) -> AgentToolResult:
    """Run ``after_tool_call`` on ``ctx.result`` and return the final result.

    The result's ``usage`` (what the tool spent on models) is kept whatever the hook shows the model.
    """
    result = ctx.result if ctx.result is not None else AgentToolResult.error("the tool returned no result")
    final = _after_hook(hook, ctx, result)
    if final.usage is None:
        final.usage = result.usage
    return final


def _after_hook(hook: AfterToolCall | None, ctx: ToolCallContext, result: AgentToolResult) -> AgentToolResult:
    if hook is None:
        return result
    try:
        answer = hook(ctx)
    except SimulatedCrash:
        raise
    except BaseException as exc:  # SystemExit/KeyboardInterrupt too: never out of the agent thread
        if _is_ctrl_c(exc):
            raise
        logger.warning("after_tool_call raised for %s: %r", ctx.tool_call.name, exc)
        return AgentToolResult.error(
            f"Tool {ctx.tool_call.name!r} ran, but the after_tool_call hook failed "
            f"({type(exc).__name__}: {exc}); its result is withheld.",
            details={"hook_error": exc, "original_result": result},
        )
    if answer is None:
        return result
    if not isinstance(answer, AfterToolCallResult):
        return AgentToolResult.error(
            f"Tool {ctx.tool_call.name!r} ran, but after_tool_call returned {type(answer).__name__}, "
            "expected AfterToolCallResult or None; its result is withheld.",
            details={"original_result": result},
        )
    return AgentToolResult(
        content=result.content if answer.content is None else answer.content,
        is_error=result.is_error if answer.is_error is None else answer.is_error,
        terminate=result.terminate if answer.terminate is None else answer.terminate,
        details=result.details if answer.details is None else answer.details,
    )


def is_destructive(annotations: dict[str, Any] | None) -> bool:
    """True when a tool with these MCP ``ToolAnnotations`` may destroy something.

    The spec's defaults: ``readOnlyHint`` false, ``destructiveHint`` true, so a
    tool without annotations (``{}``) is destructive unless ``readOnlyHint``
    is true; ``destructiveHint`` counts only when ``readOnlyHint`` is not true.
    None (a tool that declares nothing) counts as ``{}``.

    Spec: MCP 2025-11-25, schema ``ToolAnnotations``.
    """
    hints = annotations or {}
    if hints.get("readOnlyHint") is True:
        return False
    return hints.get("destructiveHint") is not False


def approve_destructive_tools(
    ask: Callable[[str, threading.Event], str | None] = ask_user,
    *,
    undeclared: bool = False,
) -> BeforeToolCall:
    """A ready-made ``before_tool_call``: ask a person before a destructive tool runs.

    A tool whose ``annotations`` say it is destructive (``is_destructive``: an
    MCP tool not marked ``readOnlyHint``, and not ``destructiveHint: false``)
    runs only after ``ask`` answered ``y`` or ``yes`` (any case); any other
    answer, None (aborted, end of input) or a timeout blocks it and the model
    gets an error result saying the user did not approve. Read-only tools run
    without a question. Annotations are hints from the server, not a guarantee.

    Args:
        ask: ``ask(prompt, abort_event) -> line or None``; the default is
            ``ask_user`` (a terminal prompt that ``abort()`` ends). The prompt
            reads ``Run <title or name> (destructive) with {arguments}? [y/N]`` (and a space).
        undeclared: also ask for tools that declare no annotations at all
            (``annotations`` None: local ``@tool`` functions); False runs them.

    Returns:
        ``hook(ctx, abort_event) -> BeforeToolCallResult | None`` for ``Agent(before_tool_call=...)``.

    Example::

        agent = Agent(llm, mcp_servers=[...], before_tool_call=approve_destructive_tools())

    Spec: MCP 2025-11-25, "Tools" (Security Considerations: clients SHOULD
    prompt for user confirmation on sensitive operations), ``ToolAnnotations``.
    """

    def hook(ctx: ToolCallContext, abort_event: threading.Event) -> BeforeToolCallResult | None:
        annotations = ctx.annotations
        if annotations is None and not undeclared:
            return None
        if not is_destructive(annotations):
            return None
        label = str((annotations or {}).get("title") or ctx.tool_call.name)
        arguments = json.dumps(ctx.tool_call.arguments, ensure_ascii=False)
        if len(arguments) > APPROVAL_ARGUMENT_CHARS:
            arguments = arguments[:APPROVAL_ARGUMENT_CHARS] + "…"
        answer = ask(approval_prompt_text(f"Run {label} (destructive) with {arguments}? [y/N] "), abort_event)
        if answer is not None and answer.strip().lower() in ("y", "yes"):
            return None
        return BeforeToolCallResult(block=True, reason="the user did not approve this destructive tool")

    return hook


@boundary("approval_prompt", "terminal")
def approval_prompt_text(text: Any) -> str:
    """The approval prompt as written to the terminal.

    Tool names, titles and arguments come from a model and a server, so escape
    sequences and bidi overrides are removed (``terminal_text``).
    """
    return terminal_text(text)


APPROVAL_ARGUMENT_CHARS = 300
"""Characters of a call's JSON arguments shown in the approval prompt."""
