"""Issue 9 point 9 (stdio, results, tools): cases from public reports against other MCP clients, each named
after its source (see the docstrings). Real servers where one shows the shape (server-everything,
server-filesystem, the SDK over stdio); tests/servers/stdio_quirks.py only where no real server writes it
(a byte order mark, ``content: null``), as each docstring says.
"""

from __future__ import annotations

import base64
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import PYTHON, SERVERS, text_of
from yiemagent.exceptions import MCPProtocolError
from yiemagent.mcp import MCPClient, StdioTransport, stdio_process
from yiemagent.mcp.results import result_to_tool_result
from yiemagent.messages import ImageContent, TextContent

QUIRKS = [PYTHON, str(SERVERS / "stdio_quirks.py")]
SDK_STDIO = [PYTHON, str(SERVERS / "sdk_stdio_server.py")]


def b64(*lines: bytes) -> list[str]:
    return [base64.b64encode(line).decode("ascii") for line in lines]



def test_typescript_sdk_2775_a_utf8_byte_order_mark_before_a_message_does_not_lose_it(stdio_client):
    """Source: modelcontextprotocol/typescript-sdk #2775 (PRs #2790, #2796 "strip a leading UTF-8 byte order
    mark before parsing a message"): a peer that prefixes a message with a BOM (Windows/.NET/PowerShell
    servers do) made the message be dropped and the request wait for its timeout. RFC 8259 §8.1 lets a
    parser ignore it. The quirk server writes the BOM (no real server here does). A U+FEFF inside a string
    is data and stays.
    """
    client = stdio_client(QUIRKS, timeout_seconds=30)
    client.connect()  # the process start is not timed
    bom = b"\xef\xbb\xbf"
    line = bom + b'{"jsonrpc":"2.0","id":{id},"result":{"content":[{"type":"text","text":"a\xef\xbb\xbfb"}]}}'
    started = time.monotonic()
    result = client.call_tool("raw", {"lines": b64(line), "answer": False}, timeout_seconds=5)
    assert time.monotonic() - started < 3
    assert text_of(result) == "a\ufeffb"


@pytest.mark.node
def test_claude_agent_sdk_typescript_137_u2028_u2029_and_nel_inside_a_result_keep_it_one_message(
    everything_stdio, stdio_client
):
    """Source: anthropics/claude-agent-sdk-typescript #137 and anthropics/anthropic-sdk-typescript #882 "U+2028
    LINE SEPARATOR in MCP tool results causes JSON parsing failures": JSON.stringify leaves U+2028/U+2029
    raw, and a reader that splits on Unicode line breaks (Node readline, Python str.splitlines) cut the
    message in two. Server-everything (Node) writes them raw; the transport splits on the byte 0x0A only.
    """
    client = stdio_client(everything_stdio)
    tricky = "a\u2028b\u2029c\u0085d\x0be\x0cf\x1cg"
    assert text_of(client.call_tool("echo", {"message": tricky})) == f"Echo: {tricky}"
    assert client.transport.bad_lines == 0


def test_mcp_go_956_a_server_writing_megabytes_to_stderr_keeps_answering(stdio_client):
    """Source: mark3labs/mcp-go #956 "stdio client deadlocks when the server writes to stderr (StderrPipe is
    never read)"; also kubestellar/console #7960, simonx1/ruby-mcp-client #142 (stderr without newlines must
    not be buffered whole). A 64 KB pipe nobody reads blocks the server. 4 MB in lines and 4 MB without a
    newline both pass, and only the last ~4 KB are kept.
    """
    client = stdio_client(QUIRKS, timeout_seconds=30)
    for lines in (True, False):
        assert text_of(client.call_tool("stderr", {"bytes": 4 << 20, "lines": lines})) == "stderr done"
    assert text_of(client.call_tool("echo", {"text": "after"})) == "after"
    assert 0 < len(client.transport.stderr_tail) <= stdio_process.STDERR_TAIL_BYTES


def _running_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.slow
def test_typescript_sdk_2023_close_stops_a_server_started_through_a_launcher_and_its_children(monkeypatch):
    """Source: modelcontextprotocol/typescript-sdk #2023 "StdioClientTransport.close() does not kill the process
    tree, leaving orphan processes" (also anthropics/claude-code #76306, opencode PR #34525): with ``npx``/``sh``
    launchers the real server is a grandchild. Here ``sh`` starts the quirk server, which ignores EOF and
    SIGTERM; close() ends the whole process group.
    """
    monkeypatch.setattr(stdio_process, "SHUTDOWN_WAIT_SECONDS", 0.3)
    marker = f"--marker={uuid.uuid4().hex}"
    client = MCPClient.stdio("sh", ["-c", '"$@"; echo launcher-done >&2', "sh", *QUIRKS, "--ignore-term", marker])
    assert text_of(client.call_tool("echo", {"text": "via sh"})) == "via sh"
    assert len(_running_with(marker)) == 2  # sh and the python server it started
    client.close()
    deadline = time.monotonic() + 5
    while _running_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running_with(marker) == []


