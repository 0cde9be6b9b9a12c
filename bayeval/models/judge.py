r"""The judge-aware model: true outcomes of the logit-normal model, seen through a judge: ``judge``.

Judged data (``from_frame(..., judge=, success=, label_design=)``) hold, per system-task cell,
the labelled attempts counted by (verdict, label), ``n11, n10, n01, n00`` (verdict first), and
the unlabelled attempts by verdict, ``u1, u0``. Model (system s, task j in cluster g = g(j))::

    logit p[s, j]  = alpha[s, h] + u[g] + w[s, g] + e[j] + v[s, j]     the true outcome's rate
    logit se[s, j] = mu_se + sigma_se z_se[s] + tau_se x_se[j]          (sp alike)

    P(verdict 1 | true 1) = se[s, j],  P(verdict 0 | true 0) = sp[s, j]
    mu_se, mu_sp ~ Normal(1.5, 1),  sigma_se, sigma_sp, tau_se, tau_sp ~ HalfNormal(1),
    z, x ~ Normal(0, 1)

with the priors and effects of :mod:`bayeval.models.logit_normal` for the true outcome (read
its docstring). A labelled cell contributes ``p^(n11 + n01) (1 - p)^(n10 + n00) se^n11
(1 - se)^n01 (1 - sp)^n10 sp^n00``; an unlabelled attempt's true outcome is summed out, so the
unlabelled verdicts contribute ``q^u1 (1 - q)^u0`` with ``q = se p + (1 - sp)(1 - p)``.

The judge's error is per system, pooled across systems: a judge that favours one system's
style has its own sensitivity or specificity there, learnt from that system's labels and
shrunk towards the others' where its labels are few. It also varies by task, shared by the
systems (``tau x[j]``): a judge that misreads a question's reference answer errs on it for
every system, and without that term the model reads the shared misses as a hard question
(on ``judging_the_judges`` with a lexical judge, 1 of 9 systems' intervals covered the
all-labels rate without it, 9 of 9 with it: ``models/judge.md``). ``sensitivity[s]`` and
``specificity[s]`` are a typical task's (``x = 0``). The likelihood is unchanged when every
true outcome is flipped and ``se, sp`` become ``1 - sp, 1 - se``: the labels break that
symmetry, and the prior breaks it where labels are few, putting most of its mass on judges
better than chance (for one system, ``se + sp > 1`` holds 0.94 of the prior mass and
``se > 1/2`` 0.87). A judge worse than chance must be shown to be so by the labels.

Several judges (``judge=["j1", "j2"]``, up to six): their verdicts on an attempt form a
pattern v (``"10"``: the first judge said 1, the second 0), and each system has a law of the
patterns given a true 1, ``A[s, v]``, and given a true 0, ``B[s, v]``, log-linear in the
verdicts::

    log P(v | y, s) = sum_k beta[y, k, s] v_k + sum_{k<l} gamma[y, k, l] v_k v_l - log Z[y, s]
    beta[y, k, s] = mu[y, k] + sigma[y, k] z[y, k, s],   z ~ Normal(0, 1)
    mu[1, k] ~ Normal(m_se, sd_se),  mu[0, k] ~ Normal(-m_sp, sd_sp),  sigma ~ HalfNormal(1)
    gamma[y, k, l] ~ Normal(0, 2)

``beta`` is judge k's own leaning per system, pooled across systems (with ``gamma = 0`` it is
``logit se`` for a true 1 and ``-logit sp`` for a true 0: independent judges, the one-judge
priors); ``gamma`` is the dependence of two judges given the truth, shared by the systems:
two LLM judges that pass the same plausible wrong answers (on the bundled TriviaQA data
their errors on true failures correlate 0.59) have a large ``gamma[0]``, where a model of
independent judges would read their agreement as twice the evidence. A labelled attempt
contributes ``p A`` or ``(1 - p) B``, an unlabelled one ``p A + (1 - p) B``
(:func:`~bayeval.models.judge_patterns.patterns_log_likelihood`, on the patterns' counts
:data:`~bayeval.data.judge.PATTERN_VAR`). Each judge's ``sensitivity`` and ``specificity``
``(judge, system)`` are the margins; the pattern laws are kept as ``judge_patterns_given_1``
and ``_0`` ``(system, verdicts)``, the dependence as ``judge_dependence_sensitivity`` (given
a true 1) and ``_specificity`` (given a true 0) over ``judge_pair``. The judges' error does
not vary by task here: where one judge misreads a task for every system, the others' verdicts
on it tell the truth apart, which is what a lone judge's task term stands in for; tasks that
every judge misreads are not described.

Assumptions: labelled attempts are a random sample, or random within declared label strata,
and neither the true rate nor the judge's error differs between label strata within a cell
(the strata's counts are summed; with strata by the judge's own verdict this is exact: the
labelling then depends on the verdict only, which the likelihood conditions on); attempts of
one cell share their rate, and given the truth the verdicts are independent. ``successes``
and ``trials`` of judged data count the labelled attempts; every estimand here is of the TRUE
outcome, over all attempts, labelled or not.

Inference: NUTS (nutpie) on the PyMC model (:func:`build_judge_model`), compiled once per data
structure. With one judge, systems on shared tasks and at most
:data:`~bayeval.models.kernels.judge.MAX_ATTEMPTS` judged attempts a cell (the usual case), the
task-by-system effects are integrated out of each cell by quadrature
(:mod:`bayeval.models.kernels.judge`): the sampler sees the task effects, the judge's terms and
the hyperparameters, not the ``(system, task)`` array that made most of the full-latent form's
dimensions and its slow mixing; after the fit each cell's effect is drawn exactly from its
conditional, per draw. Several judges with one attempt a cell are collapsed too: a cell's
likelihood is then linear in its rate (``p A_v + (1 - p) B_v`` or one of its terms), which is
one judge's cell with ``se = A_v`` and ``1 - sp = B_v``
(:func:`~bayeval.models.judge_patterns.one_attempt_cells`): the same kernel integrates it,
and its effect is drawn after the fit as that cell's. Otherwise every effect is latent
(non-centred). The fit keeps the task and task-by-system effects' draws
(``task_effects`` group), from which the tasks estimand reads each cell's rate ``p (chain,
draw, system, task)`` exactly: its judged-only attempts are in those draws. The population
estimand is the logit-normal model's (a new task: the same parameters).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy import special

from bayeval._validate import merge_priors
from bayeval.data.groups import dataset_of
from bayeval.data.judge import PATTERN_VAR
from bayeval.models import base
from bayeval.models._beta_family import metric_of_rate, task_weights
from bayeval.models.judge_patterns import (
    judge_pairs,
    one_attempt_cells,
    one_attempt_logits,
    pattern_cells,
    pattern_probabilities,
    patterns_log_likelihood,
)
from bayeval.models.kernels import judge as judge_kernel
from bayeval.models.kernels.compiled_models import CompiledModels
from bayeval.models.kernels.judge import JudgedCells
from bayeval.models.logit_normal import DEFAULT_PRIORS as LOGIT_NORMAL_PRIORS
from bayeval.models.logit_normal import Layout, LogitNormalRates
from bayeval.models.logit_normal import validate_priors as validate_logit_normal_priors
from bayeval.models.logit_normal.pymc_model import _intercepts_and_cluster_effects

__all__ = [
    "CELL_VARS",
    "DEFAULT_PRIORS",
    "JUDGE_POSTERIOR_VARS",
    "JudgeRates",
    "attempts",
    "build_judge_model",
    "judge_cells",
    "judge_log_likelihood",
    "model_data",
    "validate_priors",
]

#: The judge's priors (logit-scale Normals as (mean, sd), HalfNormal scales), beside the
#: logit-normal model's (:data:`bayeval.models.logit_normal.DEFAULT_PRIORS`).
JUDGE_PRIORS = {"sensitivity": (1.5, 1.0), "specificity": (1.5, 1.0), "sigma_judge": 1.0}
DEFAULT_PRIORS = {**LOGIT_NORMAL_PRIORS, **JUDGE_PRIORS}

#: The per-cell counts the likelihood reads, in :data:`bayeval.data.judge.JUDGE_VARS` order.
CELL_VARS = ("judge_n11", "judge_n10", "judge_n01", "judge_n00", "judge_u1", "judge_u0")

#: The judge's parameters a fit keeps, per system, beside the logit-normal model's.
JUDGE_POSTERIOR_VARS = (
    "sensitivity",
    "specificity",
    "judge_mu_sensitivity",
    "judge_mu_specificity",
    "judge_sigma_sensitivity",
    "judge_sigma_specificity",
    "judge_task_sigma_sensitivity",
    "judge_task_sigma_specificity",
    "judge_pattern_sigma_sensitivity",
    "judge_pattern_sigma_specificity",
    "judge_dependence_sensitivity",
    "judge_dependence_specificity",
    "judge_patterns_given_1",
    "judge_patterns_given_0",
)

#: NUTS target acceptance of the full-latent form: the latent effects of few-attempt cells have
#: curved posteriors.
TARGET_ACCEPT = 0.9
#: The collapsed form's warm-up (nutpie's own 300 draws) and target acceptance with one judge
#: and with several. One judge, on 6 x 300 x 1 (``benchmarks/judge_speed.py``, seeds 0-9):
#: at 0.9 every fit passed every gate (31 leapfrog steps a draw, bulk ESS 863-1495, 10-11 s);
#: at 0.85 (21-23 steps, 8-9 s) three of ten failed one (divergent transitions in two, r-hat in
#: one), and its ESS a second was lower. On the bundled TriviaQA data GPT-4 Turbo's fits passed
#: at both; the lexical judge's missed the r-hat gate by a hair at both (1.010-1.015, three
#: seeds each), without divergences. Several judges: two judges' fits diverged now and then at
#: every setting tried, least at 0.85 (a lone transition in one to three seeds of four; at 0.9
#: two of two); three judges on the TriviaQA data passed every gate at 0.85 in 52 s, where
#: 0.95 took 199 s and missed the r-hat gate (``models/judge.md``, speed).
COLLAPSED_TUNE = 300
COLLAPSED_TARGET_ACCEPT = 0.9
SEVERAL_JUDGES_TARGET_ACCEPT = 0.85

#: Further options of ``nutpie.sample``.
NUTPIE_OPTIONS: dict = {}

#: The forms sampled: the task-by-system effects integrated out of each cell, or latent.
COLLAPSED, FULL_LATENT = "collapsed", "full-latent"

_compiled = CompiledModels()  # structure -> compiled nutpie model

#: Mixed into the fit's seed for the draws of the task-by-system effects after a collapsed fit.
_DRAWS_STREAM = 49
#: Chains whose task-by-system effects are drawn at once after a collapsed fit (the sampler's
#: cores).
DRAW_THREADS = 2


def validate_priors(priors) -> dict:
    """The logit-normal priors and the judge's, defaults filled in and checked."""
    merged = merge_priors(priors, DEFAULT_PRIORS, "judge")
    out = validate_logit_normal_priors({k: merged[k] for k in LOGIT_NORMAL_PRIORS})
    for name in ("sensitivity", "specificity"):
        mean, sd = merged[name]
        if not (np.isfinite(mean) and np.isfinite(sd) and sd > 0):
            raise ValueError(
                f"prior {name} is a logit-scale Normal (mean, sd) with a finite mean and a "
                f"positive sd; got {merged[name]!r}"
            )
        out[name] = (float(mean), float(sd))
    if not (np.isfinite(merged["sigma_judge"]) and merged["sigma_judge"] > 0):
        raise ValueError(
            f"prior sigma_judge is a HalfNormal scale > 0; got {merged['sigma_judge']!r}"
        )
    out["sigma_judge"] = float(merged["sigma_judge"])
    return out


