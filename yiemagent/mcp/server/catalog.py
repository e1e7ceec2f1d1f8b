"""What a server offers besides tools: resources, resource templates and prompts.

Shapes on the wire (``resources/list``, ``resources/templates/list``, ``prompts/list``)::

    resource   {"uri", "name", "title"?, "description"?, "mimeType"?}
    template   {"uriTemplate", "name", "title"?, "description"?, "mimeType"?}
    prompt     {"name", "title"?, "description"?, "arguments": [{"name", "description"?, "required"}]}

What a reader returns becomes ``resources/read``'s ``contents``: ``str`` -> one
``{"uri", "mimeType", "text"}``, ``bytes`` -> one ``{"uri", "mimeType", "blob"}``
(base64), a list of dicts -> those contents as given. What a prompt's ``render``
returns becomes ``prompts/get``'s ``messages``: ``str`` -> one user text message,
a list -> messages as given (``{"role", "content": <content block>}``).

Templates match RFC 6570 level 1 (``{name}`` stands for one or more characters
other than ``/``); the reader gets the URI and the values by name.

Spec: MCP 2025-11-25, "Resources" (Listing, Reading, Resource Templates),
"Prompts" (Listing, Getting a Prompt); RFC 6570.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...exceptions import ConfigError

__all__ = ["Prompt", "PromptArgument", "Resource", "ResourceTemplate", "contents_of", "messages_of"]

_VARIABLE = re.compile(r"\{([A-Za-z0-9_]+)\}")


def _described(entry: dict[str, Any], title: str | None, description: str | None,
               mime_type: str | None = None) -> dict[str, Any]:
    if title is not None:
        entry["title"] = title
    if description is not None:
        entry["description"] = description
    if mime_type is not None:
        entry["mimeType"] = mime_type
    return entry


@dataclass
class Resource:
    """A resource at a fixed ``uri``; ``read()`` gives its contents (``str``, ``bytes`` or content dicts).

    Raises:
        ConfigError: ``uri`` or ``name`` empty, ``read`` not callable.
    """

    uri: str
    name: str
    read: Callable[[], Any] = field(repr=False, compare=False)
    description: str | None = None
    mime_type: str | None = "text/plain"
    title: str | None = None

    def __post_init__(self) -> None:
        if not self.uri or not self.name or not callable(self.read):
            raise ConfigError(f"resource {self.uri!r}: uri and name must be non-empty and read callable")

    def listing(self) -> dict[str, Any]:
        """The entry of ``resources/list``."""
        return _described({"uri": self.uri, "name": self.name}, self.title, self.description, self.mime_type)


@dataclass
class ResourceTemplate:
    """Resources whose URIs match ``uri_template`` (``test://items/{id}``); ``read(uri, values)`` reads one.

    Raises:
        ConfigError: the template has no ``{variable}``, or ``read`` is not callable.
    """

    uri_template: str
    name: str
    read: Callable[[str, dict[str, str]], Any] = field(repr=False, compare=False)
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None

    def __post_init__(self) -> None:
        if not _VARIABLE.search(self.uri_template) or not callable(self.read):
            raise ConfigError(f"resource template {self.uri_template!r}: needs a {{variable}} and a callable read")
        pattern = ""
        last = 0
        for found in _VARIABLE.finditer(self.uri_template):
            pattern += re.escape(self.uri_template[last:found.start()]) + f"(?P<{found.group(1)}>[^/]+)"
            last = found.end()
        self._pattern = re.compile(pattern + re.escape(self.uri_template[last:]) + r"\Z")

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables' values when ``uri`` matches the template, else None."""
        found = self._pattern.match(uri)
        return None if found is None else found.groupdict()

    def listing(self) -> dict[str, Any]:
        """The entry of ``resources/templates/list``."""
        return _described({"uriTemplate": self.uri_template, "name": self.name}, self.title, self.description,
                          self.mime_type)


@dataclass
class PromptArgument:
    """One argument of a prompt (its values are strings)."""

    name: str
    description: str | None = None
    required: bool = False

    def listing(self) -> dict[str, Any]:
        """The entry of the prompt's ``arguments``."""
        return _described({"name": self.name, "required": self.required}, None, self.description)


@dataclass
class Prompt:
    """A prompt template: ``render(arguments)`` gives its messages (``str``: one user text message).

    Raises:
        ConfigError: empty ``name`` or ``render`` not callable.
    """

    name: str
    render: Callable[[dict[str, str]], Any] = field(repr=False, compare=False)
    description: str | None = None
    arguments: list[PromptArgument] = field(default_factory=list)
    title: str | None = None

    def __post_init__(self) -> None:
        if not self.name or not callable(self.render):
            raise ConfigError(f"prompt {self.name!r}: name must be non-empty and render callable")

    def listing(self) -> dict[str, Any]:
        """The entry of ``prompts/list``."""
        return _described({"name": self.name, "arguments": [a.listing() for a in self.arguments]}, self.title,
                          self.description)

    def missing(self, arguments: dict[str, Any]) -> list[str]:
        """The required arguments ``arguments`` lacks."""
        return [a.name for a in self.arguments if a.required and a.name not in arguments]


def contents_of(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """``resources/read`` ``contents`` for what a reader returned (rules in the module docstring).

    Raises:
        TypeError: a value of another type.
    """
    if isinstance(value, str):
        return [_described({"uri": uri, "text": value}, None, None, mime_type or "text/plain")]
    if isinstance(value, (bytes, bytearray)):
        blob = base64.b64encode(bytes(value)).decode("ascii")
        return [_described({"uri": uri, "blob": blob}, None, None, mime_type or "application/octet-stream")]
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return list(value)
    raise TypeError(f"a resource reader returned {type(value).__name__}, not str, bytes or a list of contents")


def messages_of(value: Any) -> list[dict[str, Any]]:
    """``prompts/get`` ``messages`` for what ``render`` returned.

    Raises:
        TypeError: a value of another type.
    """
    if isinstance(value, str):
        return [{"role": "user", "content": {"type": "text", "text": value}}]
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return list(value)
    raise TypeError(f"a prompt's render returned {type(value).__name__}, not str or a list of messages")
