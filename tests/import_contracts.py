"""An import-linter contract type: no module takes a private name (``_x``) from another package.

import-linter's own ``private_modules`` contract guards private *modules*
(``yiemagent.mcp._secrets`` only from inside ``yiemagent.mcp``); this one
guards private *names*: ``from ..agent import _Input`` in ``yiemagent.store``
is refused, ``from .agent_tool import _x`` inside the same package
is not. A module's package is its parent (a package's ``__init__`` is its own).
Configured in ``setup.cfg`` (``[importlinter:contract:private-names]``) and run
by ``lint-imports`` in CI (tests/test_layout.py).
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib
from typing import Any

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def _package(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def _source(module: str) -> pathlib.Path | None:
    """The file of ``module``, found from its top-level package's folder without importing anything."""
    top, _, rest = module.partition(".")
    spec = importlib.util.find_spec(top)  # a top-level name: located, not executed
    if spec is None or spec.origin is None:
        return None
    base = pathlib.Path(spec.origin).parent.joinpath(*rest.split(".")) if rest else pathlib.Path(spec.origin).parent
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _resolve(importer_package: str, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    parts = importer_package.split(".")
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


class PrivateNamesContract(Contract):
    """Private names (``_x``, not dunders) are imported only from modules of the importer's own package."""

    type_name = "private_names"

    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        """Parse each module of the containers and list every import of a private name across packages."""
        containers: list[str] = list(self.containers)  # type: ignore[call-overload]
        broken: list[dict[str, Any]] = []
        for module in sorted(graph.modules):
            if not any(module == c or module.startswith(c + ".") for c in containers):
                continue
            path = _source(module)
            if path is None:
                continue
            own = _package(module, path.name == "__init__.py")
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.ImportFrom):
                    continue
                source = _resolve(own, node.level, node.module)
                source_is_package = source in graph.modules and graph.find_children(source) != set()
                source_package = _package(source, source_is_package or source == containers[0])
                for alias in node.names:
                    name = alias.name
                    private = name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
                    if private and source_package != own and f"{source}.{name}" not in graph.modules:
                        broken.append({"importer": module, "source": source, "name": name, "line": node.lineno})
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        """One line per private name taken from another package."""
        output.print_error("Private names imported from another package:", bold=False)
        output.new_line()
        for item in check.metadata["broken"]:
            output.print_error(f"- {item['importer']} (l.{item['line']}) takes {item['name']} from {item['source']}",
                               bold=False)
            output.new_line()
