"""How many judged attempts to label: the PPI++ variance solved for the labelled sample size.

With ``N`` attempts judged, ``n`` of them labelled at random, a true success rate ``p`` and a
judge whose verdicts correlate ``rho`` with the true outcome, the power-tuned PPI++ estimate of
the rate (:func:`bayeval.bootstrap.ppi` with ``unit="trial"``) has asymptotic variance

    Var = p (1 - p) / n * (1 - rho^2 (N - n) / N) = p (1 - p) (1 - rho^2) / n + rho^2 p (1 - p) / N

at the optimal weight ``lam = rho * sd(Y) / sd(J) * (N - n) / N`` (when it lies in [0, 1]; the
weight is clipped there, as the estimator clips it). :func:`required_labels` solves
``z * sqrt(Var) <= half_width`` for the smallest ``n``.
"""

from __future__ import annotations

import math
import numbers
from statistics import NormalDist

from bayeval._validate import validate_prob

__all__ = ["required_labels", "judge_correlation"]


def judge_correlation(rate: float, *, sensitivity: float, specificity: float) -> float:
    """Correlation of a judge's 0/1 verdict with the true 0/1 outcome.

    ``sensitivity`` = P(judge 1 | true 1), ``specificity`` = P(judge 0 | true 0), ``rate`` =
    P(true 1). The verdict's rate is ``q = rate * sens + (1 - rate) * (1 - spec)`` and
    ``Cov = rate * (sens - q)``.

    Examples
    --------
    >>> from bayeval.label_planning import judge_correlation
    >>> round(judge_correlation(0.5, sensitivity=0.9, specificity=0.9), 3)
    0.8
    """
    p = validate_prob("rate", rate)
    se = _unit_interval("sensitivity", sensitivity)
    sp = _unit_interval("specificity", specificity)
    q = p * se + (1 - p) * (1 - sp)
    if q in (0.0, 1.0):
        return 0.0  # a judge that always says the same carries no information
    return p * (se - q) / math.sqrt(p * (1 - p) * q * (1 - q))


def _unit_interval(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) <= 1:
        raise ValueError(f"{name} must be a number in [0, 1]; got {value!r}")
    return float(value)


def _variance(n: int, big_n: int, p: float, rho: float, sd_ratio: float) -> float:
    """PPI++ variance with the weight clipped to [0, 1] (``sd_ratio`` = sd(Y) / sd(J))."""
    var_y = p * (1 - p)
    if n >= big_n:
        return var_y / big_n
    lam = min(max(rho * sd_ratio * (big_n - n) / big_n, 0.0), 1.0)
    var_j = var_y / sd_ratio**2 if sd_ratio > 0 else 0.0
    cov = rho * math.sqrt(var_y * var_j)
    return (var_y - 2 * lam * cov + lam**2 * var_j) / n + lam**2 * var_j / (big_n - n)


def required_labels(
    n_judged: int,
    *,
    half_width: float,
    rate: float,
    sensitivity: float | None = None,
    specificity: float | None = None,
    correlation: float | None = None,
    ci_prob: float = 0.95,
) -> int:
    """Attempts to label for a PPI++ interval of a target half-width on one system's rate.

    Parameters
    ----------
    n_judged : int
        Attempts the judge grades (all of them, labelled or not).
    half_width : float
        Target half-width of the ``ci_prob`` interval for the true success rate.
    rate : float
        Planning value of the true success rate (0.5 is the worst case).
    sensitivity, specificity : float, optional
        The judge's P(verdict 1 | true 1) and P(verdict 0 | true 0).
    correlation : float, optional
        Instead of ``sensitivity``/``specificity``: the measured correlation between the
        judge's verdict and the label (from a pilot). The verdicts' rate then does not matter
        unless the optimal weight exceeds 1, which this form assumes it does not.
    ci_prob : float, default 0.95

    Returns
    -------
    int
        Attempts to label (at random), rounded up; at most ``n_judged``.

    Raises
    ------
    ValueError
        When even labelling every attempt would not reach ``half_width``, naming the
        half-width that labelling all gives.

    Notes
    -----
    Attempts are taken as independent (``unit="trial"``). Where attempts of one task are
    alike, multiply by a design effect (:func:`bayeval.design_effect`) or plan on tasks.

    Examples
    --------
    >>> import bayeval as be
    >>> be.required_labels(5000, half_width=0.03, rate=0.7, sensitivity=0.95, specificity=0.85)
    353

    Without the judge (a correlation of 0) the classical count, ``z^2 p (1 - p) / h^2``:

    >>> be.required_labels(5000, half_width=0.03, rate=0.7, correlation=0.0)
    897
    """
    if isinstance(n_judged, bool) or not isinstance(n_judged, numbers.Integral) or n_judged < 2:
        raise ValueError(f"n_judged must be an integer >= 2; got {n_judged!r}")
    big_n = int(n_judged)
    p = validate_prob("rate", rate)
    if isinstance(half_width, bool) or not isinstance(half_width, numbers.Real) or half_width <= 0:
        raise ValueError(f"half_width must be a positive number; got {half_width!r}")
    z = NormalDist().inv_cdf(0.5 + validate_prob("ci_prob", ci_prob) / 2)
    if correlation is not None:
        if sensitivity is not None or specificity is not None:
            raise TypeError("give correlation= or sensitivity= and specificity=, not both")
        if isinstance(correlation, bool) or not isinstance(correlation, numbers.Real):
            raise ValueError(f"correlation must be a number in [-1, 1]; got {correlation!r}")
        if not -1 <= correlation <= 1:
            raise ValueError(f"correlation must be a number in [-1, 1]; got {correlation!r}")
        rho, sd_ratio = float(correlation), 0.0  # weight unclipped above: closed form
    else:
        if sensitivity is None or specificity is None:
            raise TypeError("give sensitivity= and specificity=, or correlation=")
        rho = judge_correlation(p, sensitivity=sensitivity, specificity=specificity)
        q = p * sensitivity + (1 - p) * (1 - specificity)
        sd_ratio = math.sqrt(p * (1 - p) / (q * (1 - q))) if 0 < q < 1 else 0.0
    target = (half_width / z) ** 2
    var_y = p * (1 - p)
    if target < var_y / big_n * (1 - 1e-12):
        raise ValueError(
            f"half_width {half_width} is out of reach: labelling all {big_n} attempts gives "
            f"{z * math.sqrt(var_y / big_n):.4g}; judge more attempts or widen the target"
        )
    rho = max(rho, 0.0)  # a judge that disagrees more than chance is given no weight
    if sd_ratio == 0.0:  # closed form: Var = var_y (1 - rho^2) / n + rho^2 var_y / N
        room = target - rho**2 * var_y / big_n
        if room <= 0:
            return big_n
        return min(big_n, math.ceil(var_y * (1 - rho**2) / room - 1e-9))
    lo, hi = 1, big_n  # the clipped variance falls with n: bisect on whole counts
    while lo < hi:
        mid = (lo + hi) // 2
        if _variance(mid, big_n, p, rho, sd_ratio) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo
