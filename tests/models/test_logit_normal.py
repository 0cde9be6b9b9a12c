"""Logit-normal model: quadrature against SciPy, collapsed against full-latent NUTS, pairing."""

import dataclasses
import importlib
import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import integrate, special, stats

import bayeval as be
from bayeval import BayevalWarning
from bayeval.models import build_logit_normal_model, logit_normal
from bayeval.models.kernels import collapsed
from bayeval.models.kernels.cells import (
    CELL_TABLE_NODES,
    _cell_table_at,
    _cell_table_slice,
    _hermite_coefficients,
    cell_tables,
)
from bayeval.models.kernels.cfunctions import nutpie_functions
from bayeval.models.kernels.coordinates import _zero_sum, _zero_sum_adjoint
from bayeval.models.kernels.exact import exact_task_sums
from bayeval.models.kernels.likelihood import log_marginal, loglik_and_grad, pattern_logliks
from bayeval.models.kernels.logp import collapsed_logp_and_grad, logp_and_grad, unmapped
from bayeval.models.kernels.numerics import _softplus_parts
from bayeval.models.kernels.quadrature import Rules, _conditional_mode
from bayeval.models.kernels.tables import INNER_NODES, TABLE_SIZE, _inner_integral, _table_read
from bayeval.simulate import simulate_benchmark

_LOGIT_NORMAL_MODULES = [logit_normal] + [
    importlib.import_module(f"bayeval.models.logit_normal.{name}")
    for name in ("layout", "kernel", "pymc_model", "estimands", "model")
]


def _set_setting(monkeypatch, name, value):
    """Set ``name`` to ``value`` in every ``logit_normal`` module that holds it: the module that
    defines it and each that imports it by name (whose code reads its own binding)."""
    for module in _LOGIT_NORMAL_MODULES:
        if hasattr(module, name):
            monkeypatch.setattr(module, name, value)


def _reference_log_marginal(eta, c, n, sigma_e, sigma_v, e_nodes=4001, v_nodes=2001):
    """Independent reference: dense trapezoid grids over both effects (binomial coefficients
    left out), checked against SciPy's adaptive ``quad`` in one case below."""
    e = np.linspace(-10 * sigma_e - 12, 10 * sigma_e + 12, e_nodes)
    total = stats.norm.logpdf(e, 0, sigma_e)
    for s in range(len(c)):
        if sigma_v is None:
            y = eta[s] + e
            total = total + c[s] * y - n[s] * np.logaddexp(0, y)
            continue
        v = np.linspace(-10 * sigma_v, 10 * sigma_v, v_nodes)
        y = eta[s] + e[:, None] + v[None, :]
        log_inner = stats.norm.logpdf(v, 0, sigma_v) + c[s] * y - n[s] * np.logaddexp(0, y)
        total = total + _log_trapezoid(log_inner, v)
    return _log_trapezoid(total, e)


def _log_trapezoid(log_f, x):
    """log of the trapezoid integral of exp(log_f) over the last axis, without underflow."""
    top = log_f.max(axis=-1, keepdims=True)
    return np.log(integrate.trapezoid(np.exp(log_f - top), x, axis=-1)) + top[..., 0]


def test_reference_agrees_with_scipy_quad():
    eta, c, n, sigma_e = np.array([0.3]), np.array([12.0]), np.array([16.0]), 3.0
    quad_value = integrate.quad(
        lambda e: (
            stats.norm.pdf(e, 0, sigma_e)
            * np.exp(c[0] * (eta[0] + e) - n[0] * np.logaddexp(0, eta[0] + e))
        ),
        -50,
        50,
        epsabs=0,
        epsrel=1e-12,
        limit=400,
        points=[0],
    )[0]
    assert _reference_log_marginal(eta, c, n, sigma_e, None) == pytest.approx(
        np.log(quad_value), abs=1e-8
    )


CASES = [
    # eta, c, n, sigma_e, sigma_v
    ([0.3, -0.8], [12, 3], [16, 16], 3.0, 1.0),  # many trials, wide task spread
    ([1.5], [16], [16], 4.0, None),  # always solved, one system
    ([-0.5, 0.4], [0, 16], [16, 16], 3.0, 0.3),  # systems disagree completely
    ([0.2, 0.1], [1, 0], [1, 1], 4.4, 0.7),  # single attempts (the fixed grid)
    ([0.2, -1.0, 2.0], [2, 1, 0], [2, 2, 1], 2.0, 1.5),
    ([-2.0, 0.5], [0, 64], [64, 64], 1.0, 0.5),
    # every system fails every trial under a wide task spread: the task effect's marginal is
    # one-sided, which 9 Gauss-Hermite nodes at its mode misjudged by 1.7e-2 (a trapezoid now)
    ([-1.0, -1.5, -3.0, -1.2, -3.0], [0, 0, 0, 0, 0], [10, 10, 10, 1, 10], 6.67, 0.75),
    # LiveCodeBench-like counts under a wide task-by-system spread: the inner integrals of
    # 0 of 10 and 10 of 10 are one-sided, which 9 nodes misjudged by up to 1.2e-2 each
    ([1.6, -0.53, -5.15, 1.9, -6.49], [0, 0, 0, 1, 1], [10, 10, 10, 1, 10], 6.95, 3.82),
    ([1.6, -0.53, -5.15, 1.9, -6.49], [10, 10, 0, 1, 0], [10, 10, 10, 1, 10], 6.95, 3.82),
]


@pytest.mark.parametrize("eta, c, n, sigma_e, sigma_v", CASES)
def test_quadrature_matches_dense_integration(eta, c, n, sigma_e, sigma_v):
    eta, c, n = (np.array(x, dtype=float) for x in (eta, c, n))
    ours = log_marginal(eta[None], c[None], n[None], sigma_e, sigma_v)[0]
    assert ours == pytest.approx(_reference_log_marginal(eta, c, n, sigma_e, sigma_v), abs=2e-4)


@pytest.mark.parametrize(
    "c, tol", [([0, 0, 0, 1, 1], 1e-5), ([10, 10, 0, 1, 0], 1e-5), ([10, 10, 8, 1, 10], 5e-4)]
)  # 8 of 10: nodes, 2e-4 off
def test_log_likelihood_is_smooth_in_the_predictors(c, tol):
    """Along a small shift of every system's predictor the log-likelihood has the second
    differences of a smooth function. With 9-node inner integrals on one-sided counts the task
    effect's marginal had several local maxima: the outer rule's centre jumped between them and
    the value between two levels 2e-3 apart (NUTS then hit its maximum tree depth)."""
    eta = np.array([[1.6, -0.53, -5.15, 1.9, -6.49]])
    c, n = np.array([c], dtype=float), np.array([[10.0, 10.0, 10.0, 1.0, 10.0]])
    h = 4e-4
    values = np.array([log_marginal(eta + t, c, n, 6.95, 3.82)[0] for t in h * np.arange(-10, 11)])
    second = np.diff(values, 2)
    assert np.abs(second).max() < 1e-5  # the curvature here is below 1 per unit shift
    assert values[10] == pytest.approx(
        _reference_log_marginal(eta[0], c[0], n[0], 6.95, 3.82), abs=tol
    )


@pytest.mark.parametrize("cq, nq", [(0, 10), (1, 10), (10, 10), (9, 10), (0, 1), (1, 1), (0, 5)])
@pytest.mark.parametrize("sigma_v", [0.3, 1.0, 3.8, 8.0])
def test_one_sided_inner_integrals_match_dense_integration(cq, nq, sigma_v):
    """The inner integral over the task-by-system effect, with its y derivative, for counts
    whose integrand is a Gaussian cut by a sigmoid, against a dense trapezoid."""
    x, logw, *_ = Rules().arrays()
    terms = np.empty((2, INNER_NODES))
    v = np.linspace(-12 * sigma_v - 40, 12 * sigma_v + 40, 200001)
    for y in np.linspace(-20.0, 20.0, 9):
        vc = _conditional_mode(y, float(cq), float(nq), 0.0, 1 / sigma_v**2)
        log_g, d_y, *_ = _inner_integral(
            y, float(cq), float(nq), 1 / sigma_v**2, np.log(sigma_v), vc, x, logw, terms
        )
        log_f = stats.norm.logpdf(v, 0, sigma_v) + cq * (y + v) - nq * np.logaddexp(0, y + v)
        ref = _log_trapezoid(log_f, v)
        weight = np.exp(log_f - ref)
        ref_dy = integrate.trapezoid(weight * (cq - nq * special.expit(y + v)), v)
        assert log_g == pytest.approx(ref, abs=1e-7)
        assert d_y == pytest.approx(ref_dy, abs=1e-6)


def test_cell_tables_are_kept_for_later_fits(monkeypatch):
    """A fit's tables are built once per process: a later fit builds only the counts it has
    not met, and the least recently used tables beyond ``TABLE_CACHE`` are let go."""
    import collections

    built = []
    real = logit_normal.kernel.cell_tables

    def counted(counts, x, logw):
        built.append(counts.tolist())
        return real(counts, x, logw)

    _set_setting(monkeypatch, "cell_tables", counted)
    _set_setting(monkeypatch, "_tables", collections.OrderedDict())
    _set_setting(monkeypatch, "TABLE_CACHE", 2)
    first = logit_normal._cell_table_stack(np.array([[0.0, 1.0], [1.0, 2.0]]))
    second = logit_normal._cell_table_stack(np.array([[1.0, 2.0], [0.0, 3.0]]))
    assert built == [[[0.0, 1.0], [1.0, 2.0]], [[0.0, 3.0]]]
    np.testing.assert_array_equal(second[0], first[1])
    assert list(logit_normal._tables) == [(1.0, 2.0), (0.0, 3.0)]


def test_cell_tables_read_the_integral_between_their_nodes():
    """The full-latent form's cell tables (bicubic in ``y`` and ``log sigma_v``), read
    between their nodes in both, for counts of every kind (no success, one, half, and the
    mirrored counts at ``-y``), against a dense trapezoid of the integral and its ``y``
    derivative."""
    counts = np.array([[0.0, 10.0], [3.0, 10.0], [5.0, 10.0], [0.0, 1.0]])
    rules = Rules(CELL_TABLE_NODES)
    tables = cell_tables(counts, rules.x, rules.logw)
    rows = np.empty((len(counts), TABLE_SIZE, 4))
    coef = np.empty((len(counts), TABLE_SIZE, 8))
    for sigma_v in (0.05, 0.61, 2.37, 9.0):  # between the tables' columns
        for q in range(len(counts)):
            _cell_table_slice(tables, q, sigma_v, 0, TABLE_SIZE - 1, rows)
            _hermite_coefficients(rows, q, 0, TABLE_SIZE - 1, coef, 3)
        v = np.linspace(-12 * sigma_v - 40, 12 * sigma_v + 40, 200001)
        for (cq, nq), mirrored in [
            ((0, 10), False),
            ((3, 10), False),
            ((7, 10), True),
            ((5, 10), False),
            ((10, 10), True),
            ((1, 1), True),
        ]:
            q = next(k for k, (a, b) in enumerate(counts) if b == nq and a == min(cq, nq - cq))
            for y in (-9.97, -2.43, 0.0, 0.77, 5.55):  # between the rows too
                value, d_y, _ = _cell_table_at(-y if mirrored else y, q, 0, rows, coef)
                d_y = -d_y if mirrored else d_y
                log_f = (
                    stats.norm.logpdf(v, 0, sigma_v) + cq * (y + v) - nq * np.logaddexp(0, y + v)
                )
                ref = _log_trapezoid(log_f, v)
                ref_dy = integrate.trapezoid(
                    np.exp(log_f - ref) * (cq - nq * special.expit(y + v)), v
                )
                assert value == pytest.approx(ref, abs=1e-6), (cq, nq, sigma_v, y)
                assert d_y == pytest.approx(ref_dy, abs=1e-5), (cq, nq, sigma_v, y)


