"""Several judges on the same attempts: their joint likelihood by brute force, and a fit."""

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import special

import bayeval as be
from bayeval.models import get_model
from bayeval.models.judge import (
    CELL_VARS,
    build_judge_model,
    judge_log_likelihood,
    pattern_cells,
    patterns_log_likelihood,
)


def _brute_force(attempts, p, given_1, given_0) -> Fraction:
    """The cell's likelihood, attempt by attempt: ``(label or None, verdicts)``.

    ``given_1``, ``given_0``: each verdict pattern's probability given a true 1 and a true 0
    (any joint distribution of the judges' verdicts, not only independent ones).
    """
    total = Fraction(1)
    for label, verdicts in attempts:
        one, zero = p * given_1[verdicts], (1 - p) * given_0[verdicts]
        total *= one + zero if label is None else (one if label == 1 else zero)
    return total


def _patterns(n_judges):
    return list(itertools.product((0, 1), repeat=n_judges))


def _random_joint(rng, n_judges) -> dict:
    """A joint distribution of the verdict patterns in exact fractions, correlated judges."""
    weights = [int(w) for w in rng.integers(1, 20, 2**n_judges)]
    return {v: Fraction(w, sum(weights)) for v, w in zip(_patterns(n_judges), weights, strict=True)}


def _frame(attempts_per_cell) -> pd.DataFrame:
    """One row per attempt of cells ``(system, task) -> [(label, verdicts), ...]``."""
    rows = []
    for (system, task), attempts in attempts_per_cell.items():
        for label, verdicts in attempts:
            row = {"system": system, "task": task, "human": np.nan if label is None else label}
            row.update({f"j{k}": v for k, v in enumerate(verdicts)})
            rows.append(row)
    return pd.DataFrame(rows)


def test_patterns_likelihood_equals_the_brute_force_over_attempts():
    rng = np.random.default_rng(0)
    n_judges = 3
    cells = {}
    for system, task in itertools.product("AB", range(3)):
        n = int(rng.integers(1, 6))
        cells[(system, task)] = [
            (
                None if rng.random() < 0.5 else int(rng.integers(2)),
                tuple(int(v) for v in rng.integers(0, 2, n_judges)),
            )
            for _ in range(n)
        ]
    cells[("A", 0)].append((1, (0, 0, 0)))  # at least one label of each kind in each system
    cells[("B", 0)].append((0, (1, 1, 1)))
    data = be.from_frame(
        _frame(cells), judge=["j0", "j1", "j2"], success="human", label_design="random"
    )
    ds = data.dataset
    p = {(s, j): Fraction(int(rng.integers(1, 10)), 10) for s, j in cells}
    joint = {(s, y): _random_joint(rng, n_judges) for s in "AB" for y in (0, 1)}
    # the data's pattern order: "000", "001", ... as tuples
    order = [tuple(int(c) for c in v) for v in ds["verdicts"].values.tolist()]
    assert order == _patterns(n_judges)

    def logs(y):
        return np.log([[float(joint[(s, y)][v]) for s in "AB"] for v in order])

    logit_p = np.array([[special.logit(float(p[(s, j)])) for j in range(3)] for s in "AB"])
    got = patterns_log_likelihood(pattern_cells(ds), logit_p, logs(1), logs(0))
    for s_index, s in enumerate("AB"):
        for j in range(3):
            want = _brute_force(cells[(s, j)], p[(s, j)], joint[(s, 1)], joint[(s, 0)])
            assert got[s_index, j] == pytest.approx(np.log(float(want)), rel=1e-12, abs=1e-12)


def test_one_judge_as_a_pattern_is_the_one_judge_likelihood():
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 4, (6, 2, 5))
    cells = dict(zip(CELL_VARS, counts, strict=True))
    n11, n10, n01, n00, u1, u0 = counts
    # patterns "0", "1" by label "1", "0", "none"
    patterns = np.stack([np.stack([n01, n00, u0]), np.stack([n11, n10, u1])])
    logit_p = rng.normal(0, 1, (2, 5))
    se, sp = special.expit(rng.normal(1.5, 1, 2)), special.expit(rng.normal(1.5, 1, 2))
    one = judge_log_likelihood(cells, logit_p, special.logit(se), special.logit(sp))
    log_a = np.log(np.stack([1 - se, se]))  # verdict 0, 1 given a true 1
    log_b = np.log(np.stack([sp, 1 - sp]))  # given a true 0
    several = patterns_log_likelihood(patterns, logit_p, log_a, log_b)
    np.testing.assert_allclose(several, one, rtol=1e-12)


