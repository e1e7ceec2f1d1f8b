"""The ``WWW-Authenticate`` header of a 401/403: the ``Bearer`` challenge's parameters.

``parse_bearer_challenge('Bearer resource_metadata="https://x/.well-known/...", scope="a b"')``
gives ``{"resource_metadata": "https://x/...", "scope": "a b"}``. Parameter names are
lower-cased; quoted values are unescaped (RFC 9110 §11.2 ``auth-param``); other schemes
(``Basic``, ``DPoP``) and a ``token68`` are skipped. A header that does not parse gives what
was read up to the fault (a server's malformed header never stops the flow).

Spec: RFC 6750 §3 (``error``, ``scope``), RFC 9728 §5.1 (``resource_metadata``),
MCP 2025-11-25 "Authorization" ("Protected Resource Metadata Discovery Requirements",
"Scope Selection Strategy", "Step-Up Authorization Flow").
"""

from __future__ import annotations

import re

__all__ = ["parse_bearer_challenge", "parse_challenges"]

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_SCHEME = re.compile(rf"\s*({_TOKEN})(?=\s|,|$)")
_PARAM = re.compile(rf'\s*({_TOKEN})\s*=\s*(?:"((?:[^"\\]|\\.)*)"|({_TOKEN}))\s*')
_TOKEN68 = re.compile(r"\s*[A-Za-z0-9\-._~+/]+=*\s*(?=,|$)")


def parse_challenges(header: str) -> list[tuple[str, dict[str, str]]]:
    """Every challenge of a ``WWW-Authenticate`` value: ``[(scheme lower-cased, {param: value})]``."""
    challenges: list[tuple[str, dict[str, str]]] = []
    pos = 0
    text = header or ""
    while pos < len(text):
        while pos < len(text) and text[pos] in ", \t":
            pos += 1
        scheme = _SCHEME.match(text, pos)
        if scheme is None:
            break
        params: dict[str, str] = {}
        challenges.append((scheme.group(1).lower(), params))
        pos = scheme.end()
        token68 = _TOKEN68.match(text, pos)
        if token68 is not None and "=" not in text[pos:token68.end()].rstrip("= \t"):
            if not _PARAM.match(text, pos):
                pos = token68.end()
                continue
        while True:
            param = _PARAM.match(text, pos)
            if param is None:
                break
            # a "scheme" followed by a param starts the next challenge: ``Bearer a="1", DPoP b="2"``
            name = param.group(1).lower()
            value = param.group(2)
            params[name] = re.sub(r"\\(.)", r"\1", value) if value is not None else param.group(3)
            pos = param.end()
            if pos < len(text) and text[pos] == ",":
                pos += 1
                continue
            break
    return challenges


def parse_bearer_challenge(header: str | None) -> dict[str, str]:
    """The parameters of the ``Bearer`` challenge in ``header`` ({} if none)."""
    for scheme, params in parse_challenges(header or ""):
        if scheme == "bearer":
            return params
    return {}