@pytest.mark.parametrize("cq, nq, sigma_v", [(1.0, 4.0, 0.8), (0.0, 1.0, 0.3), (2.0, 10.0, 2.0)])
def test_mirrored_table_reads_equal_the_mirrored_counts_own_table(cq, nq, sigma_v):
    """A cell reads the table of its mirrored counts at -y (``g(y; c, n) = g(-y; n - c, n)``):
    the same value and sigma_v derivative, the slope negated, as a table filled for its own
    counts, at points on and between the cells and beyond the grid."""
    rules = Rules()
    prec_v, log_sigma_v = 1.0 / sigma_v**2, np.log(sigma_v)
    tab = np.zeros((2, TABLE_SIZE, 5))
    terms = np.empty((2, max(rules.x.size, INNER_NODES)))
    for y in np.concatenate([np.linspace(-70, 70, 57), [0.0, 0.05, -3.3, 12.34]]):
        own = _table_read(
            y, 1, nq - cq, nq, prec_v, log_sigma_v, rules.x, rules.logw, tab, terms
        )  # table 1 filled for (n - c, n) itself
        mirrored = _table_read(
            y, -1, nq - cq, nq, prec_v, log_sigma_v, rules.x, rules.logw, tab, terms
        )  # table 0 holds (c, n)
        # the value, slope and sigma_v derivative; not the interpolant's curvature, which
        # divides the cells' differences by the squared step, so that the inner integrals'
        # own error (below 1e-7 in logs, computed about mirrored modes) moves it by percents:
        # it only steers the Newton steps towards a mode
        value, slope, _, dv = mirrored
        np.testing.assert_allclose(
            [value, slope, dv], [own[0], own[1], own[3]], rtol=1e-9, atol=1e-8
        )
    assert tab[0, :, 3].any() and tab[1, :, 3].any()


def test_plain_gauss_hermite_is_biased_where_the_adaptive_rule_is_not():
    """16 trials and a wide spread: nodes placed on the prior miss the likelihood's peak."""
    eta, c, n, sigma_e = np.array([0.3]), np.array([12.0]), np.array([16.0]), 4.0
    truth = _reference_log_marginal(eta, c, n, sigma_e, None)
    x, w = np.polynomial.hermite.hermgauss(40)
    y = eta[0] + np.sqrt(2) * sigma_e * x
    plain = np.log(np.sum(w / np.sqrt(np.pi) * np.exp(c[0] * y - n[0] * np.logaddexp(0, y))))
    adaptive = log_marginal(eta[None], c[None], n[None], sigma_e)[0]
    assert abs(plain - truth) > 0.05
    assert abs(adaptive - truth) < 1e-4


@pytest.mark.parametrize("n_max", [1, 2, 16])
def test_gradient_is_the_derivative_of_the_log_likelihood(n_max):
    rng = np.random.default_rng(n_max)
    P, S = 6, 3
    n = rng.integers(1, n_max + 1, (P, S)).astype(float)
    c = rng.binomial(n.astype(int), 0.6).astype(float)
    mult = rng.integers(1, 20, P).astype(float)
    eta = rng.normal(0, 1.5, (P, S))
    rules = Rules().arrays()

    def total(e, se, sv):
        return loglik_and_grad(e, c, n, mult, se, sv, True, *rules)[0]

    _, g_eta, g_se, g_sv = loglik_and_grad(eta, c, n, mult, 2.0, 0.7, True, *rules)
    h = 1e-6
    numeric = np.zeros_like(eta)
    for i in range(P):
        for j in range(S):
            step = np.zeros_like(eta)
            step[i, j] = h
            numeric[i, j] = (total(eta + step, 2.0, 0.7) - total(eta - step, 2.0, 0.7)) / (2 * h)
    np.testing.assert_allclose(g_eta, numeric, atol=1e-5)
    assert g_se == pytest.approx(
        (total(eta, 2.0 + h, 0.7) - total(eta, 2.0 - h, 0.7)) / (2 * h), abs=1e-4
    )
    assert g_sv == pytest.approx(
        (total(eta, 2.0, 0.7 + h) - total(eta, 2.0, 0.7 - h)) / (2 * h), abs=1e-4
    )


@pytest.mark.parametrize(
    "eta, sigma_e",
    [(0.5, 6.03), (-1.0, 10.03), (2.0, 20.03), (40.0, 100.0), (60.0, 100.0), (-60.0, 100.0)],
)
def test_grid_rule_stays_accurate_for_wide_task_spreads(eta, sigma_e):
    """The grid is refined as sigma_task grows (the fixed 61 nodes erred by 2e-3 per task at
    sigma_task = 10 and 0.2 at 20). At sigma_task = 100 the grid reaches 650 logits: eta = 40
    takes the product of exponentials, +-60 the node-by-node path. Gradient: the exact
    derivative of the refined rule."""
    c, n = np.array([[1.0, 0.0]]), np.array([[1.0, 2.0]])
    eta_p = np.array([[eta, eta - 1.0]])
    ours = log_marginal(eta_p, c, n, sigma_e, 0.5)[0]
    ref = _reference_log_marginal(eta_p[0], c[0], n[0], sigma_e, 0.5)
    assert ours == pytest.approx(ref, abs=1e-6)
    rules = Rules().arrays()

    def total(e, se):
        return loglik_and_grad(e, c, n, np.ones(1), se, 0.5, True, *rules)[0]

    _, g_eta, g_se, _ = loglik_and_grad(eta_p, c, n, np.ones(1), sigma_e, 0.5, True, *rules)
    h = 1e-6
    step = np.array([[h, 0.0]])
    central = (total(eta_p + step, sigma_e) - total(eta_p - step, sigma_e)) / (2 * h)
    assert g_eta[0, 0] == pytest.approx(central, abs=1e-6)
    if sigma_e < 100:  # 13 sigma_e not an integer: the number of nodes is the same at +-h
        assert g_se == pytest.approx(
            (total(eta_p, sigma_e + h) - total(eta_p, sigma_e - h)) / (2 * h), abs=1e-6
        )


@pytest.mark.parametrize("systems", [60])
def test_grid_rule_stays_accurate_for_many_systems(systems):
    """Single trials of many systems narrow the task effect's conditional: the grid's spacing
    follows it (the fixed 61 nodes erred by 1e-2 per task with 50 systems at sigma_task = 3).
    Gradient: the exact derivative of the refined rule."""
    rng = np.random.default_rng(systems)
    eta = rng.normal(0, 1.5, (1, systems))
    c = (rng.random((1, systems)) < special.expit(eta + 1.0)).astype(float)
    n = np.ones((1, systems))
    ours = log_marginal(eta, c, n, 3.0, 0.3)[0]
    ref = _reference_log_marginal(eta[0], c[0], n[0], 3.0, 0.3, e_nodes=3001, v_nodes=401)
    assert ours == pytest.approx(ref, abs=1e-6)
    rules = Rules().arrays()
    _, g_eta, _, _ = loglik_and_grad(eta, c, n, np.ones(1), 3.0, 0.3, True, *rules)
    h = 1e-6
    step = np.zeros_like(eta)
    step[0, 0] = h
    values = [
        loglik_and_grad(eta + sign * step, c, n, np.ones(1), 3.0, 0.3, True, *rules)[0]
        for sign in (1, -1)
    ]
    assert g_eta[0, 0] == pytest.approx((values[0] - values[1]) / (2 * h), abs=1e-6)


@pytest.mark.parametrize("sigma_e", [1e3, 1e10, 1e300])
@pytest.mark.parametrize("paired", [False, True])
def test_absurd_task_spreads_give_finite_values(sigma_e, paired):
    """While NUTS adapts it may propose any spread: the grid refinement is capped (an uncapped
    one once tried to allocate ~1e300 nodes) and the result stays finite."""
    c = np.array([[1.0, 0.0], [8.0, 3.0]])
    n = np.array([[1.0, 1.0], [16.0, 16.0]])
    total, g_eta, g_se, g_sv = loglik_and_grad(
        np.zeros((2, 2)), c, n, np.ones(2), sigma_e, 1.0, paired, *Rules().arrays()
    )
    assert np.isfinite(total) and np.isfinite(g_eta).all()
    assert np.isfinite(g_se) and np.isfinite(g_sv)


def _collapsed_case(systems=2, clusters=True, strata=True, most=4):
    """Six tasks in three clusters and two strata; the last two tasks have ``most`` trials."""
    c = np.minimum([[1, 0, 1, 1, 3, 0], [1, 1, 0, 1, 2, 4], [0, 0, 1, 1, 4, 1]], most)
    c = c[:systems].tolist()
    n = [[1, 1, 1, 1, most, most]] * systems
    data = be.from_counts(
        c if systems > 1 else c[0],
        n if systems > 1 else n[0],
        systems=["A", "B", "C"][:systems] if systems > 1 else None,
        clusters=["x", "x", "y", "y", "y", "z"] if clusters else None,
        strata=["e", "h", "e", "h", "e", "e"] if strata else None,
    )
    return data, np.array(c, float), np.array(n, float)


