"""Issue 33, point 7: bounded nesting everywhere a body or a schema is parsed or walked.

One reader (``yiemagent._internal.jsonload``): a text nested deeper than its bound is a ``JSONDepthError``
(a ``ValueError``), a schema deeper than 64 levels a ``ConfigError``, never ``RecursionError``. Before, a
JSON Schema nested 5,000 deep as ``output_type`` and a model reply body nested deeply raised
``RecursionError``. The raw peers (tests/servers/raw_llm_peer.py, raw_http_peer.py) send what no real
server sends: a body nested 5,000 deep.
"""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import Agent, AgentTool, ConfigError, FormatError, LLMError
from yiemagent._internal.jsonload import JSONDepthError, check_depth, depth_exceeds, loads_bounded
from yiemagent.mcp.client import MCPClient
from yiemagent.models.openai_chat import openai_chat
from yiemagent.testing import ScriptedLLM, text_reply

DEEP = 5000


def deep_schema(levels: int = DEEP) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def deep_text(levels: int = DEEP) -> str:
    return "[" * levels + "]" * levels


def test_the_reader_counts_nesting_outside_strings_and_refuses_it_as_a_value_error() -> None:
    assert not depth_exceeds('["' + "[" * 1000 + '"]', 10)  # brackets in a string are text
    assert depth_exceeds(b"{\"a\":" * 300 + b"1" + b"}" * 300, 256)
    assert loads_bounded('{"a": [[1]]}', max_depth=3) == {"a": [[1]]}
    with pytest.raises(JSONDepthError) as caught:
        loads_bounded(deep_text())
    assert isinstance(caught.value, ValueError)
    looped: dict[str, Any] = {}
    looped["self"] = looped
    with pytest.raises(JSONDepthError):
        check_depth(looped)
    shared = {"type": "string"}
    check_depth({"properties": {f"p{i}": shared for i in range(1000)}})  # shared, not deep


def test_a_schema_nested_5000_deep_as_output_type_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="nested deeper than 64"):
        Agent(ScriptedLLM([text_reply("{}")]), output_type=deep_schema())
    with pytest.raises(ConfigError, match="nested deeper than 64"):
        Agent(ScriptedLLM([text_reply("{}")])).ask("q", output_type=deep_schema())


def test_a_tool_input_schema_nested_5000_deep_is_a_config_error_naming_the_tool() -> None:
    with pytest.raises(ConfigError, match=r"tool 'deep'.*nested deeper than 64"):
        AgentTool("deep", "Deep.", deep_schema(), lambda *args: "x")


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
def test_a_model_reply_nested_5000_deep_is_an_llm_error_not_a_recursion_error(peer: Any, streamed: bool) -> None:
    """Raw peer: no model server sends a reply nested 5,000 deep."""
    from tests.servers.raw_llm_peer import Reply

    body = '{"choices": ' + deep_text() + "}"
    peer.script(Reply(sse=[body]) if streamed else Reply(body=body, headers={"Content-Type": "application/json"}))
    llm = openai_chat(peer.base_url, "m", stream=streamed)
    with pytest.raises(LLMError, match="nested deeper than"):
        llm([{"role": "user", "content": "hi"}], [])
    peer.script(Reply(sse=[body]) if streamed else Reply(body=body, headers={"Content-Type": "application/json"}))
    answer = Agent(llm).ask("hi", timeout_seconds=30)
    assert answer["status"] == "error" and "RecursionError" not in answer["error"], answer


def test_an_mcp_result_nested_5000_deep_is_refused_not_a_recursion_error(raw_peer: Any) -> None:
    """Raw peer: no MCP server sends a result nested 5,000 deep."""
    from tests.servers.raw_http_peer import Reply

    peer = raw_peer()
    body = '{"jsonrpc": "2.0", "id": {request_id}, "result": {"content": ' + deep_text() + "}}"
    peer.script("tools/call", Reply(body=body, headers={"Content-Type": "application/json"}))
    client = MCPClient(peer.url, timeout_seconds=10)
    try:
        with pytest.raises(Exception) as caught:
            client.call_tool("x", {})
        assert not isinstance(caught.value, RecursionError)
        assert "nested" in str(caught.value), caught.value
        assert peer.count("tools/call") == 1
    finally:
        client.close()


def test_a_stored_state_nested_5000_deep_is_a_format_error() -> None:
    state = '{"history": ' + deep_text() + "}"
    with pytest.raises(FormatError):
        Agent.from_state(state, ScriptedLLM([]))


def test_a_typed_answer_with_prose_before_json_nested_5000_deep_is_output_invalid_not_a_recursion_error() -> None:
    """The answer's first ``[`` after prose is decoded at its index: that decode is bounded too."""
    answer = Agent(ScriptedLLM([text_reply("Here it is: " + deep_text())] * 5), output_type=list).ask(
        "q", timeout_seconds=30)
    assert answer["status"] == "output_invalid", {k: str(v)[:200] for k, v in answer.items()}
    assert "nested deeper than 256" in answer["error"] and "RecursionError" not in answer["error"]


def test_a_token_introspection_answer_nested_5000_deep_refuses_the_token_not_a_recursion_error() -> None:
    """Raw HTTP server: no authorization server answers RFC 7662 introspection nested 5,000 deep."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from yiemagent.mcp.server.auth import IntrospectionVerifier

    asked: list[str] = []
    body = ('{"active": true, "x": ' + deep_text() + "}").encode()

    class Deep(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            asked.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Deep)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        verifier = IntrospectionVerifier(f"http://127.0.0.1:{server.server_address[1]}/introspect")
        assert verifier.verify("a-token") is None
    finally:
        server.shutdown()
        server.server_close()
    assert len(asked) == 1 and "token=a-token" in asked[0]  # it was asked, and its answer refused


@pytest.mark.parametrize("levels", [900, DEEP])
def test_a_text_tool_call_nested_past_the_bound_is_refused_like_one_nested_5000_deep(levels: int) -> None:
    """A ``<tool_call>`` whose arguments nest 900 deep decoded (under the decoder's stack) and became a call."""
    from yiemagent.formats.text_tool_calls import find_text_calls

    def block(nested: str) -> str:
        return '<tool_call>{"name": "t", "arguments": {"a": ' + nested + "}}</tool_call>"

    _, calls = find_text_calls(block(deep_text(levels)), ["t"])
    assert len(calls) == 1 and calls[0].arguments is None and calls[0].error, calls[0].name
    _, shallow = find_text_calls(block(deep_text(200)), ["t"])
    assert shallow[0].name == "t" and shallow[0].error is None


def test_tool_call_arguments_nested_past_the_bound_are_a_format_error_the_model_sees() -> None:
    """A reply's ``arguments`` string is JSON text inside JSON: the body's bound does not reach it."""
    from yiemagent.formats.arguments import parse_arguments

    arguments, error = parse_arguments('{"a": ' + deep_text(900) + "}")
    assert arguments == {} and error is not None and "nested deeper than 256" in error
    shallow, none = parse_arguments('{"a": ' + deep_text(200) + "}")
    assert none is None and isinstance(shallow["a"], list)
