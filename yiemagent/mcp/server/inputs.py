"""What a served tool may ask of the client, and checking what the client answers.

A tool (or a prompt's ``render``, a resource's ``read``) asks through
``current_call()`` (``yiemagent.mcp.server.calls.ServedCall``): ``elicit``,
``sample``, ``list_roots``, or several at once with ``ask``. The requests are
built here:

- ``elicitation_request(message, requested_schema)`` -> ``{"method":
  "elicitation/create", "params": {"message", "requestedSchema"}}`` (form mode);
- ``sampling_request(messages, max_tokens, **params)`` -> ``{"method":
  "sampling/createMessage", "params": {"messages", "maxTokens", ...}}``;
- ``roots_request()`` -> ``{"method": "roots/list", "params": {}}``.

Each needs a client capability (``CAPABILITY_OF``: ``elicitation``,
``sampling``, ``roots``); asking for one the client did not declare raises
``MissingClientCapability``, which, when the tool lets it through, is the
JSON-RPC error -32021 with ``data.requiredCapabilities`` (e.g. ``{"sampling": {}}``).

What the client answers is untrusted input: ``check_answer`` holds it to the
result the method defines (``ElicitResult``: ``action`` accept / decline /
cancel, an accepted ``content`` valid against the ``requestedSchema``;
``CreateMessageResult``: ``role``, ``content``, ``model``; ``ListRootsResult``:
``roots``, each with a ``uri``) and raises ``InvalidInputResponse`` otherwise.

``InputLimits`` bounds what one request may cost, with the client's numbers
(``yiemagent.mcp.mrtr``): rounds, inputs per round, ``requestState`` size, and a
deadline.

Spec: MCP 2026-07-28, "Multi Round-Trip Requests", "Elicitation", "Sampling",
"Roots"; MCP 2025-11-25 "Elicitation", "Sampling", "Roots".
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..._internal.checks import check_int, check_number
from ...tools.schema_checks import pattern_budget, safe_validator_class
from ..mrtr import MAX_INPUT_REQUESTS, MAX_REQUEST_STATE_CHARS

__all__ = ["CAPABILITY_OF", "InputLimits", "InputRequired", "InputUnavailable", "InvalidInputResponse",
           "MissingClientCapability", "check_answer", "elicitation_request", "roots_request", "sampling_request"]

CAPABILITY_OF = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
"""The client capability each input method needs."""


@dataclass(frozen=True)
class InputLimits:
    """Bounds on what a served request may ask of the client (the client's own, ``yiemagent.mcp.mrtr``).

    Attributes:
        max_rounds: ``input_required`` rounds of one request (2026-07-28); one more is refused -32602.
        max_inputs_per_round: inputs one ``ask`` may name (and ``inputResponses`` one retry may carry).
        max_state_chars: characters of a ``requestState``, sent or received (a longer one is refused).
        deadline_seconds: a 2026-07-28 request's rounds must end within this many seconds of its first round
            (the ``requestState`` then expires); in 2025-11-25 the longest wait for one answer.

    Raises:
        ConfigError: a bound that is not an int >= 1 (NaN, a float, a bool), or a deadline not a finite number > 0
            (a ``ValueError``).
    """

    max_rounds: int = 8
    max_inputs_per_round: int = MAX_INPUT_REQUESTS
    max_state_chars: int = MAX_REQUEST_STATE_CHARS
    deadline_seconds: float = 600.0

    def __post_init__(self) -> None:
        for name in ("max_rounds", "max_inputs_per_round", "max_state_chars"):  # NaN or a float: never unbounded
            check_int(f"InputLimits.{name}", getattr(self, name), minimum=1)
        check_number("InputLimits.deadline_seconds", self.deadline_seconds)


class InputRequired(BaseException):
    """Raised by an ask in the 2026-07-28 era when an input is not answered yet.

    The request then ends ``input_required`` and the tool runs again, from the start, with the answers.
    A ``BaseException``, so that a tool's ``except Exception`` does not swallow it.
    """

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = requests


class MissingClientCapability(Exception):
    """The client did not declare the capability an input needs (``capability``: ``"sampling"``...)."""

    def __init__(self, capability: str, method: str) -> None:
        super().__init__(f"the client did not declare the {capability!r} capability that {method} needs")
        self.capability = capability


class InvalidInputResponse(Exception):
    """What the client answered to an input is not the result its method defines (untrusted input)."""


class InputUnavailable(Exception):
    """No way to ask the client, or no answer.

    A 2025-11-25 request without a back-channel (stateless HTTP, a client that accepts no
    ``text/event-stream``), no answer within ``InputLimits.deadline_seconds``, the call ended, or the client
    answered with a JSON-RPC error.
    """


def elicitation_request(message: str, requested_schema: dict[str, Any]) -> dict[str, Any]:
    """An ``elicitation/create`` request (form mode).

    ``requested_schema``: a flat object schema of primitive properties (string, number, integer, boolean,
    enums), as the spec restricts it.

    Raises:
        ValueError: ``requested_schema`` is not an object schema.
    """
    if not isinstance(requested_schema, dict) or requested_schema.get("type") != "object":
        raise ValueError('requested_schema must be a JSON Schema with "type": "object"')
    safe_validator_class(requested_schema).check_schema(requested_schema)
    return {"method": "elicitation/create", "params": {"message": str(message), "requestedSchema": requested_schema}}


def sampling_request(messages: Sequence[dict[str, Any]] | str, max_tokens: int, **params: Any) -> dict[str, Any]:
    """A ``sampling/createMessage`` request.

    Args:
        messages: ``SamplingMessage`` objects (``{"role", "content": {"type": "text", "text"}}``), or one string
            (a single user text message).
        max_tokens: ``maxTokens`` (>= 1).
        params: other ``CreateMessageRequest`` params as the spec names them (``systemPrompt``,
            ``modelPreferences``, ``temperature``, ``stopSequences``, ``includeContext``...).

    Raises:
        ValueError: ``max_tokens`` below 1.
    """
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ValueError("max_tokens must be an int >= 1")
    listed = [{"role": "user", "content": {"type": "text", "text": messages}}] if isinstance(messages, str) \
        else [dict(m) for m in messages]
    return {"method": "sampling/createMessage", "params": {**params, "messages": listed, "maxTokens": max_tokens}}


def roots_request() -> dict[str, Any]:
    """A ``roots/list`` request."""
    return {"method": "roots/list", "params": {}}


_ACTIONS = ("accept", "decline", "cancel")
MAX_ROOTS = 1000
"""Most roots a ``ListRootsResult`` may list, and content blocks a ``CreateMessageResult`` (kept while the tool
runs)."""


def check_answer(key: str, request: dict[str, Any], answer: Any) -> dict[str, Any]:
    """``answer`` (the client's result for the input ``key``) when it is the result ``request``'s method defines.

    Raises:
        InvalidInputResponse: it is not (the message names the key and the flaw).
    """
    method = request["method"]

    def flaw(text: str) -> InvalidInputResponse:
        return InvalidInputResponse(f"input {key!r:.80} ({method}): {text}")

    if not isinstance(answer, dict):
        raise flaw(f"the answer must be an object, not {type(answer).__name__}")
    if method == "elicitation/create":
        action = answer.get("action")
        if not isinstance(action, str) or action not in _ACTIONS:
            near = difflib.get_close_matches(action[:100], _ACTIONS, n=1) if isinstance(action, str) else []
            raise flaw(f"action must be one of {', '.join(_ACTIONS)}" + (f" (did you mean {near[0]!r}?)" if near
                                                                          else ""))
        content = answer.get("content")
        if answer["action"] == "accept" and content is not None:
            if not isinstance(content, dict):
                raise flaw("content must be an object")
            schema = request["params"].get("requestedSchema")
            if isinstance(schema, dict):
                with pattern_budget():
                    errors = [f"{e.json_path}: {e.message}" for e in safe_validator_class(schema)(schema)
                              .iter_errors(content)]
                if errors:
                    raise flaw("content does not match the requestedSchema: " + "; ".join(errors)[:500])
    elif method == "sampling/createMessage":
        if not isinstance(answer.get("role"), str) or not isinstance(answer.get("model"), str) \
                or not isinstance(answer.get("content"), (dict, list)):
            raise flaw("a CreateMessageResult needs role (string), content (object or array) and model (string)")
        if isinstance(answer["content"], list) and len(answer["content"]) > MAX_ROOTS:
            raise flaw(f"content lists more than {MAX_ROOTS} blocks")
    elif method == "roots/list":
        roots = answer.get("roots")
        if isinstance(roots, list) and len(roots) > MAX_ROOTS:
            raise flaw(f"more than {MAX_ROOTS} roots")
        if not isinstance(roots, list) or not all(isinstance(r, dict) and isinstance(r.get("uri"), str)
                                                  for r in roots):
            raise flaw("a ListRootsResult needs roots: an array of objects with a uri (string)")
    return answer