def _reference_log_density(
    theta, data, c, n, e_nodes=1201, v_nodes=601, latent=False, integrated=False
):
    """Independent reference for the collapsed model: the prior of every quantity in theta's
    coordinates (SciPy densities, log-Jacobians of the log-spreads) plus the dense-grid
    likelihood of every task, with alpha and the cluster effects from ``unpack``. The grids
    are coarser than :func:`_reference_log_marginal`'s default (kept for the 1e-5 checks);
    at these points they differ from it by under 1e-12, far inside the 2e-3 compared.
    ``latent``: the compiled full-latent form instead, whose ``theta`` ends with standard
    normal task and task-by-system effects and whose likelihood is SciPy's binomial at them.
    ``integrated``: the task-latent form, whose ``theta`` ends with the task effects and
    whose likelihood integrates each cell's task-by-system effect by the collapsed grid's
    nine-node Gauss-Hermite rule (written here with NumPy's nodes)."""
    layout = logit_normal.Layout.from_dataset(data.dataset, "task-latent" if integrated else None)
    latent = latent or integrated
    coord = logit_normal.coordinates(layout, latent_tasks=c.shape[1] if latent else 0)
    priors = logit_normal.validate_priors(None)
    tabled = None if integrated or not latent else logit_normal._tabled_cells(c, n, coord)
    if tabled is not None:  # which cells' effects it samples depends on the counts
        coord = dataclasses.replace(
            coord,
            cell_tables=tuple(map(tuple, tabled[1].tolist())),
            sampled_cells=int((~tabled[0]).sum()),
        )
    off = coord.offsets
    log_jacobian = 0.0
    if coord.cluster_pairs:  # the sampler's coordinates, mapped to the plain ones
        theta, log_jacobian = _unpaired_reference(theta, coord, layout)
    if integrated:  # guided (the kernel's own coordinates are what the reference reads)
        coord = dataclasses.replace(
            coord,
            guided=2 * logit_normal.guides_task_means(coord)
            + logit_normal.guides_cluster_system(coord),
        )
        theta, log_jacobian = _unguided_reference(theta, coord, layout, c, n)
    # attenuated (the collapsed form), theta holds some coordinates divided by kappa and some
    # log spreads less log kappa: the density is the model's at the plain coordinates times
    # the scaled coordinates' Jacobian (the log spreads' shift has a unit one)
    plain = coord.plain(theta)

    def part(name):
        start, size = off[name]
        return plain[start : start + size]

    # folded, the cluster coordinates hold the effects plus sigma_task times a linear map of
    # the task effects' first r coordinates: any such shift leaves the prior's density alike
    fold = None
    if coord.task_fold:
        reflections = collapsed.task_reflections(layout.cluster, layout.pops.code)
        r = int(reflections[0])
        fold = (
            np.exp(part("sigma_task")[0])
            * collapsed.task_cluster_fold(layout.cluster, layout.pops.code, reflections)
            @ part("z_e")[:r]
        )
    values = coord.unpack(theta, priors, fold)

    mean, sd = priors["alpha"]
    if layout.system_level:  # alpha[s] = mu + sigma_system eps[s] with mu ~ N(mean, sd)
        S = layout.n_systems
        # with runs, one such block per recipe (mu its own per recipe) and sigma_run's prior
        blocks = np.zeros(S, int) if layout.recipes is None else layout.recipes
        same = blocks[:, None] == blocks[None, :]
        cov = values["sigma_system"] ** 2 * np.eye(S) + sd**2 * same
        total = sum(
            stats.multivariate_normal.logpdf(column, np.full(S, mean), cov)
            for column in values["alpha"].T
        )
        scale = priors["sigma_system" if layout.recipes is None else "sigma_run"]
        # theta holds log sigma_system, or attenuated log(sigma_system / kappa): a map of the
        # log spreads with a unit Jacobian either way, so the log transform's is log sigma
        total += stats.halfnorm.logpdf(values["sigma_system"], scale=scale) + np.log(
            values["sigma_system"]
        )
        if layout.system_level == 2:  # theta holds contrasts / sigma_system: the Jacobian
            contrasts = S - len(np.unique(blocks))
            total += values["alpha"].shape[1] * contrasts * np.log(values["sigma_system"])
    else:
        total = stats.norm.logpdf(values["alpha"], mean, sd).sum()
    if coord.attenuated:  # theta holds the rotated intercepts (but non-centred contrasts)
        # and centred cluster coordinates over kappa = sqrt(1 + (pi / 8)(sigma_task^2 +
        # sigma_task_system^2)): their Jacobian
        # (the task-latent form samples its task effects: kappa holds sigma_task_system
        # alone, and its centred task coordinates are held over kappa too)
        spread2 = (0.0 if integrated else values["sigma_task"] ** 2) + (
            values["sigma_task_system"] ** 2 if layout.paired else 0.0
        )
        _, size = coord.rotation
        held = ((size > 0) | (coord.system_level != 2)).sum() * coord.H
        if coord.cluster_centred and coord.clusters:
            held += (coord.G - 1) * (1 + coord.S * coord.paired * coord.w_centred)
        if integrated:
            held += c.shape[1] - coord.task_rank
        total += held * 0.5 * np.log1p(np.pi / 8.0 * spread2)
    for name in logit_normal.SIGMAS:
        if off[name][1]:
            total += stats.halfnorm.logpdf(values[name], scale=priors[name]) + np.log(values[name])
    G = coord.G
    # the cluster coordinates: standard normal (the mean's sd 1 / sqrt(G)), or centred the
    # zero-sum parts the effects' own, the same normals scaled by their spread
    scale_u = values["sigma_cluster"] if coord.cluster_centred else 1.0
    scale_w = values["sigma_cluster_system"] if coord.w_centred else 1.0
    total += stats.norm.logpdf(part("m_u"), 0, 1 / np.sqrt(G)).sum()
    total += stats.norm.logpdf(part("m_w"), 0, 1 / np.sqrt(G)).sum()
    f_u = part("f_u") if fold is None else part("f_u") - fold
    total += (
        stats.norm.logpdf(f_u, 0, scale_u).sum() + stats.norm.logpdf(part("f_w"), 0, scale_w).sum()
    )
    sigma_v = values["sigma_task_system"] if layout.paired else None
    S, J = c.shape
    if latent:
        z_e = part("z_e")
        z_v = np.zeros((S, J))
        sampled = np.ones((S, J), dtype=bool)
        if coord.cell_tables:  # z_v of the cells without a table only, task-major
            sampled = ~tabled[0]
            z_v.T[sampled.T] = part("z_v")
        elif layout.paired and not integrated:
            z_v = part("z_v").reshape(J, S).T
        total += stats.norm.logpdf(part("z_v")).sum()
        sigma_e = values["sigma_task"]
        if coord.task_centred:  # e = H (sigma z_r, y) with H orthogonal: e ~ N(0, sigma^2 I)
            H = _reflection_matrix(layout)
            r = int(collapsed.task_reflections(layout.cluster, layout.pops.code)[0])
            effects = H @ np.concatenate([sigma_e * z_e[:r], z_e[r:]])
            total += stats.norm.logpdf(effects, 0, sigma_e).sum() + r * np.log(sigma_e)
        else:
            effects = sigma_e * z_e
            total += stats.norm.logpdf(z_e).sum()
    for j in range(J):
        g, h = layout.cluster[j], layout.pops.code[j]
        eta = (
            values["alpha"][:, h]
            + values["cluster_effect"][g]
            + values["cluster_system_effect"][:, g]
        )
        if integrated:  # E over v ~ N(0, sigma_v) of the binomial, nine Hermite nodes
            x, w = np.polynomial.hermite.hermgauss(9)
            y = (eta + effects[j])[:, None] + sigma_v * np.sqrt(2.0) * x
            cj, nj = c[:, j, None], n[:, j, None]
            if np.all(cj == np.round(cj)):
                like = stats.binom.pmf(cj, nj, special.expit(y))
            else:  # sums of partial-credit scores: the fractional binomial, p^c (1 - p)^(n - c)
                like = np.exp(cj * special.log_expit(y) + (nj - cj) * special.log_expit(-y))
            total += np.log(like @ (w / np.sqrt(np.pi))).sum()
            continue
        if latent:
            y = eta + effects[j] + (sigma_v or 0.0) * z_v[:, j]
            total += stats.binom.logpmf(c[:, j], n[:, j], special.expit(y))[sampled[:, j]].sum()
            for s in np.flatnonzero(~sampled[:, j]):  # tabled: integrated over v
                total += np.log(
                    integrate.quad(
                        lambda v, s=s, j=j, y=y: (
                            stats.norm.pdf(v, 0, sigma_v)
                            * stats.binom.pmf(c[s, j], n[s, j], special.expit(y[s] + v))
                        ),
                        -12 * sigma_v,
                        12 * sigma_v,
                        epsabs=0,
                        epsrel=1e-12,
                        limit=200,
                    )[0]
                )
            continue
        total += _reference_log_marginal(
            eta, c[:, j], n[:, j], values["sigma_task"], sigma_v, e_nodes, v_nodes
        )
    return total + log_jacobian


def _unpaired_reference(theta, coord, layout):
    """The plain full-latent coordinates of the sampler's where it pairs the clusters, and
    the map's log-Jacobian, written densely from the definitions: ``theta`` holds ``log rho``
    and ``log(sigma_task / sigma_cluster)`` for the two spreads (and likewise for the
    task-by-system and cluster-by-system spreads); each cluster's effect and
    its tasks' mean effect, ``sigma_cluster z_u[g] + sigma_task zeta[g] / sqrt(n_g)``, as
    their sum ``A[g]`` (normal with variance ``rho[g]^2``, the sum of the two) and a standard
    normal partner orthogonal to it (standardised task effects: the sum standardised too);
    each system's cluster-by-system effect and its task-by-system effects' mean likewise, the
    sum standardised."""
    off = coord.offsets
    x = np.array(theta, dtype=float)
    G, S = coord.G, coord.S
    cluster = layout.cluster
    J = len(cluster)

    def at(name):
        start, size = off[name]
        return slice(start, start + size)

    polar = [("sigma_task", "sigma_cluster")]
    if coord.paired:
        polar.append(("sigma_task_system", "sigma_cluster_system"))
    for small, large in polar:
        i_s, i_l = off[small][0], off[large][0]
        angle = np.arctan(np.exp(x[i_l]))  # tan = sigma_small / sigma_large
        x[i_s], x[i_l] = x[i_s] + np.log(np.sin(angle)), x[i_s] + np.log(np.cos(angle))
    basis = collapsed.zero_sum_basis(G)
    root = np.sqrt(np.bincount(cluster, minlength=G))
    if coord.task_centred:  # zeta[g]: sqrt(n_g) times g's tasks' mean of H[:, :G] z, per z
        to_zeta = np.eye(G)[cluster].T @ _reflection_matrix(layout)[:, :G] / root[:, None]

    def turn(small, large, sums, partner):
        """The pair (large-spread effect, small-spread mean) from (standardised sum,
        partner), rotated back."""
        rho = np.hypot(large, small / root)
        cos, sin = large / rho, small / rho / root
        return cos * sums - sin * partner, sin * sums + cos * partner

    sigma_t, sigma_c = np.exp(x[off["sigma_task"][0]]), np.exp(x[off["sigma_cluster"][0]])
    sums = x[at("m_u")] + basis @ x[at("f_u")]
    z_e = x[at("z_e")]
    if coord.task_centred:  # the sums centred: A / rho
        rho = np.hypot(sigma_c, sigma_t / root)
        z_u, zeta = turn(sigma_t, sigma_c, sums / rho, to_zeta @ z_e[:G])
        z_e[:G] = to_zeta.T @ zeta
        log_jacobian = -np.log(rho).sum()
    else:  # standardised task effects: their clusters' sums over sqrt(n_g)
        means = np.bincount(cluster, z_e, minlength=G) / root
        z_u, zeta = turn(sigma_t, sigma_c, sums, means)
        z_e += ((zeta - means) / root)[cluster]
        log_jacobian = 0.0
    x[at("m_u")], x[at("f_u")], x[at("z_e")] = z_u.mean(), basis.T @ z_u, z_e
    if coord.paired:
        sigma_ts = np.exp(x[off["sigma_task_system"][0]])
        sigma_cs = np.exp(x[off["sigma_cluster_system"][0]])
        z_v = x[at("z_v")].reshape(J, S)
        f_w = x[at("f_w")].reshape(S, G - 1)
        m_w = x[at("m_w")]
        for s in range(S):
            sums = m_w[s] + basis @ f_w[s]
            means = np.bincount(cluster, z_v[:, s], minlength=G) / root
            z_w, xi = turn(sigma_ts, sigma_cs, sums, means)
            z_v[:, s] += ((xi - means) / root)[cluster]
            m_w[s], f_w[s] = z_w.mean(), basis.T @ z_w
        x[at("z_v")], x[at("f_w")], x[at("m_w")] = z_v.ravel(), f_w.ravel(), m_w
    return x, log_jacobian


