"""The report's judge section: a judge's error per system and each pair's effect four ways.

For a fit of the judge-aware model (judged data, ``from_frame(..., judge=, success=,
label_design=)``) the section sets the judge's agreement with the labels per system
(:meth:`bayeval.Results.judge`) beside each compared pair's effect on the true outcome (the
fit's), the effect the verdicts alone give, the effect the labelled attempts alone give and
the PPI++ twin (:func:`bayeval.bootstrap.ppi`), each quantity named in one set of words
(:data:`QUANTITIES`) that every output prints.
"""

from __future__ import annotations

import numpy as np

from bayeval import bootstrap
from bayeval.data.clusters import estimand_words
from bayeval.report._values import _num

__all__ = ["QUANTITIES", "judge_section"]

#: Each effect of the section, in the words every output (terminal, JSON, Markdown, HTML) uses.
QUANTITIES = {
    "true": "true outcome, judge error integrated out (judge-aware model, posterior)",
    "ppi": "true outcome, verdicts corrected by the labels (PPI++)",
    "judge_only": "judge verdicts taken as outcomes (judge only)",
    "labelled_only": "labelled attempts only (labels only)",
}

#: The judge's columns per system: a short header and what it is, in the same words everywhere.
COLUMNS = {
    "sensitivity": {"header": "sensitivity", "words": "P(verdict 1 | true 1), averaged over tasks"},
    "specificity": {"header": "specificity", "words": "P(verdict 0 | true 0), averaged over tasks"},
    "agreement": {
        "header": "agreement",
        "words": "share of labelled attempts whose verdict equals the label",
    },
    "judge_rate": {"header": "judge-only pass@1", "words": "share of verdicts 1, every attempt"},
    "labelled_rate": {
        "header": "labelled-only pass@1",
        "words": "share of labels 1, labelled attempts",
    },
}


