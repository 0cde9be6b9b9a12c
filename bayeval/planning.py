"""Planning and decisions: sample sizes, multiple comparisons, non-inferiority, selection.

Sample sizes use the t-test power solvers of statsmodels (the unit of analysis is a task, or
a task's paired difference); multiplicity adjustments use ``statsmodels.stats.multitest``;
the selection bias of picking the best of several checkpoints (the winner's curse) is
simulated, with the normal closed form for equally good checkpoints next to it. The spread
a paired comparison is planned from is measured on data: :func:`paired_task_sd` (the sd of
the per-task differences of a metric) and :func:`paired_spread` (that of pass@1, split into
task spread and trial noise).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import xarray as xr
from scipy import optimize, stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestIndPower, TTestPower

from bayeval._validate import (
    describe_values,
    validate_choice,
    validate_margin,
    validate_positive_int,
    validate_prob,
    validate_seed,
)
from bayeval.data import EvalData
from bayeval.estimators import pass_at_k, pass_hat_k

__all__ = [
    "required_units",
    "adjust_pvalues",
    "noninferiority",
    "decide",
    "decision_statement",
    "VERDICTS",
    "selection_bias",
    "paired_spread",
    "paired_task_sd",
]

_MAX_UNITS = 1e12  # beyond this a plan is not a design anyone can run
_ADJUST = {"bonferroni": "bonferroni", "holm": "holm", "bh": "fdr_bh"}


def required_units(sd, effect, alpha=0.05, power=0.8, paired=True, alternative="two-sided") -> int:
    """Number of independent units (tasks) needed to detect ``effect``.

    Parameters
    ----------
    sd : float
        Standard deviation of the unit-level quantity: of a task's paired difference
        (``paired=True``), or of a task's value in each system (``paired=False``). It includes
        trial noise: with rates spread ``tau`` between tasks and n trials per task,
        ``sd**2 ~= tau**2 + p (1 - p) / n``.
    effect : float
        Smallest absolute effect worth detecting (same scale as ``sd``).
    alpha : float, default 0.05
        Type I error rate.
    power : float, default 0.8
        Probability of detecting ``effect``.
    paired : bool, default True
        Paired design (same tasks for both systems: one-sample t-test on differences) or two
        independent task sets (two-sample t-test; the result is per system).
    alternative : {"two-sided", "larger", "smaller"}

    Returns
    -------
    int
        Units needed (rounded up).

    Examples
    --------
    >>> import bayeval as be
    >>> be.required_units(sd=0.3, effect=0.05)
    285
    >>> be.required_units(sd=0.3, effect=0.05, paired=False)
    567
    """
    for name, value in (("sd", sd), ("effect", effect)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a positive number; got {value!r}")
    alpha = validate_prob("alpha", alpha)
    power = validate_prob("power", power)
    validate_choice("alternative", alternative, ("two-sided", "larger", "smaller"))
    size = abs(effect) / sd
    if alternative == "smaller":
        size = -size
    return _solve_units(
        TTestPower() if paired else TTestIndPower(),
        size,
        alpha,
        power,
        alternative,
        sd=sd,
        effect=effect,
    )


def _solve_units(
    solver, size: float, alpha: float, power: float, alternative: str, *, sd, effect
) -> int:
    """Smallest whole number of units (>= 2) whose t-test power reaches ``power``.

    The power is increasing in the number of units, so the answer is bracketed between 2 and a
    multiple of the normal-approximation size and found by root finding on the log scale (the
    statsmodels solver gives up, returning NaN, both for tiny and for huge effects).
    """
    z = stats.norm.ppf(1 - alpha / (2 if alternative == "two-sided" else 1)) + stats.norm.ppf(power)
    factor = 1.0 if isinstance(solver, TTestPower) else 2.0
    with np.errstate(over="ignore"):
        normal = factor * (z / abs(size)) ** 2
    if not normal <= _MAX_UNITS:
        raise ValueError(
            f"effect={effect!r} is too small against sd={sd!r} to plan for: detecting it needs "
            f"about {normal:.3g} units (normal approximation), more than {_MAX_UNITS:.0e}; "
            "choose a larger smallest effect worth detecting"
        )

    def shortfall(log_n: float) -> float:
        return (
            float(np.squeeze(solver.power(size, math.exp(log_n), alpha, alternative=alternative)))
            - power
        )

    if abs(size) >= 1e6 or shortfall(math.log(2.0)) >= 0:  # the power is 1 to machine precision
        return 2
    high = math.log(max(4.0, 2 * normal + 10))
    while shortfall(high) < 0:
        high += math.log(2.0)
    root = math.exp(optimize.brentq(shortfall, math.log(2.0), high, xtol=1e-14, rtol=1e-15))
    units = max(2, math.ceil(root - 1e-9 * max(1.0, root)))
    while shortfall(math.log(units)) < -1e-12:  # guard the rounding of the root
        units += 1
    return units


def adjust_pvalues(p, method: str = "holm") -> np.ndarray:
    """Adjust p-values for multiple comparisons.

    Parameters
    ----------
    p : array_like of float
        P-values in [0, 1], one per comparison in the family.
    method : {"bonferroni", "holm", "bh"}
        Family-wise error control (Bonferroni, Holm) or false discovery rate
        (Benjamini-Hochberg).

    Returns
    -------
    numpy.ndarray
        Adjusted p-values, in the input's shape.

    Examples
    --------
    >>> import bayeval as be
    >>> be.adjust_pvalues([0.01, 0.04, 0.03], method="holm").round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    validate_choice("method", method, tuple(_ADJUST))
    values = np.asarray(p, dtype=float)
    if values.size == 0:
        raise ValueError("p must hold at least one p-value")
    if np.isnan(values).any() or (values < 0).any() or (values > 1).any():
        raise ValueError("p must hold p-values in [0, 1], none missing")
    adjusted = multipletests(values.ravel(), method=_ADJUST[method])[1]
    return adjusted.reshape(values.shape)


