"""The logit-normal model's compiled log densities: their coordinates, data and sampling.

The collapsed, full-latent and task-latent forms as one kernel of
:mod:`bayeval.models.kernels` (:func:`coordinates`, the kernel's inputs, the cell tables),
sampled by nutpie (:func:`sample_kernel`) and read back into named quantities
(:func:`collapsed_posterior`).
"""

from __future__ import annotations

import collections
import dataclasses
import sys
import threading

import numpy as np
import pymc as pm
import xarray as xr

from bayeval.models._beta_family import counts_by_bound
from bayeval.models.kernels.cells import CELL_TABLE_NODES, CELL_TABLE_TRIALS, cell_tables
from bayeval.models.kernels.cfunctions import nutpie_functions_cached
from bayeval.models.kernels.collapsed import (
    CollapsedLogp,
    Coordinates,
    cluster_pair_map,
    cluster_system_guide,
    reflect,
    task_cluster_fold,
    task_reflections,
)
from bayeval.models.kernels.quadrature import LOW_TRIALS, N_NODES, Rules
from bayeval.models.kernels.tables import _count_grid
from bayeval.models.logit_normal.layout import (
    SIGMAS,
    Layout,
    one_trial,
    task_patterns,
    validate_priors,
)

#: Whether the collapsed form holds its intercepts, cluster effects and their spreads on the
#: scale of the task-level effects' attenuation ``kappa = sqrt(1 + (pi / 8)(sigma_task^2 +
#: sigma_task_system^2))`` (:func:`bayeval.models.kernels.coordinates._attenuation`): the data pin
#: each system's rate near ``expit(alpha / kappa)``, so held plainly the intercepts move with
#: the spreads along a curved ridge, which NUTS crosses slowly: held so they mix better and
#: diverge less (``models/logit_normal.md``, sampling settings).
#: effects are sampled, keeps them plain.
ATTENUATED_INTERCEPTS = True


#: Whether the collapsed form shifts its intercepts by the cluster effects' zero-sum parts'
#: means weighted by the clusters' tasks, the level the data see
#: (:func:`bayeval.models.kernels.coordinates._level_weights`; recorded in
#: ``attrs["intercept_level"]``). Clusters of equal size need no shift; the full-latent form
#: keeps the level unweighted.
WEIGHTED_LEVEL = True


#: Whether the full-latent form samples each cluster's pairs rotated onto the sums the data
#: see (:func:`bayeval.models.kernels.pairs._unpair`: the cluster effect with its tasks' mean
#: effect, the sum centred where the task effects are; each system's cluster-by-system effect
#: with its task-by-system effects' mean, standardised) and the spreads of each pair in polar
#: coordinates (:func:`bayeval.models.kernels.pairs._from_polar`), where its cluster effects are
#: not centred (few tasks a cluster) and, with centred task effects, no stratum spans two
#: clusters. Sampled as they are, the pairs turn with every move of the split and mix slowly
#: on many small clusters (``models/logit_normal.md``, sampling settings).
ROTATED_CLUSTER_PAIRS = True

#: Cells from which the full-latent form integrates them over their task-by-system effects
#: (bicubic tables in ``y`` and ``log sigma_v`` per pair of counts ``(c, n)``, the mirrored
#: ``(n - c, n)`` read at ``-y``: :func:`bayeval.models.kernels.cells.cell_tables`) instead of
#: sampling those effects; the cells of counts without a table (beyond the
#: :data:`CELL_TABLES` most common) keep theirs. Not with the cluster pairs rotated
#: (:data:`ROTATED_CLUSTER_PAIRS`), whose map reads every cell's effect. Integrating every
#: cell cuts the leapfrog steps a draw several-fold on data of many trials a cell
#: (``models/logit_normal.md``, sampling settings).
TABLED_CELLS = 2000
#: At most this many tables (one per pair of counts, the most common first): each costs memory
#: and build time (``models/logit_normal.md``, sampling settings), so they are kept for later fits
#: (:data:`TABLE_CACHE`).
CELL_TABLES = 12
#: Tables kept in this process for later fits (by counts).
TABLE_CACHE = 16
_tables: collections.OrderedDict = collections.OrderedDict()
_tables_lock = threading.Lock()  # fits in several threads share the kept tables


