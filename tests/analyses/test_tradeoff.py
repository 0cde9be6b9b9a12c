"""The budget curve (pass@k, cost of k attempts, expected spend and cost per success with
retries) and the cost-success frontier with dominance probabilities."""

import math

import numpy as np
import pandas as pd
import pytest

import bayeval as be
from bayeval.analyses.tradeoff import frontier
from bayeval.testing import fake_results


def _frame(seed=0, n_task=10, n_trial=4, systems=("A", "B", "C")):
    rng = np.random.default_rng(seed)
    rows = []
    for s_i, s in enumerate(systems):
        for j in range(n_task):
            p = rng.beta(1 + s_i, 2)
            for t in range(n_trial):
                status = rng.choice(["ok"] * 5 + ["timeout", "error"])
                success = float(rng.random() < p) if status == "ok" else None
                rows.append(
                    {
                        "system": s,
                        "task": f"t{j}",
                        "trial": t,
                        "status": status,
                        "success": success,
                        "cost": float(rng.gamma(2.0, 0.5 + s_i)),
                    }
                )
    return pd.DataFrame(rows)


def _data(df):
    return be.from_frame(df, status="status", missing="fail", covariates=["cost"])


def _task_reference(df, k):
    """Per (system, task): unbiased pass@k and the expected spend, by math.comb."""
    out = {}
    for (s, t), g in df.groupby(["system", "task"]):
        n, c = len(g), int(g["success"].fillna(0).sum())
        cbar = g["cost"].mean()
        fail = [math.comb(n - c, j) / math.comb(n, j) for j in range(k + 1)]
        out[s, t] = (1 - fail[k], cbar * sum(fail[:k]), k * cbar)
    return out


def test_bootstrap_budget_curve_matches_comb_and_pandas():
    df = _frame()
    out = be.bootstrap.cost(_data(df), "cost", k=[1, 2, 4], n_boot=50)
    for k in (1, 2, 4):
        ref = _task_reference(df, k)
        for s in ("A", "B", "C"):
            vals = np.array([v for (sys, _), v in ref.items() if sys == s])
            got = out.sel(system=s, k=k)
            assert float(got["pass_at_k"]) == pytest.approx(vals[:, 0].mean())
            assert float(got["expected_spend"]) == pytest.approx(vals[:, 1].mean())
            assert float(got["cost_of_k"]) == pytest.approx(vals[:, 2].mean())
            assert float(got["cost_per_success_at_k"]) == pytest.approx(
                vals[:, 1].sum() / vals[:, 0].sum()
            )
    # k = 1 is cost per success and pass@1 (equal attempts per task), replicate by replicate
    one = out.sel(k=1)
    np.testing.assert_allclose(one["cost_per_success_at_k_draws"], out["cost_per_success_draws"])
    np.testing.assert_allclose(one["pass_at_k_draws"], out["pass_at_1_draws"])
    # pass@1: every attempt counts, a timeout or error is a failed try
    for s, g in df.groupby("system"):
        assert float(out["pass_at_1"].sel(system=s)) == pytest.approx(g["success"].fillna(0).mean())
    assert out["pass_at_k_interval"].dims == ("system", "k", "ci_bound")
    assert out["expected_spend_draws"].dims == ("replicate", "system", "k")


def test_bootstrap_budget_replicates_match_a_slow_loop():
    df = _frame(seed=2, n_task=8, n_trial=3)
    n_boot, seed = 100, 7
    out = be.bootstrap.cost(_data(df), "cost", k=[2, 3], n_boot=n_boot, seed=seed)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(8, np.full(8, 1 / 8), size=n_boot)
    tasks = [f"t{j}" for j in range(8)]
    for k in (2, 3):
        ref = _task_reference(df, k)
        for s in ("A", "B", "C"):
            spend, solved = [], []
            for b in range(n_boot):
                chosen = [tasks[j] for j in range(8) for _ in range(counts[b, j])]
                solved.append(sum(ref[s, t][0] for t in chosen))
                spend.append(sum(ref[s, t][1] for t in chosen))
            np.testing.assert_allclose(
                out["cost_per_success_at_k_draws"].sel(system=s, k=k),
                np.array(spend) / np.array(solved),
                rtol=1e-10,
            )
            np.testing.assert_allclose(
                out["pass_at_k_draws"].sel(system=s, k=k), np.array(solved) / 8, rtol=1e-10
            )