SIDED = ("one", "two")
#: The verdicts of :func:`decide`; ``"undecided"`` is a fit that failed its MCMC gates.
VERDICTS = ("non-inferior", "inferior", "superior", "not superior", "inconclusive", "undecided")


def _alpha(prob: float) -> Fraction:
    # the decimal the user wrote (0.95 -> 19/20), so that a count at the edge is not lost
    # to binary rounding
    return 1 - Fraction(repr(float(prob)))


def _one_rule(values: np.ndarray, threshold: float, alpha: Fraction, add_one: int) -> dict:
    """The pass and fail tests of one row of draws, and the order statistics they amount to.

    With ``n`` defined values, ``a = add_one`` (1 for bootstrap replicates: the add-one Monte
    Carlo p-value; 0 for posterior draws: a posterior probability) and ``m`` the largest count
    with ``(a + m) / (n + a) <= alpha``: the pass test rejects ``effect <= threshold`` when at
    most ``m`` values are at or below the threshold, that is when the ``(m + 1)``-th smallest
    value (``lower``) is above it; the fail test rejects ``effect > threshold`` when at most
    ``m`` values are above it, that is when the ``(m + 1)``-th largest (``upper``) is at or
    below it (Davison & Hinkley 1997, eq. 4.11 and section 5.2).
    """
    defined = values[~np.isnan(values)]
    n = defined.size
    if n == 0:
        nan = math.nan
        return dict(pass_=False, fail=False, lower=nan, upper=nan, p=nan, p_fail=nan, share=nan)
    at_or_below = int((defined <= threshold).sum())
    above = n - at_or_below
    m = math.floor(alpha * (n + add_one) - add_one)
    ordered = np.sort(defined)
    lower = float(ordered[m]) if 0 <= m < n else -math.inf
    upper = float(ordered[n - 1 - m]) if 0 <= m < n else math.inf
    return {
        "pass_": at_or_below <= m,
        "fail": above <= m,
        "lower": lower,
        "upper": upper,
        "p": (add_one + at_or_below) / (n + add_one),
        "p_fail": (add_one + above) / (n + add_one),
        "share": above / n,
    }


