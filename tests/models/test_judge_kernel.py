"""The collapsed judged cells: the integral against SciPy, the gradient, the exact draws."""

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

import bayeval as be
from bayeval.models.judge import CELL_VARS, JudgeRates, build_judge_model, judge_log_likelihood
from bayeval.models.kernels.judge import MAX_ATTEMPTS, cells_logp, draw_effects
from tests.models.judged import simulate_judged


def _cell_integral(eta, sigma, counts, se, sp):
    """log of the cell's likelihood, ``v ~ N(0, sigma^2)`` integrated out by SciPy's quad."""
    n11, n10, n01, n00, u1, u0 = (int(c) for c in counts)
    a, b = n11 + n01, n10 + n00

    def density(z):
        p = special.expit(eta + sigma * z)
        q = se * p + (1 - sp) * (1 - p)
        return stats.norm.pdf(z) * p**a * (1 - p) ** b * q**u1 * (1 - q) ** u0

    grid = np.linspace(-12, 12, 4001)
    mode = grid[np.argmax(density(grid))]
    value, _ = integrate.quad(density, -12, 12, points=[mode], epsrel=1e-13, limit=500)
    labelled = n11 * np.log(se) + n01 * np.log(1 - se) + n10 * np.log(1 - sp) + n00 * np.log(sp)
    return math.log(value) + labelled, mode


def _kernel(eta, sigma, lse, lsp, counts):
    grads = [np.empty(np.shape(np.atleast_2d(eta))) for _ in range(3)]
    value, g_sigma = cells_logp(
        np.atleast_2d(eta).astype(float),
        float(sigma),
        np.atleast_2d(lse).astype(float),
        np.atleast_2d(lsp).astype(float),
        np.asarray(counts, dtype=np.int64).reshape(6, *np.shape(np.atleast_2d(eta))),
        *grads,
    )
    return value, g_sigma, grads


def test_cell_integral_matches_scipy_quadrature():
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(400):
        n = int(rng.integers(1, 11))
        counts = rng.multinomial(n, rng.dirichlet(np.ones(6)))
        eta, sigma = rng.normal(0, 2), rng.uniform(0.0, 3.0)
        se, sp = special.expit(rng.normal(1.5, 1.5, 2))
        want, mode = _cell_integral(eta, sigma, counts, se, sp)
        if abs(mode) > 5:  # the cell's mass deep in the prior's tail: not a fitted region
            continue
        got, _, _ = _kernel(eta, sigma, special.logit(se), special.logit(sp), counts)
        assert got == pytest.approx(want, abs=1e-6), (counts, eta, sigma, se, sp)
        checked += 1
    assert checked > 300


def test_one_cell_of_one_attempt_is_linear_in_the_logit_normal_mean():
    # one unlabelled verdict 1: L = (1 - sp) + (se + sp - 1) E expit(eta + sigma Z)
    eta, sigma, se, sp = -0.7, 1.3, 0.8, 0.9
    mean, _ = integrate.quad(
        lambda z: stats.norm.pdf(z) * special.expit(eta + sigma * z), -20, 20, epsabs=1e-14
    )
    got, _, _ = _kernel(eta, sigma, special.logit(se), special.logit(sp), [0, 0, 0, 0, 1, 0])
    assert got == pytest.approx(math.log((1 - sp) + (se + sp - 1) * mean), abs=1e-9)


@pytest.mark.parametrize("kind", range(6))
@pytest.mark.parametrize(
    "eta, sigma",
    [
        (0.4, 0.7),
        (-3.0, 2.0),
        (1.0, 45.0),  # a wide spread: over a thousand nodes
    ],
)
def test_one_attempt_cells_of_each_kind_match_scipy(kind, eta, sigma):
    counts = np.eye(6, dtype=np.int64)[kind]  # n11, n10, n01, n00, u1 or u0
    se, sp = 0.8, 0.7
    want, _ = _cell_integral(eta, sigma, counts, se, sp)
    got, _, _ = _kernel(eta, sigma, special.logit(se), special.logit(sp), counts)
    assert got == pytest.approx(want, abs=1e-6)


