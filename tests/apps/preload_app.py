"""A WSGI app whose agents are made at import, for ``gunicorn --preload`` (issue 15, point 6).

``/started``: an agent started at import (in the gunicorn master, before the fork);
``/cold``: an agent made at import and used through ``ask()`` without ``start()``. Each answers
``200 <content>`` or ``500 <ErrorType>: <message>``.
"""

from yiemagent import Agent
from yiemagent.testing import ScriptedLLM, text_reply

STARTED = Agent(ScriptedLLM([text_reply("started")], repeat_last=True)).start()
COLD = Agent(ScriptedLLM([text_reply("cold")], repeat_last=True))


def app(environ, start_response):
    agent = STARTED if environ["PATH_INFO"] == "/started" else COLD
    try:
        body, status = agent.ask("hi", timeout_seconds=20)["content"], "200 OK"
    except Exception as exc:  # noqa: BLE001 - shown to the test
        body, status = f"{type(exc).__name__}: {exc}", "500 Internal Server Error"
    start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
    return [body.encode("utf-8")]