def test_agno_10245_a_result_with_content_null_and_structured_content_reaches_the_model(stdio_client):
    """Source: agno-agi/agno #10245 "MCP tool results with content=None skip structuredContent and become
    Error"; also anomalyco/opencode PR #10141 (``content`` not an array: "TypeError: {} is not iterable").
    SDK servers validate ``content``, so the quirk server writes these. Both give the structured JSON text.
    """
    client = stdio_client(QUIRKS)
    for content in (b"null", b"{}", b'"text"'):
        line = b'{"jsonrpc":"2.0","id":{id},"result":{"content":%s,"structuredContent":{"id":"u1"}}}' % content
        result = result_to_tool_result(client.call_tool("raw", {"lines": b64(line), "answer": False}))
        assert not result.is_error
        assert result.text == '{"id": "u1"}'


@pytest.mark.node
def test_klaatcode_59_a_roots_list_request_from_the_server_is_answered_not_dropped(filesystem_stdio, tmp_path):
    """Source: KlaatAI/klaatcode #59 "MCP client advertises roots capability but drops server-initiated
    requests" (the server waited its full timeout); also modelcontextprotocol/python-sdk #1097 "Roots/List
    Request Hangs". Real server-filesystem asks ``roots/list`` after the handshake when the client declares
    ``roots``; our handler's answer becomes its allowed directories.
    """
    start, root = tmp_path / "start", tmp_path / "root"
    start.mkdir()
    root.mkdir()
    asked = []

    def list_roots(params: dict) -> dict:
        asked.append(params)
        return {"roots": [{"uri": root.as_uri(), "name": "root"}]}

    transport = StdioTransport(filesystem_stdio[0], [*filesystem_stdio[1:], str(start)], timeout_seconds=30)
    client = MCPClient(transport=transport, capabilities={"roots": {}}, request_handlers={"roots/list": list_roots})
    try:
        client.connect()
        deadline = time.monotonic() + 10
        text = ""
        while time.monotonic() < deadline:
            text = text_of(client.call_tool("list_allowed_directories", {}))
            if str(root) in text:
                break
            time.sleep(0.1)
        assert asked and str(root) in text and str(start) not in text
    finally:
        client.close()


@pytest.mark.slow
def test_senpi_1260_image_data_sent_as_a_data_url_is_not_prefixed_twice_and_bad_images_are_left_out():
    """Source: code-yeongyu/senpi #1260 "Tool-result image data URLs are double-prefixed ... producing invalid
    image_url" (the provider rejected the whole request); also evenfire-ai/evenfire #688 (line-wrapped or
    data:-prefixed base64) and NVIDIA-NeMo/DataDesigner PR #689 (data that is not base64). A real SDK
    server sends all four shapes; the model gets two valid images and two placeholders saying why.
    """
    client = MCPClient.stdio(SDK_STDIO[0], SDK_STDIO[1:], timeout_seconds=30)
    try:
        result = result_to_tool_result(client.call_tool("odd_images", {}))
    finally:
        client.close()
    first, wrapped, not_base64, not_image = result.content
    assert isinstance(first, ImageContent) and first.url.count("data:") == 1 and first.mime_type == "image/png"
    assert isinstance(wrapped, ImageContent) and "\n" not in wrapped.url
    base64.b64decode(wrapped.data or "", validate=True)
    assert isinstance(not_base64, TextContent) and "not base64" in not_base64.text
    assert isinstance(not_image, TextContent) and "'text/plain' is not an image type" in not_image.text


def test_a_bom_alone_is_a_blank_line_and_a_broken_bom_response_still_fails_its_request_at_once(stdio_client):
    """The BOM rule does not hide errors: a BOM then broken JSON with our id still fails that request now."""
    client = stdio_client(QUIRKS, timeout_seconds=30)
    lines = b64(b"\xef\xbb\xbf", b'\xef\xbb\xbf{"jsonrpc":"2.0","id":{id},"result":{"content":[}')
    with pytest.raises(MCPProtocolError):
        client.call_tool("raw", {"lines": lines, "answer": False})
    assert text_of(client.call_tool("echo", {"text": "ok"})) == "ok"


@pytest.mark.slow
def test_openai_agents_js_1934_tools_of_one_server_that_sanitise_alike_stay_distinct():
    """Source: openai/openai-agents-js #1934 "two tools on the same server that normalize to one function-tool
    name are both returned" (the model's call went to the wrong one); also openai/openai-agents-python PR
    #3561 (duplicates within one server overwrote each other). A real SDK server lists ``get.data``,
    ``get_data``, ``get data``, ``get-data`` and ``get_data`` again: four distinct valid names, each call
    reaching its own tool; the duplicate is dropped (the first is kept, logged).
    """
    from yiemagent.mcp import MCPToolset
    from yiemagent.tools import ToolRegistry

    client = MCPClient.stdio(SDK_STDIO[0], [*SDK_STDIO[1:], "--collide"], timeout_seconds=30)
    try:
        toolset = MCPToolset([client], ToolRegistry())
        toolset.refresh()
        wire = {"get.data", "get_data", "get data", "get-data"}
        names = {name: toolset.resolve(name)[1] for name in toolset.registry.names()
                 if toolset.resolve(name) and toolset.resolve(name)[1] in wire}
        assert sorted(names.values()) == sorted(wire)  # each wire name once
        assert len(set(names)) == 4
        for name, original in names.items():
            result = toolset.registry.get(name).execute("call_1", {}, None)
            assert result.text == original
    finally:
        client.close()