def test_without_dependence_the_pattern_law_is_independent_judges():
    rng = np.random.default_rng(2)
    cells = {
        (s, t): [(int(rng.integers(2)), tuple(rng.integers(0, 2, 3)))]
        for s in "AB"
        for t in range(3)
    }
    data = be.from_frame(
        _frame(cells), judge=["j0", "j1", "j2"], success="human", label_design="random"
    )
    model = build_judge_model(data)
    assert model.named_vars_to_dims["judge_dependence_specificity"] == ("judge_pair",)
    point = model.initial_point()
    for name, value in point.items():
        point[name] = value + rng.normal(0, 0.5, np.shape(value))
    for name in ("judge_dependence_sensitivity", "judge_dependence_specificity"):
        point[name] = np.zeros_like(point[name])  # no dependence between the judges
    names = ["judge_patterns_given_1", "judge_patterns_given_0", "sensitivity", "specificity"]
    given_1, given_0, se, sp = model.compile_fn(
        model.replace_rvs_by_values([model[n] for n in names]),
        inputs=model.value_vars,
        point_fn=True,
        on_unused_input="ignore",  # the true outcome's parameters do not enter these
    )(point)
    for s_index in range(2):
        for q, pattern in enumerate(_patterns(3)):
            one = np.prod(
                [se[k, s_index] if v else 1 - se[k, s_index] for k, v in enumerate(pattern)]
            )
            zero = np.prod(
                [1 - sp[k, s_index] if v else sp[k, s_index] for k, v in enumerate(pattern)]
            )
            assert given_1[s_index, q] == pytest.approx(one, rel=1e-9)
            assert given_0[s_index, q] == pytest.approx(zero, rel=1e-9)


def test_the_model_potential_with_two_judges_is_the_brute_force_likelihood():
    rng = np.random.default_rng(3)
    cells = {
        (s, t): [
            (None if rng.random() < 0.6 else int(rng.integers(2)), tuple(rng.integers(0, 2, 2)))
            for _ in range(3)
        ]
        for s, t in itertools.product("AB", range(4))
    }
    cells[("A", 0)][0] = (1, (1, 1))
    cells[("B", 0)][0] = (0, (0, 0))
    data = be.from_frame(_frame(cells), judge=["j0", "j1"], success="human", label_design="random")
    model = build_judge_model(data)
    assert model.named_vars_to_dims["sensitivity"] == ("judge", "system")
    point = model.initial_point()
    for name, value in point.items():  # move every coordinate off its initial value
        point[name] = value + rng.normal(0, 0.3, np.shape(value))
    names = ["judged", "alpha", "task_effect", "task_system_effect"]
    names += ["judge_patterns_given_1", "judge_patterns_given_0", "sensitivity", "specificity"]
    outputs = [model[name] for name in names]
    potential, alpha, e, v, given_1, given_0, se, sp = model.compile_fn(
        model.replace_rvs_by_values(outputs), inputs=model.value_vars, point_fn=True
    )(point)
    logit_p = alpha[:, None] + e[None, :] + v
    order = _patterns(2)
    log_total = 0.0
    for s_index, s in enumerate(data.systems):
        joint = [
            {pattern: Fraction(float(g[s_index, q])) for q, pattern in enumerate(order)}
            for g in (given_1, given_0)
        ]
        assert sum(joint[0].values()) == pytest.approx(1.0)
        for j in range(4):
            task = data.dataset["task"].values[j]
            exact = _brute_force(
                [(label, tuple(int(x) for x in verdicts)) for label, verdicts in cells[(s, task)]],
                Fraction(float(special.expit(logit_p[s_index, j]))),
                joint[0],
                joint[1],
            )
            log_total += np.log(float(exact))
        # each judge's sensitivity is its margin of the patterns given a true 1
        for k in range(2):
            want = sum(float(pr) for pattern, pr in joint[0].items() if pattern[k] == 1)
            assert se[k, s_index] == pytest.approx(want, rel=1e-9)
            want = sum(float(pr) for pattern, pr in joint[1].items() if pattern[k] == 0)
            assert sp[k, s_index] == pytest.approx(want, rel=1e-9)
    assert float(potential) == pytest.approx(log_total, rel=1e-9)


