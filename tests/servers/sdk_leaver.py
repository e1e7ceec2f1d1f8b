"""A real ``mcp`` SDK client process that dies while a served tool asks it to confirm (issue 33 point 1).

``python -m tests.servers.sdk_leaver URL TAG``: connects in the 2025-11-25 era (``mode="legacy"``), calls
``confirm`` and, when the elicitation arrives, exits the process at once (``os._exit``): the connection closes
as when a user's client crashes or is killed.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio


async def main(url: str, tag: str) -> None:
    from mcp import Client

    async def elicit(context: Any, params: Any) -> Any:
        os._exit(0)

    with anyio.fail_after(120):
        async with Client(url, mode="legacy", elicitation_callback=elicit) as client:  # type: ignore[arg-type]
            await client.call_tool("confirm", {"tag": tag})
    sys.exit(3)  # the elicitation never came


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