def judge_section(
    results,
    pairs,
    *,
    estimand: str,
    ci_prob: float,
    clusters: str | None = None,
    weighting: str = "task",
) -> dict | None:
    """The judge's error per system and each pair's pass@1 effect four ways, as plain data.

    Parameters
    ----------
    results : Results
        A fit of the judge-aware model (``model="judge"``); any other fit gives ``None``.
    pairs : sequence of (candidate, baseline)
        The compared pairs.
    estimand : {"population", "tasks"}
        The estimand of the posterior effect. The PPI++ twin's independent unit follows it:
        tasks for the population (clusters where the population is of new clusters), single
        attempts for these tasks.
    ci_prob : float
        Probability of every interval (equal-tailed posterior, normal PPI++).
    clusters, weighting
        The population estimand asked for (as in :meth:`bayeval.Results.compare`).

    Returns
    -------
    dict or None
        ``judge`` (its column; several judges' columns joined by ", "), ``judges`` (the
        list), ``label_design``, ``model``, ``ci_prob``, ``columns`` and ``quantities`` (the
        words of :data:`COLUMNS` and :data:`QUANTITIES`), ``judge_note``, ``rows`` (per judge
        and system: ``judge``, ``system``, ``n_labelled``, ``n_judged``, ``agreement``,
        ``judge_rate``, ``labelled_rate`` and the sensitivity's and specificity's posterior
        ``*_mean``, ``*_lower``, ``*_upper``), ``metric`` (``"pass@1"``), ``estimand``,
        ``unit`` (of the PPI++ twin), ``pairs`` (per pair ``candidate``, ``baseline``, ``lam``
        per system (keyed ``"system (judge)"`` with several judges) and ``rows``: one per
        quantity with its ``quantity``, ``judge`` (the judge of a PPI++ or judge-only row with
        several judges, one such row per judge; else None), ``label``, ``estimand_words``,
        ``estimate``, ``lower``, ``upper`` and ``prob_positive``, None where the method has
        none) and ``ppi_note`` (why the PPI++ rows are missing, else None).

    Examples
    --------
    >>> import numpy as np, pandas as pd, bayeval as be
    >>> from bayeval.report.judge import judge_section
    >>> from bayeval.testing import fake_results
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(240) < 0.6
    >>> df = pd.DataFrame({"system": np.repeat(["A", "B"], 120),
    ...                    "task": np.tile(np.repeat(np.arange(40), 3), 2),
    ...                    "judge": np.where(y, rng.random(240) < 0.9,
    ...                                      rng.random(240) < 0.2).astype(int),
    ...                    "human": np.where(rng.random(240) < 0.4, y, np.nan)})
    >>> data = be.from_frame(df, judge="judge", success="human", label_design="random")
    >>> res = fake_results(data, model="judge")
    >>> out = judge_section(res, [("B", "A")], estimand="population", ci_prob=0.95)
    >>> [row["quantity"] for row in out["pairs"][0]["rows"]]
    ['true', 'ppi', 'judge_only', 'labelled_only']
    >>> verdicts = df.groupby("system")["judge"].mean()
    >>> bool(np.isclose(out["pairs"][0]["rows"][2]["estimate"], verdicts["B"] - verdicts["A"]))
    True
    """
    if "sensitivity" not in results.tree["posterior"].data_vars:
        return None
    data = results.data
    table = results.judge(ci_prob=ci_prob)
    names = [str(j) for j in table["judge"].values.tolist()]
    several = len(names) > 1
    rows = []
    for name in names:
        part = table.sel(judge=name)
        for system in part["system"].values:
            cell = part.sel(system=system)
            row: dict[str, object] = {
                "system": str(system),
                "judge": name,
                "n_labelled": int(cell["n_labelled"]),
                "n_judged": int(cell["n_judged"]),
            }
            for key in ("agreement", "judge_rate", "labelled_rate"):
                row[key] = _num(cell[key])
            for key in ("sensitivity", "specificity"):
                lower, upper = cell[f"{key}_interval"].values
                row[f"{key}_mean"] = _num(cell[f"{key}_mean"])
                row[f"{key}_lower"], row[f"{key}_upper"] = _num(lower), _num(upper)
            rows.append(row)
    options = (
        results._cluster_options("population", clusters, weighting)
        if estimand == "population" and results._paired
        else {}
    )
    ds = data.dataset
    n_tasks = int(ds.sizes["task"])
    n_clusters = len(np.unique(ds["cluster"].values.astype(str))) if data.has_clusters else 0
    if estimand == "tasks":
        unit = "trial"
    else:
        unit = "cluster" if options.get("clusters") == "new" else "task"
    words = {
        "posterior": estimand_words(
            estimand,
            clusters=options.get("clusters"),
            weighting=options.get("weighting", "task"),
            n_tasks=n_tasks,
            n_clusters=n_clusters,
        ),
        "ppi": estimand_words(
            estimand,
            clusters="new" if unit == "cluster" else None,
            n_tasks=n_tasks,
            n_clusters=n_clusters,
        ),
    }
    out_pairs, ppi_note = [], None
    for candidate, baseline in pairs:
        effect = results.compare(
            candidate,
            baseline,
            metric="pass@k",
            k=1,
            estimand=estimand,
            ci_prob=ci_prob,
            **options,
        )
        lower, upper = effect["effect_interval"].values
        positive = effect["prob_positive"]
        entry_rows = [
            _row("true", words["posterior"], effect["effect_mean"], lower, upper, positive)
        ]
        lam: dict | None = None
        labelled_only = None
        for name in names:  # PPI++ takes one judge's verdicts: one twin per judge
            try:
                twin = bootstrap.ppi(
                    data, candidate, baseline, judge=name, unit=unit, ci_prob=ci_prob
                )
            except ValueError as err:  # e.g. attempts without an outcome under missing="fail"
                ppi_note = f"PPI++ left out: {err}"
                break
            lam = lam or {}
            for s in twin["system"].values:
                key = f"{s} ({name})" if several else str(s)
                lam[key] = _num(twin["lam"].sel(system=s))
            judge = name if several else None
            for quantity, prefix in (("ppi", "effect"), ("judge_only", "judge_only_effect")):
                point = twin["effect_mean" if quantity == "ppi" else prefix]
                low, high = twin[f"{prefix}_interval"].values
                positive = twin["prob_positive"] if quantity == "ppi" else None
                entry_rows.append(_row(quantity, words["ppi"], point, low, high, positive, judge))
            # the labels alone do not depend on the judge: one row, from any twin
            low, high = twin["labelled_only_effect_interval"].values
            labelled_only = _row(
                "labelled_only", words["ppi"], twin["labelled_only_effect"], low, high, None
            )
        if labelled_only is not None:
            entry_rows.append(labelled_only)
        out_pairs.append(
            {
                "candidate": str(candidate),
                "baseline": str(baseline),
                "lam": lam,
                "rows": entry_rows,
            }
        )
    return {
        "judge": ", ".join(names),
        "judges": names,
        "label_design": data.label_design,
        "model": results.model,
        "ci_prob": float(ci_prob),
        "columns": {key: dict(value) for key, value in COLUMNS.items()},
        "quantities": dict(QUANTITIES),
        "judge_note": table.attrs["judge_note"],
        "rows": rows,
        "metric": "pass@1",
        "estimand": estimand,
        "unit": unit,
        "pairs": out_pairs,
        "ppi_note": ppi_note,
    }


def _row(quantity, words, estimate, lower, upper, prob_positive, judge=None) -> dict:
    """One effect of a pair: its quantity and estimand in words, estimate and interval.

    ``judge`` names the judge whose verdicts a PPI++ or judge-only row uses, where the data
    hold several (``None`` otherwise: its label is then the quantity's words alone).
    """
    return {
        "quantity": quantity,
        "judge": judge,
        "label": QUANTITIES[quantity] + ("" if judge is None else f", judge {judge}"),
        "estimand_words": words,
        "estimate": _num(estimate),
        "lower": _num(lower),
        "upper": _num(upper),
        "prob_positive": None if prob_positive is None else _num(prob_positive),
    }
