"""Example MCP servers shipped with yiemagent.

They need the ``mcp`` package: ``pip install -e ".[demo]"`` in the checkout.
"""
