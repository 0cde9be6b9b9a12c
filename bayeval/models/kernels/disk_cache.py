"""numba's disk cache of the kernels, keyed on the source of every file of this package.

numba stamps a function's cached machine code with its own file's contents alone, so a
kernel whose helper in another file changed would load its stale compiled copy. Here every
function of this package compiled with ``cache=True`` carries one stamp instead,
:data:`KERNEL_DIGEST`, the SHA-256 of all the package's files: a change to any of them
recompiles every kernel. :func:`install` (run by the package's ``__init__``, before any kernel
is defined) puts numba's own locators, so stamped, ahead of them for this package's files;
the cache files stay where numba would put them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from numba.core import caching

#: The folder of the kernels: the files :func:`kernel_hash` reads and the stamp covers.
KERNELS_DIR = Path(__file__).resolve().parent


def kernel_files(folder: Path = KERNELS_DIR) -> list[Path]:
    """The ``*.py`` files of ``folder``, by name."""
    return sorted(Path(folder).glob("*.py"), key=lambda path: path.name)


def kernel_hash(folder: Path = KERNELS_DIR) -> str:
    """SHA-256 (hex) of the :func:`kernel_files` of ``folder``.

    Hashes each file's name, size and contents in turn, so an edit, a new file or a renamed one
    changes it.
    """
    digest = hashlib.sha256()
    for path in kernel_files(folder):
        data = path.read_bytes()
        digest.update(b"%s\0%d\0" % (path.name.encode(), len(data)))
        digest.update(data)
    return digest.hexdigest()


#: The digest of the package's source: numba's source stamp of every kernel.
KERNEL_DIGEST = kernel_hash()
#: Its first 16 digits: part of every compiled-code cache key outside numba's (the C kernel's
#: symbol, the PyTensor Op's props).
KERNEL_HASH = KERNEL_DIGEST[:16]


def _numba_class(name: str):
    """A class of numba's caching module (before numba 0.61 its name began with ``_``)."""
    found = getattr(caching, name, None)
    return found if found is not None else getattr(caching, "_" + name)


class KernelStamp:
    """A cache locator's mixin: numba's locator for the files of this package only.

    :data:`KERNEL_DIGEST` is the stamp of every function in them.
    """

    kernel_stamp = True  # marks these locators in numba's list (:func:`install`)

    def get_source_stamp(self):
        """The package's source digest, :data:`KERNEL_DIGEST`."""
        return KERNEL_DIGEST

    @classmethod
    def from_function(cls, py_func, py_file):
        """The locator for a function of this package's kernels, or ``None`` for any other file."""
        if Path(py_file).resolve().parent != KERNELS_DIR:
            return None
        return super().from_function(py_func, py_file)


#: numba's locators that find a writable folder for a source file (a chosen cache folder,
#: the ``__pycache__`` beside it, the user's cache), each stamped with the digest.
LOCATORS = tuple(
    type(f"Kernel{name}", (KernelStamp, _numba_class(name)), {})
    for name in ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")
)


def install() -> None:
    """Put :data:`LOCATORS` first in numba's list of cache locators (once).

    Every function of this package compiled with ``cache=True`` from then on is stamped with the
    digest.
    """
    classes = _numba_class("CacheImpl")._locator_classes
    classes[:] = [*LOCATORS, *(c for c in classes if not getattr(c, "kernel_stamp", False))]


def is_cached(function) -> bool:
    """Whether numba's disk cache has an entry for ``function`` under its stamp.

    ``function`` is a jitted dispatcher or the Python function under it. False where its
    first call compiles it (a fresh install, or the kernels changed), and where the cache
    cannot be read.
    """
    try:  # the cache is keyed on the Python function under a dispatcher
        py_func = getattr(function, "py_func", function)
        return bool(caching.FunctionCache(py_func)._cache_file._load_index())
    except Exception:  # noqa: BLE001  (no writable cache folder, an unreadable index): unknown
        return False
