"""``prelens.backend._loop.scan_loop``: the Python loop (numpy, array_api_strict) and its contract.

Under JAX tracing the same calls run as one ``jax.lax.scan``: ``tests_peers/test_loop_jax.py``.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from prelens.backend._loop import Steps, as_steps, is_traced, scan_loop


def _running(total: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, None]]:
    total = total + x
    return total, (total, None)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_loop_is_the_loop_it_stands_for(axis: int, reverse: bool) -> None:
    xs = np.random.default_rng(0).standard_normal((3, 4, 5))
    steps = np.moveaxis(xs, axis, 0)
    total, partial = np.zeros(np.delete(np.array(xs.shape), axis % 3)), []
    for x in steps[::-1] if reverse else steps:
        total = total + x
        partial.append(total)
    want = np.stack(partial[::-1] if reverse else partial, axis=axis)
    carry, (ys, nothing) = scan_loop(_running, np.zeros_like(total), xs, axis=axis, reverse=reverse)
    assert nothing is None
    np.testing.assert_array_equal(carry, total)
    np.testing.assert_array_equal(ys, want)  # the same sums in the same order: equal bit for bit


def test_kept_steps_are_a_list_a_later_loop_reads() -> None:
    xs = np.arange(12.0).reshape(2, 6)
    _, (hs, kept) = scan_loop(lambda c, x: (c + x, (c, x * 2)), np.zeros(2), xs, axis=1, keep=(1,))
    assert isinstance(kept, Steps) and len(kept) == 6
    np.testing.assert_array_equal(kept[2], xs[:, 2] * 2)
    # a tree map may make the Steps a plain list: as_steps makes it steps again
    back, (seen,) = scan_loop(lambda c, s: (c + s[0], (s[0],)), np.zeros(2), (as_steps(list(kept)),), reverse=True)
    np.testing.assert_array_equal(back, 2 * xs.sum(axis=1))
    np.testing.assert_array_equal(seen, 2 * xs.T)  # the steps stacked along axis 0
    assert hs.shape == (2, 6)


def test_trees_of_steps_keep_their_types() -> None:
    from prelens.nn import RecurrentParams

    xs = RecurrentParams(np.ones((3, 2)), np.zeros((3,)), np.ones((3, 1, 1)), np.arange(3.0))
    _, ys = scan_loop(lambda c, x: (c, x), 0.0, xs)
    assert type(ys) is RecurrentParams
    for a, b in zip(ys, xs):
        np.testing.assert_array_equal(a, b)


def test_an_empty_sequence_is_refused() -> None:
    with pytest.raises(ValueError, match="no steps"):
        scan_loop(_running, np.zeros(2), np.zeros((0, 2)))


def test_numpy_arrays_are_never_traced() -> None:
    assert not is_traced((np.zeros(2), [np.ones(1), None]))


def test_array_api_strict_runs_the_python_loop() -> None:
    xp = pytest.importorskip("array_api_strict")
    xs = xp.asarray(np.arange(6.0).reshape(3, 2))
    carry, (ys, _) = scan_loop(_running, xp.zeros(2), xs)
    np.testing.assert_array_equal(np.asarray(ys), np.cumsum(np.arange(6.0).reshape(3, 2), axis=0))
    np.testing.assert_array_equal(np.asarray(carry), [6.0, 9.0])


def test_recurrent_layers_on_numpy_never_import_jax() -> None:
    code = (
        "import sys, numpy as np\n"
        "from prelens.nn import bidirectional, gru\n"
        "layer = bidirectional(gru(1, 3))\n"
        "m, y = layer.fwd(layer.init(0), np.ones((2, 5, 1)))\n"
        "layer.bwd(m, np.ones_like(y))\n"
        "assert 'jax' not in sys.modules, 'jax was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
