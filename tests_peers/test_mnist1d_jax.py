"""The MNIST-1D protocol on JAX (each step one compiled XLA program) follows numpy's, step for step.

From the same seed (the same initial weights and the same shuffling), ``train_mnist1d(...,
backend="jax")`` ends on the parameters numpy's run ends on, to rounding, in float64: 50 steps, one
whole epoch and a part-epoch (two ``fit`` calls, the optimiser state carried over). The GRU is left
to ``python -m prelens.bench.mnist1d --backend jax``: compiling its 40 unrolled steps each way takes
minutes on a CPU.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from prelens.bench.mnist1d import train_mnist1d
from prelens.core import tree_leaves


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("prelens-cache")
    before = os.environ.get("PRELENS_CACHE")
    os.environ["PRELENS_CACHE"] = str(path)
    try:
        yield path
    finally:
        if before is None:
            os.environ.pop("PRELENS_CACHE", None)
        else:
            os.environ["PRELENS_CACHE"] = before


@pytest.mark.parametrize("name", ["logreg", "mlp", "cnn"])
def test_jax_run_ends_on_numpys_parameters(name: str, cache: Path):
    on_numpy = train_mnist1d(name, steps=50, seed=1)
    on_jax = train_mnist1d(name, steps=50, seed=1, backend="jax")
    assert on_jax.steps == on_numpy.steps == 50 and on_jax.backend == "jax"
    for a, b in zip(tree_leaves(on_jax.params), tree_leaves(on_numpy.params), strict=True):
        assert isinstance(a, np.ndarray)  # brought back to the host
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)
    assert abs(on_jax.test_accuracy - on_numpy.test_accuracy) <= 0.002
