"""The fast row reductions equal numpy's own, NaN and infinities included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from prelens.nn._rows import column_sum, ones, row_max, row_sum

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


@settings(max_examples=60)
@given(shapes, st.integers(1, 40), st.sampled_from([np.float64, np.float32]), st.booleans(), st.integers(0, 2**31))
def test_row_max_and_sums_are_numpys(lead, n, dtype, strided, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((*lead, 2 * n if strided else n)) * 10).astype(dtype)
    if strided:
        x = x[..., ::2]  # not contiguous
    special = rng.random(x.shape)
    x[special < 0.05] = np.nan
    x[(special >= 0.05) & (special < 0.1)] = -np.inf
    x[(special >= 0.1) & (special < 0.12)] = np.inf
    got, want = row_max(x), x.max(axis=-1)
    assert got.shape == want.shape and got.dtype == dtype
    assert np.array_equal(got, want, equal_nan=True)
    y = np.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0)
    assert np.allclose(row_sum(y), y.sum(axis=-1), rtol=1e-5, atol=1e-4) and row_sum(y).dtype == dtype
    y2 = y.reshape(-1, y.shape[-1])
    assert np.allclose(column_sum(y2), y2.sum(axis=0), rtol=1e-5, atol=1e-4) and column_sum(y2).dtype == dtype


def test_the_ones_are_shared_and_read_only():
    a, b = ones(5, np.dtype(np.float32)), ones(5, np.dtype(np.float32))
    assert a is b and not a.flags.writeable and a.dtype == np.float32
