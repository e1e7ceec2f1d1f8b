"""Prompts and completion of an MCP server; a mixin of ``MCPClient``, and prompt messages as agent messages.

::

    client.list_prompts()        # [{"name", "title"?, "description"?, "arguments"?: [{"name", "required"?}]}]
    result = client.get_prompt("code_review", {"code": "x = 1"})
    # {"description"?: str, "messages": [{"role": "user", "content": {"type": "text", "text": "..."}}]}
    prompt_messages(result)      # [UserMessage(...), AssistantMessage(...)]
    client.complete({"type": "ref/prompt", "name": "code_review"}, {"name": "language", "value": "py"})
    # {"values": ["python", "pyret"], "total"?: int, "hasMore"?: bool}

``prompts/get`` and ``completion/complete`` go through the client's
``_request`` (so whatever the client's protocol era adds applies).

Spec: MCP 2025-11-25, "Server Features" / "Prompts" (``prompts/list``,
``prompts/get``, PromptMessage), "Utilities" / "Completion"
(``completion/complete``, ``ref/prompt``, ``ref/resource``), "Pagination".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._internal.checks import check_str
from ..exceptions import ConfigError, MCPProtocolError
from .client_arguments import string_arguments
from .tool_listing import Listing, list_all

if TYPE_CHECKING:
    from ..messages import AssistantMessage, ImageContent, TextContent, UserMessage

__all__ = ["PromptsMixin", "prompt_messages"]


class PromptsMixin:
    """``list_prompts``, ``get_prompt`` and ``complete`` of ``MCPClient`` (uses its ``_request``)."""

    # Provided by MCPClient (declared for type checkers).
    _request: Callable[..., dict[str, Any]]
    timeout_seconds: float
    max_pages: int
    list_deadline_seconds: float

    @property
    def name(self) -> str:  # pragma: no cover - MCPClient's own property is used
        """The server's short name (``MCPClient.name``)."""
        raise NotImplementedError

    def list_prompts(self, *, timeout_seconds: float | None = None) -> Listing:
        """Every prompt of the server, following ``nextCursor`` with the guards of ``list_tools``.

        Returns:
            A ``Listing`` (a list) of
            ``{"name": str, "title"?, "description"?,
            "arguments"?: [{"name": str, "description"?, "required"?: bool}],
            "icons"?}`` in server order, de-duplicated by name; ``.skipped``
            names the malformed items (no string ``name``, ``arguments`` not a
            list of named objects), each logged at WARNING, the others kept.

        Raises:
            MCPRPCError: a JSON-RPC error (e.g. -32601 from a server without prompts).
            MCPTimeoutError: the first page did not come in time.
            MCPError: the server could not be reached or its reply is unusable.

        Spec: MCP 2025-11-25, "Prompts" (Listing Prompts), "Pagination".
        """
        per_page = self.timeout_seconds if timeout_seconds is None else timeout_seconds

        def fetch_page(cursor: Any, timeout: float) -> dict[str, Any]:
            params = {"cursor": cursor} if cursor is not None else None
            return self._request("prompts/list", params, safe=True, timeout_seconds=timeout)

        return list_all(self, "prompts/list", fetch_page, per_page)

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None, *,
                   timeout_seconds: float | None = None) -> dict[str, Any]:
        """Get one prompt filled with ``arguments`` (``prompts/get``); safe to repeat.

        Args:
            name: the prompt's name from ``list_prompts``.
            arguments: ``{argument name: string value}`` (the spec's type; an
                int or float is sent as its text; None, bool, list or dict
                values are refused); None sends none.
            timeout_seconds: seconds the request may take; None uses the client's default.

        Returns:
            The prompt,
            ``{"description"?: str, "messages": [{"role": "user" | "assistant",
            "content": {"type": "text" | "image" | "audio" | "resource" |
            "resource_link", ...}}]}``; ``prompt_messages(result)`` makes agent
            messages of it. A 2026-07-28 server's result also has
            ``resultType`` and may have ``_meta`` (kept as sent).

        Raises:
            ConfigError: ``name`` is not a non-empty str, ``arguments`` not a
                dict of str to str (e.g. a list of pairs, or a None value);
                nothing is sent.
            MCPRPCError: e.g. ``code`` -32602 for an unknown prompt or a missing required argument
                (also in the body of an HTTP 4xx).
            MCPProtocolError: the result has no ``messages`` list.
            MCPTimeoutError, MCPTransportError: as for every request.

        Spec: MCP 2025-11-25, "Prompts" (Getting a Prompt).
        """
        check_str("name", name, empty=False)
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = string_arguments("arguments", arguments)
        result = self._request("prompts/get", params, safe=True, timeout_seconds=timeout_seconds)
        if not isinstance(result.get("messages"), list):
            raise MCPProtocolError(f"{self.name}: prompts/get {name!r} answered no 'messages' list",
                                   server=self.name, body=repr(result)[:200])
        return result

    def complete(self, ref: Mapping[str, Any], argument: Mapping[str, str], context: Mapping[str, str] | None = None,
                 *, timeout_seconds: float | None = None) -> dict[str, Any]:
        """Ask the server to complete one argument (``completion/complete``).

        Args:
            ref: ``{"type": "ref/prompt", "name": <prompt name>}`` or
                ``{"type": "ref/resource", "uri": <URI or URI template>}``.
            argument: ``{"name": <argument name>, "value": <what is typed so far>}``.
            context: arguments already resolved, ``{name: value}``; sent as
                ``context.arguments``.
            timeout_seconds: seconds the request may take; None uses the client's default.

        Returns:
            ``{"values": [str, ...] (at most 100), "total"?: int, "hasMore"?: bool}``.

        Raises:
            ConfigError (a ValueError): ``ref`` is neither kind, ``argument``
                lacks ``name``/``value``, or ``context`` is not a dict of str to str.
            MCPRPCError: e.g. -32601 when the server has no ``completions`` capability.
            MCPProtocolError: the result has no ``completion.values`` list.

        Spec: MCP 2025-11-25, "Utilities" / "Completion".
        """
        kind = ref.get("type") if isinstance(ref, Mapping) else None
        if not isinstance(argument, Mapping):
            raise ConfigError(f"argument must be {{'name': str, 'value': str}}, not {type(argument).__name__}")
        if not ((kind == "ref/prompt" and isinstance(ref.get("name"), str))
                or (kind == "ref/resource" and isinstance(ref.get("uri"), str))):
            raise ConfigError(f"ref must be {{'type': 'ref/prompt', 'name'}} or {{'type': 'ref/resource', 'uri'}}: "
                             f"{ref!r:.200}")
        if not (isinstance(argument.get("name"), str) and isinstance(argument.get("value"), str)):
            raise ConfigError(f"argument must be {{'name': str, 'value': str}}: {dict(argument)!r:.200}")
        params: dict[str, Any] = {"ref": dict(ref), "argument": {"name": argument["name"], "value": argument["value"]}}
        if context:
            params["context"] = {"arguments": string_arguments("context", context)}
        result = self._request("completion/complete", params, safe=True, timeout_seconds=timeout_seconds)
        completion = result.get("completion")
        if not (isinstance(completion, dict) and isinstance(completion.get("values"), list)):
            raise MCPProtocolError(f"{self.name}: completion/complete answered no 'completion.values' list",
                                   server=self.name, body=repr(result)[:200])
        completion["values"] = [str(value) for value in completion["values"]][:100]
        return completion


