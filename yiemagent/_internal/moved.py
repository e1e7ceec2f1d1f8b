"""Old import paths of modules that moved into concept folders (after 0.1.0): they keep working, warning.

``import yiemagent.compaction`` (or ``from yiemagent.compaction import Compaction``, or the attribute
``yiemagent.compaction``) still gives the module, now ``yiemagent.context.compaction``, and warns once per
path with a ``DeprecationWarning`` that names the new path. The old paths go in the release after next;
CHANGELOG.rst lists them all. Private modules (``yiemagent._http``, ``yiemagent._serving``, ...) are not
aliased: they were never API.

Mechanism: a PEP 451 meta path finder installed by ``yiemagent/__init__.py`` (so the old module files need
not exist) and PEP 562 ``__getattr__`` on the package for attribute access.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from pathlib import Path
from types import ModuleType

__all__ = ["MOVED", "install", "moved_attribute"]

MOVED: dict[str, str] = {
    "yiemagent.agent_tool": "yiemagent.tools.agent_tool",
    "yiemagent.answers": "yiemagent.output.answers",
    "yiemagent.approvals": "yiemagent.tools.approvals",
    "yiemagent.arguments": "yiemagent.formats.arguments",
    "yiemagent.compaction": "yiemagent.context.compaction",
    "yiemagent.context_overflow": "yiemagent.context.overflow",
    "yiemagent.context_strategies": "yiemagent.context.strategies",
    "yiemagent.conversation": "yiemagent.loop.conversation",
    "yiemagent.dialects": "yiemagent.formats.dialects",
    "yiemagent.events": "yiemagent.loop.events",
    "yiemagent.formatting": "yiemagent.messages.formatting",
    "yiemagent.guard": "yiemagent.messages.guard",
    "yiemagent.harmony": "yiemagent.formats.harmony",
    "yiemagent.hooks": "yiemagent.tools.hooks",
    "yiemagent.journal": "yiemagent.loop.journal",
    "yiemagent.jsonsafe": "yiemagent.textpolicy",
    "yiemagent.llm": "yiemagent.formats.llm",
    "yiemagent.loop_config": "yiemagent.loop.config",
    "yiemagent.markdown_code": "yiemagent.formats.markdown_code",
    "yiemagent.message_dicts": "yiemagent.messages.dicts",
    "yiemagent.message_repair": "yiemagent.messages.repair",
    "yiemagent.message_types": "yiemagent.messages.types",
    "yiemagent.model_turn": "yiemagent.loop.model_turn",
    "yiemagent.normalise": "yiemagent.messages.normalise",
    "yiemagent.openai_messages": "yiemagent.messages.openai",
    "yiemagent.schema_checks": "yiemagent.tools.schema_checks",
    "yiemagent.schema_repair": "yiemagent.formats.schema_repair",
    "yiemagent.sse": "yiemagent.formats.sse",
    "yiemagent.streaming": "yiemagent.agent.streaming",
    "yiemagent.text_tool_calls": "yiemagent.formats.text_tool_calls",
    "yiemagent.token_budget": "yiemagent.context.token_budget",
    "yiemagent.tool_batch": "yiemagent.loop.tool_batch",
    "yiemagent.tool_calls": "yiemagent.messages.tool_calls",
    "yiemagent.tool_decorator": "yiemagent.tools.decorator",
    "yiemagent.tool_results": "yiemagent.tools.results",
    "yiemagent.tracing": "yiemagent.loop.tracing",
    "yiemagent.type_schema": "yiemagent.tools.type_schema",
    "yiemagent.typed_output": "yiemagent.output.typed_output",
    "yiemagent.typed_run": "yiemagent.output.typed_run",
    "yiemagent.usage_limits": "yiemagent.context.usage_limits",
    "yiemagent.versioned_tokens": "yiemagent._internal.versioned_tokens",
}
"""Old dotted path -> new dotted path of every moved public module."""


def _warn(old: str, new: str) -> None:
    """Warn at the line that named the old path: the first frame that is not the import machinery."""
    importlib_init = importlib.__file__
    package_init = str(Path(__file__).resolve().parents[1] / "__init__.py")
    lazy = str(Path(__file__).with_name("lazy.py"))  # the package's PEP 562 ``__getattr__`` (lazy_exports)
    frame, level = sys._getframe(1), 2
    while frame is not None:
        filename = frame.f_code.co_filename
        if "importlib" in filename and "_bootstrap" in filename:
            frame = frame.f_back  # type: ignore[assignment]  # warnings.warn skips these frames itself
            continue
        ours = filename in (__file__, importlib_init, lazy) or (filename == package_init
                                                          and frame.f_code.co_name == "__getattr__")
        if not ours:
            break
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    warnings.warn(f"{old} moved to {new}; import it from there (the old path goes in the release after next)",
                  DeprecationWarning, stacklevel=level)


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        _warn(spec.name, self.new)
        module = importlib.import_module(self.new)  # the real module: one object under both names
        self.real_spec = module.__spec__  # importlib sets __spec__ to the alias's spec; exec_module puts it back
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (``create_module`` returned the imported module): give it back its own ``__spec__``."""
        module.__spec__ = self.real_spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder of old paths on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())


def moved_attribute(name: str) -> ModuleType:
    """``yiemagent.<name>`` for a moved module (PEP 562 ``__getattr__``), with the warning.

    Raises:
        AttributeError: ``name`` is not a moved module.
    """
    old = f"yiemagent.{name}"
    if old not in MOVED:
        raise AttributeError(f"module 'yiemagent' has no attribute {name!r}")
    return importlib.import_module(old)
