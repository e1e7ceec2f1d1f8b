"""A loopback redirect handler: the CLI's way to receive the OAuth authorization code.

``loopback_redirect_handler()`` binds an HTTP server on ``127.0.0.1`` (RFC 8252
section 7.3, "loopback interface redirection"; the MCP authorization spec asks
for ``http://127.0.0.1`` or ``localhost`` redirect URIs for native clients) and
gives its ``redirect_uri``. Called with the authorization URL it prints the
URL (it opens no browser unless ``open_browser=True``), serves the callback in
a thread, waits at most ``timeout_seconds``, answers the browser with a small
page and returns ``(code, state)``.

Checks: only ``GET <path>`` is the callback (other paths get 404); a callback
whose ``state`` differs from the ``state`` of the authorization URL gets 400
and is ignored (an old tab, or a forged request: RFC 6749 section 10.12), the
wait goes on; a callback carrying ``error`` (e.g. ``access_denied``) ends the
wait with ``RedirectError``. The request line (it holds the code) is never
logged.
"""

from __future__ import annotations

import html
import http.server
import logging
import sys
import threading
import urllib.parse
import webbrowser
from typing import Any, TextIO

from ..._internal.checks import check_int, check_number
from ...exceptions import YiemagentError

__all__ = ["LoopbackRedirectHandler", "RedirectError", "check_redirect_uri", "loopback_redirect_handler"]

logger = logging.getLogger("yiemagent.mcp.auth")

_PAGE = ("<!doctype html><html><head><meta charset='utf-8'><title>yiemagent</title></head>"
         "<body><p>{}</p></body></html>")


