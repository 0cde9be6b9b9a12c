"""The judge-aware model: its likelihood by brute force, and its fits against known truths."""

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import special

import bayeval as be
from bayeval.inference import choose_model
from bayeval.models import get_model
from bayeval.models.judge import CELL_VARS, build_judge_model, judge_log_likelihood
from bayeval.testing import fake_results
from tests.models.judged import simulate_judged


def _brute_force(counts, p, se, sp) -> Fraction:
    """The cell's likelihood summed over every unlabelled attempt's true outcome, exactly.

    One term per attempt: ``P(y) P(verdict | y)``; labelled attempts have y fixed, unlabelled
    ones are summed over y in {0, 1} jointly (all 2^m outcome vectors).
    """
    n11, n10, n01, n00, u1, u0 = counts

    def attempt(y, verdict):
        prior = p if y else 1 - p
        if y:
            return prior * (se if verdict else 1 - se)
        return prior * ((1 - sp) if verdict else sp)

    labelled = [(1, 1)] * n11 + [(0, 1)] * n10 + [(1, 0)] * n01 + [(0, 0)] * n00
    fixed = Fraction(1)
    for y, verdict in labelled:
        fixed *= attempt(y, verdict)
    verdicts = [1] * u1 + [0] * u0
    total = Fraction(0)
    for ys in itertools.product((0, 1), repeat=len(verdicts)):
        term = Fraction(1)
        for y, verdict in zip(ys, verdicts, strict=True):
            term *= attempt(y, verdict)
        total += term
    return fixed * total


def test_cell_likelihood_equals_the_brute_force_sum_over_true_outcomes():
    p, se, sp = Fraction(3, 10), Fraction(4, 5), Fraction(7, 10)
    cells = [(2, 1, 0, 3, 4, 2), (0, 0, 0, 0, 3, 3), (1, 0, 2, 0, 0, 0), (0, 2, 1, 1, 1, 5)]
    for counts in cells:
        arrays = {name: np.array([[c]]) for name, c in zip(CELL_VARS, counts, strict=True)}
        got = judge_log_likelihood(
            arrays,
            np.array([[special.logit(float(p))]]),
            np.array([special.logit(float(se))]),
            np.array([special.logit(float(sp))]),
        )
        want = float(_brute_force(counts, p, se, sp))
        # the brute force orders each labelled attempt's (verdict, label); the counts name the
        # verdict first: n10 is verdict 1 on a true 0
        assert got[0, 0] == pytest.approx(np.log(want), rel=1e-12, abs=1e-12)


def test_the_model_potential_is_the_cell_likelihood_at_its_own_parameters():
    rng = np.random.default_rng(3)
    df, _ = simulate_judged(rng, systems={"B": (0.5, 0.9, 0.6), "A": (0.2, 0.85, 0.9)}, n_task=4)
    data = be.from_frame(df, judge="judge", success="human", label_design="random")
    model = build_judge_model(data)
    point = model.initial_point()
    for name, value in point.items():  # move every coordinate off its initial value
        point[name] = value + rng.normal(0, 0.3, np.shape(value))
    outputs = [
        model[name]
        for name in (
            "judged",
            "alpha",
            "task_effect",
            "task_system_effect",
            "sensitivity",
            "specificity",
            "judge_task_sigma_sensitivity",
            "judge_task_sensitivity_z",
            "judge_task_sigma_specificity",
            "judge_task_specificity_z",
        )
    ]
    potential, alpha, e, v, se, sp, tau_se, x_se, tau_sp, x_sp = model.compile_fn(
        model.replace_rvs_by_values(outputs), inputs=model.value_vars, point_fn=True
    )(point)
    logit_p = alpha[:, None] + e[None, :] + v
    ds = data.dataset
    log_total = 0.0
    for s in range(2):
        for j in range(4):
            counts = [int(ds[name].isel(judge=0, system=s, task=j).sum()) for name in CELL_VARS]
            exact = _brute_force(
                counts,
                Fraction(float(special.expit(logit_p[s, j]))),
                Fraction(float(special.expit(special.logit(se[s]) + tau_se * x_se[j]))),
                Fraction(float(special.expit(special.logit(sp[s]) + tau_sp * x_sp[j]))),
            )
            log_total += np.log(float(exact))
    assert float(potential) == pytest.approx(log_total, rel=1e-9)