def decide(
    effect,
    *,
    margin: float = 0.0,
    superior: bool = False,
    prob: float = 0.95,
    sided: str = "one",
    resampled: bool = False,
    gates_failed=(),
    gates_note: str = "",
    refusal: str = "",
) -> xr.Dataset:
    """Decide non-inferiority (or superiority) from draws or bootstrap replicates of an effect.

    The one decision rule of bayeval: the posterior rows, the bootstrap rows, the report, the
    command line and ``bayeval gate`` all call it. The effect is ``metric(candidate) -
    metric(baseline)`` and the threshold ``-margin`` (non-inferiority) or ``+margin``
    (superiority). The candidate passes when the test of ``H0: effect <= threshold`` rejects
    at level ``1 - prob``, fails when the test of ``H0: effect > threshold`` does, and
    otherwise the data cannot decide:

    * posterior draws: the p-value is the posterior probability of H0 (the share of draws at
      or below the threshold, resp. above it), so the candidate passes when
      ``P(effect > threshold) >= prob``;
    * bootstrap replicates (``resampled=True``): the add-one percentile-bootstrap p-value
      ``(1 + #{replicates at or below the threshold}) / (B + 1)``, as
      :func:`bayeval.resampling.bootstrap_p_value`.

    Each test is the same as comparing a bound with the threshold, and the bound is returned
    beside it: ``lower`` is the one-sided lower bound at ``prob`` (an order statistic of the
    draws, so that ``lower > threshold`` exactly when the pass test rejects) and ``upper`` the
    one-sided upper bound. With ``sided="two"`` both tests run at level ``(1 - prob) / 2``:
    ``[lower, upper]`` is the two-sided ``prob`` interval and ``p_value`` is two-sided.

    Parameters
    ----------
    effect : array_like
        Draws or replicates of the effect along the last axis; any leading axes are bounds
        (``missing_bound``) and a verdict must hold at every one of them (the reported
        ``lower`` is their smallest, ``upper`` their largest, each p-value their largest).
        NaN values are left out.
    margin : float, default 0.0
        Practical margin (absolute, non-negative).
    superior : bool, default False
        Test superiority by ``margin`` instead of non-inferiority.
    prob : float, default 0.95
        The probability a verdict needs, above 0.5: one minus the level of each test.
    sided : {"one", "two"}, default "one"
    resampled : bool, default False
        The values are bootstrap replicates (add-one p-values), not posterior draws.
    gates_failed : sequence of str, default ()
        The MCMC gates the fit behind the draws failed (:func:`bayeval.inference.gate_failures`):
        the verdict is ``"undecided"`` whatever the draws say, and ``gates_note`` says why.
    gates_note : str, default ""
    refusal : str, default ""
        Why the values cannot decide at all (a bootstrap over too few clusters,
        :func:`bayeval.resampling.cluster_refusal`): when given, the verdict is
        ``"inconclusive"`` whatever the values say, and the statement gives the reason.

    Returns
    -------
    xarray.Dataset
        Scalars ``prob_pass`` (the share of values above the threshold; under bounds the
        smallest over the bounds), ``prob_fail`` (the share at or below it, likewise),
        ``lower`` and ``upper`` (the bounds the pass and fail tests compare with the
        threshold), ``p_value`` (of ``H0: effect <= threshold``), ``p_value_fail`` (of
        ``H0: effect > threshold``), ``passed`` and ``decided`` (bool). The two tests never
        disagree with their bounds: ``passed`` exactly when ``lower > threshold``, which is
        exactly when ``p_value <= 1 - prob``; the candidate fails exactly when
        ``upper <= threshold``, which is exactly when ``p_value_fail <= 1 - prob``.
        Attributes: ``decision`` (one of :data:`VERDICTS`), ``margin``, ``prob``, ``test``
        (``"non-inferiority"`` or ``"superiority"``), ``threshold``, ``sided``, ``source``
        (``"posterior"`` or ``"bootstrap"``), ``gates_failed`` (list of str), ``gates_note``
        ``refusal_note`` (``refusal``, or ``""``) and ``statement`` (the sentence of
        :func:`decision_statement`).

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.planning import decide
    >>> draws = np.random.default_rng(0).normal(0.035, 0.02, 4000)  # P(effect <= 0) ~ 0.04
    >>> out = decide(draws, margin=0.0)
    >>> out.attrs["decision"], bool(out["lower"] > 0), bool(out["p_value"] <= 0.05)
    ('non-inferior', True, True)
    >>> decide(draws, margin=0.0, sided="two").attrs["decision"]  # the 95% interval holds 0
    'inconclusive'
    >>> for part in out.attrs["statement"].split("; "):
    ...     print(part)
    non-inferior: one-sided 95% lower bound +0.002 > 0
    P(effect <= 0) = 0.0395 <= 0.05
    """
    prob = validate_prob("prob", prob)
    if prob <= 0.5:
        raise ValueError(
            f"prob must be above 0.5 for a decision (at or below it both verdicts could hold); "
            f"got {prob}"
        )
    margin = validate_margin(margin)
    validate_choice("sided", sided, SIDED)
    values = np.asarray(effect, dtype=float)
    if values.ndim == 0 or values.shape[-1] == 0:
        raise ValueError(f"effect must hold draws along its last axis; got shape {values.shape}")
    rows = values.reshape(-1, values.shape[-1])
    threshold = margin if superior else -margin
    alpha = _alpha(prob) / (2 if sided == "two" else 1)
    tests = [_one_rule(row, threshold, alpha, int(bool(resampled))) for row in rows]
    passed = all(t["pass_"] for t in tests)
    failed = all(t["fail"] for t in tests)
    if sided == "two":
        for t in tests:
            t["p"] = t["p_fail"] = min(1.0, 2 * min(t["p"], t["p_fail"]))
    gates = tuple(str(g) for g in gates_failed)
    refusal = str(refusal)
    if gates:
        decision = "undecided"
    elif refusal:
        decision = "inconclusive"
    elif superior:
        decision = "superior" if passed else "not superior" if failed else "inconclusive"
    else:
        decision = "non-inferior" if passed else "inferior" if failed else "inconclusive"
    # a row without a defined value leaves every bound and probability undefined
    shares = np.array([t["share"] for t in tests])

    def over_rows(key, reduce):
        return float(reduce(np.array([t[key] for t in tests])))

    out = xr.Dataset(
        {
            "prob_pass": float(np.min(shares)),
            "prob_fail": float(np.min(1 - shares)),
            "lower": over_rows("lower", np.min),
            "upper": over_rows("upper", np.max),
            "p_value": over_rows("p", np.max),
            "p_value_fail": over_rows("p_fail", np.max),
            "passed": decision in ("non-inferior", "superior"),
            "decided": decision not in ("inconclusive", "undecided"),
        },
        attrs={
            "decision": decision,
            "margin": margin,
            "prob": prob,
            "test": "superiority" if superior else "non-inferiority",
            "threshold": float(threshold),
            "sided": sided,
            "source": "bootstrap" if resampled else "posterior",
            "gates_failed": list(gates),
            "gates_note": str(gates_note) if gates else "",
            "refusal_note": refusal,
        },
    )
    out.attrs["statement"] = decision_statement(out)
    return out