class RedirectError(YiemagentError):
    """The authorization redirect failed.

    Raised when the port cannot be bound (in use), no callback with the right
    ``state`` arrived within ``timeout_seconds``, or the authorization server
    redirected with an ``error`` (``error`` and ``error_description`` are attributes).
    """

    def __init__(self, message: str, *, error: str | None = None, error_description: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.error_description = error_description


class LoopbackRedirectHandler:
    """``RedirectHandler``: ``handler(authorization_url) -> (code, state)`` through a loopback HTTP server.

    Args:
        port: the TCP port on 127.0.0.1; ``0`` picks a free one when constructed (the port
            is then kept for every later login: it is part of the registered ``redirect_uri``).
        path: the callback path of ``redirect_uri``.
        timeout_seconds: the longest one login waits for the browser's redirect.
        open_browser: also open the URL with ``webbrowser`` (never done unless asked).
        output: where the URL is printed (default ``sys.stderr``).

    Raises:
        RedirectError: ``port`` cannot be bound (at construction and when a later login rebinds it).

    Pass ``redirect_uri=handler.redirect_uri`` and ``redirect_handler=handler`` to ``OAuth``.
    """

    def __init__(self, port: int = 0, *, path: str = "/callback", timeout_seconds: float = 300.0,
                 open_browser: bool = False, output: TextIO | None = None) -> None:
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', not {path!r}")
        check_number("timeout_seconds", timeout_seconds)
        check_int("port", port, minimum=0)
        self.path = path
        self.timeout_seconds = timeout_seconds
        self.open_browser = open_browser
        self.output = output
        self.iss: str | None = None
        """The ``iss`` parameter of the last redirect (RFC 9207), for the caller to check; None if absent."""
        self._server: http.server.ThreadingHTTPServer | None = None
        self._lock = threading.Lock()
        self._bind(port)
        assert self._server is not None
        self.port: int = self._server.server_address[1]

    @property
    def redirect_uri(self) -> str:
        """``http://127.0.0.1:<port><path>``: the redirect URI to register and send.

        Set by ``OAuth`` to its own ``redirect_uri``: accepted when it names this port and path
        (host ``127.0.0.1``, ``localhost`` or ``[::1]``), else ``RedirectError`` (the login would
        wait on a port the browser is never sent to).
        """
        return f"http://127.0.0.1:{self.port}{self.path}"

    @redirect_uri.setter
    def redirect_uri(self, uri: str) -> None:
        check_redirect_uri(uri, self.port, self.path)

    def __repr__(self) -> str:
        return f"LoopbackRedirectHandler({self.redirect_uri!r})"

    def _bind(self, port: int) -> None:
        try:
            self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _CallbackRequest)
        except OSError as exc:
            raise RedirectError(f"cannot listen on 127.0.0.1:{port} for the OAuth redirect: {exc.strerror} "
                                "(is another login running? pick another --callback-port)") from exc
        self._server.daemon_threads = True
        self._server.callback_lock = threading.Lock()  # type: ignore[attr-defined]

    def close(self) -> None:
        """Stop listening (a later login binds the same port again)."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.server_close()

    def __enter__(self) -> LoopbackRedirectHandler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, authorization_url: str) -> tuple[str, str | None]:
        """Show ``authorization_url``, wait for the redirect, return ``(code, state)``.

        Raises:
            RedirectError: see the class.
        """
        expected = urllib.parse.parse_qs(urllib.parse.urlsplit(authorization_url).query).get("state", [None])[0]
        with self._lock:
            if self._server is None:
                self._bind(self.port)
            server = self._server
        assert server is not None
        outcome: dict[str, Any] = {"rejected": 0}
        done = threading.Event()
        server.callback = (self.path, expected, outcome, done)  # type: ignore[attr-defined]
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                  name="yiemagent-oauth-redirect", daemon=True)
        thread.start()
        try:
            out = self.output if self.output is not None else sys.stderr
            print(f"Open this URL in a browser to log in:\n{authorization_url}", file=out, flush=True)
            if self.open_browser:
                try:
                    webbrowser.open(authorization_url)
                except Exception:  # no browser here: the printed URL is enough
                    logger.debug("webbrowser.open failed", exc_info=True)
            if not done.wait(self.timeout_seconds):
                rejected = outcome["rejected"]
                extra = f" ({rejected} callback(s) with a wrong state ignored)" if rejected else ""
                raise RedirectError(f"no OAuth redirect to {self.redirect_uri} within "
                                    f"{self.timeout_seconds:g} s{extra}")
        finally:
            server.shutdown()
            thread.join(timeout=5)
            self.close()
        if "error" in outcome:
            error, description = outcome["error"], outcome.get("error_description")
            raise RedirectError(f"the authorization server refused: {error}"
                                + (f" ({description})" if description else ""),
                                error=error, error_description=description)
        self.iss = outcome.get("iss")
        return outcome["code"], outcome["state"]


class _CallbackRequest(http.server.BaseHTTPRequestHandler):
    timeout = 10  # a connection that sends nothing is dropped
    server_version = "yiemagent"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # the request line holds the code: never log it
        pass

    def _answer(self, status: int, text: str) -> None:
        body = _PAGE.format(html.escape(text)).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path, expected, outcome, done = self.server.callback  # type: ignore[attr-defined]
        parts = urllib.parse.urlsplit(self.path)
        if parts.path != path:
            self._answer(404, "Not found.")
            return
        query = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query, keep_blank_values=True).items()}
        with self.server.callback_lock:  # type: ignore[attr-defined]
            self._callback(query, expected, outcome, done)

    def _callback(self, query: dict[str, str], expected: str | None, outcome: dict[str, Any],
                  done: threading.Event) -> None:
        state = query.get("state")
        if done.is_set():
            self._answer(409, "This login is already finished; you may close this tab.")
            return
        if expected is not None and state != expected:
            outcome["rejected"] += 1
            logger.warning("ignored an OAuth redirect whose state does not match this login")
            self._answer(400, "This login link is stale or forged (state mismatch); start the login again.")
            return
        if "error" in query:
            outcome["error"] = query["error"]
            outcome["error_description"] = query.get("error_description")
            self._answer(400, f"Login failed: {query['error']}. You may close this tab.")
        elif query.get("code"):
            outcome["code"], outcome["state"], outcome["iss"] = query["code"], state, query.get("iss")
            self._answer(200, "Login complete. You may close this tab and return to yiemagent.")
        else:
            self._answer(400, "The redirect carries no code.")
            return
        done.set()


def check_redirect_uri(uri: str, port: int, path: str) -> None:
    """Raise ``RedirectError`` unless ``uri`` is a loopback http URI on ``port`` with ``path``."""
    parts = urllib.parse.urlsplit(uri)
    try:
        uri_port = parts.port
    except ValueError:
        uri_port = None
    if (parts.scheme, parts.hostname, uri_port, parts.path or "/") != ("http", parts.hostname, port, path) or \
            parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise RedirectError(f"the redirect URI {uri!r} is not where the login is awaited "
                            f"(http://127.0.0.1:{port}{path}); give OAuth redirect_uri=handler.redirect_uri")


def loopback_redirect_handler(port: int = 0, *, timeout_seconds: float = 300.0, open_browser: bool = False,
                              path: str = "/callback", output: TextIO | None = None) -> LoopbackRedirectHandler:
    """A ``LoopbackRedirectHandler`` bound now (so ``.redirect_uri`` names its port); see the class."""
    return LoopbackRedirectHandler(port, path=path, timeout_seconds=timeout_seconds, open_browser=open_browser,
                                   output=output)
