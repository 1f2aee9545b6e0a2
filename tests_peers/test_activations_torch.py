"""Activations and losses against PyTorch: same values and gradients, float64 and float32, far out too.

``gelu`` is the tanh form: PyTorch's ``GELU(approximate="tanh")`` (docs/api.md); the losses are means, as
PyTorch's defaults (``mse_loss``, ``cross_entropy`` with ``reduction="mean"``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from prelens import nn, vjp

ACTS = {
    "tanh": torch.tanh,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "gelu": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
    "softmax": lambda t: torch.softmax(t, dim=-1),
}
TOL = {np.float64: 1e-12, np.float32: 1e-6}


def _close(ours: np.ndarray, theirs: torch.Tensor, tol: float, what: str) -> None:
    ref = theirs.detach().numpy()
    assert ours.dtype == ref.dtype and ours.shape == ref.shape, what
    err = float(np.max(np.abs(ours - ref))) / max(1.0, float(np.max(np.abs(ref))))
    assert err <= tol, f"{what}: differs from PyTorch by {err:.1e}"


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", sorted(ACTS))
def test_activations_equal_torch(name: str, dt: type) -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal((64, 40)) * 3, np.linspace(-60, 60, 64 * 8).reshape(64, 8)], axis=1)
    x, dy = x.astype(dt), rng.standard_normal(x.shape).astype(dt)
    y, pullback = vjp(getattr(nn, name), (), x)
    _, dx = pullback(dy)
    xt = torch.tensor(x, requires_grad=True)
    yt = ACTS[name](xt)
    yt.backward(torch.tensor(dy))
    _close(y, yt, TOL[dt], f"{name} output")
    _close(dx, xt.grad, TOL[dt], f"{name} gradient")


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=["f64", "f32"])
def test_losses_equal_torch(dt: type) -> None:
    rng = np.random.default_rng(1)
    s, g = rng.standard_normal((128, 10)).astype(dt), rng.standard_normal((128, 10)).astype(dt)
    labels = rng.integers(0, 10, (32, 4))
    logits = rng.standard_normal((32, 4, 10)).astype(dt)
    cases = [
        (nn.mse, g, s, lambda t: torch.nn.functional.mse_loss(t, torch.tensor(g))),
        (
            nn.softmax_cross_entropy,
            labels,
            logits,
            lambda t: torch.nn.functional.cross_entropy(t.reshape(-1, 10), torch.tensor(labels).reshape(-1)),
        ),
        (
            nn.token_cross_entropy(),
            labels,
            logits,
            lambda t: torch.nn.functional.cross_entropy(t.reshape(-1, 10), torch.tensor(labels).reshape(-1)),
        ),
    ]
    for loss, target, x, ref in cases:
        m, value = loss.fwd(target, x)
        _, dx = loss.bwd(m, 1.0)
        xt = torch.tensor(x, requires_grad=True)
        lt = ref(xt)
        lt.backward()
        _close(np.asarray(value), lt, TOL[dt], f"{loss} value")
        _close(dx, xt.grad, TOL[dt], f"{loss} gradient")
