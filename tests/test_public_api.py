"""The public surface: the names other issues and users rely on (issue 2 contract), pinned."""

import inspect

import yiemagent
import yiemagent.mcp
from yiemagent import Agent, AgentTool, AgentToolResult, MCPClient, extract_tool_calls, tool
from yiemagent.testing import ScriptedLLM

CONTRACT = {"Agent", "AgentTool", "AgentToolResult", "MCPClient", "tool", "extract_tool_calls"}


def test_the_issue_2_contract_names_are_exported():
    """`from yiemagent import Agent, AgentTool, AgentToolResult, MCPClient, tool, extract_tool_calls`."""
    assert CONTRACT <= set(yiemagent.__all__)
    assert callable(ScriptedLLM([]))


def test_all_lists_only_names_that_exist_and_nothing_public_is_missing():
    """__all__ is complete: every public class or function defined in the package is exported somewhere."""
    for module in (yiemagent, yiemagent.mcp):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name} is in __all__ but missing"
    exported = set(yiemagent.__all__) | set(yiemagent.mcp.__all__)
    for name, value in vars(yiemagent).items():
        if name.startswith("_") or inspect.ismodule(value):
            continue
        assert name in exported, f"yiemagent.{name} is public but not in __all__"


def test_contract_signatures_match_the_issue():
    """Keyword names of the constructors are part of the contract."""
    agent = inspect.signature(Agent)
    for name in ("llm_call", "system_prompt", "tools", "mcp_servers", "before_tool_call", "after_tool_call",
                 "event_sink", "max_turns"):
        assert name in agent.parameters
    assert list(inspect.signature(AgentTool).parameters)[:4] == ["name", "description", "input_schema", "execute"]
    assert list(inspect.signature(AgentToolResult).parameters) == ["content", "is_error", "terminate", "details",
                                                                    "usage"]  # usage: issue 18 (agents as tools)
    client = inspect.signature(MCPClient)
    assert {"url", "headers", "timeout_seconds"} <= set(client.parameters)
    assert client.parameters["timeout_seconds"].default == 30.0
    assert callable(extract_tool_calls) and callable(tool)


def test_version_and_typed_marker_ship():
    """__version__ is a string; py.typed is in the package (PEP 561)."""
    from pathlib import Path

    assert isinstance(yiemagent.__version__, str) and yiemagent.__version__
    assert (Path(yiemagent.__file__).parent / "py.typed").exists()


def test_the_readme_gives_the_whole_agent_signature():
    """The docs' "The agent" guide lists every ``Agent`` parameter with its default (issue 11 point 8; the
    section moved from README.rst to docs/guides/agent.rst in issue 20).
    """
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "agent.rst").read_text()
    match = re.search(r"``Agent\(llm_call, \*,(.*?)\)``", readme, re.S)
    assert match, "the Agent signature is missing from docs/guides/agent.rst"
    documented = {part.split("=")[0].strip() for part in " ".join(match.group(1).split()).split(", ")}
    actual = set(inspect.signature(Agent).parameters) - {"llm_call"}
    assert documented == actual, (sorted(actual - documented), sorted(documented - actual))
