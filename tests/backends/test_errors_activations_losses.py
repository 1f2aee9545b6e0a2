"""Activations and losses on another library than numpy: mistakes are clear errors naming the library.

Run on ``array_api_strict`` (the standard's reference); the values themselves
are compared with numpy's by the cases in ``cases_activations.py`` and
``cases_losses.py``.
"""

from __future__ import annotations

import array_api_strict as xs
import numpy as np
import pytest

from prelens import DTypeError, ShapeError, StructureError
from prelens.backend._arrays import namespace, namespace_name
from prelens.nn import (
    DenseParams,
    dense,
    mse,
    pointwise,
    softmax,
    softmax_cross_entropy,
    squared_distance,
    tanh,
    token_cross_entropy,
)


def test_activation_deltas_of_another_library_dtype_or_shape_are_refused() -> None:
    s = xs.asarray(np.linspace(-1, 1, 6).reshape(2, 3))
    m, _ = tanh.fwd((), s)
    with pytest.raises(StructureError, match=r"tanh: output delta: expected an array f64\[2,3\] \(array_api_strict\)"):
        tanh.bwd(m, np.zeros((2, 3)))
    with pytest.raises(DTypeError, match=r"tanh: output delta: expected f64\[2,3\] .*, got f32\[2,3\]"):
        tanh.bwd(m, xs.zeros((2, 3), dtype=xs.float32))
    with pytest.raises(ShapeError, match=r"softmax: output delta: expected f64\[2,3\] .*, got f64\[3\]"):
        softmax.bwd(softmax.fwd((), s)[0], xs.zeros(3, dtype=xs.float64))


def test_activation_inputs_must_be_float_arrays_with_a_last_axis() -> None:
    with pytest.raises(DTypeError, match=r"tanh: input: .* got i64\[3\] \(array_api_strict\)"):
        tanh.fwd((), xs.asarray([1, 2, 3]))
    with pytest.raises(ShapeError, match=r"softmax: input: expected a float array \(\.\.\., n\) with n >= 1"):
        softmax.fwd((), xs.asarray(1.0))


def test_a_user_activation_written_for_numpy_is_refused_on_another_library() -> None:
    softplus = pointwise("softplus", lambda z: np.logaddexp(z, 0), lambda z, da: da / (1 + np.exp(-z)))
    with pytest.raises(StructureError, match=r"softplus: the result of apply must be an array of array_api_strict"):
        softplus.fwd((), xs.asarray([0.5, 1.0]))


def test_a_user_activation_answering_in_another_library_is_refused_on_numpy_and_inside_dense() -> None:
    """The promise above held only for the activation lens on other libraries: on numpy its result went
    unchecked, and dense (which fuses the functions) passed another library's array on as its output."""
    strict = pointwise("strict_softplus", lambda z: xs.asarray(np.logaddexp(z, 0)), lambda z, da: xs.asarray(da))
    with pytest.raises(StructureError, match=r"strict_softplus: the result of apply must be an array of numpy"):
        strict.fwd((), np.array([0.5, 1.0]))
    with pytest.raises(StructureError, match=r"strict_softplus: the result of grad must be an array of numpy"):
        strict.bwd(np.array([0.5, 1.0]), np.ones(2))
    softplus = pointwise("softplus", lambda z: np.logaddexp(z, 0), lambda z, da: da / (1 + np.exp(-z)))
    layer = dense(2, 3, softplus)
    p = DenseParams(*(xs.asarray(a) for a in layer.init(0)))
    with pytest.raises(StructureError, match=r"softplus: the result of apply must be an array of array_api_strict"):
        layer.fwd(p, xs.ones((4, 2), dtype=xs.float64))


def test_a_loss_parameter_must_be_of_the_input_library() -> None:
    s = xs.zeros((3, 4), dtype=xs.float64)
    with pytest.raises(
        StructureError,
        match=r"^mse: ground truth: expected an array f64\[3,4\] \(array_api_strict, the library, dtype and shape of the "
        r"input\), got f64\[3,4\] \(numpy\)$",
    ):
        mse.fwd(np.zeros((3, 4)), s)
    with pytest.raises(
        DTypeError,
        match=r"^squared_distance: ground truth: expected f64\[3,4\] \(dtype and shape of the input\), got f32\[3,4\]",
    ):
        squared_distance.fwd(xs.zeros((3, 4), dtype=xs.float32), s)
    with pytest.raises(
        StructureError,
        match=r"^softmax_cross_entropy: labels: expected an array int\[3\] \(array_api_strict, the library and leading "
        r"axes of the logits\), got i64\[3\] \(numpy\)$",
    ):
        softmax_cross_entropy.fwd(np.array([0, 1, 2]), s)


