"""A script with a terminal approval prompt in ``before_tool_call``: ``python -m tests.apps.approval_prompt MODE``.

MODE: ``cold`` (ask() without start()), ``started``, ``with`` (the ``with Agent(...)`` block);
PROMPT: ``ask_user`` (yiemagent's abortable prompt) or ``input`` (the builtin). Prints
``answer: <content>`` after the run, ``done`` at the end.
"""

import sys

from yiemagent import Agent, BeforeToolCallResult, ask_user, tool
from yiemagent.testing import ScriptedLLM, text_reply, tool_call_reply


@tool
def remove(path: str) -> str:
    """Remove a file."""
    print(f"REMOVED {path}", flush=True)
    return f"removed {path}"


def main() -> None:
    mode, prompt = sys.argv[1], sys.argv[2]

    def approve(ctx, abort_event):
        question = f"run {ctx.tool_call.name}? [y/N] "
        answer = ask_user(question, abort_event) if prompt == "ask_user" else input(question)
        return None if answer == "y" else BeforeToolCallResult(block=True, reason="the user said no")

    llm = ScriptedLLM([tool_call_reply("remove", {"path": "a.txt"}), text_reply("finished")])
    if mode == "with":
        with Agent(llm, tools=[remove], before_tool_call=approve) as agent:
            print("answer:", agent.ask("go")["content"], flush=True)
    else:
        agent = Agent(llm, tools=[remove], before_tool_call=approve)
        if mode == "started":
            agent.start()
        print("answer:", agent.ask("go")["content"], flush=True)
        agent.shutdown()
    print("done", flush=True)


if __name__ == "__main__":
    main()
