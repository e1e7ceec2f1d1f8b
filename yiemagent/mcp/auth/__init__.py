"""OAuth 2.1 for MCP servers over HTTP: ``MCPClient(url, auth=OAuth(...))``.

The transport asks ``OAuth.headers(url)`` before each request (the bearer
token, refreshed shortly before it expires) and hands a 401 (or a 403 with
``error="insufficient_scope"``) to ``OAuth.handle_unauthorized``, which runs
the flow and says whether to send the request again (once).

The flow (MCP 2025-11-25 and 2026-07-28, "Authorization"): the
``WWW-Authenticate`` challenge (``challenge``), Protected Resource Metadata
(RFC 9728) and authorization server metadata (RFC 8414, OpenID Connect
discovery; ``discovery``), the client's identity (pre-registered, a Client ID
Metadata Document, or Dynamic Client Registration RFC 7591;
``registration``), the authorization code grant with PKCE S256, ``state``,
``iss`` (RFC 9207) and ``resource`` (RFC 8707), or ``client_credentials``
(``tokens``), token storage (``storage``), and a redirect handler that lets
the user log in (``headless`` for tests and conformance).

Package layout: ``oauth`` (the ``OAuth`` class: the flow), ``challenge``,
``discovery``, ``registration``, ``tokens``, ``storage``, ``headless``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._internal.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from .headless import HeadlessRedirectHandler
    from .oauth import OAuth
    from .storage import MemoryTokenStorage, RedirectHandler, TokenStorage

_EXPORTS = {
    "HeadlessRedirectHandler": ".headless",
    "OAuth": ".oauth",
    "MemoryTokenStorage": ".storage",
    "RedirectHandler": ".storage",
    "TokenStorage": ".storage",
}

__all__ = ["HeadlessRedirectHandler", "MemoryTokenStorage", "OAuth", "RedirectHandler", "TokenStorage"]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)  # each name on first use (PEP 562)