def test_bootstrap_k_above_attempts_is_refused():
    df = _frame(n_trial=3)
    df = df[~((df["task"] == "t4") & (df["trial"] == 2) & (df["system"] == "B"))]
    with pytest.raises(ValueError, match=r"k=3 needs.*'t4'.*'B'.*k <= 2"):
        be.bootstrap.cost(_data(df), "cost", k=[1, 3], n_boot=10)
    with pytest.raises(ValueError, match="k must be positive"):
        be.bootstrap.cost(_data(df), "cost", k=[0], n_boot=10)


def test_posterior_budget_curve_matches_a_geometric_sum():
    df = _frame(seed=4)
    data = be.from_frame(
        df.assign(status="ok", success=df["success"].fillna(0)), covariates=["cost"]
    )
    res = fake_results(data, model="hierarchical", draws=200, chains=2, seed=0)
    n_draws, seed = 150, 3
    out = res.cost("cost", k=[1, 3, 6], n_draws=n_draws, seed=seed)
    from bayeval.analyses._draws import thinned

    rates = (
        thinned(res, n_draws)
        .task_rates()
        .stack(sample=("chain", "draw"))
        .transpose("sample", "system", "task")
        .values
    )
    rng = np.random.default_rng(seed)
    pick = np.arange(n_draws)
    weights = rng.dirichlet(np.ones(len(data.tasks)), size=n_draws)
    cbar = (
        df.groupby(["system", "task"])["cost"]
        .mean()
        .unstack()
        .loc[list(data.systems), list(data.tasks)]
        .values
    )
    for k in (1, 3, 6):
        for s_i, s in enumerate(data.systems):
            ref = []
            for d in range(n_draws):
                p = rates[pick[d], s_i]
                spend = cbar[s_i] * (1 - (1 - p) ** k) / p  # sum_{j<k} (1-p)^j, closed form
                ref.append((weights[d] * spend).sum() / (weights[d] * (1 - (1 - p) ** k)).sum())
            np.testing.assert_allclose(
                out["cost_per_success_at_k_draws"].sel(system=s, k=k), ref, rtol=1e-7
            )  # the closed form loses digits at small p
    # k = 1 is the cost per success of the same draws; spend grows with k and stays below k
    # attempts' cost
    np.testing.assert_allclose(
        out["cost_per_success_at_k_draws"].sel(k=1), out["cost_per_success_draws"], rtol=1e-12
    )
    spend = out["expected_spend_draws"]
    assert (spend.diff("k") > 0).all()
    assert (spend <= out["cost_of_k_draws"] + 1e-12).all()


def _brute_dominance(s_draws, c_draws):
    n = s_draws.shape[1]
    prob = np.full((n, n), np.nan)
    for a in range(n):
        for b in range(n):
            if a != b:
                prob[a, b] = np.mean(
                    [
                        (s_draws[d, a] >= s_draws[d, b]) and (c_draws[d, a] <= c_draws[d, b])
                        for d in range(len(s_draws))
                    ]
                )
    return prob


