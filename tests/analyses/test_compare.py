"""What a comparison says about the systems behind its population estimand."""

import bayeval as be
from bayeval.testing import fake_results


def _data(n_systems):
    rows = [[3, 5, 1, 8, 6], [6, 9, 2, 9, 7], [4, 4, 3, 7, 5]][:n_systems]
    return be.from_counts(rows, trials=10, systems=["A", "B", "C"][:n_systems])


def test_a_pair_inside_a_many_system_fit_names_every_system_behind_its_spread():
    res = fake_results(_data(3), model="logit_normal", seed=0)
    out = res.compare("A", "B")
    assert out.attrs["spreads_from"] == ["A", "B", "C"]
    assert "shared by the 3 systems of the fit" in out.attrs["spreads_note"]
    tasks = res.compare("A", "B", estimand="tasks")
    assert "spreads_from" not in tasks.attrs  # these tasks: no new task is drawn


def test_a_pair_fitted_alone_or_unpaired_uses_its_own_systems():
    alone = fake_results(_data(2), model="logit_normal", seed=0).compare("A", "B")
    assert alone.attrs["spreads_from"] == ["A", "B"] and alone.attrs["spreads_note"] == ""
    unpaired = fake_results(_data(3), model="hierarchical", seed=0).compare("B", "C")
    assert unpaired.attrs["spreads_from"] == ["B", "C"] and unpaired.attrs["spreads_note"] == ""