def coordinates(layout: Layout, latent_tasks: int = 0) -> Coordinates:
    """The collapsed model's parameter coordinates for a layout.

    With ``latent_tasks`` = J, those of the compiled full-latent form, or with
    ``layout.cells_integrated`` of the task-latent form: attenuated and task-weighted like the
    collapsed form, the task effects centred, the cluster-by-system effects non-centred.
    """
    G = layout.n_clusters
    blocks = () if layout.recipes is None else tuple(layout.recipes.tolist())
    integrated = layout.cells_integrated and latent_tasks > 0 and layout.paired
    like_collapsed = latent_tasks == 0 or integrated
    weights = ()
    share = np.bincount(layout.cluster, minlength=G) / len(layout.cluster)
    if WEIGHTED_LEVEL and like_collapsed and np.ptp(share) > 0:  # equal shares: no shift
        weights = tuple(share.tolist())
    task_centred = layout.task_centred and latent_tasks > 0
    rank = 0
    if task_centred:
        rank = int(task_reflections(layout.cluster, layout.pops.code)[0])
    fold = folds_clusters(layout) and latent_tasks > 0
    pairs = (
        ROTATED_CLUSTER_PAIRS
        and latent_tasks > 0
        and layout.has_clusters
        and not fold
        and not integrated
        and not layout.cluster_centred
        and (rank == G or not task_centred)
    )
    return Coordinates(
        layout.n_systems,
        layout.pops.n,
        G,
        layout.has_clusters,
        layout.paired,
        layout.system_level,
        blocks,
        latent_tasks,
        layout.cluster_centred,
        not integrated,
        task_centred,
        fold,
        ATTENUATED_INTERCEPTS and like_collapsed,
        weights,
        integrated,
        rank,
        pairs,
    )


def folds_clusters(layout: Layout) -> bool:
    """Whether the full-latent form folds the task effects' cluster components into clusters.

    Into the cluster coordinates: where both are centred, with two or more clusters
    (:func:`bayeval.models.kernels.collapsed.task_cluster_fold`).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import Layout, folds_clusters
    >>> data = be.from_counts([[30, 5] * 20, [12, 24] * 20], trials=40,
    ...                       clusters=["a", "b"] * 20)
    >>> folds_clusters(Layout.from_dataset(data.dataset))  # 800 trials a cluster, 80 a task
    True
    """
    return bool(layout.task_centred and layout.cluster_centred and layout.n_clusters > 1)


def _task_constants(layout: Layout, fold: bool) -> tuple[np.ndarray, np.ndarray]:
    """The centred task effects' reflections (:func:`task_reflections`) and the fold map.

    With ``fold``, the map of their cluster components into the cluster coordinates
    (:func:`task_cluster_fold`); an empty ``(0, 0)`` array without.
    """
    reflections = task_reflections(layout.cluster, layout.pops.code)
    fold_map = (
        task_cluster_fold(layout.cluster, layout.pops.code, reflections)
        if fold
        else np.zeros((0, 0))
    )
    return reflections, fold_map


#: The names of the compiled kernel's data (``pm.Data`` in a PyMC model of either form).
COLLAPSED_DATA = ("spec", "const", "index", "c", "n", "mult")


def _collapsed_inputs(c, n, layout: Layout, priors: dict, n_nodes: int) -> tuple[Coordinates, dict]:
    """The collapsed form's coordinates and data (:data:`COLLAPSED_DATA`).

    The layout of ``theta``, the priors and the count patterns.
    """
    coord = coordinates(layout)
    rules = Rules(n_nodes)
    pat = task_patterns(c, n, layout)
    index = np.ascontiguousarray(np.stack([pat.cluster, pat.stratum]).astype(np.int64))
    values = (
        coord.spec(rules),
        coord.constants(priors, rules),
        index,
        np.ascontiguousarray(pat.c),
        np.ascontiguousarray(pat.n),
        pat.mult.astype(float),
    )
    return coord, dict(zip(COLLAPSED_DATA, values, strict=True))


