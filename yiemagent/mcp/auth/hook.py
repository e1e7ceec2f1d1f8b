"""The transport's side of OAuth: hand a 401/403 to the flow with the request deadline's clock paused."""

from __future__ import annotations

from typing import Protocol

import requests

from ...exceptions import MCPError

__all__ = ["reauthorize"]


class _Auth(Protocol):
    def handle_unauthorized(self, resource_url: str, response: requests.Response) -> bool: ...


class _Clock(Protocol):
    def pause(self) -> "_Pause": ...


class _Pause(Protocol):
    def __enter__(self) -> object: ...

    def __exit__(self, *exc: object) -> bool | None: ...


def reauthorize(auth: _Auth | None, url: str, response: requests.Response, clock: _Clock, server: str) -> bool:
    """Run ``auth``'s flow for a 401 (or 403) of ``url``; True: send the request once more.

    The clock of request deadlines stands still meanwhile (a user may be logging in).

    Raises:
        MCPAuthorizationError: the flow failed (``status_code`` is the server's
            401/403, ``server`` the transport's name).
    """
    if auth is None or response.status_code not in (401, 403):
        return False
    with clock.pause():
        try:
            return auth.handle_unauthorized(url, response)
        except MCPError as exc:
            exc.server = exc.server or server
            raise
