"""Simulation-based calibration (``benchmarks/sbc.py``), reduced.

The SBC run is slow (hundreds of fits) and deselected by default: ``pytest -m slow
tests/benchmarks/test_sbc.py``. Its threshold is honest for the replicates it runs: with five
quantities tested, a p-value below 0.001 has a chance of about 0.5% under a calibrated
model, while a posterior that is a third too narrow or shifted by half a posterior standard
deviation fails it (checked on synthetic ranks by the fast test). The logit-normal model
(NUTS, seconds per fit) is left to the benchmark itself.
"""

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_benchmark

sbc = load_benchmark("sbc")
THRESHOLD = 0.001


def _synthetic_ranks(
    scale: float, shift: float, replicates: int = 300, draws: int = 99, seed: int = 0
) -> pd.DataFrame:
    """Ranks of a N(0, 1) truth among draws of a posterior N(shift, scale) of the prior
    predictive (conjugate normal with known unit prior and likelihood variance)."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(replicates)
    y = theta + rng.standard_normal(replicates)
    post_mean, post_sd = y / 2, np.sqrt(0.5)
    d = (
        post_mean[:, None]
        + shift * post_sd
        + scale * post_sd * rng.standard_normal((replicates, draws))
    )
    ranks = (d < theta[:, None]).sum(axis=1)
    return pd.DataFrame(dict(model="normal", quantity="theta", rank=ranks, draws=draws))


def test_uniformity_test_has_power():
    calibrated = sbc.uniformity(_synthetic_ranks(1.0, 0.0), bins=10).iloc[0]
    too_narrow = sbc.uniformity(_synthetic_ranks(2 / 3, 0.0), bins=10).iloc[0]
    shifted = sbc.uniformity(_synthetic_ranks(1.0, 0.5), bins=10).iloc[0]
    assert calibrated["p_chi2"] > THRESHOLD and calibrated["p_ks"] > THRESHOLD
    assert too_narrow["p_chi2"] < THRESHOLD
    assert shifted["p_ks"] < THRESHOLD


@pytest.mark.slow
@pytest.mark.parametrize("model", ["beta_binomial", "hierarchical"])
def test_sbc_ranks_are_uniform(model):
    opts = dict(n_tasks=12, n_trials=6, draws=99, ln_chains=2, ln_draws=500, ln_tune=500)
    ranks = sbc.run_sbc(model, 200, seed=5, opts=opts, jobs=1)
    table = sbc.uniformity(ranks, bins=10, seed=5)
    assert (table["replicates"] == 200).all()
    for _, row in table.iterrows():
        assert row["p_chi2"] > THRESHOLD, row.to_dict()
        assert row["p_ks"] > THRESHOLD, row.to_dict()
