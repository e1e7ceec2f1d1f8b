"""``mcp_status()`` after ``start()`` (issue 20, point 6): the servers are listed at once, not at the first run.

Real servers: the demo's weather server over Streamable HTTP (official ``mcp`` SDK, ``weather_server``
fixture) and a URL where nothing listens.
"""

from __future__ import annotations

import time
from typing import Any

from yiemagent import Agent
from yiemagent.testing import ScriptedLLM, text_reply


def _states(agent: Agent) -> dict[str, str]:
    return {s["server"]: s["state"] for s in agent.mcp_status()}


def test_started_agent_lists_its_servers_before_any_run_and_says_connecting_meanwhile(weather_server: Any,
                                                                                       free_port: int) -> None:
    """Issue 20: ``mcp_status()`` said ``not_connected`` until the first run. Now ``start()`` lists in the
    background: each server is ``connecting`` or already ``connected``/``unavailable``, and within seconds
    ``connected`` (with its tools) and ``unavailable`` (with the reason), with no input sent. A first run
    then lists nothing twice, the model sees the tools, and the run's stream tells the first listing once.
    """
    dead = f"http://127.0.0.1:{free_port}/mcp"
    llm = ScriptedLLM([text_reply("ok")])
    agent = Agent(llm, mcp_servers={"weather": weather_server, "dead": dead})
    assert set(_states(agent).values()) == {"not_connected"}  # not started: listed at the first run
    agent.start()
    try:
        assert set(_states(agent).values()) <= {"connecting", "connected", "unavailable"}
        deadline = time.monotonic() + 20
        while "connecting" in _states(agent).values():
            assert time.monotonic() < deadline, agent.mcp_status()
            time.sleep(0.05)
        status = {s["server"]: s for s in agent.mcp_status()}
        assert status["weather"]["state"] == "connected" and "get_weather" in status["weather"]["tools"]
        assert status["dead"]["state"] == "unavailable" and status["dead"]["error"]
        assert llm.calls == []  # no run happened
        items = list(agent.stream("hi"))
        assert items[-1]["content"] == "ok"  # type: ignore[index]
        assert "get_weather" in {t["function"]["name"] for t in llm.calls[0]["tools"]}
        # the listing made at start() is told in the first run, once, as before (streams see it)
        changed = [i for i in items if not isinstance(i, dict) and i.type == "tools_changed"]
        assert len(changed) == 1 and {"get_weather", "get_time"} <= set(changed[0].added)  # type: ignore[union-attr]
    finally:
        agent.shutdown()