def _latent_inputs(c, n, layout: Layout, priors: dict, n_nodes: int) -> tuple[Coordinates, dict]:
    """The compiled full-latent form's coordinates and data (:data:`COLLAPSED_DATA`).

    The collapsed model's kernel with the tasks as its patterns, one each in task order, and their
    effects at the end of ``theta`` (:func:`bayeval.models.kernels.cells._latent_cells`).
    """
    S, J = c.shape
    coord = coordinates(layout, latent_tasks=J)
    if coord.cells_integrated and np.max(n) > LOW_TRIALS:  # its tables hold low counts only
        raise ValueError(
            f"the task-latent form takes at most {LOW_TRIALS} trials a cell; "
            f"these data have up to {int(np.max(n))}"
        )
    if coord.cells_integrated:
        _count_grid(c)  # its tables hold counts on the grid only (a ValueError off it)
    rules = Rules(n_nodes)
    index = np.ascontiguousarray(np.stack([layout.cluster, layout.pops.code]).astype(np.int64))
    extra = np.zeros(0)
    fold_map = np.zeros((0, 0))
    if coord.task_centred:
        reflections, fold_map = _task_constants(layout, coord.task_fold)
        extra = np.concatenate([reflections, fold_map.ravel()])
        if coord.cluster_pairs:  # chosen only where the reflections span the clusters
            pair_map = cluster_pair_map(layout.cluster, reflections)
            if pair_map is None:
                raise RuntimeError(
                    "cluster pairs need task reflections that span the clusters alone"
                )
            extra = np.concatenate([extra, pair_map.ravel()])
    guided = 0
    if guides_task_means(coord):  # the eigenbasis of F'F, F the fold map
        eigenvalues, eigenvectors = np.linalg.eigh(fold_map.T @ fold_map)
        extra = np.concatenate([extra, eigenvectors.ravel(), np.maximum(eigenvalues, 0.0)])
        guided += 2
    if guides_cluster_system(coord):
        extra = np.concatenate(
            [
                extra,
                cluster_system_guide(c, n, layout.cluster, layout.pops.code, coord.level_weights),
            ]
        )
        guided += 1
    coord = dataclasses.replace(coord, guided=guided)
    tabled = _tabled_cells(c, n, coord)
    if tabled is not None:
        cells, counts = tabled
        coord = dataclasses.replace(
            coord,
            cell_tables=tuple(map(tuple, counts.tolist())),
            sampled_cells=int(((n > 0) & ~cells).sum()),
        )
        tables = _cell_table_stack(counts)
        extra = np.concatenate([extra, tables.ravel(), counts.ravel(), [len(counts)]])
    const = coord.constants(priors, rules, extra)
    values = (
        coord.spec(rules),
        const,
        index,
        np.ascontiguousarray(c.T, dtype=float),
        np.ascontiguousarray(n.T, dtype=float),
        np.ones(J),
    )
    return coord, dict(zip(COLLAPSED_DATA, values, strict=True))


#: Whether the task-latent form samples its cluster-by-system coordinates guided by the
#: data's score and information at zero effects (:func:`bayeval.models.kernels.guide._unguide`,
#: :func:`bayeval.models.kernels.collapsed.cluster_system_guide`).
GUIDED_CLUSTER_SYSTEM = True


def guides_cluster_system(coord) -> bool:
    """Whether the form of ``coord`` holds its cluster-by-system coordinates guided.

    See :data:`GUIDED_CLUSTER_SYSTEM`: the task-latent form, with clusters and several systems.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import Layout, coordinates, guides_cluster_system
    >>> ds = be.datasets.load("swebench_verified").dataset
    >>> guides_cluster_system(coordinates(Layout.from_dataset(ds, "task-latent"), 500))
    True
    >>> guides_cluster_system(coordinates(Layout.from_dataset(ds)))  # the collapsed form
    False
    """
    return bool(
        GUIDED_CLUSTER_SYSTEM
        and coord.cells_integrated
        and coord.clusters
        and coord.paired
        and coord.G > 1
        and not coord.w_centred
    )