def test_several_judges_are_fitted_full_latent():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "system": np.repeat(["A", "B"], 20),
            "task": np.tile(np.arange(20), 2),
            "j1": rng.integers(0, 2, 40),
            "j2": rng.integers(0, 2, 40),
            "human": np.where(rng.random(40) < 0.5, rng.integers(0, 2, 40), np.nan),
        }
    )
    data = be.from_frame(frame, judge=["j1", "j2"], success="human", label_design="random")
    model = get_model("judge")
    assert model.supports(data) is None
    form, why = model.sampling_form(data)
    assert form == "full-latent" and "several judges" in why
    with pytest.raises(ValueError, match="several judges"):
        build_judge_model(data, collapsed=True)


@pytest.mark.filterwarnings("ignore:the MCMC diagnostics fail")
def test_two_judges_fit_sees_each_judges_error_and_corrects_the_effect(tmp_path):
    # j1 passes B's failures far more often than A's; j2 is fair. Truth: no effect.
    rng = np.random.default_rng(7)
    n_task, trials = 80, 2
    z = rng.normal(0, 1, n_task)
    frames, rates = [], {}
    judges = {"B": ((0.9, 0.5), (0.85, 0.9)), "A": ((0.9, 0.9), (0.85, 0.9))}
    for name, ((se1, sp1), (se2, sp2)) in judges.items():
        p = special.expit(0.2 + z)
        rates[name] = p
        y = rng.random((n_task, trials)) < p[:, None]

        def verdict(se, sp, y=y):
            return np.where(y, rng.random(y.shape) < se, rng.random(y.shape) < 1 - sp)

        frames.append(
            pd.DataFrame(
                {
                    "system": name,
                    "task": np.repeat(np.arange(n_task), trials),
                    "j1": verdict(se1, sp1).ravel().astype(int),
                    "j2": verdict(se2, sp2).ravel().astype(int),
                    "human": np.where(rng.random(y.shape) < 0.2, y, np.nan).ravel(),
                }
            )
        )
    df = pd.concat(frames, ignore_index=True)
    data = be.from_frame(df, judge=["j1", "j2"], success="human", label_design="random")
    res = be.fit(data, draws=250, tune=250, chains=2, seed=1, progress=False)
    assert res.model == "judge" and res.tree.attrs["form"] == "full-latent"
    truth = float(np.mean(rates["B"] - rates["A"]))
    lo, hi = res.compare("B", "A", estimand="tasks")["effect_interval"].values
    assert lo <= truth <= hi
    # j1 alone would put B well ahead (its bias is about 0.5 (1 - p))
    verdict = df.groupby(["system", "task"])["j1"].mean().unstack("system")
    diff = verdict["B"] - verdict["A"]
    assert diff.mean() - 1.96 * diff.std(ddof=0) / np.sqrt(n_task) > truth
    judged = res.judge()
    assert judged["sensitivity"].dims == ("chain", "draw", "judge", "system")
    spec = judged["specificity_interval"]
    assert float(spec.sel(judge="j1", system="B", ci_bound="upper")) < 0.8
    assert float(spec.sel(judge="j1", system="A", ci_bound="upper")) > 0.8
    for judge, system in itertools.product(("j1", "j2"), ("A", "B")):
        # the per-judge counts beside the fit: each judge's own share of verdicts 1
        share = df.loc[df["system"] == system, judge].mean()
        assert float(judged["judge_rate"].sel(judge=judge, system=system)) == pytest.approx(share)
    res.to_netcdf(tmp_path / "fit.nc")  # a saved fit reads back its judges
    back = be.load(tmp_path / "fit.nc").judge()
    np.testing.assert_array_equal(back["sensitivity"].values, judged["sensitivity"].values)
    assert back["judge"].values.tolist() == ["j1", "j2"]
