"""Which protocol era ``MCPClient`` speaks with its server, and sending requests in it.

Two eras (MCP 2026-07-28, "Versioning and Compatibility"):

- **modern** (2026-07-28): no handshake and no session. Every request
  carries ``params._meta`` with ``io.modelcontextprotocol/protocolVersion``,
  ``io.modelcontextprotocol/clientCapabilities`` and
  ``io.modelcontextprotocol/clientInfo`` (HTTP also sends the headers of
  ``http_headers``); results may be ``input_required`` (``mrtr``).
- **legacy** (2025-11-25, 2025-06-18, 2025-03-26): ``initialize``, then
  ``notifications/initialized``, then requests in the session.

``protocol_version=None`` (auto) probes with ``server/discover`` at the
first request: a ``DiscoverResult`` (with ``supportedVersions``; a bare
``{}`` from a server that answers every method is not one), or a modern JSON-RPC error
(-32020/-32021/-32022; -32022 names the ``supported`` versions and the probe
is retried once with one of them), means a modern server; anything else (an
HTTP 4xx without a modern error body, another JSON-RPC error, an unusable
answer such as a bare 204 or a text/plain body, on stdio no answer within
``probe_timeout_seconds``) means legacy, and the client falls
back to ``initialize``. A legacy version string forces the handshake (that
version is offered); ``"2026-07-28"`` forces modern (no fallback). The era is
kept for the client's life; if a modern server later rejects a request as
a legacy one would (HTTP 400/404/405 without a modern body, and not a
JSON-RPC error carrying the request's id: that is the request's answer,
e.g. a tool's own -32602) or with -32022,
or (auto only) a handshake-era server answers a request or a new
``initialize`` with a modern error (-32020/-32021/-32022: it was replaced by
a 2026-07-28 server), the client probes once more and sends the request
again (the server did not process it, so this holds for ``tools/call`` too).

In the modern era ``initialize_result`` is synthesized from the discover
result: ``{"protocolVersion", "capabilities", "serverInfo", "instructions"?}``
(``serverInfo`` from ``_meta["io.modelcontextprotocol/serverInfo"]``, or a
top-level ``serverInfo``); the raw result is ``discover_result``.

A ``tools/call`` refused with -32020 (HeaderMismatch: ``Mcp-Param-*`` missing
or stale) makes the client list the tools again and send it once more.

``Eras`` is a base class of ``MCPClient``, which sets the attributes it declares.

Spec: MCP 2026-07-28, "Versioning and Compatibility", "Discovery",
"Base Protocol" (``_meta``, error codes), "Transports" (stdio and Streamable
HTTP "Backward Compatibility"); MCP 2025-11-25 "Lifecycle".
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ..__version__ import __version__
from .._internal.checks import check_timeout
from .._internal.retry import never_sent
from ..exceptions import (
    MCPCallbackError,
    MCPProtocolError,
    MCPRPCError,
    MCPSessionExpiredError,
    MCPTimeoutError,
    MCPTransportError,
)
from ..loop.tracing import trace_meta
from . import jsonrpc
from .call_scope import serving
from .in_flight import InFlightRequests, safe_to_repeat
from .mrtr import INPUT_METHODS, check_result_type, run_rounds
from .server_messages import CallbackAborted, cut_while_answering, take_callback_failure
from .server_names import server_info_name

__all__ = [
    "LEGACY_PROTOCOL_VERSIONS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_PROTOCOL_VERSION",
    "MODERN_PROTOCOL_VERSIONS",
    "Eras",
]

logger = logging.getLogger("yiemagent.mcp")

MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)
"""Versions of the modern era this client speaks, preferred first."""
LEGACY_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Versions of the handshake era this client speaks, preferred first."""
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
_LEGACY_STATUS = (400, 404, 405, 406, 415)
"""HTTP statuses that, without a modern JSON-RPC error body, mean a server of the handshake era."""