def prompt_messages(result: Mapping[str, Any]) -> list[UserMessage | AssistantMessage]:
    """The ``messages`` of a ``prompts/get`` result as agent messages, in order.

    Each ``{"role", "content"}`` becomes a ``UserMessage`` (role ``"user"``;
    text, images, embedded resources and resource links as content parts, see
    ``yiemagent.mcp.content_part``) or an ``AssistantMessage`` (role
    ``"assistant"``; its parts as text, since an assistant message carries no
    images). A message with another role or no content is skipped. Text from
    the server reaches the model through the same outbound text policy as
    tool results (``yiemagent.textpolicy``, ``json`` boundary).

    Spec: MCP 2025-11-25, "Prompts" (PromptMessage).
    """
    from ..messages import AssistantMessage, TextContent, UserMessage  # here: listing tools needs no messages
    from .results import content_part

    out: list[UserMessage | AssistantMessage] = []
    for message in result.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content] if isinstance(content, dict) else []
        parts: list[TextContent | ImageContent] = [content_part(block) for block in blocks]
        if not parts:
            continue
        if message.get("role") == "user":
            out.append(UserMessage(content=parts))
        elif message.get("role") == "assistant":
            text = "\n".join(p.text if isinstance(p, TextContent) else p.placeholder() for p in parts)
            out.append(AssistantMessage(content=text))
    return out
