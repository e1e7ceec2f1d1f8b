"""A redirect handler without a browser: for tests, conformance and servers that log in without a user.

``HeadlessRedirectHandler()(authorization_url)`` GETs the authorization URL
with ``requests`` (an authorization server that logs in without a page, as
test servers do), follows redirects on the authorization server's side, and
stops at the first redirect to the client's ``redirect_uri``: it is never
fetched; ``code`` and ``state`` are read from its ``Location`` (with ``iss``, RFC 9207). An
``error`` there (RFC 6749 §4.1.2.1) raises ``MCPAuthorizationError`` with the
error code and description (never the code or state).
"""

from __future__ import annotations

import urllib.parse

import requests

from ..._internal.checks import check_number
from ...exceptions import MCPAuthorizationError

__all__ = ["HeadlessRedirectHandler"]

_MAX_REDIRECTS = 10


class HeadlessRedirectHandler:
    """Follow the authorization URL with ``requests`` and read ``(code, state)`` from the redirect.

    Args:
        timeout_seconds: seconds each HTTP request may take.
        session: the ``requests.Session`` to use (cookies of a login page); None makes one.
        headers: extra headers on the requests to the authorization server (e.g. a test login).
    """

    def __init__(self, *, timeout_seconds: float = 30.0, session: requests.Session | None = None,
                 headers: dict[str, str] | None = None) -> None:
        check_number("timeout_seconds", timeout_seconds)
        self.timeout_seconds = timeout_seconds
        self._session = session or requests.Session()
        self._headers = dict(headers or {})
        self.redirect_uri: str | None = None
        """Set by ``OAuth`` before the call: a redirect to a URL starting with it ends the walk."""

    def __repr__(self) -> str:
        return "HeadlessRedirectHandler()"

    def __call__(self, authorization_url: str) -> tuple[str, str | None, str | None]:
        """The ``(code, state, iss)`` the authorization server sends to the redirect URI (``iss``: RFC 9207).

        Raises:
            MCPAuthorizationError: the authorization server answered an error
                status or a page instead of redirecting, redirected more than
                10 times, or sent ``error`` to the redirect URI.
        """
        url = authorization_url
        for _ in range(_MAX_REDIRECTS):
            try:
                response = self._session.get(url, headers=self._headers, allow_redirects=False,
                                             timeout=self.timeout_seconds)
            except requests.RequestException as exc:
                raise MCPAuthorizationError(
                    f"the authorization request failed: {type(exc).__name__}") from None
            with response:
                location = response.headers.get("Location")
                if not (300 <= response.status_code < 400 and location):
                    raise MCPAuthorizationError(
                        f"the authorization server answered HTTP {response.status_code} instead of a redirect "
                        "to the redirect URI (a login page needs a browser: use an interactive redirect handler)")
            target = urllib.parse.urljoin(url, location)
            query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(target).query))
            final = self._is_redirect_uri(target) if self.redirect_uri else ("code" in query or "error" in query)
            if final:
                if "error" in query:
                    description = query.get("error_description", "")
                    raise MCPAuthorizationError(
                        f"the authorization server refused: {query['error']}"
                        + (f" ({description[:200]})" if description else ""))
                if not query.get("code"):
                    raise MCPAuthorizationError("the redirect to the redirect URI has no code")
                return query["code"], query.get("state"), query.get("iss")
            url = target
        raise MCPAuthorizationError(f"the authorization server redirected more than {_MAX_REDIRECTS} times")

    def _is_redirect_uri(self, url: str) -> bool:
        if not self.redirect_uri:
            return False
        return url.split("?", 1)[0].split("#", 1)[0] == self.redirect_uri.split("?", 1)[0]
