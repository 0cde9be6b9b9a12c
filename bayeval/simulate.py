"""Synthetic benchmarks with known truth, for calibration studies, power analysis and tests.

The generative model (every draw vectorised, seeded with ``np.random.default_rng(seed)``):

1. A base logit per task from the task population: the logit of a ``Beta(a, b)`` draw, or
   ``mean + cluster effect + task effect`` for a logit-normal population (``clusters=`` makes
   any population logit-normal, see :func:`simulate_benchmark`).
2. System ``s``'s task logit is ``base + effect_s + Normal(0, task_system_sd)``: systems share
   task difficulty, each with its own noise. With one system the base rate is used as is, so
   ``rates="u_shaped"`` then gives exactly ``Beta(0.4, 0.3)`` rates.
3. Outcomes: ``Binomial(n_trials, p)`` successes per ``(system, task)``.
4. Optional missingness: a ``Binomial(n_trials, q)`` number of trials per cell goes missing, the
   missing trials being a random subset (so the ok successes are hypergeometric given the
   complete outcomes, which are the same as those of the run without missingness).
   ``"mcar"``: ``q = rate``; ``"hard"``: ``q = clip(2 * rate * (1 - p), 0, 0.95)``, which leaves
   hard tasks with fewer valid trials, so excluding missing outcomes biases rates upward.

:meth:`Simulation.truth` gives the true value of an estimand: over the drawn tasks, or over
the task population (closed forms for Beta populations, quadrature otherwise).
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections import namedtuple
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import special

from bayeval._validate import validate_choice, validate_positive_int, validate_seed
from bayeval.data import STATUSES, EvalData, _assemble, from_counts

__all__ = ["RATE_PRESETS", "Simulation", "simulate_benchmark", "simulate_many"]

#: Named Beta task populations: name -> (a, b).
RATE_PRESETS = {"u_shaped": (0.4, 0.3), "beta_2_5": (2.0, 5.0), "uniform": (1.0, 1.0)}
METRICS = ("pass@k", "pass^k")
ESTIMANDS = ("tasks", "population")
MECHANISMS = ("mcar", "hard")
_Z = np.linspace(-10.0, 10.0, 2001)  # logit-normal quadrature grid on Z ~ Normal(0, 1)
_Z_COARSE = _Z[::5]  # 401 points, spacing 0.05: the noise in 2-D sums
# Normalised normal-density weights (trapezoid weights: the end points, at 1e-22, do not count).
_Z_WEIGHTS, _Z_COARSE_W = (np.exp(-0.5 * z**2) / np.exp(-0.5 * z**2).sum() for z in (_Z, _Z_COARSE))
_X_POINTS = 4001  # logit grid for Beta populations under a shift/noise
_TAIL = 1e-12  # Beta mass left beyond each end of that grid


@dataclass(frozen=True, eq=False)
class Simulation:
    """A simulated benchmark and its truth.

    Attributes
    ----------
    data : EvalData
        Outcome counts; with missingness the missing trials carry the chosen status and the
        policy is ``missing="exclude"`` (switch with ``data.with_missing("fail")``).
    rates : numpy.ndarray, shape ``(system, task)``
        True per-task success rates (read-only).
    settings : dict
        The arguments of :func:`simulate_benchmark`, with the seed actually used:
        ``simulate_benchmark(**sim.settings)`` reproduces the simulation.

    Examples
    --------
    >>> from bayeval.simulate import simulate_benchmark
    >>> sim = simulate_benchmark(n_tasks=50, n_trials=8, n_systems=2, effect=0.5, seed=1)
    >>> sim.rates.shape, sim.data.systems
    ((2, 50), ['system_0', 'system_1'])
    >>> bool(sim.effect_truth(estimand="population") > 0)
    True
    """

    data: EvalData
    rates: np.ndarray = field(repr=False)
    settings: dict

    def truth(self, metric: str = "pass@k", k: int = 1, estimand: str = "tasks") -> np.ndarray:
        """True value of ``metric`` at ``k`` per system.

        Parameters
        ----------
        metric : {"pass@k", "pass^k"}
            ``f(p) = 1 - (1 - p)^k`` or ``f(p) = p^k``.
        k : int
            Trials per task in the metric.
        estimand : {"tasks", "population"}
            ``"tasks"``: mean of ``f`` over the drawn tasks' true rates (weighted by stratum
            shares when strata are given). ``"population"``: expectation of ``f`` over the task
            population of each system. Beta populations without shift or noise use the closed
            forms ``1 - B(a, b + k) / B(a, b)`` and ``B(a + k, b) / B(a, b)``; a shifted or
            noisy Beta population (``expit(logit(p) + effect_s + Normal(0, task_system_sd))``)
            uses a deterministic 2-D quadrature (a 4001-point trapezoid over the logit of the
            Beta, within its ``1e-12`` tail quantiles, times a 401-point trapezoid over the
            noise), accurate to about ``1e-8``; logit-normal populations use a 2001-point
            trapezoid on ``Z`` in ``[-10, 10]``.

        Returns
        -------
        numpy.ndarray, shape ``(system,)``

        Examples
        --------
        >>> from bayeval.simulate import simulate_benchmark
        >>> sim = simulate_benchmark(n_tasks=10, rates="u_shaped", seed=0)
        >>> sim.truth(estimand="population").round(6)   # 0.4 / (0.4 + 0.3)
        array([0.571429])
        >>> sim.truth("pass^k", k=3).shape
        (1,)
        """
        validate_choice("metric", metric, METRICS)
        k = validate_positive_int("k", k)
        validate_choice("estimand", estimand, ESTIMANDS)
        if estimand == "tasks":
            p = np.asarray(self.rates, dtype=float)
            values = -np.expm1(k * np.log1p(-p)) if metric == "pass@k" else p**k
            return values @ _task_weights(self.data)
        spec = _parse(self.settings)
        return np.array([_population_mean(spec, s, metric, k) for s in range(spec.n_systems)])

    def effect_truth(
        self,
        metric: str = "pass@k",
        k: int = 1,
        estimand: str = "tasks",
        candidate: int = 1,
        baseline: int = 0,
    ) -> float:
        """True difference ``truth[candidate] - truth[baseline]`` (systems by position).

        Examples
        --------
        >>> from bayeval.simulate import simulate_benchmark
        >>> sim = simulate_benchmark(n_tasks=20, n_systems=3, effect=[0.0, 1.0], seed=2)
        >>> bool(sim.effect_truth(estimand="population", candidate=2) > 0)
        True
        """
        n = len(self.data.systems)
        for name, value in (("candidate", candidate), ("baseline", baseline)):
            if (
                isinstance(value, bool)
                or not isinstance(value, numbers.Integral)
                or not 0 <= value < n
            ):
                raise ValueError(f"{name} must be a system position in 0..{n - 1}; got {value!r}")
        values = self.truth(metric, k, estimand)
        return float(values[candidate] - values[baseline])


# Validated settings: kind "beta" (params a, b) or "logit_normal" (params mean, task sd), the
# logit shift and task-by-system noise sd of each system, normalised strata shares, missingness.
_Spec = namedtuple(
    "_Spec",
    "n_tasks n_trials n_systems kind params n_clusters cluster_sd shifts noise_sd strata missing",
)


def simulate_benchmark(
    n_tasks: int = 10,
    n_trials: int = 32,
    n_systems: int = 1,
    rates="u_shaped",
    clusters: int | None = None,
    cluster_sd: float = 1.0,
    effect=0.0,
    task_system_sd: float = 0.5,
    strata: Mapping | None = None,
    missing: Mapping | None = None,
    seed: int | None = 0,
) -> Simulation:
    """Simulate a benchmark whose true rates are known.

    Parameters
    ----------
    n_tasks, n_trials, n_systems : int
        Tasks, trials per ``(system, task)`` and systems (all >= 1).
    rates : str or tuple
        Task population: ``"u_shaped"`` (``Beta(0.4, 0.3)``), ``"beta_2_5"`` (``Beta(2, 5)``),
        ``"uniform"`` (``Beta(1, 1)``), ``("beta", a, b)`` or ``("logit_normal", mean, sd)``.
    clusters : int, optional
        Number of task clusters (balanced, contiguous blocks of tasks). Task logits then are
        ``mean + Normal(0, cluster_sd) per cluster + Normal(0, sd) per task``; a Beta population
        is replaced by the normal with the same logit moments (``mean = digamma(a) -
        digamma(b)``, ``sd**2 = trigamma(a) + trigamma(b)``), cluster effects adding on top.
    cluster_sd : float
        Sd of the cluster effects on the logit scale.
    effect : float or sequence of float
        Logit shift of systems ``1..S-1`` relative to system 0: a scalar for all of them, a
        list of ``S - 1`` values, or of ``S`` values whose first is 0.
    task_system_sd : float
        Sd of each system's task-by-system logit noise (used when ``n_systems > 1``).
    strata : mapping, optional
        Stratum -> share. Tasks go to strata in contiguous blocks, sized by largest-remainder
        rounding of ``share * n_tasks``; the shares are the data's stratum weights.
    missing : mapping, optional
        ``dict(rate=0.1, mechanism="mcar" | "hard", status="timeout")``: ``rate`` in ``[0, 1)``;
        ``"mcar"`` misses each trial with probability ``rate``, ``"hard"`` with
        ``clip(2 * rate * (1 - p), 0, 0.95)`` for a cell of true rate ``p``; ``status`` is any
        non-ok status. The data then uses ``missing="exclude"``.
    seed : int or None
        Seed for ``numpy.random.default_rng`` (``None``: a fresh one, recorded in settings).

    Returns
    -------
    Simulation

    Examples
    --------
    >>> from bayeval.simulate import simulate_benchmark
    >>> sim = simulate_benchmark(n_tasks=30, n_trials=4, n_systems=2, effect=1.0,
    ...                          missing=dict(rate=0.2, mechanism="hard"), seed=3)
    >>> sim.data.missing, sim.data.dataset["status_counts"].shape
    ('exclude', (2, 30, 6))
    >>> int(sim.data.dataset["status_counts"].sum())   # 2 systems x 30 tasks x 4 trials
    240
    """
    settings = dict(
        n_tasks=n_tasks,
        n_trials=n_trials,
        n_systems=n_systems,
        rates=rates,
        clusters=clusters,
        cluster_sd=cluster_sd,
        effect=effect,
        task_system_sd=task_system_sd,
        strata=strata,
        missing=missing,
        seed=validate_seed(seed),
    )
    spec = _parse(settings)
    settings["strata"] = None if strata is None else dict(strata)
    settings["missing"] = None if missing is None else dict(missing)
    settings["effect"] = effect if np.ndim(effect) == 0 else list(effect)
    rng = np.random.default_rng(settings["seed"])
    J, S, n = spec.n_tasks, spec.n_systems, spec.n_trials

    cluster_of = None
    if spec.n_clusters is not None:
        cluster_of = np.arange(J) * spec.n_clusters // J
    if spec.kind == "beta" and cluster_of is None:
        a, b = spec.params
        base_rate = rng.beta(a, b, size=J)
        base = special.logit(base_rate)
    else:
        mean, sd = spec.params
        cluster_effect = 0.0
        if cluster_of is not None:
            cluster_effect = rng.normal(0.0, spec.cluster_sd, spec.n_clusters)[cluster_of]
        base = mean + cluster_effect + rng.normal(0.0, sd, J)
        base_rate = special.expit(base)
    if S == 1:
        p = base_rate[None, :]
    else:
        noise = rng.normal(0.0, spec.noise_sd, (S, J))
        p = special.expit(base[None, :] + spec.shifts[:, None] + noise)
    complete = rng.binomial(n, p)

    tasks = np.char.add("task_", np.char.zfill(np.arange(J).astype(str), len(str(J - 1))))
    tasks = tasks.astype(object)
    systems = [f"system_{s}" for s in range(S)] if S > 1 else None
    strata_labels = weights = None
    if spec.strata is not None:
        sizes = _allocate(spec.strata, J)
        strata_labels = np.repeat(np.asarray(list(spec.strata), dtype=object), sizes)
        weights = spec.strata
    clusters_labels = (
        None
        if cluster_of is None
        else np.char.add("cluster_", cluster_of.astype(str)).astype(object)
    )
    data = from_counts(
        complete,
        n,
        tasks=tasks,
        systems=systems,
        clusters=clusters_labels,
        strata=strata_labels,
        stratum_weights=weights,
    )
    if spec.missing is not None:
        rate, mechanism = spec.missing["rate"], spec.missing["mechanism"]
        q = np.full(p.shape, rate) if mechanism == "mcar" else np.clip(2 * rate * (1 - p), 0, 0.95)
        n_missing = rng.binomial(n, q)
        ok = rng.hypergeometric(complete, n - complete, n - n_missing)
        counts = np.zeros(p.shape + (len(STATUSES),), dtype=np.int64)
        counts[..., 0] = n - n_missing
        counts[..., STATUSES.index(spec.missing["status"])] = n_missing
        ds = data.dataset
        data = EvalData(
            _assemble(
                ok.astype(np.int64),
                counts,
                "exclude",
                ds["system"].values,
                ds["task"].values,
                {c: ds[c].values for c in ("cluster", "stratum") if c in ds.coords},
                ds.attrs,
            )
        )
    p.flags.writeable = False
    return Simulation(data=data, rates=p, settings=settings)


def simulate_many(n_sims: int, **kwargs) -> Iterator[Simulation]:
    """Yield ``n_sims`` independent simulations, seeds spawned from one base seed.

    Child seeds come from ``np.random.SeedSequence(seed).spawn(n_sims)`` (``seed`` from
    ``kwargs``, default 0); each simulation's ``settings["seed"]`` reproduces it alone.
    Arguments are validated before the first simulation is drawn.

    Examples
    --------
    >>> from bayeval.simulate import simulate_many
    >>> sims = list(simulate_many(3, n_tasks=5, seed=7))
    >>> len({s.settings["seed"] for s in sims})
    3
    """
    n_sims = validate_positive_int("n_sims", n_sims)
    bound = inspect.signature(simulate_benchmark).bind(**kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    arguments["seed"] = validate_seed(arguments["seed"])
    _parse(arguments)
    children = np.random.SeedSequence(arguments.pop("seed")).spawn(n_sims)
    return (
        simulate_benchmark(**arguments, seed=int(child.generate_state(1)[0])) for child in children
    )


# -- helpers -----------------------------------------------------------------------------------
def _number(name: str, value, low: float = -np.inf, strict: bool = False) -> float:
    """A finite real number, ``>= low`` (``> low`` when ``strict``)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < low
        or (strict and value == low)
    ):
        bound = "" if low == -np.inf else f" {'>' if strict else '>='} {low:g}"
        raise ValueError(f"{name} must be a finite number{bound}; got {value!r}")
    return float(value)