def _unguided_reference(theta, coord, layout, c, n):
    """The kernel's coordinates of the task-latent form's guided ones, written densely from
    the definitions, and the map's log-Jacobian as the log determinant of its Jacobian taken
    by finite differences (not the kernel's formula). Each system's zero-sum
    cluster-by-system coordinates: ``f = V (sigma b + sqrt(q) eps) / q``, ``q = 1 + sigma^2
    l``. The task effects' ``r`` cluster means: ``z`` given the folded cluster coordinates
    ``c`` and the spreads is normal with precision ``P = 1 + a^2 F'F`` (``a = sigma_task /
    sigma_cluster``) and mean ``P^-1 (sigma_task / sigma_cluster^2) F'c`` (solved densely);
    ``z`` is that mean plus ``W diag(p)^-1/2 eps`` (``W``, ``p`` the eigenvectors and
    eigenvalues of ``P``, those of ``F'F`` with ``p = 1 + a^2 d``)."""
    off = coord.offsets
    S, Gm = coord.S, coord.G - 1
    x0 = np.array(theta, dtype=float)
    moved = []

    def at(name):
        start, size = off[name]
        return slice(start, start + size)

    maps = []
    if coord.guided & 2:
        reflections = collapsed.task_reflections(layout.cluster, layout.pops.code)
        r = int(reflections[0])
        fold = collapsed.task_cluster_fold(layout.cluster, layout.pops.code, reflections)
        first = off["z_e"][0]
        # the eigenbasis of F'F (of P too): where F has a null space of several dimensions
        # any basis of it serves, so the reference takes the kernel's
        d, W = np.linalg.eigh(fold.T @ fold)

        def task_means(x, out):
            s_t, s_c = np.exp(x[off["sigma_task"][0]]), np.exp(x[off["sigma_cluster"][0]])
            precision = np.eye(r) + (s_t / s_c) ** 2 * fold.T @ fold
            mean = np.linalg.solve(precision, s_t / s_c**2 * fold.T @ x[at("f_u")])
            p = 1.0 + (s_t / s_c) ** 2 * d
            out[first : first + r] = mean + W @ (x[first : first + r] / np.sqrt(p))

        maps.append(task_means)
        moved += [
            off["sigma_task"][0],
            off["sigma_cluster"][0],
            *range(*at("f_u").indices(len(x0))),
            *range(first, first + r),
        ]
    if coord.guided & 1:
        guide = collapsed.cluster_system_guide(
            c, n, layout.cluster, layout.pops.code, coord.level_weights
        )
        vectors = guide[: S * Gm * Gm].reshape(S, Gm, Gm)
        values = guide[S * Gm * Gm : S * Gm * (Gm + 1)].reshape(S, Gm)
        score = guide[S * Gm * (Gm + 1) :].reshape(S, Gm)

        def cluster_system(x, out):
            sigma = np.exp(x[off["sigma_cluster_system"][0]])
            q = 1.0 + sigma**2 * values
            eps = x[at("f_w")].reshape(S, Gm)
            f = np.einsum("sik,sk->si", vectors, (sigma * score + np.sqrt(q) * eps) / q)
            out[at("f_w")] = f.ravel()

        maps.append(cluster_system)
        moved += [off["sigma_cluster_system"][0], *range(*at("f_w").indices(len(x0)))]

    def mapped(x):
        out = np.array(x, dtype=float)
        for each in maps:
            each(x, out)
        return out

    if not moved:
        return x0, 0.0
    h = 1e-6
    jacobian = np.column_stack(
        [
            (mapped(x0 + h * e)[moved] - mapped(x0 - h * e)[moved]) / (2 * h)
            for e in np.eye(len(x0))[moved]
        ]
    )
    return mapped(x0), np.linalg.slogdet(jacobian)[1]


def _reflection_matrix(layout):
    """The dense ``H = H_1 ... H_r`` of the centred task effects' reflections."""
    out = collapsed.task_reflections(layout.cluster, layout.pops.code)
    r, J = int(out[0]), len(layout.cluster)
    H = np.eye(J)
    for v in out[1:].reshape(r, J):
        H = H @ (np.eye(J) - 2.0 * np.outer(v, v))
    return H


@pytest.mark.parametrize("clusters, strata", [(False, False), (True, False), (True, True)])
def test_task_reflections_span_the_cluster_and_stratum_means(clusters, strata):
    """``H`` is orthogonal and its first ``r`` columns span the tasks' cluster and stratum
    indicators (the constant among them): the directions the data do not see apart from the
    intercepts and cluster effects, which the centred form keeps non-centred."""
    data, _, _ = _collapsed_case(2, clusters, strata)
    layout = logit_normal.Layout.from_dataset(data.dataset)
    H = _reflection_matrix(layout)
    J = len(layout.cluster)
    np.testing.assert_allclose(H @ H.T, np.eye(J), atol=1e-12)
    indicators = np.column_stack(
        [
            np.eye(layout.cluster.max() + 1)[layout.cluster],
            np.eye(layout.pops.code.max() + 1)[layout.pops.code],
        ]
    )
    r = int(collapsed.task_reflections(layout.cluster, layout.pops.code)[0])
    assert r == np.linalg.matrix_rank(indicators)
    basis = H[:, :r]
    np.testing.assert_allclose(basis @ (basis.T @ indicators), indicators, atol=1e-12)
    if clusters:  # the fold map: what is left of each direction once its zero-sum cluster
        # component is taken off lies in the span of the stratum indicators (and the constant)
        reflections = collapsed.task_reflections(layout.cluster, layout.pops.code)
        fold = collapsed.task_cluster_fold(layout.cluster, layout.pops.code, reflections)
        G = layout.cluster.max() + 1
        cluster_part = (collapsed.zero_sum_basis(G) @ fold)[layout.cluster]  # (J, r)
        assert np.abs(cluster_part).max() > 0.1
        rest = basis - cluster_part
        strata_span = np.column_stack(
            [np.ones(J), np.eye(layout.pops.code.max() + 1)[layout.pops.code]]
        )
        coef = np.linalg.lstsq(strata_span, rest, rcond=None)[0]
        np.testing.assert_allclose(strata_span @ coef, rest, atol=1e-10)


def _with_recipes(data, recipes):
    """The same counts with the systems as training runs of ``recipes``."""
    if recipes is None:
        return data
    return be.EvalData(data.dataset.assign_coords(recipe=("system", list(recipes))))


@pytest.mark.parametrize(
    "systems, clusters, strata, level, recipes, centred",
    [
        (2, True, True, 0, None, False),
        (3, True, False, 1, None, False),
        (3, True, False, 2, None, False),
        (1, True, True, 0, None, False),
        (2, False, False, 0, None, False),
        (3, False, True, 2, None, False),
        (3, True, False, 1, "rrq", False),
        (3, False, True, 2, "rqr", False),
        (2, True, False, 2, "rr", False),
        (2, True, True, 0, None, True),
        (3, True, False, 1, None, True),
        (1, True, False, 0, None, True),
    ],
)
def test_collapsed_log_density_is_prior_plus_likelihood(
    systems, clusters, strata, level, recipes, centred, monkeypatch
):
    """``level``: the system level's form (0 none, 1 centred, 2 non-centred contrasts);
    ``recipes``: the systems as runs of these recipes (a run level per recipe); ``centred``:
    the cluster effects' form."""
    _set_setting(monkeypatch, "system_parametrisation", lambda ds: level)
    _set_setting(monkeypatch, "cluster_parametrisation", lambda ds: centred)
    data, c, n = _collapsed_case(systems, clusters, strata)
    data = _with_recipes(data, recipes)
    model = build_logit_normal_model(data)
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    rng = np.random.default_rng(7)
    size = model.initial_point()["theta"].size
    points = [rng.normal(0, 0.8, size) for _ in range(3)]
    ours = np.array([float(logp({"theta": p})) for p in points])
    ref = np.array([_reference_log_density(p, data, c, n) for p in points])
    # the model leaves out normalising constants: compare differences between points
    np.testing.assert_allclose(ours - ours[0], ref - ref[0], atol=2e-3)
    # the gradient, through every transform, is the exact derivative of the log density where
    # all tasks use the fixed grid (with more trials the adaptive rule's gradient comes from
    # Fisher's identity and matches the derivative to ~1e-4 per task: see above)
    data, c, n = _collapsed_case(systems, clusters, strata, most=2)
    model = build_logit_normal_model(_with_recipes(data, recipes))
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    h = 1e-5
    point = points[1]
    numeric = np.array(
        [
            float(logp({"theta": point + h * e}) - logp({"theta": point - h * e})) / (2 * h)
            for e in np.eye(size)
        ]
    )
    np.testing.assert_allclose(dlogp({"theta": point}), numeric, atol=1e-6)


@pytest.mark.parametrize(
    "systems, clusters, strata, level, recipes, centred, tasks",
    [
        (2, True, True, 0, None, False, False),
        (3, True, False, 2, None, False, False),
        (1, True, True, 0, None, False, False),
        (3, False, True, 1, "rqr", False, False),
        (3, True, True, 2, None, True, False),
        (2, True, False, 0, "rr", True, False),
        (2, True, True, 0, None, False, True),
        (3, True, True, 2, None, True, True),
        (2, False, False, 0, None, False, True),
        (1, True, False, 0, None, False, True),
        (2, True, False, 1, None, True, True),
        (1, True, True, 0, None, True, True),
        (2, True, False, 0, None, False, True),
        (3, True, False, 2, "rqr", False, True),
    ],
)
def test_compiled_full_latent_log_density_is_prior_plus_binomial(
    systems, clusters, strata, level, recipes, centred, tasks, monkeypatch
):
    """The full-latent form ``fit`` samples (one compiled kernel, the task effects at the end
    of theta) against SciPy: the same prior as the collapsed form plus normal task and
    standard normal task-by-system effects and the binomial at them; the gradient by finite
    differences through every coordinate. ``centred``: the cluster effects centred;
    ``tasks``: the task effects centred (their cluster and stratum means non-centred; with
    the cluster effects centred too, the task effects' cluster components folded into them;
    with them not and no strata across the clusters, the cluster pairs rotated and the
    spreads polar, as with standardised task effects and clusters:
    :func:`_unpaired_reference`)."""
    _set_setting(monkeypatch, "system_parametrisation", lambda ds: level)
    _set_setting(monkeypatch, "cluster_parametrisation", lambda ds: centred)
    _set_setting(monkeypatch, "task_parametrisation", lambda ds: tasks)
    data, c, n = _collapsed_case(systems, clusters, strata)
    data = _with_recipes(data, recipes)
    coord = logit_normal.coordinates(
        logit_normal.Layout.from_dataset(data.dataset), latent_tasks=c.shape[1]
    )
    assert coord.cluster_pairs == (clusters and not centred and not (tasks and strata))
    _check_full_latent_density(data, c, n, atol=1e-9)


@pytest.mark.parametrize(
    "systems, clusters, strata, level, recipes, centred, tasks, tables",
    [
        (3, True, True, 2, None, True, True, 12),
        (3, True, False, 1, None, True, False, 2),
        (2, False, True, 0, None, False, True, 12),
        (3, False, False, 2, "rqr", False, False, 2),
        (3, True, True, 1, None, False, True, 1),
    ],
)
def test_full_latent_cells_integrated(
    systems, clusters, strata, level, recipes, centred, tasks, tables, monkeypatch
):
    """With many cells (here forced from one: ``TABLED_CELLS``) the full-latent form
    integrates the cells of the ``CELL_TABLES`` most common pairs of counts over their
    task-by-system effects (bicubic tables in ``y`` and ``log sigma_v``; ``(c, n)`` and ``(n
    - c, n)`` one table) and samples the others' effects: against SciPy's adaptive
    quadrature of the integrated cells and the binomial at the others (within the tables'
    interpolation error), and the gradient by finite differences."""
    _set_setting(monkeypatch, "system_parametrisation", lambda ds: level)
    _set_setting(monkeypatch, "cluster_parametrisation", lambda ds: centred)
    _set_setting(monkeypatch, "task_parametrisation", lambda ds: tasks)
    _set_setting(monkeypatch, "TABLED_CELLS", 1)
    _set_setting(monkeypatch, "CELL_TABLES", tables)
    data, c, n = _collapsed_case(systems, clusters, strata)
    data = _with_recipes(data, recipes)
    coord = logit_normal._latent_inputs(
        c, n, logit_normal.Layout.from_dataset(data.dataset), logit_normal.validate_priors(None), 9
    )[0]
    low = np.minimum(c, n - c)
    pairs, size = np.unique(np.stack([low.ravel(), n.ravel()], axis=1), axis=0, return_counts=True)
    common = {tuple(p): k for p, k in zip(pairs.tolist(), size, strict=True)}
    assert len(coord.cell_tables) == min(tables, len(pairs))
    tabled = np.zeros(c.shape, dtype=bool)
    for cq, nq in coord.cell_tables:
        assert cq <= nq - cq
        tabled |= (low == cq) & (n == nq)
    # the most common pairs take the tables
    assert min(common[p] for p in coord.cell_tables) >= max(
        [k for p, k in common.items() if p not in coord.cell_tables], default=0
    )
    assert coord.offsets["z_v"][1] == (~tabled).sum()
    _check_full_latent_density(data, c, n, atol=1e-6)


