"""MCPClient: a blocking MCP client (handshake, tools/list with paging, tools/call).

::

    client = MCPClient("http://127.0.0.1:3001/mcp")
    tools = client.list_tools()              # [{"name", "description", "inputSchema"}, ...]
    result = client.call_tool("echo", {"message": "hi"})
    # {"content": [{"type": "text", "text": "Echo: hi"}], "isError": False}
    client.close()

The handshake (``initialize``, then ``notifications/initialized``) runs on the
first request. Requests that are safe to repeat (``initialize``,
``tools/list``, ``ping``) are retried on connection failures and HTTP
429/502/503; ``tools/call`` is retried only when the request provably never
reached the server. When the server forgets the session (HTTP 404, or 400
naming the session), the client initializes again once and repeats the request.

Spec: MCP 2026-07-28 ("Versioning and Compatibility", "Discovery", "Multi
Round-Trip Requests", "Tools", "Transports") and MCP 2025-11-25 (also
2025-06-18 and 2025-03-26), "Lifecycle", "Tools", "Transports". The era is
negotiated at the first request (``yiemagent.mcp.era``): a 2026-07-28 server
gets per-request ``_meta`` and no handshake; others the handshake below.

Split out: ``era`` (negotiation, the request path), ``mrtr`` (``input_required``),
``listening`` (server messages, ``listen_for``),
``in_flight`` (tracked sends, retry waits, ``cancel_in_flight``),
``tool_listing`` (paging), ``server_messages``, ``server_names``, ``client_arguments``.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._internal.checks import check_callable, check_str
from ..exceptions import ConfigError
from ..textpolicy import display_text
from .callbacks import ClientCallbacks
from .client_arguments import HTTP_ONLY_KEYWORDS, check_call_arguments, check_client_arguments
from .era import LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS, Eras
from .http import HTTPTransport
from .http_headers import header_paths, tool_header_problem
from .listening import Listening
from .prompts import PromptsMixin
from .resources import ResourcesMixin
from .server_messages import ProgressCallback
from .server_names import default_server_name, server_info_name
from .tool_listing import list_all_tools
from .transport import Transport

if TYPE_CHECKING:  # OAuth (and requests-based flows) load only for a client given auth=
    from .auth import OAuth

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "MCPClient",
    "default_server_name",
    "server_info_name",
]

logger = logging.getLogger("yiemagent.mcp")

SUPPORTED_PROTOCOL_VERSIONS = MODERN_PROTOCOL_VERSIONS + LEGACY_PROTOCOL_VERSIONS
"""Every version this client speaks: the 2026-07-28 era first, then the handshake era."""
LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0]


class MCPClient(Eras, Listening, ResourcesMixin, PromptsMixin):
    """A synchronous MCP client over one transport.

    Args:
        url: Streamable HTTP endpoint, e.g. ``"http://127.0.0.1:3001/mcp"``:
            ``http://`` or ``https://`` with a host, else ``ConfigError``
            (the check of server configurations, ``client_arguments.check_http_url``).
            Leave None and pass ``transport`` for another transport.
        headers: static HTTP headers (e.g. ``{"Authorization": "Bearer ..."}``);
            never logged, never in ``repr`` or events.
        timeout_seconds: default seconds one request may take in all
            (connecting, waiting, reading the whole reply); each method
            takes its own ``timeout_seconds`` too.
        name: a short name for this server (errors, events, tool prefixes);
            None uses ``default_server_name(url)`` (``"127_0_0_1_3001"`` for
            ``http://127.0.0.1:3001/mcp``); with a ``transport`` (stdio), the
            transport's name until the handshake, then
            ``server_info_name(serverInfo)`` (``"mcp-time"`` for
            mcp-server-time, not its command line). Transport errors name the
            URL or command line as well.
        transport: a ready ``Transport``; overrides ``url`` and ``headers``.
        max_pages: ``tools/list`` pages followed at most.
        list_deadline_seconds: seconds all pages of one ``list_tools`` may take.
        connect_timeout_seconds: seconds to wait for the HTTP connection.
        retry_attempts: tries per request that is safe to repeat
            (``initialize``, ``tools/list``, ``ping``); 1 turns retrying off.
        retry_sleep: ``sleep(seconds)`` between tries (tests pass a fake).
        capabilities: the client capabilities announced in ``initialize``,
            e.g. ``{"elicitation": {}}`` along with a handler for it.
        request_handlers: ``{method: handler(params) -> result}`` for requests
            the server sends (``elicitation/create``, ``sampling/createMessage``,
            ``roots/list``); a handler that raises answers JSON-RPC error
            -32603. ``ping`` is always answered; other methods get -32601.
        listen: after connecting, also open the transport's stream of server
            messages tied to no request, on a daemon thread (HTTP handshake
            era: the ``GET`` SSE stream, with ``tools/list_changed`` and server
            requests such as ``elicitation/create``; 2026-07-28:
            ``subscriptions/listen`` for ``tools/list_changed``, see
            ``listen_for``): a thread and a connection per client. None
            (default): on in the handshake era when the client can answer
            server requests (``callbacks`` or ``request_handlers``: servers
            such as the python SDK send ``roots/list`` and elicitations tied
            to no request on the ``GET`` stream), else off. True/False force it.
            Not False: an ``Agent`` (``MCPToolset``) also listens for
            ``tools/list_changed`` in either era when the server advertises
            ``tools.listChanged`` (``follow_tool_changes``).
        callbacks: sampling, elicitation and roots as plain sync callbacks
            (``ClientCallbacks``, ``yiemagent.mcp.callbacks``): their
            capabilities and handlers are added to ``capabilities`` and
            ``request_handlers`` (a handler given there wins). ``Agent``
            gives a client without callbacks its own ``llm_call`` as sampler.
        follow_cross_origin_redirects: HTTP: follow a redirect to another
            origin without ``headers`` and ``Mcp-Session-Id`` (never for
            ``tools/call``); False (default) refuses it with
            ``MCPTransportError`` naming both origins. Same-origin redirects
            are always followed.
        protocol_version: None (default): negotiate the era at the first
            request (``server/discover``; a legacy server gets
            ``initialize``, see ``yiemagent.mcp.era``). ``"2026-07-28"``:
            modern only (no fallback). ``"2025-11-25"``, ``"2025-06-18"`` or
            ``"2025-03-26"``: the ``initialize`` handshake offering that version.
        probe_timeout_seconds: stdio: seconds the ``server/discover`` probe
            waits before taking the server for a legacy one (default 5).
        max_input_rounds: 2026-07-28 ``input_required`` retries of one
            ``tools/call``/``prompts/get``/``resources/read`` at most
            (default 8); past it ``MCPProtocolError``.
        auth: HTTP: OAuth 2.1 (``yiemagent.mcp.auth.OAuth``): bearer tokens on
            every request, the login flow on a 401 or 403
            ``insufficient_scope`` (then the request once more); a failed
            login raises ``MCPAuthorizationError``.

    Thread safety: safe to call from several threads; the handshake runs once,
    and an expired session is re-initialized once however many threads meet it.

    Spec: MCP 2025-11-25, "Lifecycle", "Tools", "Pagination", "Transports".
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        timeout_seconds: float = 30.0,
        name: str | None = None,
        transport: Transport | None = None,
        max_pages: int = 100,
        list_deadline_seconds: float = 120.0,
        connect_timeout_seconds: float = 10.0,
        retry_attempts: int = 3,
        retry_sleep: Callable[[float], None] = time.sleep,
        capabilities: dict[str, Any] | None = None,
        request_handlers: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]] | None = None,
        listen: bool | None = None,
        follow_cross_origin_redirects: bool = False,
        callbacks: ClientCallbacks | None = None,
        protocol_version: str | None = None,
        probe_timeout_seconds: float = 5.0,
        max_input_rounds: int = 8,
        auth: OAuth | None = None,
    ) -> None:
        check_client_arguments(locals())
        super().__init__()
        if transport is None:
            if not url:
                raise ConfigError("MCPClient needs a url or a transport")
            transport = HTTPTransport(url, headers=headers, timeout_seconds=timeout_seconds, name=name,
                                      connect_timeout_seconds=connect_timeout_seconds,
                                      follow_cross_origin_redirects=follow_cross_origin_redirects, auth=auth)
            name = name or default_server_name(url)
        self.transport = transport
        self._name = name or transport.name or "mcp"
        self._name_from_server = name is None  # a stdio client without a name takes serverInfo.name
        self.timeout_seconds = timeout_seconds
        self.max_pages = max_pages
        self.list_deadline_seconds = list_deadline_seconds
        self.retry_attempts = max(1, retry_attempts)
        self.retry_sleep = retry_sleep
        self.capabilities = dict(capabilities or {})
        self.request_handlers = dict(request_handlers or {})
        self.callbacks = callbacks
        if callbacks is not None:
            callbacks.install(self)
        self.listen = listen
        self.requested_protocol_version = protocol_version
        self.probe_timeout_seconds = probe_timeout_seconds
        self.max_input_rounds = max_input_rounds
        self.era: str | None = None
        """``"modern"`` (2026-07-28), ``"legacy"`` (``initialize``), or None before connecting."""
        self._modern_version: str | None = None
        self.discover_result: dict[str, Any] | None = None
        """The raw ``server/discover`` result in the modern era (``supportedVersions``, ``ttlMs``...), else None."""
        self.initialize_result: dict[str, Any] | None = None
        """The server's ``initialize`` result (``protocolVersion``, ``capabilities``, ``serverInfo``); in the
        modern era the same keys taken from ``server/discover`` (``yiemagent.mcp.era``)."""
        self.tools_changed = threading.Event()
        """Set when the server sends ``notifications/tools/list_changed``; clear it after re-listing."""
        self._lock = threading.RLock()
        self._progress: dict[str, ProgressCallback] = {}
        self._listen_filter: dict[str, Any] = {}
        self._tools_followed_in: str | None = None
        """The era in which ``follow_tool_changes`` opened its stream (once per era)."""
        self._on_notification: Callable[[dict[str, Any]], None] | None = None
        self.subscription_acknowledged: dict[str, Any] | None = None
        """The ``notifications`` filter the server agreed to on ``subscriptions/listen`` (2026-07-28), or None."""
        self._closed = False

    @classmethod
    def stdio(
        cls,
        command: str,
        args: list[str] | tuple[str, ...] = (),
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        **options: Any,
    ) -> MCPClient:
        """A client of a server run as a subprocess over stdio (``StdioTransport``).

        The process starts on the first request (the handshake), not here.

        Args:
            command: the executable, e.g. ``"node"``, ``sys.executable`` or
                ``"mcp-server-time"``.
            args: its arguments, e.g. ``["-m", "mcp_server_time"]``.
            env: variables added for the server over the allow-list
                (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``);
                nothing else of this process's environment reaches it.
            cwd: the server's working directory (a ``pathlib.Path`` works too);
                None inherits ours.
            **options: every keyword of ``MCPClient()`` except the HTTP ones
                (``url``, ``headers``, ``transport``, ``connect_timeout_seconds``,
                ``follow_cross_origin_redirects``; ``client_arguments.HTTP_ONLY_KEYWORDS``),
                checked alike: ``timeout_seconds`` (default seconds to wait for each
                response, 30), ``name`` (None: the command line until the handshake,
                then the server's ``serverInfo.name``), ``callbacks``,
                ``protocol_version``, ``probe_timeout_seconds`` (the
                ``server/discover`` probe, 5), ``max_input_rounds``, ``listen``,
                ``capabilities``, ``request_handlers``, ``max_pages``,
                ``list_deadline_seconds``, ``retry_attempts``, ``retry_sleep``.

        Returns:
            An unconnected ``MCPClient``; ``close()`` stops the process
            (close stdin, wait 2 s, SIGTERM, wait 2 s, SIGKILL). A process
            that exits is not restarted: every later request raises
            ``MCPTransportError`` (``exit_code``, ``stderr_tail``) and is not
            retried; make a new client to start the server again.

        Raises:
            ConfigError: an HTTP-only or unknown keyword, or a value of the wrong type or range.

        Example::

            with MCPClient.stdio(sys.executable, ["-m", "mcp_server_time"]) as client:
                client.call_tool("get_current_time", {"timezone": "UTC"})

        Spec: MCP 2025-11-25, "Transports", stdio.
        """
        from .stdio import StdioTransport

        accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self" and p not in
                    HTTP_ONLY_KEYWORDS]
        wrong = sorted(set(options) - set(accepted))
        if wrong:
            why = "HTTP only" if set(wrong) <= HTTP_ONLY_KEYWORDS else "not a keyword of MCPClient"
            raise ConfigError(f"MCPClient.stdio() does not take {', '.join(wrong)} ({why}); it takes "
                              f"env, cwd, {', '.join(accepted)}")
        timeout_seconds = options.get("timeout_seconds", 30.0)
        name = options.get("name")
        check_client_arguments({**_DEFAULTS, **options, "url": None, "transport": None})
        transport = StdioTransport(command, args, env=env, cwd=cwd, timeout_seconds=timeout_seconds, name=name or "")
        return cls(transport=transport, **options)

    def __repr__(self) -> str:
        return display_text(f"MCPClient(name={self.name!r}, transport={self.transport!r})")

    def __enter__(self) -> MCPClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ properties

    @property
    def name(self) -> str:
        """The server's short name (errors, events, tool prefixes); setting it keeps it (no ``serverInfo`` name)."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value
        self._name_from_server = False

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version, or None before the handshake."""
        return self.initialize_result.get("protocolVersion") if self.initialize_result else None

    @property
    def server_info(self) -> dict[str, Any]:
        """``serverInfo`` of the handshake (``{"name", "version"}``), or ``{}``."""
        return dict((self.initialize_result or {}).get("serverInfo") or {})

    # ------------------------------------------------------------------ requests

    def connect(self) -> dict[str, Any]:
        """Negotiate the era and connect if not done yet; return ``initialize_result``.

        Raises:
            MCPProtocolError: the server speaks no protocol version this client
                supports (the session is closed first).
            MCPTransportError, MCPTimeoutError, MCPRPCError: connecting failed,
                or the client is closed (``"... is closed"``; ``with client:`` too).
        """
        return self._connect(self._cancel_generation)

    def list_tools(self, *, timeout_seconds: float | None = None) -> list[dict[str, Any]]:
        """Return every tool of the server, following ``nextCursor`` through all pages.

        Guards against servers that page forever: paging stops with a
        ``YiemagentWarning`` (and the tools listed so far are returned) on a
        repeated cursor, after ``max_pages`` pages, or when
        ``list_deadline_seconds`` have passed (a later page's request is cut
        at that deadline; the first page always gets its full timeout).
        Tools are de-duplicated by name, the first wins; a duplicate is
        logged at WARNING.

        Args:
            timeout_seconds: seconds each page request may take; None uses the
                client's default.

        Returns:
            MCP tool objects in server order:
            ``[{"name": str, "description"?: str, "inputSchema"?: {...}, ...}]``.

        Raises:
            MCPTimeoutError: the first page did not come in time.
            MCPRPCError: the server answered a JSON-RPC error (e.g. ``code``
                -32602 for a cursor it does not accept).
            MCPError: the server could not be reached or its reply is unusable.

        Spec: MCP 2025-11-25, "Pagination" (``cursor``, ``nextCursor``).
        """
        self.tools_changed.clear()  # before listing: a change announced meanwhile is not lost
        per_page = self.timeout_seconds if timeout_seconds is None else timeout_seconds

        def fetch_page(cursor: Any, timeout: float) -> dict[str, Any]:
            params = {"cursor": cursor} if cursor is not None else None
            return self._request("tools/list", params, safe=True, timeout_seconds=timeout)

        tools = list_all_tools(self, fetch_page, per_page)
        paths = getattr(self.transport, "tool_header_paths", None)
        if self.era != "modern" or not isinstance(paths, dict):
            return tools
        kept = []
        for tool in tools:  # MCP 2026-07-28 over HTTP: a tool with an invalid x-mcp-header is left out
            problem = tool_header_problem(tool.get("inputSchema"))
            if problem is not None:
                logger.warning("%s: tool %r left out: %s", self.name, tool.get("name"), problem)
                continue
            paths[str(tool.get("name"))] = header_paths(tool.get("inputSchema"))
            kept.append(tool)
        return kept

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Run one tool with a single ``tools/call`` request.

        The request is sent at most once unless it provably never reached the
        server (connection refused) or the server rejected our session before
        processing it.

        Args:
            name: the tool name exactly as ``tools/list`` gave it.
            arguments: a JSON object for the tool's ``inputSchema``; None sends ``{}``.
            timeout_seconds: seconds to wait for the complete result; None uses
                the client's default. On timeout ``notifications/cancelled`` is
                sent (best effort).
            progress_callback: receives each ``notifications/progress`` params
                (``{"progressToken", "progress", "total"?, "message"?}``).

        Returns:
            The MCP result: ``{"content": [{"type": "text", "text": ...}, ...],
            "isError": bool, "structuredContent"?: {...}}``. A tool's own
            failure is reported here (``isError: true``), not raised. A
            2026-07-28 server's result also has ``resultType``
            (``"complete"``) and may have ``_meta``; they are kept.

        Raises:
            ConfigError: ``name`` is not a non-empty str, ``arguments`` not a
                dict with str keys, ``timeout_seconds`` not a number > 0;
                nothing was sent.
            MCPRPCError: the server answered a JSON-RPC error (``.code``, e.g. -32602),
                in the body of an HTTP 4xx too.
            MCPTimeoutError: no result within ``timeout_seconds``.
            MCPTransportError: the server could not be reached, or the client is closed.
        """
        check_str("name", name, empty=False)
        check_call_arguments("arguments", arguments)
        check_callable("progress_callback", progress_callback)
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        token = None
        if progress_callback is not None:
            import uuid  # here: a client that never asks for progress does without it (and platform)

            token = uuid.uuid4().hex
            self._progress[token] = progress_callback
            params["_meta"] = {"progressToken": token}
        try:
            result = self._request("tools/call", params, safe=False, timeout_seconds=timeout_seconds)
        finally:
            if token is not None:
                self._progress.pop(token, None)
        result.setdefault("content", [])
        result["isError"] = bool(result.get("isError", False))
        return result

    def ping(self, *, timeout_seconds: float | None = None) -> None:
        """Send ``ping`` (2026-07-28 era: ``server/discover``); raise ``MCPError`` if the server does not answer."""
        self._connect(self._cancel_generation)
        method = "server/discover" if self.era == "modern" else "ping"
        self._request(method, None, safe=True, timeout_seconds=timeout_seconds)

    def close(self) -> None:
        """Cut the requests in flight, end the session and release the transport. Safe to call twice.

        Requests in flight on other threads fail at once with
        ``MCPTransportError`` (as with ``cancel_in_flight``); later requests
        raise ``MCPTransportError`` ("closed"). Returns within about 5 s
        whatever the server does (HTTP: 1 s of ``notifications/cancelled``,
        2 s for the listener thread, 2 s for the ``DELETE``); never raises.
        ``Agent.shutdown()`` calls it for the clients the agent owns.
        """
        if self._closed:
            return
        self._closed = True
        try:
            self.cancel_in_flight("the client was closed")
        except Exception as exc:  # closing must not raise
            logger.debug("%s: cancelling on close failed: %s", self.name, exc)
        try:
            self.transport.close()
        except Exception as exc:  # closing must not raise
            logger.debug("%s: close failed: %s", self.name, exc)


_DEFAULTS = {name: parameter.default for name, parameter in inspect.signature(MCPClient.__init__).parameters.items()
             if parameter.default is not inspect.Parameter.empty}
"""``MCPClient()``'s keyword defaults (``stdio()`` checks its options against them before starting anything)."""