def _parse(settings: Mapping) -> _Spec:
    """Validate the arguments of :func:`simulate_benchmark` (errors name the argument)."""
    n_tasks = validate_positive_int("n_tasks", settings["n_tasks"])
    n_trials = validate_positive_int("n_trials", settings["n_trials"])
    n_systems = validate_positive_int("n_systems", settings["n_systems"])
    rates = settings["rates"]
    form = rates[0] if isinstance(rates, Sequence) and len(rates) == 3 else None
    if isinstance(rates, str) and rates in RATE_PRESETS:
        kind, params = "beta", RATE_PRESETS[rates]
    elif form == "beta":
        kind, params = (
            "beta",
            (_number("rates a", rates[1], 0, True), _number("rates b", rates[2], 0, True)),
        )
    elif form == "logit_normal":
        kind, params = (
            "logit_normal",
            (_number("rates mean", rates[1]), _number("rates sd", rates[2], 0)),
        )
    else:
        raise ValueError(
            f"rates must be one of {list(RATE_PRESETS)}, ('beta', a, b) or "
            f"('logit_normal', mean, sd); got {rates!r}"
        )
    n_clusters = settings["clusters"]
    if n_clusters is not None:
        n_clusters = validate_positive_int("clusters", n_clusters)
        if n_clusters > n_tasks:
            raise ValueError(f"clusters must be <= n_tasks ({n_tasks}); got {n_clusters}")
        if kind == "beta":
            a, b = params
            params = (
                float(special.digamma(a) - special.digamma(b)),
                float(np.sqrt(special.polygamma(1, a) + special.polygamma(1, b))),
            )
            kind = "logit_normal"
    cluster_sd = _number("cluster_sd", settings["cluster_sd"], 0)
    noise_sd = _number("task_system_sd", settings["task_system_sd"], 0) if n_systems > 1 else 0.0

    effect = settings["effect"]
    try:
        values = np.atleast_1d(np.asarray(effect, dtype=float))
    except (TypeError, ValueError):
        values = np.array([np.nan])
    if values.ndim != 1 or not np.isfinite(values).all():
        raise ValueError(f"effect must be a finite number or a list of them; got {effect!r}")
    if np.ndim(effect) == 0:
        shifts = np.r_[0.0, np.full(n_systems - 1, values[0])]
        if n_systems == 1 and values[0] != 0:
            raise ValueError(
                "effect shifts systems 1..S-1 relative to system 0; with "
                f"n_systems=1 there is none (got effect={effect!r})"
            )
    elif len(values) == n_systems - 1:
        shifts = np.r_[0.0, values]
    elif len(values) == n_systems and values[0] == 0:
        shifts = values
    else:
        raise ValueError(
            f"effect must be a scalar, {n_systems - 1} values (systems 1..S-1) or "
            f"{n_systems} values starting with 0; got {effect!r}"
        )

    strata = settings["strata"]
    if strata is not None:
        if not isinstance(strata, Mapping) or not strata:
            raise ValueError(f"strata must be a non-empty mapping stratum -> share; got {strata!r}")
        shares = np.array([_number(f"strata[{k!r}]", v, 0, True) for k, v in strata.items()])
        strata = dict(zip(strata, (shares / shares.sum()).tolist(), strict=True))
        _allocate(strata, n_tasks)

    missing = settings["missing"]
    if missing is not None:
        if not isinstance(missing, Mapping):
            raise ValueError(
                f"missing must be a mapping (rate=, mechanism=, status=); got {missing!r}"
            )
        unknown = set(missing) - {"rate", "mechanism", "status"}
        if unknown:
            raise ValueError(
                f"missing has unknown keys {sorted(unknown)}; allowed: rate, mechanism, status"
            )
        rate = missing.get("rate", 0.1)
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= float(rate) < 1:
            raise ValueError(f"missing rate must lie in [0, 1); got {rate!r}")
        missing = {
            "rate": float(rate),
            "mechanism": validate_choice(
                "missing mechanism", missing.get("mechanism", "mcar"), MECHANISMS
            ),
            "status": validate_choice(
                "missing status", missing.get("status", "timeout"), STATUSES[1:]
            ),
        }
    return _Spec(
        n_tasks,
        n_trials,
        n_systems,
        kind,
        params,
        n_clusters,
        cluster_sd,
        shifts,
        noise_sd,
        strata,
        missing,
    )