def _num(value: float, digits: int = 3) -> str:
    return f"{value:+.{digits}f}" if math.isfinite(value) else f"{value}"


def _share(value: float, alpha: float) -> str:
    """Three significant digits, more where they would print ``alpha`` for another value."""
    if not math.isfinite(value):
        return "nan"
    text = f"{value:.3g}"
    return f"{value:.6g}" if float(text) == alpha != value else text


def decision_statement(decision: xr.Dataset) -> str:
    """The words of a decision: the verdict, the bound it rests on and its p-value.

    Every output (terminal, JSON, Markdown, HTML, ``bayeval gate``) prints this one sentence;
    :func:`decide` stores it as ``attrs["statement"]``.

    Parameters
    ----------
    decision : xarray.Dataset
        The output of :func:`decide` or :func:`noninferiority`.

    Returns
    -------
    str

    Examples
    --------
    >>> from bayeval.planning import decide, decision_statement
    >>> out = decide([-0.01, 0.01, 0.02, 0.03], prob=0.75, resampled=True)
    >>> decision_statement(out)
    'inconclusive: one-sided 75% bounds [-0.010, +0.030] straddle 0; one-sided p = 0.4 > 0.25'
    """
    attrs = decision.attrs
    verdict = attrs["decision"]
    if verdict == "undecided":
        gates = attrs.get("gates_failed", [])
        why = attrs.get("gates_note") or (gates if isinstance(gates, str) else ", ".join(gates))
        return f"undecided (the fit failed its MCMC gates: {why})"
    if attrs.get("refusal_note"):
        return f"inconclusive ({attrs['refusal_note']})"
    lower, upper = float(decision["lower"]), float(decision["upper"])
    passed, decided = bool(decision["passed"]), bool(decision["decided"])
    two = attrs["sided"] == "two"
    level = f"{100 * attrs['prob']:g}%"
    alpha = float(_alpha(attrs["prob"]))
    if attrs["margin"] == 0:
        value = label = "0"
    else:
        value = _num(attrs["threshold"])
        label = f"{value} ({'margin' if attrs['test'] == 'superiority' else '-margin'})"
    failing = decided and not passed
    p = float(decision["p_value_fail" if failing else "p_value"])
    bootstrap = attrs["source"] == "bootstrap"
    if two:
        p_words = (
            f"two-sided p = {_share(p, alpha)}"
            if bootstrap
            else f"two-sided tail probability {_share(p, alpha)}"
        )
    elif bootstrap:
        p_words = f"one-sided p = {_share(p, alpha)}"
    else:
        p_words = f"P(effect {'>' if failing else '<='} {value}) = {_share(p, alpha)}"
    p_words += f" {'<=' if decided else '>'} {alpha:g}"
    if two:
        bound = f"{level} interval [{_num(lower)}, {_num(upper)}]"
        where = "lies above" if passed else "lies at or below" if failing else "straddles"
        said = f"{bound} {where} {label}"
    elif passed:
        said = f"one-sided {level} lower bound {_num(lower)} > {label}"
    elif failing:
        said = f"one-sided {level} upper bound {_num(upper)} <= {label}"
    else:
        said = f"one-sided {level} bounds [{_num(lower)}, {_num(upper)}] straddle {label}"
    return f"{verdict}: {said}; {p_words}"


