"""Convolution, pooling and flatten against PyTorch: same weights, same outputs and gradients to 1e-12 (float64).

PyTorch is channels first (``(N, C, L)``, weights ``(c_out, c_in/groups, *kernel)``); prelens is
channels last (``(N, L, C)``, weights ``(*kernel, c_in/groups, c_out)``). Each test maps one
layout to the other (``permute``), runs both from the same numbers, and compares the outputs and
the gradients of the input, the weight and the bias for one random output delta.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from prelens import nn
from prelens.core import vjp

RNG = np.random.default_rng(0)
TOL = 1e-12


def _close(ours: np.ndarray, theirs: torch.Tensor, what: str) -> None:
    ref = theirs.detach().numpy()
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} vs {ref.shape}"
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    err = float(np.abs(ours - ref).max(initial=0.0)) / scale
    assert err <= TOL, f"{what}: differs from PyTorch by {err:.2e} (relative)"


def _channels_first(dims: int) -> tuple[int, ...]:
    """(N, *S, C) -> (N, C, *S)."""
    return (0, dims + 1, *range(1, dims + 1))


def _channels_last(dims: int) -> tuple[int, ...]:
    """(N, C, *S) -> (N, *S, C)."""
    return (0, *range(2, dims + 2), 1)


def _run_ours(lens, params, x, dy):  # type: ignore[no-untyped-def]
    y, pullback = vjp(lens, params, x)
    dp, dx = pullback(dy)
    return y, dp, dx


CONV1D = [
    dict(c_in=4, c_out=6, kernel=3),
    dict(c_in=1, c_out=25, kernel=5, stride=2, padding=1),  # the MNIST-1D CNN's first layer
    dict(c_in=25, c_out=25, kernel=3, stride=2, padding=1),
    dict(c_in=6, c_out=9, kernel=4, stride=3, padding=2, dilation=2, groups=3),
    dict(c_in=8, c_out=8, kernel=3, padding=1, groups=8),  # depthwise
    dict(c_in=5, c_out=4, kernel=1),
]


@pytest.mark.parametrize("cfg", CONV1D, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_conv1d_equals_torch(cfg: dict) -> None:
    cfg = dict(cfg)
    c_in, c_out, kernel = cfg.pop("c_in"), cfg.pop("c_out"), cfg.pop("kernel")
    ref = torch.nn.Conv1d(c_in, c_out, kernel, **cfg).double()
    lens = nn.conv1d(c_in, c_out, kernel, **cfg)
    x = RNG.standard_normal((8, 40, c_in))
    params = nn.ConvParams(ref.weight.detach().permute(2, 1, 0).numpy().copy(), ref.bias.detach().numpy().copy())
    xt = torch.tensor(x.transpose(0, 2, 1), requires_grad=True)
    yt = ref(xt)
    dy = RNG.standard_normal(yt.shape)  # channels first, as torch's output
    yt.backward(torch.tensor(dy))
    y, dp, dx = _run_ours(lens, params, x, dy.transpose(0, 2, 1))
    _close(y, yt.permute(0, 2, 1), "output")
    _close(dx, xt.grad.permute(0, 2, 1), "input gradient")
    _close(dp.weight, ref.weight.grad.permute(2, 1, 0), "weight gradient")
    _close(dp.bias, ref.bias.grad, "bias gradient")


CONV2D = [
    dict(c_in=3, c_out=5, kernel=3),
    dict(c_in=3, c_out=4, kernel=(3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
    dict(c_in=4, c_out=6, kernel=3, stride=2, padding=1, groups=2),
    dict(c_in=6, c_out=6, kernel=(2, 3), padding=(0, 1), dilation=2, groups=6),
]


@pytest.mark.parametrize("cfg", CONV2D, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_conv2d_equals_torch(cfg: dict) -> None:
    cfg = dict(cfg)
    c_in, c_out, kernel = cfg.pop("c_in"), cfg.pop("c_out"), cfg.pop("kernel")
    ref = torch.nn.Conv2d(c_in, c_out, kernel, **cfg).double()
    lens = nn.conv2d(c_in, c_out, kernel, **cfg)
    x = RNG.standard_normal((4, 11, 10, c_in))
    w = ref.weight.detach().permute(2, 3, 1, 0).numpy().copy()
    params = nn.ConvParams(w, ref.bias.detach().numpy().copy())
    xt = torch.tensor(x.transpose(_channels_first(2)), requires_grad=True)
    yt = ref(xt)
    dy = RNG.standard_normal(yt.shape)
    yt.backward(torch.tensor(dy))
    y, dp, dx = _run_ours(lens, params, x, dy.transpose(_channels_last(2)))
    _close(y, yt.permute(_channels_last(2)), "output")
    _close(dx, xt.grad.permute(_channels_last(2)), "input gradient")
    _close(dp.weight, ref.weight.grad.permute(2, 3, 1, 0), "weight gradient")
    _close(dp.bias, ref.bias.grad, "bias gradient")


POOLS = [
    ("max", 2, {}),
    ("max", 3, dict(stride=2, padding=1)),
    ("max", 4, dict(stride=1, padding=2)),
    ("avg", 2, {}),
    ("avg", 3, dict(stride=2, padding=1)),
    ("max", (2, 2), {}),
    ("max", (3, 2), dict(stride=(2, 1), padding=(1, 1))),
    ("avg", (2, 3), dict(stride=1, padding=(1, 1))),
    ("avg", (3, 3), dict(stride=2, padding=1)),
]


@pytest.mark.parametrize("kind, kernel, cfg", POOLS, ids=lambda v: str(v))
def test_pooling_equals_torch(kind: str, kernel: object, cfg: dict) -> None:
    dims = 2 if isinstance(kernel, tuple) else 1
    cls = {("max", 1): torch.nn.MaxPool1d, ("max", 2): torch.nn.MaxPool2d}.get((kind, dims))
    cls = cls or {1: torch.nn.AvgPool1d, 2: torch.nn.AvgPool2d}[dims]
    ref = cls(kernel, **cfg)
    lens = (nn.max_pool if kind == "max" else nn.avg_pool)(kernel, **cfg)
    x = RNG.standard_normal((6, 13, 5) if dims == 1 else (3, 9, 8, 5))
    if kind == "max":  # ties: a few repeated values, where both pick the first maximum
        x = np.round(x * 2) / 2
    xt = torch.tensor(x.transpose(_channels_first(dims)), requires_grad=True)
    yt = ref(xt)
    dy = RNG.standard_normal(yt.shape)
    yt.backward(torch.tensor(dy))
    y, dp, dx = _run_ours(lens, (), x, dy.transpose(_channels_last(dims)))
    assert dp == ()
    _close(y, yt.permute(_channels_last(dims)), "output")
    _close(dx, xt.grad.permute(_channels_last(dims)), "input gradient")


def test_flatten_then_linear_equals_torch_with_the_rows_permuted() -> None:
    """Channels last flattens (position, channel), PyTorch (channel, position): a permutation of the rows."""
    n, length, c, out = 7, 5, 3, 4
    ref = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(c * length, out)).double()
    lin = ref[1]
    w_torch = lin.weight.detach().numpy()  # (out, c·length), columns ordered (channel, position)
    w = w_torch.reshape(out, c, length).transpose(2, 1, 0).reshape(length * c, out)  # rows (position, channel)
    model = nn.flatten() >> nn.dense(length * c, out, None)
    params = (nn.DenseParams(w.copy(), lin.bias.detach().numpy().copy()), ())
    x = RNG.standard_normal((n, length, c))
    xt = torch.tensor(x.transpose(0, 2, 1), requires_grad=True)
    yt = ref(xt)
    dy = RNG.standard_normal(yt.shape)
    yt.backward(torch.tensor(dy))
    y, dp, dx = _run_ours(model, params, x, dy)
    _close(y, yt, "output")
    _close(dx, xt.grad.permute(0, 2, 1), "input gradient")
    dw = lin.weight.grad.numpy().reshape(out, c, length).transpose(2, 1, 0).reshape(length * c, out)
    _close(dp[0].weight, torch.tensor(dw), "weight gradient")
    _close(dp[0].bias, lin.bias.grad, "bias gradient")
    # flatten alone: the same numbers, in the other order
    _, plain = nn.flatten().fwd((), x)
    _close(plain.reshape(n, length, c).transpose(0, 2, 1).reshape(n, -1), torch.nn.Flatten()(xt), "flatten")


def test_the_mnist1d_cnn_step_equals_torch() -> None:
    """The paper's CNN (three conv1d, ReLU, flatten, linear 125→10) and its loss: every gradient."""
    from tools.bench_conv import cnn_pair

    pair = cnn_pair(batch=20, seed=3)
    grads_ours, grads_torch = pair.gradients()
    for i, (a, b) in enumerate(zip(grads_ours, grads_torch)):
        _close(a, torch.tensor(b), f"gradient {i}")


