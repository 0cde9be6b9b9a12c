"""The record ``bayeval rank`` prints and writes: posterior ranks, groups and the winner's curse."""

from __future__ import annotations

from bayeval.analyses.ranks import rank_summary
from bayeval.report.assemble import SCHEMA_VERSION

__all__ = ["rank_data"]


def rank_data(
    results,
    data,
    *,
    metric="pass@k",
    k=1,
    estimand="population",
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    prob=0.95,
    top=3,
    n_replicates=200,
) -> dict:
    """Everything ``bayeval rank`` prints, as plain data (JSON-ready).

    The record of :func:`bayeval.analyses.ranks.rank_summary` (same arguments), stamped with
    :data:`SCHEMA_VERSION`.

    One record per system, best first by posterior mean: the posterior rank (mean and
    interval), P(best), P(in the top ``top``), the group at ``prob``, the bootstrap twin's
    simultaneous rank set, and the winner's curse.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.report import rank_data
    >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [8, 9, 8, 9]], trials=10,
    ...                       systems=["A", "B", "C"])
    >>> res = be.fit(data, model="hierarchical", draws=300, chains=2, seed=0)
    >>> out = rank_data(res, data, n_boot=500, n_replicates=100)
    >>> [row["system"] for row in out["systems"]], out["winner"]["pick"]
    (['C', 'B', 'A'], 'C')
    """
    summary = rank_summary(
        results,
        data,
        metric=metric,
        k=k,
        estimand=estimand,
        unit=unit,
        ci_prob=ci_prob,
        n_boot=n_boot,
        seed=seed,
        prob=prob,
        top=top,
        n_replicates=n_replicates,
    )
    attrs = summary.attrs
    integers = ("rank_lower", "rank_upper", "group", "bootstrap_rank_lower", "bootstrap_rank_upper")
    names = (
        *("mean", "observed", "rank_mean", "rank_lower", "rank_upper", "prob_best"),
        *("prob_top", "group", "bootstrap_rank_lower", "bootstrap_rank_upper"),
    )
    rows = [
        {
            "system": system,
            **{
                name: (int if name in integers else float)(summary[name].sel(system=system))
                for name in names
            },
        }
        for system in summary["system"].values.tolist()
    ]
    lower, upper = (float(v) for v in summary["value_interval"].values)
    tasks_lower, tasks_upper = (float(v) for v in summary["tasks_value_interval"].values)
    winner = {
        "pick": attrs["pick"],
        "tied_with": list(attrs["tied_with"]),
        "tie_rule": attrs["tie_rule"],
        "naive_score": float(summary["naive_score"]),
        # the posterior of the naive score's own target (these tasks) and, beside it, of
        # the pick in the estimand of the ranking
        "tasks_value_mean": float(summary["tasks_value_mean"]),
        "tasks_value_lower": tasks_lower,
        "tasks_value_upper": tasks_upper,
        "estimand": attrs["estimand"],
        "value_mean": float(summary["value_mean"]),
        "value_lower": lower,
        "value_upper": upper,
        "optimism": float(summary["optimism"]),
        "prob_pick_is_best": float(summary["prob_pick_is_best"]),
        "expected_optimism": float(summary["expected_optimism"]),
        "expected_optimism_se": float(summary["expected_optimism_se"]),
        "replicate_prob_best_picked": float(summary["replicate_prob_best_picked"]),
    }
    paired = "yes" if attrs["paired"] else f"no: {attrs['paired_note']}"
    return {
        "schema_version": SCHEMA_VERSION,
        "settings": {
            **{name: attrs[name] for name in ("metric", "k", "estimand", "prob", "top")},
            **{name: attrs[name] for name in ("ci_prob", "unit", "n_boot", "seed", "model")},
            "paired": paired,
        },
        "group_rule": attrs["group_rule"],
        "bootstrap": {
            "construction": attrs["bootstrap_construction"],
            "critical_value": attrs["bootstrap_critical_value"],
            "unit": unit,
        },
        "systems": rows,
        "winner": winner,
        # the MCMC gates the fit failed: every posterior number above is flagged
        "gates_passed": not attrs["gates_failed"],
        "gates_failed": list(attrs["gates_failed"]),
        "gates_note": attrs["gates_note"] or None,
    }
