"""Agents and clients made before ``os.fork()``, used in the child: ``python -m tests.apps.fork_child URL CMD...``.

The parent makes (1) an agent and starts it, (2) an agent used through ``ask()`` without
``start()``, (3) an HTTP ``MCPClient`` to URL and (4) a stdio ``MCPClient`` running CMD, uses
each once, then forks. The child uses each again and prints one JSON line: per object,
``["ok", answer]`` or ``["error", type, message, seconds]``. A hang shows as the test's timeout.
"""

import json
import os
import sys
import time

from yiemagent import Agent, MCPClient
from yiemagent.testing import ScriptedLLM, text_reply


def attempt(fn):
    begun = time.monotonic()
    try:
        return ["ok", fn()]
    except Exception as exc:  # noqa: BLE001 - reported to the test
        return ["error", type(exc).__name__, str(exc), round(time.monotonic() - begun, 2)]


def main() -> None:
    url, command = sys.argv[1], sys.argv[2:]
    started = Agent(ScriptedLLM([text_reply("parent")], repeat_last=True)).start()
    cold = Agent(ScriptedLLM([text_reply("cold")], repeat_last=True))
    http = MCPClient(url)
    stdio = MCPClient.stdio(command[0], command[1:])
    assert started.ask("hi", timeout_seconds=30)["content"] == "parent"
    assert cold.ask("hi", timeout_seconds=30)["content"] == "cold"
    http_tools = sorted(t["name"] for t in http.list_tools())
    stdio_tools = sorted(t["name"] for t in stdio.list_tools())
    pid = os.fork()
    if pid == 0:
        report = {
            "started": attempt(lambda: started.ask("again", timeout_seconds=20)["content"]),
            "started_put": attempt(lambda: started.input_queue.put("again", timeout=5)),
            "cold": attempt(lambda: cold.ask("again", timeout_seconds=20)["content"]),
            "http": attempt(lambda: sorted(t["name"] for t in http.list_tools()) == http_tools),
            "stdio": attempt(lambda: stdio.list_tools()),
        }
        print(json.dumps(report), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    # the parent's objects still work after the child used (or refused) its copies
    parent = {"started": started.ask("after", timeout_seconds=30)["content"],
              "http": sorted(t["name"] for t in http.list_tools()) == http_tools,
              "stdio": sorted(t["name"] for t in stdio.list_tools()) == stdio_tools}
    print(json.dumps({"parent": parent}), flush=True)
    started.shutdown()
    cold.shutdown()
    http.close()
    stdio.close()


if __name__ == "__main__":
    main()
