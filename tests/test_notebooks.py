"""Run every notebook in ``notebooks/`` end to end, with small fits.

Each notebook is executed by nbclient in a fresh kernel started with this interpreter
(``sys.executable``), from the ``notebooks/`` directory, with ``BAYEVAL_NOTEBOOK_FAST=1`` so its
fits are small. A cell that raises fails the test. The committed notebooks must carry no
outputs, and every executed notebook must show at least one figure.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")
pytest.importorskip("matplotlib_inline")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
KERNEL_NAME = "bayeval-notebook-test"
CELL_TIMEOUT = 600  # seconds per cell


def kernel_spec_dir(root: Path) -> Path:
    """Write a kernel spec that launches ipykernel with this very interpreter."""
    spec = root / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": f"Python ({sys.executable})",
                "language": "python",
            }
        )
    )
    return root


def kernel_env(fast: bool = True) -> dict:
    """The kernel's environment: this one, with the source tree importable and the switch."""
    env = dict(os.environ)
    env["BAYEVAL_NOTEBOOK_FAST"] = "1" if fast else "0"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    return env


def execute_notebook(path: Path, spec_root: Path, fast: bool = True):
    """Execute a notebook in a fresh kernel; return the executed notebook."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    nb = nbformat.read(path, as_version=4)
    km = AsyncKernelManager(
        kernel_name=KERNEL_NAME, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec_root)])
    )
    client = nbclient.NotebookClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT,
        kernel_name=KERNEL_NAME,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute(env=kernel_env(fast))
    return nb


def image_outputs(nb) -> int:
    """Number of image outputs in a notebook."""
    return sum(
        1
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if any(key.startswith("image/") for key in output.get("data", {}))
    )


@pytest.fixture(scope="module")
def spec_root(tmp_path_factory) -> Path:
    return kernel_spec_dir(tmp_path_factory.mktemp("kernels"))


def test_there_are_notebooks():
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name}: code cells {dirty} carry outputs or execution counts"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, spec_root):
    nb = nbformat.read(path, as_version=4)
    first = next(cell for cell in nb.cells if cell.cell_type == "code")
    assert "BAYEVAL_NOTEBOOK_FAST" in first.source, (
        f"{path.name} must read the BAYEVAL_NOTEBOOK_FAST switch in its first code cell"
    )
    executed = execute_notebook(path, spec_root, fast=True)  # raises CellExecutionError
    assert image_outputs(executed) >= 1, f"{path.name} shows no figure"