def _is_legacy_answer(exc: BaseException, *, stdio: bool) -> bool:
    """True when the probe's failure says "a legacy server" (not "unreachable")."""
    if isinstance(exc, MCPRPCError):
        return exc.code not in jsonrpc.MODERN_ERROR_CODES
    if isinstance(exc, MCPTimeoutError):
        return stdio
    if isinstance(exc, MCPTransportError):
        return exc.status_code in _LEGACY_STATUS
    # an unusable answer (a bare 204, an empty or non-JSON body, text/plain: a proxy swallowing the unknown
    # method) is no DiscoverResult: the endpoint does not speak discover (typescript-sdk #2619)
    return isinstance(exc, MCPProtocolError)


class Eras(InFlightRequests):
    """Era negotiation and the request path of ``MCPClient`` (see the module docstring)."""

    capabilities: dict[str, Any]
    request_handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]]
    tools_changed: threading.Event
    requested_protocol_version: str | None
    probe_timeout_seconds: float
    max_input_rounds: int
    listen: bool | None
    initialize_result: dict[str, Any] | None
    discover_result: dict[str, Any] | None
    era: str | None
    _modern_version: str | None
    _lock: threading.RLock
    _name: str
    _name_from_server: bool
    _closed: bool

    # ------------------------------------------------------------------ requests

    def _request(
        self, method: str, params: dict[str, Any] | None, *, safe: bool, timeout_seconds: float | None = None
    ) -> dict[str, Any]:
        check_timeout(timeout_seconds)
        generation, abort = self._cancel_state()  # before the handshake: an abort while it runs ends this request
        self._connect(generation)
        take_callback_failure()  # forget one of an earlier request on this thread
        try:
            if method in INPUT_METHODS:
                with serving():  # what the server asks while this call runs counts against it (call_scope)
                    result = run_rounds(self, method, params,
                                        lambda p: self._request_once(method, p, safe, timeout_seconds, generation),
                                        max_rounds=self.max_input_rounds, abort_event=abort)
            else:
                result = self._request_once(method, params, safe, timeout_seconds, generation)
        except MCPRPCError as exc:
            failure = take_callback_failure()  # handshake era: our callback failed, then the server failed the call
            if failure is None or isinstance(exc, MCPCallbackError):
                raise
            raise MCPCallbackError(exc.code, exc.message, exc.data, server=self.name) from failure
        except MCPTransportError as exc:
            failure = take_callback_failure()  # handshake era over HTTP: cut while our callback answered
            if isinstance(failure, CallbackAborted):
                raise cut_while_answering(self.name, method, failure.method) from exc
            raise
        if self.era == "modern":
            check_result_type(method, result, self.name)  # an unknown resultType is never taken for complete
        return result

    def _with_meta(self, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """``params`` plus the modern era's ``_meta`` (kept keys such as ``progressToken``) and the trace context.

        The trace context (``traceparent``, ``tracestate``, ``baggage``; MCP 2026-07-28 "Base Protocol"
        ``_meta``) is that of the tool call being run, when tracing is on (``yiemagent.loop.tracing``), in both eras.
        """
        trace = trace_meta()
        if self.era != "modern" or self._modern_version is None:
            if not trace:
                return params
            merged = dict(params or {})
            old = merged.get("_meta")
            merged["_meta"] = {**(old if isinstance(old, dict) else {}), **trace}
            return merged
        meta = {**trace,
            META_PROTOCOL_VERSION: self._modern_version,
            META_CLIENT_CAPABILITIES: dict(self.capabilities),
            META_CLIENT_INFO: {"name": "yiemagent", "version": __version__},
        }
        merged = dict(params or {})
        old = merged.get("_meta")
        merged["_meta"] = {**(old if isinstance(old, dict) else {}), **meta}
        return merged

    def _request_once(
        self, method: str, params: dict[str, Any] | None, safe: bool, timeout_seconds: float | None, generation: int
    ) -> dict[str, Any]:
        base = safe_to_repeat if safe else never_sent

        def retry_if(exc: BaseException) -> bool:  # a request cut by cancel_in_flight() is never repeated
            return generation == self._cancel_generation and base(exc)

        for attempt in self._retrying(retry_if):
            with attempt:
                era = self.era
                try:
                    return self._send(method, self._with_meta(params), timeout_seconds, generation)
                except MCPSessionExpiredError as exc:
                    # The server rejected the session before processing the request (HTTP 404, or 400
                    # naming the session), so even tools/call did not run: initialize again, repeat
                    # once. A second rejection is raised (no loop); a cancelled request is not repeated.
                    if generation != self._cancel_generation:
                        raise
                    expired = exc.data.get("session_id") if isinstance(exc.data, dict) else None
                    self._reinitialize(expired, generation)
                    return self._send(method, self._with_meta(params), timeout_seconds, generation)
                except (MCPRPCError, MCPTransportError) as exc:
                    if generation != self._cancel_generation:
                        raise
                    if era == "modern" and method == "tools/call" and isinstance(exc, MCPRPCError) \
                            and exc.code == jsonrpc.HEADER_MISMATCH:
                        # spec: Mcp-Param-* missing or stale; list the tools again (their x-mcp-header
                        # declarations) and send once more; the server rejected it before running it
                        logger.info("%s: %s was refused (%s); listing tools again", self.name, method, exc)
                        self._refresh_tool_headers()
                        return self._send(method, self._with_meta(params), timeout_seconds, generation)
                    if not self._era_failed(exc, era):
                        raise
                    # rejected before processing (a version the server no longer speaks, or it changed era):
                    # probe once more, send once more
                    logger.info("%s: the server rejected %s in the %s era (%s); probing again",
                                self.name, method, era, exc)
                    self._negotiate(generation, after=era)
                    return self._send(method, self._with_meta(params), timeout_seconds, generation)
        raise AssertionError("unreachable")  # pragma: no cover

    def _refresh_tool_headers(self) -> None:
        """List the tools again (``MCPClient.list_tools`` records their ``x-mcp-header`` declarations)."""
        list_tools = getattr(self, "list_tools", None)
        if callable(list_tools):
            list_tools()

    def _era_failed(self, exc: BaseException, era: str | None) -> bool:
        """True when ``exc`` says the cached era no longer holds (the request was not processed)."""
        if era == "legacy":  # a modern error to a handshake-era request: the server is modern now (auto only)
            return self.requested_protocol_version is None and isinstance(exc, MCPRPCError) \
                and exc.code in jsonrpc.MODERN_ERROR_CODES
        if era != "modern":
            return False
        if isinstance(exc, MCPRPCError):
            return exc.code == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION
        # a 400/404/405 answering the request itself (a JSON-RPC error with its id: a handler's error) is not
        # a sign of another era, and the request may have run: never probed again and sent again for it
        return isinstance(exc, MCPTransportError) and not isinstance(exc, MCPTimeoutError) \
            and exc.status_code in _LEGACY_STATUS and not jsonrpc.answered_in_body(exc.body or "")

    # ------------------------------------------------------------------ negotiation

    def _check_open(self) -> None:
        """``MCPTransportError`` ("... is closed") once ``close()`` ran: the one check of every public method."""
        if self._closed:
            raise MCPTransportError(f"the client of {self.name} is closed", server=self.name)

    def _connect(self, generation: int) -> dict[str, Any]:
        self._check_open()  # every public method connects first (or sends through _request, which does)
        if self.initialize_result is not None:
            return self.initialize_result
        return self._negotiate(generation)

    def _negotiate(self, generation: int, *, after: str | None = None) -> dict[str, Any]:
        """Choose the era (see the module docstring) and connect in it; ``after``: re-probe once the era failed."""
        with self._lock:
            if self.initialize_result is not None and (after is None or self.era != after):
                return self.initialize_result  # another thread connected (or re-probed) meanwhile
            if generation != self._cancel_generation:  # cancel_in_flight() ran while this thread waited
                raise MCPTransportError(f"connecting to {self.name}: cancelled before it was sent", server=self.name)
            self.initialize_result = None
            wanted = self.requested_protocol_version
            if wanted in LEGACY_PROTOCOL_VERSIONS:
                return self._initialize(force=True, generation=generation)
            result = self._discover(wanted or MODERN_PROTOCOL_VERSIONS[0], generation, forced=wanted is not None)
            if result is not None:
                return result
            logger.info("%s: not a 2026-07-28 server; using the initialize handshake", self.name)
            return self._initialize(force=True, generation=generation)

    def _discover(self, version: str, generation: int, *, forced: bool) -> dict[str, Any] | None:
        """``server/discover`` in the modern era; the synthesized ``initialize_result``, or None: a legacy server."""
        stdio = not hasattr(self.transport, "url")
        tried: set[str] = set()
        while True:
            tried.add(version)
            self.transport.reset_session()
            self.transport.set_protocol_version(version)
            self.era, self._modern_version = "modern", version
            timeout = min(self.probe_timeout_seconds, self.timeout_seconds) if stdio and not forced else None
            try:
                for attempt in self._retrying(lambda exc: generation == self._cancel_generation
                                              and safe_to_repeat(exc)):
                    with attempt:
                        result = self._send("server/discover", self._with_meta(None), timeout, generation)
            except (MCPRPCError, MCPTransportError, MCPProtocolError) as exc:
                self.era, self._modern_version = None, None
                self.transport.set_protocol_version(None)
                supported = exc.data.get("supported") if isinstance(exc, MCPRPCError) \
                    and exc.code == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION and isinstance(exc.data, dict) else None
                if isinstance(supported, list):
                    choice = next((v for v in MODERN_PROTOCOL_VERSIONS if v in supported and v not in tried),
                                  None)
                    if choice is None and version in supported and len(tried) == 1:
                        choice = version  # it lists the version it just refused: one retry, as the spec says
                        tried.add("retried")
                    if choice is not None:
                        version = choice
                        continue
                    if not forced and any(v in LEGACY_PROTOCOL_VERSIONS for v in supported):
                        return None
                    raise MCPProtocolError(
                        f"{self.name} supports protocol versions {supported!r:.200}; yiemagent speaks "
                        f"{', '.join(MODERN_PROTOCOL_VERSIONS + LEGACY_PROTOCOL_VERSIONS)}", server=self.name,
                    ) from exc
                if forced or generation != self._cancel_generation or not _is_legacy_answer(exc, stdio=stdio):
                    raise
                logger.debug("%s: server/discover failed (%s)", self.name, exc)
                return None
            return self._modern_connected(version, result)

    def _modern_connected(self, version: str, result: dict[str, Any]) -> dict[str, Any] | None:
        offered = result.get("supportedVersions")
        if not isinstance(offered, list):
            # not a DiscoverResult (it requires supportedVersions): a legacy server that answers every method
            # (e.g. with {}); never take it for a modern one
            logger.debug("%s: server/discover answered without supportedVersions: %.200r", self.name, result)
            self.era, self._modern_version = None, None
            self.transport.set_protocol_version(None)
            return None
        if version not in offered:
            choice = next((v for v in MODERN_PROTOCOL_VERSIONS if v in offered), None)
            if choice is None:
                self.era, self._modern_version = None, None
                self.transport.set_protocol_version(None)
                if any(v in LEGACY_PROTOCOL_VERSIONS for v in offered):
                    return None
                raise MCPProtocolError(f"{self.name} supports protocol versions {offered!r:.200} only",
                                       server=self.name)
            version = choice
            self._modern_version = version
            self.transport.set_protocol_version(version)
        given = result.get("_meta")
        meta: dict[str, Any] = given if isinstance(given, dict) else {}
        info = meta.get(META_SERVER_INFO) or result.get("serverInfo") or {}
        synthesized: dict[str, Any] = {"protocolVersion": version, "capabilities": result.get("capabilities") or {},
                                       "serverInfo": info if isinstance(info, dict) else {}}
        if isinstance(result.get("instructions"), str):
            synthesized["instructions"] = result["instructions"]
        self.discover_result = result
        self.era = "modern"
        self.initialize_result = synthesized
        self._connected(synthesized)
        return synthesized

    def _connected(self, result: dict[str, Any]) -> None:
        """After either era's connect: take the server's name, start listening, log."""
        start_listening = getattr(self, "start_listening", None)
        listen = self.listen
        if listen is None:  # auto: a handshake-era server may send its requests (roots/list...) on the GET stream
            listen = self.era != "modern" and bool(self.request_handlers)
        if listen and callable(start_listening):
            start_listening()
        info = result.get("serverInfo") or {}
        if self._name_from_server:
            self._name = server_info_name(info) or self._name
        logger.info("%s: connected to %s %s (protocol %s)", self.name, info.get("name"), info.get("version"),
                    result.get("protocolVersion"))

    def _reinitialize(self, expired_session: str | None, generation: int) -> None:
        """Initialize again unless another thread already replaced ``expired_session``."""
        with self._lock:
            current = getattr(self.transport, "session_id", None)
            if self.initialize_result is not None and expired_session is not None and current != expired_session:
                return  # another thread met the same expiry and initialized already
            logger.info("%s: the server forgot session %r; initializing again", self.name, expired_session)
            try:
                self._initialize(force=True, generation=generation)
            except MCPRPCError as exc:
                if not self._era_failed(exc, "legacy"):
                    raise
                logger.info("%s: initialize was refused with a 2026-07-28 error (%s); probing again", self.name, exc)
                self._negotiate(generation, after="legacy")

    def _initialize(self, *, force: bool, generation: int) -> dict[str, Any]:
        with self._lock:
            if self.initialize_result is not None and not force:
                return self.initialize_result
            if generation != self._cancel_generation:  # cancel_in_flight() ran while this thread waited
                raise MCPTransportError(f"initialize to {self.name}: cancelled before it was sent", server=self.name)
            self.initialize_result = None
            self.era, self._modern_version = "legacy", None
            self.transport.reset_session()
            self.transport.set_protocol_version(None)
            offered = self.requested_protocol_version if self.requested_protocol_version in \
                LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[0]
            params = {
                "protocolVersion": offered,
                "capabilities": dict(self.capabilities),
                "clientInfo": {"name": "yiemagent", "version": __version__},
            }

            def retry_if(exc: BaseException) -> bool:  # a handshake cut by cancel_in_flight() is not repeated
                return generation == self._cancel_generation and safe_to_repeat(exc)

            for attempt in self._retrying(retry_if):
                with attempt:
                    trace = trace_meta()  # the caller's trace context, as on every request
                    result = self._send("initialize", {**params, "_meta": trace} if trace else params, None,
                                        generation)
            version = result.get("protocolVersion")
            if version not in LEGACY_PROTOCOL_VERSIONS:
                # C15: never talk a version we do not know; end the session the server opened
                try:
                    self.transport.close()
                except Exception as exc:  # closing is best effort; the version error is what matters
                    logger.debug("%s: close after a version mismatch failed: %s", self.name, exc)
                raise MCPProtocolError(
                    f"{self.name} answered unsupported protocol version {version!r}; "
                    f"yiemagent supports {', '.join(LEGACY_PROTOCOL_VERSIONS)}",
                    server=self.name,
                    body=str(version)[:200],
                )
            self.transport.set_protocol_version(version)
            self._notify("notifications/initialized", generation)
            self.initialize_result = result
            self._connected(result)
            return result
