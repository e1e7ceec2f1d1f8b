"""Multi round-trip requests (MRTR, SEP-2322): answering ``resultType: "input_required"`` and retrying.

A 2026-07-28 server that needs something of the client while serving
``tools/call``, ``prompts/get`` or ``resources/read`` does not send its own
request: it answers::

    {"resultType": "input_required",
     "inputRequests": {"<key>": {"method": "elicitation/create", "params": {...}}, ...},
     "requestState": "<opaque>"}

``run_rounds`` answers each input request through
``server_messages.answer_server_request`` (the client's
``request_handlers``, the same dispatcher as the old era's server requests),
then sends the original request again, as a new request with a new
JSON-RPC id, with ``inputResponses`` (``{"<key>": result}``) and the exact
``requestState`` (none when the server gave none); round after round until
a result that is not ``input_required`` (``resultType`` absent means
complete), at most ``max_rounds`` retries. Each round is one request with its
own timeout: the time handlers take (a person answering) never counts
against it. A handler that raises ends the call with ``MCPCallbackError``
(``__cause__`` = its exception); ``cancel_in_flight()``/``close()``/
``Agent.abort()`` while a handler runs end it at once with
``MCPTransportError`` (the request had been sent: its effect is unknown).
The responses and state belong to this request only: other requests in
flight never carry them.

``check_result_type`` holds every 2026-07-28 result to its ``resultType``:
absent or ``"complete"`` is a result; ``"input_required"`` only on the three
methods above (the spec forbids it elsewhere); anything else (an extension's
type the client never opted in to, a number) is ``MCPProtocolError``, never
an empty result taken for a complete one. An ``input_required`` result with
neither ``inputRequests`` nor ``requestState`` breaks the spec too (a retry
could only get the same answer): ``MCPProtocolError`` at once.

Spec: MCP 2026-07-28, "Multi Round-Trip Requests" (Client Requirements,
Server Requirements), "Base Protocol" (``Result.resultType``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ..exceptions import MCPProtocolError, MCPTransportError
from ..textpolicy import json_text
from .server_messages import (
    CallbackAborted,
    UnansweredRequest,
    _Client,
    answer_server_request,
    cut_while_answering,
    take_callback_failure,
)

__all__ = ["INPUT_METHODS", "check_result_type", "run_rounds"]

logger = logging.getLogger("yiemagent.mcp")

INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The client requests a server may answer with ``input_required``."""


def _cut(server: str, method: str, input_method: str) -> MCPTransportError:
    take_callback_failure()  # said here; the caller must not say it again
    return cut_while_answering(server, method, input_method)


def check_result_type(method: str, result: dict[str, Any], server: str) -> None:
    """Raise ``MCPProtocolError`` unless ``result``'s ``resultType`` fits ``method`` (see the module docstring)."""
    if "resultType" not in result:
        return  # spec: absent means complete
    kind = result["resultType"]
    if kind == "complete" or (kind == "input_required" and method in INPUT_METHODS):
        return
    if kind == "input_required":
        raise MCPProtocolError(
            f"{method} to {server}: the server answered resultType 'input_required', which only "
            f"{', '.join(sorted(INPUT_METHODS))} may get", server=server, body=str(result)[:500])
    raise MCPProtocolError(
        f"{method} to {server}: unsupported resultType {kind!r:.80} (this client knows 'complete' and "
        f"'input_required')", server=server, body=str(result)[:500])


def _answers(client: _Client, server: str, method: str, requests: Any,
             abort_event: threading.Event | None) -> dict[str, Any]:
    if requests is None:
        return {}
    if not isinstance(requests, dict):
        raise MCPProtocolError(f"{method} to {server}: inputRequests is not an object: {requests!r:.200}",
                               server=server)
    answers: dict[str, Any] = {}
    for key, request in requests.items():
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise MCPProtocolError(f"{method} to {server}: input request {key!r} has no method: {request!r:.200}",
                                   server=server)
        given = request.get("params")
        params: dict[str, Any] = given if isinstance(given, dict) else {}
        try:
            answers[key] = answer_server_request(client, request["method"], params, abort_event)
        except CallbackAborted:
            raise _cut(server, method, request["method"]) from None
        except UnansweredRequest:
            # spec: the client MUST construct every requested input before retrying; it cannot, so it stops
            raise MCPProtocolError(
                f"{method} to {server}: the server asks for {request['method']!r} ({key!r}), which this client "
                f"does not answer (no request_handlers entry; declare the capability and give a handler)",
                server=server,
            ) from None
    return answers


