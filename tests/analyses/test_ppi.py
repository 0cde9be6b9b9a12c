"""The PPI++ twin: equal to ppi_py where ppi_py applies, and covering a known truth elsewhere."""

import numpy as np
import pandas as pd
import pytest

import bayeval as be


def _simulate(rng, *, systems, n_task=60, trials=4, label_share=0.25, stratified=False):
    """Judged attempts whose true rates are known: task difficulty shared by the systems.

    ``systems``: name -> (mean logit, judge sensitivity, judge specificity). Returns the frame
    and each system's true rate (the expected outcome over the task population, by
    simulation of many tasks).
    """
    difficulty = rng.normal(0, 1.0, n_task)
    rows = []
    for name, (mu, se, sp) in systems.items():
        p = 1 / (1 + np.exp(-(mu + difficulty)))
        y = rng.random((n_task, trials)) < p[:, None]
        j = np.where(y, rng.random(y.shape) < se, rng.random(y.shape) < 1 - sp)
        share = np.where(j, label_share / 2, label_share * 1.5) if stratified else label_share
        lab = rng.random(y.shape) < share
        lab[:, 0] |= ~lab.any(1) & (rng.random(n_task) < 0.5)
        for t in range(n_task):
            for k in range(trials):
                rows.append((name, t, int(j[t, k]), float(y[t, k]) if lab[t, k] else np.nan))
    return pd.DataFrame(rows, columns=["system", "task", "judge", "human"])


def _truth(mu, draws=400_000):
    z = np.random.default_rng(99).normal(0, 1.0, draws)
    return float(np.mean(1 / (1 + np.exp(-(mu + z)))))


def test_equals_ppi_py_for_independent_attempts():
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(1)
    n = 800
    y = rng.random(n) < 0.65
    j = np.where(y, rng.random(n) < 0.9, rng.random(n) < 0.25)
    lab = rng.random(n) < 0.3
    df = pd.DataFrame(
        {
            "system": "A",
            "task": np.arange(n) % 80,
            "j": j.astype(int),
            "h": np.where(lab, y, np.nan),
        }
    )
    data = be.from_frame(df, judge="j", success="h", label_design="random")
    out = be.bootstrap.ppi(data, "A", unit="trial", ci_prob=0.9)
    lam = float(out["lam"].item())
    Y, Yh, Yu = y[lab].astype(float), j[lab].astype(float), j[~lab].astype(float)
    want = ppi_py.ppi_mean_pointestimate(Y, Yh, Yu, lam=lam)
    lo, hi = ppi_py.ppi_mean_ci(Y, Yh, Yu, alpha=0.1, lam=lam)
    np.testing.assert_allclose(out["estimate"].item(), want[0], rtol=1e-12)
    np.testing.assert_allclose(out["estimate_interval"].values[0], [lo[0], hi[0]], rtol=1e-12)
    # the tuned weight minimises ppi_py's own interval width over a grid
    widths = []
    for grid_lam in np.linspace(0, 1, 201):
        a, b = ppi_py.ppi_mean_ci(Y, Yh, Yu, alpha=0.1, lam=grid_lam)
        widths.append(b[0] - a[0])
    assert hi[0] - lo[0] <= min(widths) + 1e-12
    # lam=0 is the labelled mean; lam=1 plain PPI, by hand
    zero = be.bootstrap.ppi(data, "A", unit="trial", lam=0)
    one = be.bootstrap.ppi(data, "A", unit="trial", lam=1)
    assert zero["estimate"].item() == pytest.approx(Y.mean())
    assert one["estimate"].item() == pytest.approx(Yu.mean() + (Y - Yh).mean())


def test_task_unit_covers_a_known_truth():
    rng = np.random.default_rng(2)
    systems = {"A": (0.6, 0.95, 0.7)}
    truth = _truth(0.6)
    hits, ppi_se, lab_se = 0, [], []
    sims = 150
    for _ in range(sims):
        df = _simulate(rng, systems=systems)
        data = be.from_frame(df, judge="judge", success="human", label_design="random")
        out = be.bootstrap.ppi(data, "A")
        lo, hi = out["estimate_interval"].values[0]
        hits += lo <= truth <= hi
        ppi_se.append(out["estimate_se"].item())
        lab_se.append(out["labelled_only_se"].item())
    # 95% interval: binomial sd of the hit share is about 0.018 over 150 simulations
    assert 0.89 <= hits / sims <= 0.995
    assert np.mean(ppi_se) < np.mean(lab_se)


def test_paired_difference_with_differential_judge_error():
    rng = np.random.default_rng(3)
    # the judge is lenient on B only: judge-only differences are biased upwards
    systems = {"B": (0.8, 0.95, 0.55), "A": (0.5, 0.95, 0.9)}
    truth = _truth(0.8) - _truth(0.5)
    hits, judge_bias = 0, []
    sims = 120
    for _ in range(sims):
        df = _simulate(rng, systems=systems)
        data = be.from_frame(df, judge="judge", success="human", label_design="random")
        out = be.bootstrap.ppi(data, "B", "A")
        lo, hi = out["effect_interval"].values
        hits += lo <= truth <= hi
        judge_only = out["judge_only"].values
        judge_bias.append(judge_only[0] - judge_only[1] - truth)
    assert 0.88 <= hits / sims <= 1.0
    assert np.mean(judge_bias) > 0.05  # the judge alone would overstate B's lead


