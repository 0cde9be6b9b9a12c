"""What the rendered report card shows of its data: the sections that say something, in one order.

The report's ``dict`` (:func:`bayeval.report.report_data`) keeps every number; the card leaves
out what says nothing (a table of zeros, a column of intervals of no width, rows of checks that
cannot be made) and says in a sentence why, puts every list of systems in the report's one
order (``report["order"]``) and folds long tables that repeat what is above them.
"""

from __future__ import annotations

from bayeval.report.assemble import in_order

#: Rows above which a table that repeats or backs up what is said above it is folded (HTML).
_FOLD_ROWS = 12


def _view(report: dict) -> dict:
    """The choices the templates render from, computed once for both formats."""
    order = report.get("order", {}).get("systems") or [str(s) for s in report["data"]["systems"]]
    return {
        "order": order,
        "status": _status(report["data"]),
        "design_fold": len(report["data"].get("design_effect") or []) > _FOLD_ROWS,
        "metrics": _metrics(report),
        "ppc": _ppc(report["diagnostics"]),
        "fits": _fits(report),
        "ranks": in_order(report["ranks"]["systems"], order) if report.get("ranks") else [],
        "contamination": (
            in_order(report["contamination"]["rows"], order) if report.get("contamination") else []
        ),
    }


def _status(data: dict) -> dict:
    """The status table: only where some attempt has no valid outcome, and only those systems.

    Its columns are ``ok`` and the statuses that occur; its rows the systems missing an
    outcome (the others are counted in words).
    """
    totals = data["status_totals"]
    occurring = [s for s, n in totals.items() if s != "ok" and n]
    if not occurring:
        return {"table": False, "columns": [], "rows": [], "complete": data["n_systems"]}
    rows = [row for row in data["status_counts"] if row["coverage"] is None or row["coverage"] < 1]
    return {
        "table": True,
        "columns": ["ok", *occurring],
        "rows": rows,
        "complete": data["n_systems"] - len(rows),
    }


def _metrics(report: dict) -> list[dict]:
    """The results tables: the report's estimand first, long ones split and folded.

    One table per estimand; where the report's estimand has more than :data:`_FOLD_ROWS` rows
    and more than one metric, its headline metric (the report's metric at its ``compare_k``,
    what the forest draws) stands open and its other metrics are folded beneath it; a table
    of another estimand longer than :data:`_FOLD_ROWS` is folded. A table shows the bootstrap
    columns only where some row has a bootstrap interval (a trial bootstrap at one trial per
    task has none), the bound column only under bounds and the cluster bootstrap column only
    where it was computed.
    """
    main = report["estimand"]["name"]
    settings = report["settings"]["report"]
    headline = (settings["metric"], 1 if settings["metric"] == "mean" else settings["compare_k"])
    rows = report["metrics"]
    words = report["estimand"].get("words") or {}
    tables = []
    for name in dict.fromkeys([main, *(r["estimand"] for r in rows)]):
        part = [r for r in rows if r["estimand"] == name]
        if not part:
            continue
        if name != main:
            tables.append(_table(name, part, fold=len(part) > _FOLD_ROWS, words=words))
            continue
        top = [r for r in part if (r["metric"], r["k"]) == headline]
        rest = [r for r in part if (r["metric"], r["k"]) != headline]
        if len(part) > _FOLD_ROWS and top and rest:
            tables += [
                _table(name, top, fold=False, words=words),
                _table(name, rest, fold=True, words=words),
            ]
        else:
            tables.append(_table(name, part, fold=False, words=words))
    return tables


def _table(estimand: str, rows: list[dict], *, fold: bool, words: dict) -> dict:
    """One results table: its rows, the columns they fill and its estimand in ``words``."""
    boot = [r for r in rows if r["bootstrap_lower"] is not None]
    notes = list(dict.fromkeys(r["bootstrap_note"] for r in rows if "bootstrap_note" in r))
    metrics = list(dict.fromkeys((r["metric"], r["k"]) for r in rows))
    return {
        "estimand": estimand,
        "words": words.get(estimand),
        "rows": rows,
        "metrics": metrics,
        "bounds": any(r["missing_bound"] for r in rows),
        "bootstrap": bool(boot),
        "unit": next((r["bootstrap_unit"] for r in rows if r["bootstrap_unit"]), None),
        "bootstrap_note": notes[0] if notes and not boot else None,
        "cluster": any("cluster_bootstrap_estimate" in r for r in rows),
        "fold": fold,
    }


def _ppc(diagnostics: dict) -> dict | None:
    """The posterior predictive check's rows that have a p-value, and what to say of the rest.

    ``None`` without a check. With no p-value at all (one trial per task: no task can be
    solved always or never by more than chance) the card says so instead of a table.
    """
    rows = diagnostics["ppc"]
    if not rows:
        return None
    checked = [r for r in rows if r["p_value"] is not None]
    unchecked = list(dict.fromkeys(str(r["system"]) for r in rows if r["p_value"] is None))
    flagged = list(dict.fromkeys(str(r["system"]) for r in checked if r["flagged"]))
    smallest = min(checked, key=lambda r: r["p_value"]) if checked else None
    return {
        "rows": checked,
        "unchecked": unchecked,
        "flagged": flagged,
        "smallest": smallest,
        "fold": len(checked) > _FOLD_ROWS,
    }


def _fits(report: dict) -> list[dict]:
    """Each fit the report reads (the per-system fit, the comparisons' fit) and its diagnostics."""
    fits = [{"role": None, "model": report["estimand"]["model"], **report["diagnostics"]}]
    other = report.get("comparison_fit")
    if other:
        fits[0]["role"] = "per-system table"
        fits.append(
            {
                "role": "comparisons",
                "model": other["model"],
                "systems": other["systems"],
                **other["diagnostics"],
            }
        )
    return fits