def test_a_layer_parameter_must_be_of_the_input_library() -> None:
    """numpy weights with another library's input (or the reverse) are refused before the pass runs, naming the leaf."""
    layer = dense(2, 3)
    with pytest.raises(
        StructureError,
        match=r"^dense\(2→3, tanh\): parameters at \.weight: expected an array f64\[2,3\] \(array_api_strict, the "
        r"library of the input\), got f64\[2,3\] \(numpy\)$",
    ):
        layer.fwd(layer.init(0), xs.ones((4, 2), dtype=xs.float64))
    p = DenseParams(xs.asarray(layer.init(0).weight), layer.init(0).bias)
    with pytest.raises(StructureError, match=r"^dense.*: parameters at \.bias: .*\(array_api_strict, the library "):
        layer.fwd(p, xs.ones((4, 2), dtype=xs.float64))
    with pytest.raises(StructureError, match=r"^dense.*: parameters at \.weight: .*\(numpy, the library of the input"):
        layer.fwd(p, np.ones((4, 2)))


def test_labels_of_another_library_are_checked_while_their_values_are_known() -> None:
    s = xs.zeros((3, 4), dtype=xs.float64)
    with pytest.raises(StructureError, match=r"softmax_cross_entropy: labels must lie in \[0, 4\).* got 4"):
        softmax_cross_entropy.fwd(xs.asarray([0, 4, 1]), s)
    with pytest.raises(StructureError, match=r"softmax_cross_entropy: labels must lie in \[0, 4\).* got -1"):
        softmax_cross_entropy.fwd(xs.asarray([0, -1, 1]), s)
    with pytest.raises(
        DTypeError,
        match=r"^softmax_cross_entropy: labels: expected int\[3\] \(leading axes of the logits\), got f64\[3\]",
    ):
        softmax_cross_entropy.fwd(xs.asarray([0.0, 1.0, 1.0]), s)
    with pytest.raises(ShapeError, match=r"softmax_cross_entropy: labels: expected int\[3\] .* got i64\[2\]"):
        softmax_cross_entropy.fwd(xs.asarray([0, 1]), s)


def test_token_labels_are_data_numpy_labels_move_to_the_logits_library() -> None:
    rng = np.random.default_rng(0)
    logits, labels = rng.standard_normal((2, 3, 5)), np.array([[1, -1, 4], [0, 2, -1]])
    ce, s = token_cross_entropy(), xs.asarray(logits)
    m, value = ce.fwd(labels, s)
    same_m, same_value = ce.fwd(xs.asarray(labels), s)
    assert _strict(value) and float(value) == float(same_value) == float(ce.fwd(labels, logits)[1])
    dp, ds = ce.bwd(m, 1.0)
    assert _strict(dp) and _strict(ds) and np.array_equal(np.asarray(ds), np.asarray(ce.bwd(same_m, 1.0)[1]))
    with pytest.raises(
        DTypeError, match=r"^token_cross_entropy: labels: expected int\[2,3\] \(leading axes of the logits\), got f64"
    ):
        ce.fwd(np.zeros((2, 3)), s)
    with pytest.raises(
        StructureError, match=r"^token_cross_entropy: labels must lie in \[0, 5\) .*, got 5 at index \(0, 1\)$"
    ):
        ce.fwd(np.array([[1, 5, 0], [0, 0, 0]]), s)


@pytest.mark.parametrize("loss", [squared_distance, mse, softmax_cross_entropy], ids=repr)
def test_a_loss_value_is_a_0d_array_and_float32_stays_float32(loss: object) -> None:
    s = xs.asarray(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2))
    p = xs.asarray([0, 1, 1]) if loss is softmax_cross_entropy else xs.zeros((3, 2), dtype=xs.float32)
    m, value = loss.fwd(p, s)  # type: ignore[attr-defined]
    assert _strict(value) and value.shape == () and value.dtype == xs.float32
    for seed in (1, 1.0, np.float64(1.0), np.array(1.0), xs.asarray(1.0, dtype=xs.float64)):
        dp, ds = loss.bwd(m, seed)  # type: ignore[attr-defined]
        assert _strict(ds) and ds.dtype == xs.float32, seed
        assert _strict(dp) and dp.dtype == p.dtype, seed


def _strict(x: object) -> bool:
    return namespace_name(namespace(x)) == "array_api_strict"