MAX_INPUT_REQUESTS = 16
"""Input requests one ``input_required`` round may carry (each may be a sampling call on the agent's model);
more is ``MCPProtocolError``: a hostile server could otherwise make one tool call cost thousands."""
MAX_REQUEST_STATE_CHARS = 256 * 1024
"""The largest ``requestState`` sent back (as JSON text); a larger one is ``MCPProtocolError``, so a server
cannot make each retry carry megabytes."""


def _check_bounds(server: str, method: str, result: dict[str, Any], round_number: int) -> None:
    """The bounds of one ``input_required`` result (``MAX_INPUT_REQUESTS``, ``MAX_REQUEST_STATE_CHARS``)."""
    requests = result.get("inputRequests")
    if isinstance(requests, dict) and len(requests) > MAX_INPUT_REQUESTS:
        raise MCPProtocolError(f"{method} to {server}: round {round_number + 1} asks {len(requests)} inputs at once "
                               f"(at most {MAX_INPUT_REQUESTS}); not answered", server=server)
    if "requestState" in result:
        size = len(json_text(result["requestState"]))
        if size > MAX_REQUEST_STATE_CHARS:
            raise MCPProtocolError(f"{method} to {server}: requestState of {size} characters (at most "
                                   f"{MAX_REQUEST_STATE_CHARS}); not sent back", server=server)


def run_rounds(
    client: _Client,
    method: str,
    params: dict[str, Any] | None,
    send: Callable[[dict[str, Any] | None], dict[str, Any]],
    *,
    max_rounds: int,
    abort_event: threading.Event | None = None,
) -> dict[str, Any]:
    """Send ``method`` with ``send(params)``, answering ``input_required`` results; return the final result.

    Args:
        client: its ``request_handlers`` answer the input requests; ``name`` names the server in errors.
        method: ``tools/call``, ``prompts/get`` or ``resources/read``.
        params: the original params (never changed; each retry is a copy plus
            ``inputResponses`` and ``requestState``).
        send: sends one request (a new JSON-RPC id each time) and returns its result.
        max_rounds: retries at most.
        abort_event: the client's abort event when the request began (set by
            ``cancel_in_flight``); None: the client's current one.

    Returns:
        The first result whose ``resultType`` is not ``"input_required"``.

    Raises:
        MCPProtocolError: still ``input_required`` after ``max_rounds`` retries,
            or with neither ``inputRequests`` nor ``requestState``; more than
            ``MAX_INPUT_REQUESTS`` inputs in one round, or a ``requestState``
            over ``MAX_REQUEST_STATE_CHARS``;
            an input request this client cannot answer (no handler); a
            malformed ``inputRequests``.
        MCPCallbackError: a request handler (callback) raised; ``__cause__``
            is its exception (the call stops).
        RequestRefused: a handler refused (its ``code``, e.g. -1).
        MCPTransportError: the client cut the request while a handler ran
            (the request had been sent: its effect is unknown).
        MCPError: what ``send`` raises.
    """
    server = client.name
    current = params
    for round_number in range(max_rounds + 1):
        result = send(current)
        if result.get("resultType") != "input_required":
            return result
        if "inputRequests" not in result and "requestState" not in result:
            raise MCPProtocolError(
                f"{method} to {server}: input_required with neither inputRequests nor requestState",
                server=server, body=str(result)[:500])
        _check_bounds(server, method, result, round_number)
        if round_number == max_rounds:
            raise MCPProtocolError(
                f"{method} to {server}: still input_required after {max_rounds} rounds (max_input_rounds)",
                server=server, body=str(result)[:500],
            )
        answers = _answers(client, server, method, result.get("inputRequests"), abort_event)
        if abort_event is not None and abort_event.is_set():
            raise _cut(server, method, "input")
        logger.debug("%s: %s needs input (%s); retrying with the answers", server, method, sorted(answers))
        current = {k: v for k, v in (params or {}).items() if k not in ("inputResponses", "requestState")}
        if answers:
            current["inputResponses"] = answers
        if "requestState" in result:
            current["requestState"] = result["requestState"]
    raise AssertionError("unreachable")  # pragma: no cover
