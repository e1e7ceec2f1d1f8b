"""The docs' "Assistant features against peers" table: every yiemagent row names tests that exist.

The table moved from README.rst to docs/comparison.rst (issue 20, point 4).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_yiemagent_row_of_the_features_table_names_tests_that_exist():
    text = (ROOT / "docs" / "comparison.rst").read_text(encoding="utf-8")
    section = text.split("Assistant features against peers\n", 1)[1].split("\nMCP client features against peers", 1)[0]
    rows = {}
    for row in section.split("   * - ")[2:]:  # [0] is the preamble, [1] the header row
        cells = [cell.strip() for cell in row.split("\n     - ")]
        rows[cells[0]] = cells[1]
    assert set(rows) == {"Typed answers", "Validator retry", "Approval across processes", "Agents as tools",
                         "Fallback", "Usage limits", "Compaction", "Tracing", "Serving over MCP", "Frontend streams",
                         "Branching", "Guardrails", "Prompt caching"}
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("test_*.py"))
    defined = set(re.findall(r"^def (test_\w+)", sources, re.M))
    files = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    missing = []
    for feature, cell in rows.items():
        names = re.findall(r"``(test_\w+?)(?:\.py)?``", cell)
        assert len(names) >= 3, f"the {feature!r} row names fewer than 3 tests"
        missing += [n for n in names if n not in defined and f"{n}.py" not in files]
    assert missing == []
