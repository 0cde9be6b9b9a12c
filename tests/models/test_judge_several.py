"""Several judges on the same attempts: their joint likelihood by brute force, and a fit."""

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

import bayeval as be
from bayeval.models import get_model
from bayeval.models.judge import CELL_VARS, JudgeRates, build_judge_model, judge_log_likelihood
from bayeval.models.judge_patterns import pattern_cells, patterns_log_likelihood


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


def mean_rate(logit_p, sigma):
    """``E expit(logit_p + sigma Z)`` and ``E expit(-(logit_p + sigma Z))``, Z ~ N(0, 1).

    A trapezoid rule in z over +-8 sd at step 0.2: the integrand's poles lie pi / sigma off the
    real line, so its error is about exp(-2 pi^2 / (sigma step)), 1e-10 at sigma 4. The second
    is summed on its own, not taken as one minus the first, to keep its digits near 1.
    """
    nodes = np.linspace(-8.0, 8.0, 81)
    weights = np.exp(-(nodes**2) / 2)
    weights = weights / weights.sum()
    z = logit_p[..., None] + sigma * nodes
    return (special.expit(z) * weights).sum(-1), (special.expit(-z) * weights).sum(-1)


def collapsed_patterns_log_likelihood(counts, logit_p, sigma, log_a, log_b):
    """The pattern likelihood with each one-attempt cell's effect ``v ~ N(0, sigma)`` integrated.

    The reference the model's kernel route is checked against: a one-attempt cell's likelihood
    is linear in its rate, so its integral needs only ``E p`` (:func:`mean_rate`).
    """
    mean, mean_not = mean_rate(logit_p, sigma)
    true_1 = np.log(mean)[None] + log_a[:, :, None]
    true_0 = np.log(mean_not)[None] + log_b[:, :, None]
    ll = counts[:, 0] * true_1 + counts[:, 1] * true_0 + counts[:, 2] * np.logaddexp(true_1, true_0)
    return ll.sum(axis=0)


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


def test_several_judges_are_collapsed_at_one_attempt_a_cell_only():
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
    model = get_model("judge")
    one = be.from_frame(frame, judge=["j1", "j2"], success="human", label_design="random")
    assert model.supports(one) is None
    assert model.sampling_form(one)[0] == "collapsed"
    # a second attempt in one cell: its likelihood is no longer linear in the rate
    frame = pd.concat([frame, frame.iloc[[0]].assign(trial=1)]).fillna({"trial": 0})
    two = be.from_frame(
        frame, trial="trial", judge=["j1", "j2"], success="human", label_design="random"
    )
    form, why = model.sampling_form(two)
    assert form == "full-latent" and "more than one attempt" in why
    with pytest.raises(ValueError, match="cells of one attempt"):
        build_judge_model(two, collapsed=True)


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


def test_mean_rate_is_the_normal_expectation():
    for eta in (-9.0, -2.5, 0.0, 1.0, 6.0):
        for sigma in (0.05, 0.7, 2.0, 4.0):
            for sign in (1, -1):
                want = integrate.quad(
                    lambda z, s=sign, e=eta, w=sigma: (
                        special.expit(s * (e + w * z)) * stats.norm.pdf(z)
                    ),
                    -np.inf,
                    np.inf,
                    epsabs=0,
                    epsrel=1e-13,
                    limit=200,
                )[0]
                got = mean_rate(np.array(eta), sigma)[0 if sign == 1 else 1]
                assert np.log(got) == pytest.approx(np.log(want), abs=1e-8), (eta, sigma)


def _one_attempt_cells(rng, n_tasks, n_judges):
    """Systems A and B, one attempt a cell, 40% labelled; A's first task a labelled success on
    which every judge says 1, B's a labelled failure on which every judge says 0."""
    cells = {
        (s, t): [
            (
                None if rng.random() < 0.6 else int(rng.integers(2)),
                tuple(rng.integers(0, 2, n_judges)),
            )
        ]
        for s, t in itertools.product("AB", range(n_tasks))
    }
    cells[("A", 0)] = [(1, (1,) * n_judges)]
    cells[("B", 0)] = [(0, (0,) * n_judges)]
    return cells