@pytest.mark.parametrize("cost", ["cost_per_attempt", "cost_per_success"])
def test_frontier_matches_brute_force(cost):
    df = _frame(seed=5, systems=("A", "B", "C", "D"))
    out = be.bootstrap.cost(_data(df), "cost", n_boot=300, seed=1)
    got = frontier(out, cost=cost)
    s_draws = out["pass_at_1_draws"].values
    c_draws = out[f"{cost}_draws"].values
    np.testing.assert_allclose(got["prob_dominates"].values, _brute_dominance(s_draws, c_draws))
    s_est, c_est = out["pass_at_1"].values, out[cost].values
    undominated = [
        not any(
            (s_est[o] >= s_est[i] and c_est[o] <= c_est[i])
            and (s_est[o] > s_est[i] or c_est[o] < c_est[i])
            for o in range(4)
            if o != i
        )
        for i in range(4)
    ]
    assert got["on_frontier"].values.tolist() == undominated
    front = [s for s, u in zip("ABCD", undominated, strict=True) if u]
    assert got.attrs["frontier"] == sorted(front, key=lambda s: c_est["ABCD".index(s)])
    assert got["prob_dominates"].dims == ("candidate", "baseline")


def test_frontier_on_the_budget_curve_and_refusals():
    df = _frame(seed=6)
    out = be.bootstrap.cost(_data(df), "cost", k=[1, 2], n_boot=100)
    got = frontier(out, cost="cost_per_success_at_k", success="pass_at_k", k=2)
    np.testing.assert_allclose(got["success"], out["pass_at_k"].sel(k=2))
    with pytest.raises(ValueError, match="give k"):
        frontier(out, cost="expected_spend")
    with pytest.raises(ValueError, match=r"one of the result's k \[1, 2\]"):
        frontier(out, success="pass_at_k", k=3)
    with pytest.raises(ValueError, match="k applies to the budget-curve"):
        frontier(out, k=2)
    with pytest.raises(ValueError, match="cost"):
        frontier(out, cost="tokens")
    with pytest.raises(TypeError, match="bootstrap.cost or Results.cost"):
        frontier(out["pass_at_1"].to_dataset())
    plain = be.bootstrap.cost(_data(df), "cost", n_boot=100)
    with pytest.raises(ValueError, match="no budget curve"):
        frontier(plain, success="pass_at_k", k=1)


def test_evidence_sets_the_bootstrap_beside_the_posterior_per_system():
    """The bootstrap side's point estimates against pandas on the raw attempts (a failed
    status is a failed try) and math.comb's pass@2; effects against the reference."""
    from bayeval.analyses.tradeoff import evidence

    df = _frame(seed=2)
    res = be.fit(_data(df), model="beta_binomial", draws=200, chains=2, seed=0)
    out = evidence(res, "cost", k=2, reference="A", n_boot=200, n_draws=200)
    by = df.assign(success=df["success"].fillna(0.0)).groupby("system")
    point = {name: out[f"{name}_bootstrap_estimate"] for name in ("pass_at_1", "effect")}
    np.testing.assert_allclose(point["pass_at_1"].values, by["success"].mean(), rtol=1e-12)
    np.testing.assert_allclose(
        out["cost_per_attempt_bootstrap_estimate"].values, by["cost"].mean(), rtol=1e-12
    )
    np.testing.assert_allclose(
        out["cost_per_success_bootstrap_estimate"].values,
        by["cost"].sum() / by["success"].sum(),
        rtol=1e-12,
    )
    ref = _task_reference(df, 2)
    for s in ("A", "B", "C"):
        pass_2 = np.mean([v[0] for (system, _), v in ref.items() if system == s])
        got = out["pass_at_k_bootstrap_estimate"].sel(system=s, k=2)
        assert float(got) == pytest.approx(pass_2, rel=1e-12)
        assert float(out["timeout_rate"].sel(system=s)) == pytest.approx(
            (df.loc[df["system"] == s, "status"] == "timeout").mean()
        )
    shares = by["success"].mean()
    assert np.isnan(point["effect"].sel(system="A"))
    assert float(point["effect"].sel(system="C")) == pytest.approx(shares["C"] - shares["A"])
    assert out["effect_bayes_interval"].dims == ("system", "ci_bound")
    assert np.isnan(np.diag(out["prob_dominates_bayes"].values)).all()
    assert out.attrs["reference"] == "A" and out.attrs["pass_k"] == 2
    assert out.attrs["bootstrap_k"] == [1, 2] and not out["cost_misfit"].any()
