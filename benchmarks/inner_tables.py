"""The logit-normal likelihood's adaptive rule: tabulated inner integrals against nesting.

Run:  python benchmarks/inner_tables.py

Patterns with more than two trials per system are integrated by an adaptive Gauss-Hermite
rule. Nesting it (``_pattern``: an inner rule centred at its own conditional mode at every
outer node, S x 9 x 9 inner terms per pattern) was the cost of multi-trial data; the kernel
now reads the inner integral from tables per counts (``_loglik``). This script rebuilds the
nested rule's log-likelihood and gradient from the module's own ``_pattern`` and
``_aghq_node_terms`` and times both on generated data of the bundled files' shapes
(LiveCodeBench 45 x 400 x 10, Terminal-Bench 13 x 80 x 5, a 3 x 100 x 4 toy), printing the
ratio, the two log-likelihoods and the sigma derivatives beside central finite differences.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

from bayeval.models.kernels.likelihood import loglik_and_grad
from bayeval.models.kernels.quadrature import Rules, _aghq_node_terms, _pattern


# not cached on disk: numba's cache of this file would not see a change to the kernels it calls
@numba.njit
def nested(eta, c, n, mult, sigma_e, sigma_v, x, logw):
    """The nested adaptive rule for every pattern (paired systems, more than two trials)."""
    P, S = eta.shape
    K = x.shape[0]
    e_k, log_f = np.empty(K), np.empty(K)
    v_kl, log_t = np.zeros((K, S, K)), np.zeros((K, S, K))
    r, score, prob = np.zeros((K, S, K)), np.zeros((K, S, K)), np.zeros((K, S, K))
    log_g = np.zeros((K, S))
    total, g_se, g_sv = 0.0, 0.0, 0.0
    g_eta = np.zeros((P, S))
    for p in range(P):
        m = mult[p]
        log_l = _pattern(
            eta[p], c[p], n[p], sigma_e, sigma_v, True, x, logw, e_k, v_kl, log_t, log_g, log_f
        )
        _aghq_node_terms(
            eta[p], c[p], n[p], sigma_e, sigma_v, True, x, e_k, v_kl, log_t, log_g, r, score, prob
        )
        total += m * log_l
        for k in range(K):
            pi = m * math.exp(log_f[k] - log_l)
            g_se += pi * ((e_k[k] / sigma_e) ** 2 - 1.0) / sigma_e
            for s in range(S):
                for q in range(K):
                    g_eta[p, s] += pi * r[k, s, q] * score[k, s, q]
                    g_sv += pi * r[k, s, q] * ((v_kl[k, s, q] / sigma_v) ** 2 - 1.0) / sigma_v
    return total, g_eta, g_se, g_sv


def _timed(function, repeat=10):
    function()
    start = time.perf_counter()
    for _ in range(repeat):
        out = function()
    return out, 1000 * (time.perf_counter() - start) / repeat


def main():
    rules = Rules()
    x, logw = rules.x, rules.logw
    arrays = rules.arrays()
    rng = np.random.default_rng(0)
    print(
        f"{'shape':<14} {'nested ms':>10} {'tables ms':>10} {'ratio':>6}   "
        f"{'log L nested':>15} {'log L tables':>15}   d/dsigma_v nested, tables, fin. diff."
    )
    for P, S, trials in ((400, 45, 10), (80, 13, 5), (100, 3, 4)):
        n = np.full((P, S), float(trials))
        eta = rng.normal(0, 1.5, (P, S))
        c = rng.binomial(trials, 1 / (1 + np.exp(-eta))).astype(float)
        mult = np.ones(P)
        old, t_old = _timed(
            lambda eta=eta, c=c, n=n, mult=mult: nested(eta, c, n, mult, 1.5, 0.7, x, logw)
        )
        new, t_new = _timed(
            lambda eta=eta, c=c, n=n, mult=mult: loglik_and_grad(
                eta, c, n, mult, 1.5, 0.7, True, *arrays
            )
        )
        h = 1e-5
        fd = (
            loglik_and_grad(eta, c, n, mult, 1.5, 0.7 + h, True, *arrays)[0]
            - loglik_and_grad(eta, c, n, mult, 1.5, 0.7 - h, True, *arrays)[0]
        ) / (2 * h)
        print(
            f"{S} x {P} x {trials:<4} {t_old:10.2f} {t_new:10.2f} {t_old / t_new:6.1f}   "
            f"{old[0]:15.5f} {new[0]:15.5f}   {old[3]:.3f}, {new[3]:.3f}, {fd:.3f}"
        )
        print(
            f"{'':<14} largest |d log L / d eta| difference {np.abs(old[1] - new[1]).max():.1e}"
            f", d/dsigma_e {old[2]:.4f} against {new[2]:.4f}"
        )


if __name__ == "__main__":
    main()
