"""Loss lenses: the post's sum, the two means, derivatives, laws, stability, dtypes, errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prelens import DTypeError, ShapeError, StructureError, forward
from prelens.faithful import loss_l
from prelens.nn import mlp, mse, softmax_cross_entropy, squared_distance, token_cross_entropy
from prelens.testing import check_lens_equal, check_lens_laws, check_vjp, seeds


@st.composite
def shapes(draw):
    return tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))


def _labels(rng, shape):
    return rng.integers(0, shape[-1], shape[:-1])


@given(st.sampled_from([squared_distance, mse]), shapes(), seeds())
def test_regression_losses_are_correct_derivatives_and_lawful(loss, shape, seed):
    rng = np.random.default_rng(seed)
    g, s = rng.standard_normal(shape), rng.standard_normal(shape)
    check_lens_laws(loss, g, s, rng=rng)
    check_vjp(loss, g, s, da=1.0, rng=rng)


@given(shapes(), seeds())
def test_cross_entropy_is_a_correct_derivative_and_lawful(shape, seed):
    rng = np.random.default_rng(seed)
    s = 3 * rng.standard_normal(shape)
    check_lens_laws(softmax_cross_entropy, _labels(rng, shape), s, rng=rng)


def test_squared_distance_is_the_post_loss_on_a_batch():
    """The fast loss equals the faithful ``loss_l`` on the rows of a batch, sum and all."""
    rng = np.random.default_rng(0)
    g, s = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    check_lens_equal(
        "squared_distance = loss_l",
        squared_distance,
        loss_l,
        g,
        s,
        p_iso=list,
        s_iso=list,
        m_iso=lambda m: (list(m[0]), list(m[1])),
    )
    assert float(squared_distance.fwd(g, s)[1]) == pytest.approx(0.5 * ((s - g) ** 2).sum(), rel=1e-14)


def test_mse_is_the_mean_and_a_rescaled_squared_distance():
    rng = np.random.default_rng(0)
    g, s = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    m, value = mse.fwd(g, s)
    assert value == pytest.approx(((s - g) ** 2).mean(), rel=1e-14)
    assert value == pytest.approx(2 / 15 * squared_distance.fwd(g, s)[1], rel=1e-14)
    np.testing.assert_array_equal(m, s - g)  # mse keeps the difference, all its backward pass needs
    dg, ds = mse.bwd(m, 1.0)
    dg_sum, ds_sum = squared_distance.bwd(squared_distance.fwd(g, s)[0], 2 / 15)
    np.testing.assert_allclose(ds, ds_sum, rtol=1e-14)
    np.testing.assert_allclose(dg, dg_sum, rtol=1e-14)


def test_cross_entropy_values_and_gradient():
    s = np.array([[0.0, np.log(3.0)], [2.0, 2.0]])
    y = np.array([1, 0])
    m, value = softmax_cross_entropy.fwd(y, s)
    assert value == pytest.approx((-np.log(0.75) - np.log(0.5)) / 2, rel=1e-14)  # a mean over the rows
    dy, ds = softmax_cross_entropy.bwd(m, 1.0)
    np.testing.assert_allclose(ds, [[0.125, -0.125], [-0.25, 0.25]], rtol=1e-14)
    assert dy.dtype == y.dtype and not dy.any()


def test_cross_entropy_is_stable_for_huge_logits():
    s = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]])
    y = np.array([1, 2])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        m, value = softmax_cross_entropy.fwd(y, s)
        _, ds = softmax_cross_entropy.bwd(m, 1.0)
    assert np.isfinite(value) and value == pytest.approx((2e4 + np.log(3.0)) / 2)
    assert np.isfinite(ds).all()
    np.testing.assert_allclose(ds[0], [0.5, -0.5, 0.0])


def test_cross_entropy_takes_leading_axes():
    rng = np.random.default_rng(0)
    s = rng.standard_normal((2, 3, 4))
    y = _labels(rng, s.shape)
    flat = softmax_cross_entropy.fwd(y.reshape(-1), s.reshape(-1, 4))[1]
    assert softmax_cross_entropy.fwd(y, s)[1] == pytest.approx(flat, rel=1e-14)


def test_labels_out_of_range_or_malformed_are_errors_naming_the_lens():
    s = np.zeros((3, 4))
    with pytest.raises(
        StructureError, match=r"softmax_cross_entropy: labels must lie in \[0, 4\).* got 4 at index \(1,\)$"
    ):
        softmax_cross_entropy.fwd(np.array([0, 4, 1]), s)
    with pytest.raises(
        StructureError, match=r"softmax_cross_entropy: labels must lie in \[0, 4\).* got -1 at index \(1,\)$"
    ):
        softmax_cross_entropy.fwd(np.array([0, -1, 1]), s)
    with pytest.raises(StructureError, match=r"labels must lie in \[0, 4\).* got 9 at index \(1, 0\)$"):  # the first
        softmax_cross_entropy.fwd(np.array([[0, 1], [9, -3]]), np.zeros((2, 2, 4)))
    with pytest.raises(
        DTypeError,
        match=r"^softmax_cross_entropy: labels: expected int\[3\] \(leading axes of the logits\), got f64\[3\]$",
    ):
        softmax_cross_entropy.fwd(np.array([0.0, 1.0, 1.0]), s)
    with pytest.raises(ShapeError, match=r"softmax_cross_entropy: labels: expected int\[3\] .* got i64\[2\]"):
        softmax_cross_entropy.fwd(np.array([0, 1]), s)
    with pytest.raises(StructureError, match=r"softmax_cross_entropy: labels: expected an array int\[3\] .* got list"):
        softmax_cross_entropy.fwd([0, 1, 2], s)
    with pytest.raises(
        DTypeError, match=r"^softmax_cross_entropy: logits: expected float\[\.\.\.,classes\], got i64\[3,4\]$"
    ):
        softmax_cross_entropy.fwd(np.array([0, 1, 2]), np.zeros((3, 4), np.int64))


def test_bad_regression_targets_are_reported():
    s = np.zeros((3, 2))
    with pytest.raises(
        ShapeError, match=r"^mse: ground truth: expected f64\[3,2\] \(dtype and shape of the input\), got f64\[2,3\]$"
    ):
        mse.fwd(np.zeros((2, 3)), s)
    with pytest.raises(
        DTypeError,
        match=r"^squared_distance: ground truth: expected f64\[3,2\] \(dtype and shape of the input\), got f32",
    ):
        squared_distance.fwd(np.zeros((3, 2), np.float32), s)
    with pytest.raises(DTypeError, match=r"mse: input: expected a float array"):
        mse.fwd(np.zeros((3, 2), np.int64), np.zeros((3, 2), np.int64))


def test_token_labels_and_logits_are_named_in_errors():
    ce, s = token_cross_entropy(), np.zeros((2, 3, 5))
    with pytest.raises(
        DTypeError,
        match=r"^token_cross_entropy: labels: expected int\[2,3\] \(leading axes of the logits\), got f64\[2,3\]$",
    ):
        ce.fwd(np.zeros((2, 3)), s)
    with pytest.raises(ShapeError, match=r"^token_cross_entropy: labels: expected int\[2,3\] .*, got i64\[3,2\]$"):
        ce.fwd(np.zeros((3, 2), np.int64), s)
    with pytest.raises(
        DTypeError, match=r"^token_cross_entropy: logits: expected float\[\.\.\.,vocab\], got i64\[2,3,5\]$"
    ):
        ce.fwd(np.zeros((2, 3), np.int64), np.zeros((2, 3, 5), np.int64))
    with pytest.raises(
        StructureError,
        match=r"^token_cross_entropy\(ignore_index=0\): labels must lie in \[0, 5\) or equal ignore_index=0, got -1 at index \(0, 1\)$",
    ):
        token_cross_entropy(ignore_index=0).fwd(np.array([[0, -1, 2], [0, 0, 0]]), s)
    with pytest.raises(
        StructureError, match=r"^token_cross_entropy: the residue must be the one this lens's forward pass"
    ):
        ce.bwd((s, np.zeros((2, 3), np.int64)), 1.0)


def test_token_labels_of_any_integer_dtype_count_where_not_ignored():
    rng = np.random.default_rng(0)
    s, labels = rng.standard_normal((2, 3, 5)), np.array([[1, 4, 0], [2, 2, 3]])
    ce = token_cross_entropy()
    value = ce.fwd(labels, s)[1]
    assert ce.fwd(labels.astype(np.uint8), s)[1] == value  # unsigned: nothing equals ignore_index=-1
    assert ce.fwd(labels.astype(np.int32), s)[1] == value
    dp, ds = ce.bwd(ce.fwd(labels.astype(np.uint8), s)[0], 1.0)
    assert dp.dtype == np.uint8 and not dp.any() and ds.shape == s.shape


def test_a_model_with_a_loss_names_the_loss_and_its_ground_truth():
    net = mlp(3, [4, 2])
    p, xs = net.init(0), np.zeros((2, 3))
    with pytest.raises(
        DTypeError,
        match=r"^softmax_cross_entropy: labels: expected int\[2\] \(leading axes of the logits\), got f64\[2\]\n"
        r"  in mlp\(.*\) >> softmax_cross_entropy: part 1 \(softmax_cross_entropy\)$",
    ):
        forward(net >> softmax_cross_entropy, (np.array([0.0, 1.0]), p), xs)
    with pytest.raises(
        ShapeError, match=r"^mse: ground truth: expected f64\[2,2\] \(dtype and shape of the input\), got f64\[2,3\]\n"
    ):
        forward(net >> mse, (np.zeros((2, 3)), p), xs)


@pytest.mark.parametrize("loss", [squared_distance, mse, softmax_cross_entropy], ids=repr)
def test_float32_stays_float32_even_with_a_float64_seed(loss):
    s = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
    p = np.array([0, 1, 1]) if loss is softmax_cross_entropy else np.zeros((3, 2), np.float32)
    m, value = loss.fwd(p, s)
    assert value.dtype == np.float32
    for seed in (1, 1.0, np.float64(1.0), np.array(1.0)):
        dp, ds = loss.bwd(m, seed)
        assert ds.dtype == np.float32, seed
        if loss is not softmax_cross_entropy:
            assert dp.dtype == np.float32


def test_losses_mutate_nothing():
    rng = np.random.default_rng(0)
    g, s = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    g0, s0 = g.copy(), s.copy()
    for loss in (squared_distance, mse):
        m, _ = loss.fwd(g, s)
        loss.bwd(m, 2.0)
    y = np.array([0, 1, 1])
    m, _ = softmax_cross_entropy.fwd(y, s)
    probs = m[0].copy()
    softmax_cross_entropy.bwd(m, 1.0)
    assert np.array_equal(g, g0) and np.array_equal(s, s0) and np.array_equal(m[0], probs)
    assert y.tolist() == [0, 1, 1]
