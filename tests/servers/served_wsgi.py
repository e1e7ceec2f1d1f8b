"""WSGI entry points of the MCP server tests' ``build()`` server, for gunicorn (issue 28).

``stateless``: ``gunicorn -k gthread --workers 2 --threads 4 tests.servers.served_wsgi:stateless``;
``sessions``: the same app with sessions (run it with one worker).
"""

from tests.mcp.server.kit import build

stateless = build().wsgi_app(stateless=True)
sessions = build().wsgi_app()