def _check_full_latent_density(data, c, n, atol):
    """The compiled full-latent density against :func:`_reference_log_density` at three
    points (differences: constants are left out), and its gradient by finite differences."""
    model = build_logit_normal_model(data, marginal=False, kernel=True)
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    size = model.initial_point()["theta"].size
    rng = np.random.default_rng(11)
    points = [rng.normal(0, 0.8, size) for _ in range(3)]
    ours = np.array([float(logp({"theta": p})) for p in points])
    ref = np.array([_reference_log_density(p, data, c, n, latent=True) for p in points])
    np.testing.assert_allclose(ours - ours[0], ref - ref[0], atol=atol)
    h = 1e-6
    numeric = np.array(
        [
            float(logp({"theta": points[1] + h * e}) - logp({"theta": points[1] - h * e})) / (2 * h)
            for e in np.eye(size)
        ]
    )
    np.testing.assert_allclose(dlogp({"theta": points[1]}), numeric, atol=1e-6)


def _check_task_latent_kernel(coord, v, data, c, n, rng):
    """The compiled task-latent log density against the NumPy reference at three random
    points (differences, so constants cancel), and its gradient by central differences."""

    def kernel(t):
        return logp_and_grad(
            t, v["spec"], v["const"], v["index"][0], v["index"][1], v["c"], v["n"], v["mult"]
        )

    points = [rng.normal(0, 0.8, coord.size) for _ in range(3)]
    ours = np.array([kernel(p)[0] for p in points])
    ref = np.array([_reference_log_density(p, data, c, n, integrated=True) for p in points])
    # the tables' cubic Hermite interpolation in y (steps of 0.1) is all that differs
    np.testing.assert_allclose(ours - ours[0], ref - ref[0], atol=1e-7)
    h = 1e-6
    numeric = np.array(
        [
            (kernel(points[1] + h * e)[0] - kernel(points[1] - h * e)[0]) / (2 * h)
            for e in np.eye(coord.size)
        ]
    )
    np.testing.assert_allclose(kernel(points[1])[1], numeric, atol=1e-6)


@pytest.mark.parametrize(
    "systems, clusters, strata, level, recipes",
    [
        (2, True, True, 0, None),
        (3, True, False, 2, None),
        (3, False, True, 1, None),
        (3, True, True, 2, None),
        (2, False, False, 0, None),
        (3, True, True, 1, "rqr"),
    ],
)
def test_task_latent_log_density_is_prior_plus_integrated_cells(
    systems, clusters, strata, level, recipes, monkeypatch
):
    """The task-latent form (task effects in theta, centred and over kappa; each cell's
    task-by-system effect integrated out by the grid's inner rule, tabulated in ``y``)
    against the reference: the same prior, Jacobians and the rule written with NumPy; the
    gradient by finite differences through every coordinate."""
    _set_setting(monkeypatch, "system_parametrisation", lambda ds: level)
    data, c, n = _collapsed_case(systems, clusters, strata, most=2)
    data = _with_recipes(data, recipes)
    layout = logit_normal.Layout.from_dataset(data.dataset, "task-latent")
    coord, v = logit_normal._latent_inputs(c, n, layout, logit_normal.validate_priors(None), 9)
    assert coord.cells_integrated and coord.attenuated and coord.task_centred
    assert coord.task_fold == (clusters and systems > 1)
    # both guides where there are clusters and several systems (the reference maps them)
    assert coord.guided == (3 if clusters and systems > 1 else 2 if clusters else 0)
    assert "z_v" not in coord.offsets or coord.offsets["z_v"][1] == 0
    with pytest.raises(ValueError, match="at most 2 trials a cell; these data have up to 3"):
        logit_normal._latent_inputs(c, n + 1, layout, logit_normal.validate_priors(None), 9)

    _check_task_latent_kernel(coord, v, data, c, n, np.random.default_rng(12))


@pytest.mark.parametrize("systems", [2, 3])
def test_task_latent_log_density_takes_fractional_counts(systems):
    """Sums of partial-credit scores on the grid of 0.1 (one or two attempts a cell): the
    task-latent form's tables hold each count's fractional-binomial integral, checked against
    the NumPy reference with ``p^c (1 - p)^(n - c)`` at nine Hermite nodes; the gradient by
    finite differences; counts off the grid are refused."""
    data, c, n = _collapsed_case(systems, True, True, most=2)
    rng = np.random.default_rng(5)
    frac = np.clip(c + rng.integers(-4, 5, c.shape) / 10, 0, n)
    assert (frac != np.round(frac)).any() and (frac == n).any() and (frac == 0).any()
    layout = logit_normal.Layout.from_dataset(data.dataset, "task-latent")
    coord, v = logit_normal._latent_inputs(frac, n, layout, logit_normal.validate_priors(None), 9)
    _check_task_latent_kernel(coord, v, data, frac, n, rng)
    with pytest.raises(ValueError, match="grid"):
        logit_normal._latent_inputs(
            frac + 0.03 * (frac < n), n, layout, {**logit_normal.validate_priors(None)}, 9
        )


def test_additive_logits_recover_known_intercepts_and_task_effects():
    """A simulation with known truth: 6 systems x 300 tasks in two strata, 200 trials a cell,
    a few cells without trials; the estimated logits lie within a few binomial standard
    errors of the true ones (the task effects' shrinkage is small at 1,200 trials a task),
    and the task effects' spread is recovered."""
    rng = np.random.default_rng(5)
    S, J = 6, 300
    stratum = rng.integers(0, 2, J)
    alpha = rng.normal(0, 1.0, (S, 2))
    effects = rng.normal(0, 1.5, J)
    logit = alpha[:, stratum] + effects
    n = np.full((S, J), 200.0)
    n[rng.random((S, J)) < 0.05] = 0.0
    c = rng.binomial(n.astype(int), special.expit(logit)).astype(float)
    rates, spread = collapsed.additive_logits(c, n, stratum)
    err = special.logit(rates) - logit
    se = 1.0 / np.sqrt(200 * special.expit(logit) * special.expit(-logit))
    assert np.abs(err / se)[n > 0].max() < 5.0
    assert np.abs(err).mean() < 0.1
    assert spread == pytest.approx(effects.std(), rel=0.1)


@pytest.mark.parametrize("weighted", [False, True])
def test_cluster_system_guide_is_the_binomial_score_and_information(weighted):
    """The guide's constants against finite differences of SciPy's binomial log-likelihood at
    the additive rates, each system's cluster-by-system effects set to ``B f`` (less their
    task-weighted mean where ``weighted``): the eigenvectors and eigenvalues rebuild the
    Hessian's negative, and the rotated score its gradient, at ``f = 0``."""
    rng = np.random.default_rng(8)
    S, J, G = 3, 40, 4
    cluster = np.repeat(np.arange(G), [20, 10, 6, 4])
    stratum = np.zeros(J, dtype=int)
    n = rng.integers(1, 3, (S, J)).astype(float)
    c = rng.binomial(n.astype(int), 0.5).astype(float)
    weights = tuple(np.bincount(cluster) / J) if weighted else ()
    guide = collapsed.cluster_system_guide(c, n, cluster, stratum, weights)
    Gm = G - 1
    vectors = guide[: S * Gm * Gm].reshape(S, Gm, Gm)
    values = guide[S * Gm * Gm : S * Gm * (Gm + 1)].reshape(S, Gm)
    score = guide[S * Gm * (Gm + 1) :].reshape(S, Gm)
    logit = special.logit(collapsed.additive_logits(c, n, stratum)[0])
    basis = collapsed.zero_sum_basis(G)

    def loglik(s, f):
        w = basis @ f
        if weighted:
            w = w - np.dot(weights, w)
        return stats.binom.logpmf(c[s], n[s], special.expit(logit[s] + w[cluster])).sum()

    h = 1e-4
    steps = np.eye(Gm) * h
    for s in range(S):
        grad = np.array([(loglik(s, e) - loglik(s, -e)) / (2 * h) for e in steps])
        hess = np.array(
            [
                [
                    (loglik(s, a + b) - loglik(s, a - b) - loglik(s, b - a) + loglik(s, -a - b))
                    / (4 * h * h)
                    for b in steps
                ]
                for a in steps
            ]
        )
        np.testing.assert_allclose(vectors[s] @ score[s], grad, atol=1e-6)
        np.testing.assert_allclose(vectors[s] @ np.diag(values[s]) @ vectors[s].T, -hess, atol=1e-4)
        np.testing.assert_allclose(vectors[s].T @ vectors[s], np.eye(Gm), atol=1e-12)


def test_collapsed_coordinates_give_the_model_prior():
    """Draw theta exactly from the density the kernel implements (checked above) and map it:
    alpha ~ N(0, 2.5) independently of the cluster effects, u / sigma_cluster ~ N(0, I)."""
    data, _, _ = _collapsed_case(2, True, False)
    coord = logit_normal.coordinates(logit_normal.Layout.from_dataset(data.dataset))
    priors = logit_normal.validate_priors(None)
    rng = np.random.default_rng(3)
    D, G, S = 40_000, coord.G, coord.S
    off = coord.offsets
    theta = np.zeros((D, coord.size))

    def put(name, values):
        start, size = off[name]
        theta[:, start : start + size] = values.reshape(D, size)

    sigma = {name: np.abs(rng.normal(0, priors[name], D)) for name in logit_normal.SIGMAS}
    # the kernel holds the rotated intercepts over kappa and the cluster spreads' logs less
    # log kappa (the density's Jacobian, above)
    assert coord.attenuated
    kappa = np.sqrt(1 + np.pi / 8 * (sigma["sigma_task"] ** 2 + sigma["sigma_task_system"] ** 2))
    for name in logit_normal.SIGMAS:
        put(name, np.log(sigma[name]) - (np.log(kappa) if "cluster" in name else 0.0))
    m_u, m_w = rng.normal(0, 1 / np.sqrt(G), D), rng.normal(0, 1 / np.sqrt(G), (D, S))
    put("m_u", m_u)
    put("m_w", m_w)
    f_u, f_w = rng.normal(size=(D, G - 1)), rng.normal(size=(D, S, G - 1))
    put("f_u", f_u)
    put("f_w", f_w)
    # the intercepts' coordinates are normal about the cluster effects' mean and their
    # zero-sum parts' task-weighted means (the level the data see)
    basis, pi = collapsed.zero_sum_basis(G), np.asarray(coord.level_weights)
    assert pi.size == G
    shift = sigma["sigma_cluster"][:, None] * (m_u + f_u @ basis.T @ pi)[:, None] + sigma[
        "sigma_cluster_system"
    ][:, None] * (m_w + f_w @ basis.T @ pi)
    rotation = collapsed.contrast_rotation(S)
    put("z_alpha", rng.normal(shift @ rotation, 2.5) / kappa[:, None])
    values = coord.unpack(theta, priors)
    alpha = values["alpha"][:, :, 0]
    u = values["cluster_effect"] / sigma["sigma_cluster"][:, None]
    w = values["cluster_system_effect"] / sigma["sigma_cluster_system"][:, None, None]
    assert alpha.mean(0) == pytest.approx([0, 0], abs=0.05)
    assert alpha.std(0) == pytest.approx([2.5, 2.5], rel=0.02)
    assert u.std(0) == pytest.approx(np.ones(G), rel=0.02)
    assert w.reshape(D, -1).std(0) == pytest.approx(np.ones(S * G), rel=0.02)
    joint = np.corrcoef(np.column_stack([alpha, u, w.reshape(D, -1)]).T)
    assert np.abs(joint - np.eye(len(joint))).max() < 0.03