def test_naive_effects_are_the_mean_differences_with_their_paired_variance():
    rng = np.random.default_rng(5)
    df = _simulate(rng, systems={"B": (0.8, 0.95, 0.55), "A": (0.5, 0.95, 0.9)}, n_task=40)
    data = be.from_frame(df, judge="judge", success="human", label_design="random")
    out = be.bootstrap.ppi(data, "B", "A", ci_prob=0.9)
    verdicts = df.groupby("system")["judge"].mean()
    labels = df.groupby("system")["human"].mean()  # NaN (unlabelled) left out
    assert out["judge_only_effect"].item() == pytest.approx(verdicts["B"] - verdicts["A"])
    assert out["labelled_only_effect"].item() == pytest.approx(labels["B"] - labels["A"])
    # lam = 0 is the labelled-only estimator: its paired interval is the same
    zero = be.bootstrap.ppi(data, "B", "A", lam=0, ci_prob=0.9)
    np.testing.assert_allclose(
        out["labelled_only_effect_interval"].values, zero["effect_interval"].values, rtol=1e-12
    )
    # the judge-only variance by hand: per task, each system's verdict total less its share
    z = 1.6448536269514722
    tasks = sorted(df["task"].unique())
    psi = []
    for system in ("B", "A"):
        part = df[df["system"] == system]
        per_task = part.groupby("task")["judge"].agg(["sum", "size"]).reindex(tasks)
        psi.append((per_task["sum"] - verdicts[system] * per_task["size"]) / len(part))
    se = float(np.sqrt(((psi[0] - psi[1]) ** 2).sum()))
    effect = verdicts["B"] - verdicts["A"]
    np.testing.assert_allclose(
        out["judge_only_effect_interval"].values, [effect - z * se, effect + z * se], rtol=1e-9
    )


def test_stratified_design_is_reweighted():
    rng = np.random.default_rng(4)
    systems = {"A": (0.3, 0.9, 0.8)}
    truth = _truth(0.3)
    estimates, naive = [], []
    for _ in range(80):
        df = _simulate(rng, systems=systems, stratified=True, label_share=0.3)
        data = be.from_frame(
            df, judge="judge", success="human", label_design="stratified", label_strata="judge"
        )
        out = be.bootstrap.ppi(data, "A")
        estimates.append(out["estimate"].item())
        naive.append(df["human"].mean())  # the labels' plain mean: over-weights judge 0
    se = np.std(estimates) / np.sqrt(len(estimates))
    assert abs(np.mean(estimates) - truth) < 4 * se + 0.005
    assert np.mean(naive) < truth - 0.05


def test_refusals():
    df = pd.DataFrame({"system": "A", "task": [1, 2], "success": [1, 0]})
    with pytest.raises(ValueError, match="needs judged data"):
        be.bootstrap.ppi(be.from_frame(df), "A")
    rng = np.random.default_rng(5)
    df = _simulate(rng, systems={"A": (0, 0.9, 0.9), "B": (0, 0.9, 0.9)})
    df["j2"] = df["judge"]
    data = be.from_frame(df, judge=["judge", "j2"], success="human", label_design="random")
    with pytest.raises(ValueError, match="several judges"):
        be.bootstrap.ppi(data, "A")
    with pytest.raises(KeyError, match="unknown system"):
        be.bootstrap.ppi(data, "C", judge="j2")
    with pytest.raises(ValueError, match="unit must be one of"):
        be.bootstrap.ppi(data, "A", judge="j2", unit="episode")
    with pytest.raises(ValueError, match="needs task clusters"):
        be.bootstrap.ppi(data, "A", judge="j2", unit="cluster")
    with pytest.raises(ValueError, match="lam must be"):
        be.bootstrap.ppi(data, "A", judge="j2", lam=2)
    df.loc[0, ["judge", "j2", "human"]] = np.nan
    failed = be.from_frame(
        df, judge=["judge", "j2"], success="human", label_design="random", missing="fail"
    )
    with pytest.raises(ValueError, match="with_missing"):
        be.bootstrap.ppi(failed, "A", judge="j2")
    out = be.bootstrap.ppi(failed.with_missing("exclude"), "A", "B", judge="j2")
    assert out.attrs["paired"] and out.attrs["method"] == "ppi++"


def test_bundled_data_recovers_the_all_labels_rate():
    data_frame = be.datasets.frame("judging_the_judges")
    rng = np.random.default_rng(6)
    df = data_frame.copy()
    df.loc[rng.random(len(df)) > 0.3, "human"] = np.nan  # keep 30% of the labels
    data = be.from_frame(df, judge="judge_llama3_70b", success="human", label_design="random")
    out = be.bootstrap.ppi(data, "llama2-13b-chat", "mistral-7B")
    full = data_frame.groupby("system")["human"].mean()
    truth = full["llama2-13b-chat"] - full["mistral-7B"]
    lo, hi = out["effect_interval"].values
    assert lo <= truth <= hi
