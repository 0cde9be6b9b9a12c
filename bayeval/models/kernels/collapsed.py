"""The collapsed logit-normal model as one compiled log density.

The sampler's parameters form one unconstrained vector ``theta``; a single numba kernel maps
it to the model's quantities, adds their log prior (with the log-Jacobians of the
transforms) and the quadrature log-likelihood of :mod:`bayeval.models.kernels.likelihood`, and
returns the gradient by the chain rule. PyMC sees one ``Flat`` vector and one ``Potential``,
so building a model compiles a handful of graph nodes instead of the ~90 that the same model
written with PyMC distributions needs (whose compilation took longer than sampling;
timed in ``models/logit_normal.md``). The kernel (:func:`bayeval.models.kernels.logp.logp_and_grad`)
is reached through a C symbol (:func:`bayeval.models.kernels.cfunctions.kernel_symbol`) so that the
model's compiled function only holds a call to it.

Coordinates of ``theta`` (present when the data have clusters / several systems)::

    log sigma_task, log sigma_task_system, log sigma_cluster, log sigma_cluster_system,
    m_u, f_u (G - 1), m_w (S), f_w (S, G - 1), log sigma_system, z_alpha (S, H)

with ``u = sigma_cluster (m_u + B f_u)`` and ``w[s] = sigma_cluster_system (m_w[s] + B f_w[s])``
(``B`` an orthonormal basis of the vectors summing to zero over clusters, ``m ~ N(0, 1/G)``,
``f ~ N(0, I)``, so that ``u / sigma_cluster ~ N(0, I_G)``), and ``alpha = mean + R z_alpha -
shift`` with ``shift[s] = sigma_cluster m_u + sigma_cluster_system m_w[s]``, ``R`` orthonormal
(the mean-over-systems and contrast directions) and ``z_alpha ~ N(R' shift, sd)``, which makes
``alpha ~ N(mean, sd)`` whatever the shift. With the system level (three or more systems) the
rotated coordinates have sds ``sqrt(sigma_system^2 + S sd^2)`` (the mean direction) and
``sigma_system`` (the contrasts), which makes ``alpha ~ N(mean, sigma_system^2 I + sd^2 11')``,
the system-population prior with its mean integrated out; non-centred, ``z_alpha`` holds the
contrasts divided by ``sigma_system`` (less ``R' shift``). With training runs the systems are
grouped by recipe and ``R`` is block-diagonal (:func:`block_rotation`): each recipe's runs get
their own mean direction (sd ``sqrt(sigma_run^2 + m sd^2)`` for m runs) and contrasts (sd
``sigma_run``), the same prior per recipe. Why these coordinates: see
:func:`bayeval.models.logit_normal._intercepts_and_cluster_effects`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph import Apply, Op

from bayeval.models.kernels.cfunctions import c_signature, kernel_symbol
from bayeval.models.kernels.coordinates import ATTENUATION
from bayeval.models.kernels.disk_cache import KERNEL_HASH
from bayeval.models.kernels.logp import logp_and_grad
from bayeval.models.kernels.quadrature import Rules


def zero_sum_basis(G: int) -> np.ndarray:
    """Orthonormal basis ``(G, G - 1)`` of the vectors of length G that sum to zero.

    The first ``G - 1`` columns of the reflection ``I - 2 v v' / v'v`` with
    ``v = e_G - 1 / sqrt(G)`` (which maps the last axis onto the mean direction), so the kernel
    applies it in O(G).
    """
    v = -np.full(G, 1.0 / np.sqrt(G))
    v[-1] += 1.0
    reflection = np.eye(G) - 2.0 * np.outer(v, v) / (v @ v) if G > 1 else np.eye(G)
    return np.ascontiguousarray(reflection[:, : G - 1])


def contrast_rotation(S: int) -> np.ndarray:
    """Orthonormal ``(S, S)``: first column the mean over systems, the rest contrasts."""
    rotation = np.linalg.qr(np.column_stack([np.ones(S), np.eye(S)[:, : S - 1]]))[0]
    return rotation * np.sign(rotation[0, 0])


def block_rotation(blocks) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal ``(S, S)`` rotation onto each block's mean and contrast directions.

    With it, the size of the block each column is the mean of (0 for a contrast column).

    ``blocks`` gives each system's block (the recipe its run belongs to); empty: one block.
    Columns run block by block, each block's mean first.
    """
    blocks = np.asarray(blocks, dtype=np.int64)
    S = len(blocks)
    rotation, size = np.zeros((S, S)), np.zeros(S)
    column = 0
    for b in dict.fromkeys(blocks.tolist()):
        members = np.flatnonzero(blocks == b)
        m = len(members)
        rotation[np.ix_(members, np.arange(column, column + m))] = contrast_rotation(m)
        size[column] = m
        column += m
    return rotation, size


