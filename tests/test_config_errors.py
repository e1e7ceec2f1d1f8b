"""Bad arguments fail at once with ConfigError, naming the argument (issue 8, point 7, constructor part).

Before: ``max_turns="3"``, ``tools="add"``, ``max_result_chars="10"``, ``system_prompt=123``,
``max_repeated_calls=0``, ``event_sink="x"``, ``before_tool_call="x"``, ``MCPClient(3005)``
were accepted or raised raw ``TypeError``s later, on a worker thread.
"""

import pytest

from yiemagent import Agent, ConfigError, MCPClient, openai_chat
from yiemagent.models.openai_chat import OpenAIChat
from yiemagent.testing import text_reply


def llm(messages, tools):
    return text_reply("ok")


AGENT_BAD = [
    ("max_turns", "3"), ("max_turns", 0), ("max_turns", True), ("max_turns", 2.5),
    ("tools", "add"), ("tools", b"add"), ("tools", {"add": 1}), ("tools", 3), ("tools", ["not a tool"]),
    ("max_result_chars", "10"), ("max_result_chars", 0), ("system_prompt", 123), ("system_prompt", ["x"]),
    ("max_repeated_calls", 0), ("max_repeated_calls", "3"), ("event_sink", "x"), ("before_tool_call", "x"),
    ("after_tool_call", 1), ("prepare_context", "trim"), ("format_messages", object()),
    ("tool_execution", "threads"), ("tool_execution", None), ("max_parallel_tools", 0),
    ("max_parallel_tools", "8"), ("steering", "yes"), ("emit_intermediate", 1), ("builtin_list_tools", None),
    ("final_turn_without_tools", "no"), ("name", 5), ("name", " "),
]


@pytest.mark.parametrize(("argument", "value"), AGENT_BAD, ids=lambda v: repr(v)[:20])
def test_agent_rejects_a_bad_argument_at_construction(argument, value):
    """Each wrong type or range: ConfigError at once, its message naming the argument."""
    with pytest.raises(ConfigError, match=argument):
        Agent(llm, **{argument: value})


def test_issue15_store_given_as_a_file_name_is_a_config_error_naming_the_fix():
    """Issue 15, a new user's trial: ``Agent(store="chats.db", conversation_id="c")`` gave an
    ``AttributeError`` from deep inside; now a ``ConfigError`` that names ``SQLiteStore('chats.db')``.
    """
    with pytest.raises(ConfigError, match=r"store must be a ConversationStore such as .*SQLiteStore\('chats.db'\)"):
        Agent(llm, store="chats.db", conversation_id="c")
    with pytest.raises(ConfigError, match=r"conversation_id must be a str"):
        Agent(llm, store=None, conversation_id=42)


@pytest.mark.parametrize("value", ["5", True, float("nan"), -1, [5]], ids=repr)
@pytest.mark.parametrize("started", [False, True], ids=["cold", "started"])
def test_issue15_ask_and_submit_with_a_wrong_timeout_are_config_errors(value, started, capfd):
    """Issue 15, a new user's trial: ``ask("hi", timeout_seconds="5")`` before ``start()`` printed a
    traceback from a timer thread and waited without limit; now ``ConfigError`` at once, nothing printed.
    """
    agent = Agent(llm)
    if started:
        agent.start()
    try:
        with pytest.raises(ConfigError, match="timeout_seconds"):
            agent.ask("hi", timeout_seconds=value)
        with pytest.raises(ConfigError, match="timeout_seconds"):
            agent.submit("hi", timeout_seconds=value)
        assert agent.ask("hi", timeout_seconds=10)["content"] == "ok"
    finally:
        agent.shutdown()
    assert "Traceback" not in capfd.readouterr().err


def test_agent_accepts_the_documented_forms():
    """The good forms still work: None where allowed, a generator of tools, a tuple."""
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    Agent(llm, max_repeated_calls=None, max_result_chars=None, system_prompt=None, tools=(f for f in [add]))
    Agent(llm, tools=(add,), name="bot", event_sink=print)


@pytest.mark.parametrize(("args", "kwargs", "argument"), [
    ((3005,), {}, "url"),
    ((), {}, "url or a transport"),
    (("http://127.0.0.1:1/mcp",), {"timeout_seconds": "30"}, "timeout_seconds"),
    (("http://127.0.0.1:1/mcp",), {"timeout_seconds": 0}, "timeout_seconds"),
    (("http://127.0.0.1:1/mcp",), {"headers": {"X-Key": 5}}, "headers"),
    (("http://127.0.0.1:1/mcp",), {"headers": "X-Key: 5"}, "headers"),
    (("http://127.0.0.1:1/mcp",), {"max_pages": 0}, "max_pages"),
    (("http://127.0.0.1:1/mcp",), {"retry_attempts": 0}, "retry_attempts"),
    (("http://127.0.0.1:1/mcp",), {"retry_sleep": None}, "retry_sleep"),
    (("http://127.0.0.1:1/mcp",), {"request_handlers": {"ping": "x"}}, "request_handlers"),
    (("http://127.0.0.1:1/mcp",), {"listen": "yes"}, "listen"),
    (("http://127.0.0.1:1/mcp",), {"name": 7}, "name"),
    (("http://127.0.0.1:1/mcp",), {"transport": "stdio"}, "transport"),
    (("http://127.0.0.1:1/mcp",), {"capabilities": ["x"]}, "capabilities"),
])
def test_mcp_client_rejects_a_bad_argument_at_construction(args, kwargs, argument):
    """MCPClient(3005) and the like: ConfigError naming the argument, before any connection."""
    with pytest.raises(ConfigError, match=argument):
        MCPClient(*args, **kwargs)


@pytest.mark.parametrize(("args", "kwargs", "argument"), [
    ((8080, "m"), {}, "base_url"),
    (("", "m"), {}, "base_url"),
    (("http://127.0.0.1:1/v1", None), {}, "model"),
    (("http://127.0.0.1:1/v1", "m"), {"api_key": 123}, "api_key"),
    (("http://127.0.0.1:1/v1", "m"), {"timeout_seconds": "120"}, "timeout_seconds"),
    (("http://127.0.0.1:1/v1", "m"), {"timeout_seconds": -1}, "timeout_seconds"),
    (("http://127.0.0.1:1/v1", "m"), {"timeout_seconds": float("inf")}, "timeout_seconds"),
    (("http://127.0.0.1:1/v1", "m"), {"stream": "yes"}, "stream"),
])
def test_openai_chat_rejects_a_bad_argument_at_construction(args, kwargs, argument):
    """openai_chat / OpenAIChat: ConfigError at construction, not an odd failure at the first call."""
    for make in (openai_chat, OpenAIChat):
        with pytest.raises(ConfigError, match=argument):
            make(*args, **kwargs)


def test_issue_27_new_user_mcp_servers_given_a_config_file_name_suggests_a_path():
    """Issue 27, a new user's first hour: ``mcp_servers="mcp.json"`` did not suggest ``Path``."""
    from yiemagent import Agent, ConfigError
    from yiemagent.testing import text_reply

    with pytest.raises(ConfigError, match=r"pathlib\.Path\('mcp\.json'\)"):
        Agent(lambda messages, tools: text_reply("x"), mcp_servers="mcp.json")
