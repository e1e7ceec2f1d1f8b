"""The chat's answers to MCP elicitation and sampling: the question is asked in the terminal.

A server's ``elicitation/create`` reaches ``TerminalElicitation.form`` or
``.url`` on whatever thread reads it; the question is queued and that thread
waits, while the chat's main thread (which owns the terminal, and gets
Ctrl-C) asks it in ``serve_pending()``. What the person sees::

    [weather asks] Your profile, please
      (Enter keeps the [default]; /decline or /cancel at any question)
      Name [Ada]:
      Age (required) [36]: 41
      Color: 1) Red  2) Green  3) Blue [Green]: 3
      Tags, comma-separated: 1) a  2) b  3) c: 1,3

and for URL mode (the URL is shown with its host, never opened)::

    [bank asks you to open a link] Connect your account
      https://example.com/connect?state=1  (host: example.com)
      Open it yourself? yes / no / cancel [no]:

A server's ``sampling/createMessage`` is answered by the chat's own model
(``use_model``) once the person allows it (the spec: a human in the loop who
can deny; a "no" is error -1 "User rejected sampling request")::

    [writer wants to use the model] up to 30 tokens; system prompt: Be brief.
      user: write a haiku about tea
      Allow? yes / no [no]:

An answer that is not of the field's type, not one of the choices, or
breaks the field's schema (``minimum``, ``pattern``, ``format``...) is
asked again with the reason. Ctrl-C while asking cancels the elicitation
(and then stops the answer, as everywhere in the chat). A question nobody
serves within ``WAIT_SECONDS`` is cancelled, and so is one whose request the
client cut meanwhile (``abort_event``: Ctrl-C during the answer,
``Agent.abort()``, ``close()``): it is not asked any more.

Spec: MCP 2025-11-25 "Elicitation" (the client shows which server asks,
offers decline and cancel, shows the URL's host and asks consent before
navigation).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, TextIO
from urllib.parse import urlsplit

from ..mcp.callbacks import ClientCallbacks
from ..mcp.elicitation import coerce_field, elicitation_errors, form_fields
from ..mcp.sampling import USER_REJECTED, LLMSampler
from ..mcp.server_messages import RequestRefused
from ..textpolicy import display_text

__all__ = ["WAIT_SECONDS", "TerminalElicitation"]

WAIT_SECONDS = 3600.0
"""Seconds a server's question waits to be asked and answered before it is cancelled."""

_ABORT_POLL_SECONDS = 0.1
"""How often a waiting question looks at its ``abort_event``."""


class _Question:
    __slots__ = ("abort_event", "answer", "done", "mode", "request", "server")

    def __init__(self, mode: str, server: str, request: dict[str, Any],
                 abort_event: threading.Event | None = None) -> None:
        self.mode, self.server, self.request = mode, server, request
        self.abort_event = abort_event
        self.answer: dict[str, Any] = {"action": "cancel"}
        self.done = threading.Event()


class _Stop(Exception):
    def __init__(self, action: str) -> None:
        super().__init__(action)
        self.action = action


