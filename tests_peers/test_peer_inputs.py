"""What a PyTorch user hands prelens: parameters of the wrong library, tensors that require grad, small integer
token ids, prompts as tensors. Each is either computed as on numpy or refused with an error naming the lens."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import prelens
from prelens.backend import to_backend
from prelens.backend._arrays import tree_map_arrays
from prelens.nn import dense, mlp, softmax_cross_entropy, token_embedding


def test_parameters_and_input_of_two_libraries_are_refused_naming_the_lens() -> None:
    """numpy parameters with a torch input ran (numpy's ``@`` handed the matmul to torch, with a NumPy deprecation
    warning); torch parameters with a numpy input failed inside torch's concatenation, a message naming neither."""
    layer = dense(3, 2, "relu", dtype=np.float32)
    expected = r"dense\(3→2, relu, f32\): parameters at \.weight: expected an array f32\[3,2\] "
    expected += r"\({}, the library of the input\), got f32\[3,2\]{}$"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(prelens.errors.StructureError, match=expected.format("torch", r" \(numpy\)")):
            layer.fwd(layer.init(0), torch.ones(5, 3))
        with pytest.raises(prelens.errors.StructureError, match=expected.format("numpy", r" \(torch\)")):
            layer.fwd(to_backend(layer.init(0), "torch"), np.ones((5, 3), np.float32))


def test_fit_on_parameters_that_require_grad_builds_no_autograd_graph() -> None:
    """Parameters taken from a torch model require grad: ``fit`` chained every step's parameters to the last
    through torch's autograd graph (memory growing with the steps), warned when it read the loss, and handed back
    parameters with a ``grad_fn``."""
    from prelens.learn import adam
    from prelens.train import fit

    rng = np.random.default_rng(0)
    xs = torch.from_numpy(rng.standard_normal((32, 4)).astype(np.float32))
    ys = torch.from_numpy(rng.integers(0, 3, 32))
    model = mlp(4, [8, 3], last_activation=None, dtype=np.float32)
    params = tree_map_arrays(lambda t: t.requires_grad_(), to_backend(model.init(0), "torch"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = fit(model, softmax_cross_entropy, (xs, ys), 2, 8, adam(0.01), rng=0, progress=False, params=params)
    data = (xs.numpy(), ys.numpy())
    on_numpy = fit(model, softmax_cross_entropy, data, 2, 8, adam(0.01), rng=0, progress=False, params=model.init(0))
    for got, ref in zip(prelens.core.tree_leaves(result.params), prelens.core.tree_leaves(on_numpy.params)):
        assert got.grad_fn is None and not got.requires_grad
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)
    assert all(p.grad is None for p in prelens.core.tree_leaves(params))  # the caller's untouched


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32])
def test_token_ids_of_any_integer_dtype_on_torch(dtype: torch.dtype) -> None:
    """numpy, JAX and array_api_strict take ids of any integer dtype; torch's index functions take only int32 and
    int64, and token_embedding failed inside ``index_select`` on uint8, int8 and int16 ids."""
    emb = token_embedding(10, 4)
    ids = np.array([[1, 2, 3, 2]])
    da = np.random.default_rng(0).standard_normal((1, 4, 4))
    m_ref, y_ref = emb.fwd(emb.init(0), ids)
    dp_ref, _ = emb.bwd(m_ref, da)
    table, tda = to_backend((emb.init(0), da), "torch")
    m, y = emb.fwd(table, torch.tensor(ids, dtype=dtype))
    dp, ds = emb.bwd(m, tda)
    np.testing.assert_array_equal(y.numpy(), y_ref)
    np.testing.assert_allclose(dp.numpy(), dp_ref, rtol=1e-15)
    assert ds.dtype == dtype and not ds.any()


def test_token_ids_of_another_library_are_taken_where_ids_are_given() -> None:
    """``generate``'s prompt and ``CharVocab.decode``'s ids as tensors: refused as 'must be an integer array,
    got i64[1,2] (torch)', an integer array."""
    from prelens.datasets.sequences import CharVocab
    from prelens.nn import decoder_lm, generate

    lm = decoder_lm(5, 8, 2, 16, 1, 8)
    on_numpy = generate(lm, lm.init(0), np.array([[1, 2]]), 3)
    assert np.array_equal(generate(lm, to_backend(lm.init(0), "torch"), torch.tensor([[1, 2]]), 3), on_numpy)
    assert CharVocab.from_text("hello").decode(torch.tensor([3, 0])) == CharVocab.from_text("hello").decode([3, 0])


def test_bfloat16_moves_between_libraries_exactly() -> None:
    """A bfloat16 tensor (numpy has no such dtype; JAX's is ml_dtypes') failed in ``to_numpy`` and ``to_backend`` with
    torch's 'Got unsupported ScalarType BFloat16', and JAX's bfloat16 could not reach torch."""
    import jax.numpy as jnp

    from prelens.backend import to_numpy

    t = torch.tensor([[1.0, -2.5], [3.140625, 0.0]], dtype=torch.bfloat16)
    assert to_numpy(t).dtype.name == "bfloat16" and to_numpy(t).tolist() == t.float().tolist()
    on_jax = to_backend(t, "jax")
    assert on_jax.dtype == jnp.bfloat16 and np.asarray(on_jax, np.float32).tolist() == t.float().tolist()
    for back in (to_backend(on_jax, "torch"), to_backend(t, "torch"), to_backend(t.T, "torch").T):
        assert back.dtype == torch.bfloat16 and torch.equal(back, t)


