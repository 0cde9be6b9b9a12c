"""The kernels' disk-cache key: one digest of every kernel file, the stamp of every kernel."""

import importlib
import pkgutil
import shutil

import numba
from numba.core.caching import FunctionCache
from numba.core.registry import CPUDispatcher

from bayeval.models import kernels
from bayeval.models.kernels import cfunctions, collapsed, disk_cache, exact, zoib
from bayeval.models.logit_normal import model as ln_model
from bayeval.testing import fake_data, fake_results


def _kernel_modules():
    return [
        importlib.import_module(f"{kernels.__name__}.{info.name}")
        for info in pkgutil.iter_modules(kernels.__path__)
    ]


def test_the_key_changes_when_any_one_kernel_file_changes(tmp_path):
    folder = tmp_path / "kernels"
    shutil.copytree(disk_cache.KERNELS_DIR, folder, ignore=shutil.ignore_patterns("__pycache__"))
    base = disk_cache.kernel_hash(folder)
    assert base == disk_cache.KERNEL_DIGEST  # the copy is the package
    seen = {base}
    for path in disk_cache.kernel_files(folder):
        text = path.read_text()
        # an added line, and an edit that keeps the file's size
        for edited in (text + "# edited\n", text[:-1] + " "):
            path.write_text(edited)
            key = disk_cache.kernel_hash(folder)
            assert key not in seen, path.name
            seen.add(key)
        path.write_text(text)
        assert disk_cache.kernel_hash(folder) == base
    (folder / "new_kernels.py").write_text("")
    assert disk_cache.kernel_hash(folder) not in seen


def test_the_key_covers_every_module_of_the_package():
    modules = list(pkgutil.iter_modules(kernels.__path__))
    assert not any(info.ispkg for info in modules)  # the key reads the package's own folder
    hashed = {path.name for path in disk_cache.kernel_files()}
    assert hashed == {"__init__.py"} | {f"{info.name}.py" for info in modules}
    assert {module.__file__ for module in _kernel_modules()} <= {
        str(path) for path in disk_cache.kernel_files()
    }


def test_every_cached_kernel_is_stamped_with_the_key():
    stamped = 0
    for module in _kernel_modules():
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__:
                assert value._cache is not None
                locator = value._cache._impl.locator
                assert isinstance(locator, disk_cache.KernelStamp), value
                assert locator.get_source_stamp() == disk_cache.kernel_hash()
                stamped += 1
    assert stamped > 100
    # the C functions' caches (``numba.cfunc(..., cache=True)``) are found the same way
    for function in (cfunctions._c_kernel, cfunctions._nutpie_logp, zoib._nutpie_logp):
        assert isinstance(FunctionCache(function)._impl.locator, disk_cache.KernelStamp)

    # a function elsewhere keeps numba's own stamp
    @numba.njit(cache=True)
    def elsewhere(x):
        return x

    assert not isinstance(elsewhere._cache._impl.locator, disk_cache.KernelStamp)


def test_the_key_names_the_compiled_code_outside_numba():
    assert disk_cache.KERNEL_HASH == disk_cache.KERNEL_DIGEST[:16]
    assert cfunctions._SYMBOL.endswith(disk_cache.KERNEL_HASH)  # the C kernel's name
    assert collapsed.CollapsedLogp().kernel == disk_cache.KERNEL_HASH


def test_the_locators_are_installed_once():
    disk_cache.install()
    disk_cache.install()
    classes = type(FunctionCache(cfunctions._c_kernel)._impl)._locator_classes
    assert classes[: len(disk_cache.LOCATORS)] == list(disk_cache.LOCATORS)
    assert sum(getattr(c, "kernel_stamp", False) for c in classes) == len(disk_cache.LOCATORS)


def test_the_c_functions_are_found_cached_once_compiled(monkeypatch):
    def never_compiled(x):
        return x

    assert not disk_cache.is_cached(never_compiled)  # no index: a fit would compile first
    monkeypatch.setattr(cfunctions, "_nutpie_cfuncs", {})  # none loaded in this process
    cfunctions.nutpie_functions(latent=False)  # compiled, or loaded from the disk cache
    monkeypatch.setattr(cfunctions, "_nutpie_cfuncs", {})
    assert disk_cache.is_cached(cfunctions._nutpie_collapsed_logp)
    assert cfunctions.nutpie_functions_cached(latent=False)


def test_a_fit_that_compiles_its_kernel_says_so_once(monkeypatch, capsys):
    import warnings

    import bayeval as be
    from bayeval.models.logit_normal import kernel

    data = be.from_counts([[3, 1, 4, 0], [4, 1, 4, 1]], trials=4, systems=["A", "B"])
    settings = {"model": "logit_normal", "draws": 20, "chains": 1, "seed": 1, "tune": 20}
    said = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)
        for cached in (False, True):
            monkeypatch.setattr(kernel, "nutpie_functions_cached", lambda latent, c=cached: c)
            be.fit(data, progress=True, **settings)
            err = capsys.readouterr().err
            said[cached] = [line for line in err.splitlines() if "compiling" in line]
    assert said[True] == []
    assert len(said[False]) == 1 and "collapsed kernel" in said[False][0]


def test_the_exact_task_draws_are_found_cached_once_compiled():
    res = fake_results(fake_data(trials=1, seed=3), model="logit_normal", seed=0)
    res.draws("pass@k", 1, "tasks")  # compiles the exact draws, or loads them from the cache
    assert exact.exact_draws_cached()


def test_the_first_readout_over_these_tasks_says_it_compiles(monkeypatch, capsys):
    """Where someone watches and the exact draws are not cached, one line on stderr, once."""
    res = fake_results(fake_data(trials=1, seed=3), model="logit_normal", seed=0)
    monkeypatch.setattr(ln_model, "exact_draws_cached", lambda: False)
    monkeypatch.setattr(ln_model, "watched", lambda: True)
    monkeypatch.setattr(ln_model, "_ANNOUNCED", set())
    res.draws("pass@k", 1, "tasks")
    res.draws("pass@k", 1, "tasks")
    err = capsys.readouterr().err
    assert err.count("compiling the exact task-rate draws") == 1
    monkeypatch.setattr(ln_model, "watched", lambda: False)
    monkeypatch.setattr(ln_model, "_ANNOUNCED", set())
    res.draws("pass@k", 1, "tasks")
    assert "compiling" not in capsys.readouterr().err  # nobody watching: nothing said
