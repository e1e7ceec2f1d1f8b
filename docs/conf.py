"""Sphinx configuration of the yiemagent documentation (``python -m sphinx -W -b html docs docs/_build``)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's yiemagent, also when another copy is installed

from yiemagent import __version__  # noqa: E402

project = "yiemagent"
author = "the yiemagent authors"
copyright = "2026, the yiemagent authors"
release = version = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]
exclude_patterns = ["_build"]
default_role = "literal"          # `x` in docstrings is code, as ``x``
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# each object once, on the page of the module that defines it (packages re-export in __all__)
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True          # Attributes: as fields, not a second description of a property
# The optional extras' libraries need not be installed to build the reference.
autodoc_mock_imports = ["xllamacpp", "psycopg", "dbos", "celery", "flask", "opentelemetry", "openai", "litellm",
                        "jwt", "yaml", "tiktoken", "regex"]

try:
    import furo  # noqa: F401
    html_theme = "furo"
except ImportError:  # the theme is in the `docs` and `test` extras; alabaster ships with Sphinx
    html_theme = "alabaster"
html_title = f"yiemagent {release}"
html_static_path = ["_static"]
