"""The MCP server tests' booking server (``tests.mcp.server.kit.Booking``) for ``python -m yiemagent.mcp.server``.

``python -m yiemagent.mcp.server tests.servers.served_booking:server`` serves it on stdio (issue 28).
"""

from tests.mcp.server.kit import Booking

server = Booking().server()