def _allocate(shares: dict, n_tasks: int) -> np.ndarray:
    """Tasks per stratum: largest-remainder rounding of ``share * n_tasks``, each >= 1."""
    raw = np.array(list(shares.values())) * n_tasks
    sizes = np.floor(raw).astype(np.int64)
    order = np.argsort(-(raw - sizes), kind="stable")
    sizes[order[: n_tasks - sizes.sum()]] += 1
    if (sizes == 0).any():
        empty = [k for k, size in zip(shares, sizes, strict=True) if size == 0]
        raise ValueError(f"strata: n_tasks={n_tasks} leaves stratum(s) {empty} without a task")
    return sizes


def _task_weights(data: EvalData) -> np.ndarray:
    """Weight of each task in the tasks estimand: equal, or stratum share / stratum size."""
    n_tasks = len(data.tasks)
    weights = data.stratum_weights
    if weights is None:  # no strata
        return np.full(n_tasks, 1.0 / n_tasks)
    codes, labels = pd.factorize(data.dataset["stratum"].values)
    shares = np.array([weights[label] for label in labels])
    return (shares / np.bincount(codes))[codes]


def _f_logit(x: np.ndarray, metric: str, k: int) -> np.ndarray:
    """``f(expit(x))``, computed stably on the logit scale."""
    if metric == "pass@k":
        return -np.expm1(k * special.log_expit(-x))
    return np.exp(k * special.log_expit(x))


