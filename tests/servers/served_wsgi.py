"""WSGI entry points of the MCP server tests' ``build()`` server, for gunicorn (issue 28).

``stateless``: ``gunicorn -k gthread --workers 2 --threads 4 tests.servers.served_wsgi:stateless``;
``sessions``: the same app with sessions (run it with one worker); ``bearer``: ``sessions`` behind ``BearerAuth``.
"""

from tests.mcp.server.kit import build

stateless = build().wsgi_app(stateless=True)
sessions = build().wsgi_app()


def _bearer() -> object:
    """``sessions`` behind ``BearerAuth`` (HS256 JWTs signed with tests/mcp/server/test_identity.py's key)."""
    from yiemagent.mcp.server.auth import BearerAuth, JWTVerifier

    return BearerAuth(build().wsgi_app(), JWTVerifier(key="hs256-test-key-that-is-long-enough-0123456789",
                                                      issuer="http://127.0.0.1:9000", algorithms=["HS256"]),
                      resource="http://127.0.0.1:8000/mcp", authorization_servers=["http://127.0.0.1:9000"],
                      required_scopes=["mcp"])


bearer = _bearer()
