"""The fit a command runs, and the checks that refuse bad pairs, k and harnesses before it."""

from __future__ import annotations

import click
import numpy as np

import bayeval as be
from bayeval.cli._group import (
    InputError,
    Notes,
    fitting,
    models,
    progress_setting,
    resampling,
    status,
)
from bayeval.cli._options import FitOptions
from bayeval.data import require_valid_outcomes
from bayeval.data.digests import check_comparable


def check_pairs(pairs, systems) -> list[tuple]:
    """``--compare`` pairs of systems of the data, candidate and baseline different."""
    for candidate, baseline in pairs:
        for role, label in (("candidate", candidate), ("baseline", baseline)):
            if label not in systems:
                raise click.BadParameter(
                    f"{role} {label!r} is not a system of the data; systems: "
                    f"{', '.join(map(str, systems[:20]))}{' ...' if len(systems) > 20 else ''}",
                    param_hint="--compare",
                )
        if candidate == baseline:
            raise click.BadParameter("candidate and baseline must differ", param_hint="--compare")
    return [tuple(p) for p in pairs]


def check_k_before_fit(data, pairs, ks, metric):
    """Refuse a k larger than some task's trials before any sampling starts.

    The bootstrap twins and benchmark-level metrics need n >= k in every task.
    """
    systems = (
        list(dict.fromkeys(s for pair in pairs for s in pair)) if pairs else list(data.systems)
    )
    c, n, _ = resampling._arrays(data, systems)
    try:
        resampling._check_k(data, systems, c, n, np.asarray(ks), metric)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--k") from None


def check_k_for_any(data, ks, metric):
    """Refuse, before any sampling, a k beyond every system's trials.

    The per-system table gives each system the k its trials allow and marks the rest; a k
    no system allows would leave a column of marks.
    """
    # data with no valid outcome at all are refused as such, not as a k beyond the trials
    require_valid_outcomes(data)
    trials = data.dataset["trials"].transpose("system", "task").values
    fewest = [int(row[row > 0].min()) for row in trials if (row > 0).any()]
    most = max(fewest, default=0)
    needed = 2 if metric == "consistency" else max(ks)
    if needed > most:
        raise click.BadParameter(
            f"{metric} at k={needed} needs at least {needed} valid trials in every task, "
            f"and no system has them (the most: {most} in every task); use k <= {most}",
            param_hint="--k",
        )


def check_harness(data, pairs, allow: bool):
    """Refuse, before any sampling, a comparison across harness digests unless allowed."""
    for pair in pairs:
        try:
            check_comparable(data, list(pair), allow)
        except ValueError as exc:
            raise InputError(
                f"incomparable harness: {exc} (--allow-harness-change compares "
                "them anyway, and says so)"
            ) from None


def fit(data, options: FitOptions, notes: Notes, pairs=None):
    """Fit ``data``, saying on stderr what is fitted before a sampler runs.

    Only the systems of ``pairs`` when given: a comparison fits what it needs.
    """
    model, sampler, draws, chains = options.model, options.sampler, options.draws, options.chains
    seed, tune = options.seed, options.tune
    if pairs:
        wanted = list(dict.fromkeys(s for pair in pairs for s in pair))
        data = data.sel(system=[s for s in data.systems if s in wanted])
    chosen = model
    if model == "auto":
        chosen = fitting.choose_model(data, sampler)[0]
    spec = models.get_model(chosen)
    # a NUTS fit takes minutes: say what runs (a sampler the model lacks fails in the fit)
    if spec.runs_nuts(sampler):
        ds = data.dataset
        how = "paired" if spec.paired else "unpaired"
        sampled = spec.sampling_form(data, sampler)
        form = None if sampled is None else sampled[0]
        if form is not None:
            how += f", {form} form"
        warm_up = spec.default_tune(form) if tune is None else tune
        draws = spec.default_draws(form) if draws is None else draws
        status(
            f"fitting {chosen} ({how}) "
            f"to {ds.sizes['system']} system(s) x {ds.sizes['task']} task(s): "
            f"{chains} chain(s) x {draws} draws after {warm_up} warm-up, seed {seed} ..."
        )
    # the sampler's progress shows unless --quiet: a line rewritten in place on a terminal, a
    # line every few seconds in a log, where a long fit would otherwise look hung
    shown = progress_setting() is not False
    with notes:
        return be.fit(
            data,
            model=model,
            draws=draws,
            chains=chains,
            seed=seed,
            sampler=sampler,
            tune=tune,
            progress=shown,
        )
