"""``prelens.nn.remat``: checkpointing, tested equal to the plain lens; its laws; Cost's residue bytes; the old name."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import prelens
from prelens.core import tree_allclose
from prelens.nn import dense, encoder_block, layer_norm, mlp, remat
from prelens.tambara import Cost, to_tamb
from prelens.testing import check_lens_laws, check_vjp


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_remat_equals_the_plain_lens_in_outputs_and_deltas(batch: int, n_in: int, n_out: int, seed: int):
    rng = np.random.default_rng(seed)
    lens = mlp(n_in, [3, n_out])
    p, x = lens.init(rng), rng.standard_normal((batch, n_in))
    da = rng.standard_normal((batch, n_out))
    m_plain, a_plain = lens.fwd(p, x)
    m_remat, a_remat = remat(lens).fwd(p, x)
    assert np.array_equal(a_plain, a_remat)
    assert tree_allclose(m_remat, (p, x), rtol=0, atol=0)  # the residue is (p, s) only
    assert tree_allclose(lens.bwd(m_plain, da), remat(lens).bwd(m_remat, da), rtol=0, atol=0)


def test_remat_laws_and_vjp():
    rng = np.random.default_rng(0)
    for lens, x in (
        (dense(3, 2), rng.standard_normal((4, 3))),
        (layer_norm(5), rng.standard_normal((2, 5))),
        (encoder_block(8, 2, 16, causal=True), rng.standard_normal((2, 3, 8))),
    ):
        r = remat(lens)
        p = r.init(rng)
        check_lens_laws(r, p, x, rng=1)
        check_vjp(r, p, x, rng=2, rtol=1e-6)


def test_remat_residue_is_its_input_and_cost_reports_both():
    block = encoder_block(8, 2, 16, causal=True)
    p, x = block.init(0), np.zeros((2, 16, 8))
    plain = Cost.of(to_tamb(block), p, x)
    rem = Cost.of(to_tamb(remat(block)), p, x)
    p_bytes = sum(a.nbytes for a in prelens.core.tree_leaves(p))
    assert rem.residue_bytes == p_bytes + x.nbytes
    assert rem.residue_bytes_without_remat == plain.residue_bytes > rem.residue_bytes
    assert "without remat" in str(rem) and "without remat" not in str(plain)


def test_rematerialize_still_works_for_one_release():
    from prelens import nn

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = nn.rematerialize
    assert old is remat and "use prelens.nn.remat" in str(caught[0].message)
