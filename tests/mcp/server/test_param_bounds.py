"""What a client sends in params is bounded and fails closed (issue 33 points 2 and 4, hidden rule: every parser).

Hostile shapes no real client sends, over raw HTTP (``requests``) to the real app on werkzeug's threaded
server: a pagination cursor of 5,000 digits (``int()`` of it raised inside the handler: a -32603 "internal
error" instead of -32602), a resource URI of 1 MB (echoed into errors and subscriptions), a ``progressToken``
of 1 MB (echoed in every progress notification of the call: 1,000 buffered notifications held a GB), a
``logging/setLevel`` level or 2026-07-28 ``_meta`` logLevel that is not a level (the modern one was silently
dropped: fail closed, with the nearest name), ``completion/complete`` with no ``ref`` (answered as valid),
and an elicitation answer whose action is a typo. Each: a clean JSON-RPC error, and another client still
served. Named after MongLong0214/logic-pro-mcp #218 (an invalid cursor must be -32602, not ignored or a 500).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.mcp.server.kit import build, serving
from yiemagent.mcp.server.inputs import InvalidInputResponse, check_answer, elicitation_request, roots_request

pytestmark = pytest.mark.slow  # a server on a socket

ACCEPT = "application/json, text/event-stream"
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving(build().wsgi_app()) as served:
        yield served


def session(url: str) -> dict[str, str]:
    """Headers of a fresh 2025-11-25 session."""
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    answer = requests.post(url, headers=headers, timeout=30, data=json.dumps({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
    assert answer.status_code == 200
    headers.update({"Mcp-Session-Id": answer.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"})
    requests.post(url, headers=headers, timeout=30, data=json.dumps({"jsonrpc": "2.0",
                                                                     "method": "notifications/initialized"}))
    return headers


def rpc(url: str, headers: dict[str, str], method: str, params: dict[str, Any]) -> Any:
    answer = requests.post(url, headers=headers, timeout=30,
                           data=json.dumps({"jsonrpc": "2.0", "id": 4, "method": method, "params": params}))
    return answer


def served_still(url: str) -> None:
    """Another client is served."""
    answer = rpc(url, session(url), "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert answer.status_code == 200 and answer.json()["result"]["content"][0]["text"] == "5"


@pytest.mark.parametrize(("method", "params", "says"), [
    ("tools/list", {"cursor": "9" * 5000}, "invalid cursor"),
    ("resources/list", {"cursor": "1" * 100}, "invalid cursor"),
    ("resources/read", {"uri": "memo://" + "x" * 1_000_000}, "longer than"),
    ("resources/subscribe", {"uri": "memo://" + "x" * 1_000_000}, "longer than"),
    ("logging/setLevel", {"level": "warn"}, "did you mean 'warning'"),
    ("logging/setLevel", {"level": {"nested": ["x"]}}, "level must be one of"),
    ("completion/complete", {}, "needs params.ref"),
    ("completion/complete", {"ref": {"type": "ref/promt", "name": "greet"}, "argument": {"name": "who", "value": "a"}},
     "did you mean 'ref/prompt'"),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                             "argument": {"name": "who", "value": "a" * 100_000}}, "longer than"),
    ("tools/call", {"name": "steps", "arguments": {"count": 2}, "_meta": {"progressToken": "t" * 1_000_000}},
     "progressToken is longer than"),
])
def test_logic_pro_mcp_218_params_past_their_bounds_are_refused_cleanly(
        url: str, method: str, params: dict[str, Any], says: str) -> None:
    answer = rpc(url, session(url), method, params)
    assert answer.status_code == 200, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == -32602 and says in error["message"], error
    assert len(answer.content) < 2000  # nothing the client sent is echoed back whole
    served_still(url)


def test_a_modern_log_level_that_is_not_one_fails_closed_with_the_nearest(url: str) -> None:
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call", "Mcp-Name": "add"}
    meta = {**META, "io.modelcontextprotocol/logLevel": "debgu"}
    answer = rpc(url, headers, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": meta})
    assert answer.status_code == 400 and "did you mean 'debug'" in answer.json()["error"]["message"]
    meta["io.modelcontextprotocol/logLevel"] = "debug"
    answer = rpc(url, headers, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": meta})
    assert answer.status_code == 200 and answer.json()["result"]["content"][0]["text"] == "2"


def test_an_elicitation_answer_is_read_fail_closed() -> None:
    asked = elicitation_request("ok?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    with pytest.raises(InvalidInputResponse, match="did you mean 'accept'"):
        check_answer("confirm", asked, {"action": "acept", "content": {"ok": True}})
    with pytest.raises(InvalidInputResponse, match="action must be one of"):
        check_answer("confirm", asked, {"action": ["accept"]})
    with pytest.raises(InvalidInputResponse, match="more than 1000 roots"):
        check_answer("roots", roots_request(), {"roots": [{"uri": f"file:///{n}"} for n in range(1001)]})


def test_progress_a_served_tool_reports_is_read_by_the_one_number_reader() -> None:
    """NaN progress was sent as ``null`` (not a number: the client's progress reader fails); inf total too."""
    from yiemagent.mcp.server import MCPServer, current_call
    from yiemagent.mcp.server.calls import RequestContext
    from yiemagent.tools import tool

    @tool
    def work() -> str:
        """Report odd progress."""
        call = current_call()
        assert call is not None
        call.progress(float("nan"))
        call.progress("abc")  # type: ignore[arg-type]
        call.progress(1, total=float("inf"))
        call.progress(2, total=-5)
        call.progress(3, total=4)
        return "done"

    sent: list[dict[str, Any]] = []
    reply = MCPServer("p", tools=[work]).handle(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "work", "arguments": {}, "_meta": {"progressToken": "t"}}},
        RequestContext(notify=sent.append))
    assert reply is not None and reply["result"]["content"][0]["text"] == "done"
    assert [n["params"] for n in sent if n["method"] == "notifications/progress"] == [
        {"progressToken": "t", "progress": 1}, {"progressToken": "t", "progress": 2},
        {"progressToken": "t", "progress": 3, "total": 4}]


def test_serving_options_fail_closed() -> None:
    """Options of the served app that were accepted and then meant something else (or nothing)."""
    from yiemagent.exceptions import ConfigError
    from yiemagent.mcp.server import MCPServer
    from yiemagent.mcp.server.inputs import InputLimits

    server = MCPServer("o", "1")
    for options in ({"stateless": "no"}, {"allowed_hosts": "localhost"}, {"allowed_origins": "https://a.example"},
                    {"max_calls_per_owner": 0}, {"max_calls_per_owner": True}, {"max_call_seconds": True},
                    {"max_call_seconds": float("nan")}, {"max_body_bytes": 1.5}):
        with pytest.raises(ValueError):
            server.wsgi_app(**options)
    with pytest.raises(ConfigError, match="did you mean 'public'"):
        MCPServer("o", cache_scope="publc")
    for bad in ({"page_size": True}, {"cache_ttl_ms": True}):
        with pytest.raises(ConfigError):
            MCPServer("o", **bad)
    for limits in ({"deadline_seconds": float("nan")}, {"deadline_seconds": float("inf")}, {"max_rounds": True},
                   {"max_state_chars": 2.5}):
        with pytest.raises(ValueError, match=r"finite|int"):
            InputLimits(**limits)
    sampled = {"method": "sampling/createMessage", "params": {}}
    with pytest.raises(InvalidInputResponse, match="more than 1000 blocks"):
        check_answer("s", sampled, {"role": "assistant", "model": "m",
                                    "content": [{"type": "text", "text": "a"}] * 1001})
