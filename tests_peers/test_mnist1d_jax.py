"""The MNIST-1D protocol on JAX (each step one compiled XLA program) follows numpy's, step for step.

From the same seed (the same initial weights and the same shuffling), ``train_mnist1d(...,
backend="jax")`` ends on the parameters numpy's run ends on, to rounding, in float64: 50 steps, one
whole epoch and a part-epoch (two ``fit`` calls, the optimiser state carried over). The GRU's 40
steps each way compile as one ``lax.scan`` (seconds, not minutes).
"""

from __future__ import annotations

import numpy as np
import pytest

from prelens.core import tree_leaves
from prelens_bench.mnist1d import train_mnist1d


@pytest.mark.parametrize("name", ["logreg", "mlp", "cnn", "gru"])
def test_jax_run_ends_on_numpys_parameters(name: str):
    on_numpy = train_mnist1d(name, steps=50, seed=1)
    on_jax = train_mnist1d(name, steps=50, seed=1, backend="jax")
    assert on_jax.steps == on_numpy.steps == 50 and on_jax.backend == "jax"
    for a, b in zip(tree_leaves(on_jax.params), tree_leaves(on_numpy.params), strict=True):
        assert isinstance(a, np.ndarray)  # brought back to the host
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)
    assert abs(on_jax.test_accuracy - on_numpy.test_accuracy) <= 0.002