@pytest.fixture(scope="module")
def lenient_on_b():
    """A judge lenient on B only (specificity 0.6 vs 0.9), 20% labelled; truth: no effect."""
    rng = np.random.default_rng(11)
    df, rates = simulate_judged(rng, systems={"B": (0.3, 0.9, 0.6), "A": (0.3, 0.9, 0.9)})
    data = be.from_frame(df, judge="judge", success="human", label_design="random")
    res = be.fit(data, draws=300, tune=300, chains=2, seed=1, progress=False)
    return df, rates, data, res


@pytest.mark.filterwarnings("ignore:the MCMC diagnostics fail")
def test_differential_judge_error_is_corrected(lenient_on_b):
    df, rates, data, res = lenient_on_b
    assert res.model == "judge"
    tasks_truth = float(np.mean(rates["B"] - rates["A"]))
    z = np.linspace(-8, 8, 20001)
    w = np.exp(-(z**2) / 2) / np.exp(-(z**2) / 2).sum()
    population_truth = 0.0  # the two systems' true rates are the same function of z
    assert float(w @ (special.expit(0.3 + z) - special.expit(0.3 + z))) == population_truth
    for estimand, truth in (("tasks", tasks_truth), ("population", population_truth)):
        effect = res.compare("B", "A", estimand=estimand)
        lo, hi = effect["effect_interval"].values
        assert lo <= truth <= hi, (estimand, lo, hi, truth)
        if estimand == "tasks":
            assert effect.attrs["n_shared_tasks"] == 100  # every judged task, not the labelled
    # the judge alone: its verdicts' task means, paired over the tasks, miss the truth (its
    # bias is 0.3 (1 - p) here, about 0.13)
    verdict = df.groupby(["system", "task"])["judge"].mean().unstack("system")
    diff = verdict["B"] - verdict["A"]
    half = 1.96 * diff.std(ddof=0) / np.sqrt(len(diff))
    assert diff.mean() - half > tasks_truth
    # and the fit sees the judge's leniency on B
    judged = res.judge()
    spec = judged["specificity_mean"].sel(judge="judge")
    assert float(spec.sel(system="B")) < float(spec.sel(system="A"))
    hi_b = float(judged["specificity_interval"].sel(judge="judge", system="B", ci_bound="upper"))
    assert hi_b < 0.9 + 0.05
    assert float(judged["judge_rate"].sel(judge="judge", system="B")) == pytest.approx(
        df.loc[df["system"] == "B", "judge"].mean()
    )


@pytest.mark.filterwarnings("ignore:the MCMC diagnostics fail")
def test_task_rates_hold_every_judged_cell(lenient_on_b):
    _, _, data, res = lenient_on_b
    model = get_model("judge")
    p = model.task_rates(res.tree)
    assert p.dims == ("chain", "draw", "system", "task")
    assert not np.isnan(p.values).any()  # unlabelled cells too
    unlabelled = (data.dataset["trials"] == 0).values
    assert unlabelled.any()
    # the tasks estimand is the mean of these rates over the tasks
    tasks = res.pass_at_k(estimand="tasks")
    mean = p.mean("task")
    np.testing.assert_allclose(
        tasks.transpose("chain", "draw", "system").values,
        mean.transpose("chain", "draw", "system").values,
        rtol=1e-12,
    )


