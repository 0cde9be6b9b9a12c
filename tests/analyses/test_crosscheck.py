"""The bootstrap twin of each estimand, as settings the bootstrap takes."""

import numpy as np
import pytest
import xarray as xr

import bayeval as be
from bayeval.analyses.crosscheck import bootstrap_twin, interval_widths
from bayeval.testing import fake_data, fake_results


@pytest.fixture(scope="module")
def clustered():
    truth = np.random.default_rng(0).uniform(0.2, 0.8, (2, 12))
    return fake_data(truth, clusters=3, seed=0)


@pytest.mark.parametrize(
    ("model", "estimand", "options", "expected"),
    [
        ("hierarchical", "tasks", {}, {"unit": "trial"}),
        ("hierarchical", "population", {}, {"unit": "task"}),  # the model has no clusters
        ("logit_normal", "tasks", {}, {"unit": "trial"}),
        # 3 clusters are too few to teach a new one: the default is the observed clusters
        (
            "logit_normal",
            "population",
            {},
            {"unit": "task", "clusters": "observed", "weighting": "task"},
        ),
        (
            "logit_normal",
            "population",
            {"clusters": "new"},
            {"unit": "cluster", "weighting": "cluster"},
        ),
        (
            "logit_normal",
            "population",
            {"clusters": "observed", "weighting": "cluster"},
            {"unit": "task", "clusters": "observed", "weighting": "cluster"},
        ),
    ],
)
def test_twin_settings_by_model_and_estimand(clustered, model, estimand, options, expected):
    res = fake_results(clustered, model=model, draws=20, chains=1, seed=0)
    twin = bootstrap_twin(res, estimand, **options)
    assert isinstance(twin, xr.Dataset)
    assert not twin.data_vars
    assert twin.attrs == expected


def test_twin_settings_are_the_bootstrap_keywords(clustered):
    res = fake_results(clustered, model="logit_normal", draws=20, chains=1, seed=0)
    twin = bootstrap_twin(res, "population", clusters="new")
    boot = be.bootstrap.pass_at_k(clustered, n_boot=50, seed=0, **twin.attrs)
    assert boot.attrs["unit"] == "cluster"


def test_interval_widths_by_hand():
    """Widths and their ratio by plain arithmetic, per system and bound; a bootstrap interval
    of zero width gives an infinite ratio (NaN when both are zero), a missing bound NaN."""
    bounds = {"ci_bound": ["lower", "upper"]}
    bayes = [[0.1, 0.4], [0.2, 0.2], [0.3, 0.5], [np.nan, 0.6]]
    boot = [[0.2, 0.4], [0.5, 0.5], [0.4, 0.4], [0.1, 0.3]]
    coords = {"system": ["A", "B", "C", "D"], **bounds}
    out = interval_widths(
        xr.DataArray(bayes, dims=("system", "ci_bound"), coords=coords),
        xr.DataArray(boot, dims=("system", "ci_bound"), coords=coords),
    )
    assert out["width_ratio"].dims == ("system",)
    assert out["bayes_width"].values.tolist()[:3] == [0.4 - 0.1, 0.0, 0.5 - 0.3]
    assert out["bootstrap_width"].values.tolist() == [0.4 - 0.2, 0.0, 0.0, 0.3 - 0.1]
    ratio = out["width_ratio"].values
    assert ratio[0] == (0.4 - 0.1) / (0.4 - 0.2)
    assert np.isnan(ratio[1]) and ratio[2] == np.inf and np.isnan(ratio[3])
