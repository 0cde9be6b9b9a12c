"""What the analyses read off a posterior besides its metric draws, and how they summarise it.

Thinned draws, the observed counts and the observed scores (the unbiased estimators a naive
reading uses), and the call of an array function of :mod:`bayeval.analyses.arrays` over the
named sample dims.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval.estimators import _unbiased

SAMPLE_DIMS = ("chain", "draw")
CI_BOUNDS = ["lower", "upper"]


def over_samples(
    function,
    values: xr.DataArray,
    *,
    outputs: dict,
    core: dict | None = None,
    keep_attrs: bool | None = None,
    **settings,
) -> xr.Dataset:
    """The named outputs of an array function, computed over the sample dims of ``values``.

    ``function`` (of :mod:`bayeval.analyses.arrays`) reduces over ``axis``, here the sample
    dims ``(chain, draw)``; ``core`` maps its other axis keywords (``system_axis``,
    ``grid_axis``) to dims of ``values``; ``outputs`` maps each output's name (a key of the
    function's dict, or one name per item of its tuple) to its dims. The dims left over are
    broadcast through :func:`xarray.apply_ufunc` and keep their coordinates; the attrs go as
    xarray's reductions take them unless ``keep_attrs`` says, and ``ci_bound`` is labelled
    ``lower``, ``upper``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from bayeval.analyses import arrays
    >>> from bayeval.analyses._draws import over_samples
    >>> draws = xr.DataArray(np.arange(8.0).reshape(2, 1, 4), dims=("system", "chain", "draw"))
    >>> out = over_samples(arrays.eti, draws, outputs={"interval": ("ci_bound",)}, ci_prob=0.5)
    >>> out["interval"].sel(ci_bound="upper").values.tolist()
    [2.25, 6.25]
    """
    core = core or {}
    dims = [*core.values(), *SAMPLE_DIMS]
    positions = {key: i - len(dims) for i, key in enumerate(core)}
    names = list(outputs)

    def call(array):
        result = function(array, axis=tuple(range(-len(SAMPLE_DIMS), 0)), **positions, **settings)
        if isinstance(result, dict):
            result = tuple(result[name] for name in names)
        elif not isinstance(result, tuple):
            result = (result,)
        return result if len(names) > 1 else result[0]

    parts = xr.apply_ufunc(
        call,
        values,
        input_core_dims=[dims],
        output_core_dims=[list(outputs[name]) for name in names],
        keep_attrs=keep_attrs,
    )
    parts = parts if isinstance(parts, tuple) else (parts,)
    bounds = any("ci_bound" in dims for dims in outputs.values())
    return xr.Dataset(
        dict(zip(names, parts, strict=True)), coords={"ci_bound": CI_BOUNDS} if bounds else None
    )


def thinned(posterior, n_draws: int):
    """The same posterior with about ``n_draws`` draws in all, taken evenly from each chain.

    Per-task readouts cost in proportion to the draws. Groups thinned apart (the predictive
    ones) stay as they are; the result is of the posterior's own class.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses._draws import thinned
    >>> res = be.fit(be.from_counts([[9, 1, 10]], trials=10), draws=100, chains=2, seed=0)
    >>> thinned(res, 50).tree["posterior"].sizes["draw"]
    25
    """
    post = posterior._group("posterior")
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    per_chain = max(1, min(draws, -(-n_draws // chains)))
    if per_chain == draws:
        return posterior
    index = np.unique(np.linspace(0, draws - 1, per_chain).round().astype(int))
    tree = posterior._tree  # read only: each group is taken into a new tree
    groups = {"/": tree.to_dataset(inherit=False)}
    for name, node in tree.children.items():
        ds = node.to_dataset(inherit=False)
        groups[name] = ds.isel(draw=index) if ds.sizes.get("draw") == draws else ds
    return type(posterior)(xr.DataTree.from_dict(groups))


def observed_counts(posterior) -> tuple[np.ndarray, np.ndarray]:
    """Successes and trials over ``(system, task)``, or a refusal under missing bounds."""
    obs = posterior._group("constant_data")
    if "missing_bound" in obs["successes"].dims:
        raise ValueError(
            "winner and compare_curve take data without missing bounds (fit with "
            "missing='fail' or 'exclude', or compare the bounds of one pair)"
        )
    c = obs["successes"].transpose("system", "task").values
    n = obs["trials"].transpose("system", "task").values
    return c, n


def observed_scores(successes: np.ndarray, trials: np.ndarray, k: int, metric: str, systems=None):
    """Per system, the mean over its valid tasks (``trials >= k``) of the unbiased estimator.

    ``successes`` and ``trials`` are ``(system, task)``; returns ``(scores (S,), per_task
    (S, J))`` with NaN where a task has fewer than k trials.

    Examples
    --------
    >>> from bayeval.analyses._draws import observed_scores
    >>> scores, _ = observed_scores([[1, 3]], [[4, 4]], 1, "pass@k")
    >>> scores.tolist()
    [0.5]
    """
    trials = np.asarray(trials)
    valid = trials >= k
    per_task = np.full(trials.shape, np.nan)
    if valid.any():
        per_task[valid] = _unbiased(
            trials[valid], np.asarray(successes)[valid], np.full(valid.sum(), k), metric
        )
    empty = ~valid.any(axis=1)
    if empty.any():
        names = (
            np.flatnonzero(empty).tolist()
            if systems is None
            else [systems[s] for s in np.flatnonzero(empty)]
        )
        raise ValueError(
            f"system(s) {names} have no task with at least k={k} valid trials: "
            "their observed score is undefined"
        )
    return np.nanmean(per_task, axis=1), per_task


def pairing(posterior) -> dict:
    """``paired`` and ``paired_note`` of a posterior, for an analysis's attrs.

    ``paired`` says whether the model pairs systems on shared tasks and ``paired_note`` is the
    sentence that says so.
    """
    return {"paired": posterior._paired, "paired_note": posterior._paired_note}


def settings_of(values: xr.DataArray) -> dict:
    """The readout settings a metric's draws carry (clusters, weighting, tau), for attrs."""
    return {
        key: values.attrs[key] for key in ("clusters", "weighting", "tau") if key in values.attrs
    }
