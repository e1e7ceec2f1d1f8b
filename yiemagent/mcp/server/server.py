"""``MCPServer``: tools, resources and prompts served over MCP, answering one JSON-RPC message at a time.

``MCPServer.handle(message, context) -> reply | None`` is transport-free and
thread-safe: ``wsgi_app`` (Streamable HTTP) and ``run_stdio`` call it, each
request on its own thread. Both protocol eras, placed per request
(``yiemagent.mcp.server.modern.request_era``): 2026-07-28 (stateless: each
request carries its version and the client's capabilities in ``params._meta``;
``server/discover``; results with ``resultType`` and, where cacheable,
``ttlMs``/``cacheScope``; ``input_required`` rounds, ``yiemagent.mcp.server.rounds``)
and the handshake era. Methods answered (2025-11-25, and the versions the
SDK servers accept: 2025-06-18, 2025-03-26, 2024-11-05):

- ``initialize`` (the client's version if supported, else 2025-11-25),
  ``notifications/initialized``, ``ping``;
- ``tools/list`` (paged: ``nextCursor``, ``page_size`` tools a page),
  ``tools/call`` (``isError`` results; ``structuredContent`` for a tool added
  with an ``output_schema``; progress and log notifications during the call;
  ``notifications/cancelled`` sets the call's abort event, and no answer is sent);
- ``resources/list``, ``resources/read``, ``resources/templates/list`` and
  ``prompts/list``, ``prompts/get`` (when the server has resources / prompts);
- ``logging/setLevel``, ``completion/complete`` (answers no values);
- 2026-07-28: ``server/discover``, and all of the above but ``initialize``,
  ``ping``, ``logging/setLevel`` (log messages go to a request whose ``_meta``
  names ``io.modelcontextprotocol/logLevel``).

A tool (a prompt's ``render``, a resource's ``read``) may ask the client for
elicitation, sampling or roots through ``current_call()`` (``ServedCall.ask``):
back-channel requests in 2025-11-25, ``input_required`` rounds in 2026-07-28
(the tool runs again with the answers; see ``yiemagent.mcp.server.calls``).

Errors (JSON-RPC 2.0 codes): -32700 parse error, -32600 invalid request (not
an object, no ``"jsonrpc": "2.0"``, a bad ``id``, a batch), -32601 method not
found, -32602 invalid params (an unknown tool or prompt, a bad cursor, a missing
prompt argument; in 2026-07-28 also an unknown resource, with ``data.uri``, and a
bad ``_meta``, ``inputResponses`` or ``requestState``), -32002 resource not found
(2025-11-25, ``data.uri``), -32603 internal error; 2026-07-28: -32020 header
mismatch, -32021 a client capability the request needs is not declared
(``data.requiredCapabilities``), -32022 unsupported version (``data.supported``). An error
never carries a traceback: a tool's or reader's exception is logged (logger
``yiemagent.mcp.server``) and the client gets its type and message with known
secrets ``***`` (``yiemagent.textpolicy.scrub_secrets``). A tool's invalid
arguments are an ``isError`` result (the model can correct them), as 2025-11-25 says.

Spec: MCP 2025-11-25, "Lifecycle", "Tools", "Resources", "Prompts",
"Utilities" (Ping, Cancellation, Progress, Logging, Completion); MCP 2026-07-28
"Discovery", "Multi Round-Trip Requests", "Caching"; JSON-RPC 2.0.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from ...__version__ import __version__
from ..._internal.checks import one_of
from ...exceptions import ConfigError, ToolArgumentsError
from ...textpolicy import display_text, scrub_secrets
from ...tools import AgentTool, tool
from ...tools.schema_checks import safe_validator_class
from ..era import LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from ..jsonrpc import make_response
from .approvals import elicited_approvals
from .calls import LOG_LEVELS, RequestContext
from .catalog import Prompt, Resource, ResourceTemplate, contents_of, messages_of
from .content import call_result
from .inputs import InputLimits
from .modern import REMOVED_METHODS, check_request, finish_result, request_era
from .rounds import MemoryUsedStates, RequestStateCodec, UsedStates, run_asking
from .subscriptions import Subscriptions
from .wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_CURSOR_CHARS,
    MAX_URI_CHARS,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    Refusal,
    bounded_text,
    error_response,
    named,
)

if TYPE_CHECKING:
    from .wsgi import WSGIApp

__all__ = ["LATEST_PROTOCOL_VERSION", "PARSE_ERROR", "MCPServer", "error_response"]  # the codes: .wire

logger = logging.getLogger("yiemagent.mcp.server")

LATEST_PROTOCOL_VERSION = "2025-11-25"
"""What ``initialize`` answers a client asking for a version the server does not speak."""


_Handler = Callable[["MCPServer", Any, dict[str, Any], RequestContext], "dict[str, Any] | None"]


def _failure(exc: BaseException) -> str:
    return scrub_secrets(display_text(f"{type(exc).__name__}: {exc}"))[:2000]


class MCPServer:
    """Tools, resources and prompts served over MCP.

    Tools: ``@tool`` functions, any ``AgentTool``, an agent's ``agent.as_tool(...)``.

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        tools: ``AgentTool`` objects or plain typed functions (made tools with ``@tool``).
        resources: ``Resource`` and ``ResourceTemplate`` objects.
        prompts: ``Prompt`` objects.
        instructions: ``initialize``'s ``instructions`` (how to use the server), or None.
        page_size: entries per page of ``tools/list``, ``resources/list``, ``prompts/list`` (>= 1).
        cache_ttl_ms: 2026-07-28 ``ttlMs`` of cacheable results (milliseconds a client may reuse a list or a
            read; 0: stale at once).
        cache_scope: their ``cacheScope``: ``"private"`` (per user) or ``"public"`` (no user data).
        state_keys: the keys signing ``requestState`` (``rounds.RequestStateCodec``: at least 32 bytes each; the
            first signs). None: a random key per process; give the same keys to every worker.
        input_limits: bounds on asking the client (``inputs.InputLimits``: rounds, inputs per round,
            ``requestState`` size, deadline).
        used_states: where the nonces of spent ``requestState`` values are recorded, so that a replayed round
            does not run its tool again (``rounds.UsedStates``; default ``rounds.MemoryUsedStates()``, this
            process only: workers sharing ``state_keys`` should share one, e.g. on Redis or a table).

    Raises:
        ConfigError: two tools, prompts or resources with one name / URI, a bad ``page_size``,
            ``cache_ttl_ms``, ``cache_scope`` (the nearest valid one named) or key, a ``used_states`` without
            ``use``.

    Example:
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> server = MCPServer("calc", "1.0", tools=[add])
        >>> server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        ...                "params": {"name": "add", "arguments": {"a": 2, "b": 3}}})["result"]["content"]
        [{'type': 'text', 'text': '5'}]
    """

    def __init__(self, name: str, version: str = __version__, *, tools: Iterable[AgentTool | Callable[..., Any]] = (),
                 resources: Iterable[Resource | ResourceTemplate] = (), prompts: Iterable[Prompt] = (),
                 instructions: str | None = None, page_size: int = 100, cache_ttl_ms: int = 0,
                 cache_scope: str = "private", state_keys: Sequence[bytes | str] | None = None,
                 input_limits: InputLimits | None = None, used_states: UsedStates | None = None) -> None:
        if not isinstance(page_size, int) or isinstance(page_size, bool) or page_size < 1:
            raise ConfigError(f"page_size must be an int >= 1, not {page_size!r}")
        if not isinstance(cache_ttl_ms, int) or isinstance(cache_ttl_ms, bool) or cache_ttl_ms < 0:
            raise ConfigError(f"cache_ttl_ms must be an int >= 0, not {cache_ttl_ms!r:.50}")
        one_of("cache_scope", cache_scope, ("private", "public"))
        self.name, self.version, self.instructions, self.page_size = name, version, instructions, page_size
        self.cache_ttl_ms, self.cache_scope = cache_ttl_ms, cache_scope
        self.input_limits = input_limits or InputLimits()
        self._state_codec = RequestStateCodec(state_keys)
        if used_states is not None and not callable(getattr(used_states, "use", None)):
            raise ConfigError(f"used_states needs use(nonce, expires_at) -> bool, not {type(used_states).__name__}")
        self._used_states: UsedStates = used_states if used_states is not None else MemoryUsedStates()
        self._tools: dict[str, AgentTool] = {}
        self._output_schemas: dict[str, dict[str, Any]] = {}
        self._resources: dict[str, Resource] = {}
        self._templates: list[ResourceTemplate] = []
        self._prompts: dict[str, Prompt] = {}
        self._subscriptions = Subscriptions()
        self._lock = threading.Lock()
        for each in tools:
            self.add_tool(each)
        for item in resources:
            self.add_resource(item)
        for prompt in prompts:
            self.add_prompt(prompt)

    # ------------------------------------------------------------------ what is served

    def add_tool(self, new: AgentTool | Callable[..., Any], *,
                 output_schema: dict[str, Any] | None = None) -> AgentTool:
        """Serve ``new`` (a function is made a tool with ``@tool``); returns the served tool.

        ``output_schema``: its ``outputSchema`` (a JSON Schema of ``"type": "object"``; a ``dict`` the tool
        returns is then ``structuredContent``).

        Raises:
            ConfigError: a tool of that name is served already, or ``output_schema`` is not an object schema.
        """
        made = new if isinstance(new, AgentTool) else tool(new)
        if output_schema is not None:
            if not isinstance(output_schema, dict) or output_schema.get("type") != "object":
                raise ConfigError(f"tool {made.name!r}: output_schema must be a JSON Schema with \"type\": \"object\"")
            safe_validator_class(output_schema).check_schema(output_schema)
        with self._lock:
            if made.name in self._tools:
                raise ConfigError(f"a tool named {made.name!r} is served already")
            self._tools[made.name] = made
            if output_schema is not None:
                self._output_schemas[made.name] = output_schema
        return made

    def add_resource(self, item: Resource | ResourceTemplate) -> None:
        """Serve a resource or a resource template.

        Raises:
            ConfigError: a resource with that URI is served already.
        """
        with self._lock:
            if isinstance(item, ResourceTemplate):
                self._templates.append(item)
            elif item.uri in self._resources:
                raise ConfigError(f"a resource {item.uri!r} is served already")
            else:
                self._resources[item.uri] = item

    def add_prompt(self, prompt: Prompt) -> None:
        """Serve ``prompt``.

        Raises:
            ConfigError: a prompt of that name is served already.
        """
        with self._lock:
            if prompt.name in self._prompts:
                raise ConfigError(f"a prompt named {prompt.name!r} is served already")
            self._prompts[prompt.name] = prompt

    def capabilities(self, era: str = "legacy") -> dict[str, Any]:
        """The server's ``capabilities``: tools, logging, completions, and resources / prompts when there are any.

        ``resources.subscribe`` only in the handshake era (``"legacy"``): 2026-07-28 delivers updates through
        ``subscriptions/listen``, which is not served yet.
        """
        caps: dict[str, Any] = {"tools": {"listChanged": False}, "logging": {}, "completions": {}}
        if self._resources or self._templates:
            caps["resources"] = {"subscribe": era == "legacy", "listChanged": False}
        if self._prompts:
            caps["prompts"] = {"listChanged": False}
        return caps

    # ------------------------------------------------------------------ transports

    def wsgi_app(self, path: str = "/mcp", **options: Any) -> WSGIApp:
        """A PEP 3333 WSGI app serving Streamable HTTP at ``path``.

        ``yiemagent.mcp.server.wsgi.WSGIApp`` has the options: ``allowed_origins``, ``allowed_hosts``,
        ``stateless``, ``sessions``, ``max_body_bytes``, ``max_calls_per_session``, ``max_calls_per_owner``,
        ``max_buffered_messages``, ``max_call_seconds``.
        """
        from .wsgi import WSGIApp

        return WSGIApp(self, path=path, **options)

    def run_stdio(self, **options: Any) -> None:
        """Serve newline-delimited JSON-RPC on stdin/stdout until stdin ends (``yiemagent.mcp.server.stdio``)."""
        from .stdio import serve_stdio

        serve_stdio(self, **options)

    # ------------------------------------------------------------------ dispatch

    def handle(self, message: Any, context: RequestContext | None = None) -> dict[str, Any] | None:
        """Answer one JSON-RPC message.

        Args:
            message: the decoded message (a dict; anything else is an invalid request).
            context: the session and where notifications about this request go; None: a fresh
                session whose notifications are dropped.

        Returns:
            The response (``{"jsonrpc", "id", "result"}`` or ``{"jsonrpc", "id", "error"}``), or None for a
            notification, a response, or a ``tools/call`` the client cancelled.

        Never raises for what a client sends; errors are responses (codes in the module docstring).
        """
        context = context or RequestContext()
        if not isinstance(message, dict):
            code = INVALID_REQUEST
            return error_response(None, code, "batches are not accepted" if isinstance(message, list)
                                  else "a JSON-RPC message must be an object")
        request_id = message.get("id")
        has_id = "id" in message
        method = message.get("method")
        if message.get("jsonrpc") != "2.0":
            return error_response(request_id if _valid_id(request_id) else None, INVALID_REQUEST,
                                  'a JSON-RPC message must have "jsonrpc": "2.0"')
        if method is None and has_id and ("result" in message or "error" in message):
            context.session.resolve(message)  # the answer to a request a tool sent (2025-11-25)
            return None
        if not isinstance(method, str):
            return error_response(request_id if _valid_id(request_id) else None, INVALID_REQUEST,
                                  "method must be a string")
        params = message.get("params", {})
        if params is None:
            params = {}
        if not has_id:
            if isinstance(params, dict):
                self._notification(method, params, context)
            return None
        if not _valid_id(request_id):
            return error_response(None, INVALID_REQUEST, "id must be a string or an integer")
        if not isinstance(params, dict):
            return error_response(request_id, INVALID_PARAMS, "params must be an object")
        modern = request_era(message, context.headers) == "modern"
        if modern:
            try:
                context = replace(context, modern_request=check_request(message, context.headers, self._input_schema))
            except Refusal as refusal:
                return refusal.response(request_id)
        handler = self._METHODS.get(method)
        if handler is None or not self._offers(method) or (
                method in REMOVED_METHODS if modern else method == "server/discover"):
            return error_response(request_id, METHOD_NOT_FOUND, f"method not found: {method}"[:300])
        try:
            result = handler(self, request_id, params, context)
        except Refusal as refusal:
            return refusal.response(request_id)
        except Exception:
            logger.exception("MCP %s failed", method)
            return error_response(request_id, INTERNAL_ERROR, "internal error")
        if result is not None and modern:
            result = finish_result(method, result, {"name": self.name, "version": self.version}, self.cache_ttl_ms,
                                   self.cache_scope)
        return None if result is None else make_response(request_id, result)

    def _offers(self, method: str) -> bool:
        if method.startswith("resources/"):
            return bool(self._resources or self._templates)
        if method.startswith("prompts/"):
            return bool(self._prompts)
        return True

    def _notification(self, method: str, params: dict[str, Any], context: RequestContext) -> None:
        if method == "notifications/initialized":
            context.session.initialized = True
        elif method == "notifications/cancelled":
            context.session.cancel(params.get("requestId"))

    # ------------------------------------------------------------------ methods

    def _initialize(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise Refusal(INVALID_PARAMS, "initialize needs params.protocolVersion (a string)")
        version = requested if requested in LEGACY_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        session = context.session
        session.protocol_version = version
        capabilities, info = params.get("capabilities"), params.get("clientInfo")
        session.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
        session.client_info = info if isinstance(info, dict) else {}
        result: dict[str, Any] = {"protocolVersion": version, "capabilities": self.capabilities(),
                                  "serverInfo": {"name": self.name, "version": self.version}}
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def _ping(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return {}

    def _discover(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        result: dict[str, Any] = {"supportedVersions": list(MODERN_PROTOCOL_VERSIONS),
                                  "capabilities": self.capabilities("modern")}
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._tools.get(name)
        return found.input_schema if found is not None else None

    def _asking(self, method: str, name: str, arguments: dict[str, Any], request_id: Any, params: dict[str, Any],
                context: RequestContext, work: Callable[[], Any],
                abort: threading.Event | None = None) -> tuple[Any, dict[str, Any] | None]:
        """``rounds.run_asking`` with this server's codec and limits.

        Without ``abort``, one is registered for the request: ``notifications/cancelled`` and a client that leaves
        reach ``prompts/get`` and ``resources/read`` as they reach ``tools/call``.
        """
        if abort is not None:
            return run_asking(method, name, arguments, request_id, params, context, work, abort,
                              self._state_codec, self.input_limits, self._used_states)
        abort, session = threading.Event(), context.session
        with session.lock:
            session.calls.setdefault(request_id, abort)
        try:
            return run_asking(method, name, arguments, request_id, params, context, work, abort,
                              self._state_codec, self.input_limits, self._used_states)
        finally:
            with session.lock:
                if session.calls.get(request_id) is abort:
                    del session.calls[request_id]

    def _page(self, entries: list[dict[str, Any]], params: dict[str, Any], key: str) -> dict[str, Any]:
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_CHARS or not cursor.isdigit() \
                    or int(cursor) > len(entries):
                raise Refusal(INVALID_PARAMS, "invalid cursor")
            start = int(cursor)
        end = start + self.page_size
        page: dict[str, Any] = {key: entries[start:end]}
        if end < len(entries):
            page["nextCursor"] = str(end)
        return page

    def _tools_list(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        with self._lock:
            served = list(self._tools.values())
            schemas = dict(self._output_schemas)
        entries = []
        for each in served:
            entry: dict[str, Any] = {"name": each.name, "description": each.description,
                                     "inputSchema": each.input_schema}
            if each.title is not None:
                entry["title"] = each.title
            if each.annotations:
                entry["annotations"] = each.annotations
            if each.icons:
                entry["icons"] = each.icons
            if each.name in schemas:
                entry["outputSchema"] = schemas[each.name]
            entries.append(entry)
        return self._page(entries, params, "tools")

    def _tools_call(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any] | None:
        name, arguments = params.get("name"), params.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise Refusal(INVALID_PARAMS, "tools/call needs params.name (a string) and params.arguments (an object)")
        with self._lock:
            found, output_schema = self._tools.get(name), self._output_schemas.get(name)
        if found is None:
            raise Refusal(INVALID_PARAMS, f"Unknown tool: {name}"[:300])
        try:
            found.validate(arguments, str(request_id))
        except ToolArgumentsError as exc:  # each error clipped: a 4 MiB argument is not echoed back (nor logged)
            errors = [e if len(e) <= 300 else f"{e[:150]}...{e[-100:]}" for e in (exc.errors or [str(exc)])[:20]]
            text = f"invalid arguments for tool {name!r}: " + "; ".join(errors)
            return {"content": [{"type": "text", "text": scrub_secrets(text)}], "isError": True}
        abort = threading.Event()
        session = context.session
        with session.lock:
            session.calls[request_id] = abort
        try:
            value, pending = self._asking("tools/call", name, arguments, request_id, params, context,
                                          lambda: elicited_approvals(  # an agent's approvals: asked of the person
                                              lambda: found.execute(f"mcp-{request_id}", arguments, abort)), abort)
            if pending is not None:
                return pending
            result = call_result(value, output_schema)
        except Refusal:
            raise
        except Exception as exc:
            logger.warning("served tool %s raised %s", name, type(exc).__name__, exc_info=True)
            result = {"content": [{"type": "text", "text": f"tool {name!r} raised {_failure(exc)}"}], "isError": True}
        finally:
            with session.lock:
                session.calls.pop(request_id, None)
        if abort.is_set():
            return None  # cancelled: the spec says no response is sent
        if output_schema is not None and "structuredContent" in result and not result["isError"]:
            errors = [e.message for e in safe_validator_class(output_schema)(output_schema).iter_errors(
                result["structuredContent"])]
            if errors:
                return {"content": [{"type": "text", "text": "the tool's result does not match its outputSchema: "
                                     + scrub_secrets("; ".join(errors))[:2000]}], "isError": True}
        return result

    def _resources_list(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        with self._lock:
            entries = [r.listing() for r in self._resources.values()]
        return self._page(entries, params, "resources")

    def _templates_list(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        with self._lock:
            entries = [t.listing() for t in self._templates]
        return self._page(entries, params, "resourceTemplates")

    def _resources_read(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise Refusal(INVALID_PARAMS, "resources/read needs params.uri (a string)")
        bounded_text(uri, "params.uri", MAX_URI_CHARS)
        with self._lock:
            resource, templates = self._resources.get(uri), list(self._templates)

        def read() -> dict[str, Any] | None:
            if resource is not None:
                return {"contents": contents_of(uri, resource.read(), resource.mime_type)}
            for template in templates:
                values = template.match(uri)
                if values is not None:
                    return {"contents": contents_of(uri, template.read(uri, values), template.mime_type)}
            return None

        try:
            value, pending = self._asking("resources/read", uri, {}, request_id, params, context, read)
        except Refusal:
            raise
        except Exception as exc:
            logger.warning("reading resource %s raised %s", uri, type(exc).__name__, exc_info=True)
            raise Refusal(INTERNAL_ERROR, f"reading the resource failed: {_failure(exc)}") from None
        if pending is not None or value is not None:
            return pending if pending is not None else value
        # SEP-2164 (2026-07-28): -32602 with the URI; 2025-11-25: -32002
        raise Refusal(INVALID_PARAMS if context.modern_request is not None else RESOURCE_NOT_FOUND,
                      f"Resource not found: {uri}"[:300], {"uri": uri})

    def _prompts_list(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        with self._lock:
            entries = [p.listing() for p in self._prompts.values()]
        return self._page(entries, params, "prompts")

    def _prompts_get(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise Refusal(INVALID_PARAMS, "prompts/get needs params.name (a string) and params.arguments (an object)")
        if not all(isinstance(value, str) for value in arguments.values()):  # the schema: {[key: string]: string}
            raise Refusal(INVALID_PARAMS, "prompt arguments must be strings")
        with self._lock:
            prompt = self._prompts.get(name)
        if prompt is None:
            raise Refusal(INVALID_PARAMS, f"Unknown prompt: {name}"[:300])
        missing = prompt.missing(arguments)
        if missing:
            raise Refusal(INVALID_PARAMS, f"prompt {name!r} needs the arguments: {', '.join(missing)}"[:300])
        text_arguments = {str(k): v for k, v in arguments.items()}
        try:
            value, pending = self._asking("prompts/get", name, text_arguments, request_id, params, context,
                                          lambda: prompt.render(text_arguments))
            if pending is not None:
                return pending
            messages = messages_of(value)
        except Refusal:
            raise
        except Exception as exc:
            logger.warning("prompt %s raised %s", name, type(exc).__name__, exc_info=True)
            raise Refusal(INTERNAL_ERROR, f"rendering the prompt failed: {_failure(exc)}") from None
        result: dict[str, Any] = {"messages": messages}
        if prompt.description is not None:
            result["description"] = prompt.description
        return result

    def resource_updated(self, uri: str) -> int:
        """Tell the sessions subscribed to ``uri`` that it changed (``notifications/resources/updated``).

        Returns the number of sessions reached (those with an open stream: ``yiemagent.mcp.server.subscriptions``).
        """
        return self._subscriptions.updated(uri)

    def _subscribe(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise Refusal(INVALID_PARAMS, "resources/subscribe needs params.uri (a string)")
        bounded_text(uri, "params.uri", MAX_URI_CHARS)
        if not self._subscriptions.subscribe(context.session, uri):
            raise Refusal(INVALID_PARAMS, "too many subscriptions in this session")
        return {}

    def _unsubscribe(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise Refusal(INVALID_PARAMS, "resources/unsubscribe needs params.uri (a string)")
        bounded_text(uri, "params.uri", MAX_URI_CHARS)
        self._subscriptions.unsubscribe(context.session, uri)
        return {}

    def _set_level(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        context.session.log_level = named(params.get("level"), "level", tuple(LOG_LEVELS))
        return {}

    def _complete(self, request_id: Any, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        ref, argument = params.get("ref"), params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise Refusal(INVALID_PARAMS, "completion/complete needs params.ref and params.argument (objects)")
        named(ref.get("type"), "ref.type", ("ref/prompt", "ref/resource"))
        bounded_text(argument.get("name"), "argument.name", MAX_URI_CHARS)
        bounded_text(argument.get("value"), "argument.value", MAX_URI_CHARS)
        return {"completion": {"values": [], "hasMore": False}}

    _METHODS: ClassVar[dict[str, _Handler]] = {
        "initialize": _initialize, "ping": _ping, "server/discover": _discover, "tools/list": _tools_list,
        "tools/call": _tools_call,
        "resources/list": _resources_list, "resources/templates/list": _templates_list,
        "resources/read": _resources_read, "resources/subscribe": _subscribe, "resources/unsubscribe": _unsubscribe,
        "prompts/list": _prompts_list, "prompts/get": _prompts_get,
        "logging/setLevel": _set_level, "completion/complete": _complete,
    }

    def __repr__(self) -> str:
        return display_text(f"MCPServer({self.name!r}, tools={list(self._tools)})")


def _valid_id(request_id: Any) -> bool:
    return isinstance(request_id, (str, int)) and not isinstance(request_id, bool)