def test_collapsed_agrees_with_full_latent_where_plain_gauss_hermite_fails():
    """One system, 16 trials per task, a wide task spread (logit sd 3)."""
    sim = simulate_benchmark(n_tasks=30, n_trials=16, rates=("logit_normal", 0.5, 3.0), seed=4)
    collapsed = be.fit(sim.data, model="logit_normal", draws=1000, chains=2, tune=600, seed=1)
    with build_logit_normal_model(sim.data, marginal=False):
        latent = pm.sample(
            draws=1000,
            tune=1000,
            chains=2,
            random_seed=2,
            nuts_sampler="nutpie",
            progressbar=False,
            quiet=True,
            compute_convergence_checks=False,
        )
    for name in ("alpha", "sigma_task"):
        ours = collapsed.tree["posterior"][name].values.ravel()
        ref = latent["posterior"][name].values.ravel()
        error = np.sqrt(ours.var() / collapsed.diagnostics["min_ess_bulk"] + ref.var() / 400)
        assert ours.mean() == pytest.approx(ref.mean(), abs=4 * error)
        assert ours.std() == pytest.approx(ref.std(), rel=0.2)
    assert collapsed.diagnostics["divergences"] == 0


def test_paired_effect_is_narrower_than_unpaired():
    sim = simulate_benchmark(
        n_tasks=80,
        n_trials=4,
        n_systems=2,
        rates=("logit_normal", 0, 2.5),
        effect=0.6,
        task_system_sd=0.3,
        seed=7,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)
        paired = be.fit(sim.data, model="logit_normal", draws=400, chains=2, tune=400, seed=1)
        # Separate seeds: the separate fits must not share their random numbers.
        alone = [
            be.fit(
                sim.data.sel(system=s),
                model="logit_normal",
                draws=400,
                chains=2,
                tune=400,
                seed=2 + i,
            )
            for i, s in enumerate(sim.data.systems)
        ]
    a, b = sim.data.systems
    ratios = {}
    for estimand in ("population", "tasks"):
        effect = paired.compare(b, a, estimand=estimand)
        width = float(np.diff(effect["effect_interval"].values)[0])
        draws = [r.pass_at_k(estimand=estimand).values.ravel() for r in alone]
        unpaired = np.diff(np.quantile(draws[1] - draws[0], [0.025, 0.975]))[0]
        ratios[estimand] = width / unpaired
        truth = sim.effect_truth("pass@k", 1, estimand)
        lo, hi = effect["effect_interval"].values
        assert lo < truth < hi
        assert effect.attrs["paired"] is True
    # Measured: 0.56 for a new task. On these tasks the centre moves with the uncertain split
    # between shared and system-specific task effects (sigma_task_system), which offsets most
    # of what pairing gains: the ratio is near 1, and the paired interval is not wider.
    assert ratios["population"] < 0.75
    assert ratios["tasks"] < 1.1


def test_estimand_options_and_errors():
    data = be.from_counts(
        [[1, 0, 1, 1, 0, 1], [1, 1, 0, 1, 1, 1]],
        1,
        systems=["A", "B"],
        clusters=["x", "x", "y", "y", "z", "z"],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)
        res = be.fit(data, model="logit_normal", draws=100, chains=1, tune=100, seed=0)
    new = res.pass_at_k(clusters="new")
    observed = res.pass_at_k(clusters="observed", weighting="cluster")
    assert new.attrs["clusters"] == "new" and observed.attrs["weighting"] == "cluster"
    assert new.attrs["weighting"] == "cluster"  # a new cluster weighs as any other
    # three clusters are too few to learn a new one from: the default is these clusters
    default = res.pass_at_k()
    assert (default.attrs["clusters"], default.attrs["weighting"]) == ("observed", "task")
    assert new.dims == observed.dims == ("chain", "draw", "system")
    tasks = res.pass_at_k(k=[1, 2], estimand="tasks")
    assert tasks.dims == ("chain", "draw", "system", "k")
    with pytest.raises(ValueError, match="clusters= applies to estimand='population'"):
        res.pass_at_k(estimand="tasks", clusters="new")
    with pytest.raises(ValueError, match="clusters must be one of"):
        res.pass_at_k(clusters="some")
    # Bootstrap twins: a new cluster <-> clusters resampled, weighted equally; the observed
    # clusters <-> tasks resampled within them.
    for clusters, twin in (
        ("new", {"unit": "cluster", "weighting": "cluster"}),
        (None, {"unit": "task", "clusters": "observed", "weighting": "task"}),
    ):
        table = be.crosscheck(res, n_boot=300, estimands=["population"], clusters=clusters)
        boot = be.bootstrap.pass_at_k(data, n_boot=300, seed=0, **twin)
        assert str(table["bootstrap_unit"].values) == twin["unit"]
        np.testing.assert_array_equal(
            table["bootstrap_interval"].sel(estimand="population"), boot["interval"]
        )


@pytest.mark.parametrize("metric", ["pass@k", "pass^k"])
def test_observed_cluster_expectation_matches_direct_quadrature(metric):
    """The grid sized to the scale (from 33 nodes at small scales to 2049 at large ones)
    against SciPy's adaptive quadrature, split where the logistic turns, at scales from 0.02
    to 60 and k up to 16 (and k = 1 alone)."""
    from bayeval.models.logit_normal import normal_expectation

    rng = np.random.default_rng(0)
    scale = np.array([0.02, 0.3, 1.0, 1.8, 4.0, 9.0, 18.0, 60.0])
    loc = rng.normal(0, 3, scale.size)
    ks = np.array([1, 4, 16])
    ours = normal_expectation(loc, scale, metric, ks)
    for i in range(scale.size):
        for j, k in enumerate(ks):

            def integrand(z, i=i, k=k):
                p = special.expit(loc[i] + scale[i] * z)
                return stats.norm.pdf(z) * (1 - (1 - p) ** k if metric == "pass@k" else p**k)

            turn = float(np.clip(-loc[i] / scale[i], -11, 11))
            ref = sum(
                integrate.quad(integrand, a, b, epsabs=1e-14, epsrel=1e-13, limit=400)[0]
                for a, b in ((-12, turn), (turn, 12))
            )
            assert ours[i, j] == pytest.approx(ref, abs=1e-12)
    # k = 1 alone takes the kernel's one-exponential route
    np.testing.assert_allclose(
        normal_expectation(loc, scale, metric, [1])[:, 0], ours[:, 0], rtol=0, atol=1e-13
    )


def _dense_conditional(eta, c, n, sigma_e, sigma_v, points=241):
    """The joint conditional of one task's effects on a dense (e, v_1, ..., v_S) grid: weights
    and each system's rate at every grid point (an independent reference for the sampler)."""
    axes = [np.linspace(-9, 9, points) * sigma_e] + [
        np.linspace(-9, 9, points) * sigma_v for _ in eta
    ]
    mesh = np.meshgrid(*axes, indexing="ij")
    log_d = stats.norm.logpdf(mesh[0], 0, sigma_e)
    rates = []
    for s in range(len(eta)):
        y = eta[s] + mesh[0] + mesh[s + 1]
        log_d = (
            log_d
            + stats.norm.logpdf(mesh[s + 1], 0, sigma_v)
            + c[s] * y
            - n[s] * np.logaddexp(0, y)
        )
        rates.append(special.expit(y))
    w = np.exp(log_d - log_d.max())
    return w / w.sum(), rates


def _fine_conditional_rates(eta, c, n, sigma_e, sigma_v, points=(1601, 801)):
    """The first system's rate under one task's joint conditional on a fine (e, v_1) grid,
    the other systems' task-by-system effects integrated out numerically given e: each grid
    point's rate and normalised weight (a reference for the rate's quantiles)."""
    e = np.linspace(-10, 10, points[0]) * sigma_e
    v = np.linspace(-10, 10, points[1]) * sigma_v
    log_e = stats.norm.logpdf(e, 0, sigma_e)
    for s in range(1, len(eta)):  # log int N(v; 0, sigma_v) Bin(c | n, expit(y + v)) dv
        y = eta[s] + e[:, None] + v[None]
        terms = stats.norm.logpdf(v, 0, sigma_v)[None] + c[s] * y - n[s] * np.logaddexp(0, y)
        log_e = log_e + special.logsumexp(terms, axis=1)
    y = eta[0] + e[:, None] + v[None]
    log_d = (
        log_e[:, None]
        + stats.norm.logpdf(v, 0, sigma_v)[None]
        + c[0] * y
        - n[0] * np.logaddexp(0, y)
    )
    w = np.exp(log_d - log_d.max()).ravel()
    return special.expit(y).ravel(), w / w.sum()


@pytest.mark.parametrize("prior_keep", [0.0, 2.0], ids=["prior-first", "hull"])
@pytest.mark.parametrize(
    "eta, c, n, sigma_e, sigma_v",
    [
        ([0.3, -0.5], [1.0, 2.0], [2.0, 2.0], 1.5, 0.8),  # few trials: far from normal
        ([2.0, 1.0], [20.0, 3.0], [20.0, 20.0], 3.0, 1.2),  # one system solves every trial
        ([0.8, -0.4], [1.0, 0.0], [1.0, 1.0], 2.8, 0.4),  # single trials: SWE-bench's cells
    ],
)
def test_exact_task_draws_follow_the_dense_conditional(eta, c, n, sigma_e, sigma_v, prior_keep):
    """Either route, the task's prior tried first (``prior_keep`` 0: every pattern; few of
    the second case's proposals are kept, so most of its draws fall back to the hull) or the
    hull alone (``prior_keep`` 2: none), draws from the task's joint conditional."""
    D = 20_000
    eta, c, n = (np.asarray(a, dtype=float)[None] for a in (eta, c, n))
    out = exact_task_sums(
        np.repeat(eta[None], D, 0),
        c,
        n,
        np.full(D, sigma_e),
        np.full(D, sigma_v),
        True,
        np.array([1.0, 3.0]),
        "pass@k",
        np.ones((1, 2)),
        np.array([0]),
        np.random.default_rng(5),
        prior_keep=prior_keep,
    )
    w, (p1, p2) = _dense_conditional(eta[0], c[0], n[0], sigma_e, sigma_v, points=121)
    # moments of pass@1 and pass@3, and the cross moment that makes comparisons paired
    for value, ref in [(out[:, 0, 0], p1), (out[:, 1, 0], p2), (out[:, 0, 1], 1 - (1 - p1) ** 3)]:
        assert abs(value.mean() - (w * ref).sum()) < 4 * value.std() / np.sqrt(D)
    cross = out[:, 0, 0] * out[:, 1, 0]
    assert abs(cross.mean() - (w * p1 * p2).sum()) < 4 * cross.std() / np.sqrt(D)
    # the distribution, not only its moments: the CDF at the reference's quantiles (from a
    # fine grid: the coarse joint grid's own quantiles are off by about two sampling sd)
    rate, weight = _fine_conditional_rates(eta[0], c[0], n[0], sigma_e, sigma_v)
    order = np.argsort(rate)
    for q in (0.05, 0.25, 0.5, 0.75, 0.95):
        point = rate[order][np.searchsorted(np.cumsum(weight[order]), q)]
        share = (out[:, 0, 0] <= point).mean()
        assert abs(share - q) < 4 * np.sqrt(q * (1 - q) / D)