def noninferiority(
    comparison: xr.Dataset,
    margin: float | None = None,
    prob: float = 0.95,
    superior: bool = False,
    *,
    sided: str = "one",
) -> xr.Dataset:
    """Decide non-inferiority (or superiority) from a paired comparison.

    :func:`decide` on the comparison's ``effect``: the candidate passes when
    ``P(effect > -margin) >= prob`` (superiority: ``P(effect > margin) >= prob``), that is when
    the one-sided ``prob`` lower bound is above ``-margin``, and fails when the opposite event
    has that probability; otherwise the data cannot decide. Probabilities are shares of
    posterior draws (Bayesian) or add-one p-values of bootstrap replicates. Under
    ``missing="bounds"`` a verdict must hold at both bounds. A posterior comparison whose fit
    failed its MCMC gates (``attrs["gates_failed"]``) is ``"undecided"``. A bootstrap that
    does not decide (``attrs["decides"]`` False: too few clusters, see its ``decision_note``)
    is ``"inconclusive"`` whatever its replicates say.

    Parameters
    ----------
    comparison : xarray.Dataset
        The output of ``Results.compare`` or :func:`bayeval.bootstrap.compare` for one k.
    margin : float, optional
        Defaults to the margin recorded in ``comparison``.
    prob : float, default 0.95
        Required probability, above 0.5.
    superior : bool, default False
        Test superiority by ``margin`` instead of non-inferiority.
    sided : {"one", "two"}, default "one"
        As in :func:`decide`.

    Returns
    -------
    xarray.Dataset
        As :func:`decide`: scalars ``prob_pass`` (``P(effect > -margin)``, or
        ``P(effect > margin)`` for superiority; under bounds the smaller of the two bounds'),
        ``prob_fail`` (the opposite event's), ``lower``, ``upper``, ``p_value``,
        ``p_value_fail``, ``passed`` and ``decided``; attributes ``decision`` (one of
        :data:`VERDICTS`), ``margin``, ``prob``, ``test`` (``"non-inferiority"`` or
        ``"superiority"``), ``threshold``, ``sided``, ``source``, ``gates_failed``,
        ``gates_note``, ``refusal_note`` and ``statement``.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[1, 0, 1, 1, 0, 1] * 5, [1, 1, 1, 1, 0, 1] * 5], trials=1,
    ...                       systems=["A", "B"])
    >>> cmp = be.bootstrap.compare(data, "B", "A", n_boot=2000, seed=0)
    >>> out = be.noninferiority(cmp, margin=0.05)
    >>> out.attrs["decision"], bool(out["passed"])
    ('non-inferior', True)
    """
    margin = validate_margin(comparison.attrs.get("margin", 0.0) if margin is None else margin)
    draws = comparison["effect"]
    if "k" in draws.dims:
        raise ValueError("select one k first (comparison.sel(k=...))")
    sample_dims = [d for d in ("chain", "draw", "replicate") if d in draws.dims]
    other = [d for d in draws.dims if d not in sample_dims]
    if not sample_dims or set(other) - {"missing_bound"}:
        raise ValueError(
            f"comparison['effect'] must have draws (chain, draw) or replicates and no other "
            f"dim but missing_bound; got dims {draws.dims}"
        )
    values = draws.transpose(*other, *sample_dims).values
    values = values.reshape(values.shape[: len(other)] + (-1,))
    resampled = "replicate" in sample_dims
    gates = () if resampled else tuple(comparison.attrs.get("gates_failed", ()))
    refusal = ""
    if comparison.attrs.get("decides") is False:  # a bootstrap over too few clusters
        refusal = str(comparison.attrs.get("decision_note") or "the bootstrap does not decide")
    return decide(
        values,
        margin=margin,
        superior=superior,
        prob=prob,
        sided=sided,
        resampled=resampled,
        gates_failed=gates,
        gates_note=str(comparison.attrs.get("gates_note", "")),
        refusal=refusal,
    )


# -- selection: the winner's curse -------------------------------------------------------------
_SIM_CELLS = 4_000_000  # elements of one simulation-chunk x checkpoint x task block


def _expected_max_normal(m: int) -> float:
    """E[max of m independent standard normals], by numerical integration of its density."""
    if m == 1:
        return 0.0

    def integrand(x):
        return x * m * math.exp(stats.norm.logpdf(x) + (m - 1) * stats.norm.logcdf(x))

    from scipy import integrate

    value, _ = integrate.quad(integrand, -np.inf, np.inf, epsabs=1e-12, epsrel=1e-12)
    return float(value)


def _check_nonnegative(name: str, value) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.floating))
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{name} must be a non-negative number; got {value!r}")
    return float(value)


