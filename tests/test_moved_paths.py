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

from yiemagent._internal.moved import MOVED

ROOT = Path(__file__).resolve().parents[1]

_PROBE = r"""
import importlib, json, sys, warnings
old, new, how = sys.argv[1:4]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    if how == "import":
        module = importlib.import_module(old)
    elif how == "from":
        namespace = {}
        exec(f"from {old.rpartition('.')[0]} import {old.rpartition('.')[2]} as module", namespace)
        module = namespace["module"]
    else:  # the attribute of the package, nothing imported by name
        import yiemagent
        module = getattr(yiemagent, old.rpartition(".")[2])
print(json.dumps({"same": module is importlib.import_module(new),
                  "warnings": [(w.category.__name__, str(w.message), w.filename) for w in caught]}))
"""


def _probe(old: str, new: str, how: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, old, new, how], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


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


def test_from_import_and_attribute_access_warn_at_the_callers_line():
    """``from yiemagent import compaction`` and ``yiemagent.usage_limits`` work and warn too; the warning
    points at the caller (not at importlib), so ``-W error::DeprecationWarning`` shows the line to change.
    """
    got = _probe("yiemagent.compaction", "yiemagent.context.compaction", "from")
    assert got["same"] and [w[0] for w in got["warnings"]] == ["DeprecationWarning"]
    assert "yiemagent.context.compaction" in got["warnings"][0][1]
    assert not got["warnings"][0][2].startswith("<frozen")
    got = _probe("yiemagent.usage_limits", "yiemagent.context.usage_limits", "attribute")
    assert got["same"] and [w[0] for w in got["warnings"]] == ["DeprecationWarning"]


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