def test_collapsed_cells_are_the_integral_over_their_effect():
    # one attempt a cell: each cell's likelihood integrated over v ~ N(0, sigma) by SciPy
    rng = np.random.default_rng(4)
    cells = _one_attempt_cells(rng, n_tasks=5, n_judges=2)
    data = be.from_frame(_frame(cells), judge=["j0", "j1"], success="human", label_design="random")
    counts = pattern_cells(data.dataset)
    logit_p = rng.normal(0, 1.5, (2, 5))
    log_a = np.log(rng.dirichlet(np.ones(4), 2).T)  # (verdicts, system)
    log_b = np.log(rng.dirichlet(np.ones(4), 2).T)
    sigma = 1.3
    got = collapsed_patterns_log_likelihood(counts, logit_p, sigma, log_a, log_b)
    for s in range(2):
        for j in range(5):

            def density(v, s=s, j=j):
                shifted = logit_p.copy()
                shifted[s, j] += v
                ll = patterns_log_likelihood(counts, shifted, log_a, log_b)[s, j]
                return np.exp(ll) * stats.norm.pdf(v, scale=sigma)

            want = integrate.quad(density, -np.inf, np.inf, epsabs=0, epsrel=1e-12)[0]
            assert got[s, j] == pytest.approx(np.log(want), abs=1e-8)


@pytest.mark.filterwarnings("ignore:the MCMC diagnostics fail")
def test_several_judges_collapsed_and_full_latent_fits_agree():
    rng = np.random.default_rng(9)
    cells = {}
    for s, level in (("A", 0.4), ("B", -0.2)):
        for t in range(40):
            y = int(rng.random() < special.expit(level + rng.normal()))
            verdicts = tuple(int(rng.random() < (0.9 if y else 0.2)) for _ in range(2))
            cells[(s, t)] = [(y if rng.random() < 0.3 else None, verdicts)]
    data = be.from_frame(_frame(cells), judge=["j0", "j1"], success="human", label_design="random")
    assert get_model("judge").sampling_form(data)[0] == "collapsed"
    fits = {}
    for form in ("collapsed", "full-latent"):
        model = JudgeRates()
        model.sampling_form = lambda data, sampler="auto", form=form: (form, "test")
        fits[form] = model.sample(data, draws=500, tune=500, chains=2, seed=3)
    pc, pf = fits["collapsed"]["posterior"], fits["full-latent"]["posterior"]
    for name in ("alpha", "sensitivity", "specificity", "sigma_task_system"):
        a, b = pc[name], pf[name]
        gap = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw")))
        scale = np.hypot(a.std(("chain", "draw")), b.std(("chain", "draw")))
        assert float((gap / scale).max()) < 0.25, name
    v_c = fits["collapsed"]["task_effects"]["task_system_effect"].mean(("chain", "draw"))
    v_f = fits["full-latent"]["task_effects"]["task_system_effect"].mean(("chain", "draw"))
    assert float(np.corrcoef(v_c.values.ravel(), v_f.values.ravel())[0, 1]) > 0.9


def test_the_collapsed_model_potential_is_the_integrated_likelihood():
    # the compiled one-judge cell kernel, fed each pattern's A and B, against the formula
    rng = np.random.default_rng(6)
    cells = _one_attempt_cells(rng, n_tasks=6, n_judges=3)
    data = be.from_frame(
        _frame(cells), judge=["j0", "j1", "j2"], success="human", label_design="random"
    )
    model = build_judge_model(data, collapsed=True)
    assert "task_system_effect" not in model.named_vars
    point = model.initial_point()
    for name, value in point.items():
        point[name] = value + rng.normal(0, 0.3, np.shape(value))
    names = ["judged", "alpha", "task_effect", "sigma_task_system"]
    names += ["judge_patterns_given_1", "judge_patterns_given_0"]
    potential, alpha, e, sigma, given_1, given_0 = model.compile_fn(
        model.replace_rvs_by_values([model[n] for n in names]),
        inputs=model.value_vars,
        point_fn=True,
    )(point)
    want = collapsed_patterns_log_likelihood(
        pattern_cells(data.dataset),
        alpha[:, None] + e[None, :],
        float(sigma),
        np.log(given_1).T,
        np.log(given_0).T,
    ).sum()
    assert float(potential) == pytest.approx(float(want), rel=1e-8)
