"""``python -m yiemagent.mcp.server module:attribute``: what it serves, and what it says when the target is wrong."""

from __future__ import annotations

import pytest

from yiemagent.mcp.server import MCPServer
from yiemagent.mcp.server.__main__ import load, main


def test_a_server_or_a_function_returning_one_is_served() -> None:
    assert isinstance(load("tests.mcp.server.kit:build"), MCPServer)


@pytest.mark.parametrize(("target", "said"), [
    ("tests.mcp.server.kit:add", "is a tool, not an MCPServer: serve MCPServer(name, tools=[add])"),
    ("tests.mcp.server.kit:waiting_tool", "not an MCPServer or a function of no arguments returning one"),
    ("tests.mcp.server.kit:SECRET", "is str, not an MCPServer"),
    ("tests.mcp.server.kit", "expected module:attribute"),
])
def test_a_wrong_target_is_one_line_saying_what_to_serve(target: str, said: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A fresh user's trial: pointing the command at a ``@tool`` dumped a traceback (``add() missing 2 required
    positional arguments``); every wrong target is now one line on stderr and exit status 2.
    """
    assert main([target]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and err.count("\n") == 1
