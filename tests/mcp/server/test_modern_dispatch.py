"""The 2026-07-28 era on the server and asking the client from a tool (issue 28 points 1, 2, 7), in-process.

``MCPServer.handle`` and the WSGI app through werkzeug's test client (the real app, no socket): which
era a request is in, the ``_meta`` and header checks with their HTTP statuses, ``server/discover`` and
the caching hints, ``input_required`` rounds with their signed ``requestState`` (tampering, another
request's state, expiry, key rotation, every bound), answers held to their result shapes, the
-32021 capability error in both eras, and the 2025-11-25 back-channel (a request on the call's stream,
the client's response handed back, a deadline, no back-channel).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from typing import Any

import pytest
from werkzeug.test import Client

from tests.mcp.server.kit import CONFIRM, Booking
from yiemagent.mcp.server import MCPServer, RequestContext, ServerSession, current_call
from yiemagent.mcp.server.inputs import InputLimits
from yiemagent.mcp.server.modern import request_era
from yiemagent.tools import AgentTool

V = "2026-07-28"
VERSION = "io.modelcontextprotocol/protocolVersion"
META = {"io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}, "roots": {}}}
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
KEY = b"k" * 32


def request(method: str, params: dict[str, Any] | None = None, *, request_id: int = 1, **meta: Any) -> dict[str, Any]:
    """A 2026-07-28 request; ``params["_meta"]`` when given replaces ``META``, ``meta`` adds to it."""
    given = dict(params or {})
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**given, "_meta": {**given.get("_meta", META), **meta}}}


def call(server: MCPServer, name: str, arguments: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    reply = server.handle(request("tools/call", {"name": name, "arguments": arguments or {}, **extra}))
    assert reply is not None
    return reply


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def test_each_request_is_placed_in_its_era() -> None:
    assert request_era({"method": "tools/list"}, {"mcp-protocol-version": "2025-11-25"}) == "legacy"
    assert request_era({"method": "tools/list"}, {"mcp-protocol-version": V}) == "modern"
    assert request_era({"method": "tools/list"}, {"mcp-protocol-version": "v999"}) == "modern"  # refused -32022
    assert request_era(request("tools/list"), None) == "modern"  # stdio: the _meta says it
    assert request_era({"method": "server/discover"}, None) == "modern"
    assert request_era({"method": "initialize", "params": {}}, None) == "legacy"
    assert request_era({"method": "tools/list"}, {}) == "legacy"  # a 2025-03-26 client sends no header


def test_discover_caching_hints_and_server_info() -> None:
    server = Booking().server(cache_ttl_ms=5000, cache_scope="public", instructions="Book rooms.")
    found = server.handle(request("server/discover"))
    assert found is not None
    result = found["result"]
    assert result["supportedVersions"] == [V] and result["resultType"] == "complete"
    assert result["capabilities"]["tools"] == {"listChanged": False} and result["instructions"] == "Book rooms."
    assert result["_meta"][SERVER_INFO] == {"name": "booking", "version": "1.0"}
    assert (result["ttlMs"], result["cacheScope"]) == (5000, "public")
    listed = server.handle(request("tools/list"))
    assert listed is not None and (listed["result"]["ttlMs"], listed["result"]["cacheScope"]) == (5000, "public")
    done = call(server, "summarize", {"text": "x"}, _meta={**META, "io.modelcontextprotocol/clientCapabilities": {}})
    assert done["error"]["code"] == -32021  # needs sampling
    legacy = server.handle({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
    assert legacy is not None and "resultType" not in legacy["result"] and "ttlMs" not in legacy["result"]
    with pytest.raises(Exception, match="cache_scope"):
        MCPServer("x", cache_scope="shared")


def test_removed_and_unknown_methods_and_a_bad_meta() -> None:
    server = Booking().server()
    for method in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "subscriptions/listen", "x/y"):
        reply = server.handle(request(method, request_id=7))
        assert reply == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": f"method not found: {method}"}}
    assert server.handle({"jsonrpc": "2.0", "id": 8, "method": "ping"}) == {"jsonrpc": "2.0", "id": 8, "result": {}}
    no_caps = server.handle({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                             "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": V}}})
    assert no_caps is not None and no_caps["error"]["code"] == -32602 and no_caps["id"] == 3
    old = server.handle(request("tools/list", {"_meta": {**META, VERSION: "2099-01-01"}}))
    assert old is not None and old["error"]["code"] == -32022
    assert old["error"]["data"] == {"supported": [V], "requested": "2099-01-01"}


def region_tool() -> AgentTool:
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
              "required": ["region"]}
    return AgentTool("where", "Echo the region.", schema, lambda _id, args, abort: f"in {args['region']}")


def post(client: Client, message: dict[str, Any], **headers: str) -> Any:
    sent = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": V,
            "Mcp-Method": str(message["method"]), **headers}
    return client.post("/mcp", data=json.dumps(message), headers=sent, content_type="application/json")


def test_http_header_checks_and_statuses() -> None:
    client = Client(MCPServer("h", "1", tools=[region_tool()]).wsgi_app())
    where = request("tools/call", {"name": "where", "arguments": {"region": "Köln"}})
    encoded = "=?base64?" + base64.b64encode("Köln".encode()).decode() + "?="
    good = post(client, where, **{"Mcp-Name": " where ", "mcp-param-region": encoded})
    assert good.status_code == 200 and good.json["result"]["content"][0]["text"] == "in Köln"
    assert "Mcp-Session-Id" not in good.headers  # no session in this era
    for headers in ({"Mcp-Name": "where"},  # the header of an argument in the body is missing
                    {"Mcp-Name": "where", "Mcp-Param-Region": "Bonn"},
                    {"Mcp-Name": "where", "Mcp-Param-Region": "=?base64?S8O2bG4?="},  # bad padding
                    {"Mcp-Name": "other", "Mcp-Param-Region": encoded},
                    {"Mcp-Param-Region": encoded},
                    {"Mcp-Name": "where", "Mcp-Param-Region": encoded, "Mcp-Method": "TOOLS/CALL"},
                    {"Mcp-Name": "where", "Mcp-Param-Region": encoded, "MCP-Protocol-Version": "2099-01-01"}):
        refused = post(client, where, **headers)
        assert (refused.status_code, refused.json["error"]["code"], refused.json["id"]) == (400, -32020, 1), headers
    unsupported = post(client, request("tools/list", {"_meta": {**META, VERSION: "v9"}}),
                       **{"MCP-Protocol-Version": "v9"})
    assert (unsupported.status_code, unsupported.json["error"]["code"]) == (400, -32022)
    missing = post(client, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    assert (missing.status_code, missing.json["error"]["code"]) == (400, -32602)
    gone = post(client, request("initialize"))
    assert (gone.status_code, gone.json["error"]["code"]) == (404, -32601)
    note = post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert note.status_code == 202
    legacy_discover = post(client, request("server/discover"), **{"MCP-Protocol-Version": "2025-11-25"})
    assert legacy_discover.status_code == 400  # a handshake-era request needs its session first


def test_rounds_rerun_the_tool_and_keep_saved_state() -> None:
    booking = Booking()
    server = booking.server(state_keys=[KEY])
    first = call(server, "book", {"room": "Lab"})["result"]
    assert first["resultType"] == "input_required" and first["inputRequests"]["confirm"] == {
        "method": "elicitation/create", "params": {"message": "Book Lab for 120 EUR?", "requestedSchema": CONFIRM}}
    second = call(server, "book", {"room": "Lab"}, inputResponses={"confirm": accept(ok=True)},
                  requestState=first["requestState"])["result"]
    assert second["inputRequests"] == {"roots-2": {"method": "roots/list", "params": {}}}  # round 2 asks more
    assert second["requestState"] != first["requestState"]
    done = call(server, "book", {"room": "Lab"}, inputResponses={"roots-2": {"roots": [{"uri": "file:///w"}]},
                                                                  "stray": {"x": 1}},
                requestState=second["requestState"])["result"]
    assert done["content"][0]["text"] == "booked Lab for 120 EUR; roots: file:///w"
    assert booking.runs == ["Lab"] * 3 and booking.lookups == ["Lab"]  # re-run; the lookup kept in saved
    again = call(server, "book", {"room": "Lab"}, inputResponses={"confirm": {"action": "decline"}})["result"]
    assert again["content"][0]["text"] == "not booked (decline)"  # answered at once, without a state


def test_request_state_is_refused_when_changed_foreign_expired_or_too_big() -> None:
    server = Booking().server(state_keys=[KEY])
    state = call(server, "book", {"room": "Lab"})["result"]["requestState"]
    answer = {"confirm": accept(ok=False)}

    def refusal(arguments: dict[str, Any], token: Any, target: MCPServer = server) -> str:
        reply = call(target, "book", arguments, inputResponses=answer, requestState=token)
        assert reply["error"]["code"] == -32602, reply
        return str(reply["error"]["message"])

    prefix, payload, mac = state.split(".")
    forged = json.loads(base64.urlsafe_b64decode(payload + "=="))
    forged["a"] = {"confirm": accept(ok=True)}
    forged_payload = base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("=")
    assert "integrity" in refusal({"room": "Lab"}, f"{prefix}.{forged_payload}.{mac}")
    assert "integrity" in refusal({"room": "Lab"}, state + "-TAMPERED")
    assert "integrity" in refusal({"room": "Lab"}, "not-a-state")
    assert "another request" in refusal({"room": "Hall"}, state)
    assert "at most" in refusal({"room": "Lab"}, "x" * 300_000)
    assert "integrity" in refusal({"room": "Lab"}, state, Booking().server())  # another process's random key
    rotated = Booking().server(state_keys=[b"n" * 32, KEY])  # new key signs, the old one still verifies
    kept = call(rotated, "book", {"room": "Lab"}, inputResponses=answer, requestState=state)
    assert kept["result"]["content"][0]["text"] == "not booked (accept)"
    quick = Booking().server(state_keys=[KEY], input_limits=InputLimits(deadline_seconds=0.05))
    old = call(quick, "book", {"room": "Lab"})["result"]["requestState"]
    time.sleep(0.2)
    assert "expired" in refusal({"room": "Lab"}, old, quick)
    with pytest.raises(Exception, match="32 bytes"):
        MCPServer("x", state_keys=[b"short"])


def test_input_bounds_and_answers_held_to_their_shapes() -> None:
    server = Booking().server(input_limits=InputLimits(max_rounds=1, max_inputs_per_round=2))
    first = call(server, "book", {"room": "Lab"})["result"]
    past = call(server, "book", {"room": "Lab"}, inputResponses={"confirm": accept(ok=True)},
                requestState=first["requestState"])
    assert past["error"]["code"] == -32602 and "1 rounds" in past["error"]["message"]
    cases: list[tuple[Any, str]] = [
        ({"confirm": 12345}, "must be an object"), (None, "inputResponses must be an object"),
        ({"a": {}, "b": {}, "c": {}}, "at most 2"), ({"confirm": {"action": "maybe"}}, "action must be"),
        ({"confirm": accept(ok="yes")}, "requestedSchema")]
    for responses, text in cases:
        reply = call(server, "book", {"room": "Lab"}, inputResponses=responses)
        assert reply["error"]["code"] == -32602 and text in reply["error"]["message"], (responses, reply)
    sampled = call(server, "summarize", {"text": "t"}, inputResponses={"sampling-1": {"role": "assistant"}})
    assert sampled["error"]["code"] == -32602 and "CreateMessageResult" in sampled["error"]["message"]

    def hoard(_id: str, args: dict[str, Any], abort: threading.Event) -> str:
        served = current_call()
        assert served is not None
        served.saved["blob"] = "x" * 300_000
        return str(served.elicit("?", CONFIRM))

    heavy = MCPServer("h", "1", tools=[AgentTool("hoard", "Keeps too much.", {"type": "object"}, hoard)])
    too_big = call(heavy, "hoard")
    assert too_big["error"]["code"] == -32603 and "requestState bound" in too_big["error"]["message"]


def test_a_capability_the_client_did_not_declare_is_32021_in_both_eras() -> None:
    server = Booking().server()
    modern = call(server, "book", {"room": "Lab"}, _meta={**META, "io.modelcontextprotocol/clientCapabilities": {}})
    assert modern["error"] == {"code": -32021, "message": "the client did not declare the 'elicitation' capability "
                               "that elicitation/create needs", "data": {"requiredCapabilities": {"elicitation": {}}}}
    session = ServerSession(client_capabilities={"sampling": {}})
    legacy = server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "book", "arguments": {"room": "Lab"}}}, RequestContext(session=session))
    assert legacy is not None and legacy["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}


def test_log_messages_only_for_a_modern_request_that_asks_for_a_level() -> None:
    def chatty(_id: str, args: dict[str, Any], abort: threading.Event) -> str:
        served = current_call()
        assert served is not None
        served.log("debug", "detail")
        served.log("warning", "careful")
        return "ok"

    server = MCPServer("c", "1", tools=[AgentTool("chatty", "Logs.", {"type": "object"}, chatty)])
    for level, expected in ((None, []), ("warning", ["careful"]), ("debug", ["detail", "careful"])):
        notes: list[dict[str, Any]] = []
        meta = {**META, **({"io.modelcontextprotocol/logLevel": level} if level else {})}
        server.handle(request("tools/call", {"name": "chatty", "arguments": {}, "_meta": meta}),
                      RequestContext(notify=notes.append))
        assert [n["params"]["data"] for n in notes] == expected


def legacy_call(server: MCPServer, context: RequestContext, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run a 2025-11-25 tools/call on a thread, answering what it asks with ``context``'s test hook."""
    reply: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: reply.update(server.handle(
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": name, "arguments": arguments}},
        context) or {}))
    worker.start()
    worker.join(30)
    assert not worker.is_alive()
    return reply