def task_reflections(cluster, stratum) -> np.ndarray:
    """The constants of centred full-latent task effects: a rank and Householder vectors.

    The rank ``r`` of the subspace spanned by the tasks' cluster and stratum indicators, then ``r``
    unit Householder vectors ``(r, J)``, flattened.

    The likelihood sees the task effects only through their sums with the intercepts (per
    stratum) and cluster effects, so the effects' components in that subspace (their means
    over each cluster and stratum) are known from the prior alone. ``H = H_1 ... H_r``, the
    product of the reflections ``H_i = I - 2 v_i v_i'``, is orthogonal with that subspace as
    its first ``r`` columns (Householder QR of an orthonormal basis of it):
    :func:`bayeval.models.kernels.coordinates._task_effects` samples those ``r`` coordinates
    non-centred and the other ``J - r`` centred.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.models.kernels.collapsed import task_reflections
    >>> out = task_reflections(np.array([0, 0, 1, 1, 1]), np.zeros(5, dtype=int))
    >>> int(out[0]), out[1:].reshape(2, 5).shape  # two cluster means
    (2, (2, 5))
    """
    cluster, stratum = np.asarray(cluster), np.asarray(stratum)
    J = len(cluster)
    indicators = np.column_stack(
        [np.eye(cluster.max() + 1)[cluster], np.eye(stratum.max() + 1)[stratum]]
    )
    left, values, _ = np.linalg.svd(indicators, full_matrices=False)
    a = left[:, values > values[0] * 1e-10].copy()  # orthonormal basis of the subspace
    r = a.shape[1]
    vectors = np.zeros((r, J))
    for i in range(r):
        x = a[i:, i]
        v = x.copy()
        v[0] += (1.0 if x[0] >= 0 else -1.0) * np.linalg.norm(x)
        v /= np.linalg.norm(v)
        a[i:] -= 2.0 * np.outer(v, v @ a[i:])
        vectors[i, i:] = v
    return np.concatenate([[float(r)], vectors.ravel()])


#: Alternating Newton steps of :func:`additive_logits` (each one over the tasks, then over
#: the intercepts): enough to settle the logits (``models/logit_normal.md``, sampling settings), and
#: the guide built on them need only be near the posterior (:func:`cluster_system_guide`).
ADDITIVE_STEPS = 40


def additive_logits(c, n, stratum) -> tuple[np.ndarray, float]:
    """A quick point estimate of each cell's logit under ``alpha[s, stratum] + e[task]``.

    Intercepts, and task effects normal with a spread estimated along. Returns the rates
    ``expit(logit) (S, J)`` and the task effects' spread, by alternating Newton steps
    (:data:`ADDITIVE_STEPS`); cells without trials weigh nothing. Written here rather than fitted
    with statsmodels: a GLM would need a dense design of a column per system and task and estimates
    no spread for the task effects, and the guide built on this needs only a near value
    (:func:`cluster_system_guide`).

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.models.kernels.collapsed import additive_logits
    >>> c, n = np.array([[1, 0, 1], [1, 1, 0]]), np.ones((2, 3))
    >>> rates, spread = additive_logits(c, n, np.zeros(3, dtype=int))
    >>> rates.shape, bool(np.all((rates > 0) & (rates < 1)))
    ((2, 3), True)
    """
    from scipy.special import expit

    c, n = np.asarray(c, float), np.asarray(n, float)
    strata = np.eye(int(np.max(stratum)) + 1)[np.asarray(stratum)]  # (J, H)
    a = np.zeros((c.shape[0], strata.shape[1]))
    e = np.zeros(c.shape[1])
    spread2 = 1.0
    for _ in range(ADDITIVE_STEPS):
        p = expit(a @ strata.T + e)
        h_e = (n * p * (1.0 - p)).sum(axis=0) + 1.0 / spread2
        e += np.clip(((c - n * p).sum(axis=0) - e / spread2) / h_e, -2.0, 2.0)
        p = expit(a @ strata.T + e)
        # the intercepts under a wide normal (sd 10): finite for a system that never succeeds
        h_a = (n * p * (1.0 - p)) @ strata + 0.01
        a += np.clip(((c - n * p) @ strata - 0.01 * a) / h_a, -2.0, 2.0)
        spread2 = float(np.mean(e * e + 1.0 / h_e))
    return expit(a @ strata.T + e), float(np.sqrt(spread2))