#: Whether the task-latent form samples its task effects' cluster means guided by their
#: conditional given the folded cluster coordinates and the spreads
#: (:func:`bayeval.models.kernels.guide._unguide`).
GUIDED_TASK_MEANS = True


def guides_task_means(coord) -> bool:
    """Whether the form of ``coord`` holds its task effects' cluster means guided.

    See :data:`GUIDED_TASK_MEANS`: the task-latent form, its cluster components folded.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import Layout, coordinates, guides_task_means
    >>> ds = be.datasets.load("swebench_verified").dataset
    >>> guides_task_means(coordinates(Layout.from_dataset(ds, "task-latent"), 500))
    True
    """
    return bool(GUIDED_TASK_MEANS and coord.cells_integrated and coord.task_fold and coord.G > 1)


def _tabled_cells(c, n, coord) -> tuple[np.ndarray, np.ndarray] | None:
    """The cells ``(S, J)`` the full-latent form integrates, and their tables' counts ``(T, 2)``.

    The cells are integrated over their task-by-system effects; the tables' rows are ``(c, n)`` with
    ``c <= n - c`` (the :data:`CELL_TABLES` most common of at most ``CELL_TABLE_TRIALS`` trials,
    ties to the fewer trials; at least :data:`TABLED_CELLS` cells), or None where it samples every
    cell's.
    """
    if not coord.paired or coord.cells_integrated or coord.cluster_pairs:
        return None
    run = (n > 0) & (n <= CELL_TABLE_TRIALS)
    low = np.minimum(c, n - c)
    pairs, size = np.unique(np.stack([low[run], n[run]], axis=1), axis=0, return_counts=True)
    order = np.lexsort((pairs[:, 1], pairs[:, 0], -size))[:CELL_TABLES]
    counts = pairs[np.sort(order)].astype(float)
    base = np.max(n) + 1  # a pair's code: c base + n
    cells = run & np.isin(low * base + n, counts[:, 0] * base + counts[:, 1])
    if cells.sum() < TABLED_CELLS:
        return None
    return cells, counts


def _cell_table_stack(counts) -> np.ndarray:
    """The tables of ``counts (T, 2)``, those built earlier in this process taken from a cache.

    Built by :func:`bayeval.models.kernels.cells.cell_tables`, by the rule of ``CELL_TABLE_NODES``;
    those built for an earlier fit in this process are taken from :data:`TABLE_CACHE`.
    """
    keys = [(float(cq), float(nq)) for cq, nq in counts]
    with _tables_lock:
        missing = [i for i, key in enumerate(keys) if key not in _tables]
        if missing:
            rule = Rules(CELL_TABLE_NODES)
            built = cell_tables(np.ascontiguousarray(counts[missing]), rule.x, rule.logw)
            for i, table in zip(missing, built, strict=True):
                _tables[keys[i]] = table
        stack = np.stack([_tables[key] for key in keys])
        for key in keys:
            _tables.move_to_end(key)
        while len(_tables) > max(TABLE_CACHE, len(keys)):
            _tables.popitem(last=False)
    return stack


def integrates_cells(ds: xr.Dataset) -> bool:
    """Whether the full-latent form integrates cells of ``ds`` over their task-by-system effects.

    Cells of either missing-outcome bound (:data:`TABLED_CELLS`).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import integrates_cells
    >>> integrates_cells(be.datasets.load("livecodebench").dataset)  # 18,000 cells
    True
    >>> integrates_cells(be.datasets.load("terminal_bench", missing="fail").dataset)
    False
    """
    c, n, _ = counts_by_bound(ds)
    coord = coordinates(Layout.from_dataset(ds), latent_tasks=ds.sizes["task"])
    return any(_tabled_cells(cb, nb, coord) is not None for cb, nb in zip(c, n, strict=True))


