r"""Predictable bets for the betting capital, and the log capital each one earns.

Every strategy here bets, at step :math:`i`, a size :math:`\lambda_i` computed from steps
before :math:`i` only, and truncated to :math:`[0, c/m]` on the ``+`` side
(:math:`[0, c/(1-m)]` on the ``-`` side) with :math:`c = 1/2`, so that
:math:`1 \pm \lambda_i (y - m) \ge 1/2` for every possible :math:`y \in [0, 1]`. The product
:math:`\prod_i (1 \pm \lambda_i (y_i - m))` is then a nonnegative supermartingale whenever
every conditional mean is at most (``+``) or at least (``-``) :math:`m`, whatever the bets;
an average of such products (a mixture) is one too. The strategies differ in power only.

- ``"mixture"``: the average of the capitals of fixed-horizon bets
  :math:`\lambda_i = \sqrt{2 \log(1/\alpha) / (\hat\sigma^2_{i-1} n_j)}` over the horizons
  :math:`n_j = 16, 32, \dots, 4096`: each is the bet that maximises the chance of reaching
  :math:`1/\alpha` after :math:`n_j` steps (the fixed-time tuning of Waudby-Smith & Ramdas
  2024); the mixture is sharp at every horizon in the grid at a cost of about
  :math:`\log 9` in log capital where one component dominates.
- ``"horizon"``: one fixed-horizon bet, for a number of steps the user plans.
- ``"agrapa"``: the plug-in Kelly bet
  :math:`(\hat\mu_{i-1} - m) / (\hat\sigma^2_{i-1} + (\hat\mu_{i-1} - m)^2)` (aGRAPA,
  Waudby-Smith & Ramdas 2024), growth-rate optimal in the long run.
- ``"prpl-eb"``: the predictable plug-in empirical-Bernstein bet
  :math:`\sqrt{2 \log(1/\alpha) / (\hat\sigma^2_{i-1}\, i \log(1 + i))}` (their PrPl-EB),
  tuned for a sequence uniformly tight over time.

Running estimates (data scaled to [0, 1]): :math:`\hat\mu_i = (1/2 + \sum y)/(i + 1)`,
:math:`\hat\sigma^2_i = (1/4 + \sum (y - \hat\mu)^2)/(i + 1)`.
"""

from __future__ import annotations

import numpy as np

BETS = ("mixture", "horizon", "agrapa", "prpl-eb")
TRUNCATION = 0.5  # bets at most half the distance to a bound (Waudby-Smith & Ramdas)
MIXTURE_HORIZONS = 16 * 2 ** np.arange(9)  # 16, 32, ..., 4096 steps


def _previous(a: np.ndarray, first: float) -> np.ndarray:
    """``a`` shifted one step along the last axis: the value known before each step."""
    return np.concatenate([np.full(a.shape[:-1] + (1,), first), a[..., :-1]], axis=-1)


def running(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step numbers and the regularised running mean and variance known before each step."""
    t = np.arange(1, y.shape[-1] + 1)
    mu = (0.5 + np.cumsum(y, axis=-1)) / (t + 1)
    sigma2 = (0.25 + np.cumsum((y - mu) ** 2, axis=-1)) / (t + 1)
    return t, _previous(mu, 0.5), _previous(sigma2, 0.25)


def _log_wealth(gain, bet, cap):
    """Cumulative log capital of truncated bets on the gains ``side * (y - m)``."""
    return np.cumsum(np.log1p(np.minimum(bet, cap) * gain), axis=-1)


def log_capital(
    y: np.ndarray, m, alpha: float, side: int, bets: str, horizon: int | None = None
) -> np.ndarray:
    """Cumulative log capital along the last axis of scaled ``y`` against null mean(s) ``m``.

    ``side`` is +1 (bets that the mean exceeds ``m``) or -1; ``m`` broadcasts against
    ``y[..., :1]``; ``alpha`` sizes the variance-based bets.
    """
    t, mu, sigma2 = running(y)
    m = np.asarray(m, dtype=float)
    cap = TRUNCATION / (m if side > 0 else 1 - m)
    gain = side * (y - m)
    budget = 2 * np.log(1 / alpha)
    if bets == "prpl-eb":
        return _log_wealth(gain, np.sqrt(budget / (sigma2 * t * np.log1p(t))), cap)
    if bets == "agrapa":
        edge = side * (mu - m)
        return _log_wealth(gain, np.maximum(edge, 0.0) / (sigma2 + edge**2), cap)
    if bets == "horizon":
        if horizon is None:
            raise ValueError("bets='horizon' needs horizon= (the number of tasks planned)")
        return _log_wealth(gain, np.sqrt(budget / (sigma2 * horizon)), cap)
    # accumulate the average of capitals in logs, one horizon at a time (memory: a CS grid)
    total = np.full(np.broadcast(gain, sigma2).shape, -np.inf)
    for n in MIXTURE_HORIZONS:
        total = np.logaddexp(total, _log_wealth(gain, np.sqrt(budget / (sigma2 * n)), cap))
    return total - np.log(len(MIXTURE_HORIZONS))
