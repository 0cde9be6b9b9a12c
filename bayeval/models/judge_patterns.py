"""Several judges on the same attempts: their verdict patterns' law, and its one-attempt cells.

The pieces :mod:`bayeval.models.judge` builds its several-judge model from: the patterns'
counts (:func:`pattern_cells`), their likelihood with the unlabelled true outcomes summed out
(:func:`patterns_log_likelihood`), the log-linear law of the patterns given the truth
(:func:`pattern_probabilities`, read that module's docstring), and the one-attempt cells written
as one judge's, which the one-judge cell kernel integrates (:func:`one_attempt_cells`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy import special

from bayeval.data.judge import JUDGE_VARS, PATTERN_VAR

__all__ = [
    "DEPENDENCE_SD",
    "judge_pairs",
    "one_attempt_cells",
    "one_attempt_logits",
    "pattern_cells",
    "pattern_probabilities",
    "patterns_log_likelihood",
    "verdict_matrix",
]

#: Prior sd of two judges' dependence given the truth (the log odds ratio of their verdicts):
#: 2 puts an odds ratio of 50 (two LLM judges passing the same wrong answers) within 2 sd.
DEPENDENCE_SD = 2.0


def pattern_cells(ds: xr.Dataset) -> np.ndarray:
    """Several judges' verdict patterns per cell, ``(verdicts, label, system, task)``.

    :data:`~bayeval.data.judge.PATTERN_VAR` summed over label strata; ``label`` in
    ``("1", "0", "none")`` order.
    """
    return (
        ds[PATTERN_VAR]
        .sum("label_stratum")
        .transpose("verdicts", "label", "system", "task")
        .values.astype(np.int64)
    )


def verdict_matrix(ds: xr.Dataset) -> np.ndarray:
    """The 0/1 verdict of each judge in each pattern, ``(verdicts, judge)``."""
    return np.array([[int(c) for c in v] for v in ds["verdicts"].values.tolist()], dtype=float)


def patterns_log_likelihood(counts, logit_p, log_a, log_b, xp=np):
    """Each cell's log-likelihood under several judges, the unlabelled true outcomes summed out.

    ``counts`` is :func:`pattern_cells`' ``(verdicts, label, system, task)``, ``logit_p``
    ``(system, task)``, and ``log_a``, ``log_b`` the log-probabilities of each verdict pattern
    given a true 1 and a true 0, ``(verdicts, system)``: no structure is assumed between the
    judges (their errors may be correlated). A labelled attempt with pattern v and label y
    contributes ``P(y) P(v | y)``, an unlabelled one ``p A_v + (1 - p) B_v``. Returns the
    ``(system, task)`` log-likelihoods, without the multinomial coefficients.
    """
    softplus, logaddexp = (
        ((lambda x: np.logaddexp(0.0, x)), np.logaddexp)
        if xp is np
        else (pt.softplus, pt.logaddexp)
    )
    log_p, log_not_p = -softplus(-logit_p), -softplus(logit_p)
    true_1 = log_p[None] + log_a[:, :, None]  # (verdicts, system, task)
    true_0 = log_not_p[None] + log_b[:, :, None]
    ll = counts[:, 0] * true_1 + counts[:, 1] * true_0 + counts[:, 2] * logaddexp(true_1, true_0)
    return ll.sum(axis=0)


def judge_pairs(judges) -> list[str]:
    """The pairs of judges whose dependence the joint model describes, ``"a x b"``.

    Examples
    --------
    >>> judge_pairs(["gpt4", "llama3", "contains"])
    ['gpt4 x llama3', 'gpt4 x contains', 'llama3 x contains']
    """
    return [f"{a} x {b}" for i, a in enumerate(judges) for b in judges[i + 1 :]]


def pattern_probabilities(ds: xr.Dataset, priors: dict, S: int) -> dict:
    """Several judges: each system's log-probability of every verdict pattern given the truth.

    A log-linear law per true outcome y (module docstring): ``log P(v | y, s) = sum_k
    beta[y, k, s] v_k + sum_{k < l} gamma[y, k, l] v_k v_l - log Z``. Returns ``{y: (system,
    verdicts)}``; each judge's sensitivity and specificity (the margins) are kept as
    deterministics over ``(judge, system)``, the pattern probabilities over ``(system,
    verdicts)``.
    """
    verdicts = verdict_matrix(ds)  # (verdicts, judge)
    n_judges = verdicts.shape[1]
    both = np.stack(
        [verdicts[:, a] * verdicts[:, b] for a in range(n_judges) for b in range(a + 1, n_judges)],
        axis=1,
    )  # (verdicts, judge_pair)
    out = {}
    for truth, name in ((1, "sensitivity"), (0, "specificity")):
        mean, sd = priors[name]
        # a judge's main effect is the logit of its verdict 1 given the truth where the judges
        # err independently: logit se for a true 1, -logit sp for a true 0
        sign = 1.0 if truth == 1 else -1.0
        mu = pm.Normal(f"judge_pattern_mu_{name}", sign * mean, sd, dims="judge")
        sigma = pm.HalfNormal(f"judge_pattern_sigma_{name}", priors["sigma_judge"], dims="judge")
        z = pm.Normal(f"judge_pattern_{name}_z", 0.0, 1.0, dims=("judge", "system"))
        main = mu[:, None] + sigma[:, None] * z  # (judge, system)
        gamma = pm.Normal(
            f"judge_dependence_{name}", 0.0, DEPENDENCE_SD, dims="judge_pair"
        )  # the log odds ratio of two judges' verdicts 1 given the truth
        logits = pt.dot(verdicts, main) + pt.dot(both, gamma)[:, None]  # (verdicts, system)
        log_pi = (logits - pt.logsumexp(logits, axis=0, keepdims=True)).T
        pi = pm.Deterministic(
            f"judge_patterns_given_{truth}", pt.exp(log_pi), dims=("system", "verdicts")
        )
        margin = pt.dot(pi, verdicts if truth == 1 else 1.0 - verdicts)  # (system, judge)
        pm.Deterministic(name, margin.T, dims=("judge", "system"))
        out[truth] = log_pi
    return out


def one_attempt_cells(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Several judges' one-attempt cells as one judge's: counts ``(6, S, J)`` and patterns.

    A cell's likelihood is ``p A_v`` (labelled 1), ``(1 - p) B_v`` (labelled 0) or ``p A_v +
    (1 - p) B_v`` (unlabelled), v its attempt's verdict pattern: one judge's ``n11 = 1``,
    ``n10 = 1`` or ``u1 = 1`` with ``se = A_v`` and ``1 - sp = B_v``. Returns those
    :data:`~bayeval.data.judge.JUDGE_VARS` counts and each cell's pattern index ``(S, J)``
    (0 where empty).

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> df = pd.DataFrame({"system": ["A", "A", "B", "B"], "task": [0, 1, 0, 1],
    ...                    "j1": [1, 0, 1, 1], "j2": [1, 0, 0, 1], "human": [1, None, 0, None]})
    >>> data = be.from_frame(df, judge=["j1", "j2"], success="human", label_design="random")
    >>> counts, pattern = one_attempt_cells(data.dataset)
    >>> pattern.tolist()  # "11", "00"; "10", "11"
    [[3, 0], [2, 3]]
    >>> counts[[0, 1, 4]].tolist()  # n11, n10, u1
    [[[1, 0], [0, 0]], [[0, 0], [1, 0]], [[0, 1], [0, 1]]]
    """
    cells = pattern_cells(ds)  # (verdicts, label, system, task)
    counts = np.zeros((len(JUDGE_VARS), *cells.shape[2:]), dtype=np.int64)
    counts[0] = cells[:, 0].sum(0)  # labelled 1: p A
    counts[1] = cells[:, 1].sum(0)  # labelled 0: (1 - p) B, one judge's verdict 1 on a true 0
    counts[4] = cells[:, 2].sum(0)  # unlabelled: p A + (1 - p) B
    return counts, cells.sum(1).argmax(0).astype(np.int64)


def one_attempt_logits(post, ds) -> tuple[np.ndarray, Callable]:
    """Several judges: :func:`one_attempt_cells`' counts and chain ``c``'s cell logits.

    The logits of ``se = A_v`` and ``sp = 1 - B_v`` per draw, ``(D, S, J)``, for the draws of
    the task-by-system effects.
    """
    counts, pattern = one_attempt_cells(ds)
    S = pattern.shape[0]
    given = {
        truth: post[f"judge_patterns_given_{truth}"]
        .transpose("chain", "draw", "system", "verdicts")
        .values
        for truth in (1, 0)
    }

    def of_chain(c):
        a = given[1][c][:, np.arange(S)[:, None], pattern]  # (D, S, J)
        b = given[0][c][:, np.arange(S)[:, None], pattern]
        return special.logit(a), -special.logit(b)

    return counts, of_chain
