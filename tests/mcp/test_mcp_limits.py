"""Issue 9 point 3: size caps on everything a server sends (``yiemagent.mcp.limits``), against a real server:
tests/servers/sdk_stdio_server.py runs on the official ``mcp`` SDK over stdio (the SDK writes the frames and
envelopes); only the sizes it sends are unusual.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from tests.helpers import PYTHON, SERVERS
from yiemagent import Agent
from yiemagent.exceptions import MCPProtocolError
from yiemagent.mcp import MCPClient, MCPToolset
from yiemagent.mcp.limits import MCPLimits, truncate_text
from yiemagent.mcp.results import result_to_tool_result
from yiemagent.messages import ToolResultMessage
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply
from yiemagent.tools import ToolRegistry

SDK_STDIO = [PYTHON, str(SERVERS / "sdk_stdio_server.py")]


@pytest.fixture
def sdk_stdio() -> Iterator[Callable[..., MCPClient]]:
    clients: list[MCPClient] = []

    def make(*flags: str, timeout_seconds: float = 30) -> MCPClient:
        client = MCPClient.stdio(SDK_STDIO[0], [*SDK_STDIO[1:], *flags], timeout_seconds=timeout_seconds)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def tool_results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.history if isinstance(m, ToolResultMessage)]


def test_a_large_structured_content_is_not_kept_whole_in_details_history_or_state(sdk_stdio):
    """Issue 9 point 3: a 50 MB ``structuredContent`` was kept whole in the history details and the state
    (52.5 MB of state). 5 MB (under the 16 MiB line cap) is now a stand-in with a preview in ``details``; the
    model sees at most ``max_result_chars``; the saved state stays small.
    """
    client = sdk_stdio()
    llm = ScriptedLLM([tool_call_reply("big_structured", {"chars": 5_000_000}), text_reply("done")])
    agent = Agent(llm, mcp_servers=[client])
    try:
        assert agent.ask("go", timeout_seconds=60)["status"] == "completed"
        (result,) = tool_results(agent)
        kept = result.details["structuredContent"]
        assert kept["truncated"] is True and kept["chars"] > 5_000_000 and kept["max_chars"] == 1_000_000
        assert kept["preview"].endswith("chars]") and len(kept["preview"]) < 1100
        assert len(agent.state_to_json()) < 300_000
        sent = llm.calls[1]["messages"][-1]["content"]
        assert len(json.dumps(sent)) < 110_000 and "truncated" in json.dumps(sent)
    finally:
        agent.shutdown()


def test_a_structured_content_over_the_line_cap_fails_that_call_clearly_and_the_server_stays(sdk_stdio):
    """Issue 9 points 2 and 3: 50 MB is over ``max_line_bytes`` (16 MiB): the call fails at once with
    ``MCPProtocolError`` naming the cap (the SDK writes ``id`` first, so it is found), nothing is buffered whole,
    and the same process serves the next call.
    """
    client = sdk_stdio()
    with pytest.raises(MCPProtocolError, match="max_line_bytes"):
        client.call_tool("big_structured", {"chars": 50_000_000})
    assert client.call_tool("echo", {"text": "still here"})["content"][0]["text"] == "still here"


def test_a_1mb_description_is_cut_visibly_and_oversized_schemas_and_names_are_skipped_and_listed(sdk_stdio):
    """Issue 9 point 3: a 1 MB description was sent to the model on every call. It is cut to 1,024
    characters (OpenAI's limit), note included, ending ``…[truncated 999,002 chars]``; a schema over 100,000
    characters or 32 levels and a 300-character name are not registered, each listed in
    ``MCPToolset.skipped`` with its reason.
    """
    client = sdk_stdio()
    llm = ScriptedLLM([text_reply("ok")])
    agent = Agent(llm, mcp_servers=[client])
    try:
        agent.ask("hi", timeout_seconds=60)
        tools = {t["function"]["name"]: t["function"] for t in llm.calls[0]["tools"]}
        assert tools["wordy"]["description"] == "w" * 998 + "…[truncated 999,002 chars]"
        assert len(tools["wordy"]["description"]) == 1024
        assert {"echo", "big_structured", "big_text", "blob"} <= set(tools)
        reasons = {entry["tool"][:20]: entry["reason"] for entry in agent.mcp.skipped}
        assert set(reasons) == {"deep_schema", "huge_schema", "n" * 20}
        assert "deeper than 32" in reasons["deep_schema"]
        assert "over 100,000" in reasons["huge_schema"]
        assert "over 256" in reasons["n" * 20]
        assert not any(name.startswith("nnnn") for name in tools)
    finally:
        agent.shutdown()


def test_more_tools_than_max_tools_registers_the_first_128_and_lists_the_rest(sdk_stdio):
    """Issue 9 point 3 (number of tools; OpenAI accepts at most 128 per request): a server listing 209 tools
    gets its first 128 usable ones registered, in its order; the others are listed as skipped.
    """
    client = sdk_stdio("--many", "200")
    toolset = MCPToolset([client], ToolRegistry())
    added, _ = toolset.refresh()
    assert len(added) == 128
    kept = sorted(name for name in added if name.startswith("t"))
    over = [entry["tool"] for entry in toolset.skipped if "max_tools" in entry["reason"]]
    assert kept == [f"t{i:03d}" for i in range(len(kept))]  # the server's order: the first ones are kept
    assert over == [f"t{i:03d}" for i in range(len(kept), 200)]


def test_limits_are_configurable(sdk_stdio):
    client = sdk_stdio()
    toolset = MCPToolset([client], ToolRegistry(), limits=MCPLimits(max_description_chars=25, max_tools=2))
    added, _ = toolset.refresh()
    assert sorted(added) == ["big_structured", "echo"]
    assert toolset.registry.get("echo").description == "Echo the text"
    assert toolset.registry.get("big_structured").description == "stru…[truncated 24 chars]"


def test_a_5mb_resource_blob_is_a_placeholder_never_inlined(sdk_stdio):
    """Issue 9 point 3 (resource blobs): the model sees the URI, type and size; nothing of the blob is kept."""
    client = sdk_stdio()
    result = result_to_tool_result(client.call_tool("blob", {"bytes": 5_000_000}))
    assert result.text == "[resource file:///blob.bin application/octet-stream, 5000000 bytes]"
    assert result.details is None


def test_result_details_caps_apply_to_meta_and_leave_small_values_alone():
    small = result_to_tool_result({"content": [{"type": "text", "text": "t"}], "structuredContent": {"a": 1},
                                   "_meta": {"k": "v"}})
    assert small.details == {"structuredContent": {"a": 1}, "_meta": {"k": "v"}}
    big = result_to_tool_result({"content": [{"type": "text", "text": "t"}], "structuredContent": {"a": 1},
                                 "_meta": {"k": "v" * 200_000}})
    assert big.details["_meta"]["truncated"] is True
    assert big.details["structuredContent"] == {"a": 1}
    with_text = result_to_tool_result({"content": [{"type": "text", "text": "t"}],
                                       "structuredContent": {"a": "z" * 2_000_000}})
    assert "structuredContent of 2,000,009 characters left out" in with_text.text


def test_truncate_text_says_how_much_was_cut():
    assert truncate_text("abc", 3) == "abc"
    assert truncate_text("a" * 100, 30) == "a" * 9 + "…[truncated 91 chars]"  # 30 characters, note included


