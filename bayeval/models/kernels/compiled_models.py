"""Compiled nutpie models kept per structure, with a later fit's data swapped in.

Compiling a PyMC model for nutpie takes seconds; a model whose data enter as ``pm.Data``
serves every data set of its structure through ``with_data``, which draws what a fresh
compilation of those data draws.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

CACHE_SIZE = 8


class CompiledModels:
    """The compiled models of the last :data:`CACHE_SIZE` structures used, by key."""

    def __init__(self, size: int = CACHE_SIZE):
        self.size = size
        self._models: OrderedDict = OrderedDict()

    def get(self, key: Hashable, build: Callable, data: Callable[[], dict]):
        """The model compiled for ``key`` with ``data()`` swapped in, or ``build()`` compiled now.

        ``build()`` gives a PyMC model; the model compiled from it is kept.
        """
        import nutpie

        compiled = self._models.get(key)
        if compiled is None:
            compiled = nutpie.compile_pymc_model(build())
            self._models[key] = compiled
            while len(self._models) > self.size:
                self._models.popitem(last=False)
            return compiled
        self._models.move_to_end(key)
        return compiled.with_data(**data())

    def clear(self) -> None:
        """Forget every compiled model."""
        self._models.clear()

    def __len__(self) -> int:
        """The number of compiled models kept."""
        return len(self._models)
