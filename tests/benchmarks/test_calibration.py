"""A fast version of the calibration study in ``benchmarks/calibration.py``.

Few simulations (30-40 per cell), the grid engine and small bootstraps: the thresholds are
loose on purpose and say only what the full study shows with room to spare (the full numbers
are in ``benchmarks/results/`` and the model cards).
"""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from bayeval.simulate import simulate_benchmark, simulate_many
from tests.helpers import ROOT, load_benchmark

cal = load_benchmark("calibration")
OPTS = dict(draws=500, chains=2, n_boot=300)


def _run(evaluate, cell, sims, seed=11):
    base = cal.cell_seed(seed, *cell)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(sims):
            rows += evaluate(*cell, i, cal.sim_seed(base, i), dict(OPTS))
    return cal.summarise(pd.DataFrame(rows))


def _row(summary, method, metric="pass@1", **keys):
    sel = (summary["method"] == method) & (summary["metric"] == metric)
    for key, value in keys.items():
        sel &= summary[key] == value
    assert sel.sum() == 1, (method, metric, keys)
    return summary[sel].iloc[0]


@pytest.fixture(scope="module")
def headline():
    """U-shaped rates, N = 10 tasks, n = 32 trials: 40 simulations."""
    return _run(cal.evaluate_single, ("u_shaped", 10, 32), 40)


def test_hierarchical_population_covers_where_trial_bootstrap_does_not(headline):
    pop = _row(headline, "hierarchical pop")
    trial = _row(headline, "boot trial perc")
    task = _row(headline, "boot task perc")
    assert pop["sims"] == 40
    assert pop["cov_population"] >= 0.8
    # the trial bootstrap treats the ten tasks as fixed: far too narrow for a new task
    assert trial["cov_population"] <= 0.6
    assert trial["width"] < 0.5 * pop["width"]
    assert task["cov_population"] >= 0.7


def test_tasks_estimand_intervals_cover(headline):
    for method in ("hierarchical tasks", "beta_binomial tasks", "boot trial perc"):
        assert _row(headline, method)["cov_tasks"] >= 0.8, method
    assert _row(headline, "hierarchical tasks", "pass@5")["cov_tasks"] >= 0.8


def test_summary_has_mc_standard_errors(headline):
    row = _row(headline, "hierarchical pop")
    c = row["cov_population"]
    assert row["se_population"] == pytest.approx(np.sqrt(c * (1 - c) / 40))
    text = cal.fmt_cov(0.95, 0.01)
    assert text == "0.950 ± 0.010"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cluster_robust_t_equals_statsmodels_cluster_ols(seed):
    rng = np.random.default_rng(seed)
    n_tasks, n_trials = 7 + 5 * seed, 6
    successes = rng.binomial(n_trials, rng.beta(0.4, 0.3, n_tasks))
    y = np.concatenate([np.r_[np.ones(c), np.zeros(n_trials - c)] for c in successes])
    groups = np.repeat(np.arange(n_tasks), n_trials)
    ols = sm.OLS(y, np.ones((len(y), 1))).fit(
        cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
    )
    estimate, lower, upper = cal.cluster_robust_t(successes / n_trials)
    reference = ols.conf_int(alpha=0.05)[0]
    assert estimate == pytest.approx(ols.params[0], abs=1e-10)
    assert lower == pytest.approx(reference[0], abs=1e-10)
    assert upper == pytest.approx(reference[1], abs=1e-10)


def test_simulation_seeds_are_those_of_simulate_many():
    base = cal.cell_seed(3, "beta_2_5", 12, 4)
    kwargs = cal.scenario_kwargs("beta_2_5", 12, 4)
    many = list(simulate_many(3, seed=base, **kwargs))
    for i, sim in enumerate(many):
        alone = simulate_benchmark(**kwargs, seed=cal.sim_seed(base, i))
        np.testing.assert_array_equal(alone.rates, sim.rates)


def test_pairing_narrows_the_effect_interval():
    summary = _run(cal.evaluate_paired, ("paired", 20, 8), 30)
    paired = _row(summary, "paired boot task perc", "effect@1")
    unpaired = _row(summary, "unpaired boot task perc", "effect@1")
    cr = _row(summary, "paired cluster-robust t", "effect@1")
    assert paired["cov_population"] >= 0.75
    assert cr["cov_population"] >= 0.75
    assert unpaired["width"] > 1.3 * paired["width"]


def test_missing_outcome_policies():
    summary = _run(cal.evaluate_missing, ("u_shaped", 50, 1), 30)
    exclude = _row(summary, "boot task perc", policy="exclude")
    fail = _row(summary, "boot task perc", policy="fail")
    bounds = _row(summary, "boot task perc", policy="bounds")
    # timeouts strike hard tasks: excluding them leaves easier tasks
    assert exclude["bias_population"] > 0.02
    assert fail["bias_population"] < 0
    assert bounds["cov_population"] >= 0.9
    assert bounds["width"] > exclude["width"]
    hier = _row(summary, "hierarchical pop", policy="bounds")
    assert hier["bias_lower_population"] < 0 < hier["bias_upper_population"]


def test_cards_render(headline, tmp_path):
    settings = dict(
        command="python benchmarks/calibration.py --n-sims 40",
        seed=11,
        n_sims=40,
        headline_sims=40,
        ln_sims=0,
        draws=500,
        chains=2,
        ln_draws=500,
        ln_tune=500,
        n_boot=300,
        jobs=1,
        wall_minutes=0.1,
        machine="test",
    )
    cal.write_cards(
        headline, settings, tmp_path, tmp_path / "cards", ROOT / "benchmarks" / "_cards"
    )
    for model in ("hierarchical", "beta_binomial", "logit_normal", "bootstrap"):
        text = (tmp_path / "cards" / f"{model}.md").read_text()
        assert text.startswith("<!-- Generated by `python benchmarks/calibration.py")
        assert "{{" not in text
    hierarchical = (tmp_path / "cards" / "hierarchical.md").read_text()
    pop = _row(headline, "hierarchical pop")
    assert cal.fmt_cov(pop["cov_population"], pop["se_population"]) in hierarchical


@pytest.mark.parametrize("model", ["hierarchical", "beta_binomial", "logit_normal", "bootstrap"])
def test_committed_cards_hold_their_templates_text(model):
    """A card's prose lives in its template: text written into ``models/`` alone is lost
    at the next calibration run. Every stretch of the template between its generated
    tables must appear in the committed card, in order."""
    template = (ROOT / "benchmarks" / "_cards" / f"{model}.md").read_text()
    card = (ROOT / "models" / f"{model}.md").read_text()
    pos = 0
    for chunk in re.split(r"\{\{\w+\}\}", template):
        chunk = chunk.strip("\n")
        if not chunk:
            continue
        found = card.find(chunk, pos)
        assert found >= 0, f"models/{model}.md lacks its template's text: {chunk[:200]!r}"
        pos = found + len(chunk)
