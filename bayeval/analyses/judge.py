"""A judge's error per system, from a fit of the judge-aware model (``Results.judge``).

:func:`posterior_judge` reads the sensitivity and specificity the model learnt for each system
and sets beside them what the judge alone and the labels alone would say of the pass@1.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval._validate import validate_prob
from bayeval.analyses.arrays import eti
from bayeval.models.logit_normal.estimands import normal_expectation

__all__ = ["posterior_judge"]

_COUNTS = ("judge_n11", "judge_n10", "judge_n01", "judge_n00", "judge_u1", "judge_u0")


def posterior_judge(posterior, *, ci_prob: float = 0.95) -> xr.Dataset:
    """Posterior of a judge's sensitivity and specificity per system, beside the naive rates.

    Parameters
    ----------
    posterior : Posterior
        A fit of the judge-aware model (``model="judge"``, the default for judged data).
    ci_prob : float, default 0.95
        Probability of the equal-tailed intervals.

    Returns
    -------
    xarray.Dataset
        Over ``(judge, system)``: ``sensitivity`` and ``specificity`` (draws over ``(chain,
        draw)``, ``P(verdict 1 | true 1)`` and ``P(verdict 0 | true 0)`` for an attempt on a
        task like these: the one-judge model lets the judge's error vary by task, and these
        average over that variation, ``E expit(logit se[s] + tau Z)``), their ``*_mean`` and
        ``*_interval`` (over ``ci_bound``); ``*_typical_task``, the draws on a task of typical
        error (``Z = 0``, the model's ``sensitivity[s]``: nearer 1 than the average wherever
        the judge errs on some tasks for every system); ``agreement``, the share of labelled
        attempts whose verdict equals the label; ``judge_rate``, the pass@1 the judge alone
        gives (its share of verdicts 1 over every judged attempt), and ``labelled_rate``, the
        pass@1 of the labelled attempts alone; ``n_labelled`` and ``n_judged``. The rates pool
        attempts (each attempt weighs the same), the contrast the fit's true-outcome pass@1
        corrects. Several judges fitted jointly: each judge's rates are the margins of the
        joint verdict patterns' probabilities, which do not vary by task (``*_typical_task``
        equals the rate).

    Raises
    ------
    ValueError
        On a fit of a model without a judge.

    Examples
    --------
    >>> import numpy as np, pandas as pd, bayeval as be
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(240) < 0.6
    >>> df = pd.DataFrame({"system": np.repeat(["A", "B"], 120),
    ...                    "task": np.tile(np.repeat(np.arange(40), 3), 2),
    ...                    "judge": np.where(y, rng.random(240) < 0.9, rng.random(240) < 0.2),
    ...                    "human": np.where(rng.random(240) < 0.3, y, np.nan)})
    >>> data = be.from_frame(df, judge="judge", success="human", label_design="random")
    >>> res = be.fit(data, draws=100, chains=1, tune=100, seed=0)  # doctest: +SKIP
    >>> res.judge()["specificity_interval"].dims  # doctest: +SKIP
    ('judge', 'system', 'ci_bound')
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    post = posterior._group("posterior")
    if "sensitivity" not in post.data_vars:
        raise ValueError(
            f"judge() reads a fit of the judge-aware model; this is a fit of model "
            f"{posterior.model!r}, without a judge. Fit judged data "
            "(from_frame(..., judge=, success=, label_design=)) with model='auto' or 'judge'"
        )
    data = posterior._group("constant_data")
    several = "judge" in post["sensitivity"].dims
    if several:
        judges = [str(j) for j in post["judge"].values.tolist()]
    else:  # one judge's fit: its parameters are per system, the judge named in the attrs
        judges = [str(posterior._group("/").attrs.get("judge", data["judge"].values[0]))]
    counts = {
        name: data[name]
        .sel(judge=judges)
        .sum(("task", "label_stratum"))
        .transpose("judge", "system")
        for name in _COUNTS
    }
    n11, n10, n01, n00, u1, u0 = (counts[name] for name in _COUNTS)
    labelled = n11 + n10 + n01 + n00
    judged = labelled + u1 + u0
    out = xr.Dataset(
        coords={"judge": np.array(judges, dtype=object), "system": post["system"].values}
    )
    for name in ("sensitivity", "specificity"):
        typical = post[name]
        tau = post.get(f"judge_task_sigma_{name}")
        if not several:
            typical = typical.expand_dims(judge=out["judge"].values)
            tau = None if tau is None else tau.expand_dims(judge=out["judge"].values)
        typical = typical.transpose("chain", "draw", "judge", "system")
        if tau is None:  # a fit without the task-level error term: every task is typical
            average = typical
        else:
            # the judge's error varies by task: a system's sensitivity is its average over
            # tasks, E expit(logit se[s] + tau Z), the rate its labelled crosses estimate
            logit = np.log(typical.values) - np.log1p(-typical.values)
            tau_values = tau.transpose("chain", "draw", "judge").values[..., None]
            scale = np.broadcast_to(tau_values, logit.shape)
            average = typical.copy(data=normal_expectation(logit, scale, "pass@k", [1])[..., 0])
        out[f"{name}_typical_task"] = typical
        draws = average
        out[name] = draws.copy()
        out[f"{name}_mean"] = draws.mean(("chain", "draw"))
        interval = eti(draws.values.reshape(-1, *draws.shape[2:]), ci_prob=ci_prob, axis=0)
        out[f"{name}_interval"] = (("judge", "system", "ci_bound"), interval)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["agreement"] = (n11 + n00) / labelled
        out["judge_rate"] = (n11 + n10 + u1) / judged
        out["labelled_rate"] = (n11 + n01) / labelled
    out["n_labelled"] = labelled
    out["n_judged"] = judged
    out = out.assign_coords(ci_bound=["lower", "upper"])
    out.attrs = {
        "ci_prob": ci_prob,
        "ci_kind": "eti",
        "model": posterior.model,
        "judge_note": (
            "sensitivity = P(verdict 1 | true 1) and specificity = P(verdict 0 | true 0) per "
            + (
                "judge and system, the margins of the joint law of the judges' verdicts given "
                "the truth (the same on every task)"
                if several
                else "system, for an attempt on a task like these (averaged over the judge's "
                "task-level error)"
            )
            + "; the judge-only pass@1 is the share of verdicts 1 over every attempt, the "
            "labelled-only pass@1 the share of labels 1 over the labelled attempts; the fit's "
            "pass@1 is of the true outcome of every attempt, labelled or not"
        ),
    }
    return out