def test_a_loss_refusing_numpy_ground_truth_says_it_is_numpy() -> None:
    """The ground truth of another library than the prediction was shown as 'got f64[5,2]', the very dtype and shape
    expected: the message did not say what was wrong with it (numpy's)."""
    from prelens.nn import mse

    with pytest.raises(prelens.errors.StructureError) as err:
        mse.fwd(np.ones((5, 2)), torch.ones(5, 2, dtype=torch.float64))
    assert str(err.value) == (
        "mse: ground truth: expected an array f64[5,2] (torch, the library, dtype and shape of the input), "
        "got f64[5,2] (numpy)"
    )


@pytest.mark.parametrize(("backend", "device"), [("torch", "gpu"), ("jax", "cpu"), ("torch", "cuda:0")])
def test_a_device_the_library_refuses_is_an_error_naming_to_backend(backend: str, device: str) -> None:
    """``to_backend(tree, "jax", device="cpu")`` failed in ``jax.device_put`` (a ValueError listing JAX's types),
    ``device="gpu"`` in torch's device parser, and ``"cuda:0"`` on a CPU build with a bare AssertionError."""
    if backend == "torch" and device.startswith("cuda") and torch.cuda.is_available():
        pytest.skip("a CUDA build takes this device")
    with pytest.raises(
        prelens.errors.ArgumentError, match=rf"^to_backend: device must be a device of {backend} .*, got "
    ):
        to_backend((np.ones(2), [np.zeros(3)]), backend, device=device)


def test_value_and_grad_and_step_on_parameters_that_require_grad_warn_of_nothing() -> None:
    """``value_and_grad`` and ``step`` on parameters that require grad: torch warns 'Converting a tensor with
    requires_grad=True to a scalar', the gradients carry a ``grad_fn``, and a loop of ``step`` chains every step's
    parameters to the last through torch's autograd graph."""
    from prelens.learn import sgd
    from prelens.train import step, value_and_grad

    model = mlp(4, [8, 3], last_activation=None, dtype=np.float32)
    params = tree_map_arrays(lambda t: t.requires_grad_(), to_backend(model.init(0), "torch"))
    batch = (torch.ones(8, 4), torch.zeros(8, dtype=torch.int64))
    opt = sgd(0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, grads = value_and_grad(model, softmax_cross_entropy, params, batch)
        new_params, _, _ = step(model, softmax_cross_entropy, params, batch, opt, opt.init(params))
    assert all(g.grad_fn is None for g in prelens.core.tree_leaves(grads))
    assert all(p.grad_fn is None for p in prelens.core.tree_leaves(new_params))


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "array_api_strict"])
def test_to_backend_copies_share_nothing_with_what_they_were_made_from(backend: str) -> None:
    """``to_backend`` promises copies: on the CPU ``jax.device_put`` and ``array_api_strict`` shared the numpy
    array's memory (writing into the numpy parameters changed the "immutable" JAX arrays made from them), a tensor
    moved to numpy shared the tensor's, and a JAX array moved to numpy was read-only."""
    import jax.numpy as jnp

    from prelens.backend import to_numpy

    source = np.zeros((2, 3))
    moved = to_backend(source, backend)
    source[0, 0] = 5.0
    assert to_numpy(moved)[0, 0] == 0.0
    for other in (torch.zeros(2, 3, dtype=torch.float64), jnp.zeros((2, 3))):
        home = to_backend(other, "numpy")
        home[0, 0] = 7.0  # writeable, and its own
        assert to_numpy(other)[0, 0] == 0.0


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_a_model_of_another_library_is_evaluated_on_numpy_data(backend: str) -> None:
    """docs/backends.md: ``accuracy(model, on_jax.params, x_test, y_test)``, numpy data for parameters of another
    library: predict, accuracy and evaluate move the data to the parameters' library (torch failed inside its
    concatenation, and a lens now refuses the two libraries mixed)."""
    from prelens.train import accuracy, evaluate, predict

    model = mlp(4, [8, 3], last_activation=None)
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((10, 4)), rng.integers(0, 3, 10)
    params = to_backend(model.init(0), backend)
    out = predict(model, params, xs, batch_size=4)
    assert type(out).__module__.split(".")[0] in (backend, "jaxlib")
    np.testing.assert_allclose(np.asarray(out), predict(model, model.init(0), xs), rtol=1e-12)
    assert accuracy(model, params, xs, ys) == accuracy(model, model.init(0), xs, ys)
    loss = evaluate(model, softmax_cross_entropy, params, xs, ys)
    assert loss == pytest.approx(evaluate(model, softmax_cross_entropy, model.init(0), xs, ys), rel=1e-12)


def test_prelens_train_mlp_on_jax_reports_its_losses(capsys: pytest.CaptureFixture[str]) -> None:
    """``prelens train mlp --backend jax`` trained, then failed reporting: its evaluate ran the JAX parameters on the
    numpy labels ('labels: expected an array int[120] (jax, ...), got i64[120]')."""
    from prelens.cli import main

    assert main(["train", "mlp", "--dataset", "iris", "--hidden", "8", "--epochs", "2", "--backend", "jax",
                 "--no-progress"]) == 0  # fmt: skip
    assert "held-out accuracy" in capsys.readouterr().out