def cluster_system_guide(c, n, cluster, stratum, weights=()) -> np.ndarray:
    """The constants by which the task-latent form guides its cluster-by-system coordinates.

    See :func:`bayeval.models.kernels.guide._unguide`. Per system, the eigenvectors
    ``(S, G - 1, G - 1)`` of the data's information about its zero-sum cluster-by-system
    coordinates, the eigenvalues ``(S, G - 1)`` and the data's score in that basis ``(S, G - 1)``,
    flattened in that order.

    Score and information are those of the binomial cells at zero cluster-by-system effects,
    at the rates of :func:`additive_logits` (the systems' intercepts and the task effects,
    with each cluster's effect in its tasks'), summed per system and cluster, and taken to
    the zero-sum coordinates through the basis of :func:`zero_sum_basis` (less the
    task-weighted level with ``weights``, as the kernel's predictors take it). They need
    only be near the posterior's: any values give the same posterior. On the 25 SWE-bench
    systems, the posterior means of the cluster-by-system effects they predict (``sigma^2 b /
    (1 + sigma^2 I)``, cluster by cluster) correlate 0.99 with a fit's.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.models.kernels.collapsed import cluster_system_guide
    >>> rng = np.random.default_rng(0)
    >>> n = np.ones((3, 40))
    >>> c = (rng.random((3, 40)) < 0.5).astype(float)
    >>> out = cluster_system_guide(c, n, np.repeat([0, 1, 2, 3], 10), np.zeros(40, dtype=int))
    >>> out.shape  # 3 systems x 3 coordinates x (3 + 2)
    (45,)
    """
    c, n = np.asarray(c, float), np.asarray(n, float)
    cluster = np.asarray(cluster)
    G = int(cluster.max()) + 1
    rates, _ = additive_logits(c, n, stratum)
    indicators = np.eye(G)[cluster]  # (J, G)
    score = (c - n * rates) @ indicators  # (S, G)
    info = (n * rates * (1.0 - rates)) @ indicators
    basis = zero_sum_basis(G)
    if len(weights):  # the data see each zero-sum part less its weighted mean
        basis = basis - np.outer(np.ones(G), np.asarray(weights, float) @ basis)
    S = c.shape[0]
    vectors = np.empty((S, G - 1, G - 1))
    values = np.empty((S, G - 1))
    rotated = np.empty((S, G - 1))
    for s in range(S):
        values[s], vectors[s] = np.linalg.eigh(basis.T @ (info[s][:, None] * basis))
        rotated[s] = vectors[s].T @ (basis.T @ score[s])
    return np.concatenate([vectors.ravel(), np.maximum(values, 0.0).ravel(), rotated.ravel()])


def reflect(reflections: np.ndarray, x: np.ndarray, transpose: bool = False) -> np.ndarray:
    """``H x`` (or ``H' x``) along the last axis of ``x``.

    ``H`` is the product of the reflections of :func:`task_reflections`.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.models.kernels.collapsed import reflect, task_reflections
    >>> out = task_reflections(np.array([0, 0, 1, 1, 1]), np.zeros(5, dtype=int))
    >>> x = np.arange(5.0)
    >>> bool(np.allclose(reflect(out, reflect(out, x), transpose=True), x))  # orthogonal
    True
    """
    r = int(reflections[0])
    vectors = reflections[1:].reshape(r, -1)
    out = np.array(x, dtype=float, copy=True)
    for i in range(r) if transpose else reversed(range(r)):
        out -= 2.0 * (out @ vectors[i])[..., None] * vectors[i]
    return out