def _kernel_model(coord, values: dict, coords: dict):
    """A PyMC model of one flat vector ``theta`` and one potential, the compiled kernel.

    The kernel is that of :mod:`bayeval.models.kernels.collapsed`, with the kernel's data as
    ``pm.Data``: for its log density, checks and PyMC's own samplers (``fit`` samples it with
    :func:`sample_kernel`).
    """
    with pm.Model(coords=coords) as model:
        inputs = [pm.Data(name, value) for name, value in values.items()]
        theta = pm.Flat("theta", shape=coord.size)
        logp = CollapsedLogp().make_node(theta, *inputs).outputs[0]  # the log density
        pm.Potential("log_density", logp)
    return model


def _collapsed_model(c, n, layout: Layout, priors: dict, coords: dict, n_nodes: int):
    """The collapsed form as a PyMC model (:func:`_kernel_model`)."""
    return _kernel_model(*_collapsed_inputs(c, n, layout, priors, n_nodes), coords)


def _latent_kernel_model(c, n, layout: Layout, priors: dict, coords: dict, n_nodes: int):
    """The compiled full-latent form as a PyMC model (:func:`_kernel_model`)."""
    return _kernel_model(*_latent_inputs(c, n, layout, priors, n_nodes), coords)


#: The forms whose fits sample the task effects (and keep them per draw).
LATENT_FORMS = ("full-latent", "task-latent")
#: What a full-latent fit keeps per draw (not its task-by-system effects).
LATENT_KEPT = ("hyper", "task_effect")
#: NUTS target acceptance where the variance components' funnels make divergences: the
#: full-latent form, the task-latent form, and the collapsed form on fewer than
#: :data:`FEW_TASKS` tasks or with one trial per cell. At 0.9 these diverged less than at
#: nutpie's default 0.8 in about the same time, while on larger data with several trials 0.9
#: cost ESS, so they keep 0.8 (``models/logit_normal.md``, sampling settings).
TARGET_ACCEPT = 0.9
#: Below this many tasks the collapsed form is sampled at :data:`TARGET_ACCEPT`: a cut between
#: the sizes measured (``models/logit_normal.md``, sampling settings); a fit this small is quick.
FEW_TASKS = 50


def target_accept(form: str, n_tasks: int, *, one_trial: bool = False) -> float:
    """NUTS target acceptance for a fit of ``form`` on ``n_tasks`` tasks.

    :data:`TARGET_ACCEPT` for the latent forms and for the collapsed form on few tasks or on
    one trial per cell (``one_trial``, :func:`~bayeval.models.logit_normal.layout.one_trial`:
    there two systems on 200 tasks diverged in 6 of 8 default fits at 0.8, in none at 0.9),
    else nutpie's default 0.8.

    Examples
    --------
    >>> from bayeval.models.logit_normal import target_accept
    >>> target_accept("collapsed", 500), target_accept("collapsed", 10)
    (0.8, 0.9)
    >>> target_accept("collapsed", 500, one_trial=True), target_accept("full-latent", 400)
    (0.9, 0.9)
    """
    if form in LATENT_FORMS or n_tasks < FEW_TASKS or one_trial:
        return TARGET_ACCEPT
    return 0.8


