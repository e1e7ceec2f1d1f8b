"""Example MCP servers shipped with yiemagent (they need the ``mcp`` package: ``pip install yiemagent[demo]``)."""