def cluster_pair_map(cluster, reflections) -> np.ndarray | None:
    """``Q (G, G)``: the task effects' standardised cluster components per task coordinate.

    Per unit of the first ``r`` coordinates of :func:`task_reflections`, or None where those span
    more than the clusters' indicators (strata across clusters).

    Where they span exactly the clusters' indicators, ``H[:, :r] = I_c D^(-1/2) Q`` with ``D``
    the tasks per cluster and ``Q`` orthogonal: cluster g's mean task effect is ``sigma_task
    (Q z)[g] / sqrt(n_g)``. The full-latent form pairs it with the cluster effect and samples
    the pair rotated onto the sum the data see
    (:func:`bayeval.models.kernels.pairs._unpair`).

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.models.kernels.collapsed import cluster_pair_map, task_reflections
    >>> cluster, stratum = np.array([0, 0, 1, 1, 1]), np.zeros(5, dtype=int)
    >>> Q = cluster_pair_map(cluster, task_reflections(cluster, stratum))
    >>> bool(np.allclose(Q @ Q.T, np.eye(2)))
    True
    >>> across = np.array([0, 1, 0, 1, 0])  # strata across the clusters: no such map
    >>> cluster_pair_map(cluster, task_reflections(cluster, across)) is None
    True
    """
    cluster = np.asarray(cluster)
    r, J, G = int(reflections[0]), len(cluster), int(cluster.max()) + 1
    if r != G:
        return None
    basis = reflect(reflections, np.eye(J)[:r])  # rows: H's first r columns
    sizes = np.bincount(cluster, minlength=G)
    return np.ascontiguousarray((np.eye(G)[cluster] / np.sqrt(sizes[cluster])[:, None]).T @ basis.T)


def task_cluster_fold(cluster, stratum, reflections) -> np.ndarray:
    """``(G - 1, r)``: the zero-sum cluster coordinates of the task effects' cluster components.

    Per unit of the ``r`` standardised coordinates of :func:`task_reflections`.

    Those coordinates span the tasks' cluster and stratum indicators, so ``H[:, :r] z =
    I_c a + I_h b`` for cluster and stratum vectors ``a``, ``b`` (least squares, exact); the
    zero-sum part of ``a`` in the basis of :func:`zero_sum_basis` is this map times ``z``.
    Where the cluster effects are centred, the full-latent form folds ``sigma_task`` times it
    into their coordinates: the data pin each cluster's effect plus its tasks' mean effect,
    which the sampler then sees as one coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.models.kernels.collapsed import task_cluster_fold, task_reflections
    >>> cluster, stratum = np.array([0, 0, 1, 1, 1]), np.zeros(5, dtype=int)
    >>> task_cluster_fold(cluster, stratum, task_reflections(cluster, stratum)).shape
    (1, 2)
    """
    cluster, stratum = np.asarray(cluster), np.asarray(stratum)
    r, J = int(reflections[0]), len(cluster)
    basis = reflect(reflections, np.eye(J)[:r])  # rows: H's first r columns
    G = cluster.max() + 1
    indicators = np.column_stack([np.eye(G)[cluster], np.eye(stratum.max() + 1)[stratum]])
    loadings = np.linalg.lstsq(indicators, basis.T, rcond=None)[0][:G]  # (G, r)
    return zero_sum_basis(G).T @ (loadings - loadings.mean(axis=0))


