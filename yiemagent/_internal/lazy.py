"""Names of a package loaded on first use (PEP 562), so ``import yiemagent`` loads only what it needs.

A package's ``__init__.py`` lists its public names and the module each comes from, and keeps the eager
imports under ``if TYPE_CHECKING:`` for type checkers::

    __getattr__, __dir__ = lazy_exports(__name__, {"Agent": ".agent", "from_openai_response":
                                                   ".messages.tool_calls:parse_response"})

The first ``package.Agent`` (or ``from package import Agent``) imports ``package.agent`` and keeps the
object in the package's namespace, so later lookups are plain attribute reads. An attribute that is not
a listed name but names a submodule (``yiemagent.mcp.client`` after only ``import yiemagent.mcp``) imports
that submodule, as an eager package would have had it already.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    fallback: Callable[[str], Any] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` whose names ``exports`` maps to their modules.

    Args:
        package: the package's ``__name__``.
        exports: public name -> ``".module"`` (relative to ``package``) holding an object of that name, or
            ``".module:other"`` for one of another name.
        fallback: called with a name that is neither an export nor a submodule (the root package's moved
            modules); raises ``AttributeError`` itself when the name is unknown.
    """

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is not None:
            module_name, _, attribute = target.partition(":")
            value = getattr(importlib.import_module(module_name, package), attribute or name)
            setattr(sys.modules[package], name, value)  # the next lookup is a plain attribute
            return value
        if fallback is not None:
            try:
                return fallback(name)
            except AttributeError:
                pass
        if not name.startswith("__"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
