"""The models' compiled numeric kernels (numba), and the C functions the samplers call.

numba caches them on disk under one stamp, the digest of every file of this package
(:mod:`~bayeval.models.kernels.disk_cache`), installed here before any kernel is defined.
"""

from bayeval.models.kernels import disk_cache

disk_cache.install()