def test_many_small_cell_likelihoods_add_up_without_underflow():
    # the kernel multiplies cells' likelihoods and takes their logarithm now and then: with
    # thousands of cells far below 1 (and some below 1e-100) the total must be the sum of the
    # cells' own logarithms
    rng = np.random.default_rng(12)
    S, J = 4, 600
    eta = rng.choice([-60.0, -250.0, -5.0, 2.0], size=(S, J))
    lse, lsp = rng.normal(1.5, 1, (S, J)), rng.normal(1.5, 1, (S, J))
    counts = np.zeros((6, S, J), dtype=np.int64)
    counts[0] = 1  # every cell a labelled success: its likelihood about expit(eta)
    total, _, _ = _kernel(eta, 0.6, lse, lsp, counts)
    one_by_one = sum(
        _kernel(eta[s, j], 0.6, lse[s, j], lsp[s, j], counts[:, s, j])[0]
        for s, j in np.ndindex(S, J)
    )
    assert np.isfinite(total) and total < -1e5
    assert total == pytest.approx(one_by_one, rel=1e-12)


def test_gradient_matches_central_differences():
    rng = np.random.default_rng(1)
    S, J = 3, 6
    eta = rng.normal(0, 1.5, (S, J))
    lse, lsp = rng.normal(1.5, 1, (S, J)), rng.normal(1.5, 1, (S, J))
    counts = rng.integers(0, 3, (6, S, J))
    counts[:, 0, 0] = 0  # an empty cell
    counts[:, 1, :3] = np.eye(6, dtype=np.int64)[rng.integers(0, 6, 3)].T  # one-attempt cells
    sigma, eps = 0.9, 1e-6
    _, g_sigma, (g_eta, g_lse, g_lsp) = _kernel(eta, sigma, lse, lsp, counts)
    args = {"eta": eta, "lse": lse, "lsp": lsp}
    for name, grad in (("eta", g_eta), ("lse", g_lse), ("lsp", g_lsp)):
        for idx in np.ndindex(S, J):
            up, down = dict(args), dict(args)
            up[name] = args[name].copy()
            up[name][idx] += eps
            down[name] = args[name].copy()
            down[name][idx] -= eps
            numeric = (
                _kernel(up["eta"], sigma, up["lse"], up["lsp"], counts)[0]
                - _kernel(down["eta"], sigma, down["lse"], down["lsp"], counts)[0]
            ) / (2 * eps)
            assert grad[idx] == pytest.approx(numeric, abs=1e-6), (name, idx)
    numeric = (
        _kernel(eta, sigma + eps, lse, lsp, counts)[0]
        - _kernel(eta, sigma - eps, lse, lsp, counts)[0]
    ) / (2 * eps)
    # the rule's nodes move with sigma: its derivative is the integral's up to the rule's error
    assert g_sigma == pytest.approx(numeric, rel=1e-5)