@dataclass(frozen=True)
class Coordinates:
    """Where each parameter sits in ``theta``, and the constants the kernel needs."""

    S: int
    H: int
    G: int  # clusters (1 without clusters)
    clusters: bool
    paired: bool
    system_level: int = 0  # 0: none; 1: centred contrasts; 2: non-centred (see unpack)
    blocks: tuple = ()  # each system's recipe when the systems are runs; () one block
    latent_tasks: int = 0  # J: the full-latent form (task effects sampled, not integrated)
    cluster_centred: bool = False  # the cluster coordinates are the effects (see unpack)
    cluster_system_centred: bool = True  # with cluster_centred: the cluster-by-system ones too
    task_centred: bool = False  # full-latent task effects centred (task_reflections)
    task_fold: bool = False  # their cluster components folded in (task_cluster_fold)
    attenuated: bool = False  # the collapsed form's attenuated coordinates (see plain)
    level_weights: tuple = ()  # the clusters' task shares: the intercepts' level (see unpack)
    cells_integrated: bool = False  # task-latent: the task-by-system effects integrated out
    task_rank: int = 0  # centred task effects: how many lead coordinates stay non-centred
    cluster_pairs: bool = False  # full-latent: cluster pairs rotated (see logit_normal)
    cell_tables: tuple = ()  # full-latent: the counts (c, n) of the integrated cells' tables
    sampled_cells: int = -1  # full-latent with cell_tables: the cells whose effects it samples
    guided: int = 0  # task-latent: 1 cluster-by-system coordinates, 2 task cluster means
    # guided, 3 both (_unguide)

    @property
    def rotation(self) -> tuple[np.ndarray, np.ndarray]:
        """:func:`block_rotation` of the systems' blocks."""
        return block_rotation(self.blocks if self.blocks else np.zeros(self.S, np.int64))

    @property
    def offsets(self) -> dict:
        """Each parameter's ``(start, size)`` in ``theta``; ``"size"`` holds the total."""
        S, H, G = self.S, self.H, self.G
        sizes = [
            ("sigma_task", 1),
            ("sigma_task_system", int(self.paired)),
            ("sigma_cluster", int(self.clusters)),
            ("sigma_cluster_system", int(self.clusters and self.paired)),
            ("m_u", int(self.clusters)),
            ("f_u", (G - 1) * self.clusters),
            ("m_w", S * (self.clusters and self.paired)),
            ("f_w", S * (G - 1) * (self.clusters and self.paired)),
            ("sigma_system", int(self.system_level > 0)),
            ("z_alpha", S * H),
            ("z_e", self.latent_tasks),
            (
                "z_v",
                (S * self.latent_tasks if self.sampled_cells < 0 else self.sampled_cells)
                * (self.paired and not self.cells_integrated),
            ),
        ]
        out, start = {}, 0
        for name, size in sizes:
            out[name] = (start, size)
            start += size
        out["size"] = (start, 0)
        return out

    @property
    def size(self) -> int:
        """The length of ``theta``."""
        return self.offsets["size"][0]

    @property
    def hyper_size(self) -> int:
        """The leading coordinates: everything but the full-latent form's task effects."""
        return self.offsets["z_e"][0]

    def spec(self, rules: Rules) -> np.ndarray:
        """Integer constants of the kernel (int64)."""
        return np.array(
            [
                self.S,
                self.H,
                self.G,
                self.clusters,
                self.paired,
                rules.x.size,
                rules.z.size,
                rules.u.size,
                self.system_level,
                self.latent_tasks,
                self.centring_code,
                (
                    (3 if self.task_centred else 4)
                    if self.cluster_pairs
                    else 2
                    if self.task_fold
                    else int(self.task_centred)
                ),
                self.attenuated,
                bool(self.level_weights),
                self.cells_integrated,
                bool(self.cell_tables),
                int(self.guided),
            ],
            dtype=np.int64,
        )

    @property
    def centring_code(self) -> int:
        """The cluster coordinates' centring as the kernel reads it.

        0 none, 1 the cluster and cluster-by-system effects, 2 the cluster effects only.
        """
        if not self.cluster_centred:
            return 0
        return 1 if self.cluster_system_centred else 2

    @property
    def w_centred(self) -> bool:
        """Whether the cluster-by-system coordinates are the effects themselves."""
        return self.cluster_centred and self.cluster_system_centred

    def constants(self, priors: dict, rules: Rules, extra=()) -> np.ndarray:
        """Float constants of the kernel: priors, rotation, quadrature rules, extra, level weights.

        In that order: ``extra`` is the full-latent form's task reflections, and the level weights
        come last.
        """
        mean, sd = priors["alpha"]
        level = priors["sigma_run"] if self.blocks else priors["sigma_system"]
        head = [
            mean,
            sd,
            priors["sigma_task"],
            priors["sigma_task_system"],
            priors["sigma_cluster"],
            priors["sigma_cluster_system"],
            level,
        ]
        rotation, size = self.rotation
        return np.ascontiguousarray(
            np.concatenate(
                [
                    np.asarray(head, float),
                    rotation.ravel(),
                    size,
                    *rules.arrays(),
                    np.asarray(extra, float).ravel(),
                    np.asarray(self.level_weights, float),
                ]
            )
        )

    def plain(self, theta: np.ndarray) -> np.ndarray:
        """The plain coordinates of draws of ``theta (..., size)`` (or of its leading hyper part).

        The leading part is :attr:`hyper_size`. With ``attenuated``, the intercepts' rotated
        coordinates (but non-centred contrasts) and centred cluster coordinates are held times
        ``kappa = sqrt(1 + (pi / 8)(sigma_task^2 + sigma_task_system^2))``, and the log cluster,
        cluster-by-system and system spreads plus ``log kappa``
        (:func:`bayeval.models.kernels.coordinates._attenuation`). The task-latent form samples the
        task effects, so only the task-by-system spread enters kappa, and its centred task
        coordinates and log task spread are held the same way.
        """
        theta = np.asarray(theta, dtype=float)
        if not self.attenuated:
            return theta
        off = self.offsets
        spread2 = np.zeros(theta.shape[:-1])
        if not self.latent_tasks:
            spread2 = spread2 + np.exp(2.0 * theta[..., off["sigma_task"][0]])
        if self.paired:
            spread2 = spread2 + np.exp(2.0 * theta[..., off["sigma_task_system"][0]])
        kappa = np.sqrt(1.0 + ATTENUATION * spread2)[..., None]
        scaled = np.zeros(self.size, dtype=bool)
        shifted = np.zeros(self.size)
        _, size = self.rotation
        start, H = off["z_alpha"][0], self.H
        for t in range(self.S):
            scaled[start + t * H : start + (t + 1) * H] = size[t] > 0 or self.system_level != 2
        if self.cluster_centred:
            for name in ("f_u", "f_w") if self.w_centred else ("f_u",):
                first, n = off[name]
                scaled[first : first + n] = True
        names: tuple[str, ...] = ("sigma_cluster", "sigma_cluster_system", "sigma_system")
        if self.latent_tasks:
            names = ("sigma_task", *names)
            first, n = off["z_e"]
            scaled[first + self.task_rank : first + n] = True
        for name in names:
            first, n = off[name]
            shifted[first : first + n] = 1.0
        width = theta.shape[-1]
        return np.where(scaled[:width], theta * kappa, theta + shifted[:width] * np.log(kappa))

    def unpack(self, theta: np.ndarray, priors: dict, fold=None) -> dict:
        """The model's quantities from draws of ``theta (..., size)``.

        Returns ``alpha (..., S, H)``, the four spreads ``(...)`` (ones where absent: they
        multiply nothing), ``cluster_effect (..., G)`` and ``cluster_system_effect (..., S, G)``
        (zeros where absent). The cluster coordinates are a mean and a zero-sum part, both
        the effects' standardised values times their spread, or with ``cluster_centred`` the
        zero-sum part the effects' own; with ``task_fold`` that part plus the task effects'
        folded cluster components ``fold (..., G - 1)``, which are taken off. With
        ``level_weights`` the intercepts' coordinates are shifted by the zero-sum parts'
        weighted means (:func:`bayeval.models.kernels.coordinates._level_weights`). Attenuated
        coordinates are first made plain (:meth:`plain`).
        """
        theta = self.plain(theta)
        lead = theta.shape[:-1]
        off = self.offsets
        S, H, G = self.S, self.H, self.G

        def take(name, shape):
            start, size = off[name]
            return theta[..., start : start + size].reshape(lead + shape)

        out = {
            name: (np.exp(take(name, ())) if off[name][1] else np.ones(lead))
            for name in (
                "sigma_task",
                "sigma_task_system",
                "sigma_cluster",
                "sigma_cluster_system",
                "sigma_system",
            )
        }
        mean = priors["alpha"][0]
        basis = zero_sum_basis(G)
        u = np.zeros(lead + (G,))
        w = np.zeros(lead + (S, G))
        shift = np.zeros(lead + (S,))
        if self.clusters:
            a_u = np.ones(lead) if self.cluster_centred else out["sigma_cluster"]
            a_w = np.ones(lead) if self.w_centred else out["sigma_cluster_system"]
            sigma_u, sigma_w = out["sigma_cluster"], out["sigma_cluster_system"]
            m_u = take("m_u", ())
            d_u = take("f_u", (G - 1,)) @ basis.T  # as held: with the fold, if any
            effects_u = d_u if fold is None else d_u - fold @ basis.T
            u = (sigma_u * m_u)[..., None] + a_u[..., None] * effects_u
            shift = shift + (sigma_u * m_u)[..., None]
            d_w = None
            if self.paired:
                m_w = take("m_w", (S,))
                d_w = take("f_w", (S, G - 1)) @ basis.T
                w = (sigma_w[..., None] * m_w)[..., None] + a_w[..., None, None] * d_w
                shift = shift + sigma_w[..., None] * m_w
            if self.level_weights:  # the intercepts shifted by the zero-sum parts' weighted
                # means too (of the coordinates as held)
                pi = np.asarray(self.level_weights)
                shift = shift + (a_u * (d_u @ pi))[..., None]
                if d_w is not None:
                    shift = shift + a_w[..., None] * (d_w @ pi)
        rotation, size = self.rotation
        z_alpha = take("z_alpha", (S, H))
        if self.system_level == 2:  # contrasts stored standardised: z = R' shift + sigma zeta
            centre = np.einsum("st,...s->...t", rotation, shift)[..., None]
            scaled = centre + out["sigma_system"][..., None, None] * z_alpha
            z_alpha = np.where((size > 0)[:, None], z_alpha, scaled)
        alpha = mean + np.einsum("st,...th->...sh", rotation, z_alpha) - shift[..., None]
        return {"alpha": alpha, **out, "cluster_effect": u, "cluster_system_effect": w}


