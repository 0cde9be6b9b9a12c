"""``import bayeval`` and the command's start load no heavy dependency until it is used."""

import subprocess
import sys

import pytest

HEAVY = [
    "pymc",
    "pytensor",
    "numba",
    "scipy.stats",
    "statsmodels",
    "arviz_stats",
    "arviz_base",
    "matplotlib",
]


@pytest.mark.parametrize(
    "statement", ["import bayeval", "import bayeval.cli; bayeval.cli.main.to_info_dict"]
)
def test_start_is_light(statement):
    code = (
        f"import sys; {statement}; heavy = {HEAVY!r}; print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names_load_on_use():
    import bayeval as be

    assert callable(be.fit) and callable(be.crosscheck)  # functions, not their modules
    import bayeval.analyses.crosscheck  # noqa: F401
    from bayeval.inference import choose_model  # importing the module keeps the function bound

    assert callable(be.fit) and callable(be.crosscheck) and callable(choose_model)
    assert set(be.__all__) <= set(dir(be))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        be.nothing  # noqa: B018 - the attribute access is what raises