class TerminalElicitation:
    """Elicitation handlers that ask in the terminal (see the module).

    Args:
        out: where questions are printed.
        read: ``read(prompt) -> line`` (``input``).
    """

    def __init__(self, out: TextIO, read: Callable[[str], str] = input) -> None:
        self.out = out
        self.read = read
        self.pending: queue.Queue[_Question] = queue.Queue()
        self.sampler: LLMSampler | None = None
        """Answers sampling once the person allowed it (``use_model``); None refuses every request."""

    def callbacks(self) -> ClientCallbacks:
        """``ClientCallbacks`` with both elicitation modes and sampling (with tools)."""
        return ClientCallbacks(elicitation=self.form, url_elicitation=self.url, sampling=self.sample,
                               sampling_tools=True)

    def use_model(self, llm_call: Callable[..., Any]) -> None:
        """Answer sampling with ``llm_call`` (``LLMSampler``), each request allowed by the person first."""
        self.sampler = LLMSampler(llm_call, approve=self.approve)

    def sample(self, server_name: str, params: dict[str, Any],
               abort_event: threading.Event | None = None) -> dict[str, Any]:
        """Sampling handler: the person is asked (``approve``), then the model answers.

        Raises:
            RequestRefused: -1 when there is no model yet or the person says no.
        """
        if self.sampler is None:
            raise RequestRefused(USER_REJECTED, "User rejected sampling request (no model in this chat)")
        return self.sampler(server_name, params, abort_event)

    def approve(self, server_name: str, params: dict[str, Any], abort_event: threading.Event | None = None) -> bool:
        """Sampling approval: queue the question, wait for the main thread's yes or no."""
        return self._wait(_Question("sampling", server_name, params, abort_event)).get("action") == "accept"

    def form(self, server_name: str, request: dict[str, Any],
             abort_event: threading.Event | None = None) -> dict[str, Any]:
        """Form-mode handler: queue the question, wait for the main thread's answer (or the abort)."""
        return self._wait(_Question("form", server_name, request, abort_event))

    def url(self, server_name: str, request: dict[str, Any],
            abort_event: threading.Event | None = None) -> dict[str, Any]:
        """URL-mode handler: queue the question, wait for the main thread's answer (or the abort)."""
        return self._wait(_Question("url", server_name, request, abort_event))

    def _wait(self, question: _Question) -> dict[str, Any]:
        self.pending.put(question)
        if question.abort_event is None:
            question.done.wait(WAIT_SECONDS)
            return question.answer
        waited = 0.0
        while not question.done.wait(_ABORT_POLL_SECONDS) and waited < WAIT_SECONDS:
            waited += _ABORT_POLL_SECONDS
            if question.abort_event.is_set():
                return {"action": "cancel"}  # serve_pending skips it: the request is gone
        return question.answer

    def serve_pending(self) -> None:
        """Ask every queued question (call on the thread that owns the terminal).

        Raises:
            KeyboardInterrupt: Ctrl-C while asking (that question is cancelled first).
        """
        while True:
            try:
                question = self.pending.get_nowait()
            except queue.Empty:
                return
            if question.abort_event is not None and question.abort_event.is_set():
                question.done.set()  # its request was cut before anyone asked: not asked
                continue
            try:
                question.answer = self._ask(question)
            except _Stop as stop:
                question.answer = {"action": stop.action}
            except (KeyboardInterrupt, EOFError):
                question.answer = {"action": "cancel"}
                self.out.write("\n  [elicitation cancelled]\n")
                raise KeyboardInterrupt from None
            finally:
                question.done.set()

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _input(self, prompt: str) -> str:
        text = self.read(prompt).strip()
        if text in ("/decline", "/cancel"):
            raise _Stop(text[1:])
        return text

    def _ask(self, question: _Question) -> dict[str, Any]:
        request = question.request
        message = display_text(str(request.get("message", "")))
        server = display_text(question.server)
        if question.mode == "sampling":
            return self._sampling(server, request)
        if question.mode == "url":
            url = display_text(str(request.get("url", "")))
            self._line(f"[{server} asks you to open a link] {message}")
            self._line(f"  {url}  (host: {urlsplit(url).hostname or '?'})")
            while True:
                text = self.read("  Open it yourself? yes / no / cancel [no]: ").strip().lower()
                if text in ("y", "yes"):
                    return {"action": "accept"}
                if text in ("", "n", "no"):
                    return {"action": "decline"}
                if text in ("c", "cancel"):
                    return {"action": "cancel"}
        self._line(f"[{server} asks] {message}")
        self._line("  (Enter keeps the [default]; /decline or /cancel at any question)")
        schema = request.get("requestedSchema") or {}
        content: dict[str, Any] = {}
        for field in form_fields(schema):
            value = self._field(field, (schema.get("properties") or {}).get(field["name"], {}))
            if value is not None:
                content[field["name"]] = value
        return {"action": "accept", "content": content}

    def _sampling(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        system = f"; system prompt: {display_text(str(params['systemPrompt']))[:200]}" if params.get(
            "systemPrompt") else ""
        tools = f"; tools: {', '.join(str(t.get('name')) for t in params['tools'] if isinstance(t, dict))}" \
            if params.get("tools") else ""
        self._line(f"[{server} wants to use the model] up to {params.get('maxTokens')} tokens{system}{tools}")
        for message in (params.get("messages") or [])[-3:]:
            content = message.get("content") if isinstance(message, dict) else None
            blocks = content if isinstance(content, list) else [content]
            text = " ".join(str(b.get("text", f"[{b.get('type')}]")) for b in blocks if isinstance(b, dict))
            self._line(f"  {message.get('role')}: {display_text(text)[:300]}")
        while True:
            answer = self.read("  Allow? yes / no [no]: ").strip().lower()
            if answer in ("y", "yes"):
                return {"action": "accept"}
            if answer in ("", "n", "no"):
                return {"action": "decline"}

    def _field(self, field: dict[str, Any], spec: dict[str, Any]) -> Any:
        label = display_text(str(field["title"]))
        if field["required"]:
            label += " (required)"
        if field.get("description"):
            self._line(f"  {display_text(str(field['description']))}")
        choices = field.get("choices") or []
        if choices:
            label += (", comma-separated" if field["multiple"] else "") + ": " + "  ".join(
                f"{n}) {display_text(title)}" for n, (_, title) in enumerate(choices, 1))
        if "default" in field:
            label += f" [{self._shown(field, field['default'])}]"
        elif field["type"] == "boolean":
            label += " (yes/no)"
        while True:
            text = self._input(f"  {label}: ")
            if not text:
                if "default" in field:
                    return field["default"]
                if not field["required"]:
                    return None
                self._line("    an answer is required")
                continue
            try:
                value = coerce_field(field, text)
            except ValueError as exc:
                self._line(f"    {exc}")
                continue
            problems = elicitation_errors({"type": "object", "properties": {field["name"]: spec}},
                                          {field["name"]: value})
            if problems:
                self._line(f"    {problems[0].split(': ', 1)[-1]}")
                continue
            return value

    @staticmethod
    def _shown(field: dict[str, Any], value: Any) -> str:
        titles = {str(v): t for v, t in field.get("choices") or []}
        if isinstance(value, list):
            return ", ".join(titles.get(str(v), str(v)) for v in value)
        if isinstance(value, bool):
            return "yes" if value else "no"
        return display_text(titles.get(str(value), str(value)))