def _population_mean(spec: _Spec, system: int, metric: str, k: int) -> float:
    shift, noise = float(spec.shifts[system]), spec.noise_sd
    if spec.kind == "logit_normal":
        mean, sd = spec.params
        total_sd = np.sqrt(sd**2 + (spec.cluster_sd**2 if spec.n_clusters else 0.0) + noise**2)
        return float(_f_logit(mean + shift + total_sd * _Z, metric, k) @ _Z_WEIGHTS)
    a, b = spec.params
    if shift == 0 and noise == 0:
        if metric == "pass@k":
            return float(-np.expm1(special.betaln(a, b + k) - special.betaln(a, b)))
        return float(np.exp(special.betaln(a + k, b) - special.betaln(a, b)))
    return _beta_shifted_mean(a, b, shift, noise, metric, k)


@lru_cache(maxsize=256)
def _beta_shifted_mean(
    a: float, b: float, shift: float, noise: float, metric: str, k: int
) -> float:
    """``E f(expit(logit(p) + shift + noise * Z))``, ``p ~ Beta(a, b)``, by 2-D trapezoid.

    The logit ``x`` of ``p`` has density ``expit(x)^a expit(-x)^b / B(a, b)``, integrated
    between its ``_TAIL`` quantiles (clipped to ``[-700, 700]``); the mass above the grid
    counts with ``f = 1`` and the mass below with ``f = 0``.
    """
    lo = special.logit(special.betaincinv(a, b, _TAIL))
    hi = -special.logit(special.betaincinv(b, a, _TAIL))
    lo, hi = max(lo, -700.0), min(hi, 700.0)
    x = np.linspace(lo, hi, _X_POINTS)
    log_density = a * special.log_expit(x) + b * special.log_expit(-x) - special.betaln(a, b)
    w = np.exp(log_density) * (x[1] - x[0])
    w[[0, -1]] *= 0.5
    if noise == 0:
        inner = _f_logit(x + shift, metric, k)
    else:
        inner = _f_logit(x[:, None] + shift + noise * _Z_COARSE[None, :], metric, k) @ _Z_COARSE_W
    upper = special.betainc(b, a, special.expit(-hi))
    return float(inner @ w + upper)
