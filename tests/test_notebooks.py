"""The teaching notebooks run from top to bottom without errors, and each one shows a picture.

Each notebook is executed afresh with nbclient in a ``python3`` kernel of *this* interpreter
(ipykernel's own kernel spec, never one found on the machine), with the notebooks directory as its
working directory and matplotlib's inline backend forced, so the test runs headless, from any
working directory and under pytest-xdist. The notebooks on disk are never written to.
"""

from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import RESOURCES, get_kernel_dict
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from traitlets import default

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = ["01_prelenses", "02_tambara", "03_mlp", "04_attention", "05_laws", "06_transformer"]
CELL_TIMEOUT = 180  # seconds; the slowest cell (training the transformer) takes a few
INLINE = "module://matplotlib_inline.backend_inline"


class ThisPythonSpecs(KernelSpecManager):
    """Every kernel name resolves to ipykernel's kernel run by ``sys.executable``."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return KernelSpec(resource_dir=RESOURCES, **get_kernel_dict())


class ThisPythonKernel(AsyncKernelManager):
    """A kernel manager that finds its kernel through :class:`ThisPythonSpecs`."""

    @default("kernel_spec_manager")
    def _kernel_spec_manager_default(self) -> KernelSpecManager:
        return ThisPythonSpecs()


def read(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def outputs(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]


def images(nb: nbformat.NotebookNode) -> int:
    return sum("image/png" in out.get("data", {}) for out in outputs(nb))


def test_the_six_notebooks_are_there():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_is_executed(name):
    """Committed with outputs, so it reads well on GitHub: every code cell ran once, in order."""
    nb = read(name)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    assert not [out for out in outputs(nb) if out.output_type == "error"]
    assert images(nb) >= 1


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", INLINE)  # inherited by the kernel: never a GUI backend
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))  # no shared profile between workers
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # connection files
    monkeypatch.setenv("HYPOTHESIS_STORAGE_DIRECTORY", str(tmp_path / "hypothesis"))  # not in notebooks/
    nb = read(name)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        kernel_manager_class=ThisPythonKernel,  # nbclient owns the kernel: it shuts it down and closes its sockets
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
        record_timing=False,
    )
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    assert not [out for out in outputs(nb) if out.output_type == "error"]
    assert images(nb) >= 1, f"{name} shows no picture"