class CollapsedLogp(Op):
    """PyTensor Op: the log density of ``theta`` and its gradient.

    See :func:`bayeval.models.kernels.logp.logp_and_grad`.

    Inputs other than ``theta`` are the model's data (spec, constants, pattern index,
    counts, multiplicities), so a compiled model serves other data of the same ``theta``
    size. The Op's ``pullback`` uses the gradient output.
    """

    # PyTensor caches compiled numba code on disk under a key made of these props, not of the
    # kernels' source: ``kernel`` keeps an old compiled kernel from being reused after a change.
    __props__ = ("kernel",)

    def __init__(self):
        self.kernel = KERNEL_HASH

    def make_node(self, theta, spec, const, index, c, n, mult):
        """The graph node: the inputs cast to the kernel's dtypes; a scalar and a vector out."""
        dtypes = ("float64", "int64", "float64", "int64", "float64", "float64", "float64")
        # casts, not conversions: PyMC stores integer data as int32
        inputs = [
            pt.cast(pt.as_tensor_variable(value), dtype)
            for value, dtype in zip((theta, spec, const, index, c, n, mult), dtypes, strict=True)
        ]
        return Apply(self, inputs, [pt.dscalar(), pt.dvector()])

    def perform(self, node, inputs, outputs):
        """Evaluate the log density and its gradient with the compiled kernel."""
        theta, spec, const, index, c, n, mult = (np.ascontiguousarray(a) for a in inputs)
        logp, grad = logp_and_grad(theta, spec, const, index[0], index[1], c, n, mult)
        outputs[0][0] = np.asarray(logp, dtype="float64")
        outputs[1][0] = grad

    def connection_pattern(self, node):
        """Only ``theta`` reaches the outputs; the data inputs are disconnected."""
        return [[True, False]] + [[False, False]] * 6

    def pullback(self, inputs, outputs, cotangents):
        """The gradient of ``theta`` from the gradient output; none for the data."""
        return [cotangents[0] * outputs[1]] + [DisconnectedType()() for _ in range(6)]


def _register_numba():
    from pytensor.link.numba.dispatch.basic import (
        numba_njit,
        register_funcify_default_op_cache_key,
    )

    @register_funcify_default_op_cache_key(CollapsedLogp)
    def numba_funcify_collapsed(op, node=None, **kwargs):
        kernel = numba.types.ExternalFunction(kernel_symbol(), c_signature())

        @numba_njit
        def collapsed_logp(theta, spec, const, index, c, n, mult):
            theta, spec = np.ascontiguousarray(theta), np.ascontiguousarray(spec)
            const, index = np.ascontiguousarray(const), np.ascontiguousarray(index)
            c, n, mult = (
                np.ascontiguousarray(c),
                np.ascontiguousarray(n),
                np.ascontiguousarray(mult),
            )
            out = np.empty(1)
            grad = np.empty(theta.shape[0])
            kernel(
                theta.ctypes,
                theta.shape[0],
                spec.ctypes,
                const.ctypes,
                const.shape[0],
                index.ctypes,
                index.shape[1],
                c.ctypes,
                n.ctypes,
                mult.ctypes,
                out.ctypes,
                grad.ctypes,
            )
            return np.asarray(out[0]), grad

        return collapsed_logp


_register_numba()
