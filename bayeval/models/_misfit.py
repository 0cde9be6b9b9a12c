"""Where a model's posterior summary and its bootstrap twin disagree.

The misfit checks of the cost and latency models read it.
"""

from __future__ import annotations

import numpy as np
import xarray as xr


def apart(post: xr.Dataset, boot: xr.Dataset, name: str) -> np.ndarray:
    """Where the posterior and the bootstrap disagree on ``name``.

    Either's point lies outside the other's interval (bool, the variable's dims less ``ci_bound``).

    Examples
    --------
    >>> import xarray as xr
    >>> from bayeval.models._misfit import apart
    >>> def summary(point, low, high):
    ...     return xr.Dataset({"x": ("system", point),
    ...                        "x_interval": (("system", "ci_bound"), list(zip(low, high)))},
    ...                       coords={"ci_bound": ["lower", "upper"]})
    >>> apart(summary([1.0, 5.0], [0.5, 4.5], [1.5, 5.5]),
    ...       summary([1.2, 3.0], [0.9, 2.0], [1.4, 4.0]), "x").tolist()
    [False, True]
    """
    p_lo, p_hi = (post[f"{name}_interval"].sel(ci_bound=b).values for b in ("lower", "upper"))
    b_lo, b_hi = (boot[f"{name}_interval"].sel(ci_bound=b).values for b in ("lower", "upper"))
    p_est, b_est = post[name].values, boot[name].values
    with np.errstate(invalid="ignore"):
        return (p_est < b_lo) | (p_est > b_hi) | (b_est < p_lo) | (b_est > p_hi)
