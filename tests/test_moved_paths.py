"""Old import paths of the modules that moved into concept folders (issue 25 point 4; yiemagent-defined).

Every old public path keeps working for one release, warns with a ``DeprecationWarning`` naming the new
path, and gives the very module object of the new path; CHANGELOG.rst lists every moved path. Each check
runs in a fresh interpreter, so that no earlier import in this test session hides the warning.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from yiemagent._internal.moved import MOVED

pytestmark = pytest.mark.slow  # each check starts a fresh interpreter

ROOT = Path(__file__).resolve().parents[1]

def test_every_old_path_imports_the_new_module_and_warns_naming_it():
    """``import yiemagent.<old>`` for each moved module: the new module, one DeprecationWarning naming it."""
    script = "\n".join([
        "import importlib, json, warnings",
        f"moved = {dict(MOVED)!r}",
        "out = {}",
        "for old, new in moved.items():",
        "    with warnings.catch_warnings(record=True) as caught:",
        "        warnings.simplefilter('always')",
        "        module = importlib.import_module(old)",
        "    out[old] = [module is importlib.import_module(new),",
        "                [(w.category.__name__, str(w.message)) for w in caught]]",
        "print(json.dumps(out))",
    ])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert len(result) == len(MOVED) >= 40
    for old, (same, caught) in result.items():
        assert same, old
        assert [c for c, _ in caught] == ["DeprecationWarning"], (old, caught)
        assert MOVED[old] in caught[0][1] and old in caught[0][1]


def test_mosaico_741_sklearn_7963_an_old_path_warns_at_the_importing_line_under_default_filters(tmp_path):
    """``import``, ``from ... import``, ``from yiemagent import x``, ``yiemagent.x`` and ``import_module``: each
    warns once, at the user's own line, so Python's default filters show it for a script (a warning pointed
    at importlib or ``sys:1`` is hidden); found by a fresh user's trial of issue 25's move.
    """
    script = tmp_path / "user_script.py"
    script.write_text(
        "import importlib\n"
        "import yiemagent.compaction\n"
        "from yiemagent.usage_limits import UsageLimits\n"
        "from yiemagent import harmony\n"
        "import yiemagent\n"
        "x = yiemagent.events\n"
        "importlib.import_module('yiemagent.dialects')\n"
        "def inner():\n"
        "    import yiemagent.llm\n"
        "inner()\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "DeprecationWarning" in line]
    where = [line.split(": DeprecationWarning")[0] for line in lines]
    assert where == [f"{script}:{n}" for n in (2, 3, 4, 6, 7, 9)], done.stderr


def test_an_old_import_leaves_the_real_module_its_own_spec():
    """After ``from yiemagent.usage_limits import ...`` the real module still names itself
    ``yiemagent.context.usage_limits`` (``__spec__``, ``find_spec``), so ``importlib.reload`` of it works.
    """
    script = ("import importlib, importlib.util, warnings\nwarnings.simplefilter('ignore')\n"
              "from yiemagent.usage_limits import UsageLimits\nimport yiemagent.context.usage_limits as new\n"
              "new.UsageLimits = None\nimportlib.reload(new)\n"
              "print(new.__spec__.name, importlib.util.find_spec(new.__name__).name, new.UsageLimits is not None)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["yiemagent.context.usage_limits", "yiemagent.context.usage_limits", "True"]


def test_names_of_old_modules_still_resolve():
    """A name from an old module (``from yiemagent.jsonsafe import json_safe``) is the same object as the new
    module's; an unknown attribute of the package is still an AttributeError.
    """
    script = ("import warnings\nwarnings.simplefilter('ignore')\n"
              "from yiemagent.jsonsafe import json_safe\nfrom yiemagent.textpolicy import json_safe as new\n"
              "from yiemagent.tracing import instrument\nfrom yiemagent.loop.tracing import instrument as t\n"
              "import yiemagent\nassert json_safe is new and instrument is t\n"
              "try:\n    yiemagent.no_such_module\nexcept AttributeError as exc:\n    print('AttributeError', exc)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("AttributeError")


def test_the_changelog_lists_every_moved_path():
    """CHANGELOG.rst names each old path and its new one."""
    text = (ROOT / "CHANGELOG.rst").read_text(encoding="utf-8")
    missing = [f"{old} -> {new}" for old, new in MOVED.items() if f"``{old}``" not in text or f"``{new}``" not in text]
    assert missing == []
