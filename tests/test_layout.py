"""The package's layout rules, checked by a machine (issue 14 point 3).

The import contracts live in ``setup.cfg`` (``[importlinter]``) and run with
import-linter's ``lint-imports``: layers only downward (core <- models | store
| mcp <- agent <- cli | workers <- examples), no import circles between
siblings, private modules and private names only from inside their package.
"""

from __future__ import annotations

import configparser
import importlib
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "yiemagent"
MAX_LINES = 500
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(*args: str, cwd: Path = ROOT, pythonpath: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(pythonpath) + os.pathsep + str(ROOT), PYTHONIOENCODING="utf-8")
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow  # starts lint-imports
def test_import_contracts_hold():
    """``lint-imports`` keeps every contract of setup.cfg (yiemagent-defined architecture)."""
    done = _lint_imports()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 kept, 0 broken" in done.stdout


def test_no_module_is_over_500_lines():
    """Every module of the package is under the ~500-line budget (tests and scripts excepted)."""
    offenders = {str(path.relative_to(ROOT)): n for path in PACKAGE.rglob("*.py")
                 if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert offenders == {}


def test_every_top_level_module_is_in_a_layer():
    """A new module at the top of the package must be placed in the layers contract, so none escapes it."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    named = set(config["importlinter:contract:layers"]["layers"].replace("|", " ").replace(":", " ").split())
    top = {f"yiemagent.{path.stem}" for path in PACKAGE.glob("*.py") if path.name != "__init__.py"}
    top |= {f"yiemagent.{path.parent.name}" for path in PACKAGE.glob("*/__init__.py")}
    assert top - named == set()
    assert named - top == set()


@pytest.mark.slow  # starts lint-imports
def test_the_contracts_catch_a_layer_break_a_circle_and_a_private_name(tmp_path):
    """The same contract types refuse each kind of break in a small package made here."""
    pkg = tmp_path / "toypkg"
    (pkg / "low").mkdir(parents=True)
    (pkg / "high").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "high" / "__init__.py").write_text("")
    (pkg / "low" / "base.py").write_text("from ..high import app\n_secret = 1\n")  # up a layer, and a circle
    (pkg / "high" / "app.py").write_text("from ..low.base import _secret\n")  # a private name
    (tmp_path / "setup.cfg").write_text(textwrap.dedent("""\
        [importlinter]
        root_package = toypkg
        contract_types =
            private_names: tests.import_contracts.PrivateNamesContract

        [importlinter:contract:layers]
        name = layers
        type = layers
        layers =
            toypkg.high
            toypkg.low

        [importlinter:contract:cycles]
        name = cycles
        type = acyclic_siblings
        ancestors =
            toypkg

        [importlinter:contract:names]
        name = names
        type = private_names
        containers =
            toypkg
        """))
    done = _lint_imports(cwd=tmp_path, pythonpath=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "0 kept, 3 broken" in done.stdout
    assert "toypkg.low is not allowed to import toypkg.high" in done.stdout
    assert "toypkg.high.app (l.1) takes _secret from toypkg.low.base" in done.stdout




def _resolves(dotted: str) -> bool:
    """True if ``dotted`` names a module, or an attribute reached from the longest importable module prefix."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:n]))
        except ImportError:
            continue
        try:
            for attribute in parts[n:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            return False
        return True
    return False


def test_readme_imports_and_dotted_paths_resolve():
    """Every ``from yiemagent... import ...`` line of the README and the docs (examples, doctests) runs,
    and every ``yiemagent.x.y`` path they name exists, so a moved module fails here, not in a reader's
    hands. The ``>>>`` examples also run whole as doctests (setup.cfg ``--doctest-glob``).
    """
    text = "\n".join(path.read_text(encoding="utf-8")
                     for path in [ROOT / "README.rst", *sorted((ROOT / "docs").rglob("*.rst"))])
    imports = sorted(set(re.findall(r"^[ >]*((?:from yiemagent[\w.]* import [\w, ]+)|(?:import yiemagent[\w.]*))\s*$",
                                    text, flags=re.MULTILINE)))
    assert len(imports) >= 10
    failures = []
    for statement in imports:
        try:
            exec(statement, {})
        except ImportError as exc:
            failures.append(f"{statement}: {exc}")
    now = re.sub(r"^``yiemagent[\w.]*``[^`\n]*?\s{2,}(?=``)", "", text, flags=re.MULTILINE)  # the moved table's
    paths = sorted(set(re.findall(r"``(yiemagent(?:\.\w+)+)", now)))  # "Before" column names old paths on purpose
    assert len(paths) >= 10
    failures += [f"``{path}`` does not exist" for path in paths if not _resolves(path)]
    assert failures == []