@pytest.mark.parametrize(
    "eta, c, n, sigma_e, sigma_v",
    [
        ([0.3, -0.5], [1.0, 2.0], [2.0, 2.0], 1.5, 0.8),
        ([0.8, -0.4], [1.0, 0.0], [1.0, 1.0], 2.8, 0.4),
    ],
)
def test_exact_task_draws_do_not_depend_on_where_the_hulls_start(eta, c, n, sigma_e, sigma_v):
    """Every draw starts its hulls at the modes of one reference draw (the median task
    spread's); a reference far from the other draws' conditional costs evaluations only."""
    D = 20_000
    eta, c, n = (np.asarray(a, dtype=float)[None] for a in (eta, c, n))
    etas = np.repeat(eta[None], D, 0)
    spreads = np.full(D, sigma_e)
    reference = D // 2  # the stable median of equal spreads
    etas[reference] += 6.0  # its modes lie far below every other draw's
    out = exact_task_sums(
        etas,
        c,
        n,
        spreads,
        np.full(D, sigma_v),
        True,
        np.array([1.0]),
        "pass@k",
        np.ones((1, 2)),
        np.array([0]),
        np.random.default_rng(8),
        prior_keep=2.0,
    )  # the hull route
    out = np.delete(out, reference, axis=0)
    w, (p1, p2) = _dense_conditional(eta[0], c[0], n[0], sigma_e, sigma_v, points=121)
    for value, ref in [(out[:, 0, 0], p1), (out[:, 1, 0], p2)]:
        assert abs(value.mean() - (w * ref).sum()) < 4 * value.std() / np.sqrt(D)
        for q in (0.05, 0.5, 0.95):
            order = np.argsort(ref, axis=None)
            point = ref.ravel()[order][np.searchsorted(np.cumsum(w.ravel()[order]), q)]
            assert abs((value <= point).mean() - q) < 4 * np.sqrt(q * (1 - q) / D)


def test_exact_task_draws_of_one_system_follow_the_binomial_posterior():
    D = 20_000
    eta, c, n, sigma_e = np.array([[0.5]]), np.array([[3.0]]), np.array([[4.0]]), 2.0
    out = exact_task_sums(
        np.repeat(eta[None], D, 0),
        c,
        n,
        np.full(D, sigma_e),
        np.ones(D),
        False,
        np.array([1.0]),
        "pass@k",
        np.ones((1, 1)),
        np.array([0]),
        np.random.default_rng(2),
    )[:, 0, 0]
    e = np.linspace(-12, 12, 20_001) * sigma_e / 2
    y = 0.5 + e
    w = np.exp(stats.norm.logpdf(e, 0, sigma_e) + 3 * y - 4 * np.logaddexp(0, y))
    w /= w.sum()
    p = special.expit(y)
    for q in (0.1, 0.5, 0.9):
        point = p[np.searchsorted(np.cumsum(w), q)]
        assert abs((out <= point).mean() - q) < 4 * np.sqrt(q * (1 - q) / D)


def test_exact_task_draws_are_reproducible_and_keep_the_task_order():
    rng = np.random.default_rng(0)
    eta = rng.normal(0, 1, (3, 4, 2))
    c = np.array([[0, 1], [1, 1], [2, 0], [1, 2]], dtype=float)
    n = np.full((4, 2), 2.0)
    args = (eta, c, n, np.full(3, 1.0), np.full(3, 0.5), True, np.array([1.0]), "pass@k")
    weight = np.full((5, 2), 0.2)
    inverse = np.array([0, 1, 2, 3, 1])
    first = exact_task_sums(*args, weight, inverse, np.random.default_rng(9))
    again = exact_task_sums(*args, weight, inverse, np.random.default_rng(9))
    np.testing.assert_array_equal(first, again)
    # a system with no weight gets nothing; the other's sum is unchanged in distribution
    one = exact_task_sums(*args, weight * [1.0, 0.0], inverse, np.random.default_rng(9))
    assert np.all(one[:, 1, :] == 0.0)


def test_a_fit_draws_the_same_whatever_was_fitted_before_it():
    """The compiled kernel serves every data set (nothing is compiled per fit): a fit after
    fits of other data draws exactly what the same fit drew before them, in either form."""
    rng = np.random.default_rng(12)
    first, second = (
        be.from_counts(rng.binomial(1, 0.6, (2, n_task)).tolist(), trials=1, systems=["A", "B"])
        for n_task in (20, 31)
    )
    multi = be.from_counts(
        rng.binomial(4, 0.6, (3, 40)).tolist(), trials=4, systems=["A", "B", "C"]
    )
    settings = {"model": "logit_normal", "draws": 100, "tune": 100, "chains": 2, "seed": 4}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)  # short fits
        before = {
            key: be.fit(data, **settings) for key, data in (("second", second), ("multi", multi))
        }
        be.fit(first, **settings)
        after = {
            key: be.fit(data, **settings) for key, data in (("multi", multi), ("second", second))
        }
    assert after["multi"].tree.attrs["form"] == "full-latent"
    for key in before:
        xr.testing.assert_equal(
            after[key].tree["posterior"].to_dataset(), before[key].tree["posterior"].to_dataset()
        )
    xr.testing.assert_equal(
        after["multi"].tree["task_effects"].to_dataset(),
        before["multi"].tree["task_effects"].to_dataset(),
    )


@pytest.mark.parametrize("G", [1, 2, 3, 12, 70])
def test_zero_sum_basis_is_applied_in_linear_time_as_its_matrix(G):
    """The kernel's O(G) products with the zero-sum basis equal the matrix's, and the matrix
    is an orthonormal basis of the vectors summing to zero."""
    basis = collapsed.zero_sum_basis(G)
    np.testing.assert_allclose(basis.T @ basis, np.eye(G - 1), atol=1e-12)
    np.testing.assert_allclose(basis.sum(axis=0), 0.0, atol=1e-12)
    rng = np.random.default_rng(G)
    f, g = rng.normal(size=G - 1), rng.normal(size=G)
    out, adjoint = np.empty(G), np.ones(G - 1)
    _zero_sum(f, out)
    _zero_sum_adjoint(g, 2.0, adjoint)
    np.testing.assert_allclose(out, basis @ f, atol=1e-12)
    np.testing.assert_allclose(adjoint, 1.0 + 2.0 * basis.T @ g, atol=1e-12)


def test_vectorised_exponentials_match_the_math_library():
    """``exp(-|y|)`` and ``log1p(exp(-|y|))`` of the full-latent kernel, written to vectorise,
    against the math library over the whole range (to a few units in the last place)."""
    rng = np.random.default_rng(3)
    y = np.concatenate(
        [
            rng.normal(0, 8, 50_000),
            rng.uniform(-800, 800, 1000),
            [0.0, -0.0, 1e-300, 0.34657359, 0.3465736, 40.0, 700.0, -745.0],
        ]
    )
    small, log_term = _softplus_parts(y.reshape(-1, 8))
    reference = np.exp(-np.minimum(np.abs(y), 700.0))
    np.testing.assert_allclose(small.ravel(), reference, rtol=2e-15, atol=0)
    np.testing.assert_allclose(log_term.ravel(), np.log1p(reference), rtol=2e-15, atol=0)


