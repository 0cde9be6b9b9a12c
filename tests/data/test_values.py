"""Numeric cells judged exactly: a Decimal or Fraction counts only if exactly 0, 1 or whole."""

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import bayeval as be

_NEAR_ONE = [Decimal("0.99999999999999999999"), Fraction(10**20 - 1, 10**20)]
_NEAR_TWO = [Decimal("2.00000000000000000001"), Fraction(2 * 10**20 + 1, 10**20)]


@pytest.mark.parametrize("value", _NEAR_ONE, ids=["Decimal", "Fraction"])
def test_outcomes_near_one_are_not_successes(value):
    # regression: the cell was rounded through float to 1.0 and counted as a success
    df = pd.DataFrame({"system": "A", "task": ["t1", "t2"], "success": [0, value]})
    with pytest.raises(
        ValueError,
        match=rf"column 'success' must hold 0 or 1.*found \[{_escaped(value)}\] in row \[1\]",
    ):
        be.from_frame(df)


def test_exact_ones_and_zeros_are_outcomes():
    df = pd.DataFrame(
        {
            "system": "A",
            "task": ["t1"] * 4,
            "success": [Decimal("1.000"), Fraction(2, 2), Decimal("-0"), Decimal("0E+5")],
        }
    )
    data = be.from_frame(df)
    assert data.dataset["successes"].values.tolist() == [[2]]
    assert data.dataset["trials"].values.tolist() == [[4]]


@pytest.mark.parametrize("value", _NEAR_TWO, ids=["Decimal", "Fraction"])
def test_counts_near_a_whole_number_are_refused(value):
    # regression: read as 2 successes through float
    df = pd.DataFrame({"system": "A", "task": ["t1", "t2"], "k": [1, value], "n": [3, 3]})
    with pytest.raises(
        ValueError, match=rf"column 'k' must hold whole.*\[{_escaped(value)}\] in row \[1\]"
    ):
        be.from_frame(df, successes="k", trials="n")
    with pytest.raises(ValueError, match=r"successes must hold whole.*\(0, 1\)"):
        be.from_counts(np.array([1, value], dtype=object), 3)
    with pytest.raises(ValueError, match=rf"trials must hold whole.*\[{_escaped(value)}\]"):
        be.from_counts([1, 1], np.array([3, value], dtype=object))


def test_exact_whole_numbers_are_counts():
    data = be.from_counts(np.array([Decimal("1E+1"), Fraction(6, 3)], dtype=object), 10)
    assert data.dataset["successes"].values.tolist() == [[10, 2]]


def test_scores_are_judged_exactly():
    # regression: 0.99999999999999999999 counted as full credit, 1.00000000000000000001 passed
    df = pd.DataFrame({"system": "A", "task": ["t1", "t2", "t3"], "score": [*_NEAR_ONE, 1]})
    data = be.from_frame(df, score="score")
    assert data.dataset["score_n1"].values.tolist() == [[0, 0, 1]]
    assert data.dataset["score_nmid"].values.tolist() == [[1, 1, 0]]
    assert data.dataset["successes"].values.tolist() == [[0, 0, 1]]
    over = df.assign(score=[0, Decimal("1.00000000000000000001"), Fraction(-1, 10**30)])
    with pytest.raises(
        ValueError,
        match=r"score column 'score' must hold scores in \[0, 1\].*"
        r"\[Decimal\('1\.00000000000000000001'\), Fraction\(-1, 10{30}\)\] in rows \[1, 2\]",
    ):
        be.from_frame(over, score="score")


def test_exact_cells_are_not_changed():
    cells = [Decimal("0.99999999999999999999"), Fraction(1, 3)]
    df = pd.DataFrame({"system": "A", "task": ["t1", "t2"], "score": cells})
    before = df.copy(deep=True)
    be.from_frame(df, score="score")
    pd.testing.assert_frame_equal(df, before)
    assert list(df["score"]) == cells


def _escaped(value) -> str:
    return repr(value).replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")
