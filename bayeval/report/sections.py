"""The report's optional sections: the cost and latency tables, read from the fit (or its data)
by the functions that compute them, as plain data."""

from __future__ import annotations

from bayeval._cost import evidence, latency_table


def _cost_section(
    results, column, reference, pairs, ks, n_boot, seed, ci_prob, model="bayesian_bootstrap"
):
    """The cost-success evidence table, or None without a cost column."""
    if column is None:
        return None
    if results.data.missing == "bounds":
        raise ValueError(
            "the cost table needs one success count per attempt; under "
            "missing='bounds' the successes have two extremes: use missing='fail' "
            "or 'exclude'"
        )
    if reference is None and pairs:
        reference = pairs[0][1]
    section = evidence(
        results,
        column,
        k=ks,
        n_boot=n_boot,
        seed=seed,
        ci_prob=ci_prob,
        reference=reference,
        model=model,
    )
    order = sorted(
        range(len(section["rows"])),
        key=lambda i: -(section["rows"][i]["pass_at_1_bayes_mean"] or 0.0),
    )
    section["rows"] = [section["rows"][i] for i in order]
    return section


def _latency_section(results, wanted, n_boot, seed, ci_prob):
    """The latency table (p50 and p95 per system), or None when not asked for."""
    if not wanted:
        return None
    return latency_table(
        results.data,
        q=(0.5, 0.95),
        n_boot=n_boot,
        seed=seed,
        ci_prob=ci_prob,
        model="lognormal" if wanted is True else wanted,
    )
