"""The compiled logit-normal kernel as a model nutpie samples, without PyMC.

nutpie samples a PyMC model through a C log density and a C expansion of each draw into the
values it keeps, both called from its threads.
:func:`bayeval.models.kernels.cfunctions.nutpie_functions` are such functions around the kernel,
compiled once per machine (numba's disk cache), so a fit of either form builds no PyMC model,
compiles nothing, runs its chains on every core without the GIL, and keeps per draw only what the
expansion writes (the full-latent form's task-by-system effects are not kept: LiveCodeBench's 45 x
400 x 10 has 18,000 of them a draw).

nutpie exposes this route for its own PyMC models only (``nutpie.compile_pymc``), so
:class:`KernelModel` speaks to the same internal classes; where a nutpie release changes them
(:func:`available` is False) the fit takes the documented ``nutpie.compiled_pyfunc`` route
instead: the same kernel called from Python, with the same draws kept but the chains
serialised by the GIL.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from bayeval.models.kernels import cfunctions
from bayeval.models.kernels.abi import kernel_data, meta_array
from bayeval.models.kernels.logp import kernel_logp, latent_task_effects, unmapped
from bayeval.models.progress import nutpie_progress

#: One variable of a draw's kept values: its name, its dims and its shape (:func:`split_kept`).
Block = tuple[str, tuple[str, ...], tuple[int, ...]]
_INTERNALS = ("LogpFunc", "ExpandFunc", "PyMcModel", "PyVariable", "PySampler")


def available() -> bool:
    """Whether the installed nutpie has the internal classes :class:`KernelModel` uses."""
    try:
        from nutpie import _lib
        from nutpie.sample import CompiledModel  # noqa: F401
    except ImportError:
        return False
    return all(hasattr(_lib, name) for name in _INTERNALS) and hasattr(_lib.PySampler, "from_pymc")


def _meta(values: dict, dim: int, kept: int, tasks: int, log_sigma_task: int) -> np.ndarray:
    """The user data of the C functions (:data:`.cfunctions.NUTPIE_FIELDS`)."""
    c = values["c"]
    sizes = {
        "dim": dim,
        "P": c.shape[0],
        "S": c.shape[1],
        "n_spec": values["spec"].size,
        "n_const": values["const"].size,
        "n_kept": kept,
        "J": tasks,
        "log_sigma_task": log_sigma_task,
    }
    return meta_array(cfunctions.NUTPIE_FIELDS, sizes, values)


try:  # the base class nutpie's samplers accept; absent, available() is False
    from nutpie.sample import CompiledModel as _Base
except ImportError:  # pragma: no cover - nutpie is a dependency
    _Base = object


@dataclasses.dataclass(frozen=True)
class KernelModel(_Base):
    """A compiled kernel and its data as a model for ``nutpie.sample``.

    The kernel is :func:`bayeval.models.kernels.logp.logp_and_grad`; the draw keeps ``names`` of
    ``shapes`` (the first ``kept`` coordinates of theta, then ``tasks`` task effects).
    """

    values: dict = dataclasses.field(default_factory=dict)
    dim: int = 0
    names: tuple = ()
    shapes_: tuple = ()
    kept: int = 0
    tasks: int = 0
    log_sigma_task: int = 0
    meta: Any = None
    #: The C log density and expansion, a function of nothing (by default the logit-normal
    #: kernel's for the form, :func:`.cfunctions.nutpie_functions`;
    #: :mod:`bayeval.models.kernels.zoib` has its own).
    functions: Any = None

    @classmethod
    def build(cls, values: dict, dim: int, kept: int, tasks: int, log_sigma_task: int):
        """The model of the kernel data ``values`` over ``dim`` coordinates (see the class)."""
        values = kernel_data(values)
        names = ("theta",) if tasks == 0 else ("hyper", "task_effect")
        shapes = ((dim,),) if tasks == 0 else ((kept,), (tasks,))
        meta = _meta(values, dim, kept, tasks, log_sigma_task)
        return cls(
            dims={},
            values=values,
            dim=dim,
            names=names,
            shapes_=shapes,
            kept=kept,
            tasks=tasks,
            log_sigma_task=log_sigma_task,
            meta=meta,
        )

    @property
    def n_dim(self) -> int:
        """The number of coordinates the sampler moves."""
        return self.dim

    @property
    def shapes(self) -> dict:
        """The shape of each stored variable, by name."""
        return dict(zip(self.names, self.shapes_, strict=True))

    @property
    def coords(self) -> dict:
        """No coordinates: the draws are labelled by the caller."""
        return {}

    def _initial_point(self, seed) -> np.ndarray:
        """The flat prior's support point, zero, jittered by U(-1, 1) per coordinate.

        As nutpie starts a PyMC model.
        """
        return np.random.default_rng(seed).uniform(-1.0, 1.0, self.dim)

    def _make_model(self, init_mean):
        from nutpie import _lib

        if self.functions is not None:
            logp_c, expand_c = self.functions()
        else:  # a collapsed fit (no task effects kept) compiles the collapsed form's alone
            logp_c, expand_c = cfunctions.nutpie_functions(latent=self.tasks > 0)
        address = self.meta.ctypes.data
        expand = _lib.ExpandFunc(self.dim, self.kept + self.tasks, expand_c.address, address, self)
        logp = _lib.LogpFunc(logp_c.address, address, self)
        # nutpie's trace names every coordinate of the sampler's vector
        coords = {"unconstrained_parameter": pd.Index([f"theta_{i}" for i in range(self.dim)])}
        sizes = {"unconstrained_parameter": self.dim}
        variables = _lib.PyVariable.new_variables(
            list(self.names),
            ["float64"] * len(self.names),
            [tuple(s) for s in self.shapes_],
            sizes,
            {},
        )

        def make_adapter(*args, **kwargs):  # only nutpie's "flow" adaptation asks for it
            from nutpie.transform_adapter import make_transform_adapter

            return make_transform_adapter()(*args, **kwargs, logp_fn=None)

        return _lib.PyMcModel(
            logp, expand, variables, self.dim, sizes, coords, self._initial_point, make_adapter
        )

    def _make_sampler(
        self, settings, init_mean, cores, progress_type, extra_callback, extra_callback_rate, store
    ):
        from nutpie import _lib

        return _lib.PySampler.from_pymc(
            settings,
            cores,
            self._make_model(init_mean),
            progress_type,
            extra_callback,
            extra_callback_rate,
            store,
        )


def values_model(inputs: dict, fields, dim: int, kept: int, sizes: dict, functions):
    """A hand-written kernel's C functions and data as a model ``nutpie.sample`` takes.

    ``functions`` returns the C log density and expansion (as
    :func:`bayeval.models.kernels.zoib.nutpie_functions`), which read the user data ``fields``:
    each an integer of ``sizes`` or the address of an array of ``inputs``. Each draw keeps one
    variable, ``values``, of ``kept`` numbers (:func:`split_kept` names them).
    """
    return KernelModel(
        dims={},
        values=inputs,
        dim=dim,
        names=("values",),
        shapes_=((kept,),),
        kept=kept,
        tasks=0,
        meta=meta_array(fields, sizes, inputs),
        functions=functions,
    )


def sample_trace(model, *, draws, tune, chains, cores, seed, progress, **options):
    """``nutpie.sample`` of a compiled model with bayeval's progress display; its trace.

    At least one warm-up draw (nutpie needs one); ``options`` go to ``nutpie.sample``
    (``target_accept``, ``save_warmup``, ...).
    """
    import nutpie  # deferred: its import takes seconds, paid when a fit samples with it

    with nutpie_progress(progress, tune=max(tune, 1), draws=draws) as shown:
        return nutpie.sample(
            model,
            draws=draws,
            tune=max(tune, 1),
            chains=chains,
            cores=cores,
            seed=seed,
            **options,
            **shown,
        )


def sample_values(model, *, draws, tune, chains, cores, seed, progress, **options):
    """NUTS by nutpie on a :func:`values_model`: its kept values and sampler statistics.

    Returns ``(values, sample_stats)``: the draws' kept values as an array ``(chain, draw,
    kept)`` (for :func:`split_kept`) and the statistics as a Dataset; the warm-up is not kept.
    ``options`` go to ``nutpie.sample`` (``target_accept``, ...).
    """
    trace = sample_trace(
        model,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        seed=seed,
        progress=progress,
        save_warmup=False,
        **options,
    )
    values = trace["posterior"]["values"].transpose("chain", "draw", ...).values
    return values, trace["sample_stats"].to_dataset()


def split_kept(values: np.ndarray, blocks: list[Block]) -> xr.Dataset:
    """The named posterior from kept values ``(chain, draw, kept)``, laid out as ``blocks``.

    ``blocks`` are ``(name, dims, shape)`` in the order the expansion writes them.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.models.kernels.nutpie_model import split_kept
    >>> kept = np.arange(2 * 3 * 4.0).reshape(2, 3, 4)
    >>> post = split_kept(kept, [("theta", ("system",), (3,)), ("mu", (), ())])
    >>> post["theta"].shape, float(post["mu"][1, 2])
    ((2, 3, 3), 23.0)
    """
    lead = values.shape[:2]
    out, i = {}, 0
    for name, dims, shape in blocks:
        size = int(np.prod(shape))
        out[name] = (("chain", "draw", *dims), values[..., i : i + size].reshape(lead + shape))
        i += size
    if i != values.shape[-1]:
        raise ValueError(f"the blocks hold {i} values; the draws keep {values.shape[-1]}")
    return xr.Dataset(out)


def python_model(values: dict, dim: int, kept: int, tasks: int, log_sigma_task: int):
    """The same log density and kept values through ``nutpie.compiled_pyfunc``.

    The kernel is called from Python: the route where :func:`available` is False.
    """
    from nutpie.compiled_pyfunc import from_pyfunc

    data = kernel_data(values)
    args = tuple(data.values())

    def logp(x, **_):
        return kernel_logp(x, *args)

    if tasks == 0:
        names, shapes = ["theta"], [(dim,)]

        def expand(x, **_):
            return {"theta": x.copy()}
    else:
        names, shapes = ["hyper", "task_effect"], [(kept,), (tasks,)]

        def expand(x, **_):
            x = unmapped(x, data["spec"], data["const"], data["index"][0])
            return {
                "hyper": x[:kept].copy(),
                "task_effect": latent_task_effects(
                    x, data["spec"], data["const"], kept, tasks, log_sigma_task
                ),
            }

    return from_pyfunc(
        dim,
        lambda: logp,
        lambda *_: expand,
        [np.dtype("float64")] * len(names),
        shapes,
        names,
        make_initial_point_fn=lambda seed: np.random.default_rng(seed).uniform(-1.0, 1.0, dim),
    )
