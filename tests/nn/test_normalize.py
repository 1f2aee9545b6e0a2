"""``normalize``: a correct derivative, a lawful lens, the twin of ``linear >> bias`` with fixed parameters, errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prelens import DTypeError, ShapeError, StructureError, backward, forward, vjp
from prelens.datasets import load_iris, standardize
from prelens.errors import ArgumentError
from prelens.nn import bias, linear, mlp, normalize
from prelens.testing import check_lens_laws, check_vjp, seeds


def _stats(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.standard_normal(n) * 3, rng.uniform(0.1, 4.0, n)


@given(st.integers(1, 5), st.lists(st.integers(1, 3), max_size=2), seeds())
def test_normalize_is_a_correct_derivative_and_a_lawful_lens(n, lead, seed):
    rng = np.random.default_rng(seed)
    mean, std = _stats(rng, n)
    lens = normalize(mean, std)
    x = rng.standard_normal((*lead, n)) * 10 + 5
    check_vjp(lens, (), x, rng=rng)
    check_lens_laws(lens, (), x, rng=rng, vjp=False)


@given(st.integers(1, 5), st.lists(st.integers(1, 3), max_size=2), seeds())
def test_normalize_equals_linear_then_bias_with_fixed_parameters(n, lead, seed):
    """The twin built by composition: ``linear(n, n) >> bias(n)`` with ``W = diag(1/std)``, ``b = −mean/std``."""
    rng = np.random.default_rng(seed)
    mean, std = _stats(rng, n)
    lens, twin = normalize(mean, std), linear(n, n) >> bias(n)
    p_twin = (-mean / std, np.diag(1 / std))
    x, da = rng.standard_normal((*lead, n)), rng.standard_normal((*lead, n))
    np.testing.assert_allclose(forward(lens, (), x), forward(twin, p_twin, x), rtol=1e-12, atol=1e-12)
    _, ds = backward(lens, (), x, da)
    _, ds_twin = backward(twin, p_twin, x, da)
    np.testing.assert_allclose(ds, ds_twin, rtol=1e-12, atol=1e-12)


def test_normalize_gives_what_standardize_gives():
    raw = load_iris(rng=0)
    mean, std = raw.x_train.mean(axis=0), raw.x_train.std(axis=0)
    expected_train, expected_test = standardize(raw.x_train, raw.x_test)
    lens = normalize(mean, std)
    np.testing.assert_allclose(forward(lens, (), raw.x_test), expected_test, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(forward(lens, (), raw.x_train), expected_train, rtol=1e-12, atol=1e-12)


def test_float32_keeps_its_dtype_and_data_passes_none_through():
    lens = normalize([1.0, 2.0], [2.0, 4.0], dtype=np.float32)
    x = np.array([[3.0, 6.0]], np.float32)
    y, pullback = vjp(lens, (), x)
    assert y.dtype == np.float32 and y.tolist() == [[1.0, 1.0]]
    assert pullback(np.ones((1, 2), np.float32))[1].tolist() == [[0.5, 0.25]]
    m, _ = lens.fwd((), x)
    assert lens.bwd(m, None) == ((), None)  # before a layer with input_delta=False: the input is data
    model = lens >> mlp(2, [3], dtype=np.float32, input_delta=False)
    y, pullback = vjp(model, model.init(0), x)
    (_, dp_norm), ds = pullback(np.ones_like(y))
    assert ds is None and dp_norm == ()


def test_the_statistics_are_copied_and_read_only():
    mean = np.array([1.0, 2.0])
    lens = normalize(mean, [1.0, 1.0])
    mean[0] = 100.0
    assert forward(lens, (), np.zeros((1, 2))).tolist() == [[-1.0, -2.0]]


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (
            ([0.0, 1.0], [1.0, 0.0]),
            {},
            ArgumentError,
            r"^normalize: std must be finite numbers > 0, got \[1\.0, 0\.0\]$",
        ),
        (([0.0, np.nan], [1.0, 1.0]), {}, ArgumentError, r"^normalize: mean must be finite numbers"),
        (([0.0, 1.0], [1.0]), {}, ShapeError, r"^normalize: std: expected a vector of length 2, got f64\[1\]$"),
        (([], []), {}, ShapeError, r"^normalize: mean: expected a vector of at least 1 number, got f64\[0\]$"),
        ((["a"], [1.0]), {}, StructureError, r"^normalize: mean must be a vector of floats"),
        (([0.0], [1.0]), {"dtype": np.int32}, DTypeError, r"normalize"),
    ],
)
def test_bad_statistics_are_refused(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        normalize(*args, **kwargs)


def test_bad_inputs_and_deltas_name_the_lens():
    lens = normalize([0.0, 1.0], [1.0, 2.0])
    with pytest.raises(ShapeError, match=r"^normalize\(2\): input: expected f64\[\.\.\.,2\], got f64\[3,3\]$"):
        lens.fwd((), np.ones((3, 3)))
    with pytest.raises(DTypeError, match=r"^normalize\(2\): input: expected f64\[\.\.\.,2\], got f32\[3,2\]$"):
        lens.fwd((), np.ones((3, 2), np.float32))
    m, _ = lens.fwd((), np.ones((3, 2)))
    with pytest.raises(ShapeError, match=r"^normalize\(2\): output delta: expected f64\[3,2\], got f64\[2,2\]$"):
        lens.bwd(m, np.ones((2, 2)))
    with pytest.raises(StructureError, match=r"^normalize\(2\): the residue must be the one"):
        lens.bwd("nonsense", np.ones((3, 2)))


@pytest.mark.parametrize(
    ("mean", "std", "match"),
    [
        ([1e40], [1.0], r"^normalize: mean must be finite numbers as float32, got \[1e\+40\]$"),
        ([0.0], [1e-50], r"^normalize: std must be finite numbers > 0 as float32, got \[1e-50\]$"),
        ([0.0], [1e39], r"^normalize: std must be finite numbers > 0 as float32, got \[1e\+39\]$"),
    ],
)
def test_statistics_that_float32_cannot_hold_are_refused_not_made_inf(mean, std, match):
    with pytest.raises(ArgumentError, match=match):
        normalize(mean, std, dtype=np.float32)
