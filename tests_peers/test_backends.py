"""Every backend case of ``tests/backends`` on PyTorch tensors and JAX arrays, eager and under ``jax.jit``.

The same cases run on ``array_api_strict`` in the main suite. Here each one
runs on torch and on JAX (float64 with JAX's 64-bit mode), equal to numpy to
1e-12, every result in the caller's library; and under ``jax.jit``, where a
lens is traced: no Python branch on values, no conversion to numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
import pytest
import torch  # the extra must be there: a missing peer fails, never skips

import prelens
from tests.backends.harness import Case, all_cases, assert_close, check_case
from tests.backends.optim_cases import CASES as OPTIM_CASES
from tests.backends.optim_cases import check_optimizer_jit, check_optimizer_on
from tests.backends.train_cases import CHECKS, JAX_CHECKS

CASES = all_cases()


@pytest.mark.parametrize("backend", ["torch", "jax"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_on_peer(case: Case, backend: str) -> None:
    check_case(case, backend)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_under_jit(case: Case) -> None:
    lens, p, s, da = case.make(np.random.default_rng(1))
    m_ref, a_ref = lens.fwd(p, s)
    dp_ref, ds_ref = lens.bwd(m_ref, da)

    pj, sj, daj = prelens.backend.to_backend((p, s, da), "jax")
    if _keyed(p):  # dropout in training mode: numpy draws its mask from the key's values, so the
        # key is a constant of the program (a traced key is refused: test_dropout_key_traced)

        @jax.jit
        def both(s: object, da: object) -> object:
            m, a = lens.fwd(pj, s)
            return a, lens.bwd(m, da)

        a, (dp, ds) = both(sj, daj)
    else:

        @jax.jit
        def both(p: object, s: object, da: object) -> object:
            m, a = lens.fwd(p, s)
            return a, lens.bwd(m, da)

        a, (dp, ds) = both(pj, sj, daj)
    assert_close(a_ref, a, f"{case.name} under jit: output")
    assert_close(dp_ref, dp, f"{case.name} under jit: dp")
    assert_close(ds_ref, ds, f"{case.name} under jit: ds")


def _keyed(tree: object) -> bool:
    """Whether a parameter tree holds a dropout key (a uint64 array)."""
    return any(getattr(leaf, "dtype", None) == np.uint64 for leaf in jax.tree_util.tree_leaves(tree))


def test_dropout_key_traced() -> None:
    """A numpy key traced by jit is refused (numpy cannot draw from it); a JAX key draws with JAX."""
    from prelens.nn import dropout, with_dropout
    from prelens.nn._dropout import with_jax_keys

    lens = dropout(0.25)
    key = prelens.backend.to_backend(with_dropout(lens.init(0), 7), "jax")
    with pytest.raises(prelens.PrelensError, match="JAX key's uint32"):
        jax.jit(lambda k, x: lens.fwd(k, x)[1])(key, jax.numpy.ones(4))

    @jax.jit
    def both(words: object, x: object, da: object) -> object:
        m, y = lens.fwd(with_jax_keys(lens.init(0), words), x)
        return y, lens.bwd(m, da)

    x = jax.numpy.asarray(np.random.default_rng(0).standard_normal((200, 300)))
    da = jax.numpy.asarray(np.random.default_rng(1).standard_normal((200, 300)))
    words = jax.random.key_data(jax.random.key(3))
    y, (dp, ds) = both(words, x, da)
    kept = np.asarray(y) != 0
    assert abs(kept.mean() - 0.75) < 0.01  # 60,000 draws: 0.75 ± 0.002 (one sd)
    np.testing.assert_allclose(np.asarray(y)[kept], np.asarray(x)[kept] / 0.75, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(ds), np.where(kept, np.asarray(da) / 0.75, 0.0), rtol=1e-15)
    assert type(dp) is prelens.nn.DropoutKey and not np.asarray(dp.key).any()  # the key's delta: zeros
    y_again, _ = both(words, x, da)
    y_other, _ = both(jax.random.key_data(jax.random.key(4)), x, da)
    assert np.array_equal(np.asarray(y_again), np.asarray(y)) and not np.array_equal(np.asarray(y_other), np.asarray(y))


# ------------------------------------------------------------ optimisers, training functions, checkpoints


@pytest.mark.parametrize("backend", ["torch", "jax"])
@pytest.mark.parametrize("name", list(OPTIM_CASES))
def test_optimizer_on_peer(name: str, backend: str) -> None:
    check_optimizer_on(backend, name)


@pytest.mark.parametrize("name", list(OPTIM_CASES))
def test_optimizer_under_jit(name: str) -> None:
    check_optimizer_jit(name)


@pytest.mark.parametrize("backend", ["torch", "jax"])
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_training_functions_on_peer(check: Callable[[str, Path], None], backend: str, tmp_path: Path) -> None:
    check(backend, tmp_path)


@pytest.mark.parametrize("check", JAX_CHECKS, ids=lambda c: c.__name__)
def test_training_functions_under_jit(check: Callable[[str, Path], None], tmp_path: Path) -> None:
    check("jax", tmp_path)


def test_bfloat16_is_named_bf16_and_not_taken_for_float16() -> None:
    """A bfloat16 array (torch's, JAX's) is named ``bf16``, is a float to a lens that takes any float, and is not
    the ``float16`` a lens declares (it was named ``f16`` by torch's and ``V16`` by JAX's dtype)."""
    import jax.numpy as jnp

    from prelens import errors as E
    from prelens.core import Arr, Expects, PreLens

    assert E.dtype_name(torch.bfloat16) == E.dtype_name(jnp.bfloat16) == "bf16"
    assert E.dtype_name(torch.float16) == "f16"
    ident = lambda p, s: (None, s)
    back = lambda m, da: ((), da)
    halves = PreLens(ident, back, "halves", expects=Expects(params=(), input=Arr(np.float16, ...)))
    floats = PreLens(ident, back, "floats", expects=Expects(params=(), input=Arr(None, ...)))
    x = torch.ones(2, dtype=torch.bfloat16)
    with pytest.raises(E.DTypeError, match=r"halves.*f16.*bf16"):
        halves.fwd((), x)
    assert floats.fwd((), x)[1] is x
    assert halves.fwd((), torch.ones(2, dtype=torch.float16))[1].dtype == torch.float16


def test_bfloat16_is_of_the_float_kind() -> None:
    """``dtype_kind`` reads torch's and JAX's bfloat16 as a float (JAX's, an ml_dtypes dtype numpy calls ``V``)."""
    import jax.numpy as jnp

    from prelens.backend._arrays import dtype_kind

    assert dtype_kind(torch.bfloat16) == dtype_kind(jnp.ones(1, jnp.bfloat16).dtype) == dtype_kind(jnp.bfloat16) == "f"


def test_a_constant_lens_on_torch_makes_pytorch_warn_of_nothing() -> None:
    """``normalize``'s statistics (read-only numpy constants) reach a torch input as tensors of their own: PyTorch
    warned once per process that the NumPy array it shared was not writable."""
    import warnings

    from prelens.nn import normalize

    lens = normalize(np.array([1.0, 2.0]), np.array([2.0, 4.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = lens.fwd((), torch.ones(3, 2, dtype=torch.float64))[1]
    assert out.tolist() == [[0.0, -0.25]] * 3
