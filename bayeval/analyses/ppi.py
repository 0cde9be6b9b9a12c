"""Prediction-powered inference (PPI++): a judge's verdicts on every attempt, corrected by labels.

The frequentist twin of the judge-aware model (:func:`ppi`, reached as
``bayeval.bootstrap.ppi``). On judged data (``from_frame(..., judge=, label_design=)``) the true
success rate of a system is estimated as

    theta(lam) = mean(Y_labelled) + lam * (mean(J_unlabelled) - mean(J_labelled))

per label stratum (weighted by the strata's shares of all attempts): the labelled mean, made
more precise by the judge's verdicts ``J`` wherever they move with the labels ``Y``, and
unbiased for every ``lam`` because the labelled attempts are a random sample. ``lam`` is tuned
to the smallest variance (PPI++, Angelopoulos, Duchi and Zrnic 2023), clipped to [0, 1]:
``lam = 0`` is the labelled-only estimate, ``lam = 1`` plain PPI.

Written here rather than called from ppi-python (``ppi_py``), which treats attempts as
independent draws and estimates one mean at a time: attempts of one task are not independent
(the task is the unit, as in the bootstrap twins) and a paired difference shares its tasks.
The variance is the sandwich (influence-function) variance of the estimator, summed over the
resampling units; with ``unit="trial"`` and one system it is exactly ``ppi_py.ppi_mean_ci``'s
for the same ``lam`` (tested against it).
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import xarray as xr

from bayeval._validate import describe_values, validate_choice, validate_prob
from bayeval.data import JUDGE_VARS, EvalData

__all__ = ["ppi"]

_UNITS = ("trial", "task", "cluster")


def ppi(
    data: EvalData,
    candidate,
    baseline=None,
    *,
    judge: str | None = None,
    unit: str = "task",
    ci_prob: float = 0.95,
    lam: float | None = None,
) -> xr.Dataset:
    """PPI++ interval for a system's true success rate, or for a paired difference.

    Parameters
    ----------
    data : EvalData
        Judged data: ``from_frame(..., judge=, success=, label_design=)``.
    candidate : system label
        The system; with ``baseline``, the effect is ``candidate - baseline``.
    baseline : system label, optional
        The system compared against, on the shared tasks (the pairing is kept with
        ``unit="task"`` or ``"cluster"``).
    judge : str, optional
        Which judge's verdicts to use; required when the data hold several.
    unit : {"task", "trial", "cluster"}, default "task"
        The independent unit of the variance: tasks (attempts of one task are alike, the twin
        of ``estimand="population"``), single attempts (``"trial"``, as ``ppi_py`` assumes)
        or the data's clusters.
    ci_prob : float, default 0.95
        Probability of the (normal, two-sided) interval.
    lam : float, optional
        The power-tuning weight of the judge. Default: the variance-minimising value, clipped
        to [0, 1] (one per system). ``0`` gives the labelled-only estimate, ``1`` plain PPI.

    Returns
    -------
    xarray.Dataset
        Per system: ``estimate`` (the true success rate, all attempts of the system weighted
        alike), ``estimate_se``, ``estimate_interval`` (``ci_bound``), ``lam`` (the judge's
        weight used), ``labelled_only`` (the labels' mean, strata weighted) and
        ``judge_only`` (the verdicts' mean over all attempts: biased wherever the judge errs),
        ``n_labelled`` and ``n_judged``. With ``baseline`` also ``effect_mean``,
        ``effect_se``, ``effect_interval`` and ``prob_positive`` (the normal approximation's
        share above 0), named as :func:`bayeval.bootstrap.compare` names them, and beside it
        the naive effects, ``labelled_only_effect`` (the labels' means' difference, what
        ``lam=0`` gives) and ``judge_only_effect`` (the verdicts' means' difference, biased
        wherever the judge errs differently on the two systems), each with its ``*_se`` and
        ``*_interval`` of the same paired variance. Attrs:
        ``method`` (``"ppi++"``), ``estimand`` and ``estimand_note`` (in words), ``judge``,
        ``label_design``, ``unit``, ``ci_prob``, ``paired``.

    Raises
    ------
    ValueError
        Data without a judge, a system with a label stratum but no label there, or attempts
        that are not ``ok`` under ``missing="fail"`` or ``"bounds"`` (choose
        ``missing="exclude"``: the rate among attempts with an outcome).

    Examples
    --------
    >>> import numpy as np, pandas as pd, bayeval as be
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(600) < 0.7                            # the true outcomes
    >>> j = np.where(y, rng.random(600) < 0.95, rng.random(600) < 0.2)  # a lenient judge
    >>> df = pd.DataFrame({"system": "A", "task": np.arange(600) % 60, "judge": j.astype(int),
    ...                    "human": np.where(rng.random(600) < 0.2, y, np.nan)})
    >>> data = be.from_frame(df, judge="judge", success="human", label_design="random")
    >>> out = be.bootstrap.ppi(data, "A")
    >>> bool(out["estimate_se"] < out["labelled_only_se"])    # the judge adds precision
    True
    >>> round(float(out["judge_only"].item()), 2)  # the judge alone: too lenient
    0.73
    """
    validate_choice("unit", unit, _UNITS)
    validate_prob("ci_prob", ci_prob)
    if lam is not None and (isinstance(lam, bool) or not 0 <= float(lam) <= 1):
        raise ValueError(f"lam must be a number in [0, 1] or None (tuned); got {lam!r}")
    ds, name = _judged(data, judge)
    systems = [candidate] if baseline is None else [candidate, baseline]
    known = data.systems
    unknown = [s for s in systems if s not in known]
    if unknown:
        raise KeyError(f"unknown system label(s) {describe_values(unknown)}; known: {known}")
    if baseline is not None and candidate == baseline:
        raise ValueError(f"candidate and baseline are the same system ({candidate!r})")
    units = _units(ds, systems, unit)
    parts = [_linear_parts(units[s], s, ds["label_stratum"].values) for s in systems]
    if lam is not None:
        lams = np.full(len(systems), float(lam))
    elif baseline is None:
        lams = np.array([_best_lam(parts[0])])
    else:
        lams = _best_pair(parts[0], parts[1])
    z = NormalDist().inv_cdf(0.5 + ci_prob / 2)
    per = [_summary(p, lam_s, z) for p, lam_s in zip(parts, lams, strict=True)]
    out = xr.Dataset(
        {
            "estimate": ("system", [p["estimate"] for p in per]),
            "estimate_se": ("system", [p["se"] for p in per]),
            "estimate_interval": (("system", "ci_bound"), [p["interval"] for p in per]),
            "lam": ("system", lams),
            "labelled_only": ("system", [p["labelled_only"] for p in per]),
            "labelled_only_se": ("system", [p["labelled_only_se"] for p in per]),
            "judge_only": ("system", [p["judge_only"] for p in per]),
            "judge_only_se": ("system", [p["judge_only_se"] for p in per]),
            "n_labelled": ("system", [p["n_labelled"] for p in per]),
            "n_judged": ("system", [p["n_judged"] for p in per]),
        },
        coords={"system": np.asarray(systems, dtype=object), "ci_bound": ["lower", "upper"]},
    )
    paired = baseline is not None and unit != "trial"
    if baseline is not None:
        psi = [p["A"] + lam_s * p["B"] for p, lam_s in zip(parts, lams, strict=True)]
        effect = per[0]["estimate"] - per[1]["estimate"]
        se = float(np.sqrt(np.sum(parts[0]["weight"] * (psi[0] - psi[1]) ** 2)))
        out["effect_mean"] = effect
        out["effect_se"] = se
        out["effect_interval"] = ("ci_bound", [effect - z * se, effect + z * se])
        out["prob_positive"] = NormalDist().cdf(effect / se) if se > 0 else float(effect > 0)
        # the two naive effects beside it, with the same paired (sandwich) variance
        for name, influence in (
            ("labelled_only", [p["A"] for p in parts]),
            ("judge_only", [p["judge_psi"] for p in parts]),
        ):
            naive = per[0][name] - per[1][name]
            naive_se = float(
                np.sqrt(np.sum(parts[0]["weight"] * (influence[0] - influence[1]) ** 2))
            )
            out[f"{name}_effect"] = naive
            out[f"{name}_effect_se"] = naive_se
            out[f"{name}_effect_interval"] = (
                "ci_bound",
                [naive - z * naive_se, naive + z * naive_se],
            )
    what = "the true success rate" + (
        f" of {candidate!r} minus that of {baseline!r}" if baseline is not None else ""
    )
    out.attrs = {
        "method": "ppi++",
        "estimand": "population" if unit != "trial" else "tasks",
        "estimand_note": (
            f"{what}: the mean trusted outcome over all judged attempts (labelled or not), "
            f"judge error corrected by the labelled sample; variance over {unit}s as "
            "independent units"
        ),
        "judge": name,
        "label_design": data.label_design,
        "unit": unit,
        "ci_prob": float(ci_prob),
        "paired": paired,
        "lam_note": "tuned to the smallest variance, clipped to [0, 1]" if lam is None else "given",
    }
    return out


def _judged(data: EvalData, judge) -> tuple[xr.Dataset, str]:
    """The dataset of one judge, refusing data the estimator does not cover."""
    if not data.judges:
        raise ValueError(
            "ppi needs judged data: build it with from_frame(..., judge=, success=, label_design=)"
        )
    if judge is None:
        if len(data.judges) > 1:
            raise ValueError(f"the data hold several judges {data.judges}: choose one with judge=")
        judge = data.judges[0]
    elif judge not in data.judges:
        raise KeyError(f"unknown judge {judge!r}; the data hold {data.judges}")
    ds = data.dataset
    not_ok = int(ds["status_counts"].sum() - ds["status_counts"].sel(status="ok").sum())
    if not_ok and data.missing != "exclude":
        raise ValueError(
            f"{not_ok} attempts are not 'ok' and have no verdict; ppi estimates the rate among "
            f"attempts with an outcome: use data.with_missing('exclude') (got "
            f"missing={data.missing!r})"
        )
    return ds.sel(judge=judge, drop=True), str(judge)


def _units(ds: xr.Dataset, systems: list, unit: str) -> dict:
    """Per system: ``(counts (unit, stratum, 6), weight (unit,))`` of independent units.

    ``"trial"``: one row per kind of attempt (stratum x judge cell), weighted by how many;
    ``"task"``/``"cluster"``: the counts summed within each, weight 1, shared by the systems
    (so a paired difference keeps its pairing).
    """
    counts = np.stack(
        [ds[v].transpose("system", "task", "label_stratum").values for v in JUDGE_VARS], -1
    ).astype(float)
    position = {s: i for i, s in enumerate(ds["system"].values.tolist())}
    n_strata = counts.shape[2]
    out = {}
    if unit == "trial":
        kinds = n_strata * len(JUDGE_VARS)
        one_hot = np.eye(kinds).reshape(kinds, n_strata, len(JUDGE_VARS))
        blocks = []
        for i, s in enumerate(systems):
            totals = counts[position[s]].sum(0).reshape(-1)
            blocks.append((i, totals))
        size = kinds * len(systems)
        for i, totals in blocks:  # a system's attempts are units of their own
            rows = np.zeros((size, n_strata, len(JUDGE_VARS)))
            weight = np.zeros(size)
            rows[i * kinds : (i + 1) * kinds] = one_hot
            weight[i * kinds : (i + 1) * kinds] = totals
            out[systems[i]] = (rows, weight)
        # every system's weight vector is its own; the difference sums both blocks
        combined = sum(w for _, w in out.values())
        return {s: (rows, combined) for s, (rows, _) in out.items()}
    if unit == "cluster":
        if "cluster" not in ds.coords:
            raise ValueError("unit='cluster' needs task clusters: from_frame(..., cluster=)")
        codes, _ = _factorize(ds["cluster"].values)
        n_clusters = int(codes.max()) + 1
        for s in systems:
            grouped = np.zeros((n_clusters, n_strata, len(JUDGE_VARS)))
            np.add.at(grouped, codes, counts[position[s]])
            out[s] = (grouped, np.ones(n_clusters))
        return out
    for s in systems:
        out[s] = (counts[position[s]], np.ones(counts.shape[1]))
    return out


def _factorize(values) -> tuple[np.ndarray, list]:
    labels: dict = {}
    codes = np.array([labels.setdefault(v, len(labels)) for v in values.tolist()])
    return codes, list(labels)


def _linear_parts(unit_counts, system, strata) -> dict:
    """The estimate ``theta0 + lam * slope`` and its influence ``A + lam * B`` per unit.

    Per stratum ``h``: ``theta_h = Ybar_h + lam * (Ubar_h - Jbar_h)`` (labelled label mean,
    unlabelled and labelled verdict means, each a ratio of sums over units), weighted by the
    stratum's share of all attempts ``w_h``, whose own estimation enters the influence too.
    """
    c, weight = unit_counts
    n11, n10, n01, n00, u1, u0 = np.moveaxis(c, -1, 0)  # (unit, stratum) each
    y, j, nl = n11 + n01, n11 + n10, n11 + n10 + n01 + n00
    nu = u1 + u0
    n_h = nl + nu
    n_unit = n_h.sum(1)
    total = float(weight @ n_unit)
    NL, NU, N_h = weight @ nl, weight @ nu, weight @ n_h  # (stratum,)
    present = N_h > 0
    bare = present & (NL == 0)
    if bare.any():
        raise ValueError(
            f"system {system!r} has judged attempts but no labelled one in label stratum "
            f"{describe_values(np.asarray(strata, dtype=object)[bare])}: its true rate is not "
            "identified there"
        )
    safe_nl, safe_nu = np.where(NL > 0, NL, 1.0), np.where(NU > 0, NU, 1.0)
    ybar, jbar = (weight @ y) / safe_nl, (weight @ j) / safe_nl
    ubar = (weight @ u1) / safe_nu
    has_u = NU > 0
    slope_h = np.where(has_u, ubar - jbar, 0.0)
    w_h = N_h / total
    share = (n_h - w_h * n_unit[:, None]) / total  # influence of the strata's shares
    A = (w_h * (y - ybar * nl) / safe_nl + ybar * share).sum(1)
    B = (
        np.where(has_u, w_h * ((u1 - ubar * nu) / safe_nu - (j - jbar * nl) / safe_nl), 0.0)
        + slope_h * share
    ).sum(1)
    judge_all = (weight @ (j + u1)).sum() / total
    return {
        "theta0": float(w_h @ ybar),
        "slope": float(w_h @ slope_h),
        "A": A,
        "B": B,
        "weight": weight,
        "judge_only": float(judge_all),
        "judge_psi": (j + u1).sum(1) / total - judge_all * n_unit / total,
        "n_labelled": int(round(NL.sum())),
        "n_judged": int(round(total)),
    }


def _best_lam(p: dict) -> float:
    """The weight minimising ``sum weight * (A + lam B)^2``, clipped to [0, 1]."""
    bb = float(p["weight"] @ p["B"] ** 2)
    if bb <= 0:
        return 0.0
    return float(np.clip(-(p["weight"] @ (p["A"] * p["B"])) / bb, 0.0, 1.0))


def _best_pair(pc: dict, pb: dict) -> np.ndarray:
    """The two systems' weights minimising the difference's variance, within [0, 1]^2.

    The influence of the difference is ``a + lam_c * b - lam_b * c``: a least-squares problem
    in two unknowns, solved on the box by trying the interior optimum, each edge's optimum and
    the corners.
    """
    w = pc["weight"]
    a, b, c = pc["A"] - pb["A"], pc["B"], -pb["B"]

    def var(lc, lb):
        return float(w @ (a + lc * b + lb * c) ** 2)

    def edge(fixed_value, moving, fixed):
        denom = float(w @ moving**2)
        if denom <= 0:
            return 0.0
        return float(np.clip(-(w @ ((a + fixed_value * fixed) * moving)) / denom, 0, 1))

    candidates = [(x, y) for x in (0.0, 1.0) for y in (0.0, 1.0)]
    for v in (0.0, 1.0):
        candidates.append((edge(v, b, c), v))
        candidates.append((v, edge(v, c, b)))
    gram = np.array([[w @ (b * b), w @ (b * c)], [w @ (b * c), w @ (c * c)]])
    rhs = -np.array([w @ (a * b), w @ (a * c)])
    if abs(np.linalg.det(gram)) > 1e-300:
        x, y = np.linalg.solve(gram, rhs)
        if 0 <= x <= 1 and 0 <= y <= 1:
            candidates.append((float(x), float(y)))
    best = min(candidates, key=lambda xy: var(*xy))
    return np.array(best)


def _summary(p: dict, lam: float, z: float) -> dict:
    estimate = p["theta0"] + lam * p["slope"]
    se = float(np.sqrt(p["weight"] @ (p["A"] + lam * p["B"]) ** 2))
    return {
        "estimate": estimate,
        "se": se,
        "interval": [estimate - z * se, estimate + z * se],
        "labelled_only": p["theta0"],
        "labelled_only_se": float(np.sqrt(p["weight"] @ p["A"] ** 2)),
        "judge_only": p["judge_only"],
        "judge_only_se": float(np.sqrt(p["weight"] @ p["judge_psi"] ** 2)),
        "n_labelled": p["n_labelled"],
        "n_judged": p["n_judged"],
    }