@pytest.mark.parametrize(
    "form",
    [
        "collapsed",
        "full-latent",
        "full-latent centred",
        "full-latent folded",
        "full-latent pairs",
        "task-latent",
    ],
)
def test_the_c_functions_nutpie_calls_are_the_kernel(form, monkeypatch):
    """The C log density and expansion nutpie calls from its threads (through the addresses
    in their user data) give the kernel's value and gradient (to rounding) and its kept
    values; where the sampler holds the cluster pairs rotated, the kept values are the plain
    coordinates (:func:`_unpaired_reference`)."""
    import ctypes

    from bayeval.models._beta_family import counts_by_bound
    from bayeval.models.kernels import nutpie_model

    centred = form.endswith(("centred", "folded", "pairs", "task-latent"))
    _set_setting(monkeypatch, "task_parametrisation", lambda ds: centred)
    _set_setting(monkeypatch, "cluster_parametrisation", lambda ds: form.endswith("folded"))
    # the task-latent form (task effects centred, cluster components folded, attenuated)
    integrated = form == "task-latent"
    # the cluster pairs rotated: standardised task effects, or centred ones with no strata
    # across the clusters
    pairs = form in ("full-latent", "full-latent pairs")
    data, c, n = _collapsed_case(3, True, form != "full-latent pairs", most=2 if integrated else 4)
    c, n, _ = counts_by_bound(data.dataset)
    layout = logit_normal.Layout.from_dataset(data.dataset, form)
    latent = form.startswith("full-latent") or integrated
    inputs = logit_normal._latent_inputs if latent else logit_normal._collapsed_inputs
    coord, values = inputs(c[0], n[0], layout, logit_normal.validate_priors(None), 9)
    assert coord.task_centred == centred
    assert coord.task_fold == form.endswith(("folded", "task-latent"))
    assert coord.attenuated == (not form.startswith("full-latent"))
    assert coord.cluster_pairs == pairs
    tasks = c.shape[2] if latent else 0
    kept = coord.hyper_size if tasks else coord.size
    model = nutpie_model.KernelModel.build(values, coord.size, kept, tasks, 0)
    logp_c, expand_c = nutpie_functions(latent=tasks > 0)  # the functions a fit of form calls
    x = np.random.default_rng(1).normal(0, 0.7, coord.size)
    grad, logp = np.empty(coord.size), np.empty(1)
    assert (
        logp_c.ctypes(
            coord.size,
            x.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            grad.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            logp.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            model.meta.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
        )
        == 0
    )
    v = model.values
    ref_logp, ref_grad = logp_and_grad(
        x, v["spec"], v["const"], v["index"][0], v["index"][1], v["c"], v["n"], v["mult"]
    )
    # the same arithmetic compiled twice: the compiler may fuse a multiply and an add in one
    # and not the other (fastmath "contract"), a few units in the last place; anything else
    # the C functions did differently would show orders of magnitude above
    np.testing.assert_allclose(logp[0], ref_logp, rtol=1e-14, atol=0)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-12)
    out = np.empty(kept + tasks)
    assert (
        expand_c.ctypes(
            coord.size,
            kept + tasks,
            x.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            model.meta.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
        )
        == 0
    )
    if pairs or integrated:  # kept in the kernel's coordinates, as the Python route keeps
        # them (the pairs unrotated; the task-latent form's guide undone)
        np.testing.assert_array_equal(
            out[:kept], unmapped(x, v["spec"], v["const"], v["index"][0])[:kept]
        )
        assert np.abs(out[:kept] - x[:kept]).max() > 0.01  # not the sampler's coordinates
        x = (
            _unguided_reference(x, coord, layout, c[0], n[0])
            if integrated
            else _unpaired_reference(x, coord, layout)
        )[0]
        np.testing.assert_allclose(out[:kept], x[:kept], rtol=1e-12, atol=1e-13)
    else:
        np.testing.assert_array_equal(out[:kept], x[:kept])
    x = coord.plain(x)  # the task-latent form holds its task coordinates over kappa
    tail = np.exp(x[0]) * x[kept : kept + tasks]
    if centred:  # e = H (sigma z_r, y)
        r = int(collapsed.task_reflections(layout.cluster, layout.pops.code)[0])
        tail = _reflection_matrix(layout) @ np.concatenate([tail[:r], x[kept + r : kept + tasks]])
    np.testing.assert_allclose(out[kept:], tail, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("form", ["collapsed", "full-latent", "task-latent"])
def test_the_c_log_density_rejects_a_diverged_point_with_a_code(form):
    """A trajectory that diverges reaches coordinates that are not numbers, or so large that
    the logits are not: the C log density returns a nonzero code (the sampler rejects the
    point) instead of raising inside the C function, whose exception nutpie cannot see (a
    task-latent fit of SWE-bench once had a chain stuck that way, every draw divergent)."""
    import ctypes

    from bayeval.models._beta_family import counts_by_bound
    from bayeval.models.kernels import nutpie_model

    integrated = form == "task-latent"
    data, _, _ = _collapsed_case(3, True, True, most=2 if integrated else 4)
    c, n, _ = counts_by_bound(data.dataset)
    layout = logit_normal.Layout.from_dataset(data.dataset, form)
    latent = form != "collapsed"
    inputs = logit_normal._latent_inputs if latent else logit_normal._collapsed_inputs
    coord, values = inputs(c[0], n[0], layout, logit_normal.validate_priors(None), 9)
    tasks = c.shape[2] if latent else 0
    kept = coord.hyper_size if tasks else coord.size
    model = nutpie_model.KernelModel.build(values, coord.size, kept, tasks, 0)
    logp_c, _ = nutpie_functions(latent=latent)
    pointer = ctypes.POINTER(ctypes.c_double)
    grad, logp = np.empty(coord.size), np.empty(1)

    def code(x):
        x = np.ascontiguousarray(x, dtype=float)
        return logp_c.ctypes(
            coord.size,
            x.ctypes.data_as(pointer),
            grad.ctypes.data_as(pointer),
            logp.ctypes.data_as(pointer),
            model.meta.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
        )

    x = np.random.default_rng(1).normal(0, 0.7, coord.size)
    assert code(x) == 0 and np.isfinite(logp[0])
    for bad in (np.nan, np.inf, 1e300, -1e300, 800.0):
        point = x.copy()
        point[: coord.size // 2] = bad
        assert code(point) != 0, bad


def test_the_collapsed_c_functions_are_every_forms_on_collapsed_data():
    """A collapsed fit calls C functions compiled for its form alone (a fraction of the
    compilation of every form's): on the collapsed form's data they give exactly the log
    density, gradient and kept values of the functions of every form, and they refuse a latent
    form's data (code -1) instead of reading it as collapsed."""
    import ctypes

    from bayeval.models._beta_family import counts_by_bound
    from bayeval.models.kernels import nutpie_model

    f64, i64 = ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int64)
    data, _, _ = _collapsed_case(3, True, True, most=4)
    c, n, _ = counts_by_bound(data.dataset)
    for form in ("collapsed", "full-latent"):
        layout = logit_normal.Layout.from_dataset(data.dataset, form)
        latent = form != "collapsed"
        inputs = logit_normal._latent_inputs if latent else logit_normal._collapsed_inputs
        coord, values = inputs(c[0], n[0], layout, logit_normal.validate_priors(None), 9)
        tasks = c.shape[2] if latent else 0
        kept = coord.hyper_size if tasks else coord.size
        model = nutpie_model.KernelModel.build(values, coord.size, kept, tasks, 0)
        meta = model.meta.ctypes.data_as(i64)
        x = np.random.default_rng(2).normal(0, 0.7, coord.size)
        results = []
        for functions in (nutpie_functions(latent=False), nutpie_functions(latent=True)):
            grad, logp, out = np.empty(coord.size), np.empty(1), np.empty(kept + tasks)
            code = functions[0].ctypes(
                coord.size,
                x.ctypes.data_as(f64),
                grad.ctypes.data_as(f64),
                logp.ctypes.data_as(f64),
                meta,
            )
            expanded = functions[1].ctypes(
                coord.size, kept + tasks, x.ctypes.data_as(f64), out.ctypes.data_as(f64), meta
            )
            results.append((code, expanded, logp, grad, out))
        (code, expanded, *collapsed_values), (code_all, expanded_all, *values_all) = results
        assert (code_all, expanded_all) == (0, 0)
        if latent:
            assert (code, expanded) == (-1, -1)
            v = model.values
            with pytest.raises(ValueError, match="latent"):
                collapsed_logp_and_grad(
                    x,
                    v["spec"],
                    v["const"],
                    v["index"][0],
                    v["index"][1],
                    v["c"],
                    v["n"],
                    v["mult"],
                )
        else:
            assert (code, expanded) == (0, 0)
            for mine, every in zip(collapsed_values, values_all, strict=True):
                np.testing.assert_array_equal(mine, every)


@pytest.mark.parametrize("centred", [False, True])
def test_without_nutpie_internals_the_fit_samples_the_kernel_from_python(centred, monkeypatch):
    """A nutpie without the internal classes the C route uses: the same kernel through
    nutpie's documented Python route, the same posterior (within Monte Carlo error), with the
    full-latent task effects non-centred or centred (their expansion in Python)."""
    from bayeval.models.kernels import nutpie_model

    _set_setting(monkeypatch, "task_parametrisation", lambda ds: centred)
    data = be.from_counts(
        [[3, 1, 4, 0, 2, 4, 1, 3], [4, 1, 4, 1, 3, 4, 2, 3]], trials=4, systems=["A", "B"]
    )
    settings = {"model": "logit_normal", "draws": 500, "chains": 2, "seed": 8}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)
        native = be.fit(data, **settings)
        monkeypatch.setattr(nutpie_model, "available", lambda: False)
        python = be.fit(data, **settings)
    assert python.tree.attrs["task_effects"] == ("centred" if centred else "non-centred")
    for group, name in (
        ("posterior", "alpha"),
        ("posterior", "sigma_task"),
        ("task_effects", "task_effect"),
    ):
        a, b = (r.tree[group][name].values.reshape(1000, -1) for r in (native, python))
        assert np.all(np.abs(a.mean(0) - b.mean(0)) < 4 * np.hypot(a.std(0), b.std(0)) / 15)


def test_a_systems_draws_do_not_depend_on_the_systems_read_beside_it():
    """Where a fit samples its task effects, a comparison reads only its two systems' draws
    (the cost of a readout at 25 systems), and they are exactly the draws a readout of every
    system gives them: for each estimand, whichever is read first, in either order."""
    rng = np.random.default_rng(3)
    data = be.from_counts(
        rng.binomial(4, 0.6, (4, 30)).tolist(),
        trials=4,
        systems=["A", "B", "C", "D"],
        clusters=np.repeat(["x", "y", "z"], 10).tolist(),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)  # a short fit
        fitted = be.fit(data, model="logit_normal", draws=100, tune=100, chains=2, seed=4)
    assert fitted.tree.attrs["form"] == "full-latent"
    for options in (
        {"estimand": "tasks"},
        {"estimand": "population", "clusters": "observed"},
        {"estimand": "population", "clusters": "new"},
    ):
        pair_first = be.Results(fitted.tree)
        effect = pair_first.compare("D", "B", **options)["effect"]
        (cached,) = pair_first._cache.values()
        assert cached["system"].values.tolist() == ["B", "D"]  # only the pair was computed
        all_first = be.Results(fitted.tree)
        every = all_first.pass_at_k(**options)
        assert every["system"].values.tolist() == ["A", "B", "C", "D"]
        again = all_first.compare("D", "B", **options)["effect"]
        # new clusters: one matrix product over fewer rows may round differently
        np.testing.assert_allclose(again, effect, rtol=1e-13, atol=1e-15)
        # the pair's cache grows to every system in the fit's order, its draws unchanged
        np.testing.assert_allclose(pair_first.pass_at_k(**options), every, rtol=1e-13, atol=1e-15)
        np.testing.assert_array_equal(
            pair_first.pass_at_k(**options).sel(system="D"),
            pair_first.compare("D", "A", **options)["effect"]
            + pair_first.pass_at_k(**options).sel(system="A"),
        )
    np.testing.assert_array_equal(
        fitted.task_rates(system="C").sel(system="C"), fitted.task_rates().sel(system="C")
    )


def test_per_pattern_values_equal_the_gradient_paths():
    """The per-pattern log-likelihoods (``pattern_logliks``, the ``log_likelihood`` group)
    read only the tables' values and skip the gradient pass; each equals, to the last bit,
    what the gradient path (``loglik_and_grad``) sums for it: tasks with more than two trials
    (the adaptive rule, one-sided and two-sided) and with at most two (the grid)."""
    rng = np.random.default_rng(11)
    rules = Rules()
    S, P = 4, 12
    n = rng.choice([1.0, 3.0, 5.0], size=(P, S))
    n[:3] = rng.choice([0.0, 1.0, 2.0], size=(3, S))  # grid patterns
    c = rng.binomial(n.astype(int), 0.5).astype(float)
    c[3] = 0.0  # one-sided: nothing solved
    c[4] = n[4]  # and everything
    eta = rng.normal(0.0, 1.5, (P, S))
    for p in range(P):
        single = loglik_and_grad(
            eta[p : p + 1], c[p : p + 1], n[p : p + 1], np.ones(1), 1.3, 0.7, True, *rules.arrays()
        )[0]
        assert (
            pattern_logliks(
                eta[p : p + 1], c[p : p + 1], n[p : p + 1], 1.3, 0.7, True, *rules.arrays()
            )[0]
            == single
        )


def test_one_trial_pairs_get_the_narrow_task_by_system_prior_and_say_so():
    import json

    rng = np.random.default_rng(7)
    one = be.from_counts(rng.integers(0, 2, size=(2, 40)), trials=1)
    fit = dict(model="logit_normal", draws=200, chains=2, seed=3, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)  # the single-trial warning
        res = be.fit(one, **fit)
        asked = be.fit(one, **fit, priors={"sigma_task_system": 1.5})
        two = be.fit(be.from_counts(rng.integers(0, 3, size=(2, 40)), trials=2), **fit)
    priors = json.loads(res.tree.attrs["priors"])
    assert priors["sigma_task_system"] == logit_normal.ONE_TRIAL_SIGMA_TASK_SYSTEM == 0.5
    assert "one trial per system and task" in res.tree.attrs["prior_note"]
    assert res.tree.attrs["target_accept"] == logit_normal.TARGET_ACCEPT
    # a prior the user names stands; two trials identify the spread: the wide default
    assert json.loads(asked.tree.attrs["priors"])["sigma_task_system"] == 1.5
    assert asked.tree.attrs["prior_note"] == ""
    assert json.loads(two.tree.attrs["priors"])["sigma_task_system"] == 1.5
    assert two.tree.attrs["prior_note"] == ""
    # the narrower prior holds the spread nearer zero than the wide one on the same data
    narrow = float(res.tree["posterior"]["sigma_task_system"].mean())
    wide = float(asked.tree["posterior"]["sigma_task_system"].mean())
    assert narrow < wide
