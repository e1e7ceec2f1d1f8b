"""The transport's side of OAuth: hand a 401/403 to the flow with the request deadline's clock paused."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

import requests

from ...exceptions import MCPAuthorizationError, MCPError
from .challenge import parse_bearer_challenge

__all__ = ["reauthorize"]


class _Auth(Protocol):
    def handle_unauthorized(self, resource_url: str, response: requests.Response) -> bool: ...


class _Clock(Protocol):
    def pause(self) -> AbstractContextManager[None]: ...


def reauthorize(auth: _Auth | None, url: str, response: requests.Response, clock: _Clock, server: str,
                again: bool = False) -> bool:
    """Run ``auth``'s flow for a 401 (or 403) of ``url``; True: send the request once more.

    The clock of request deadlines stands still meanwhile (a user may be logging in). ``again``: the
    request was already sent once more after a flow; a 401 (or 403 ``insufficient_scope``) now is final.

    Raises:
        MCPAuthorizationError: the flow failed, or the server refused the new
            token too (``status_code`` is the server's 401/403, ``server`` the transport's name).
    """
    if auth is None or response.status_code not in (401, 403):
        return False
    if again:
        challenge = parse_bearer_challenge(response.headers.get("WWW-Authenticate"))
        if response.status_code == 401 or challenge.get("error") == "insufficient_scope":
            raise MCPAuthorizationError(
                f"{server} answered HTTP {response.status_code} again after a new token"
                + (f" ({challenge['error']})" if challenge.get("error") else ""),
                server=server, status_code=response.status_code)
        return False
    with clock.pause():
        try:
            return auth.handle_unauthorized(url, response)
        except MCPError as exc:
            exc.server = exc.server or server
            raise