def test_the_mnist1d_cnn_compiled_on_jax_equals_numpy() -> None:
    """compile_step traces the CNN (conv1d, relu, flatten, dense) into one XLA program: equal to numpy's step."""
    import prelens
    from prelens.learn import adam
    from prelens.nn import softmax_cross_entropy
    from prelens.train import compile_step, step
    from tests.backends.harness import assert_close, assert_in_library
    from tools.bench_conv import prelens_cnn

    model, opt = prelens_cnn(), adam(1e-2)
    rng = np.random.default_rng(5)
    batch = (rng.standard_normal((16, 40, 1)), rng.integers(0, 10, 16))
    p_np = model.init(0)
    s_np = opt.init(p_np)
    p_jx, s_jx = prelens.backend.to_backend((p_np, s_np), "jax")
    compiled = compile_step(model, softmax_cross_entropy, opt)
    for _ in range(3):
        p_np, s_np, loss_np = step(model, softmax_cross_entropy, p_np, batch, opt, s_np)
        p_jx, s_jx, loss_jx = compiled(p_jx, s_jx, batch)
        assert abs(float(loss_jx) - loss_np) <= 1e-12 * max(1.0, abs(loss_np))
    assert_in_library(p_jx, "jax", "compiled params")
    assert_close(p_np, p_jx, "params after 3 steps")


@pytest.mark.parametrize(
    "make, shape",
    [(lambda: nn.conv1d(3, 4, 2), (2, 5, 3)), (lambda: nn.dense(3, 4), (2, 3)), (lambda: nn.lstm(3, 4), (2, 5, 3))],
    ids=["conv1d", "dense", "lstm"],
)
def test_parameters_of_one_library_and_input_of_another_are_named(make, shape) -> None:  # type: ignore[no-untyped-def]
    # a PyTorch user who copies the weights as tensors (forgetting .numpy()) and runs numpy data
    from prelens.backend import to_backend

    layer = make()
    params = to_backend(layer.init(0), "torch")
    with pytest.raises(Exception, match=r"torch.*numpy|numpy.*torch"):
        layer.fwd(params, np.zeros(shape))