def test_the_2025_back_channel_sends_the_request_and_takes_the_answer() -> None:
    booking = Booking()
    server = booking.server(input_limits=InputLimits(deadline_seconds=5))
    session = ServerSession(client_capabilities={"elicitation": {}})
    sent: list[dict[str, Any]] = []

    def client_side(message: dict[str, Any]) -> None:  # what the client does with the request on the stream
        sent.append(message)
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": accept(ok=True)}
        threading.Thread(target=server.handle, args=(answer, RequestContext(session=session))).start()

    context = RequestContext(session=session, notify=client_side, back_channel=True)
    reply = legacy_call(server, context, "book", {"room": "Lab"})
    assert reply["result"]["content"][0]["text"] == "booked Lab for 120 EUR; roots: none"
    assert [m["method"] for m in sent] == ["elicitation/create"] and sent[0]["params"]["requestedSchema"] == CONFIRM
    assert booking.runs == ["Lab"] and not session.asked  # one run; nothing left waiting

    def refuse(message: dict[str, Any]) -> None:
        answer = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -1, "message": "user said no"}}
        threading.Thread(target=server.handle, args=(answer, RequestContext(session=session))).start()

    refused = legacy_call(server, RequestContext(session=session, notify=refuse, back_channel=True), "book",
                          {"room": "Lab"})
    assert refused["result"]["isError"] and "user said no" in refused["result"]["content"][0]["text"]
    quiet = booking.server(input_limits=InputLimits(deadline_seconds=0.2))
    late = legacy_call(quiet, RequestContext(session=session, notify=lambda m: None, back_channel=True), "book",
                       {"room": "Lab"})
    assert late["result"]["isError"] and "no answer from the client in 0.2 s" in late["result"]["content"][0]["text"]
    assert not session.asked
    stateless = legacy_call(server, RequestContext(session=session), "book", {"room": "Lab"})
    assert "InputUnavailable" in stateless["result"]["content"][0]["text"]
    assert server.handle({"jsonrpc": "2.0", "id": "yiemagent-999", "result": {}}, RequestContext(session=session)) \
        is None  # an answer nobody waits for is dropped


def test_header_values_decode_what_the_client_encodes() -> None:
    from yiemagent.mcp.http_headers import decode_header_value, encode_header_value

    for value in ("plain", "Köln", " padded ", "=?base64?looks-like-it?=", "line\nbreak", ""):
        assert decode_header_value(encode_header_value(value)) == value
    assert decode_header_value("\t=?base64?SGVsbG8=?= ") == "Hello"
    assert decode_header_value("=?base64?SGVsbG8") == "=?base64?SGVsbG8"  # no ?= : a literal
    for bad in ("=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "=?base64?/w==?="):  # padding, alphabet, not UTF-8
        with pytest.raises(ValueError, match="invalid Base64"):
            decode_header_value(bad)