def selection_bias(
    m, n_tasks, trials=1, p=0.5, sd_between=0.0, sd_task=0.0, n_sim=10_000, seed=0
) -> xr.Dataset:
    """Simulate the winner's curse of picking the best of ``m`` checkpoints by observed score.

    Each simulated run evaluates ``m`` checkpoints on the same ``n_tasks`` tasks with
    ``trials`` episodes each, picks the one with the highest observed pass@1 (ties at random)
    and compares its observed score with its true value: the mean over these tasks of its task
    rates (the ``estimand="tasks"`` value: what the pick would score with unlimited trials).
    Checkpoint i's rate on task j is ``expit(logit(p_i) + b_i + u_j)`` with ``b_i ~ N(0,
    sd_between**2)`` (checkpoints that truly differ, drawn afresh in each run) and ``u_j ~
    N(0, sd_task**2)`` (task difficulty shared by all checkpoints).

    For equally good checkpoints (a scalar ``p``, no spreads) the observed scores are
    independent with sd ``sigma = sqrt(p (1 - p) / (n_tasks * trials))`` and, in the normal
    approximation, the optimism is ``sigma * E[max of m standard normals]``
    (``normal_approximation``).

    Parameters
    ----------
    m : int
        Number of checkpoints compared (>= 1).
    n_tasks, trials : int
        Tasks, and episodes per task and checkpoint.
    p : float or sequence of m floats, default 0.5
        True pass@1 of each checkpoint (before ``sd_between``), strictly between 0 and 1.
    sd_between : float, default 0.0
        Spread of the checkpoints' true values, on the logit scale.
    sd_task : float, default 0.0
        Spread of task difficulty, on the logit scale (shared by the checkpoints).
    n_sim : int, default 10000
        Simulated runs.
    seed : int or None, default 0

    Returns
    -------
    xarray.Dataset
        Scalars ``optimism`` (mean of naive minus true for the pick), ``optimism_sd`` (its
        sd over the simulated runs), ``optimism_se`` (Monte Carlo), ``regret`` (mean
        shortfall of the pick's true value from the best's), ``prob_best_picked`` (ties in
        true value count as best: 1 for equally good checkpoints) and
        ``normal_approximation`` (NaN where it does not apply); the settings ``m``,
        ``n_tasks``, ``trials``, ``n_sim`` and ``seed`` in attrs.

    Examples
    --------
    Eight equally good checkpoints at pass@1 0.85, 160 episodes each:

    >>> import bayeval as be
    >>> from bayeval.planning import selection_bias
    >>> out = selection_bias(8, n_tasks=160, p=0.85, n_sim=4000, seed=0)
    >>> round(float(out["normal_approximation"]), 3)
    0.04
    >>> abs(float(out["optimism"] - out["normal_approximation"])) < 0.004
    True
    """
    m = validate_positive_int("m", m, 1)
    n_tasks = validate_positive_int("n_tasks", n_tasks, 1)
    trials = validate_positive_int("trials", trials, 1)
    n_sim = validate_positive_int("n_sim", n_sim, 2)
    seed = validate_seed(seed)
    sd_between = _check_nonnegative("sd_between", sd_between)
    sd_task = _check_nonnegative("sd_task", sd_task)
    scalar_p = np.ndim(p) == 0
    try:
        rates = np.broadcast_to(np.asarray(p, dtype=float), (m,)).copy()
    except (TypeError, ValueError):
        raise ValueError(
            f"p must be a probability or a sequence of m={m} probabilities; got {p!r}"
        ) from None
    if not ((rates > 0) & (rates < 1)).all():
        raise ValueError(f"p must lie strictly between 0 and 1; got {p!r}")

    rng = np.random.default_rng(seed)
    base = np.log(rates) - np.log1p(-rates)
    optimism = np.empty(n_sim)
    regret = np.empty(n_sim)
    best = np.empty(n_sim, dtype=bool)
    step = max(1, _SIM_CELLS // (m * (n_tasks if sd_task > 0 else 1)))
    for start in range(0, n_sim, step):
        size = min(step, n_sim - start)
        logit = base[None, :] + sd_between * rng.standard_normal((size, m))
        if sd_task > 0:
            u = sd_task * rng.standard_normal((size, 1, n_tasks))
            task_rate = 1.0 / (1.0 + np.exp(-(logit[..., None] + u)))
            naive = rng.binomial(trials, task_rate).sum(axis=2) / (trials * n_tasks)
            true = task_rate.mean(axis=2)
        else:
            true = 1.0 / (1.0 + np.exp(-logit))
            naive = rng.binomial(trials * n_tasks, true) / (trials * n_tasks)
        # highest observed score, ties broken at random
        tie_break = rng.random((size, m))
        pick = np.lexsort((tie_break, naive), axis=1)[:, -1]
        rows = np.arange(size)
        optimism[start : start + size] = naive[rows, pick] - true[rows, pick]
        top = true.max(axis=1)
        regret[start : start + size] = top - true[rows, pick]
        best[start : start + size] = true[rows, pick] >= top - 1e-12
    equal = scalar_p and sd_between == 0 and sd_task == 0
    approx = (
        (math.sqrt(rates[0] * (1 - rates[0]) / (n_tasks * trials)) * _expected_max_normal(m))
        if equal
        else math.nan
    )
    sd = float(optimism.std(ddof=1))
    return xr.Dataset(
        {
            "optimism": float(optimism.mean()),
            "optimism_sd": sd,
            "optimism_se": sd / math.sqrt(n_sim),
            "regret": float(regret.mean()),
            "prob_best_picked": float(best.mean()),
            "normal_approximation": float(approx),
        },
        attrs={"m": m, "n_tasks": n_tasks, "trials": trials, "n_sim": n_sim, "seed": seed},
    )


# -- the spread of paired per-task differences: what a comparison's size is planned from --------
def _check_pair(data, candidate, baseline) -> None:
    if not isinstance(data, EvalData):
        raise TypeError(f"data must be an EvalData; got {type(data).__name__}")
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        if label not in data.systems:
            raise ValueError(
                f"{role} {label!r} is not a system of this data; systems: "
                f"{describe_values(data.systems)}"
            )
    if candidate == baseline:
        raise ValueError("candidate and baseline must be different systems")


def _spread(c_a, n_a, c_b, n_b) -> dict:
    """The spread of ``c_b / n_b - c_a / n_a`` over the shared tasks, split by moments."""
    shared = (n_a > 0) & (n_b > 0)
    n_tasks = int(shared.sum())
    c_a, n_a, c_b, n_b = (np.asarray(x, dtype=float)[shared] for x in (c_a, n_a, c_b, n_b))
    diff = c_b / n_b - c_a / n_a if n_tasks else np.zeros(0)
    sd = float(np.std(diff, ddof=1)) if n_tasks > 1 else math.nan
    out = {
        "n_tasks": n_tasks,
        "median_trials": float(np.median(np.r_[n_a, n_b])) if n_tasks else math.nan,
        "mean_difference": float(diff.mean()) if n_tasks else math.nan,
        "sd": sd,
        "sd_between": math.nan,
        "trial_variance": math.nan,
        "icc": math.nan,
    }
    if n_tasks > 1 and (n_a >= 2).all() and (n_b >= 2).all():
        s2_a = c_a * (n_a - c_a) / (n_a * (n_a - 1))  # unbiased p (1 - p) per task
        s2_b = c_b * (n_b - c_b) / (n_b * (n_b - 1))
        between = max(0.0, sd**2 - float(np.mean(s2_a / n_a + s2_b / n_b)))
        trial_variance = float(np.mean(s2_a + s2_b))
        total = between + trial_variance
        out.update(
            sd_between=float(np.sqrt(between)),
            trial_variance=trial_variance,
            icc=between / total if total > 0 else math.nan,
        )
    return out


def paired_spread(data, candidate, baseline) -> xr.Dataset:
    """Spread of the paired per-task pass@1 differences, split into task spread and trial noise.

    On the tasks both systems have valid trials, ``d_j = c_Bj / n_Bj - c_Aj / n_Aj`` (candidate
    B, baseline A). ``sd`` is their standard deviation at the trials run. With two or more
    trials in every task, the method of moments splits ``sd**2`` into the variance of the
    true per-task differences, ``sd_between**2 = max(0, sd**2 - mean(s2_A / n_A + s2_B /
    n_B))``, and trial noise, with ``s2 = c (n - c) / (n (n - 1))`` the unbiased per-task
    Bernoulli variance; ``trial_variance = mean(s2_A + s2_B)`` is the noise of a one-trial
    difference and ``icc = sd_between**2 / (sd_between**2 + trial_variance)`` the intra-task
    correlation of the difference (not :func:`bayeval.design_effect`'s, which is of one
    system's trials). The sd at ``m`` trials per task is then
    ``sqrt(sd_between**2 + trial_variance / m)``. Under ``missing="bounds"`` the bounds cross
    as in a comparison and the crossing with the larger ``sd`` is returned.

    Parameters
    ----------
    data : EvalData
    candidate, baseline : system labels

    Returns
    -------
    xarray.Dataset
        Scalars ``n_tasks``, ``median_trials``, ``mean_difference``, ``sd``, ``sd_between``,
        ``trial_variance`` and ``icc`` (NaN where not identified, as with one trial per task).
        Under bounds, ``attrs["missing_bound"]`` is the candidate's bound of the crossing
        returned (the baseline's is the other).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.planning import paired_spread
    >>> data = be.from_counts([[2, 8, 5, 0], [4, 9, 5, 3]], trials=10, systems=["A", "B"])
    >>> out = paired_spread(data, "B", "A")
    >>> int(out["n_tasks"]), round(float(out["mean_difference"]), 3), round(float(out["sd"]), 4)
    (4, 0.15, 0.1291)
    >>> 0 <= float(out["icc"]) <= 1
    True
    """
    _check_pair(data, candidate, baseline)
    ds = data.dataset
    n_a = ds["trials"].sel(system=baseline).values
    n_b = ds["trials"].sel(system=candidate).values
    c = ds["successes"]
    attrs = {"candidate": str(candidate), "baseline": str(baseline), "metric": "pass@1"}
    if "missing_bound" not in c.dims:
        out = _spread(c.sel(system=baseline).values, n_a, c.sel(system=candidate).values, n_b)
        return xr.Dataset(out, attrs=attrs)
    best: dict | None = None
    for bound, other in (("lower", "upper"), ("upper", "lower")):
        out = _spread(
            c.sel(system=baseline, missing_bound=other).values,
            n_a,
            c.sel(system=candidate, missing_bound=bound).values,
            n_b,
        )
        out["missing_bound"] = bound
        if best is None or np.nan_to_num(out["sd"]) > np.nan_to_num(best["sd"]):
            best = out
    assert best is not None  # the loop ran over both bounds
    bound = best.pop("missing_bound")
    return xr.Dataset(best, attrs={**attrs, "missing_bound": bound})


def _task_values(data, system, metric, k):
    """Per-task unbiased estimates over ``(bound, task)`` and each task's trials.

    For ``metric="mean"`` the estimate is the task's mean score.
    """
    ds = data.dataset
    n = ds["trials"].sel(system=system).values
    if metric == "mean":
        total = data.score_statistics()["sum"].sel(system=system)
        total = (
            total.transpose("missing_bound", "task").values
            if "missing_bound" in total.dims
            else total.values[None]
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, total / np.where(n > 0, n, 1), np.nan), n
    c = ds["successes"].sel(system=system)
    if "missing_bound" in c.dims:
        c = c.transpose("missing_bound", "task").values
    else:
        c = c.values[None]
    func = pass_at_k if metric == "pass@k" else pass_hat_k
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(n > 0, func(np.maximum(n, 1), c, k), np.nan)
    return values, n


def paired_task_sd(data, candidate, baseline, *, metric: str = "pass@k", k: int = 1) -> xr.Dataset:
    """The sd of the paired per-task differences of a metric: what a paired t-test plans from.

    Each task's unbiased estimate of ``metric`` at ``k`` (:func:`bayeval.pass_at_k`,
    :func:`bayeval.pass_hat_k`; the task's mean score for ``metric="mean"``), candidate minus
    baseline on the tasks both ran, and the standard deviation (``ddof=1``) of those
    differences, the unit-level ``sd`` of :func:`required_units`. Under ``missing="bounds"``
    the bounds cross as in a comparison (the candidate's lower bound against the baseline's
    upper, and the reverse) and ``sd`` is the larger of the two.

    Parameters
    ----------
    data : EvalData
    candidate, baseline : system labels
    metric : {"pass@k", "pass^k", "mean"}, default "pass@k"
    k : int, default 1

    Returns
    -------
    xarray.Dataset
        ``sd`` (NaN with fewer than two shared tasks), ``sd_by_bound`` over ``missing_bound``
        (the candidate's bound of each crossing; only under bounds), ``n_shared_tasks`` and
        ``mean_trials`` over ``system`` (candidate, baseline: their mean trials on the shared
        tasks).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.planning import paired_task_sd
    >>> data = be.from_counts([[2, 8, 5, 0], [4, 9, 5, 3]], trials=10, systems=["A", "B"])
    >>> out = paired_task_sd(data, "B", "A")
    >>> round(float(out["sd"]), 4), int(out["n_shared_tasks"])
    (0.1291, 4)
    """
    _check_pair(data, candidate, baseline)
    validate_choice("metric", metric, ("pass@k", "pass^k", "mean"))
    cand, n_cand = _task_values(data, candidate, metric, k)
    base, n_base = _task_values(data, baseline, metric, k)
    shared = (n_cand > 0) & (n_base > 0)
    # bounds cross as in the comparison: lower = candidate lower - baseline upper
    diff = cand - base[::-1]
    sds = [float(np.std(row[shared], ddof=1)) if shared.sum() > 1 else math.nan for row in diff]
    sd = max(sds) if sds else math.nan
    out = xr.Dataset(
        {
            "sd": sd,
            "n_shared_tasks": int(shared.sum()),
            "mean_trials": (
                "system",
                [n[shared].mean() if shared.any() else math.nan for n in (n_cand, n_base)],
            ),
        },
        coords={"system": np.asarray([candidate, baseline], dtype=object)},
        attrs={"candidate": str(candidate), "baseline": str(baseline), "metric": metric, "k": k},
    )
    if len(sds) > 1:
        bounds = data.dataset["missing_bound"].values
        out["sd_by_bound"] = xr.DataArray(
            sds, dims="missing_bound", coords={"missing_bound": bounds}
        )
    return out
