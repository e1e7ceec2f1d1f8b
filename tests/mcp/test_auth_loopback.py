"""LoopbackRedirectHandler driven by a real HTTP client (requests) playing the browser's redirect."""

from __future__ import annotations

import io
import logging
import socket
import threading
import urllib.parse
from typing import Any

import pytest
import requests

from yiemagent.mcp.auth.loopback import LoopbackRedirectHandler, RedirectError, loopback_redirect_handler

AUTHORIZE = "https://as.example.com/authorize?response_type=code&client_id=c&state={state}&code_challenge=x"
CODE = "code-SENTINEL-7d2a"


class _Screen(io.StringIO):
    """The terminal: ``shown`` is set once the URL is printed (the server listens from then on)."""

    def __init__(self) -> None:
        super().__init__()
        self.shown = threading.Event()

    def write(self, text: str) -> int:
        n = super().write(text)
        if "http" in text:
            self.shown.set()
        return n


def _run(handler: LoopbackRedirectHandler, url: str) -> tuple[threading.Thread, dict[str, Any]]:
    """Start the login in a thread; return once the URL is shown (as a user would)."""
    box: dict[str, Any] = {}
    screen = _Screen()
    handler.output = screen

    def target() -> None:
        try:
            box["result"] = handler(url)
        except Exception as exc:  # what the test inspects
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    assert screen.shown.wait(10)
    return thread, box


def _callback(handler: LoopbackRedirectHandler, **query: str) -> requests.Response:
    return requests.get(handler.redirect_uri + "?" + urllib.parse.urlencode(query), timeout=10)


def test_code_and_state_come_back_and_the_server_stops(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    handler = loopback_redirect_handler(timeout_seconds=20)
    assert handler.redirect_uri == f"http://127.0.0.1:{handler.port}/callback"
    thread, box = _run(handler, AUTHORIZE.format(state="s-123"))
    out = handler.output
    assert isinstance(out, io.StringIO)
    assert requests.get(f"http://127.0.0.1:{handler.port}/favicon.ico", timeout=10).status_code == 404
    answer = _callback(handler, code=CODE, state="s-123", iss="https://as.example.com")
    thread.join(timeout=20)
    assert handler.iss == "https://as.example.com"  # RFC 9207: kept for the caller's issuer check
    assert answer.status_code == 200 and "Login complete" in answer.text
    assert box == {"result": (CODE, "s-123")}
    assert AUTHORIZE.format(state="s-123") in out.getvalue()
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("yiemagent")]  # urllib3's are the browser's
    assert not any(CODE in line for line in ours) and CODE not in out.getvalue()
    with pytest.raises(requests.ConnectionError):  # nothing listens once the login is done
        _callback(handler, code="late", state="s-123")


def test_opencode_30888_state_mismatch_is_refused_and_the_login_goes_on() -> None:
    """anomalyco/opencode#30888: a redirect with a state this login did not send (another process's,
    an old tab's) showed a CSRF error and ended the login. Here it gets 400 and the real one still counts.
    """
    handler = LoopbackRedirectHandler(timeout_seconds=20, output=io.StringIO())
    thread, box = _run(handler, AUTHORIZE.format(state="mine"))
    forged = _callback(handler, code="attacker-code", state="theirs")
    assert forged.status_code == 400 and "state mismatch" in forged.text
    assert _callback(handler, code=CODE, state="mine").status_code == 200
    thread.join(timeout=20)
    assert box == {"result": (CODE, "mine")}


def test_opencode_30888_callback_port_in_use_fails_clearly() -> None:
    """anomalyco/opencode#30888 / PR #30889: with the callback port taken the login silently waited on a
    callback landing in another process. Here binding fails at once with a RedirectError naming the port.
    """
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(RedirectError, match=str(port)) as caught:
            LoopbackRedirectHandler(port)
        assert isinstance(caught.value.__cause__, OSError)
    finally:
        taken.close()


def test_hermes_agent_99503_redirect_uri_names_the_port_that_listens_on_every_login(free_port: int) -> None:
    """NousResearch/hermes-agent#99503: the listener bound an ephemeral port while the authorization URL
    advertised the configured one, so every approval was lost. Here a fixed port is the redirect_uri's,
    and a second login (after the first closed the server) listens on the same port again.
    """
    handler = LoopbackRedirectHandler(free_port, timeout_seconds=20, output=io.StringIO())
    assert urllib.parse.urlsplit(handler.redirect_uri).port == free_port
    for state in ("first", "second"):
        thread, box = _run(handler, AUTHORIZE.format(state=state))
        assert _callback(handler, code=CODE, state=state).status_code == 200
        thread.join(timeout=20)
        assert box == {"result": (CODE, state)}


def test_access_denied_is_a_redirect_error_with_the_error_code() -> None:
    handler = LoopbackRedirectHandler(timeout_seconds=20, output=io.StringIO())
    thread, box = _run(handler, AUTHORIZE.format(state="s"))
    answer = _callback(handler, error="access_denied", error_description="user said no", state="s")
    thread.join(timeout=20)
    assert answer.status_code == 400
    error = box["error"]
    assert isinstance(error, RedirectError) and error.error == "access_denied"
    assert "user said no" in str(error)


def test_no_redirect_within_the_deadline() -> None:
    handler = LoopbackRedirectHandler(timeout_seconds=0.3, output=io.StringIO())
    with pytest.raises(RedirectError, match=r"within 0\.3 s"):
        handler(AUTHORIZE.format(state="s"))


def test_never_opens_a_browser_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url) or True)
    for open_browser in (False, True):
        handler = LoopbackRedirectHandler(timeout_seconds=20, output=io.StringIO(), open_browser=open_browser)
        thread, _ = _run(handler, AUTHORIZE.format(state="s"))
        _callback(handler, code=CODE, state="s")
        thread.join(timeout=20)
    assert opened == [AUTHORIZE.format(state="s")]


def test_hermes_agent_99503_an_oauth_redirect_uri_on_another_port_is_refused(free_port: int) -> None:
    """The handler learns OAuth's redirect_uri before each login: one naming another port (or path) is a
    RedirectError, not a login that waits where the browser is never sent.
    """
    handler = LoopbackRedirectHandler(free_port, output=io.StringIO())
    handler.redirect_uri = f"http://localhost:{free_port}/callback"  # the same place: accepted
    for wrong in (f"http://127.0.0.1:{free_port + 1}/callback", f"http://127.0.0.1:{free_port}/other",
                  f"https://127.0.0.1:{free_port}/callback", f"http://evil.example.com:{free_port}/callback"):
        with pytest.raises(RedirectError, match="not where the login is awaited"):
            handler.redirect_uri = wrong
    handler.close()