@pytest.mark.filterwarnings("ignore:the MCMC diagnostics fail")
def test_with_every_attempt_labelled_the_verdicts_add_nothing():
    # every true outcome seen: the verdicts' likelihood is a function of (se, sp) alone, which
    # are a priori independent of the outcome model, so its posterior is the plain model's
    rng = np.random.default_rng(5)
    df, _ = simulate_judged(rng, systems={"B": (0.6, 0.9, 0.7), "A": (0.0, 0.8, 0.9)}, share=1.0)
    data = be.from_frame(df, judge="judge", success="human", label_design="random")
    judged = be.fit(data, draws=300, tune=300, chains=2, seed=2, progress=False)
    plain = be.fit(data, model="logit_normal", draws=300, chains=2, seed=3, progress=False)
    assert judged.model == "judge" and plain.model == "logit_normal"
    a = judged.summary().set_index(["system", "estimand"])
    b = plain.summary().set_index(["system", "estimand"])
    for key in a.index:
        # within 4 Monte Carlo standard errors of the difference (each fit's own)
        mc = np.hypot(a.loc[key, "mcse_mean"], b.loc[key, "mcse_mean"])
        assert abs(a.loc[key, "mean"] - b.loc[key, "mean"]) < 4 * mc, key
        assert a.loc[key, "sd"] == pytest.approx(b.loc[key, "sd"], rel=0.2), key


def test_auto_picks_the_judge_model_only_for_judged_data():
    rng = np.random.default_rng(0)
    df, _ = simulate_judged(rng, systems={"B": (0.5, 0.9, 0.6), "A": (0.2, 0.85, 0.9)}, n_task=10)
    judged = be.from_frame(df, judge="judge", success="human", label_design="random")
    assert choose_model(judged)[0] == "judge"
    plain = be.from_frame(df.assign(human=df["judge"]), success="human")
    assert choose_model(plain)[0] == "logit_normal"
    assert choose_model(be.from_counts([3, 5, 1], trials=10))[0] == "hierarchical"
    assert "judge=" in get_model("judge").supports(plain)


def test_refusals():
    several = be.datasets.load("judging_the_judges")  # three judges: fitted jointly
    assert get_model("judge").supports(several) is None
    with pytest.raises(ValueError, match="unknown prior"):
        get_model("judge").validate_priors({"sensitivity_sd": 1.0})
    with pytest.raises(ValueError, match="prior specificity"):
        get_model("judge").validate_priors({"specificity": (0.0, -1.0)})
    res = fake_results(
        be.from_counts([[3, 5, 1], [4, 4, 2]], trials=10, systems=["A", "B"]), model="logit_normal"
    )
    with pytest.raises(ValueError, match="without a judge"):
        res.judge()


@pytest.mark.filterwarnings("ignore:the MCMC diagnostics fail")
def test_a_saved_fit_reads_back_the_same(lenient_on_b, tmp_path):
    _, _, _, res = lenient_on_b
    res.to_netcdf(tmp_path / "fit.nc")
    back = be.load(tmp_path / "fit.nc")
    assert back.model == "judge"
    np.testing.assert_array_equal(
        back.judge()["specificity"].values, res.judge()["specificity"].values
    )
    np.testing.assert_array_equal(
        back.pass_at_k(estimand="tasks").values, res.pass_at_k(estimand="tasks").values
    )


@pytest.mark.filterwarnings("ignore:the MCMC diagnostics fail")
def test_pass_at_k_counts_every_judged_attempt(lenient_on_b):
    _, rates, data, res = lenient_on_b
    assert int(data.dataset["trials"].min()) == 0  # most cells hold one label or none
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # k = 3 attempts were judged in every cell
        draws = res.pass_at_k(k=3, estimand="tasks")
    truth = {s: float(np.mean(1 - (1 - p) ** 3)) for s, p in rates.items()}
    for system, value in truth.items():
        lo, hi = np.quantile(draws.sel(system=system).values, [0.005, 0.995])
        assert lo <= value <= hi, (system, lo, hi, value)
    with pytest.warns(be.BayevalWarning, match="goes beyond the 3 trial"):
        res.pass_at_k(k=4, estimand="tasks")