@pytest.mark.parametrize(
    "counts, eta, sigma, grid",
    [
        ([0, 0, 0, 0, 1, 0], -1.0, 0.8, False),  # one unlabelled verdict 1
        ([1, 0, 0, 0, 0, 0], -2.5, 0.5, False),  # a labelled success where successes are rare
        ([0, 1, 0, 0, 0, 0], 2.0, 0.6, False),  # a labelled failure where successes are common
        ([0, 0, 0, 0, 0, 1], 1.5, 1.2, False),  # one unlabelled verdict 0
        ([1, 0, 0, 0, 0, 0], -9.0, 0.3, True),  # one attempt, its likelihood in the tail
        ([2, 1, 1, 3, 4, 2], 0.3, 1.5, False),  # several attempts of every kind
        ([6, 0, 2, 0, 0, 0], -5.0, 0.4, True),  # the likelihood in the prior's tail: the grid
    ],
)
def test_draws_follow_the_conditional(counts, eta, sigma, grid):
    se, sp = 0.85, 0.75
    D = 4000
    v, fallbacks = draw_effects(
        np.random.default_rng(7),
        np.full((D, 1, 1), eta),
        np.full(D, sigma),
        np.full((D, 1, 1), special.logit(se)),
        np.full((D, 1, 1), special.logit(sp)),
        np.asarray(counts, dtype=np.int64).reshape(6, 1, 1),
    )
    n11, n10, n01, n00, u1, u0 = counts
    a, b = n11 + n01, n10 + n00
    points = np.linspace(-12 * sigma, 12 * sigma, 20001)
    p = special.expit(eta + points)
    q = se * p + (1 - sp) * (1 - p)
    log_density = (
        stats.norm.logpdf(points, 0, sigma)
        + a * np.log(p)
        + b * np.log1p(-p)
        + u1 * np.log(q)
        + u0 * np.log1p(-q)
    )
    density = np.exp(log_density - log_density.max())
    cdf = integrate.cumulative_trapezoid(density, points, initial=0.0)
    cdf /= cdf[-1]
    result = stats.kstest(v.ravel(), lambda x: np.interp(x, points, cdf))
    assert result.pvalue > 0.001
    assert (fallbacks > D // 2) if grid else (fallbacks == 0)


SYSTEMS = {"B": (0.4, 0.9, 0.6), "A": (0.0, 0.85, 0.9)}


def _frame(rng, n_task=30, trials=1):
    return simulate_judged(rng, systems=SYSTEMS, n_task=n_task, trials=trials, share=0.3)[0]


def test_collapsed_potential_is_the_full_models_integrated_over_v():
    rng = np.random.default_rng(4)
    data = be.from_frame(
        _frame(rng, n_task=5, trials=2), judge="judge", success="human", label_design="random"
    )
    model = build_judge_model(data, collapsed=True)
    assert "task_system_effect_z" not in model.named_vars
    point = model.initial_point()
    for name, value in point.items():
        point[name] = value + rng.normal(0, 0.3, np.shape(value))
    names = (
        "judged",
        "alpha",
        "task_effect",
        "sigma_task_system",
        "sensitivity",
        "specificity",
        "judge_task_sigma_sensitivity",
        "judge_task_sensitivity_z",
        "judge_task_sigma_specificity",
        "judge_task_specificity_z",
    )
    out = dict(
        zip(
            names,
            model.compile_fn(
                model.replace_rvs_by_values([model[n] for n in names]),
                inputs=model.value_vars,
                point_fn=True,
            )(point),
            strict=True,
        )
    )
    eta = out["alpha"][:, None] + out["task_effect"][None, :]
    lse = (
        special.logit(out["sensitivity"])[:, None]
        + (out["judge_task_sigma_sensitivity"] * out["judge_task_sensitivity_z"])[None, :]
    )
    lsp = (
        special.logit(out["specificity"])[:, None]
        + (out["judge_task_sigma_specificity"] * out["judge_task_specificity_z"])[None, :]
    )
    cells = {
        name: data.dataset[name].isel(judge=0).sum("label_stratum").values for name in CELL_VARS
    }
    want = 0.0
    for s, j in np.ndindex(eta.shape):
        one = {name: np.array([[cells[name][s, j]]]) for name in CELL_VARS}

        def integrand(v, s=s, j=j, one=one):
            return np.exp(
                judge_log_likelihood(
                    one, np.array([[eta[s, j] + v]]), np.array([lse[s, j]]), np.array([lsp[s, j]])
                )[0, 0]
            ) * stats.norm.pdf(v, 0, out["sigma_task_system"])

        want += math.log(integrate.quad(integrand, -30, 30, epsrel=1e-12, limit=400)[0])
    assert float(out["judged"]) == pytest.approx(want, abs=1e-7)


def test_form_follows_the_data():
    rng = np.random.default_rng(5)
    model = JudgeRates()
    paired = be.from_frame(_frame(rng), judge="judge", success="human", label_design="random")
    assert model.sampling_form(paired)[0] == "collapsed"
    one = _frame(rng)
    one = one[one["system"] == "A"]
    single = be.from_frame(one, judge="judge", success="human", label_design="random")
    assert model.sampling_form(single)[0] == "full-latent"
    big = be.from_frame(
        _frame(rng, n_task=3, trials=MAX_ATTEMPTS + 1),
        judge="judge",
        success="human",
        label_design="random",
    )
    form, why = model.sampling_form(big)
    assert form == "full-latent" and str(MAX_ATTEMPTS + 1) in why


def test_collapsed_and_full_latent_fits_agree():
    # the same posterior by two routes: every system's tasks and population pass@1
    rng = np.random.default_rng(6)
    data = be.from_frame(
        _frame(rng, n_task=40, trials=2), judge="judge", success="human", label_design="random"
    )
    fits = {}
    for form in ("collapsed", "full-latent"):
        model = JudgeRates()
        model.sampling_form = lambda data, sampler="auto", form=form: (form, "test")
        tree = model.sample(data, draws=1000, tune=1000, chains=2, seed=3)
        post = tree["posterior"]
        effects = tree["task_effects"]
        fits[form] = (post, effects)
    (pc, ec), (pf, ef) = fits["collapsed"], fits["full-latent"]
    for name in ("alpha", "sensitivity", "specificity", "sigma_task_system"):
        a, b = pc[name], pf[name]
        gap = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw")))
        scale = np.hypot(a.std(("chain", "draw")), b.std(("chain", "draw")))
        assert float((gap / scale).max()) < 0.25, name
    v_c = ec["task_system_effect"].mean(("chain", "draw"))
    v_f = ef["task_system_effect"].mean(("chain", "draw"))
    assert float(np.corrcoef(v_c.values.ravel(), v_f.values.ravel())[0, 1]) > 0.9