def judge_cells(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Each of :data:`CELL_VARS` of the (one) judge, ``(system, task)``, summed over strata."""
    return {
        name: ds[name]
        .isel(judge=0)
        .sum("label_stratum")
        .transpose("system", "task")
        .values.astype(np.int64)
        for name in CELL_VARS
    }


def attempts(ds: xr.Dataset) -> np.ndarray:
    """Every attempt with a verdict (labelled or not) per cell, ``(system, task)``."""
    cells = judge_cells(ds)
    return np.sum([cells[name] for name in CELL_VARS], axis=0)


def judge_log_likelihood(cells: dict, logit_p, logit_se, logit_sp, xp=np):
    """Each cell's log-likelihood, the unlabelled true outcomes summed out.

    ``cells`` holds :data:`CELL_VARS`; ``logit_p`` is ``(system, task)`` and ``logit_se``,
    ``logit_sp`` are ``(system,)`` or ``(system, task)``; ``xp`` is NumPy or PyTensor's tensor
    module. Returns the ``(system, task)`` log-likelihoods, without the multinomial
    coefficients.
    """
    softplus: Callable
    logaddexp: Callable
    if xp is np:
        softplus, logaddexp = (lambda x: np.logaddexp(0.0, x)), np.logaddexp
    else:
        softplus, logaddexp = pt.softplus, pt.logaddexp
    log_p, log_not_p = -softplus(-logit_p), -softplus(logit_p)
    # per system (S,) or per cell (S, J)
    se = logit_se[:, None] if logit_se.ndim == 1 else logit_se
    sp = logit_sp[:, None] if logit_sp.ndim == 1 else logit_sp
    log_se, log_not_se = -softplus(-se), -softplus(se)
    log_sp, log_not_sp = -softplus(-sp), -softplus(sp)
    n11, n10, n01, n00 = (cells[k] for k in CELL_VARS[:4])
    u1, u0 = cells["judge_u1"], cells["judge_u0"]
    labelled = (
        (n11 + n01) * log_p
        + (n10 + n00) * log_not_p
        + n11 * log_se
        + n01 * log_not_se
        + n10 * log_not_sp
        + n00 * log_sp
    )
    log_q = logaddexp(log_se + log_p, log_not_sp + log_not_p)  # P(verdict 1)
    log_not_q = logaddexp(log_not_se + log_p, log_sp + log_not_p)
    return labelled + u1 * log_q + u0 * log_not_q


def build_judge_model(data, priors=None, *, collapsed: bool = False) -> pm.Model:
    """The judge-aware model as a PyMC model (non-centred effects).

    The counts enter as ``pm.Data`` (:data:`CELL_VARS`), so one compiled model serves every
    data set of the same structure. With ``collapsed`` (systems on shared tasks), the
    task-by-system effects are integrated out of each cell
    (:class:`~bayeval.models.kernels.judge.JudgedCells`) instead of sampled.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> from bayeval.models.judge import build_judge_model
    >>> df = pd.DataFrame({"system": ["A"] * 4 + ["B"] * 4, "task": list("abab") * 2,
    ...                    "judge": [1, 0, 1, 1, 0, 1, 1, 0],
    ...                    "human": [1, None, 1, None, 0, None, None, 0]})
    >>> data = be.from_frame(df, judge="judge", success="human", label_design="random")
    >>> sorted(build_judge_model(data).named_vars_to_dims["sensitivity"])
    ['system']
    """
    priors = validate_priors(priors)
    ds = data.dataset
    layout = Layout.from_dataset(ds)
    judges = [str(j) for j in ds["judge"].values.tolist()]
    several = len(judges) > 1
    if several and collapsed and int(attempts(ds).max(initial=0)) > 1:
        raise ValueError(
            "the collapsed form of several judges integrates cells of one attempt; these data "
            "have cells of more: fit them with every effect latent (collapsed=False)"
        )
    coords = {"system": ds["system"].values.tolist(), "task": ds["task"].values.tolist()}
    alpha_dims: tuple[str, ...] = ("system",)
    if layout.pops.strata is not None:
        coords["stratum"] = layout.pops.strata
        alpha_dims = ("system", "stratum")
    if layout.has_clusters:
        coords["cluster"] = layout.cluster_labels
    if several:
        coords["judge"] = judges
        coords["verdicts"] = ds["verdicts"].values.tolist()
        coords["judge_pair"] = judge_pairs(judges)
    S = layout.n_systems
    with pm.Model(coords=coords) as model:
        if several and not (collapsed and layout.paired):
            patterns = pm.Data(PATTERN_VAR, pattern_cells(ds))
        elif not several:
            cells = {
                name: pm.Data(name, values, dims=("system", "task"))
                for name, values in judge_cells(ds).items()
            }
        sigma_task = pm.HalfNormal("sigma_task", priors["sigma_task"])
        identified, zero_sum = _intercepts_and_cluster_effects(priors, layout, alpha_dims, S)
        logit_p = identified[:, layout.pops.code] + zero_sum[:, layout.cluster]  # (S, J)
        z_e = pm.Normal("task_effect_z", 0.0, 1.0, dims="task")
        logit_p = logit_p + pm.Deterministic("task_effect", sigma_task * z_e, dims="task")[None]
        sigma_v = None
        if layout.paired:
            sigma_v = pm.HalfNormal("sigma_task_system", priors["sigma_task_system"])
        if layout.paired and not collapsed:
            z_v = pm.Normal("task_system_effect_z", 0.0, 1.0, dims=("system", "task"))
            logit_p = logit_p + pm.Deterministic(
                "task_system_effect", sigma_v * z_v, dims=("system", "task")
            )
        if several:
            log_pattern = pattern_probabilities(ds, priors, S)
            log_a, log_b = log_pattern[1].T, log_pattern[0].T
            if collapsed and sigma_v is not None:
                # each one-attempt cell as one judge's cell (one_attempt_cells), integrated
                # by the compiled cell kernel
                counts, cell_pattern = one_attempt_cells(ds)
                pattern = pm.Data("judge_cell_pattern", cell_pattern)
                log_a_cell = log_pattern[1][pt.arange(S)[:, None], pattern]  # (S, J)
                log_b_cell = log_pattern[0][pt.arange(S)[:, None], pattern]
                outputs = JudgedCells()(
                    logit_p,
                    sigma_v,
                    log_a_cell - pt.log1mexp(log_a_cell),  # logit se = logit A
                    pt.log1mexp(log_b_cell) - log_b_cell,  # logit sp = logit (1 - B)
                    pm.Data("judge_cells_one_attempt", counts),
                )
                assert isinstance(outputs, list)  # the Op has five outputs
                total = outputs[0]
            else:
                total = patterns_log_likelihood(patterns, logit_p, log_a, log_b, xp=pt).sum()
            pm.Potential("judged", total)
            return model
        logits = {}
        for name in ("sensitivity", "specificity"):
            mean, sd = priors[name]
            mu = pm.Normal(f"judge_mu_{name}", mean, sd)
            sigma = pm.HalfNormal(f"judge_sigma_{name}", priors["sigma_judge"])
            z = pm.Normal(f"judge_{name}_z", 0.0, 1.0, dims="system")
            logits[name] = mu + sigma * z
            pm.Deterministic(name, pm.math.sigmoid(logits[name]), dims="system")
            # the judge may err on a task for every system (a reference answer it misreads)
            tau = pm.HalfNormal(f"judge_task_sigma_{name}", priors["sigma_judge"])
            x = pm.Normal(f"judge_task_{name}_z", 0.0, 1.0, dims="task")
            logits[name] = logits[name][:, None] + (tau * x)[None, :]
        if collapsed and sigma_v is not None:
            counts = pt.stack([cells[name] for name in CELL_VARS])
            outputs = JudgedCells()(
                logit_p, sigma_v, logits["sensitivity"], logits["specificity"], counts
            )
            assert isinstance(outputs, list)  # the Op has five outputs
            total = outputs[0]
        else:
            total = judge_log_likelihood(
                cells, logit_p, logits["sensitivity"], logits["specificity"], xp=pt
            ).sum()
        pm.Potential("judged", total)
    return model


def model_data(ds: xr.Dataset, form: str = FULL_LATENT) -> dict[str, np.ndarray]:
    """The counts :func:`build_judge_model` takes as ``pm.Data`` in ``form``, by name."""
    if ds.sizes["judge"] > 1:
        if form == COLLAPSED:
            counts, pattern = one_attempt_cells(ds)
            return {"judge_cells_one_attempt": counts, "judge_cell_pattern": pattern}
        return {PATTERN_VAR: pattern_cells(ds)}
    return judge_cells(ds)


def _structure(data, priors, form) -> tuple:
    """What a compiled model is specific to: every array but the counts, the priors, the form."""
    layout = Layout.from_dataset(data.dataset)
    return (
        form,
        data.dataset.sizes["judge"],
        data.dataset.sizes["system"],
        data.dataset.sizes["task"],
        tuple(layout.cluster.tolist()),
        tuple(layout.pops.code.tolist()),
        layout.has_clusters,
        layout.system_level,
        None if layout.recipes is None else tuple(layout.recipes.tolist()),
        tuple(sorted((k, str(v)) for k, v in priors.items())),
    )


def _judge_logits(post) -> Callable:
    """One judge: chain ``c``'s cell logits of the sensitivity and specificity, ``(D, S, J)``."""
    logits = {}
    for name in ("sensitivity", "specificity"):
        system = (
            post[f"judge_mu_{name}"] + post[f"judge_sigma_{name}"] * post[f"judge_{name}_z"]
        ).transpose("chain", "draw", "system")
        task = (post[f"judge_task_sigma_{name}"] * post[f"judge_task_{name}_z"]).transpose(
            "chain", "draw", "task"
        )
        logits[name] = (system.values, task.values)

    def of_chain(c):
        return tuple(
            logits[name][0][c][:, :, None] + logits[name][1][c][:, None, :]
            for name in ("sensitivity", "specificity")
        )

    return of_chain


class JudgeRates(LogitNormalRates):
    """The judge-aware model: NUTS on the PyMC model, collapsed where it can be; true outcomes.

    Examples
    --------
    >>> from bayeval.models import get_model
    >>> get_model("judge").engine("auto"), get_model("judge").paired
    ('nutpie', True)
    """

    name = "judge"
    engines = {"auto": "nutpie", "nutpie": "nutpie", "pymc": "pymc"}
    crossed_bounds_refit = False
    posterior_vars = (
        "alpha",
        "sigma_task",
        "sigma_task_system",
        "sigma_cluster",
        "sigma_cluster_system",
        "sigma_system",
        "sigma_run",
        "sensitivity",
        "specificity",
    )
    task_draws_auto = False  # read from the kept task effects, on demand

    # -- fitting -------------------------------------------------------------------------------
    def supports(self, data) -> str | None:
        """Judged data (one judge or several), without missing-outcome bounds."""
        judges = getattr(data, "judges", [])
        if not judges:
            return (
                "model 'judge' needs a judge's verdicts beside trusted labels: "
                "from_frame(..., judge=column, success=label column, label_design=...)"
            )
        if "missing_bound" in data.dataset["trials"].dims:
            return "model 'judge' does not take missing='bounds': choose missing='fail'"
        return super().supports(data)

    def validate_priors(self, priors) -> dict:
        """:func:`validate_priors`: defaults filled in, checked."""
        return validate_priors(priors)

    def one_trial(self, data) -> bool:
        """The one-trial rule of the prior, counting every judged attempt.

        A judged data set's ``trials`` count its labelled attempts; the true outcome of every
        judged attempt enters the likelihood, so a cell's replication is its judged attempts
        (three judged attempts, one labelled, is not one trial).

        Examples
        --------
        >>> import numpy as np, pandas as pd, bayeval as be
        >>> from bayeval.models.judge import JudgeRates
        >>> df = pd.DataFrame({"system": np.repeat(["A", "B"], 12),
        ...                    "task": np.tile(np.repeat(np.arange(4), 3), 2),
        ...                    "verdict": np.tile([1, 0, 1], 8),
        ...                    "human": np.tile([1.0, np.nan, np.nan], 8)})
        >>> data = be.from_frame(df, judge="verdict", success="human", label_design="random")
        >>> JudgeRates().data_priors(data, None)  # three judged attempts a cell
        (None, '')
        >>> one = be.from_frame(df.drop_duplicates(["system", "task"]), judge="verdict",
        ...                     success="human", label_design="random")
        >>> JudgeRates().data_priors(one, None)[0]  # one judged attempt a cell
        {'sigma_task_system': 0.5}
        """
        ds = data.dataset
        judged = attempts(ds)  # every judge sees every attempt: count one judge's
        judged = judged[judged > 0]
        return ds.sizes["system"] >= 2 and judged.size > 0 and float(np.median(judged)) <= 1

    def build(self, data, priors=None, **options) -> pm.Model:
        """:func:`build_judge_model`."""
        return build_judge_model(data, priors)

    def default_tune(self, form: str | None = None) -> int:
        """:data:`COLLAPSED_TUNE` for the collapsed form, else 1000.

        Examples
        --------
        >>> from bayeval.models.judge import JudgeRates
        >>> JudgeRates().default_tune("collapsed"), JudgeRates().default_tune("full-latent")
        (300, 1000)
        """
        return COLLAPSED_TUNE if form == COLLAPSED else base.DEFAULT_TUNE

    @staticmethod
    def target_accept(form: str, judges: int = 1) -> float:
        """NUTS's target acceptance for ``form`` and that many judges.

        Collapsed: :data:`COLLAPSED_TARGET_ACCEPT` with one judge,
        :data:`SEVERAL_JUDGES_TARGET_ACCEPT` with several; full-latent: :data:`TARGET_ACCEPT`.

        Examples
        --------
        >>> from bayeval.models.judge import JudgeRates
        >>> JudgeRates.target_accept("collapsed"), JudgeRates.target_accept("collapsed", 2)
        (0.9, 0.85)
        >>> JudgeRates.target_accept("full-latent", 2)
        0.9
        """
        if form != COLLAPSED:
            return TARGET_ACCEPT
        return COLLAPSED_TARGET_ACCEPT if judges == 1 else SEVERAL_JUDGES_TARGET_ACCEPT

    def default_draws(self, form: str | None = None) -> int:
        """:data:`~bayeval.models.base.DEFAULT_DRAWS`, where its coverage was measured."""
        return base.DEFAULT_DRAWS

    def sampling_form(self, data, sampler: str = "auto") -> tuple[str, str]:
        """Collapsed for systems on shared tasks with cells of at most 30 attempts (one judge).

        The task-by-system effects are then integrated out of each cell
        (:mod:`bayeval.models.kernels.judge`) and drawn after the fit from their conditionals;
        otherwise every effect is latent. One system has no such effect. Several judges are
        collapsed at one attempt a cell
        (:func:`~bayeval.models.judge_patterns.one_attempt_cells`), and fitted full-latent
        otherwise.

        Examples
        --------
        >>> import pandas as pd, bayeval as be
        >>> from bayeval.models.judge import JudgeRates
        >>> df = pd.DataFrame({"system": ["A"] * 4 + ["B"] * 4, "task": list("abab") * 2,
        ...                    "judge": [1, 0, 1, 1, 0, 1, 1, 0],
        ...                    "human": [1, None, 1, None, 0, None, None, 0]})
        >>> data = be.from_frame(df, judge="judge", success="human", label_design="random")
        >>> JudgeRates().sampling_form(data)[0]
        'collapsed'
        """
        if not Layout.from_dataset(data.dataset).paired:
            return FULL_LATENT, "one system: no task-by-system effect to integrate out"
        if data.dataset.sizes["judge"] > 1:
            if int(attempts(data.dataset).max(initial=0)) > 1:
                return FULL_LATENT, (
                    "several judges on cells of more than one attempt: the collapsed form "
                    "integrates cells of one"
                )
            return COLLAPSED, (
                "several judges, one attempt a cell: task-by-system effects integrated out "
                "of each cell (its likelihood is linear in the rate) and drawn after the fit"
            )
        largest = int(attempts(data.dataset).max(initial=0))
        if largest > judge_kernel.MAX_ATTEMPTS:
            return FULL_LATENT, (
                f"a cell holds {largest} judged attempts, more than the "
                f"{judge_kernel.MAX_ATTEMPTS} the collapsed form's rule is checked for"
            )
        return COLLAPSED, (
            "task-by-system effects integrated out of each cell and drawn after the fit"
        )

    def sample(
        self,
        data,
        *,
        sampler="auto",
        draws=1000,
        chains=4,
        tune=None,
        seed=0,
        priors=None,
        progress=False,
    ) -> xr.DataTree:
        """NUTS on :func:`build_judge_model`; the task effects kept in ``task_effects``."""
        engine = self.engine(sampler)
        priors = validate_priors(priors)
        cores = min(chains, 2)
        form, form_choice = self.sampling_form(data, sampler)
        collapsed = form == COLLAPSED
        tune = self.default_tune(form) if tune is None else tune
        target_accept = self.target_accept(form, data.dataset.sizes["judge"])
        if engine == "nutpie":
            from bayeval.models.kernels import nutpie_model  # deferred: it imports nutpie

            compiled = _compiled.get(
                _structure(data, priors, form),
                lambda: build_judge_model(data, priors, collapsed=collapsed),
                lambda: model_data(data.dataset, form),
            )
            trace = nutpie_model.sample_trace(
                compiled,
                draws=draws,
                tune=tune,
                chains=chains,
                cores=cores,
                seed=seed,
                progress=progress,
                target_accept=target_accept,
                **NUTPIE_OPTIONS,
            )
        else:
            trace = base.pymc_nuts(
                build_judge_model(data, priors, collapsed=collapsed),
                engine=engine,
                draws=draws,
                tune=tune,
                chains=chains,
                seed=seed,
                progress=progress,
                cores=cores,
                target_accept=target_accept,
            )
        post = trace["posterior"].to_dataset()
        post = post.assign_coords(chain=np.arange(chains), draw=np.arange(draws))
        kept = [v for v in (*self.posterior_vars, *JUDGE_POSTERIOR_VARS[2:]) if v in post.data_vars]
        for name in ("cluster_effect", "cluster_system_effect"):
            if name in post.data_vars:
                kept.append(name)
        effects = post[[v for v in ("task_effect", "task_system_effect") if v in post]]
        stats = base.kept_stats(trace).assign_coords(chain=np.arange(chains), draw=np.arange(draws))
        stats = stats.assign(diverging=stats["diverging"].astype(np.int8))
        attrs = {
            "tune": tune,
            "form": form,
            "form_choice": form_choice,
            "target_accept": target_accept,
            "task_effects": "drawn from their conditionals" if collapsed else "non-centred",
            "judge": ", ".join(str(j) for j in data.judges),
        }
        groups = {"posterior": post[kept], "sample_stats": stats, "task_effects": effects}
        if collapsed:
            groups["task_effects"] = effects.assign(
                task_system_effect=self._draw_task_system_effects(
                    xr.DataTree.from_dict(
                        {
                            "posterior": groups["posterior"],
                            "task_effects": effects,
                            "observed_data": data.dataset,
                        }
                    ),
                    post,
                    data,
                    seed,
                )
            )
        return base.sampled(groups, attrs)

    def _draw_task_system_effects(self, tree, post, data, seed) -> xr.DataArray:
        """Each cell's ``v`` drawn from its conditional given a draw's other parameters.

        Exact draws (:func:`bayeval.models.kernels.judge.draw_effects`), chain by chain
        (:data:`DRAW_THREADS` at once), each chain from its own stream of the fit's seed.
        """
        eta = self.task_logits(tree)  # without v: the tree holds no task_system_effect yet
        n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
        S, J = eta.shape[1:]
        eta = eta.reshape(n_chain, n_draw, S, J)
        sigma = post["sigma_task_system"].transpose("chain", "draw").values
        if data.dataset.sizes["judge"] > 1:
            counts, judge_logits = one_attempt_logits(post, data.dataset)
        else:
            counts = np.stack([judge_cells(data.dataset)[name] for name in CELL_VARS])
            judge_logits = _judge_logits(post)
        out = np.empty((n_chain, n_draw, S, J))
        # a stream apart from the sampler's, which the same seed drives
        entropy = None if seed is None else [int(seed), _DRAWS_STREAM]
        streams = np.random.SeedSequence(entropy).spawn(n_chain)

        def draw_chain(c):
            lse, lsp = judge_logits(c)
            out[c], _ = judge_kernel.draw_effects(
                np.random.default_rng(streams[c]),
                np.ascontiguousarray(eta[c]),
                np.ascontiguousarray(sigma[c]),
                np.ascontiguousarray(lse),
                np.ascontiguousarray(lsp),
                counts,
            )

        # the compiled draws release the GIL: chains in parallel, each on its own stream, so
        # the draws do not depend on the order the threads run in
        with ThreadPoolExecutor(max_workers=min(n_chain, DRAW_THREADS)) as pool:
            list(pool.map(draw_chain, range(n_chain)))
        return xr.DataArray(
            out,
            dims=("chain", "draw", "system", "task"),
            coords={
                "chain": post["chain"].values,
                "draw": post["draw"].values,
                "system": post["system"].values,
                "task": post["task"].values,
            },
        )

    # -- estimands -----------------------------------------------------------------------------
    def task_logits(self, tree) -> np.ndarray:
        """Each cell's logit of the true rate per draw, ``(draw, system, task)``."""
        prm, layout, _, _ = self._params(tree, 0)
        effects = tree["task_effects"].to_dataset()
        D = prm["alpha"].shape[0]
        J = layout.cluster.size
        eta = (
            prm["alpha"][:, :, layout.pops.code]
            + prm["u"][:, layout.cluster][:, None, :]
            + prm["w"][:, :, layout.cluster]
        )
        eta = eta + effects["task_effect"].transpose("chain", "draw", "task").values.reshape(
            D, 1, J
        )
        if "task_system_effect" in effects:
            v = effects["task_system_effect"].transpose("chain", "draw", "system", "task")
            eta = eta + v.values.reshape(D, layout.n_systems, J)
        return eta

    def task_rates(self, tree, systems=None) -> xr.DataArray:
        """Per-cell true rates ``(chain, draw, system, task)``; NaN where no attempt was judged."""
        obs = dataset_of(tree)
        all_systems = obs["system"].values.tolist()
        chosen = all_systems if systems is None else list(systems)
        index = [all_systems.index(s) for s in chosen]
        p = special.expit(self.task_logits(tree))[:, index]
        p = np.where(attempts(obs)[index][None] > 0, p, np.nan)
        post = tree["posterior"]
        n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
        return xr.DataArray(
            p.reshape(n_chain, n_draw, *p.shape[1:]),
            dims=("chain", "draw", "system", "task"),
            coords={
                "chain": post["chain"].values,
                "draw": post["draw"].values,
                "system": np.asarray(chosen, dtype=object),
                "task": obs["task"].values,
            },
            name="p",
        )

    def tasks(self, tree, metric, ks, shared=None, tau=None, systems=None):
        """Draws of the true outcome's ``metric`` over these tasks, ``(chain, draw, system, k)``.

        The mean over each system's tasks (every attempt judged, labelled or not) of the metric
        of its cell's true rate, read from the kept task effects.
        """
        obs = dataset_of(tree)
        n = attempts(obs)
        weight_n = n if shared is None else n * np.asarray(shared, dtype=n.dtype)
        layout = Layout.from_dataset(obs)
        weights = task_weights(weight_n, layout.pops)  # (S, J)
        p = special.expit(self.task_logits(tree))  # (D, S, J)
        values = metric_of_rate(p, metric, np.asarray(ks), tau)  # (D, S, J, K)
        draws = np.clip(np.einsum("dsjk,sj->dsk", values, weights), 0.0, 1.0)
        post = tree["posterior"]
        index = self._system_index(tree, systems)
        return self._wrap([draws], tree, None, ks, post.sizes["chain"], post.sizes["draw"], index)

    def pattern_log_likelihood(self, tree, c, n) -> base.Patterns | None:
        """None: the log-likelihood group of the labels alone would leave the verdicts out."""
        return None

    def log_likelihood_cost(self, tree) -> float:
        """No log-likelihood group is computed (:meth:`pattern_log_likelihood`)."""
        return 0.0