def sample_kernel(
    data,
    priors: dict,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    progress: bool,
    cores: int,
    form: str = "collapsed",
    missing_bound=None,
    n_nodes: int = N_NODES,
):
    """NUTS (nutpie) on the compiled log density of ``form``; returns nutpie's DataTree.

    Its posterior holds ``theta`` (collapsed) or ``hyper`` (the coordinates
    :func:`collapsed_posterior` reads) and ``task_effect (chain, draw, task)`` (full-latent).

    The kernel is numba's, compiled once per machine (cached on disk), and nutpie calls it as
    a C function from its threads (:mod:`bayeval.models.kernels.nutpie_model`): nothing is built or
    compiled per fit or per process, the chains run on every core, and only
    :data:`LATENT_KEPT` is kept per draw of the full-latent form, whose vector has a
    coordinate per system and task (a PyMC model would keep them all: 1.2 GB over a default
    fit of LiveCodeBench's 45 x 400 x 10). The start is the flat prior's support point, zero,
    jittered by U(-1, 1) per coordinate, as nutpie does for PyMC models.
    """
    from bayeval.models.kernels import nutpie_model  # deferred: it imports nutpie (seconds)

    ds = data.dataset
    c, n, bounds = counts_by_bound(ds)
    index = 0 if bounds is None else bounds.index(missing_bound)
    layout = Layout.from_dataset(ds, form)
    latent = form in LATENT_FORMS
    inputs = _latent_inputs if latent else _collapsed_inputs
    coord, values = inputs(c[index], n[index], layout, priors, n_nodes)
    kept = coord.hyper_size if latent else coord.size
    args = (values, coord.size, kept, c.shape[2] if latent else 0, coord.offsets["sigma_task"][0])
    if progress and not nutpie_functions_cached(latent=latent):
        # compiling takes minutes on a fresh install and is silent: say so, once
        print(
            f"compiling the logit-normal model's {form} kernel (the first fit on this machine; "
            "later fits load it from the disk cache)",
            file=sys.stderr,
            flush=True,
        )
    model = (
        nutpie_model.KernelModel.build(*args)
        if nutpie_model.available()
        else nutpie_model.python_model(*args)
    )
    return nutpie_model.sample_trace(
        model,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        seed=seed,
        progress=progress,
        save_warmup=False,
        target_accept=target_accept(form, ds.sizes["task"], one_trial=one_trial(ds)),
    )


def collapsed_posterior(
    theta: xr.DataArray,
    data,
    priors=None,
    task_effect: xr.DataArray | None = None,
    form: str | None = None,
) -> xr.Dataset:
    """The named quantities (:data:`POSTERIOR_VARS`) from draws of the collapsed ``theta``.

    ``theta`` has dims ``(chain, draw, <parameter>)``; a full-latent fit gives the leading
    coordinates of its vector and its ``task_effect (chain, draw, task)``, from which the
    cluster components its cluster coordinates hold are taken off where they were folded in.
    """
    ds = data.dataset
    layout = Layout.from_dataset(ds, form)
    fold = None
    # the full-latent form's coordinates (its intercepts are not attenuated, its cluster
    # coordinates may hold folded task effects), else the collapsed form's
    coord = coordinates(layout, latent_tasks=0 if task_effect is None else ds.sizes["task"])
    if task_effect is not None and folds_clusters(layout):
        reflections, fold_map = _task_constants(layout, True)
        r = int(reflections[0])
        effects = task_effect.transpose("chain", "draw", ...).values
        # sigma_task z: the first r coordinates of H' e
        fold = reflect(reflections, effects, transpose=True)[..., :r] @ fold_map.T
    values = coord.unpack(
        theta.transpose("chain", "draw", ...).values, validate_priors(priors), fold
    )
    lead = ("chain", "draw")
    out: dict[str, tuple[tuple[str, ...], np.ndarray]] = {
        "alpha": ((*lead, "system", "stratum"), values["alpha"])
    }
    out.update({name: (lead, values[name]) for name in SIGMAS if coord.offsets[name][1]})
    if coord.offsets["sigma_system"][1]:
        out[layout.level_name] = (lead, values["sigma_system"])
    coords = {"system": ds["system"].values}
    if layout.has_clusters:
        coords["cluster"] = np.asarray(layout.cluster_labels, dtype=object)
        out["cluster_effect"] = ((*lead, "cluster"), values["cluster_effect"])
        if layout.paired:
            out["cluster_system_effect"] = (
                (*lead, "system", "cluster"),
                values["cluster_system_effect"],
            )
    post = xr.Dataset(out, coords=coords)
    if layout.pops.strata is None:
        return post.assign(alpha=post["alpha"].isel(stratum=0, drop=True))
    return post.assign_coords(stratum=np.asarray(layout.pops.strata, dtype=object))


POSTERIOR_VARS = (
    ("alpha",) + SIGMAS + ("sigma_system", "sigma_run", "cluster_effect", "cluster_system_effect")
)
