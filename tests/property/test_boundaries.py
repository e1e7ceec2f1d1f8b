"""Issue 15 point 3: one hostile corpus through every boundary in ``yiemagent.textpolicy.BOUNDARIES``.

The corpus mixes terminal escape sequences (CSI, OSC title and OSC 52 clipboard, DCS, 8-bit C1), lone
surrogates, NaN/Infinity, bytes, bidi overrides and a registered secret. Each boundary's output must keep
its kind's rule (see ``tests/property/boundaries.py``). CI runs 300 examples per boundary
(3,600 in all); ``scripts/fuzz_boundaries.py`` runs 100,000+.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from tests.property.boundaries import check as check_boundary
from tests.property.boundaries import hostile_values, load_boundaries
from yiemagent.textpolicy import EXPECTED_BOUNDARIES

TABLE = load_boundaries()


def test_every_expected_boundary_is_in_the_table():
    """A boundary is not done until it is in the table: each named one has registered its writer."""
    assert EXPECTED_BOUNDARIES <= set(TABLE), sorted(EXPECTED_BOUNDARIES - set(TABLE))


@pytest.mark.parametrize("name", sorted(TABLE))
@settings(max_examples=300)  # 12 boundaries: 3,600 examples in CI
@given(value=hostile_values)
def test_the_hostile_corpus_keeps_each_boundarys_rule(name: str, value: Any) -> None:
    check_boundary(TABLE[name], value)
